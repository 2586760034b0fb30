"""Why bench_engine.py plays betbox's side-by-side runs in fresh processes: the same 7-box
rounds with side bets in the bench's own process after its other figures (three profiles'
rounds, the apply-latency run, the deepcopy baseline) and in a fresh process, interleaved,
beside cardsharp's in a fresh process as always.

    python3 bench/bench_engine_process.py [--runs K] [--rounds N] [--release]
                                          [--cardsharp-python PATH]

``--release`` drops the latency run's kept rounds before the comparison. It prints; no assertions.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics

import bench_engine as b


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=1000, help="rounds per run")
    ap.add_argument("--release", action="store_true", help="drop the latency run's rounds first")
    ap.add_argument("--cardsharp-python", help="python of a venv that has cardsharp installed")
    args = ap.parse_args()
    print(f"machine: {b.machine()}; load average at the start {os.getloadavg()[0]:.2f}")
    # what bench_engine.main does before its side-by-side run
    for name, wagers in b.TABLES.items():
        b.bench_rounds(name, wagers, 2000, 20240611)
    n, _, _, states = b.bench_latency(1000, 20240612)
    b.bench_baselines(states, n)
    if args.release:
        del states
        gc.collect()
    python = b.cardsharp_python(args.cardsharp_python)
    in_process, fresh, theirs = [], [], []
    for run in range(args.runs):
        seed = 20240611 + run
        got = b.run_betbox(None, 7, args.rounds, seed, True, True)
        if got:
            fresh.append(got["rounds_s"])
        in_process.append(b.betbox_vs(7, True, args.rounds, seed)["rounds_s"])
        if python:
            other = b.run_cardsharp(python, 7, args.rounds, seed, True, True)
            if other:
                theirs.append(other["rounds_s"])
    med = statistics.median
    print(f"7 boxes with side bets, {args.rounds} rounds a run, {args.runs} interleaved runs, CPU time, "
          f"rounds/s min/median/max" + (" (the latency run's rounds released)" if args.release else ""))
    for label, xs in (("betbox in the bench's process", in_process), ("betbox in a fresh process", fresh),
                      ("cardsharp in a fresh process", theirs)):
        if xs:
            print(f"  {label:32s} {min(xs):7.0f} {med(xs):7.0f} {max(xs):7.0f}"
                  + (f"   vs cardsharp {med(xs) / med(theirs):.2f}x" if theirs and xs is not theirs else ""))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
