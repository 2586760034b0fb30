"""The frame layer shared by the card-shoe and RFID-reader protocols.

::

    A5 5A | LEN | ~LEN | TYPE | SEQ | PAYLOAD (LEN bytes) | CRC16 (big-endian)

CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF) over LEN..PAYLOAD. ``~LEN`` guards the
length so a corrupted length cannot make the parser swallow good frames behind it.
See ``docs/protocols/card-shoe.md`` for the reasoning and the resync rules.
"""

from __future__ import annotations

import binascii
from dataclasses import dataclass, field

SYNC = b"\xA5\x5A"
HEADER_LEN = 6  # sync(2) len(1) ~len(1) type(1) seq(1)
OVERHEAD = HEADER_LEN + 2
MAX_PAYLOAD = 250


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE; ``crc16(b"123456789") == 0x29B1``."""
    return binascii.crc_hqx(data, 0xFFFF)


@dataclass(frozen=True, slots=True)
class Frame:
    type: int
    seq: int
    payload: bytes = b""


def encode_frame(frame: Frame) -> bytes:
    n = len(frame.payload)
    if n > MAX_PAYLOAD:
        raise ValueError(f"payload of {n} bytes exceeds {MAX_PAYLOAD}")
    if not (0 <= frame.type <= 255 and 0 <= frame.seq <= 255):
        raise ValueError(f"type and seq must be bytes: {frame.type}, {frame.seq}")
    body = bytes((n, n ^ 0xFF, frame.type, frame.seq)) + frame.payload
    return SYNC + body + crc16(body).to_bytes(2, "big")


@dataclass(slots=True)
class ParserStats:
    """Why bytes were thrown away; exposed for diagnostics (service menu, logs)."""

    frames: int = 0  # accepted
    bad_header: int = 0  # sync found but LEN / ~LEN disagree or LEN too large
    bad_crc: int = 0
    truncated: int = 0  # a partial frame abandoned at idle()
    skipped_bytes: int = 0  # bytes discarded while hunting for sync

    @property
    def rejected(self) -> int:
        return self.bad_header + self.bad_crc + self.truncated


@dataclass
class Parser:
    """Incremental frame parser: ``feed(bytes) -> list[Frame]``; never raises on input.

    Resync rule: whenever a candidate frame is rejected, only its first sync byte is
    discarded and the search resumes one byte later, so a good frame hiding behind garbage
    (even garbage that looked like a header) is still found.
    """

    max_payload: int = MAX_PAYLOAD
    stats: ParserStats = field(default_factory=ParserStats)
    _buf: bytearray = field(default_factory=bytearray)

    def feed(self, data: bytes) -> list[Frame]:
        self._buf += data
        return self._drain()

    def idle(self) -> list[Frame]:
        """The line went quiet: abandon a partial frame and rescan what followed it."""
        frames: list[Frame] = []
        while len(self._buf) >= 1 and self._buf.startswith(SYNC[:1]):
            if len(self._buf) >= HEADER_LEN and not self._header_ok():
                break  # _drain would have dealt with it
            self.stats.truncated += 1
            del self._buf[0]
            frames += self._drain()
        return frames

    @property
    def pending(self) -> int:
        return len(self._buf)

    def _header_ok(self) -> bool:
        n, check = self._buf[2], self._buf[3]
        return n ^ 0xFF == check and n <= self.max_payload

    def _drain(self) -> list[Frame]:
        frames: list[Frame] = []
        buf = self._buf
        while True:
            start = buf.find(SYNC)
            if start < 0:
                # keep a trailing first sync byte: the second may be in the next read
                keep = 1 if buf[-1:] == SYNC[:1] else 0
                self.stats.skipped_bytes += len(buf) - keep
                del buf[: len(buf) - keep]
                return frames
            if start:
                self.stats.skipped_bytes += start
                del buf[:start]
            if len(buf) < HEADER_LEN:
                return frames
            if not self._header_ok():
                self.stats.bad_header += 1
                del buf[0]
                continue
            n = buf[2]
            end = HEADER_LEN + n + 2
            if len(buf) < end:
                return frames
            body = bytes(buf[2: HEADER_LEN + n])
            if crc16(body) != int.from_bytes(buf[end - 2: end], "big"):
                self.stats.bad_crc += 1
                del buf[0]
                continue
            frames.append(Frame(buf[4], buf[5], bytes(buf[HEADER_LEN: HEADER_LEN + n])))
            self.stats.frames += 1
            del buf[:end]


class Sequencer:
    """Sender side: numbers frames 0..255, wrapping."""

    def __init__(self) -> None:
        self._next = 0

    def frame(self, type_: int, payload: bytes = b"") -> bytes:
        seq = self._next
        self._next = (self._next + 1) & 0xFF
        return encode_frame(Frame(type_, seq, payload))

    def skip(self, n: int = 1) -> None:
        """Consume sequence numbers without sending (fault injection: dropped frames)."""
        self._next = (self._next + n) & 0xFF


@dataclass(slots=True)
class SequenceCheck:
    """Receiver side: counts frames lost between two received sequence numbers.

    A repeated sequence number is a duplicate (the sender retransmitted) and is dropped.
    A number behind the last one (more than half the ring back: a replayed or reordered
    frame) is counted as ``out_of_order``, not as 200-odd frames lost; the frame is still
    passed on, because only its content (the shoe's card counter) can say whether it is
    old, and the check follows it (a device that restarted without a HELLO goes on).
    :meth:`behind` judges against :attr:`newest`, which never follows a frame back: a replay
    of the frames before a shuffle, in order, moves ``last`` back and would else make the
    replayed shuffle look new. Frames are lost only between the newest and a number past it
    (after a replayed frame the next one is not 'ahead' by the frames replayed).
    """

    last: int | None = None
    newest: int | None = None   # the furthest number heard since the last reset
    lost: int = 0
    duplicates: int = 0
    out_of_order: int = 0

    def accept(self, seq: int) -> bool:
        if self.last is not None:
            ahead = (seq - self.last) & 0xFF
            if ahead == 0:
                self.duplicates += 1
                return False
            beyond = (seq - self.newest) & 0xFF if self.newest is not None else ahead
            if ahead >= 0x80:
                self.out_of_order += 1
            elif 0 < beyond < 0x80:
                self.lost += beyond - 1  # only numbers past the newest: not a replay's gap
        if self.newest is None or 0 < (seq - self.newest) & 0xFF < 0x80:
            self.newest = seq
        self.last = seq
        return True

    def behind(self, seq: int) -> bool:
        """Whether ``seq`` is not ahead of the newest number heard (a replayed or reordered
        frame; a repeat of the last one is a duplicate instead); the check does not move."""
        if self.newest is None or seq == self.last:
            return False
        return not 0 < (seq - self.newest) & 0xFF < 0x80

    def reset(self) -> None:
        """After a reconnect the sender may restart at any number."""
        self.last = None
        self.newest = None
