"""``betbox simulate``: rounds played through the real engine (``Round.apply``, as at the table)
by players following the basic-strategy chart, each bet's return with a 95% confidence
interval and the count of every result, to check the exact figures of ``betbox edge``.

The rounds, their chunks and workers are :mod:`firmware.sim.montecarlo`'s; a seeded run
prints the same with any number of workers.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from firmware.commands.limits import bounded_int, comma_list
from firmware.commands.strategy import StrategyError, read_profile
from firmware.sim.montecarlo import Tally, run_chunks, summary


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate", help="play rounds through the engine with basic strategy; each bet's return",
        description="Rounds through Round.apply with the basic-strategy chart of betbox strategy; "
                    "each bet's return per unit with a 95%% confidence interval.")
    parser.add_argument("--profile", required=True)
    parser.add_argument("--rounds", type=bounded_int("--rounds", 1, 10**10), required=True)
    parser.add_argument("--boxes", type=bounded_int("--boxes", 1, 7), default=1)
    parser.add_argument("--strategy", choices=("basic",), default="basic")
    parser.add_argument("--side-bets", type=comma_list("--side-bets"), default="",
                        help="comma-separated side bets to play on every box (default: none)")
    parser.add_argument("--seed", type=bounded_int("--seed", 0, 2**63), default=1)
    parser.add_argument("--workers", type=bounded_int("--workers", 1, 64), default=1)
    parser.add_argument("--shuffle", choices=("cut-card", "every-round"), default="cut-card",
                        help="cut-card (default): reshuffle when the cut card (75%%) is out, as at the "
                             "table; every-round: a full shoe every round, as betbox edge's exact figures assume")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        profile = read_profile(args.profile)
    except StrategyError as exc:
        print(f"betbox simulate: error: {exc}", file=sys.stderr)
        return 2
    side: tuple[str, ...] = args.side_bets
    unknown = [s for s in side if s not in profile.side_bets]
    if unknown:
        print(f"betbox simulate: error: --side-bets {','.join(unknown)}: not offered by {profile.name} "
              f"(offered: {', '.join(profile.side_bets) or 'none'})", file=sys.stderr)
        return 2
    lacking = [f"{s} needs {profile.side_bets[s].requires}" for s in side
               if profile.side_bets[s].requires not in (None, *side)]
    if lacking:     # the table would return such a bet unplayed: its return would read 0%
        print(f"betbox simulate: error: --side-bets: {'; '.join(lacking)}", file=sys.stderr)
        return 2
    decks = profile.default_decks
    started = time.monotonic()
    done = [0]

    def progress(n: int) -> None:
        done[0] += n
        rate = done[0] / max(time.monotonic() - started, 1e-9)
        eta = (args.rounds - done[0]) / rate if rate else 0.0
        print(f"\r{done[0]}/{args.rounds} rounds  {rate:.0f}/s  ETA {eta:.0f} s ", end="", file=sys.stderr)

    every_round = args.shuffle == "every-round"
    tallies = run_chunks(profile, decks, args.rounds, args.boxes, side, args.seed, args.workers, progress,
                         every_round)
    print(file=sys.stderr)
    shoe = "a full shoe every round" if every_round else "cut card at 75%"
    sys.stdout.write(report(profile.name, decks, args.rounds, args.boxes, tallies, shoe))
    return 0


def report(name: str, decks: int, rounds: int, boxes: int, tallies: list[Tally], shoe: str) -> str:
    lines = [f"{name}: {rounds} rounds, {boxes} box(es), {decks} decks, {shoe}, basic strategy"]
    for r in summary(tallies):
        lines.append(f"{r.bet}: return {r.mean * 100:+.3f}% ± {r.half_width * 100:.3f}% (95%), "
                     f"house edge {-r.mean * 100:.3f}%; results "
                     + ", ".join(f"{k}: {v}" for k, v in r.results.items()))
    return "\n".join(lines) + "\n"
