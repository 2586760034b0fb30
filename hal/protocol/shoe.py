"""Card-shoe protocol messages and the host's pure interpretation of them.

See ``docs/protocols/card-shoe.md``. :class:`ShoeTracker` turns decoded messages into
``hal`` events and notices cards that went out unseen (the shoe's counter jumped).
"""

from __future__ import annotations

from dataclasses import dataclass

from hal.events import RANKS, SUITS, CardDrawn, HalEvent, ShoeSignal, ShoeSignalKind
from hal.protocol.common import HEARTBEAT, HELLO, Hello, MessageError, need, u16
from hal.protocol.framing import Frame

CARD = 0x10
EVENT = 0x11

EVENT_CODES: dict[int, ShoeSignalKind] = {
    0x01: ShoeSignalKind.SHUFFLED,
    0x02: ShoeSignalKind.CUT_CARD,
    0x03: ShoeSignalKind.MISREAD,
    0x04: ShoeSignalKind.JAM,
    0x05: ShoeSignalKind.JAM_CLEARED,
    0x06: ShoeSignalKind.DOOR_OPENED,
    0x07: ShoeSignalKind.DOOR_CLOSED,
}
CODE_OF = {kind: code for code, kind in EVENT_CODES.items()}
#: Events that end a lasting condition (a jam, an open door): an old one must not end it now
CLEARS = frozenset({ShoeSignalKind.JAM_CLEARED, ShoeSignalKind.DOOR_CLOSED})

FLAG_JAMMED = 0x01
FLAG_DOOR_OPEN = 0x02
FLAGS_KNOWN = FLAG_JAMMED | FLAG_DOOR_OPEN   # the other bits are reserved: 0 in version 1
#: The heartbeat flag of the condition each event starts (True) or ends (False)
FLAG_OF = {ShoeSignalKind.JAM: (FLAG_JAMMED, True), ShoeSignalKind.JAM_CLEARED: (FLAG_JAMMED, False),
           ShoeSignalKind.DOOR_OPENED: (FLAG_DOOR_OPEN, True),
           ShoeSignalKind.DOOR_CLOSED: (FLAG_DOOR_OPEN, False)}
#: The event a heartbeat flag stands for when no event told of its condition
RAISED_BY = {FLAG_JAMMED: ShoeSignalKind.JAM, FLAG_DOOR_OPEN: ShoeSignalKind.DOOR_OPENED}


@dataclass(frozen=True, slots=True)
class Card:
    counter: int
    rank: str
    suit: str

    def payload(self) -> bytes:
        return self.counter.to_bytes(2, "big") + (self.rank + self.suit).encode("ascii")


@dataclass(frozen=True, slots=True)
class Event:
    kind: ShoeSignalKind
    counter: int

    def payload(self) -> bytes:
        return bytes((CODE_OF[self.kind],)) + self.counter.to_bytes(2, "big")


@dataclass(frozen=True, slots=True)
class Heartbeat:
    counter: int
    flags: int = 0

    def payload(self) -> bytes:
        return self.counter.to_bytes(2, "big") + bytes((self.flags,))


ShoeMessage = Hello | Heartbeat | Card | Event
TYPE_OF = {Hello: HELLO, Heartbeat: HEARTBEAT, Card: CARD, Event: EVENT}


def encode(message: ShoeMessage) -> tuple[int, bytes]:
    return TYPE_OF[type(message)], message.payload()


def decode(frame: Frame) -> ShoeMessage:
    """Frame -> message; :class:`MessageError` if the content is invalid."""
    p = frame.payload
    if frame.type == CARD:
        need(p, 4, "CARD")
        rank, suit = chr(p[2]), chr(p[3])
        if rank not in RANKS or suit not in SUITS:
            raise MessageError(f"CARD with invalid card {p[2:4]!r}")
        return Card(u16(p, 0), rank, suit)
    if frame.type == EVENT:
        need(p, 3, "EVENT")
        if p[0] not in EVENT_CODES:
            raise MessageError(f"EVENT with unknown code 0x{p[0]:02X}")
        return Event(EVENT_CODES[p[0]], u16(p, 1))
    if frame.type == HEARTBEAT:
        need(p, 3, "HEARTBEAT")
        if p[2] & ~FLAGS_KNOWN:
            raise MessageError(f"HEARTBEAT flags 0x{p[2]:02X}: bits 2-7 are reserved and must be 0")
        return Heartbeat(u16(p, 0), p[2])
    if frame.type == HELLO:
        return Hello.parse(p)
    raise MessageError(f"unknown shoe message type 0x{frame.type:02X}")


