"""Simulated players: what they wager and decide, drawn from one ``random.Random``.

A player chooses; the engine judges. Misbehaviour (an unknown chip, a late chip, a side bet
without a main bet) is part of the intent so the runtime's refusals and alarms get exercised.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Mapping

from firmware.engine.events import Action, Decision
from firmware.engine.profile import Profile
from firmware.engine.round import Round

from . import strategy

MAIN_AMOUNTS = (10, 20, 50, 100)
SIDE_AMOUNTS = (5, 10, 20)


@dataclass(frozen=True)
class BetIntent:
    """What a player puts on the spots before "no more bets"."""

    bets: Mapping[str, Fraction] = field(default_factory=dict)
    unknown_chip: str | None = None    # spot that also gets a chip the registry does not know
    late_chip: str | None = None       # spot that gets a chip after "no more bets"


class SimPlayer:
    """One simulated player at one box."""

    def __init__(self, box: int, profile: Profile, rng: random.Random,
                 limits: Mapping[str, tuple[Fraction, Fraction]] | None = None,
                 misbehave: float = 0.04) -> None:
        self.box = box
        self.profile = profile
        self.rng = rng
        self.limits = dict(limits or {})
        self.misbehave = misbehave

    def _amount(self, name: str, choices: tuple[int, ...]) -> Fraction:
        lo, hi = self.limits.get(name, (Fraction(0), Fraction(10 ** 9)))
        fitting = [Fraction(a) for a in choices if lo <= a <= hi] or [lo if lo > 0 else Fraction(choices[0])]
        return self.rng.choice(fitting)

    def bet_intent(self) -> BetIntent:
        rng = self.rng
        if rng.random() < 0.12:
            return BetIntent()
        bets: dict[str, Fraction] = {"main": self._amount("main", MAIN_AMOUNTS)}
        for name, table in self.profile.side_bets.items():
            if rng.random() < 0.3:
                amount = self._amount(name, SIDE_AMOUNTS)
                if table.max_of_initial_bet is not None:
                    amount = min(amount, bets["main"] * table.max_of_initial_bet)
                bets[name] = amount
        if self.profile.progressive is not None and rng.random() < 0.4:
            bets["progressive"] = self.profile.progressive.wager
        unknown = late = None
        roll = rng.random()
        if roll < self.misbehave and len(bets) > 1:
            del bets["main"]                      # a side bet without a main bet
        elif roll < 2 * self.misbehave:
            unknown = rng.choice(sorted(bets))
        elif roll < 3 * self.misbehave:
            late = "main"
        return BetIntent(bets, unknown, late)

    def offers(self, state: Round) -> list[Decision]:
        """Insurance, even money and surrender in the offer window after the initial deal."""
        try:
            box = state.box(self.box)
        except ValueError:
            return []
        if not box.dealt:
            return []
        out: list[Decision] = []
        up = state.dealer[0]
        for family in range(self.profile.hands_per_box):
            hand_no = family + 1 if self.profile.hands_per_box > 1 else None
            hand = next(h for h in box.hands if h.family == family)
            insurance = Decision(self.box, Action.INSURANCE, hand.stake / 2, hand_no)
            even = Decision(self.box, Action.EVEN_MONEY)
            if family == 0 and state.why_not(even) is None and self.rng.random() < 0.3:
                out.append(even)
                continue
            if state.why_not(insurance) is None and self.rng.random() < 0.1:
                out.append(insurance)
                continue
            surrender = Decision(self.box, Action.SURRENDER, None, hand_no)
            prefs = strategy.preferences(hand.cards, up)
            if prefs and prefs[0] == strategy.R and state.why_not(surrender) is None:
                out.append(surrender)
        return out

    def turn(self, state: Round) -> Decision:
        """The decision for this box's hand in play."""
        in_play = state.hand_in_play()
        assert in_play is not None              # asked only when this box's hand is in play
        box, hand = in_play
        switch = Decision(self.box, Action.SWITCH)
        if self.profile.is_switch and state.why_not(switch) is None:
            first, second = (h.cards for h in box.hands)
            if strategy.should_switch(first, second):
                return switch
        legal: dict[Action, str | None] = {a: r for a, r in state.legal_decisions(self.box).items()
                 if a in (Action.HIT, Action.STAND, Action.DOUBLE, Action.SPLIT)}
        action = strategy.choose(hand.cards, state.dealer[0], legal)
        if action == Action.DOUBLE:
            return Decision(self.box, action, hand.stake)
        return Decision(self.box, action)
