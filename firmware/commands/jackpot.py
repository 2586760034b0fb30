"""``betbox jackpot``: the progressive jackpot controller.

``serve`` runs the controller against a broker; ``report`` prints its meters, the last
hits and, per unit, the reports received and the highest sequence number seen; ``confirm``
is the attendant's confirmation of a pending hit (a hand pay), sent on the broker as the
``confirm_hit`` command and answered by the controller.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tomllib
from pathlib import Path
from typing import Any

from firmware.commands.limits import MAX_ROUND, bounded_float, bounded_int, password_options, read_password, tls_options
from firmware.engine.strict import read_text

MAX_POOLS_BYTES = 1_000_000             # a few [pools.NAME] tables


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("jackpot", help="the progressive jackpot controller (serve, report)",
                       description=__doc__.split("\n\n")[1])
    jsub = p.add_subparsers(dest="jackpot_command", metavar="ACTION")
    jsub.required = True
    # allow_abbrev=False: "--password" must not pass as an abbreviation of --password-file
    s = jsub.add_parser("serve", help="run the controller against an MQTT broker", allow_abbrev=False)
    s.add_argument("--broker", required=True, help="mqtt://HOST:PORT or mqtts://HOST:PORT")
    s.add_argument("--db", help="the controller's SQLite database (created if new); or --store-url")
    _store_options(s)
    s.add_argument("--link", default="main", help="link id in the jackpot topics (default main)")
    s.add_argument("--pools", help="TOML file of [pools.NAME] tables (seed, rate, maximum, tables); "
                                   "default one pool 'main': seed 1000, rate 15%%, maximum 250000")
    s.add_argument("--username")
    password_options(s)
    s.add_argument("--ca", help="CA certificate (mqtts://)")
    s.add_argument("--cert", help="client certificate (mqtts://)")
    s.add_argument("--key", help="client key (mqtts://)")
    s.add_argument("-v", "--verbose", action="store_true")
    s.set_defaults(func=serve)
    c = jsub.add_parser("confirm", help="an attendant confirms a pending hit (by unit and round, or by hit number)",
                        allow_abbrev=False)
    c.add_argument("--broker", required=True, help="mqtt://HOST:PORT or mqtts://HOST:PORT")
    c.add_argument("--unit", help="the seat that hit, e.g. table-1/seat-3")
    c.add_argument("--round", type=bounded_int("--round", 1, MAX_ROUND), help="the round it hit in")
    c.add_argument("--hit", type=bounded_int("--hit", 1, MAX_ROUND),
                   help="the hit's number (betbox jackpot report), instead of --unit/--round")
    c.add_argument("--by", help="who confirms (name or badge); default: the --username")
    c.add_argument("--link", default="main", help="link id in the jackpot topics (default main)")
    c.add_argument("--username", default="attendant", help="MQTT username (the ACL's 'attendant')")
    password_options(c)
    tls_options(c)
    c.add_argument("--timeout", type=bounded_float("--timeout", 0.1, 600.0), default=10.0,
                   help="seconds to wait for the answer (default 10)")
    c.set_defaults(func=confirm)
    v = jsub.add_parser("verify", help="a seeded software check of a unit over the link: its HMAC, "
                        "compared with an approved copy's", allow_abbrev=False)
    v.add_argument("--broker", required=True, help="mqtt://HOST:PORT or mqtts://HOST:PORT")
    v.add_argument("--unit", required=True, help="the unit to check, e.g. table-1/seat-3")
    v.add_argument("--seed", help="the seed as hex, 8 to 64 bytes (default: 32 random bytes)")
    v.add_argument("--tree", help="the approved copy of the release: exit 1 unless the unit's answer is its HMAC")
    v.add_argument("--username", default="verifier", help="MQTT username (the ACL's 'verifier')")
    password_options(v)
    tls_options(v)
    v.add_argument("--timeout", type=bounded_float("--timeout", 0.1, 600.0), default=60.0,
                   help="seconds to wait for the answer (default 60: the unit hashes every file)")
    v.set_defaults(func=verify_unit)
    r = jsub.add_parser("report", help="meters, last hits and per-unit counts from the database")
    r.add_argument("--db", help="the controller's SQLite database; or --store-url")
    _store_options(r)
    r.add_argument("--json", action="store_true", help="print the report as JSON")
    r.set_defaults(func=report)


def _store_options(p: argparse.ArgumentParser) -> None:
    # the PostgreSQL store ([store] of a jackpot configuration), instead of the SQLite --db
    p.add_argument("--store-url", metavar="URL",
                   help="PostgreSQL instead of --db: postgresql://USER@HOST:PORT/DB (no password in it)")
    p.add_argument("--store-password-file", metavar="FILE", help="the PostgreSQL password, alone in FILE")


def _store_choice(args: argparse.Namespace, name: str) -> str | None:
    """What is wrong with the --db / --store-url choice, or None."""
    if (args.db is None) == (args.store_url is None):
        return f"{name}: give --db (SQLite) or --store-url (PostgreSQL), one of them"
    if args.store_password_file and args.store_url is None:
        return f"{name}: --store-password-file goes with --store-url"
    return None


def serve(args: argparse.Namespace) -> int:
    from firmware.config import ConfigError, load_jackpot_config, parse_config
    from firmware.jackpot.config import DEFAULT_POOLS, JackpotConfigError
    from firmware.jackpot.service import run_controller
    from firmware.preflight import check_startable

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    wrong = _store_choice(args, "betbox jackpot serve")
    if wrong:
        print(wrong, file=sys.stderr)
        return 2
    pools = DEFAULT_POOLS
    if args.pools:
        try:
            data = tomllib.loads(read_text(args.pools, MAX_POOLS_BYTES, "a pools file"))    # (/dev/zero has no size)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
            what = ("nested too deeply" if isinstance(exc, RecursionError) else "not UTF-8 text"
                    if isinstance(exc, UnicodeDecodeError) else exc.strerror if isinstance(exc, OSError) else exc)
            print(f"betbox jackpot serve: --pools {args.pools}: {what}", file=sys.stderr)
            return 2
        if set(data) != {"pools"}:
            print(f"betbox jackpot serve: --pools {args.pools}: only [pools.NAME] tables belong there",
                  file=sys.stderr)
            return 2
        pools = data["pools"]
    try:
        password = read_password(args)
    except ValueError as exc:
        print(f"betbox jackpot serve: {exc}", file=sys.stderr)
        return 2
    link: dict = {"broker": args.broker}
    if args.username:
        link["username"] = args.username
    if password is not None:
        link["password"] = password
    if args.allow_insecure:
        link["allow_insecure"] = True
    tls = {k: getattr(args, k) for k in ("ca", "cert", "key") if getattr(args, k)}
    if tls:
        link["tls"] = tls
    from firmware.link import topics
    try:
        topics.check_link_id(args.link)
    except ValueError as exc:
        print(f"betbox jackpot serve: --link: {exc}", file=sys.stderr)
        return 2
    # on PostgreSQL the SQLite file is never opened; its directory is the state directory
    db = Path(args.db or "jackpot.db").resolve()
    config: dict = {"unit": {"role": "jackpot", "id": args.link, "state_dir": str(db.parent)}, "link": link,
                    "jackpot": {"db": str(db), "pools": pools}}
    if args.store_url:
        config["store"] = {"url": args.store_url}
        if args.store_password_file:
            config["store"]["password_file"] = str(Path(args.store_password_file).resolve())
    from firmware.jackpot.store import StoreError
    try:
        jackpot = load_jackpot_config(config, Path.cwd(), "options")
        check_startable(parse_config(config, "options", Path.cwd()), "options")
        return run_controller(jackpot)
    except (JackpotConfigError, ConfigError, StoreError, ValueError) as exc:
        print(f"betbox jackpot serve: {exc}", file=sys.stderr)
        return 2


def confirm(args: argparse.Namespace) -> int:
    """Publish confirm_hit and wait for the controller's answer (its tx echoed)."""
    import uuid

    from firmware.link import topics
    from firmware.link.config import LinkConfigError, config_from_url

    if (args.hit is None) == (args.unit is None and args.round is None) or \
            (args.hit is None and (args.unit is None or args.round is None)):
        print("betbox jackpot confirm: give --unit and --round, or --hit", file=sys.stderr)
        return 2
    tls = {k: getattr(args, k) for k in ("ca", "cert", "key") if getattr(args, k)}
    try:
        cfg = config_from_url(args.broker, username=args.username, password=read_password(args), tls=tls or None,
                              allow_insecure=args.allow_insecure or None)
        topics.check_link_id(args.link)
        if args.unit is not None:
            topics.check_unit_id(args.unit)
    except (LinkConfigError, ValueError) as exc:
        print(f"betbox jackpot confirm: {exc}", file=sys.stderr)
        return 2
    tx = uuid.uuid4().hex
    command = {"schema": 1, "tx": tx, "command": "confirm_hit", "by": args.by or args.username}
    command.update({"hit": args.hit} if args.hit is not None else {"unit": args.unit, "round": args.round})
    from firmware.link.ask import ask
    answer = ask(cfg, f"attendant:{tx[:8]}", topics.command_topic(args.link), json.dumps(command),
                 topics.response_topic(args.link), lambda d: d if isinstance(d, dict) and d.get("tx") == tx else None,
                 args.timeout, "betbox jackpot confirm", f"the controller '{args.link}'")
    if answer is None:
        return 2
    if answer.get("ok"):
        print(f"hit {answer.get('hit')}: {answer.get('state')}")
        return 0
    print(f"betbox jackpot confirm: refused: {answer.get('error')}", file=sys.stderr)
    return 1


