"""The basic strategy the main-game analysis chose, as a chart a player (or a simulator) can ask.

One ordered list of plays per initial hand class (hard total, soft total, pair) and dealer
card, best first, from the analysis of :mod:`firmware.engine.maingame`: the first play the
situation allows is taken (no double after three cards, no split at the maximum of hands,
no surrender once the window has closed). Hands of three or more cards hit or stand by
their total. Blackjack Switch adds the switch rule: switch when the two switched hands are
worth more than the two dealt (Switch §3.11).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping, Sequence

from .events import Action
from .maingame import VALUES, Analysis, MainRules, analyse, best_total, is_blackjack

#: ("hard", 5..20) | ("soft", 13..20) | ("pair", 1..10): what a total-dependent chart sees.
HandClass = tuple[str, int]

_ACTION = {"stand": Action.STAND, "hit": Action.HIT, "double": Action.DOUBLE,
           "split": Action.SPLIT, "surrender": Action.SURRENDER}


def hand_class(a: int, b: int) -> HandClass:
    """The chart row of the initial cards ``a, b`` (point values, 1 = Ace)."""
    if a == b:
        return ("pair", a)
    hard, ace = a + b, 1 in (a, b)
    total = best_total(hard, ace)
    return ("soft" if total != hard else "hard", total)


def total_of(cards: Sequence[int]) -> tuple[str, int]:
    hard, ace = sum(cards), 1 in cards
    total = best_total(hard, ace)
    return ("soft" if total != hard else "hard", total)


@dataclass(frozen=True)
class Chart:
    """A total-dependent basic strategy: ask :meth:`action` what to do."""

    rules: MainRules
    #: (kind, total or pair value, dealer card) -> plays, best first, for the initial two cards
    first: Mapping[tuple[str, int, int], tuple[Action, ...]]
    #: (kind, total, dealer card) -> hit/stand, best first, for a hand of three or more cards
    later: Mapping[tuple[str, int, int], tuple[Action, ...]]
    #: (dealer card, a, b) with a <= b -> value of the initial hand played by this chart
    hand_values: Mapping[tuple[int, int, int], float] = field(repr=False)
    #: Switch: the same for a hand made by switching (no Blackjack, no surrender)
    switched_values: Mapping[tuple[int, int, int], float] = field(repr=False)

    def action(self, cards: Sequence[int], dealer_upcard: int, *, can_double: bool = True,
               can_split: bool = True, can_surrender: bool = True) -> Action:
        """The play for ``cards`` (point values, Ace = 1) against ``dealer_upcard``.

        ``can_*`` say what the table allows now (e.g. from ``Round.legal_decisions``); the
        chart's next preference is taken when its first is not allowed.
        """
        if len(cards) < 2 or not 1 <= dealer_upcard <= 10 or any(not 1 <= c <= 10 for c in cards):
            raise ValueError(f"cards {list(cards)} against {dealer_upcard}: expected two or more "
                             "point values 1 (Ace) to 10 and a dealer card 1 to 10")
        kind, total = total_of(cards)
        if total >= 21:
            return Action.STAND
        if len(cards) == 2:
            row_kind, row = hand_class(cards[0], cards[1])
            plays = self.first.get((row_kind, row, dealer_upcard))
            if plays is None:                  # a two-card total no initial deal makes (Switch)
                plays = self.later[(kind, total, dealer_upcard)]
        else:
            plays = self.later[(kind, total, dealer_upcard)]
        allowed = {Action.DOUBLE: can_double, Action.SPLIT: can_split, Action.SURRENDER: can_surrender}
        for play in plays:
            if allowed.get(play, True):
                return play
        return Action.HIT if total < 12 else Action.STAND

    def hand_value(self, a: int, b: int, dealer_upcard: int, switched: bool = False) -> float:
        key = (dealer_upcard, min(a, b), max(a, b))
        return (self.switched_values if switched else self.hand_values)[key]

    def switch(self, first: Sequence[int], second: Sequence[int], dealer_upcard: int) -> bool:
        """Switch §3.11: switch the second cards when the switched hands are worth more.

        Ask this before surrendering (the offer window comes first, §3.10): the dealt hands'
        values already include their surrender, and a switched hand cannot surrender."""
        if is_blackjack(*first) or is_blackjack(*second):
            return False
        dealt = (self.hand_value(first[0], first[1], dealer_upcard)
                 + self.hand_value(second[0], second[1], dealer_upcard))
        swapped = (self.hand_value(first[0], second[1], dealer_upcard, switched=True)
                   + self.hand_value(second[0], first[1], dealer_upcard, switched=True))
        return swapped > dealt + 1e-12


def _order(plays: Mapping[str, float]) -> tuple[Action, ...]:
    return tuple(_ACTION[p] for p, _ in sorted(plays.items(), key=lambda kv: -kv[1]))


def _class_values(analysis: Analysis) -> dict[tuple[str, int, int], dict[str, float]]:
    """Each class's plays weighted over the deals in it (what a total-dependent chart maximises)."""
    sums: dict[tuple[str, int, int], dict[str, float]] = {}
    for (up, a, b), plays in analysis.values.items():
        if "blackjack" in plays:
            continue
        kind, row = hand_class(a, b)
        w = analysis.weights[(up, a, b)]
        acc = sums.setdefault((kind, row, up), {})
        for play, value in plays.items():
            acc[play] = acc.get(play, 0.0) + w * value
    return sums


