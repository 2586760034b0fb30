"""A simulated shuffled shoe: cards in a random order from one ``random.Random``."""

from __future__ import annotations

import random

from firmware.engine.cards import ALL_CARDS, Card


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
