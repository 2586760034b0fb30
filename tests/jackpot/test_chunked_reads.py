"""The controller's MQTT client reads its socket in chunks (firmware/link/chunked.py): every
packet whole and in order, fewer system calls, nothing of an old connection carried into a
new one."""

from __future__ import annotations

import queue
import socket
import threading
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from firmware.link.chunked import CHUNK, ChunkedClient
from tests.link.broker import Broker
from tests.link.helpers import wait_until


class CountedReads(mqtt.Client):
    """paho's own read, counted (under ChunkedClient in the MRO: one count a recv)."""

    recvs = 0

    def _sock_recv(self, bufsize: int) -> bytes:
        self.recvs += 1
        return super()._sock_recv(bufsize)


class CountedChunks(ChunkedClient, CountedReads):
    pass


def _publish_packet(topic: str, payload: bytes, mid: int | None = None) -> bytes:
    """A PUBLISH as a broker sends it: QoS 0, or QoS 1 with packet id ``mid``."""
    body = len(topic).to_bytes(2, "big") + topic.encode() + (b"" if mid is None else mid.to_bytes(2, "big")) + payload
    n, length = len(body), b""
    while True:
        n, digit = n >> 7, n & 0x7F
        length += bytes([digit | (0x80 if n else 0)])
        if not n:
            return (b"\x30" if mid is None else b"\x32") + length + body


def _serve(server: socket.socket, packets: bytes, replies: list[bytes] | None = None) -> None:
    """A broker's side of one connection: CONNACK, SUBACK, then ``packets`` in one write;
    what the client sends after that goes to ``replies`` until it closes."""
    conn, _ = server.accept()
    with conn:
        conn.recv(1024)                                    # CONNECT
        conn.sendall(b"\x20\x02\x00\x00")
        sub = conn.recv(1024)                              # SUBSCRIBE: its packet id for the SUBACK
        conn.sendall(b"\x90\x03" + sub[2:4] + b"\x01" + packets)
        while data := conn.recv(65536):                    # until the client goes
            if replies is not None:
                replies.append(data)


@pytest.mark.parametrize("chunked", [True, False])
def test_a_burst_is_read_whole_and_in_order_in_few_recv_calls(chunked):
    """1,000 messages in one write from the broker's side: all delivered, in order, intact.
    paho reads each with three recv calls or more; the chunked client one a chunk. Without
    its read-on (paho waits in select after one packet, and the kernel holds nothing more)
    the rest of the chunk would never be delivered."""
    messages = [(f"betbox/v1/t/seat-{i % 7 + 1}/report", bytes([i % 251]) * (i % 300 + 1)) for i in range(1000)]
    server = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=_serve, args=(server, b"".join(_publish_packet(t, p) for t, p in messages)),
                     daemon=True).start()
    client = (CountedChunks if chunked else CountedReads)(CallbackAPIVersion.VERSION2, client_id="chunked-test")
    got: list[tuple[str, bytes]] = []
    client.on_connect = lambda c, *a: c.subscribe("betbox/v1/#")
    client.on_message = lambda c, u, m: got.append((m.topic, m.payload))
    client.connect("127.0.0.1", server.getsockname()[1])
    client.loop_start()
    try:
        wait_until(lambda: len(got) >= len(messages), 20, "every message delivered")
    finally:
        client.disconnect()
        client.loop_stop()
        server.close()
    assert got == messages
    total = sum(len(p) for _, p in messages)
    if chunked:
        # the whole burst is ~190 kB: a few chunks, not thousands of reads
        assert client.recvs <= 2 * (total // CHUNK + 1) + 4, client.recvs
    else:
        assert client.recvs >= 3 * len(messages)


def test_acknowledgements_from_another_thread_all_go_out_in_their_order():
    """manual_ack, as the controller: 3,000 QoS 1 messages, acknowledged from another thread
    in batches (after "the commit") in an order of its own; the broker's side receives
    exactly one PUBACK a message, in the order they were acknowledged (merged into fewer
    writes and wake-ups, none lost to the race between queueing and writing)."""
    n = 3000
    packets = b"".join(_publish_packet("r/x", b"%d" % i, mid=i + 1) for i in range(n))
    replies: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=_serve, args=(server, packets, replies), daemon=True).start()
    client = ChunkedClient(CallbackAPIVersion.VERSION2, client_id="acks", manual_ack=True)
    got: list[mqtt.MQTTMessage] = []
    client.on_connect = lambda c, *a: c.subscribe("r/#", qos=1)
    client.on_message = lambda c, u, m: got.append(m)
    client.connect("127.0.0.1", server.getsockname()[1])
    client.loop_start()
    order: list[int] = []
    try:
        wait_until(lambda: len(got) >= n, 20, "every message delivered")
        assert b"".join(replies) == b""                # manual_ack: nothing acknowledged yet

        def acknowledge() -> None:
            for start in range(0, n, 250):
                batch = got[start:start + 250]
                for m in (batch if start % 500 else reversed(batch)):
                    order.append(m.mid)
                    client.ack(m.mid, m.qos)
        acker = threading.Thread(target=acknowledge)
        acker.start()
        acker.join(20)
        wait_until(lambda: len(b"".join(replies)) >= 4 * n, 20, "every PUBACK at the broker's side")
    finally:
        client.disconnect()
        client.loop_stop()
        server.close()
    data = b"".join(replies)
    pubacks = [data[i:i + 4] for i in range(0, 4 * n, 4)]
    assert pubacks == [b"\x40\x02" + mid.to_bytes(2, "big") for mid in order]
    assert sorted(order) == list(range(1, n + 1))
    assert data[4 * n:] in (b"", b"\xe0\x00")            # then only the DISCONNECT


