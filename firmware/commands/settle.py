"""``betbox settle FILE``: settle a scripted round (JSON in, JSON out)."""

from __future__ import annotations

import argparse
import json
import sys

from firmware.script import ScriptError, run_script


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("settle", help="settle a scripted round given as JSON",
                       description="Play a scripted round (wagers, shoe, decisions) through the rules "
                                   "engine and print its settlement as JSON.")
    p.add_argument("file", help="the script, or - for standard input")
    p.add_argument("--indent", type=int, default=2, help="JSON indent (0 for one line)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    name = "<stdin>" if args.file == "-" else args.file
    try:
        text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
    except OSError as exc:
        print(f"betbox settle: cannot read {name}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        script = json.loads(text)
    except json.JSONDecodeError as exc:
        print(f"betbox settle: {name}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
              file=sys.stderr)
        return 2
    try:
        result = run_script(script)
    except ScriptError as exc:
        print(f"betbox settle: {name}: {exc}", file=sys.stderr)
        return 1
    json.dump(result, sys.stdout, indent=args.indent or None)
    sys.stdout.write("\n")
    return 0
