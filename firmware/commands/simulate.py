"""``betbox simulate``: rounds played through the real engine (``Round.apply``, as at the table)
by players following the basic-strategy chart, each bet's return with a 95% confidence
interval and the count of every result, to check the exact figures of ``betbox edge``.

The rounds are cut into chunks of 5,000, each with its own ``random.Random("seed/chunk")`` shoe
(the demo's :class:`firmware.sim.shoe.SimShoe`, reshuffled at its cut card); the workers' chunks
are merged in chunk order, so a seeded run prints the same with any number of workers.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from firmware.commands.limits import bounded_int
from firmware.commands.strategy import StrategyError, read_profile
from firmware.engine.basic import Chart, chart_for
from firmware.engine.events import Action, BetsClosed, CardDrawn, Decision, VoidRound
from firmware.engine.maingame import main_rules
from firmware.engine.profile import Profile, load_profile
from firmware.engine.round import Phase, Round
from firmware.sim.shoe import SimShoe

ONE = Fraction(1)
CHUNK = 5000                   # rounds per shoe sequence (one seed each)
# per bet: [rounds with the bet, sum of net, sum of net squared], and Counter of results
Tally = tuple[dict[str, list[float]], dict[str, Counter[str]]]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate", help="play rounds through the engine with basic strategy; each bet's return",
        description="Rounds through Round.apply with the basic-strategy chart of betbox strategy; "
                    "each bet's return per unit with a 95%% confidence interval.")
    parser.add_argument("--profile", required=True)
    parser.add_argument("--rounds", type=bounded_int("--rounds", 1, 10**10), required=True)
    parser.add_argument("--boxes", type=bounded_int("--boxes", 1, 7), default=1)
    parser.add_argument("--strategy", choices=("basic",), default="basic")
    parser.add_argument("--side-bets", default="", help="comma-separated side bets to play on every box")
    parser.add_argument("--seed", type=bounded_int("--seed", 0, 2**63), default=1)
    parser.add_argument("--workers", type=bounded_int("--workers", 1, 64), default=1)
    parser.set_defaults(func=run)


def _offers(state: Round, chart: Chart, boxes: int) -> Round:
    """Surrender where the chart says so (insurance and even money never). Switch: a position
    that will switch surrenders nothing (§3.10: no surrender after a switch, and the switch
    rule already weighed the dealt hands with their surrender)."""
    up = state.dealer[0].value
    for number in range(1, boxes + 1):
        box = state.box(number)
        if state.profile.is_switch:
            first, second = ([c.value for c in h.cards] for h in box.hands)
            if chart.switch(first, second, up):
                continue
        for family in range(state.profile.hands_per_box):
            hand = next(h for h in box.hands if h.family == family)
            values = [c.value for c in hand.cards]
            d = Decision(number, Action.SURRENDER, None, family + 1 if state.profile.hands_per_box > 1 else None)
            if state.why_not(d) is None and chart.action(values, up) == Action.SURRENDER:
                state, _ = state.apply(d)
    return state


def _turn(state: Round, chart: Chart, number: int | None) -> Decision:
    in_play = state.hand_in_play()
    if in_play is None or number is None:
        raise RuntimeError(f"a decision is expected but no hand is in play ({state.expecting()})")
    box, hand = in_play
    up = state.dealer[0].value
    switch = Decision(number, Action.SWITCH)
    if state.profile.is_switch and state.why_not(switch) is None:
        first, second = ([c.value for c in h.cards] for h in box.hands)
        if chart.switch(first, second, up):
            return switch
    legal = state.legal_decisions(number)
    action = chart.action([c.value for c in hand.cards], up,
                          can_double=legal.get(Action.DOUBLE, "no") is None,
                          can_split=legal.get(Action.SPLIT, "no") is None, can_surrender=False)
    if legal.get(action, "no") is not None:
        action = Action.STAND if legal.get(Action.STAND, "no") is None else Action.HIT
    return Decision(number, action, hand.stake if action == Action.DOUBLE else None)


def play(profile: Profile, decks: int, rounds: int, boxes: int, side_bets: tuple[str, ...],
         seed: int, chunk: int, progress: Any = None) -> Tally:
    """``rounds`` rounds from a fresh shoe shuffled by ``random.Random("seed/chunk")``."""
    chart = chart_for(main_rules(profile, decks))
    rng = random.Random(f"{seed}/{chunk}")
    shoe = SimShoe(decks, rng)
    sums: dict[str, list[float]] = {bet: [0.0, 0.0, 0.0] for bet in ("main", *side_bets)}
    counts: dict[str, Counter[str]] = {bet: Counter() for bet in sums}
    wagers = {n: {"main": ONE, **dict.fromkeys(side_bets, ONE)} for n in range(1, boxes + 1)}
    hands = profile.hands_per_box
    for i in range(rounds):
        if shoe.cut_card_out:
            shoe.shuffle()
        state = Round.new(profile, decks=decks, shoe=Round.new(profile, decks=decks).shoe.without(shoe.cards[:shoe.pos]))
        state, _ = state.apply(BetsClosed.of(wagers))
        offered = False
        while not state.is_over:
            if not offered and state.phase in (Phase.PLAY, Phase.DEALER):
                offered = True
                state = _offers(state, chart, boxes)
                continue
            expect = state.expecting()
            if expect.kind == "card":
                if shoe.left == 0:
                    state, _ = state.apply(VoidRound("insufficient_cards"))
                    break
                state, _ = state.apply(CardDrawn(shoe.draw()))
            else:
                state, _ = state.apply(_turn(state, chart, expect.box))
        for number in range(1, boxes + 1):
            ledger = state.box(number).ledger
            for bet, acc in sums.items():
                # per unit staked: a Switch position's main bet is one unit on each hand (§3.3)
                net = float(ledger.get(bet, 0)) / (hands if bet == "main" else 1)
                acc[0] += 1
                acc[1] += net
                acc[2] += net * net
                counts[bet][f"{net:+g}"] += 1
        if progress is not None and (i % 500 == 499 or i == rounds - 1):
            progress(i % 500 + 1)
    return sums, counts


def _work(args: tuple[str, int, int, int, tuple[str, ...], int, int]) -> Tally:
    name, decks, rounds, boxes, side_bets, seed, chunk = args
    return play(load_profile(name), decks, rounds, boxes, side_bets, seed, chunk)


def run(args: argparse.Namespace) -> int:
    try:
        profile = read_profile(args.profile)
    except StrategyError as exc:
        print(f"betbox simulate: error: {exc}", file=sys.stderr)
        return 2
    side = tuple(s for s in args.side_bets.split(",") if s)
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
    # fixed chunks merged in order: the same seed gives the same figures with any --workers
    sizes = [min(CHUNK, args.rounds - start) for start in range(0, args.rounds, CHUNK)]
    jobs = [(args.profile, decks, n, args.boxes, side, args.seed, i) for i, n in enumerate(sizes)]
    started = time.monotonic()
    done = [0]

    def progress(n: int) -> None:
        done[0] += n
        rate = done[0] / max(time.monotonic() - started, 1e-9)
        eta = (args.rounds - done[0]) / rate if rate else 0.0
        print(f"\r{done[0]}/{args.rounds} rounds  {rate:.0f}/s  ETA {eta:.0f} s ", end="", file=sys.stderr)

    tallies: list[Tally] = []
    if args.workers == 1:
        for job in jobs:
            tallies.append(play(profile, *job[1:], progress=progress))
    else:
        with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
            for job, tally in zip(jobs, pool.imap(_work, jobs), strict=True):
                tallies.append(tally)
                progress(job[2])
    print(file=sys.stderr)
    sys.stdout.write(report(profile.name, decks, args.rounds, args.boxes, tallies))
    return 0


@dataclass(frozen=True)
class BetReturn:
    bet: str
    n: int                      # box-rounds with this bet
    mean: float                 # return per unit staked on the bet (net / initial wager)
    half_width: float           # of the 95% confidence interval
    results: dict[str, int]     # net result per unit -> count


def summary(tallies: list[Tally]) -> list[BetReturn]:
    """All workers merged: each bet's return and its 95% confidence interval."""
    out = []
    for bet in tallies[0][0]:
        n = sum(t[0][bet][0] for t in tallies)
        s = sum(t[0][bet][1] for t in tallies)
        s2 = sum(t[0][bet][2] for t in tallies)
        mean = s / n
        half = 1.96 * math.sqrt(max(s2 / n - mean * mean, 0.0) / n)
        counts: Counter[str] = Counter()
        for t in tallies:
            counts.update(t[1][bet])
        out.append(BetReturn(bet, int(n), mean, half,
                             dict(sorted(counts.items(), key=lambda kv: float(kv[0])))))
    return out


def report(name: str, decks: int, rounds: int, boxes: int, tallies: list[Tally]) -> str:
    lines = [f"{name}: {rounds} rounds, {boxes} box(es), {decks} decks, basic strategy"]
    for r in summary(tallies):
        lines.append(f"{r.bet}: return {r.mean * 100:+.3f}% ± {r.half_width * 100:.3f}% (95%), "
                     f"house edge {-r.mean * 100:.3f}%; results "
                     + ", ".join(f"{k}: {v}" for k, v in r.results.items()))
    return "\n".join(lines) + "\n"
