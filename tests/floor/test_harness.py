"""The floor harness itself: a broker that did not start is never taken for one that did.

A bench run (2026-11-24, docs/floor.md) lost a table for the whole run: its broker's port,
free when the harness picked it, was taken by another process before mosquitto bound it;
mosquitto exited ("Address already in use"), the start check connected to the other
process's listener and passed, and the table's units talked to a stranger."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from firmware.link import topics
from tests.floor.floor import OBSERVER, Floor
from tests.link.broker import Broker, free_port


def test_a_broker_whose_port_another_process_holds_does_not_pass_for_started(tmp_path: Path) -> None:
    port = free_port()
    with socket.create_server(("127.0.0.1", port)) as stranger:
        broker = Broker(tmp_path / "b", port=port)
        try:
            broker.start()
        except RuntimeError as exc:
            assert "Address already in use" in str(exc)
        else:
            raise AssertionError("start() passed a broker that never listened (a stranger answered)")
        finally:
            broker.stop()
        assert stranger.fileno() >= 0


def test_a_floor_moves_a_table_broker_off_a_taken_port_and_the_table_reaches_the_floor(tmp_path: Path) -> None:
    floor = Floor(tmp_path, {"t1": 1})
    taken = floor.tables["t1"].port
    with socket.create_server(("127.0.0.1", taken)):
        floor.start()
    got = threading.Event()
    seen: list[dict] = []
    probe = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=OBSERVER[0])
    probe.username_pw_set(*OBSERVER)
    subscribed = threading.Event()
    probe.on_connect = lambda c, *a: c.subscribe(f"{topics.ROOT}/unit/+/+/report", 1)
    probe.on_subscribe = lambda *a: subscribed.set()

    def on_message(c, u, m) -> None:
        seen.append(json.loads(m.payload))
        got.set()

    probe.on_message = on_message
    try:
        assert floor.tables["t1"].port != taken
        assert floor.tables["t1"].proc is not None and floor.tables["t1"].proc.poll() is None
        probe.connect("127.0.0.1", floor.floor.port)
        probe.loop_start()
        assert subscribed.wait(10)
        bus = floor.bus("t1/seat-1", tmp_path / "seat.db")
        try:
            bus.report("round_result", {"net": "0.00"}, key="r1", table="t1", box=1, round=1)
            assert got.wait(30), "the table's report never reached the floor broker"
        finally:
            bus.close()
        assert seen[0]["unit"] == "t1/seat-1"
    finally:
        probe.loop_stop()
        probe.disconnect()
        floor.stop()
