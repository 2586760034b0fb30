"""``betbox diag --config FILE [--json]``: check every part of a unit, one line each.

Ports (card shoe link and counter, every RFID antenna, console buttons, the lamp test),
the broker and the controller, the clock's NTP state, the state partition's free space,
the journal (integrity check and a replay), the outbox backlog, the firmware version and
its verification (:mod:`firmware.diag`). Exit status 0 when nothing failed, 1 otherwise,
2 when the configuration cannot be read. Stop the unit's service first: the ports are
opened for the test.
"""

from __future__ import annotations

import argparse
import json
import sys

from firmware.config import ConfigError, load_config


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diag", help="check a unit's ports, link, clock, storage, journal and software")
    p.add_argument("--config", default=None, help="the unit's configuration (default: the one in /etc/betbox)")
    p.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    p.add_argument("--wait", type=float, default=3.0, help="seconds to wait for a device or the broker (default 3)")
    p.set_defaults(func=run)


def _default_config() -> str:
    from pathlib import Path
    found = [p for p in (Path("/etc/betbox") / f"{r}.toml" for r in ("seat", "dealer", "jackpot")) if p.exists()]
    if len(found) != 1:
        raise ConfigError("--config: say which configuration (found "
                          f"{', '.join(map(str, found)) or 'none'} in /etc/betbox)")
    return str(found[0])


def run(args: argparse.Namespace) -> int:
    from firmware.diag import run_checks, verdict
    try:
        config = load_config(args.config or _default_config())
    except ConfigError as exc:
        print(f"betbox diag: {exc}", file=sys.stderr)
        return 2
    if config.role == "jackpot":
        print("betbox diag: the jackpot controller has no ports; see `betbox jackpot` for its state",
              file=sys.stderr)
        return 2
    checks = run_checks(config, wait=args.wait)
    passed, summary = verdict(checks)
    if args.json:
        print(json.dumps({"unit": config.bus_id, "role": config.role, "passed": passed, "verdict": summary,
                          "checks": [c.as_dict() for c in checks]}, indent=1))
    else:
        print(f"betbox diag: {config.role} {config.bus_id}")
        for c in checks:
            print(c.line())
        print(f"verdict: {summary}")
    return 0 if passed else 1
