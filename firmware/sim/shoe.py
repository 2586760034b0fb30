"""A simulated shuffled shoe: cards in a random order from one ``random.Random``."""

from __future__ import annotations

import random

from firmware.engine.cards import ALL_CARDS, Card
from firmware.engine.events import CardDrawn


class SimShoe:
    def __init__(self, decks: int, rng: random.Random, penetration: float = 0.75) -> None:
        self.decks = decks
        self.rng = rng
        self.penetration = penetration
        self.cards: list[Card] = []
        self.pos = 0
        self.shuffle()

    def shuffle(self) -> None:
        self.cards = [c for c in ALL_CARDS for _ in range(self.decks)]
        self.rng.shuffle(self.cards)
        self.pos = 0

    @property
    def cut_card_out(self) -> bool:
        """The cut card has come out: shuffle before the next round."""
        return self.pos >= int(len(self.cards) * self.penetration)

    @property
    def left(self) -> int:
        return len(self.cards) - self.pos

    def draw(self) -> Card:
        card = self.cards[self.pos]
        self.pos += 1
        return card


class EventShoe:
    """:class:`SimShoe`'s shoe for the simulator: each card already as its ``CardDrawn``
    event (events are immutable, so one per card serves every round), shuffled from the
    same ordered shoe with the same ``rng`` calls, hence the same card order as SimShoe."""

    def __init__(self, decks: int, rng: random.Random, penetration: float = 0.75) -> None:
        self.rng = rng
        self._ordered = [CardDrawn(c) for c in ALL_CARDS for _ in range(decks)]
        self.cut = int(len(self._ordered) * penetration)   # the cut card's position
        self.events: list[CardDrawn] = []
        self.pos = 0
        self.shuffle()

    def shuffle(self) -> None:
        self.events = self._ordered[:]
        self.rng.shuffle(self.events)
        self.pos = 0

    @property
    def cut_card_out(self) -> bool:
        return self.pos >= self.cut
