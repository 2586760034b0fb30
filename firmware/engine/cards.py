"""Cards, their point values and the shoe's composition.

A card is written as rank + suit: rank ``A 2-9 T J Q K`` (``10`` accepted on input) and
suit ``S H D C``. Values follow ``rws-blackjack-v5 §3.2``: an Ace counts 1 or 11, 2-10 their
face value, picture cards 10.
"""

from __future__ import annotations

import reprlib
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping

RANKS = "A23456789TJQK"
SUITS = "SHDC"
RED_SUITS = frozenset("HD")

#: §3.2: an Ace counts 1 (or 11, decided by the hand's total), pictures 10.
_RANK_VALUE = {r: 1 if r == "A" else 10 if r in "TJQK" else int(r) for r in RANKS}

#: Poker order for straights and "of a kind" ranking (Ace high; low Ace handled by callers).
POKER_ORDER = {r: i for i, r in enumerate("23456789TJQKA", start=2)}


class CardError(ValueError):
    """A card written in a form the engine cannot read."""


@dataclass(frozen=True, slots=True, order=True)
class Card:
    rank: str
    suit: str

    def __post_init__(self) -> None:
        if self.rank not in RANKS:
            raise CardError(f"unknown rank {self.rank!r} (expected one of {' '.join(RANKS)})")
        if self.suit not in SUITS:
            raise CardError(f"unknown suit {self.suit!r} (expected one of {' '.join(SUITS)})")

    @property
    def value(self) -> int:
        """Blackjack value with an Ace counted as 1 (§3.2)."""
        return _RANK_VALUE[self.rank]      # a look-up: the side bets and strategies ask often

    @property
    def is_ace(self) -> bool:
        return self.rank == "A"

    @property
    def is_ten_value(self) -> bool:
        return self.rank in "TJQK"

    @property
    def colour(self) -> str:
        return "red" if self.suit in RED_SUITS else "black"

    def __str__(self) -> str:
        return self.rank + self.suit

    def __repr__(self) -> str:
        return f"Card({self})"


def parse_card(text: str) -> Card:
    """Read ``"TS"``, ``"10s"`` or ``"ah"`` into a :class:`Card`; raise :class:`CardError` naming the problem."""
    if not isinstance(text, str):
        raise CardError(f"a card must be a string like 'AS', not {reprlib.repr(text)}")
    known = _BY_TEXT.get(text)
    if known is not None:
        return known
    t = text.strip().upper()
    if len(t) == 3 and t.startswith("10"):
        t = "T" + t[2]
    if len(t) != 2:
        raise CardError(f"cannot read card {reprlib.repr(text)}: expected rank+suit like 'AS', 'TD' or '10H'")
    known = _BY_TEXT.get(t)
    if known is not None:
        return known
    try:
        return Card(t[0], t[1])
    except CardError as exc:
        raise CardError(f"cannot read card {text!r}: {exc}") from None


def parse_cards(texts: Iterable[str]) -> tuple[Card, ...]:
    return tuple(parse_card(t) for t in texts)


ALL_CARDS: tuple[Card, ...] = tuple(Card(r, s) for s in SUITS for r in RANKS)
#: each card by its usual text ("AS"): :func:`parse_card` gives the one (immutable) card of
#: ALL_CARDS by a look-up, not a frozen dataclass made and validated per card read
_BY_TEXT = {str(c): c for c in ALL_CARDS}


@dataclass(frozen=True, slots=True)
class ShoeComposition:
    """How many of each card are left in the shoe (``rws-blackjack-v5 §2.2.1``: 4 to 8 decks of 52).

    Immutable: drawing returns a new composition. A draw of a card the shoe cannot hold
    is the irregularity of ``§5.5.1``/``§5.5.2``, decided by the caller.
    """

    counts: tuple[int, ...]  # indexed like ALL_CARDS

    @classmethod
    def of_decks(cls, decks: int) -> "ShoeComposition":
        if decks < 1:
            raise ValueError(f"a shoe needs at least one deck, not {decks}")
        return cls((decks,) * len(ALL_CARDS))

    @classmethod
    def from_counts(cls, counts: Mapping[Card, int]) -> "ShoeComposition":
        return cls(tuple(counts.get(c, 0) for c in ALL_CARDS))

    def count(self, card: Card) -> int:
        return self.counts[_index(card)]

    def __len__(self) -> int:
        return sum(self.counts)

    def can_draw(self, card: Card) -> bool:
        return self.counts[_index(card)] > 0

    def draw(self, card: Card) -> "ShoeComposition":
        shoe = self.take(card)
        if shoe is None:
            raise ValueError(f"{card} is not in the shoe")
        return shoe

    def take(self, card: Card) -> "ShoeComposition | None":
        """The shoe after ``card`` is drawn, or None when the shoe cannot hold it (one look-up:
        this runs for every card of every round)."""
        i = _index(card)
        counts = self.counts
        n = counts[i]
        if n <= 0:
            return None
        # made without the frozen dataclass __init__ (its by-name setattr is most of the cost)
        shoe: ShoeComposition = _new(ShoeComposition)
        _set_counts(shoe, counts[:i] + (n - 1,) + counts[i + 1:])
        return shoe

    def without(self, cards: Iterable[Card]) -> "ShoeComposition":
        left = Counter(cards)
        counts = list(self.counts)
        for card, n in left.items():
            i = _index(card)
            if counts[i] < n:
                raise ValueError(f"{card} is not in the shoe {n} times")
            counts[i] -= n
        return ShoeComposition(tuple(counts))


# ALL_CARDS is suit-major: a card's index from two string look-ups (a Card's own hash is a
# Python-level dataclass method, several times slower)
_SUIT_BASE = {s: i * len(RANKS) for i, s in enumerate(SUITS)}
_RANK_POS = {r: i for i, r in enumerate(RANKS)}


_new = object.__new__
_set_counts = ShoeComposition.__dict__["counts"].__set__


def _index(card: Card) -> int:
    return _SUIT_BASE[card.suit] + _RANK_POS[card.rank]


#: a card's place in ALL_CARDS and ShoeComposition.counts
card_index = _index


assert all(_index(c) == i for i, c in enumerate(ALL_CARDS))