def verify_unit(args: argparse.Namespace) -> int:
    """Send a seed to the unit's challenge topic; print its answer; with --tree compare it
    with the HMAC over the approved copy (exit 1 when they differ)."""
    import secrets
    import uuid

    from firmware.link import topics
    from firmware.link.ask import ask
    from firmware.link.challenge import SEED, answer_problem
    from firmware.link.config import LinkConfigError, config_from_url
    from firmware.verify import challenge

    name = "betbox jackpot verify"
    seed = args.seed or secrets.token_hex(32)
    tls = {k: getattr(args, k) for k in ("ca", "cert", "key") if getattr(args, k)}
    try:
        if not SEED.match(seed):
            raise ValueError(f"--seed {seed!r} must be 8 to 64 bytes as hex")
        topics.check_unit_id(args.unit)
        cfg = config_from_url(args.broker, username=args.username, password=read_password(args), tls=tls or None,
                              allow_insecure=args.allow_insecure or None)
        expected = challenge(Path(args.tree), bytes.fromhex(seed)) if args.tree else None
    except (LinkConfigError, ValueError, OSError) as exc:      # VerifyError is a ValueError
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    tx = uuid.uuid4().hex
    refused: list[str] = []             # answers with this tx that are not the unit's (paho's thread)

    def answer_of(data: Any) -> dict | None:
        problem = answer_problem(data, args.unit, tx, seed)
        if problem is not None and isinstance(data, dict) and data.get("tx") == tx:
            refused.append(problem)
        return None if problem is not None else data

    answer = ask(cfg, f"verifier:{tx[:8]}", topics.challenge_topic(args.unit), json.dumps({"tx": tx, "seed": seed}),
                 topics.challenge_answer_topic(args.unit), answer_of, args.timeout, name, f"the unit {args.unit}")
    if refused:
        print(f"{name}: {len(refused)} answer(s) to this challenge refused, not {args.unit}'s as the "
              f"schema has it (first: {refused[0]})", file=sys.stderr)
    if answer is None:
        return 2
    if answer.get("error"):
        print(f"{name}: {args.unit} could not answer: {answer['error']}", file=sys.stderr)
        return 1
    print(f"{args.unit}: version {answer.get('version')}, seed {seed}, hmac {answer.get('hmac')}")
    if expected is None:
        return 0
    if answer.get("hmac") == expected:
        print(f"{args.unit}: matches the approved copy {args.tree}")
        return 0
    print(f"{name}: {args.unit}: DIFFERS from the approved copy {args.tree} (expected {expected})", file=sys.stderr)
    return 1


