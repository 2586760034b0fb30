"""paho's client reading its socket in chunks instead of a few bytes at a time.

paho reads each incoming packet with at least three ``recv`` calls (the type byte, the
remaining length a byte at a time, the rest) and reads one packet per pass of its loop, a
``select`` each. Every one of those system calls gives up the interpreter lock; in a
process whose other thread is busy (the jackpot controller's ingest thread) the network
thread then waits for the lock again after each (up to the switch interval, 5 ms): through
the broker, the controller spent more of its time handing the lock back and forth than
reading. :class:`ChunkedClient` reads what the kernel holds in one ``recv`` (up to
:data:`CHUNK` bytes), hands paho the bytes it asks for from that, and reads every whole
packet the chunk holds before it returns to ``select``.

Nothing else of paho changes: the packets, their order and the callbacks are paho's own; a
chunk is kept for the socket it came from only (a reconnect starts empty).
"""

from __future__ import annotations

from typing import Any

import paho.mqtt.client as mqtt

CHUNK = 65536               # bytes read at once: a few hundred reports


class ChunkedClient(mqtt.Client):
    """A paho :class:`~paho.mqtt.client.Client` whose reads come from one ``recv`` a chunk."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._chunk = b""
        self._chunk_at = 0
        self._chunk_sock: Any = None        # the socket the chunk came from

    def _sock_recv(self, bufsize: int) -> bytes:
        if self._chunk_sock is not self._sock:      # a new connection: nothing of the old one
            self._chunk, self._chunk_at, self._chunk_sock = b"", 0, self._sock
        if self._chunk_at >= len(self._chunk):
            # paho's own read (its TLS and closed-socket handling): BlockingIOError when the
            # kernel holds nothing, b"" at the end of the stream (both passed on as paho expects)
            self._chunk, self._chunk_at = super()._sock_recv(CHUNK), 0
            if not self._chunk:
                return b""
        out = self._chunk[self._chunk_at:self._chunk_at + bufsize]
        self._chunk_at += len(out)
        return out

    def buffered(self) -> int:
        """Bytes read from the socket that paho has not taken yet."""
        return len(self._chunk) - self._chunk_at if self._chunk_sock is self._sock else 0

    def loop_read(self, max_packets: int = 1) -> mqtt.MQTTErrorCode:
        # paho reads one packet a pass and then waits in select, which would not wake for
        # bytes already read into the chunk: read on while the chunk holds any
        rc = super().loop_read(max_packets)
        while rc == mqtt.MQTT_ERR_SUCCESS and self._sock is not None and self.buffered():
            rc = super().loop_read(max_packets)
        return rc
