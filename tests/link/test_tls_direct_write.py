"""A unit's step writes its own QoS 1 packet on the tables' TLS link too (``mqtts://``), and
the one SSL object is never in OpenSSL on two threads at once (firmware/link/chunked.py:
:class:`SerialSSLSocket`). A real mosquitto with a TLS listener and client certificates (a
throwaway CA made with the openssl command)."""

from __future__ import annotations

import shutil
import threading

import paho.mqtt.client as mqtt
import pytest

from firmware.link import connect_bus
from firmware.link.chunked import SerialSSLSocket
from firmware.runtime.bus import Message

from .broker import Broker
from .helpers import STREAM, make_pki, stream_message, until_subscribed, wait_until, writers_of

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")

FLOOD = "betbox/v1/t/flood"


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    make_pki(d, {"unit": "t:unit"})
    b = Broker(d / "mosquitto", tls={"ca": d / "ca.pem", "cert": d / "broker.pem", "key": d / "broker.key"}).start()
    tls = {"ca": str(d / "ca.pem"), "cert": str(d / "unit.pem"), "key": str(d / "unit.key")}
    yield f"mqtts://127.0.0.1:{b.port}", tls
    b.stop()


def test_over_tls_the_step_writes_its_message_itself_through_a_serial_ssl_socket(tls_broker):
    url, tls = tls_broker
    seat = connect_bus(url, "t/seat-1", tls=tls)
    got: list[Message] = []
    seat.subscribe(STREAM, got.append, "t/seat-1")
    dealer = connect_bus(url, "t/dealer", role="dealer", tls=tls)
    assert dealer.connected and type(dealer._client._sock) is SerialSSLSocket
    until_subscribed(dealer, seat, got)
    try:
        with writers_of(dealer._client, mqtt.PUBLISH) as writers:
            for n in range(1, 21):
                dealer.publish(stream_message(n))
            assert dealer.wait_published(10)                # every one PUBACKed by the broker
            wait_until(lambda: sum(1 for m in got if m.seq) >= 20, 10, "the messages at the seat", step=0.001)
    finally:
        dealer.close()
        seat.close()
    assert [m.seq for m in got if m.seq] == list(range(1, 21))      # all, once, in order
    assert writers == [threading.current_thread().name] * 20, writers


def test_a_tls_write_waits_while_the_ssl_object_is_in_use_on_another_thread(tls_broker):
    """paho's thread inside a read (or ``pending()``) holds the socket's turn: a step's write
    does not go into OpenSSL beside it; it goes once the turn is given back."""
    url, tls = tls_broker
    seat = connect_bus(url, "t/seat-1", tls=tls)
    got: list[Message] = []
    seat.subscribe(STREAM, got.append, "t/seat-1")
    dealer = connect_bus(url, "t/dealer", role="dealer", tls=tls)
    until_subscribed(dealer, seat, got)
    sock = dealer._client._sock
    held, release, published = threading.Event(), threading.Event(), threading.Event()

    def reading() -> None:                                  # as paho's thread in SSL_read
        with sock._turn:
            held.set()
            release.wait(10)

    def stepping() -> None:
        dealer.publish(stream_message(1))
        published.set()
    try:
        with writers_of(dealer._client, mqtt.PUBLISH) as writers:
            other = threading.Thread(target=reading, name="reader")
            other.start()
            assert held.wait(5)
            step = threading.Thread(target=stepping, name="step")
            step.start()
            assert not published.wait(0.3)                  # the step waits for the turn ...
            assert writers == [] and not any(m.seq for m in got)
            release.set()
            other.join(5)
            step.join(5)
            assert published.is_set()                       # ... and writes once it is its
            assert dealer.wait_published(10)
            wait_until(lambda: any(m.seq for m in got), 10, "the message at the seat", step=0.001)
    finally:
        release.set()
        dealer.close()
        seat.close()
    assert writers == ["step"], writers
    assert [m.seq for m in got if m.seq] == [1]


def test_over_tls_the_steps_writes_and_pahos_reads_of_one_socket_lose_and_garble_nothing(tls_broker):
    """The dealer's client reads a flood (another unit's 1,500 messages) while its step
    writes 400 messages of its own: every message arrives whole, once, in order, on the
    one connection (a garbled TLS record would drop it)."""
    url, tls = tls_broker
    seat = connect_bus(url, "t/seat-1", tls=tls)
    got: list[Message] = []
    seat.subscribe(STREAM, got.append, "t/seat-1")
    dealer = connect_bus(url, "t/dealer", role="dealer", tls=tls)
    flood: list[Message] = []
    dealer.subscribe(FLOOD, flood.append, "t/dealer")
    flooder = connect_bus(url, "t/seat-2", tls=tls)
    try:
        until_subscribed(dealer, seat, got)
        for _ in range(100):                                # until the dealer's subscription is in
            flooder.publish(Message(FLOOD, "event", "t/seat-2", 0, {"round": 1, "stream_seq": 0}))
            if dealer.wait_subscribed(0.1) and flooder.wait_published(1) and flood:
                break
        wait_until(lambda: flood, 10, "the dealer subscribed")
        connects = dealer.connects

        def flooding() -> None:
            for n in range(1, 1501):
                flooder.publish(Message(FLOOD, "event", "t/seat-2", n, {"round": 1, "stream_seq": n, "pad": "x" * 300}))
        other = threading.Thread(target=flooding)
        other.start()
        for n in range(1, 401):
            dealer.publish(stream_message(n))
        other.join(30)
        assert dealer.wait_published(20) and flooder.wait_published(20)
        wait_until(lambda: sum(1 for m in got if m.seq) >= 400, 20, "the dealer's messages at the seat", step=0.005)
        wait_until(lambda: sum(1 for m in flood if m.seq) >= 1500, 20, "the flood at the dealer", step=0.005)
        assert dealer.connects == connects                  # one connection all along
    finally:
        flooder.close()
        dealer.close()
        seat.close()
    assert [m.seq for m in got if m.seq] == list(range(1, 401))
    assert [m.seq for m in flood if m.seq] == list(range(1, 1501))
    assert all(m.body["pad"] == "x" * 300 for m in flood if m.seq)
