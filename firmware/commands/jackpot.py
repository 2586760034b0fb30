"""``betbox jackpot``: the progressive jackpot controller.

``serve`` runs the controller against a broker; ``report`` prints its meters, the last
hits and, per unit, the reports received and the highest sequence number seen.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tomllib
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("jackpot", help="the progressive jackpot controller (serve, report)",
                       description=__doc__.split("\n\n")[1])
    jsub = p.add_subparsers(dest="jackpot_command", metavar="ACTION")
    jsub.required = True
    s = jsub.add_parser("serve", help="run the controller against an MQTT broker")
    s.add_argument("--broker", required=True, help="mqtt://HOST:PORT or mqtts://HOST:PORT")
    s.add_argument("--db", required=True, help="the controller's SQLite database (created if new)")
    s.add_argument("--link", default="main", help="link id in the jackpot topics (default main)")
    s.add_argument("--pools", help="TOML file of [pools.NAME] tables (seed, rate, maximum, tables); "
                                   "default one pool 'main': seed 1000, rate 15%%, maximum 250000")
    s.add_argument("--username")
    s.add_argument("--password")
    s.add_argument("--ca", help="CA certificate (mqtts://)")
    s.add_argument("--cert", help="client certificate (mqtts://)")
    s.add_argument("--key", help="client key (mqtts://)")
    s.add_argument("-v", "--verbose", action="store_true")
    s.set_defaults(func=serve)
    r = jsub.add_parser("report", help="meters, last hits and per-unit counts from the database")
    r.add_argument("--db", required=True)
    r.add_argument("--json", action="store_true", help="print the report as JSON")
    r.set_defaults(func=report)


def serve(args: argparse.Namespace) -> int:
    from firmware.jackpot.config import DEFAULT_POOLS, JackpotConfigError
    from firmware.jackpot.service import run_controller

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    pools = DEFAULT_POOLS
    if args.pools:
        try:
            data = tomllib.loads(Path(args.pools).read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            print(f"betbox jackpot serve: --pools {args.pools}: {exc}", file=sys.stderr)
            return 2
        if set(data) != {"pools"}:
            print(f"betbox jackpot serve: --pools {args.pools}: only [pools.NAME] tables belong there",
                  file=sys.stderr)
            return 2
        pools = data["pools"]
    link: dict = {"broker": args.broker}
    for key in ("username", "password"):
        if getattr(args, key):
            link[key] = getattr(args, key)
    tls = {k: getattr(args, k) for k in ("ca", "cert", "key") if getattr(args, k)}
    if tls:
        link["tls"] = tls
    config = {"role": "jackpot", "link": link,
              "jackpot": {"db": args.db, "link": args.link, "pools": pools}}
    try:
        return run_controller(config, base=Path.cwd())
    except (JackpotConfigError, ValueError) as exc:
        print(f"betbox jackpot serve: {exc}", file=sys.stderr)
        return 2


def report(args: argparse.Namespace) -> int:
    from firmware.jackpot.controller import report as build
    from firmware.jackpot.store import StoreError, connect

    try:
        db = connect(args.db, readonly=True)
    except StoreError as exc:
        print(f"betbox jackpot report: {exc}", file=sys.stderr)
        return 2
    try:
        data = build(db)
    finally:
        db.close()
    if args.json:
        json.dump(data, sys.stdout, indent=2, sort_keys=True)
        print()
        return 0
    for name, pool in data["pools"].items():
        m = pool["meters"]
        spec = pool["spec"]
        print(f"== pool {name}: {pool['meter']} ({pool['state'].upper()}), overflow {pool['overflow']}"
              f"  [seed {spec['seed']}, rate {spec['rate']}, maximum {spec['maximum']}, "
              f"tables {', '.join(spec['tables'])}]")
        print(f"   wagers {m['wagers']} ({m['wagers_in']} in), contributions {m['contributions']}, "
              f"seeds {m['seeds']} ({m['reseeds']} reseeds)")
        print(f"   meter hits {m['hits']} won {m['won']} ({m['pending']} pending), fixed awards "
              f"{m['fixed_hits']} won {m['fixed_won']}, envy bonuses {m['envy']} won {m['envy_won']}, "
              f"voided wagers {m['voided']}")
        if not pool["balanced"]:
            print("   !! seeds + contributions != meter + overflow + won")
    print(f"== last hits ({len(data['last_hits'])})")
    for h in data["last_hits"]:
        print(f"   #{h['hit']} {h['unit']} round {h['round']}: {h['kind']} {h['category']} "
              f"{h['amount']} {h['state']}")
    print(f"== units ({len(data['units'])})")
    for unit, u in data["units"].items():
        gaps = f", missing {u['missing_ranges']}" if u["missing"] else ""
        print(f"   {unit}: {u['events']} events, highest seq {u['highest_seq']}, "
              f"{u['duplicates']} duplicates dropped{gaps}")
    rej = data["rejected"]
    print(f"== rejected messages: {rej['count']}" +
          (f" ({', '.join(f'{k} {v}' for k, v in sorted(rej['by_reason'].items()))})" if rej["count"] else ""))
    return 0