def test_a_message_larger_than_a_chunk_and_a_reconnect_on_a_real_broker(tmp_path: Path):
    """Through mosquitto: QoS 1 messages of every size up to three chunks, each whole and in
    order; then the broker is killed and started again: the client reads the new
    connection from its start (nothing of the old chunk) and every later message comes."""
    broker = Broker(tmp_path / "mqtt", message_size_limit=4 * CHUNK).start()
    client = ChunkedClient(CallbackAPIVersion.VERSION2, client_id="chunked-sub", clean_session=False)
    got: list[bytes] = []
    subscribed = threading.Event()
    client.on_connect = lambda c, *a: c.subscribe("big/#", qos=1)
    client.on_subscribe = lambda *a: subscribed.set()
    client.on_message = lambda c, u, m: got.append(m.payload)
    client.reconnect_delay_set(0.1, 0.5)
    client.connect("127.0.0.1", broker.port)
    client.loop_start()
    pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="chunked-pub")
    try:
        assert subscribed.wait(10)
        pub.connect("127.0.0.1", broker.port)
        pub.loop_start()
        sizes = [1, 100, CHUNK - 20, CHUNK, CHUNK + 1, 3 * CHUNK, 7, 2 * CHUNK + 13, 5] * 3
        sent = [bytes([k % 256]) * n for k, n in enumerate(sizes)]
        for payload in sent:
            pub.publish("big/x", payload, qos=1).wait_for_publish(10)
        wait_until(lambda: len(got) >= len(sent), 20, "every large message")
        assert got == sent
        pub.disconnect()
        pub.loop_stop()
        broker.kill()
        subscribed.clear()
        broker.start()
        assert subscribed.wait(20), "the client did not reconnect"
        pub.reconnect()
        pub.loop_start()
        later = [b"after-" + bytes([k]) * (k * 997) for k in range(1, 40)]
        for payload in later:
            pub.publish("big/y", payload, qos=1).wait_for_publish(10)
        wait_until(lambda: len(got) >= len(sent) + len(later), 20, "every message after the restart")
        assert got[len(sent):] == later
    finally:
        client.disconnect()
        client.loop_stop()
        pub.disconnect()
        pub.loop_stop()
        broker.stop()



class AckGaps(ChunkedClient):
    """Notes how many messages it had been handed at each write of PUBACKs."""

    got = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.acks_at: list[int] = []

    def _sock_send(self, buf: bytes | bytearray) -> int:
        if buf[:1] == b"\x40":
            self.acks_at.append(self.got)
        return super()._sock_send(buf)


def test_acknowledgements_go_out_while_a_flood_keeps_coming(tmp_path: Path):
    """A floor broker with a backlog for the controller (after a full-speed burst, #16)
    writes on without a pause (no in-flight limit), so the client's socket never runs dry.
    The PUBACKs the ingest thread queues must still go out (and with them the keepalive)
    after each chunk read, not once the flood ends: a bench run saw the floor broker drop
    the controller for its keepalive while it stored ~45,000 reports whose PUBACKs never
    left, then send every one of them again. Each packet is 1,001 bytes, so no 64 kB chunk
    ends on a packet's end and the client cannot stop reading by chance."""
    n = 20000
    broker = Broker(tmp_path / "b", extra="max_inflight_messages 0\n").start()
    sub = AckGaps(CallbackAPIVersion.VERSION2, client_id="flooded", clean_session=False, manual_ack=True)
    to_ack: queue.Queue[int] = queue.Queue()

    def acknowledge() -> None:                     # as the ingest thread: PUBACKs from another thread
        while (mid := to_ack.get()) >= 0:
            sub.ack(mid, 1)

    def on_message(c, u, m) -> None:
        sub.got += 1
        to_ack.put(m.mid)

    subscribed = threading.Event()
    sub.on_subscribe = lambda *a: subscribed.set()
    sub.on_message = on_message
    pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="flood")
    threading.Thread(target=acknowledge, daemon=True).start()
    try:
        sub.connect("127.0.0.1", broker.port)      # the persistent session, then away
        sub.subscribe("r/#", qos=1)
        sub.loop_start()
        assert subscribed.wait(10)
        sub.disconnect()
        sub.loop_stop()
        pub.connect("127.0.0.1", broker.port)
        pub.loop_start()
        payload = b"x" * 991                      # and 10 bytes of header: 1,001 at the subscriber
        assert len(_publish_packet("r/x", payload, mid=1)) == 1001
        infos = [pub.publish("r/x", payload, qos=1) for _ in range(n)]
        for info in infos:
            info.wait_for_publish(60)
        sub.reconnect()                            # the backlog, at once and without a pause
        sub.loop_start()
        wait_until(lambda: sub.got >= n, 120, "every message delivered")
    finally:
        to_ack.put(-1)
        for c in (sub, pub):
            c.disconnect()
            c.loop_stop()
        broker.stop()
    # the most messages taken in between two writes of PUBACKs (a chunk holds 65 of them)
    gaps = [b - a for a, b in zip([0, *sub.acks_at], sub.acks_at, strict=False)]
    assert gaps and max(gaps) < 2000, (f"{max(gaps, default=n)} messages read with no PUBACK written in between "
                                       f"(PUBACK writes at {sub.acks_at[:10]}... of {n})")
