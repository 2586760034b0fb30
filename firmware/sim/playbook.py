"""The basic-strategy chart of ``betbox strategy`` as look-up tables for the simulator.

:class:`firmware.engine.basic.Chart` is the authority: it is asked once per hand class and
dealer card when the playbook is built (and once per new many-card total), never per
decision. A decision is then one dictionary look-up; what the table allows is learnt from
``Round.apply`` itself (a refused play raises and leaves the round unchanged), so a
decision costs one ``apply`` in the usual case instead of a query of every action first.
"""

from __future__ import annotations

from firmware.engine.basic import Chart
from firmware.engine.cards import RANKS, Card
from firmware.engine.events import Action

#: point value per rank (Ace = 1), as the chart reads cards
VALUE = {r: 1 if r == "A" else 10 if r in "TJQK" else int(r) for r in RANKS}

#: the chart's play for a hand, indexed by what the table allows:
#: [double and split allowed, double only, split only, neither]
Plays = tuple[Action, Action, Action, Action]


def flags_index(can_double: bool, can_split: bool) -> int:
    return (0 if can_double else 2) + (0 if can_split else 1)


def _plays(chart: Chart, values: list[int], up: int) -> Plays:
    """The turn's play for each of the four answers the table may give (surrender is an
    offer, asked in the offer window, never on the turn)."""
    return tuple(chart.action(values, up, can_double=d, can_split=s, can_surrender=False)  # type: ignore[return-value]
                 for d in (True, False) for s in (True, False))


class Playbook:
    """Turn plays, surrender and the Switch rule for every hand, read from ``chart``."""

    def __init__(self, chart: Chart) -> None:
        self.chart = chart
        #: (dealer rank, first rank, second rank) -> plays: every two-card hand, built now
        self.two: dict[tuple[str, str, str], Plays] = {}
        #: (dealer rank, first rank, second rank) -> the chart surrenders this hand
        self.surrender: dict[tuple[str, str, str], bool] = {}
        for up in RANKS:
            for a in RANKS:
                for b in RANKS:
                    values = [VALUE[a], VALUE[b]]
                    self.two[(up, a, b)] = _plays(chart, values, VALUE[up])
                    self.surrender[(up, a, b)] = chart.action(values, VALUE[up]) is Action.SURRENDER
        #: (dealer value, hard total, holds an Ace) -> plays for three or more cards: the chart
        #: plays those by their total alone; filled the first time a total comes up
        self.many: dict[tuple[int, int, bool], Plays] = {}
        #: (dealer rank, four dealt ranks) -> switch (Blackjack Switch §3.11), filled as met
        self.switches: dict[tuple[str, str, str, str, str], bool] = {}

    def plays(self, cards: list[Card], up: Card) -> Plays:
        if len(cards) == 2:
            return self.two[(up.rank, cards[0].rank, cards[1].rank)]
        values = [VALUE[c.rank] for c in cards]
        key = (VALUE[up.rank], sum(values), 1 in values)
        plays = self.many.get(key)
        if plays is None:
            plays = self.many[key] = _plays(self.chart, values, key[0])
        return plays

    def surrenders(self, cards: list[Card], up: Card) -> bool:
        return self.surrender[(up.rank, cards[0].rank, cards[1].rank)]

    def switch(self, first: list[Card], second: list[Card], up: Card) -> bool:
        """Switch the second cards of two dealt hands (``Chart.switch``, remembered)."""
        key = (up.rank, first[0].rank, first[1].rank, second[0].rank, second[1].rank)
        wanted = self.switches.get(key)
        if wanted is None:
            wanted = self.switches[key] = self.chart.switch(
                [VALUE[c.rank] for c in first], [VALUE[c.rank] for c in second], VALUE[up.rank])
        return wanted
