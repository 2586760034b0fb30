"""``betbox demo``: a simulated table with one seat's display in a window, or (``--headless``)
whole tables of simulated players on mock hardware.

Each table is a dealer unit and seven seat units talking over the in-process bus, every
unit journalling to ``--state-dir``; players play basic strategy for the table's profile,
bet side bets and progressives at random and sometimes misbehave. Deterministic for a seed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

from firmware.engine.profile import ProfileError, load_profile, profile_names
from firmware.sim.summary import Summary


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run whole tables of simulated players on mock hardware",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("--headless", action="store_true", help="no window: progress and summary on the terminal")
    p.add_argument("--rounds", type=int, default=20, help="rounds per table (default 20)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--tables", type=int, default=1, help="number of tables (default 1)")
    p.add_argument("--state-dir", help="where the units keep their journals (default: a temporary directory)")
    p.add_argument("--profile", nargs="+", action="extend", dest="profiles", metavar="NAME",
                   help="profile of each table, cycled (default: every shipped profile in turn)")
    p.add_argument("--direct", action="store_true",
                   help="drive the rules engine directly, without units (reference mode)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    w = p.add_argument_group("the window (without --headless)")
    w.add_argument("--box", type=int, default=1, help="the seat whose display is shown, 1-7 (default 1)")
    w.add_argument("--lang", default="en", help="the display's language: en, zh or ms (default en)")
    w.add_argument("--size", default="800x480", help="window size: 800x480, 1024x600 or 1280x800")
    w.add_argument("--manual", action="store_true",
                   help="start driven by a person (keyboard and on-screen dealer controls)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not args.headless:
        return _window(args)
    if args.rounds < 1 or args.tables < 1:
        print("betbox demo: --rounds and --tables must be at least 1", file=sys.stderr)
        return 2
    try:
        profiles = [load_profile(n) for n in (args.profiles or profile_names())]
    except ProfileError as exc:
        print(f"betbox demo: {exc}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    total = Summary()
    if args.state_dir:
        state_dir = Path(args.state_dir)
        state_dir.mkdir(parents=True, exist_ok=True)
        return _play(args, profiles, rng, total, state_dir)
    with tempfile.TemporaryDirectory(prefix="betbox-demo-") as tmp:
        return _play(args, profiles, rng, total, Path(tmp))


def _window(args: argparse.Namespace) -> int:
    """The windowed demo; Kivy is imported only here, so the headless demo never needs it."""
    if not 1 <= args.box <= 7:
        print(f"betbox demo: --box must be 1 to 7, not {args.box}", file=sys.stderr)
        return 2
    from ui.i18n import LANGUAGES
    if args.lang not in LANGUAGES:
        print(f"betbox demo: --lang must be one of {', '.join(LANGUAGES)}, not {args.lang!r}", file=sys.stderr)
        return 2
    from ui.app import run_demo_window
    return run_demo_window(args)


def _play(args, profiles, rng, total: Summary, state_dir: Path) -> int:
    for t in range(args.tables):
        profile = profiles[t % len(profiles)]
        table_seed = rng.randrange(2 ** 32)
        label = f"table {t + 1} ({profile.name})"
        summary = Summary()
        if args.direct:
            from firmware.sim.direct import play_direct
            for i, state in enumerate(play_direct(profile, args.rounds, random.Random(table_seed)), 1):
                summary.add_round(state)
                _progress(label, i, args.rounds)
        else:
            from firmware.runtime.table import TableSpec, run_demo_table
            spec = TableSpec(table_id=f"table-{t + 1}", profile=profile, seed=table_seed,
                             state_dir=state_dir / f"table-{t + 1}")
            summary = run_demo_table(spec, args.rounds,
                                     progress=lambda i: _progress(label, i, args.rounds))
        if sys.stderr.isatty():
            print(file=sys.stderr)
        total.merge(summary)
        if not args.json:
            print(f"== {label}")
            for line in summary.lines():
                print("   " + line)
    if args.json:
        json.dump(total.as_dict(), sys.stdout, indent=2)
        print()
    else:
        print(f"== all tables ({args.tables})")
        for line in total.lines():
            print("   " + line)
    return 0


def _progress(label: str, done: int, rounds: int) -> None:
    """A live counter on a terminal; every tenth of the way in a log."""
    if sys.stderr.isatty():
        print(f"\r{label}: round {done}/{rounds}", end="", file=sys.stderr, flush=True)
    elif done == rounds or done % max(1, rounds // 10) == 0:
        print(f"{label}: round {done}/{rounds}", file=sys.stderr, flush=True)


