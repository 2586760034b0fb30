"""``betbox journal``: the units' journals as a record people read.

``show DIR [--round N]`` prints rounds from the dealer journal under DIR, its archived
segments included (cards, decisions,
bets, settlement); ``stats DIR [--json]`` gives, per unit, events emitted, the highest
sequence number and the events not yet delivered.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from firmware.runtime.journal import JournalError, find_journals, open_readonly


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("journal", help="recall rounds and statistics from unit journals")
    jsub = p.add_subparsers(dest="journal_command", metavar="ACTION")
    jsub.required = True
    show = jsub.add_parser("show", help="print rounds as a person reads them")
    show.add_argument("dir", help="a unit's state directory, or a directory holding several")
    show.add_argument("--round", type=int, help="only this round")
    show.set_defaults(func=run_show)
    stats = jsub.add_parser("stats", help="per unit: events emitted, highest sequence number, undelivered")
    stats.add_argument("dir")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(func=run_stats)


def _journals(directory: str) -> list[Path]:
    paths = find_journals(directory)
    if not paths:
        raise JournalError(f"no journal under {directory}")
    return paths


def run_stats(args: argparse.Namespace) -> int:
    try:
        rows = []
        for path in _journals(args.dir):
            j = open_readonly(path)
            rows.append({"path": str(path), **j.stats()})
            j.close()
    except JournalError as exc:
        print(f"betbox journal: {exc}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(f"{'unit':<28}{'role':<8}{'emitted':>9}{'highest seq':>13}{'undelivered':>13}{'accepted':>10}")
    for r in rows:
        print(f"{r['unit']:<28}{r['role']:<8}{r['emitted']:>9}{r['highest_seq']:>13}"
              f"{r['undelivered']:>13}{r['accepted']:>10}")
    return 0


def _describe_event(e: dict) -> str:
    kind = e["type"]
    if kind == "bets_closed":
        return "no more bets: " + ("; ".join(
            f"box {b}: " + ", ".join(f"{n} {a}" for n, a in bets.items()) for b, bets in e["wagers"].items())
            or "no bets")
    if kind == "card":
        return f"card {e['card']}"
    if kind == "decision":
        extra = f" {e['amount']}" if "amount" in e else ""
        hand = f" hand {e['hand']}" if e.get("hand") else ""
        return f"box {e['box']}{hand}: {e['action']}{extra}"
    if kind == "walked_away":
        return f"box {e['box']}: player walked away"
    if kind == "void":
        return f"VOID ({e['reason']})"
    return json.dumps(e)


def _print_settlement(s: dict) -> None:
    d = s["dealer"]
    if s.get("void"):
        print(f"  result: VOID — {s.get('reason')} ({s.get('clause')}); every bet returned")
    print(f"  dealer: {' '.join(d['cards']) or '-'} = {d['total']}{' Blackjack' if d['blackjack'] else ''}")
    for box, b in s["boxes"].items():
        hands = "; ".join(f"{' '.join(h['cards'])} = {h['total']} {h['result'] or ''}".strip() for h in b["hands"])
        bets = ", ".join(f"{k} {v:+}" if isinstance(v, (int, float)) else f"{k} {v}" for k, v in b["bets"].items())
        print(f"  box {box}: {hands or 'not dealt'} | {bets} | net {b['net']}")
        for r in b.get("returned", []):
            print(f"    returned {r['bet']} {r['amount']}: {r['reason']} ({r['clause']})")


def run_show(args: argparse.Namespace) -> int:
    try:
        paths = [p for p in _journals(args.dir) if open_readonly(p).role == "dealer"]
    except JournalError as exc:
        print(f"betbox journal: {exc}", file=sys.stderr)
        return 2
    if not paths:
        print(f"betbox journal: no dealer journal under {args.dir}", file=sys.stderr)
        return 2
    shown = 0
    for path in paths:
        j = open_readonly(path)
        print(f"== {j.unit_id} ({path})")
        for r in j.history(args.round):      # archived segments, then the active file
            if r.dir != "out":
                continue
            body = r.body["body"]
            if r.kind == "round_open":
                shown += 1
                print(f"round {body['round']} — {body['profile']}, {body['decks']} decks, "
                      f"shoe {body.get('shoe_number')} (stream #{body['stream_seq']})")
            elif r.kind == "event":
                print(f"  #{body['stream_seq']:<5} {_describe_event(body['event'])}")
            elif r.kind == "round_result":
                _print_settlement(body["settlement"])
            elif r.kind in ("refused", "alarm") and r.round == args.round or (
                    args.round is None and r.kind == "alarm"):
                what = body.get("reason") or body.get("detail")
                print(f"  {r.kind.upper()}: {what}")
        j.close()
    if args.round is not None and not shown:
        print(f"betbox journal: round {args.round} is not in the journal", file=sys.stderr)
        return 1
    return 0
