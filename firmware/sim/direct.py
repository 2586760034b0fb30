"""A table played straight through the engine, without units: the reference the unit-based
table is compared with, and the demo's fallback when asked for ``--direct``."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Iterator, Mapping

from firmware.engine.events import BetsClosed, CardDrawn, VoidRound
from firmware.engine.profile import Profile
from firmware.engine.round import Phase, Round

from .players import SimPlayer
from .shoe import SimShoe


def play_direct(profile: Profile, rounds: int, rng: random.Random, boxes: int = 7,
                limits: Mapping[str, tuple[Fraction, Fraction]] | None = None) -> Iterator[Round]:
    """Yield each finished round."""
    decks = profile.default_decks
    shoe = SimShoe(decks, rng)
    players = [SimPlayer(n, profile, rng, limits) for n in range(1, boxes + 1)]
    for _ in range(rounds):
        if shoe.cut_card_out:
            shoe.shuffle()
        composition = Round.new(profile, decks=decks).shoe.without(shoe.cards[:shoe.pos])
        state = Round.new(profile, decks=decks, limits=limits, shoe=composition)
        wagers = {}
        for p in players:
            intent = p.bet_intent()
            if intent.bets:
                wagers[p.box] = dict(intent.bets)
        state, _ = state.apply(BetsClosed.of(wagers))
        offered = False
        while not state.is_over:
            if not offered and state.phase == Phase.PLAY or (not offered and state.phase == Phase.DEALER):
                offered = True
                for p in players:
                    for d in p.offers(state):
                        if state.why_not(d) is None:
                            state, _ = state.apply(d)
                continue
            expect = state.expecting()
            if expect.kind == "card":
                if shoe.left == 0:
                    state, _ = state.apply(VoidRound("insufficient_cards"))
                    break
                state, _ = state.apply(CardDrawn(shoe.draw()))
            else:
                assert expect.box is not None       # not a card: a box's decision
                state, _ = state.apply(players[expect.box - 1].turn(state))
        yield state