def _chosen(plays: Mapping[str, float], order: tuple[Action, ...]) -> float:
    if "blackjack" in plays:
        return plays["blackjack"]
    for action in order:
        if action.value in plays:
            return plays[action.value]
    raise AssertionError("no legal play")       # every hand may at least hit or stand


@lru_cache(maxsize=32)
def chart_for(rules: MainRules) -> Chart:
    analysis = analyse(rules)
    first = {key: _order(acc) for key, acc in _class_values(analysis).items()}
    later = {key: tuple(_ACTION[p] for p in plays) for key, plays in analysis.later.items()}
    values = {}
    for (up, a, b), plays in analysis.values.items():
        order = first.get((*hand_class(a, b), up), ())
        values[(up, a, b)] = _chosen(plays, order)
    switched = {}
    for (up, a, b), plays in analysis.switched.items():
        # a switched Ace and ten is 21, not a Blackjack: it stands
        switched[(up, a, b)] = _chosen(plays, first.get((*hand_class(a, b), up), (Action.STAND,)))
    return Chart(rules, first, later, values, switched)


def expected_return(rules: MainRules) -> float:
    """The player's expected return per unit of initial bet (per hand) under :func:`chart_for`."""
    chart = chart_for(rules)
    analysis = analyse(rules)
    if not rules.switch:
        return sum(analysis.weights[key] * value for key, value in chart.hand_values.items())
    return _switch_return(rules, chart)


def _switch_return(rules: MainRules, chart: Chart) -> float:
    """Both hands of a Switch position, the switch taken when it is worth more (per hand)."""
    counts = list(rules.deck())
    n = sum(counts)
    total = 0.0
    for up in VALUES:
        p_up = counts[up - 1] / n
        counts[up - 1] -= 1
        for x1 in VALUES:
            p1 = p_up * counts[x1 - 1] / (n - 1)
            counts[x1 - 1] -= 1
            for x2 in VALUES:
                p2 = p1 * counts[x2 - 1] / (n - 2)
                counts[x2 - 1] -= 1
                for y1 in VALUES:
                    p3 = p2 * counts[y1 - 1] / (n - 3)
                    counts[y1 - 1] -= 1
                    for y2 in VALUES:
                        p4 = p3 * counts[y2 - 1] / (n - 4)
                        if p4 <= 0:
                            continue
                        dealt = chart.hand_value(x1, y1, up) + chart.hand_value(x2, y2, up)
                        if not (is_blackjack(x1, y1) or is_blackjack(x2, y2)):
                            dealt = max(dealt, chart.hand_value(x1, y2, up, True)
                                        + chart.hand_value(x2, y1, up, True))
                        total += p4 * dealt
                    counts[y1 - 1] += 1
                counts[x2 - 1] += 1
            counts[x1 - 1] += 1
        counts[up - 1] += 1
    return total / 2


def house_edge(rules: MainRules) -> float:
    return -expected_return(rules)
