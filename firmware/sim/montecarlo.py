"""Rounds for ``betbox simulate``: every event through ``Round.apply`` exactly as at the
table, players following the basic-strategy chart (:class:`firmware.sim.playbook.Playbook`).

The rounds are cut into chunks of :data:`CHUNK`, each with its own ``random.Random("seed/chunk")``
shoe (the demo's shoe order, reshuffled at its cut card); the chunks' tallies are merged in
chunk order, so a seeded run gives the same figures with any number of workers. Workers are
forked after the profile, the engine and the chart are loaded: a chunk costs no imports and
no chart.
"""

from __future__ import annotations

import math
import multiprocessing
import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Iterator

from firmware.engine.basic import chart_for
from firmware.engine.errors import RuleError
from firmware.engine.events import Action, BetsClosed, Decision, VoidRound
from firmware.engine.maingame import main_rules
from firmware.engine.profile import Profile
from firmware.engine.round import Phase, Round

from .playbook import Playbook, flags_index
from .shoe import EventShoe

ONE = Fraction(1)
ZERO = Fraction(0)
CHUNK = 5000                   # rounds per shoe sequence (one seed each)
Z95 = 1.96                     # the two-sided 95% normal quantile


@dataclass
class Tally:
    """One chunk's results. ``results``: bet -> a box's net on it, exactly as the ledger has
    it (numerator, denominator) -> [boxes with that net, the net as float]. ``sums``: bet -> [sum over rounds of the
    round's net over all its boxes, sum of its square]: the boxes of a round share the dealer's
    hand, so the round (not the box) is the independent sample of the confidence interval."""

    boxes: int
    units: dict[str, int]              # bet -> units of one wager (a Switch main bet: 2 hands)
    rounds: int = 0
    results: dict[str, dict[tuple[int, int], list[float]]] = field(default_factory=dict)
    sums: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for bet in self.units:
            self.results.setdefault(bet, {})
            self.sums.setdefault(bet, [0.0, 0.0])

    def add(self, state: Round) -> None:
        boxes = state.boxes
        for bet, results in self.results.items():
            total = 0.0
            for box in boxes:
                # keyed by (numerator, denominator): a Fraction's own hash and == are Python code
                net = box.ledger.get(bet, ZERO).as_integer_ratio()
                entry = results.get(net)
                if entry is None:
                    entry = results[net] = [0, net[0] / net[1]]
                entry[0] += 1
                total += entry[1]
            acc = self.sums[bet]
            acc[0] += total
            acc[1] += total * total
        self.rounds += 1


@dataclass(frozen=True)
class BetReturn:
    bet: str
    n: int                      # box-rounds with this bet
    mean: float                 # return per unit staked on the bet (net / initial wager)
    half_width: float           # of the 95% confidence interval
    results: dict[str, int]     # net result per unit -> count

    def within(self, value: float, z: float = Z95) -> bool:
        """``value`` lies in this return's interval widened from 95% to the normal quantile ``z``."""
        return abs(self.mean - value) <= self.half_width * z / Z95


def summary(tallies: list[Tally]) -> list[BetReturn]:
    """All chunks merged in order: each bet's return and its 95% confidence interval."""
    out = []
    first = tallies[0]
    rounds = sum(t.rounds for t in tallies)
    for bet, unit in first.units.items():
        counts: dict[Fraction, int] = {}
        for t in tallies:
            for (num, den), (count, _) in t.results[bet].items():
                net = Fraction(num, den)
                counts[net] = counts.get(net, 0) + int(count)
        s1 = sum(t.sums[bet][0] for t in tallies)
        s2 = sum(t.sums[bet][1] for t in tallies)
        n = rounds * first.boxes
        mean = float(sum((net * c for net, c in counts.items()), ZERO)) / (n * unit)
        var_round = max(s2 / rounds - (s1 / rounds) ** 2, 0.0)
        half = Z95 * math.sqrt(var_round / rounds) / (first.boxes * unit)
        shown: dict[str, int] = {}
        for net in sorted(counts):
            key = f"{float(net) / unit:+g}"
            shown[key] = shown.get(key, 0) + counts[net]
        out.append(BetReturn(bet, n, mean, half, shown))
    return out


def playbook_for(profile: Profile, decks: int) -> Playbook:
    return Playbook(chart_for(main_rules(profile, decks)))


def play(profile: Profile, decks: int, rounds: int, boxes: int, side_bets: tuple[str, ...],
         seed: int, chunk: int, progress: Callable[[int], None] | None = None,
         playbook: Playbook | None = None, every_round: bool = False) -> Tally:
    """The tally of ``rounds`` rounds from a fresh shoe shuffled by ``random.Random("seed/chunk")``."""
    tally = Tally(boxes, {"main": profile.hands_per_box, **dict.fromkeys(side_bets, 1)})
    rounds_played = play_rounds(profile, decks, rounds, boxes, side_bets, seed, chunk, playbook, every_round)
    for i, state in enumerate(rounds_played):
        tally.add(state)
        if progress is not None and (i % 500 == 499 or i == rounds - 1):
            progress(i % 500 + 1)
    return tally


def play_rounds(profile: Profile, decks: int, rounds: int, boxes: int, side_bets: tuple[str, ...],
                seed: int, chunk: int, playbook: Playbook | None = None,
                every_round: bool = False) -> Iterator[Round]:
    """Each finished round, one unit on every bet of every box; ``every_round``: each from a
    full shoe (see :class:`EventShoe`), else from what the last left until the cut card."""
    book = playbook or playbook_for(profile, decks)
    shoe = EventShoe(decks, random.Random(f"{seed}/{chunk}"), every_round=every_round)
    full = Round.new(profile, decks=decks).shoe
    closed = BetsClosed.of({n: {"main": ONE, **dict.fromkeys(side_bets, ONE)} for n in range(1, boxes + 1)})
    table = _Table(profile, book, shoe, boxes)
    left = full
    for _ in range(rounds):
        if shoe.cut_card_out:
            shoe.shuffle()
            left = full
        # what is left in the shoe: the last round's own account of it
        state = table.play(Round.new(profile, decks=decks, shoe=left).apply(closed)[0])
        left = state.shoe
        yield state


