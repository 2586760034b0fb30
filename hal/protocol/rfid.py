"""RFID-reader protocol messages and the host's assembly of inventory cycles.

See ``docs/protocols/rfid-reader.md``. A cycle is reported as TAGS frames (one or more per
antenna) closed by CYCLE_END, which states how many TAGS frames belong to the cycle; the
:class:`InventoryAssembler` only ever delivers a cycle it received completely.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from hal.events import HalEvent, InventoryCycle, ReaderFault
from hal.protocol.common import HEARTBEAT, HELLO, Hello, MessageError, need, u16
from hal.protocol.framing import MAX_PAYLOAD, Frame

TAGS = 0x20
CYCLE_END = 0x21
FAULT = 0x22

READER_ITSELF = 0xFF
FAULT_CODES = {0x01: "antenna_open", 0x02: "antenna_short", 0x03: "rf_error",
               0x04: "overheat"}
FAULT_CODE_OF = {name: code for code, name in FAULT_CODES.items()}
MAX_UID = 16
#: CYCLE_END counts a cycle's TAGS frames in one byte: a cycle of more can never complete
MAX_CYCLE_FRAMES = 255


@dataclass(frozen=True, slots=True)
class Tags:
    cycle: int
    antenna: int
    uids: tuple[bytes, ...]

    def payload(self) -> bytes:
        out = bytearray(self.cycle.to_bytes(2, "big"))
        out += bytes((self.antenna, len(self.uids)))
        for uid in self.uids:
            out += bytes((len(uid),)) + uid
        return bytes(out)


@dataclass(frozen=True, slots=True)
class CycleEnd:
    cycle: int
    frames: int

    def payload(self) -> bytes:
        return self.cycle.to_bytes(2, "big") + bytes((self.frames,))


@dataclass(frozen=True, slots=True)
class Fault:
    antenna: int
    code: str

    def payload(self) -> bytes:
        return bytes((self.antenna, FAULT_CODE_OF[self.code]))


@dataclass(frozen=True, slots=True)
class Heartbeat:
    cycle: int

    def payload(self) -> bytes:
        return self.cycle.to_bytes(2, "big")


ReaderMessage = Hello | Heartbeat | Tags | CycleEnd | Fault
TYPE_OF = {Hello: HELLO, Heartbeat: HEARTBEAT, Tags: TAGS, CycleEnd: CYCLE_END, Fault: FAULT}


def encode(message: ReaderMessage) -> tuple[int, bytes]:
    return TYPE_OF[type(message)], message.payload()


def split_tags(cycle: int, antenna: int, uids: Iterable[bytes]) -> list[Tags]:
    """One antenna's tags as as few TAGS messages as fit the frame (always at least one)."""
    chunks: list[Tags] = []
    current: list[bytes] = []
    size = 4
    for uid in sorted(uids):
        if size + 1 + len(uid) > MAX_PAYLOAD or len(current) == 255:
            chunks.append(Tags(cycle, antenna, tuple(current)))
            current, size = [], 4
        current.append(uid)
        size += 1 + len(uid)
    chunks.append(Tags(cycle, antenna, tuple(current)))
    return chunks


def decode(frame: Frame) -> ReaderMessage:
    p = frame.payload
    if frame.type == TAGS:
        if len(p) < 4:
            raise MessageError("TAGS payload shorter than its 4-byte head")
        count, at, uids = p[3], 4, []
        for _ in range(count):
            if at >= len(p):
                raise MessageError("TAGS payload ends before its last UID")
            n = p[at]
            if not 1 <= n <= MAX_UID or at + 1 + n > len(p):
                raise MessageError(f"TAGS UID length {n} invalid")
            uids.append(bytes(p[at + 1: at + 1 + n]))
            at += 1 + n
        if at != len(p):
            raise MessageError("TAGS payload has trailing bytes")
        return Tags(u16(p, 0), p[2], tuple(uids))
    if frame.type == CYCLE_END:
        need(p, 3, "CYCLE_END")
        return CycleEnd(u16(p, 0), p[2])
    if frame.type == FAULT:
        need(p, 2, "FAULT")
        if p[1] not in FAULT_CODES:
            raise MessageError(f"FAULT with unknown code 0x{p[1]:02X}")
        return Fault(p[0], FAULT_CODES[p[1]])
    if frame.type == HEARTBEAT:
        need(p, 2, "HEARTBEAT")
        return Heartbeat(u16(p, 0))
    if frame.type == HELLO:
        return Hello.parse(p)
    raise MessageError(f"unknown reader message type 0x{frame.type:02X}")


@dataclass
class InventoryAssembler:
    """Collects TAGS frames into :class:`InventoryCycle` events; drops incomplete cycles.

    ``spots[i]`` is the spot above antenna ``i`` (configuration). Tags and faults from an
    antenna with no spot are counted in :attr:`unmapped` and ignored.
    """

    device: str
    spots: Sequence[str]
    incomplete: int = 0  # cycles dropped because a TAGS frame was lost
    unmapped: int = 0
    _cycle: int | None = None
    _frames: int = 0
    _seen: dict[str, set[str]] = field(default_factory=dict)

    def handle(self, message: ReaderMessage) -> list[HalEvent]:
        if isinstance(message, Tags):
            if message.cycle != self._cycle:
                if self._cycle is not None:
                    self.incomplete += 1  # previous cycle never got its CYCLE_END
                self._start(message.cycle)
            self._frames += 1
            if self._frames > MAX_CYCLE_FRAMES:
                return []      # a line that never closes the cycle must not grow what is kept
            if message.antenna < len(self.spots):
                self._seen[self.spots[message.antenna]].update(u.hex().upper()
                                                               for u in message.uids)
            else:
                self.unmapped += 1
            return []
        if isinstance(message, CycleEnd):
            complete = message.cycle == self._cycle and message.frames == self._frames
            if message.frames == 0 and self._cycle is None:
                complete = True  # nothing to report: every antenna empty is still sent
                self._start(message.cycle)
            if not complete:
                self.incomplete += 1
                self._cycle = None
                return []
            event = InventoryCycle.build(self.device, message.cycle, self.spots, self._seen)
            self._cycle = None
            return [event]
        if isinstance(message, Fault):
            if message.antenna == READER_ITSELF:
                return [ReaderFault(device=self.device, spot=None, code=message.code)]
            if message.antenna >= len(self.spots):
                self.unmapped += 1   # like its tags: not the reader's own fault (no bets at all)
                return []
            return [ReaderFault(device=self.device, spot=self.spots[message.antenna],
                                code=message.code)]
        return []

    def reset(self) -> None:
        """Forget a half-received cycle (after a reconnect)."""
        self._cycle = None

    def _start(self, cycle: int) -> None:
        self._cycle = cycle
        self._frames = 0
        self._seen = {spot: set() for spot in self.spots}
