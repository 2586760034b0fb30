"""paho's client reading its socket in chunks instead of a few bytes at a time, and
writing a batch's PUBACKs at once.

paho reads each incoming packet with at least three ``recv`` calls (the type byte, the
remaining length a byte at a time, the rest) and reads one packet per pass of its loop, a
``select`` each. Every one of those system calls gives up the interpreter lock; in a
process whose other thread is busy (the jackpot controller's ingest thread) the network
thread then waits for the lock again after each (up to the switch interval, 5 ms): through
the broker, the controller spent more of its time handing the lock back and forth than
reading. :class:`ChunkedClient` reads what the kernel holds in one ``recv`` (up to
:data:`CHUNK` bytes), hands paho the bytes it asks for from that, and reads every whole
packet the chunk holds before it returns to ``select``.

The same on the way out: PUBACKs queued by another thread wake paho's thread once, not once
each, and the PUBACKs waiting at the head of its queue go out in one ``send``.

A QoS 1 publish from another thread (the unit's step: the dealer's card message, the seat's
report) is written to the socket by that thread, under the lock paho's thread takes to write
(:meth:`ChunkedClient._packet_queue`): paho would queue it and wake its network thread
through a socketpair, and that thread then waits for the interpreter lock the step holds
before it writes: a hand-off on a card's way out and on its report's. On a TLS link (the
tables' ``mqtts://``) one SSL object is then used by two threads, which OpenSSL does not
allow at once: the link's SSL socket is a :class:`SerialSSLSocket`, whose every call into
OpenSSL (paho's reads and its ``pending()`` outside any lock of ours, either thread's
writes, the close) takes one lock. A websocket link keeps paho's hand-off.

The PUBACK paho's thread makes for a message it read goes out in the pass that read it
(:meth:`ChunkedClient._ack_now`), not after paho has woken itself through its socketpair
(a send, a select, a recv: each a hand-over of the interpreter lock to the unit's step that
message just started).

Nothing else of paho changes: the packets, their order and the callbacks are paho's own; a
chunk is kept for the socket it came from only (a reconnect starts empty).
"""

from __future__ import annotations

import socket
import ssl
import threading
from typing import Any

import paho.mqtt.client as mqtt

CHUNK = 65536               # bytes read at once: a few hundred reports
MERGED = 4096               # PUBACKs written at once at most (16 kB)


class SerialSSLSocket(ssl.SSLSocket):
    """An SSL socket whose calls into its SSL object take turns: the unit's step writes its
    own packet while paho's thread may be reading or asking ``pending()``; the ``ssl`` module
    lets go of the interpreter lock inside each, so two threads would be in OpenSSL at once
    on one object. Made by the link's context (``sslsocket_class``), so paho's own TLS
    set-up, handshake and error handling are unchanged."""

    _turn: threading.RLock

    @classmethod
    def _create(cls, *args: Any, **kwargs: Any) -> "SerialSSLSocket":
        sock = super()._create(*args, **kwargs)  # type: ignore[misc]
        sock._turn = threading.RLock()
        return sock  # type: ignore[no-any-return]

    def recv(self, buflen: int = 1024, flags: int = 0) -> bytes:
        with self._turn:
            return super().recv(buflen, flags)

    def send(self, data: Any, flags: int = 0) -> int:
        with self._turn:
            return super().send(data, flags)

    def pending(self) -> int:
        with self._turn:
            return super().pending()

    def _real_close(self) -> None:
        with self._turn:
            super()._real_close()  # type: ignore[misc]


#: the sockets a publishing thread may write to itself
_DIRECT_SOCKETS = (socket.socket, SerialSSLSocket)


