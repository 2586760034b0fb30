"""``betbox settle FILE``: settle a scripted round.

The default output is a table a pit supervisor reads at the table (the command is their
tool for a disputed hand); ``--json`` gives the settlement as JSON for programs, with
``§`` and other text as written (``ensure_ascii=False``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from firmware.commands.limits import BAD_INPUT, OK, REFUSED, bounded_int
from firmware.script import MalformedScript, ScriptError, run_script

MAX_SCRIPT_BYTES = 1_000_000       # a scripted round is a few hundred bytes; a shoe of 8 decks ~2 KB

RESULTS = {"win": "wins", "lose": "loses", "stand_off": "stand off", "blackjack": "Blackjack, wins",
           "bust": "bust, loses", "surrender": "surrendered", "even_money": "even money, paid 1:1", None: "-"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("settle", help="settle a scripted round given as JSON",
                       description="Play a scripted round (wagers, shoe, decisions) through the rules "
                                   "engine and print its settlement: a table to read, or JSON (--json).")
    p.add_argument("file", help="the script, or - for standard input")
    p.add_argument("--json", action="store_true", help="print the settlement as JSON")
    p.add_argument("--indent", type=bounded_int("--indent", 0, 8), default=2,
                   help="JSON indent (0 for one line; with --json)")
    p.set_defaults(func=run)


def read_script(name: str, path: str) -> Any:
    """The parsed script; ValueError naming ``name`` and what is wrong."""
    try:
        if path == "-":
            text = sys.stdin.read(MAX_SCRIPT_BYTES + 1)
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read(MAX_SCRIPT_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"cannot read {name}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    if len(text) > MAX_SCRIPT_BYTES:
        raise ValueError(f"{name}: larger than {MAX_SCRIPT_BYTES} bytes: not a scripted round")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ValueError(f"{name}: not a scripted round: nested too deeply") from None
    except ValueError as exc:          # e.g. an integer of more than 4,300 digits
        raise ValueError(f"{name}: not valid JSON: {exc}") from None


def run(args: argparse.Namespace) -> int:
    name = "<stdin>" if args.file == "-" else args.file
    try:
        script = read_script(name, args.file)
    except ValueError as exc:
        print(f"betbox settle: {exc}", file=sys.stderr)
        return BAD_INPUT
    try:
        result = run_script(script)
    except MalformedScript as exc:      # not a round: bad input (a round the rules refuse: 1)
        print(f"betbox settle: {name}: {exc}", file=sys.stderr)
        return BAD_INPUT
    except ScriptError as exc:
        print(f"betbox settle: {name}: {exc}", file=sys.stderr)
        return REFUSED
    except RecursionError:
        print(f"betbox settle: {name}: not a scripted round: nested too deeply", file=sys.stderr)
        return BAD_INPUT
    if args.json:
        json.dump(result, sys.stdout, indent=args.indent or None, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(as_text(result))
    return OK


def _amount(value: Any) -> str:
    return f"+{value}" if isinstance(value, (int, float)) and value > 0 else str(value)


def as_text(result: dict[str, Any]) -> str:
    """The settlement as a person reads it: the dealer, then each box's hands and bets."""
    lines = [f"{result['profile']}, {result['decks']} decks"]
    if result["void"]:
        lines.append(f"VOID: {result['reason']} ({result['clause']}): every bet is returned")
    d = result["dealer"]
    lines.append(f"dealer: {' '.join(d['cards']) or '-'}  "
                 f"{'Blackjack' if d['blackjack'] else d['total'] if d['total'] is not None else ''}".rstrip())
    for number, box in result["boxes"].items():
        head = f"box {number}" + ("  (the player walked away: the House drew for the hand)"
                                  if box.get("walked_away") else "")
        lines.append(head)
        for hand in box["hands"]:
            extra = f", doubled {hand['doubled']}" if hand.get("doubled") else ""
            extra += ", switched" if hand.get("switched") else ""
            lines.append(f"  hand {hand['id']}: {' '.join(hand['cards']):<14} {hand['total']:>2}  "
                         f"stake {hand['stake']}{extra}: {RESULTS.get(hand['result'], hand['result'])}")
        width = max(len(b) for b in [*box["bets"], "net"])
        for bet, net in box["bets"].items():
            wagered = box["wagered"].get(bet)
            what = box.get("side_bets", {}).get(bet)
            note = f"  ({what})" if what else ""
            lines.append(f"  {bet:<{width}}  bet {wagered if wagered is not None else '-':>6}  "
                         f"player {_amount(net):>8}{note}")
        if "progressive" in box:
            p = box["progressive"]
            lines.append(f"  progressive: {p['hand'] or 'no award'}"
                         + (f", award {p['award']}" if p.get("award") is not None else ""))
        for flag in box.get("flags", []):
            lines.append(f"  ! {flag['bet']}: {flag['issue']} (placed {flag['placed']}, counted "
                         f"{flag['counted']}; {flag['clause']})")
        for r in box.get("returned", []):
            lines.append(f"  returned {r['bet']} {r['amount']}: {r['reason']} ({r['clause']})")
        lines.append(f"  {'net':<{width}}  {'':>10}  player {_amount(box['net']):>8}")
    return "\n".join(lines) + "\n"
