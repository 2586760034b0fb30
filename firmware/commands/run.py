"""``betbox run --config FILE``: run one unit (dealer or seat) as configured.

Hardware ports are opened by name through ``hal.backends.open_backend`` (their own options
are checked strictly there). The unit recovers from its journal, then serves its one
dispatch queue until stopped.
"""

from __future__ import annotations

import argparse
import queue
import signal
import sys

from firmware.runtime.config import ConfigError, UnitConfig, load_config


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a dealer or seat unit from its configuration file")
    p.add_argument("--config", required=True, help="the unit's TOML configuration")
    p.add_argument("--check", action="store_true", help="validate the configuration and exit")
    p.set_defaults(func=run)


def build(config: UnitConfig):
    """The unit and its started ports, from a validated configuration."""
    from firmware.chips import ChipRegistry
    from firmware.engine.profile import load_profile
    from firmware.runtime.bus import InProcessBus
    from firmware.runtime.dealer import DealerUnit
    from firmware.runtime.journal import JOURNAL_NAME, Journal
    from firmware.runtime.seat import SeatUnit
    from hal.backends import open_backend

    bus = InProcessBus()
    journal = Journal(config.state_dir / JOURNAL_NAME, config.unit_id, config.role, config.synchronous)
    ports = {name: open_backend(name, hw["backend"], hw["options"]) for name, hw in config.hardware.items()}
    if config.role == "dealer":
        unit = DealerUnit(config.unit_id, config.table, bus, journal, load_profile(config.profile),
                          decks=config.decks, limits=config.limits)
        inputs = ("card_shoe", "console")
    else:
        unit = SeatUnit(config.unit_id, config.table, config.box, bus, journal,
                        ChipRegistry.load(config.chips), config.spots, ports["lamps"],
                        config.confirm_cycles, config.release_cycles)
        inputs = ("chip_reader",)
    unit.recover()
    for name in inputs:
        ports[name].start(unit.post)
    if config.role == "seat":
        ports["lamps"].start(lambda e: None)
    unit.start()
    return unit, ports


def serve(unit, stop) -> None:
    """The one dispatch queue: one input at a time, journal first, then act."""
    while not stop():
        try:
            item = unit.inbox.get(timeout=0.2)
        except queue.Empty:
            continue
        for kind, body in unit.translate(item):
            unit.step(kind, body)


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"betbox run: {exc}", file=sys.stderr)
        return 2
    if args.check:
        print(f"{args.config}: {config.role} {config.unit_id!r} at table {config.table!r}: configuration OK")
        return 0
    try:
        unit, ports = build(config)
    except (ValueError, OSError) as exc:
        print(f"betbox run: {exc}", file=sys.stderr)
        return 2
    stopping = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stopping.update(now=True))
    print(f"betbox: {config.role} {config.unit_id} running (journal {unit.journal.path}, "
          f"{unit.replayed_steps} steps replayed)", file=sys.stderr, flush=True)
    try:
        serve(unit, lambda: stopping["now"])
    finally:
        for port in ports.values():
            port.close()
        unit.journal.close()
    return 0
