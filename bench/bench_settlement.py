"""``settlement()`` alone: the CPU time of the round's settlement JSON over N finished rounds.

    python3 bench/bench_settlement.py [--rounds N] [--runs K] [--seed S] [--baseline TREE]
                                      [--profile]

The rounds are played once (bench_engine's harness: basic strategy for rws-blackjack with
its TABLES wagers on 7 boxes, the simple strategy for the other profiles), then
``settlement(round)`` is timed over them, ``--runs`` times, min/median/max rounds/s, and a
seat's own box at the round's end (``box_settlement(round, 4).to_json()``).
``--baseline TREE`` loads that checkout's ``firmware/engine/settlement.py`` into this
package (same rounds, same engine; only the settlement code differs) and alternates with
it, printing this / baseline. No assertions: it prints.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_engine import TABLES, EventShoe, Shoe, play_basic, play_round  # noqa: E402

from firmware.engine import settlement as current  # noqa: E402
from firmware.engine.events import BetsClosed  # noqa: E402
from firmware.engine.profile import load_profile  # noqa: E402


def rounds_of(name: str, n: int, seed: int) -> list:
    profile = load_profile(name)
    out = []
    if name == "rws-blackjack":
        shoe = EventShoe(6, random.Random(seed))
        bets = BetsClosed.of({box: TABLES[name] for box in range(1, 8)})
        for _ in range(n):
            out.append(play_basic(profile, bets, shoe)[0])
    else:
        plain = Shoe(profile.default_decks, random.Random(seed))
        for _ in range(n):
            out.append(play_round(profile, TABLES[name], plain)[0])
    return out


def load_baseline(tree: str) -> ModuleType:
    """The baseline's settlement module, as a module of this engine package."""
    path = Path(tree) / "firmware" / "engine" / "settlement.py"
    spec = importlib.util.spec_from_file_location("firmware.engine._baseline_settlement", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def timed(module: ModuleType, rounds: list) -> float:
    settle = module.settlement
    t0 = time.process_time()
    for state in rounds:
        settle(state)
    return len(rounds) / (time.process_time() - t0)


def timed_seat(module: ModuleType, rounds: list) -> float:
    """A seat's own box at the round's end: ``box_settlement(round, 4).to_json()``."""
    own = module.box_settlement
    t0 = time.process_time()
    for state in rounds:
        settled = own(state, 4)
        if settled is not None:
            settled.to_json()
    return len(rounds) / (time.process_time() - t0)


def spread(xs: list[float]) -> str:
    return f"{min(xs):,.0f}/{statistics.median(xs):,.0f}/{max(xs):,.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--baseline")
    ap.add_argument("--profile", action="store_true", help="cProfile the rws-blackjack rounds")
    args = ap.parse_args()
    base = load_baseline(args.baseline) if args.baseline else None
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; settlement() over "
          f"{args.rounds} finished 7-box rounds, CPU time, rounds/s min/median/max of {args.runs}")
    for name in TABLES:
        rounds = rounds_of(name, args.rounds, args.seed)
        if args.profile and name == "rws-blackjack":
            import cProfile
            import pstats
            cProfile.runctx("timed(current, rounds)", globals(), {"rounds": rounds, "current": current},
                            "/tmp/settle.prof")
            pstats.Stats("/tmp/settle.prof").sort_stats("tottime").print_stats(8)
        for what, run in (("settlement()", timed), ("seat's own box", timed_seat)):
            now: list[float] = []
            old: list[float] = []
            for _ in range(args.runs):
                if base is not None:
                    old.append(run(base, rounds))
                now.append(run(current, rounds))
            line = f"{name:21} {what:15} this {spread(now)} ({1e6 / statistics.median(now):.1f} us a round)"
            if old:
                line += (f"  baseline {spread(old)} ({1e6 / statistics.median(old):.1f} us)"
                         f"  this/baseline {statistics.median(now) / statistics.median(old):.2f}x")
            print(line)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