def _open_pg(args: argparse.Namespace) -> Any:
    from firmware.jackpot.database import open_store
    from firmware.jackpot.pg import check_url

    check_url(args.store_url)      # ValueError naming what is wrong (a password in it, no database)
    pw = Path(args.store_password_file) if args.store_password_file else None
    return open_store("", args.store_url, pw)


def report(args: argparse.Namespace) -> int:
    from firmware.jackpot.controller import report as build
    from firmware.jackpot.store import StoreError, connect

    wrong = _store_choice(args, "betbox jackpot report")
    if wrong:
        print(wrong, file=sys.stderr)
        return 2
    try:
        db = connect(args.db, readonly=True) if args.store_url is None else _open_pg(args)
    except (StoreError, ValueError) as exc:
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
              f"voided wagers {m['voided']}, hits released (void round) {m.get('released', 0)}")
        if not pool["balanced"]:
            print("   !! seeds + contributions != meter + overflow + won")
    print(f"== last hits ({len(data['last_hits'])})")
    for h in data["last_hits"]:
        print(f"   #{h['hit']} {h['unit']} round {h['round']}: {h['kind']} {h['category']} "
              f"{h['amount']} {h['state']}")
    print(f"== units ({len(data['units'])})")
    for unit, u in data["units"].items():
        gaps = f", missing {u['missing_ranges']}" if u["missing"] else ""
        kinds = ", ".join(f"{k} {n}" for k, n in u.get("kinds", {}).items())
        alarms = ", ".join(f"{k} {n}" for k, n in u.get("alarms", {}).items())
        print(f"   {unit}: {u['events']} events, highest seq {u['highest_seq']}, "
              f"{u['duplicates']} duplicates dropped{gaps}" + (f"\n      by kind: {kinds}" if kinds else "")
              + (f"\n      alarms: {alarms}" if alarms else ""))
    rej = data["rejected"]
    print(f"== rejected messages: {rej['count']}" +
          (f" ({', '.join(f'{k} {v}' for k, v in sorted(rej['by_reason'].items()))})" if rej["count"] else ""))
    # the seats' word against the dealer's record (docs/mqtt/README.md)
    held, integrity = data.get("held", {}), data.get("integrity", {"count": 0, "by_reason": {}, "last": []})
    print(f"== waiting for the other side: {held.get('seat', 0)} seat claims, {held.get('dealer', 0)} dealer records")
    print(f"== integrity alarms: {integrity['count']}" +
          (f" ({', '.join(f'{k} {v}' for k, v in sorted(integrity['by_reason'].items()))})"
           if integrity["count"] else ""))
    for a in integrity["last"]:
        print(f"   {a['reason']}: {a['detail']} (seat report {a['seat_report']}, dealer report {a['dealer_report']})")
    return 0
