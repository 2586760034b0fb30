"""Time the exact odds behind ``betbox edge``, per bet, against a naive enumeration.

    python3 bench/bench_odds.py

"cold" is what one ``betbox edge`` run pays (the class table of a bet is built once per
process); "warm" is a second shoe in the same process (e.g. a partly used shoe); the
naive baseline judges every ordered deal of a one-deck shoe card by card.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from itertools import combinations, permutations
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from firmware.engine import odds  # noqa: E402
from firmware.engine.cards import ALL_CARDS, ShoeComposition, parse_cards  # noqa: E402
from firmware.engine.progressive import PROGRESSIVE_HANDS  # noqa: E402
from firmware.engine.sidebets import SIDE_BETS  # noqa: E402


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def clock(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def cold(fn) -> float:
    odds._classes.cache_clear()
    odds._suit_orbits.cache_clear()
    return clock(fn)


def main() -> None:
    print(f"machine: {platform.machine()}, nproc {os.cpu_count()}, {cpu_model()}, Python {platform.python_version()}")
    full = ShoeComposition.of_decks(4)
    used = full.without(parse_cards(["AS", "AS", "KH", "7D", "7D", "2C", "QS", "9H"]))
    print(f"\n{'bet':28} {'cold 4 decks':>13} {'warm 6 decks':>13} {'used shoe':>10}")
    jobs = [(name, lambda shoe, n=name: odds.side_bet_probabilities(n, shoe)) for name in SIDE_BETS]
    jobs += [(f"progressive {name}", lambda shoe, n=name: odds.progressive_probabilities(n, shoe))
             for name in PROGRESSIVE_HANDS]
    for name, job in jobs:
        c = cold(lambda job=job: job(full))
        w = clock(lambda job=job: job(ShoeComposition.of_decks(6)))
        u = clock(lambda job=job: job(used))
        print(f"{name:28} {c * 1000:11.1f}ms {w * 1000:11.1f}ms {u * 1000:8.1f}ms")

    print("\nnaive baseline (every deal of 1 deck judged one by one, same evaluators):")
    rule = SIDE_BETS["twenty_one_plus_three"]
    t = clock(lambda: [rule.evaluate(d[:2], d[2]) for d in permutations(ALL_CARDS, 3)])
    f = cold(lambda: odds.side_bet_probabilities("twenty_one_plus_three", ShoeComposition.of_decks(1)))
    print(f"  twenty_one_plus_three, 52*51*50 ordered deals: {t * 1000:8.1f}ms   (classes: {f * 1000:.1f}ms)")
    hand = PROGRESSIVE_HANDS["four_card"]
    t = clock(lambda: [hand.evaluate(d) for d in combinations(ALL_CARDS, 4)])
    f = cold(lambda: odds.progressive_probabilities("four_card", ShoeComposition.of_decks(1)))
    print(f"  four_card, C(52,4) unordered hands:             {t * 1000:8.1f}ms   (classes: {f * 1000:.1f}ms)"
          f"\n  (52^4 ordered deals would be {52 ** 4 / 270725:.0f}x that again)")

    print("\nwhole command (python3 -m firmware edge, fresh process each):")
    for profile in ("uk-4-deck", "rws-perfect-pairs", "rws-blackjack", "rws-blackjack-switch"):
        t = clock(lambda p=profile: subprocess.run([sys.executable, "-m", "firmware", "edge", "--profile", p, "--json"],
                                                   cwd=ROOT, check=True, capture_output=True))
        print(f"  {profile:22} {t * 1000:8.1f}ms")


if __name__ == "__main__":
    main()
