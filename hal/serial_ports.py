"""Serial backend: the card shoe and the RFID reader over their framed protocols.

Each device owns a :class:`SerialLink` (reader thread; events are delivered to the sink
from that thread). Bytes go through the pure :class:`Parser`, then the message decoder,
then a pure tracker (:class:`ShoeTracker` / :class:`InventoryAssembler`) that makes events.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from hal.events import HalEvent, ShoeSignal, ShoeSignalKind
from hal.ports import CardShoe, ChipReader, Port
from hal.protocol import rfid, shoe
from hal.protocol.common import HELLO, PROTOCOL_VERSION, Hello, MessageError
from hal.protocol.framing import Frame, Parser, SequenceCheck, Sequencer
from hal.serial_link import SerialLink

DEFAULT_BAUDRATE = 115200


class _Endpoint:
    """The protocol plumbing shared by both serial devices (composition, not a base)."""

    def __init__(self, port: Port, path: str, baudrate: int,
                 decode: Callable[[Frame], Any], handle: Callable[[Any], list[HalEvent]],
                 on_reset: Callable[[], None], silence_timeout: float,
                 backoff_max: float,
                 replayed: Callable[[Any], list[HalEvent] | None] = lambda message: None) -> None:
        self._port, self._decode, self._handle, self._on_reset = port, decode, handle, on_reset
        # what a message from a frame behind the newest one is instead (None: passed on, its
        # content judges it), for a message whose content cannot tell it is old
        self._replayed = replayed
        self.parser = Parser()
        self.sequence = SequenceCheck()
        self.bad_messages = 0
        self.silence_timeout = silence_timeout
        self.device_id = ""
        self._sender = Sequencer()
        self._last_frame = time.monotonic()
        self.link = SerialLink(path, baudrate, on_bytes=self._bytes, on_idle=self._idle,
                               on_up=self._up, on_down=self._down, backoff_max=backoff_max,
                               thread_name=f"hal-{port.name}")

    def stats(self) -> dict[str, int]:
        s = self.parser.stats
        return {"frames": s.frames, "bad_header": s.bad_header, "bad_crc": s.bad_crc,
                "truncated": s.truncated, "skipped_bytes": s.skipped_bytes,
                "bad_messages": self.bad_messages, "lost_frames": self.sequence.lost,
                "duplicate_frames": self.sequence.duplicates,
                "out_of_order_frames": self.sequence.out_of_order,
                "reconnects": self.link.reconnects}

    def _up(self) -> None:
        self._last_frame = time.monotonic()
        self.link.write(self._sender.frame(HELLO, Hello(PROTOCOL_VERSION).payload()))

    def _down(self, reason: str) -> None:
        self.sequence.reset()
        self.parser = Parser(stats=self.parser.stats)
        self._on_reset()
        self._port._link_lost(reason)

    def _bytes(self, data: bytes) -> None:
        self._frames(self.parser.feed(data))
        self._check_silence()

    def _idle(self) -> None:
        self._frames(self.parser.idle())
        self._check_silence()

    def _check_silence(self) -> None:
        silent = time.monotonic() - self._last_frame
        if self._port.connected and silent > self.silence_timeout:
            self._port._link_lost(f"no frame for {silent:.1f} s")

    def _frames(self, frames: list[Frame]) -> None:
        for frame in frames:
            try:
                message = self._decode(frame)
            except MessageError:
                self.bad_messages += 1
                continue
            if isinstance(message, Hello):
                self.sequence.reset()  # the device (re)started its numbering
                self.device_id = message.device_id
            instead = self._replayed(message) if self.sequence.behind(frame.seq) else None
            if instead is not None:
                for event in instead:
                    self._port._emit(event)
                continue
            if not self.sequence.accept(frame.seq):
                continue
            self._last_frame = time.monotonic()
            self._port._link_restored()
            for event in self._handle(message):
                self._port._emit(event)


def _check_baudrate(baudrate: int) -> int:
    if baudrate not in (9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600):
        raise ValueError(f"unsupported baud rate {baudrate}")
    return baudrate


class SerialCardShoe(CardShoe):
    """A card shoe on a serial port speaking ``docs/protocols/card-shoe.md``."""

    def __init__(self, name: str, port: str, baudrate: int = DEFAULT_BAUDRATE,
                 silence_timeout: float = 3.0, backoff_max: float = 2.0) -> None:
        super().__init__(name)
        self.tracker = shoe.ShoeTracker(name)
        self.replayed_shuffles = 0
        self._endpoint = _Endpoint(self, port, _check_baudrate(baudrate), shoe.decode,
                                   self.tracker.handle, lambda: None, silence_timeout,
                                   backoff_max, self._replayed)

    @property
    def stats(self) -> dict[str, int]:
        s = self._endpoint.stats()
        s["duplicate_cards"] = self.tracker.duplicates
        s["stale_counters"] = self.tracker.stale
        s["missed_events"] = self.tracker.missed_events
        s["replayed_shuffles"] = self.replayed_shuffles
        return s

    def _replayed(self, message: Any) -> list[HalEvent] | None:
        """A SHUFFLED from a frame behind the newest one is a replay: the shoe's own count
        restarts only at a shuffle, so a replayed one would let the old cards (counts from 1)
        pass as new. Dropped and reported. A JAM_CLEARED / DOOR_CLOSED of the same count (no
        card since) cannot tell it is old either: dropped and counted, so a replayed one
        does not end a jam or an open door. A frame with a count ahead of ours is from
        before the last shuffle: a CARD is a duplicate, anything else stale. Other frames
        are judged by their count."""
        if isinstance(message, shoe.Event) and message.kind is ShoeSignalKind.SHUFFLED:
            self.replayed_shuffles += 1
            return [ShoeSignal(device=self.name, kind=ShoeSignalKind.REPLAYED_SHUFFLE,
                               counter=message.counter)]
        if isinstance(message, shoe.Event) and message.kind in shoe.CLEARS:
            self.tracker.stale += 1
            return []
        known = self.tracker.counter
        if isinstance(message, (shoe.Card, shoe.Event, shoe.Heartbeat)) and known is not None \
                and message.counter > known:
            # an old frame with a count ahead of ours: from before the last shuffle (the count
            # restarted since), it would deal a card that is not out now and refuse real ones
            if isinstance(message, shoe.Card):
                return self.tracker.duplicate(message)
            self.tracker.stale += 1
            return []
        return None

    def _start(self) -> None:
        self._endpoint.link.open()

    def _close(self) -> None:
        self._endpoint.link.close()


class SerialChipReader(ChipReader):
    """An RFID reader on a serial port speaking ``docs/protocols/rfid-reader.md``.

    ``spots[i]`` is the spot above antenna ``i``.
    """

    def __init__(self, name: str, spots: Sequence[str], port: str,
                 baudrate: int = DEFAULT_BAUDRATE, silence_timeout: float = 3.0,
                 backoff_max: float = 2.0) -> None:
        super().__init__(name, spots)
        self.assembler = rfid.InventoryAssembler(name, self.spots)
        self.replayed_frames = 0
        self._endpoint = _Endpoint(self, port, _check_baudrate(baudrate), rfid.decode,
                                   self.assembler.handle, self.assembler.reset,
                                   silence_timeout, backoff_max, self._replayed)

    @property
    def stats(self) -> dict[str, int]:
        s = self._endpoint.stats()
        s["incomplete_cycles"] = self.assembler.incomplete
        s["unmapped"] = self.assembler.unmapped
        s["replayed_frames"] = self.replayed_frames
        return s

    def _replayed(self, message: Any) -> list[HalEvent] | None:
        """A TAGS or CYCLE_END from a frame behind the newest one is a replay: a cycle has no
        count that only goes forward to tell an old one, and a replayed cycle keeps chips
        taken off a spot reading as there. Dropped and counted; a fault is passed on."""
        if isinstance(message, (rfid.Tags, rfid.CycleEnd)):
            self.replayed_frames += 1
            return []
        return None

    def _start(self) -> None:
        self._endpoint.link.open()

    def _close(self) -> None:
        self._endpoint.link.close()