class ChunkedClient(mqtt.Client):
    """A paho :class:`~paho.mqtt.client.Client` whose reads come from one ``recv`` a chunk."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._chunk = b""
        self._chunk_at = 0
        self._chunk_sock: Any = None        # the socket the chunk came from
        self._woken = False                 # a wake for queued PUBACKs is on its way to paho's thread
        self._reading_on = False            # in loop_read's read-on: the chunk in hand only
        # held by whoever writes to the socket (paho's thread, or a publisher writing its own
        # packet), closes it or connects it anew: one writer at a time, packets in order
        self._write_lock = threading.RLock()

    def _sock_recv(self, bufsize: int) -> bytes:
        if self._chunk_sock is not self._sock:      # a new connection: nothing of the old one
            self._chunk, self._chunk_at, self._chunk_sock = b"", 0, self._sock
        if self._chunk_at >= len(self._chunk):
            if self._reading_on:
                # the chunk is done: no more from the socket until paho has written (the
                # PUBACKs, the keepalive); a broker with a backlog never lets it run dry, and
                # a read-on that refilled read for as long as the backlog lasted (#16).
                # paho keeps a packet begun and goes on with it on its next read.
                raise BlockingIOError
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

    def _packet_queue(self, command: int, packet: bytes | bytearray, mid: int, qos: int,
                      info: mqtt.MQTTMessageInfo | None = None) -> mqtt.MQTTErrorCode:
        if command & 0xF0 == mqtt.PUBLISH and qos > 0 and self._writes_direct():
            return self._publish_direct(command, packet, mid, qos, info)
        if command & 0xF0 == mqtt.PUBACK and self._thread is not None and threading.current_thread() is self._thread:
            return self._ack_now(command, packet, mid, qos, info)
        # a PUBACK from another thread (the controller's, after its commit): queued, and
        # paho's thread woken once for however many follow before it writes (paho wakes it
        # for every packet: a system call each, and a hand-over of the interpreter lock)
        if command & 0xF0 != mqtt.PUBACK or self._thread is None or self._sockpairW is None:
            return super()._packet_queue(command, packet, mid, qos, info)
        self._queue(command, packet, mid, qos, info)
        if not self._woken:                 # set before the wake; cleared when writing starts
            self._woken = True
            try:
                self._sockpairW.send(b"0")
            except BlockingIOError:         # the pipe is full: paho's thread is woken already
                pass
        return mqtt.MQTT_ERR_SUCCESS

    def _writes_direct(self) -> bool:
        """May the calling thread write its packet itself? Not paho's own thread (it writes
        in its loop), not before the broker's CONNACK, only on a plain TCP socket or a TLS one
        whose calls take turns (not websockets: paho's wrapper keeps state of its own)."""
        return (self._thread is not None and threading.current_thread() is not self._thread
                and self._sockpairW is not None and self._state == mqtt._ConnectionState.MQTT_CS_CONNECTED
                and type(self._sock) in _DIRECT_SOCKETS)

    def tls_set_context(self, context: ssl.SSLContext | None = None) -> None:
        """paho's, with the context's sockets made :class:`SerialSSLSocket` (a context given
        with a socket class of its own keeps it, and its packets go by paho's thread)."""
        super().tls_set_context(context)
        made = self._ssl_context
        if made is not None and made.sslsocket_class is ssl.SSLSocket:
            made.sslsocket_class = SerialSSLSocket

    def _publish_direct(self, command: int, packet: bytes | bytearray, mid: int, qos: int,
                        info: mqtt.MQTTMessageInfo | None) -> mqtt.MQTTErrorCode:
        """Queue the publish as paho does and write what the queue's head holds now, if no one
        else is writing; whatever is left (a writer busy, a full socket buffer, a lost link)
        is paho's thread's, woken as paho wakes it."""
        self._queue_and_write(command, packet, mid, qos, info)
        if self._out_packet and self._sockpairW is not None:
            try:
                self._sockpairW.send(b"0")
            except BlockingIOError:         # the pipe is full: paho's thread is woken already
                pass
        return mqtt.MQTT_ERR_SUCCESS

    def _ack_now(self, command: int, packet: bytes | bytearray, mid: int, qos: int,
                 info: mqtt.MQTTMessageInfo | None) -> mqtt.MQTTErrorCode:
        """paho's thread acknowledging a message it read: written in this pass (the only
        thread on the socket then, TLS too); paho would wake itself through its socketpair
        and write it on its next pass. Left queued (a publisher writing, a full buffer), its
        next pass writes it: paho selects for writing while anything is queued."""
        self._queue_and_write(command, packet, mid, qos, info)
        return mqtt.MQTT_ERR_SUCCESS

    def _queue(self, command: int, packet: bytes | bytearray, mid: int, qos: int,
               info: mqtt.MQTTMessageInfo | None) -> None:
        """At the tail of paho's queue, as paho's own ``_packet_queue`` puts it."""
        self._out_packet.append({"command": command, "mid": mid, "qos": qos, "pos": 0,
                                 "to_process": len(packet), "packet": packet, "info": info})

    def _queue_and_write(self, command: int, packet: bytes | bytearray, mid: int, qos: int,
                         info: mqtt.MQTTMessageInfo | None) -> None:
        """Queued, then the queue's head written now unless another thread is writing."""
        self._queue(command, packet, mid, qos, info)
        if self._write_lock.acquire(blocking=False):
            try:
                self._write_head()
            finally:
                self._write_lock.release()

    def _write_head(self) -> None:
        """Holding the write lock: the QoS 1 publishes and PUBACKs at the head of the queue,
        written; stops at anything else (a DISCONNECT, a QoS 0 publish: their callbacks are
        paho's thread's), at a partial write and at any error (paho's thread sees it again)."""
        out = self._out_packet
        wrote = False
        while out:
            head = out[0]
            kind = head["command"] & 0xF0
            if not (kind == mqtt.PUBACK or (kind == mqtt.PUBLISH and head["qos"] > 0)):
                break
            try:
                n = self._sock_send(head["packet"][head["pos"]:])
            except (OSError, AttributeError, ValueError):   # BlockingIOError, a closed socket
                break
            head["to_process"] -= n
            head["pos"] += n
            wrote = wrote or n > 0
            if head["to_process"] > 0:
                break
            out.popleft()
        if wrote:
            with self._msgtime_mutex:       # what paho's keepalive reads
                self._last_msg_out = mqtt.time_func()

    def _packet_write(self) -> mqtt.MQTTErrorCode:
        with self._write_lock:
            self._merge_acks()
            return super()._packet_write()

    def _sock_close(self) -> None:
        with self._write_lock:
            super()._sock_close()

    def reconnect(self) -> mqtt.MQTTErrorCode:
        with self._write_lock:              # a new socket: no publish before its CONNECT
            return super().reconnect()

    def loop_write(self) -> mqtt.MQTTErrorCode:
        # cleared before anything is written: a PUBACK queued after this wakes the loop again,
        # one queued before it is written by this pass
        self._woken = False
        return super().loop_write()

    def _merge_acks(self) -> None:
        """The PUBACKs at the head of the queue (none of them begun) as one packet entry: one
        ``send`` for a batch's acknowledgements, in their order. Only a holder of the write lock
        takes from the head; others append at the tail."""
        out = self._out_packet
        if len(out) < 2 or out[0]["command"] & 0xF0 != mqtt.PUBACK or out[0]["pos"]:
            return
        acks: list[bytes] = []
        while out and out[0]["command"] & 0xF0 == mqtt.PUBACK and not out[0]["pos"] and len(acks) < MERGED:
            acks.append(bytes(out.popleft()["packet"]))
        data = b"".join(acks)
        out.appendleft({"command": mqtt.PUBACK, "mid": 0, "qos": 0, "pos": 0, "to_process": len(data),
                        "packet": data, "info": None})

    def loop_read(self, max_packets: int = 1) -> mqtt.MQTTErrorCode:
        # paho reads one packet a pass and then waits in select, which would not wake for
        # bytes already read into the chunk: read on while the chunk holds any
        rc = super().loop_read(max_packets)
        self._reading_on = True
        try:
            while rc == mqtt.MQTT_ERR_SUCCESS and self._sock is not None and self.buffered():
                rc = super().loop_read(max_packets)
        finally:
            self._reading_on = False
        return rc
