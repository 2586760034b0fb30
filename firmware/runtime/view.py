"""What a seat's screen shows: a plain, immutable view of the box, built from the seat's
state after every step. The UI observes it; it never decides a rule."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SpotView:
    name: str
    amount: str                 # what the valid chips on the spot are worth
    status: str                 # empty | open | offered | locked | refused
    refused_chips: tuple[str, ...] = ()


@dataclass(frozen=True)
class HandView:
    cards: tuple[str, ...]
    total: int
    soft: bool
    status: str
    result: str | None
    net: str | None
    in_play: bool = False


@dataclass(frozen=True)
class SeatView:
    box: int
    round: int
    phase: str                  # idle | open | closing | play | over | void
    spots: tuple[SpotView, ...]
    hands: tuple[HandView, ...] = ()
    dealer_cards: tuple[str, ...] = ()
    dealer_total: int | None = None
    results: tuple[tuple[str, str], ...] = ()   # bet -> net, once settled
    messages: tuple[str, ...] = ()
    alarms: tuple[str, ...] = ()
    lamps: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    decisions: tuple[str, ...] = ()             # legal now for the hand in play
    dealer_soft: bool = False                   # as the engine counts them (§3.2)
    dealer_blackjack: bool = False
