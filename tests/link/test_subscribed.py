"""A link that says it is up is listening (CI found the jackpot controller's ``start()``
returning before its subscriptions reached the broker: a flood published right after it
lost its first reports, which had no subscriber yet). ``MqttBus.start`` waits for the
broker's SUBACK of every subscription, not only its CONNACK. A slow link is made real by a
TCP relay that holds the client's packets after its CONNECT for half a second."""

from __future__ import annotations

import socket
import threading
import time

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from firmware.link.config import config_from_url
from firmware.link.mqtt import MqttBus

from .broker import Broker, free_port

HOLD = 0.5


class SlowUplink:
    """127.0.0.1:port -> the broker; the client's bytes after its first packet (CONNECT)
    wait ``HOLD`` seconds, the broker's answers pass at once."""

    def __init__(self, broker_port: int) -> None:
        self.broker_port = broker_port
        self.port = free_port()
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._sockets: list[socket.socket] = [self._server]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        try:
            while True:
                client, _ = self._server.accept()
                upstream = socket.create_connection(("127.0.0.1", self.broker_port))
                self._sockets += [client, upstream]
                threading.Thread(target=self._pipe, args=(client, upstream, HOLD), daemon=True).start()
                threading.Thread(target=self._pipe, args=(upstream, client, 0.0), daemon=True).start()
        except OSError:
            return                                  # closed

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket, hold: float) -> None:
        first = True
        try:
            while data := src.recv(65536):
                if not first and hold:
                    time.sleep(hold)
                    hold = 0.0
                first = False
                dst.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        for s in self._sockets:
            s.close()


def test_start_returns_once_the_broker_holds_the_subscriptions(tmp_path):
    broker = Broker(tmp_path / "mosquitto").start()
    relay = SlowUplink(broker.port)
    got: list[bytes] = []
    bus = MqttBus(config_from_url(f"mqtt://127.0.0.1:{relay.port}"), "table-1/seat-1")
    bus.subscribe_raw("betbox/v1/test/probe", lambda topic, payload: got.append(payload))
    other = mqtt.Client(CallbackAPIVersion.VERSION2)
    other.connect("127.0.0.1", broker.port)
    other.loop_start()
    try:
        bus.start(10)
        assert bus.connected
        other.publish("betbox/v1/test/probe", b"first", qos=1).wait_for_publish(10)
        deadline = time.monotonic() + 5
        while not got and time.monotonic() < deadline:
            time.sleep(0.02)
        assert got == [b"first"]
    finally:
        other.loop_stop()
        other.disconnect()
        bus.close()
        relay.close()
        broker.stop()