class _Table:
    """The players of one chunk: the chart's decisions, built once as events."""

    def __init__(self, profile: Profile, book: Playbook, shoe: EventShoe, boxes: int) -> None:
        self.book = book
        self.shoe = shoe
        self.families = profile.hands_per_box
        self.is_switch = profile.is_switch
        self.moves = {n: {a: Decision(n, a) for a in (Action.HIT, Action.STAND, Action.SPLIT, Action.SWITCH)}
                      for n in range(1, boxes + 1)}
        self.surrenders = {(n, f): Decision(n, Action.SURRENDER, None, f + 1 if self.families > 1 else None)
                           for n in range(1, boxes + 1) for f in range(self.families)}

    def play(self, state: Round) -> Round:
        """The round from "no more bets" to its end."""
        shoe = self.shoe
        offered = False
        asked: set[int] = set()        # boxes asked about the switch (their first decision)
        while not state.is_over:
            if not offered and state.phase in (Phase.PLAY, Phase.DEALER):
                offered = True
                state = self.offers(state)
                continue
            expect = state.expecting()
            if expect.kind == "card":
                card = shoe.draw()
                if card is None:
                    return state.apply(VoidRound("insufficient_cards"))[0]
                state = state.apply(card)[0]
            else:
                assert expect.box is not None      # not a card: a box's decision
                state = self.turn(state, expect.box, asked)
        return state

    def offers(self, state: Round) -> Round:
        """Surrender where the chart says so (insurance and even money never). Switch: a box
        that will switch surrenders nothing (§3.10: no surrender after a switch, and the
        switch rule already weighed the dealt hands with their surrender)."""
        up = state.dealer[0]
        for i in range(len(state.boxes)):
            box = state.boxes[i]         # (the round after a surrender has its own list)
            number = box.number
            if self.is_switch and self.book.switch(box.hands[0].cards, box.hands[1].cards, up):
                continue
            for family in range(self.families):
                hand = next(h for h in box.hands if h.family == family)
                if self.book.surrenders(hand.cards, up):
                    try:
                        state = state.apply(self.surrenders[(number, family)])[0]
                    except RuleError:
                        pass                # the table refuses it: the hand plays on
        return state

    def turn(self, state: Round, number: int, asked: set[int]) -> Round:
        """The chart's play for the hand in play; a play the table refuses (``apply`` raises,
        the round unchanged) falls to the chart's next one, as ``Chart.action`` is told."""
        in_play = state.hand_in_play()
        if in_play is None:
            raise RuntimeError(f"a decision is expected but no hand is in play ({state.expecting()})")
        box, hand = in_play
        up = state.dealer[0]
        moves = self.moves[number]
        if self.is_switch and number not in asked:
            asked.add(number)           # a switch is only ever open before the box's first play
            if len(box.hands) == 2 and self.book.switch(box.hands[0].cards, box.hands[1].cards, up):
                try:
                    return state.apply(moves[Action.SWITCH])[0]
                except RuleError:
                    pass
        plays = self.book.plays(hand.cards, up)
        can_double = can_split = True
        while True:
            action = plays[flags_index(can_double, can_split)]
            decision = Decision(number, action, hand.stake) if action is Action.DOUBLE else moves[action]
            try:
                return state.apply(decision)[0]
            except RuleError:
                if action is Action.DOUBLE:
                    can_double = False
                elif action is Action.SPLIT:
                    can_split = False
                else:
                    break
        try:                            # the chart's hit or stand refused: stand, else hit
            return state.apply(moves[Action.STAND])[0]
        except RuleError:
            return state.apply(moves[Action.HIT])[0]


# set by run_chunks before the workers fork: what every chunk shares
_JOB: tuple[Profile, int, int, tuple[str, ...], int, Playbook, bool] | None = None


def _work(job: tuple[int, int]) -> Tally:
    assert _JOB is not None, "a worker started without its job"
    profile, decks, boxes, side_bets, seed, book, every_round = _JOB
    chunk, rounds = job
    return play(profile, decks, rounds, boxes, side_bets, seed, chunk, playbook=book, every_round=every_round)


def run_chunks(profile: Profile, decks: int, rounds: int, boxes: int, side_bets: tuple[str, ...],
               seed: int, workers: int = 1, progress: Callable[[int], None] | None = None,
               every_round: bool = False) -> list[Tally]:
    """Every chunk's tally in chunk order (the same for any ``workers``)."""
    global _JOB
    book = playbook_for(profile, decks)
    jobs = [(i, min(CHUNK, rounds - start)) for i, start in enumerate(range(0, rounds, CHUNK))]
    if workers == 1 or len(jobs) == 1:
        return [play(profile, decks, n, boxes, side_bets, seed, i, progress, book, every_round) for i, n in jobs]
    _JOB = (profile, decks, boxes, side_bets, seed, book, every_round)
    tallies: list[Tally] = []
    try:
        # fork: the workers start with the engine imported and the chart built
        with multiprocessing.get_context("fork").Pool(min(workers, len(jobs))) as pool:
            for (_, n), tally in zip(jobs, pool.imap(_work, jobs), strict=True):
                tallies.append(tally)
                if progress is not None:
                    progress(n)
    finally:
        _JOB = None
    return tallies
