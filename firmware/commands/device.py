"""``betbox device shoe|rfid``: a simulated card shoe or RFID reader for bench tests.

Thin: the simulators live in :mod:`hal.sim`; the protocols in ``docs/protocols/``.
"""

from __future__ import annotations

import argparse
import sys

from firmware.commands.limits import bounded_float, bounded_int, comma_list
from hal.errors import HalError
from hal.sim import runner
from hal.sim.script import ScriptError

SCRIPT_HELP = """script lines (one per line, # comments):
  common: sleep S | garbage N | drop [N] | corrupt [N] | silence S | wait_host [S] | hangup
          | hold [N] (next N frames sent after the one following) | hello (unasked HELLO)
  shoe:   deal CARD... | shuffle | cut | misread | skip [N] | jam | unjam | door open|close
          | repeat CARD COUNTER (an old counter, new SEQ) | replay [N] (last N CARD frames again)
  rfid:   place SPOT UID... | remove SPOT [UID...] | cycle [N] | fault SPOT|reader CODE"""


BAUD_RATES = (9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600)   # hal.serial_ports

def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "device", help="run a simulated shoe or RFID reader on a pty or serial port",
        description="Run a simulated device speaking the documented serial protocol, so a "
                    "unit can be bench-tested without a table.",
        epilog=SCRIPT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("device", choices=("shoe", "rfid"))
    parser.add_argument("--port", help="serial port to use (default: a new pseudo-terminal, "
                                       "whose path is printed)")
    parser.add_argument("--baud", type=int, default=115200, choices=BAUD_RATES, metavar="BAUD",
                        help=f"one of {', '.join(map(str, BAUD_RATES))} (default 115200)")
    parser.add_argument("--script", metavar="FILE", help="commands to run, see below")
    parser.add_argument("--spots", type=comma_list("--spots"), default="main",
                        help="rfid: comma-separated spot names, antenna 0 first")
    parser.add_argument("--period", type=bounded_float("--period", 0.01, 3600), default=None,
                        help="rfid: run an inventory cycle every PERIOD seconds")
    parser.add_argument("--heartbeat", type=bounded_float("--heartbeat", 0, 3600), default=0.5,
                        help="seconds between heartbeats (0 = none)")
    parser.add_argument("--seed", type=bounded_int("--seed", 0, 2**63 - 1), default=0, help="seed for garbage and corruption")
    parser.add_argument("--exit", action="store_true",
                        help="exit when the script is done instead of serving until Ctrl-C")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        transport = runner.make_transport(args.port, args.baud)
        sim = runner.build(args.device, transport,
                           spots=list(args.spots),
                           period=args.period, heartbeat=args.heartbeat or None,
                           seed=args.seed)
        return runner.serve(sim, args.script, sys.stdout, stay=not args.exit)
    except (ScriptError, HalError, OSError) as exc:
        print(f"betbox device: {exc}", file=sys.stderr)
        return 2
