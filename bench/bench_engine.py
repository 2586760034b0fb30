"""Engine throughput: full 7-box rounds per second with side bets, the latency of one
``apply``, and baselines measured in the same run so the figures can be compared across
machines.

    python3 bench/bench_engine.py [--rounds N] [--seed S]

Seeded shuffled shoe, fixed simple strategy (hit below 17, stand otherwise; a decision the
engine reports illegal is replaced by the first legal one). No assertions: it prints.
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from firmware.engine.cards import ALL_CARDS  # noqa: E402
from firmware.engine.events import Action, BetsClosed, CardDrawn, Decision  # noqa: E402
from firmware.engine.hand import hand_total  # noqa: E402
from firmware.engine.profile import load_profile  # noqa: E402
from firmware.engine.round import Round  # noqa: E402
from firmware.engine.settlement import settlement  # noqa: E402

TABLES = {
    "rws-blackjack": {"main": 10, "player_pair": 5, "under_13": 5, "over_13": 5},
    "uk-4-deck": {"main": 10, "super_pairs": 5, "twenty_one_plus_three": 5, "top_3": 5},
    "rws-blackjack-switch": {"main": 10, "progressive": 5},
}


def machine() -> str:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"nproc {os.cpu_count()}, CPU {model}, Python {platform.python_version()} "
            f"({platform.python_implementation()}), {platform.machine()}")


class Shoe:
    def __init__(self, decks: int, rng: random.Random):
        self.decks, self.rng = decks, rng
        self.cards: list = []

    def draw(self):
        if len(self.cards) < 60:      # reshuffle well before the end, like a cut card
            self.cards = [c for c in ALL_CARDS for _ in range(self.decks)]
            self.rng.shuffle(self.cards)
        return self.cards.pop()


def play_round(profile, wagers, shoe, timings=None, meter=100000):
    """One round: returns (state, events applied)."""
    state = Round.new(profile, meter=meter if profile.progressive else None)
    clock = time.perf_counter_ns
    n = 0

    def apply(event):
        nonlocal state, n
        if timings is None:
            state, _ = state.apply(event)
        else:
            t0 = clock()
            state, _ = state.apply(event)
            timings.append(clock() - t0)
        n += 1

    apply(BetsClosed.of({box: wagers for box in range(1, 8)}))
    while not state.is_over:
        expect = state.expecting()
        if expect.kind == "card":
            apply(CardDrawn(shoe.draw()))
            continue
        _, hand = state.hand_in_play()
        want = Action.HIT if hand.total < 17 else Action.STAND
        d = Decision(expect.box, want)
        if state.why_not(d) is not None:             # legal-checked
            legal = [a for a, why in state.legal_decisions(expect.box).items()
                     if why is None and a in (Action.STAND, Action.HIT)]
            d = Decision(expect.box, legal[0])
        apply(d)
    return state, n


def bench_rounds(name, wagers, rounds, seed):
    profile = load_profile(name)
    shoe = Shoe(profile.default_decks, random.Random(seed))
    events = 0
    t0 = time.perf_counter()
    for _ in range(rounds):
        state, n = play_round(profile, wagers, shoe)
        settlement(state)
        events += n
    dt = time.perf_counter() - t0
    return rounds / dt, events / rounds, dt


def bench_latency(rounds, seed):
    profile = load_profile("rws-blackjack")
    shoe = Shoe(profile.default_decks, random.Random(seed))
    timings: list[int] = []
    states = []
    for i in range(rounds):
        state, _ = play_round(profile, TABLES["rws-blackjack"], shoe, timings)
        if i < 200:
            states.append(state)
    timings.sort()
    q = statistics.quantiles(timings, n=100)
    return len(timings), q[49] / 1000, q[98] / 1000, states


def bench_baselines(states, applies):
    """Same-run baselines: deepcopy of a finished 7-box round; hand_total over the same
    number of calls as ``applies`` events, on the round's own hands."""
    t0 = time.perf_counter_ns()
    for s in states:
        copy.deepcopy(s)
    deepcopy_us = (time.perf_counter_ns() - t0) / len(states) / 1000
    hands = [h.cards for s in states for b in s.boxes for h in b.hands] + [s.dealer for s in states]
    t0 = time.perf_counter_ns()
    i = 0
    for _ in range(applies):
        hand_total(hands[i])
        i = i + 1 if i + 1 < len(hands) else 0
    total_ns = time.perf_counter_ns() - t0
    t0 = time.perf_counter_ns()
    for _ in range(applies):
        pass
    loop_ns = time.perf_counter_ns() - t0
    return deepcopy_us, total_ns / applies / 1000, loop_ns / applies / 1000


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20240611)
    args = ap.parse_args(argv)
    print(f"machine: {machine()}")
    print(f"rounds per profile: {args.rounds}, seed {args.seed}, 7 boxes, "
          "strategy: hit below 17 else stand")
    print()
    print("full 7-box rounds with side bets:")
    for name, wagers in TABLES.items():
        rps, epr, dt = bench_rounds(name, wagers, args.rounds, args.seed)
        bets = "+".join(wagers)
        print(f"  {name:22s} {bets:44s} {rps:9.0f} rounds/s  "
              f"({epr:.1f} events/round, {dt:.2f} s)")
    print()
    n, p50, p99, states = bench_latency(args.rounds // 2, args.seed + 1)
    print(f"apply one event (rws-blackjack, {n} events): p50 {p50:.1f} us, p99 {p99:.1f} us")
    deepcopy_us, total_us, loop_us = bench_baselines(states, n)
    print("baselines (same run):")
    print(f"  copy.deepcopy of a finished 7-box round: {deepcopy_us:.1f} us")
    print(f"  hand_total(), one call:                  {total_us:.3f} us")
    print(f"  empty Python for-loop iteration:         {loop_us:.3f} us")
    print(f"  => one apply p50 = {p50 / deepcopy_us:.2f} deepcopies = {p50 / total_us:.0f} hand_total calls")


if __name__ == "__main__":
    main()
