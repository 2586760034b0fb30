"""``betbox journal``: the units' journals as a record people read.

``show DIR [--round N] [--box B] [--since T] [--until T]`` prints rounds from the journals
under DIR (a dealer's or a seat's), archived segments included: cards, decisions, bets,
settlement, each with the UTC time it was journalled, and each start of the unit with the
clock's sync state; ``stats DIR [--json]`` gives, per unit, events emitted, the highest
sequence number and the events not yet delivered. Both only read (read-only opening:
they work on read-only media and never touch a running unit's files).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from firmware.runtime.journal import JournalError, Record, find_journals, open_readonly

#: the dealer's table stream, as the dealer emits it and as a seat takes it in
STREAM_KINDS = ("round_open", "event", "round_result")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("journal", help="recall rounds and statistics from unit journals")
    jsub = p.add_subparsers(dest="journal_command", metavar="ACTION")
    jsub.required = True
    show = jsub.add_parser("show", help="print rounds as a person reads them")
    show.add_argument("dir", help="a unit's state directory, or a directory holding several")
    show.add_argument("--round", type=int, help="only this round")
    show.add_argument("--box", type=int, help="only this box's bets, decisions and settlement")
    show.add_argument("--since", type=_utc_time, metavar="TIME",
                      help="only what was journalled at or after TIME (ISO 8601; UTC unless an offset is given)")
    show.add_argument("--until", type=_utc_time, metavar="TIME", help="only what was journalled up to TIME")
    show.set_defaults(func=run_show)
    stats = jsub.add_parser("stats", help="per unit: events emitted, highest sequence number, undelivered")
    stats.add_argument("dir")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(func=run_stats)


def _utc_time(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time (ISO 8601, e.g. 2026-11-23T18:05:00Z)") from None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value


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


def _when(r: Record) -> str:
    return f"{r.utc[:23]}Z" if r.utc else "(no time)".ljust(24)


def _in_time(r: Record, since: datetime | None, until: datetime | None) -> bool:
    if since is None and until is None:
        return True
    if not r.utc:
        return False                 # journalled by firmware that kept no time
    at = datetime.fromisoformat(r.utc)
    return (since is None or at >= since) and (until is None or at <= until)


def _for_box(kind: str, body: dict[str, Any], box: int | None) -> dict[str, Any] | None:
    """The stream message as it concerns ``box`` (None: not at all)."""
    if box is None:
        return body
    key = str(box)
    if kind == "event":
        e = body["event"]
        if e["type"] == "bets_closed":
            return {**body, "event": {**e, "wagers": {b: w for b, w in e["wagers"].items() if b == key}}}
        if "box" in e and e["box"] != box:
            return None
    if kind == "round_result":
        s = body["settlement"]
        return {**body, "settlement": {**s, "boxes": {b: v for b, v in s["boxes"].items() if b == key}}}
    return body


def _stream(r: Record, role: str) -> tuple[str, dict[str, Any]] | list[tuple[str, dict[str, Any]]] | None:
    """The table stream messages in a record: the dealer's own, or those a seat took in."""
    if role == "dealer":
        return (r.kind, r.body["body"]) if r.dir == "out" and r.kind in STREAM_KINDS else None
    if r.dir != "in" or r.kind != "msg":
        return None
    if r.body.get("kind") == "catchup":
        return [(m["kind"], m["body"]) for m in r.body["body"].get("messages", []) if m.get("kind") in STREAM_KINDS]
    return (r.body["kind"], r.body["body"]) if r.body.get("kind") in STREAM_KINDS else None


def _print_stream(when: str, kind: str, body: dict[str, Any], mono: float | None) -> bool:
    if kind == "round_open":
        clock = f", monotonic {mono:.3f} s" if mono is not None else ""
        print(f"{when} round {body['round']} — {body['profile']}, {body['decks']} decks, "
              f"shoe {body.get('shoe_number')} (stream #{body['stream_seq']}{clock})")
        return True
    if kind == "event":
        print(f"{when}   #{body['stream_seq']:<5} {_describe_event(body['event'])}")
    elif kind == "round_result":
        print(f"{when}   settlement:")
        _print_settlement(body["settlement"])
    return False


def run_show(args: argparse.Namespace) -> int:
    box, since, until = getattr(args, "box", None), getattr(args, "since", None), getattr(args, "until", None)
    try:
        paths = _journals(args.dir)
        shown = 0
        for path in paths:
            j = open_readonly(path)
            try:
                shown += _show_one(j, path, args.round, box, since, until)
            finally:
                j.close()
    except JournalError as exc:
        print(f"betbox journal: {exc}", file=sys.stderr)
        return 2
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        print(f"betbox journal: a record under {args.dir} is not one this firmware reads: {exc!r}",
              file=sys.stderr)
        return 2
    if args.round is not None and not shown:
        print(f"betbox journal: round {args.round} is not in the journal", file=sys.stderr)
        return 1
    return 0


def _seat_box(unit_id: str) -> int | None:
    name = unit_id.rsplit("/", 1)[-1]
    return int(name[5:]) if name.startswith("seat-") and name[5:].isdigit() else None


def _show_one(j, path: Path, round_no: int | None, box: int | None, since: datetime | None,
              until: datetime | None) -> int:
    """Print one unit's rounds; returns the rounds opened that were shown."""
    if j.role not in ("dealer", "seat"):
        return 0
    print(f"== {j.role} {j.unit_id} ({path})")
    if j.role == "seat" and box is None:
        box = _seat_box(j.unit_id)              # a seat recalls its own box
    for start in j.starts():
        print(f"{start['utc'][:23]}Z started (firmware {start['firmware']}, clock {start['clock']}, "
              f"monotonic {start['mono']:.3f} s, after step {start['after_step']})")
    shown = 0
    for r in j.history(round_no):      # archived segments, then the active file
        if not _in_time(r, since, until):
            continue
        when = _when(r)
        found = _stream(r, j.role)
        for kind, body in ([found] if isinstance(found, tuple) else found or []):
            for_box = _for_box(kind, body, box)
            if for_box is not None:
                shown += _print_stream(when, kind, for_box, r.mono)
        if j.role == "seat" and r.dir == "out" and r.kind != "alarm":
            body = {k: v for k, v in r.body["body"].items() if k not in ("box", "round")}
            print(f"{when}   seat {r.body['body'].get('box')}: {r.kind} {json.dumps(body, sort_keys=True)}")
        elif r.dir == "out" and (r.kind == "alarm" or r.kind == "refused" and round_no is not None):
            body = r.body["body"]
            what = body.get("reason") or body.get("detail")
            print(f"{when}   {r.kind.upper()}: {what}")
    return shown
