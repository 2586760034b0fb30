"""``betbox simulate``'s speed: rounds/s for 1 and 7 boxes with 1 and 2 workers, and a profile
splitting one worker's time between the engine and the simulator around it.

    .venv/bin/python bench/bench_simulate.py [--profile rws-blackjack] [--rounds 20000]
        [--split-rounds 5000] [--side-bets player_pair,under_13,over_13]

"engine" is the time inside the engine's entry points the simulator calls (``Round.apply``,
``Round.new``, ``expecting``, ``hand_in_play``, ``box``, ``is_over``...), counted where the
simulator calls them; "simulator" is the rest of the run (shoe, strategy look-ups including
``Chart``'s, events, tallies, loop). The profiler slows both; the split is what it is for.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

from firmware.engine.profile import load_profile
from firmware.sim.montecarlo import playbook_for, run_chunks

SIM_FILES = ("firmware/sim/montecarlo.py", "firmware/sim/playbook.py", "firmware/sim/shoe.py")


def rate(name: str, rounds: int, boxes: int, side: tuple[str, ...], workers: int) -> float:
    profile = load_profile(name)
    started = time.perf_counter()
    run_chunks(profile, profile.default_decks, rounds, boxes, side, 1, workers)
    return rounds / (time.perf_counter() - started)


def split(name: str, rounds: int, boxes: int, side: tuple[str, ...]) -> tuple[float, float, float]:
    """(total, engine, simulator) seconds of one worker under cProfile, the chart built first."""
    profile = load_profile(name)
    playbook_for(profile, profile.default_decks)        # the chart's analysis is cached: not timed
    prof = cProfile.Profile()
    prof.enable()
    run_chunks(profile, profile.default_decks, rounds, boxes, side, 1, 1)
    prof.disable()
    stats = pstats.Stats(prof).stats        # type: ignore[attr-defined]
    total = engine = 0.0
    for (file, _, func), (_, _, _, cum, callers) in stats.items():
        if file.endswith("montecarlo.py") and func == "run_chunks":
            total = cum
        if "firmware/engine/" not in file or file.endswith("engine/basic.py"):
            continue                # the chart's look-ups are the simulator's strategy
        for (caller_file, _, _), (_, _, _, caller_cum) in callers.items():
            if caller_file.endswith(SIM_FILES):
                engine += caller_cum
    return total, engine, total - engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="rws-blackjack")
    parser.add_argument("--rounds", type=int, default=20000)
    parser.add_argument("--split-rounds", type=int, default=5000)
    parser.add_argument("--side-bets", default="player_pair,under_13,over_13")
    args = parser.parse_args()
    side = tuple(s for s in args.side_bets.split(",") if s)
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    total, engine, sim = split(args.profile, args.split_rounds, 7, side)
    print(f"profile, {args.split_rounds} 7-box rounds, 1 worker: {total:.1f} s = engine {engine:.1f} s "
          f"({engine / total:.0%}) + simulator {sim:.1f} s ({sim / total:.0%})")
    for boxes in (1, 7):
        for workers in (1, 2):
            r = rate(args.profile, args.rounds, boxes, side, workers)
            print(f"{args.profile} {boxes} box(es) with {', '.join(side) or 'no side bets'}, "
                  f"{workers} worker(s): {r:.0f} rounds/s ({r * boxes:.0f} box-rounds/s)")
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