class ShoeTracker:
    """Host-side meaning of the shoe's messages: events out, gaps detected.

    The shoe's counter counts every card that left since the last shuffle, read or not.
    If it runs ahead of what we saw, a :attr:`ShoeSignalKind.CARD_GAP` is raised before
    the card, so the round can be stopped rather than dealt on with a missing card. A CARD
    whose counter does not advance since the last shuffle (a frame repeated, replayed after
    a HELLO, or arriving after a later one) is a duplicate: it becomes a
    :attr:`ShoeSignalKind.DUPLICATE_CARD`, never a :class:`CardDrawn`. The counter only
    goes forward, except at a shuffle, so a stale heartbeat cannot re-open old counts.

    A JAM_CLEARED or DOOR_CLOSED whose counter is behind ours is old (replayed): dropped, so
    it cannot end a jam or an open door now. A heartbeat (not stale) whose flags show a jam
    or an open door no event told of raises it (its event frame was lost); it never ends
    one: that takes the event.
    """

    def __init__(self, device: str) -> None:
        self.device = device
        self.counter: int | None = None  # last counter we know of; None = unknown
        self.duplicates = 0              # CARD frames refused as not advancing the counter
        self.stale = 0                   # EVENT / HEARTBEAT frames with a counter behind ours
        self.conditions = 0              # FLAG_* of the jam / open door events told of
        self.missed_events = 0           # a jam or open door only a heartbeat told of

    def handle(self, message: ShoeMessage) -> list[HalEvent]:
        out: list[HalEvent] = []
        if isinstance(message, Card):
            if self.counter is not None and message.counter <= self.counter:
                return self.duplicate(message)
            out += self._gap(message.counter - 1)
            self.counter = message.counter
            out.append(CardDrawn(device=self.device, rank=message.rank, suit=message.suit,
                                 counter=message.counter))
        elif isinstance(message, Event):
            if message.kind is ShoeSignalKind.SHUFFLED:
                self.counter = message.counter
            else:
                expected = message.counter - 1 if message.kind is ShoeSignalKind.MISREAD \
                    else message.counter
                if message.kind is ShoeSignalKind.MISREAD and self._behind(message.counter):
                    return []                # a misread we already heard of
                if message.kind in CLEARS and self._behind(message.counter + 1):
                    return []                # behind our count: a replayed "jam cleared" / "door closed"
                out += self._gap(expected)
                self._advance(message.counter)
            if message.kind in FLAG_OF:
                flag, on = FLAG_OF[message.kind]
                self.conditions = self.conditions | flag if on else self.conditions & ~flag
            out.append(ShoeSignal(device=self.device, kind=message.kind,
                                  counter=message.counter))
        elif isinstance(message, Heartbeat):
            stale = self.counter is not None and message.counter < self.counter
            out += self._gap(message.counter)
            self._advance(message.counter)
            if not stale:
                out += self._shown(message)
        return out

    def duplicate(self, card: Card) -> list[HalEvent]:
        """A CARD frame that must not be dealt (its count not ahead of ours, or replayed from
        before the last shuffle): counted and reported, never a :class:`CardDrawn`."""
        self.duplicates += 1
        return [ShoeSignal(device=self.device, kind=ShoeSignalKind.DUPLICATE_CARD,
                           counter=card.counter, card=card.rank + card.suit)]

    def _shown(self, heartbeat: Heartbeat) -> list[HalEvent]:
        """A jam or open door the heartbeat shows that no event told of (its frame was lost)."""
        out: list[HalEvent] = []
        for flag, kind in RAISED_BY.items():
            if heartbeat.flags & flag and not self.conditions & flag:
                self.conditions |= flag
                self.missed_events += 1
                out.append(ShoeSignal(device=self.device, kind=kind, counter=heartbeat.counter))
        return out

    def _behind(self, counter: int) -> bool:
        if self.counter is not None and counter <= self.counter:
            self.stale += 1
            return True
        return False

    def _advance(self, counter: int) -> None:
        if self.counter is None or counter > self.counter:
            self.counter = counter
        elif counter < self.counter:
            self.stale += 1

    def _gap(self, counter_before: int) -> list[HalEvent]:
        """Cards were missed if the shoe's counter is beyond ours."""
        if self.counter is not None and counter_before > self.counter:
            return [ShoeSignal(device=self.device, kind=ShoeSignalKind.CARD_GAP,
                               counter=counter_before)]
        return []
