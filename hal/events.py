"""Typed, frozen events that ports deliver to the firmware.

Every event names the ``device`` (the port's configured name) it came from, so one dispatch
queue can carry events of every port. Values are plain strings and ints: ``hal`` knows
nothing of the rules engine (dependency direction ``ui -> firmware -> hal``).
"""

from __future__ import annotations

import enum
import reprlib
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

RANKS = "A23456789TJQK"
SUITS = "SHDC"
#: The console keypad's keys: one per rank, one per suit (a card is a rank key, then a suit key).
KEYPAD_KEYS = tuple(RANKS) + tuple(SUITS)


class Button(enum.StrEnum):
    """The dealer console's buttons; the value is the configuration name."""

    OPEN_BETS = "open_bets"
    NO_MORE_BETS = "no_more_bets"
    STAND = "stand"  # stand / next hand
    HIT = "hit"
    DOUBLE = "double"
    SPLIT = "split"
    SURRENDER = "surrender"
    INSURANCE = "insurance"
    EVEN_MONEY = "even_money"
    SWITCH = "switch"
    VOID_ROUND = "void_round"
    WALKED_AWAY = "walked_away"


class ShoeSignalKind(enum.StrEnum):
    """Things a card shoe reports besides cards."""

    SHUFFLED = "shuffled"  # shuffle done / new shoe; the card counter restarts at 0
    CUT_CARD = "cut_card"  # the cut card came out: last round of this shoe
    MISREAD = "misread"  # a card went out that the sensor could not read
    JAM = "jam"
    JAM_CLEARED = "jam_cleared"
    DOOR_OPENED = "door_opened"  # door or lid
    DOOR_CLOSED = "door_closed"
    CARD_GAP = "card_gap"  # the shoe's counter jumped: cards were drawn that we never saw
    # a CARD whose counter does not advance since the last shuffle (a replayed, repeated or
    # late frame): dropped, never dealt; ``card`` names what it claimed to be
    DUPLICATE_CARD = "duplicate_card"
    # a SHUFFLED whose frame number is behind the last frame's (a replayed frame): dropped,
    # the card count does not restart (old cards would pass as new)
    REPLAYED_SHUFFLE = "replayed_shuffle"


@dataclass(frozen=True, slots=True, kw_only=True)
class HalEvent:
    """Base of every port event."""

    device: str


# ---------------------------------------------------------------- chip reader


@dataclass(frozen=True, slots=True)
class SpotRead:
    """The tag UIDs (upper-case hex) one spot's antenna saw in one inventory cycle."""

    spot: str
    uids: frozenset[str]
    antenna: int | None = None  # the reader's antenna under the spot (None: not said)


@dataclass(frozen=True, slots=True, kw_only=True)
class InventoryCycle(HalEvent):
    """One complete inventory cycle of the reader: every configured spot, seen or empty.

    Raw reads, not wagers: a flickering tag shows up here as it flickers; debouncing and
    the chip registry live above the port (``firmware.chips``).
    """

    cycle: int
    reads: tuple[SpotRead, ...]

    def uids(self, spot: str) -> frozenset[str]:
        for read in self.reads:
            if read.spot == spot:
                return read.uids
        return frozenset()

    def as_mapping(self) -> dict[str, frozenset[str]]:
        return {read.spot: read.uids for read in self.reads}

    @classmethod
    def build(cls, device: str, cycle: int, spots: Iterable[str],
              seen: Mapping[str, Iterable[str]]) -> "InventoryCycle":
        # ``spots[i]`` is the spot above antenna ``i`` (hal.ports.ChipReader)
        reads = tuple(SpotRead(spot, frozenset(seen.get(spot, ())), antenna)
                      for antenna, spot in enumerate(spots))
        return cls(device=device, cycle=cycle, reads=reads)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReaderFault(HalEvent):
    """The reader reports a hardware fault on an antenna (``spot``) or on itself (None)."""

    spot: str | None
    code: str


# ---------------------------------------------------------------- card shoe


@dataclass(frozen=True, slots=True, kw_only=True)
class _CardEvent(HalEvent):
    """An event that names one card by rank and suit (checked on construction)."""

    rank: str
    suit: str

    def __post_init__(self) -> None:
        if self.rank not in RANKS or self.suit not in SUITS or len(self.rank + self.suit) != 2:
            raise ValueError(f"not a card: {self.rank!r}{self.suit!r}")

    @property
    def card(self) -> str:
        return self.rank + self.suit


@dataclass(frozen=True, slots=True, kw_only=True)
class CardDrawn(_CardEvent):
    """A card left the shoe. ``counter`` is the shoe's own count since the last shuffle."""

    counter: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ShoeSignal(HalEvent):
    """A shoe event other than a card; ``counter`` is the shoe's card counter at the time."""

    kind: ShoeSignalKind
    counter: int | None = None
    card: str | None = None     # DUPLICATE_CARD: the card the refused frame named


# ---------------------------------------------------------------- dealer console


@dataclass(frozen=True, slots=True, kw_only=True)
class ButtonPressed(HalEvent):
    button: Button


@dataclass(frozen=True, slots=True, kw_only=True)
class ButtonReleased(HalEvent):
    button: Button


@dataclass(frozen=True, slots=True, kw_only=True)
class CardKeyed(_CardEvent):
    """A card keyed in on the console's keypad (a rank key, then a suit key): a card the
    shoe dealt unseen, which the dealer owes the round (``rws-blackjack-v5 §5.4.1``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TechnicianKey(HalEvent):
    """The technician's key switch was turned (service mode on / off)."""

    on: bool


# ---------------------------------------------------------------- link state


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionLost(HalEvent):
    """The device stopped talking (port gone, or silent past its timeout)."""

    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionRestored(HalEvent):
    """The device talks again after a :class:`ConnectionLost`."""


#: Where a port delivers its events. Backends with reader threads call it from those
#: threads, so it must be thread-safe: pass ``queue.SimpleQueue().put``.
EventSink = Callable[[HalEvent], None]


def parse_card(text: str) -> tuple[str, str]:
    """``"AS"`` / ``"10h"`` -> ``("A", "S")`` / ``("T", "H")``; ValueError otherwise."""
    t = text.strip().upper()
    if t.startswith("10"):
        t = "T" + t[2:]
    if len(t) != 2 or t[0] not in RANKS or t[1] not in SUITS:
        raise ValueError(f"not a card: {text!r} (rank A 2-9 T J Q K, suit S H D C)")
    return t[0], t[1]


def normalise_uid(uid: str) -> str:
    """Tag UIDs are upper-case hex with an even number of digits (1..16 bytes)."""
    u = uid.strip().upper()
    if not (2 <= len(u) <= 32) or len(u) % 2 or any(c not in "0123456789ABCDEF" for c in u):
        raise ValueError(f"not a tag UID: {reprlib.repr(uid)} (2 to 32 hex digits, whole bytes)")
    return u
