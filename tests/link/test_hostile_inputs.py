"""Rejected, logged and harmless: a table whose dealer and seats each run on their own
MqttBus on a real mosquitto keeps playing while a raw client (no ACL on this broker) sends
undecodable JSON, an oversized payload, a message whose inner topic is not the MQTT topic
it came on, a stream message forged as `<table>/seat-2` and an up message for box 3 from
seat-2. The link drops the first three unread (logged, counted), the units reject the
forgeries before journalling them, and every round settles exactly as on an undisturbed
twin on the in-process bus."""

from __future__ import annotations

import json
import logging

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from firmware.engine.profile import load_profile
from firmware.link import connect_bus
from firmware.link.config import config_from_url
from firmware.runtime.bus import Message, down_topic, stream_topic, up_topic
from firmware.runtime.journal import open_readonly
from firmware.runtime.spots import seat_spots
from firmware.sim import chipset
from firmware.sim.driver import TableDriver
from firmware.sim.table import InProcessTable, TableSpec

TABLE = "hostile-1"
BOXES = 3
LIMIT = 16 * 1024              # the units' max_payload here (the broker takes up to 64 KiB)


def make_driver(tmp_path, name: str, bus_factory=None) -> TableDriver:
    profile = load_profile("rws-blackjack")
    spec = TableSpec(TABLE, profile, seed=77, state_dir=tmp_path / name, boxes=BOXES)
    table = InProcessTable(spec, chipset.registry(BOXES, len(seat_spots(profile))), bus_factory=bus_factory)
    driver = TableDriver(table, spec.seed)
    driver.boot()
    return driver


def settlements(driver: TableDriver) -> dict[int, list]:
    """Every seat's results as its own journal holds them."""
    out = {}
    for box in range(1, BOXES + 1):
        j = open_readonly(driver.table.spec.state_dir / f"seat-{box}" / "journal.db")
        try:
            out[box] = [(r.round, r.body["body"]["settlement"]) for r in j.records()
                        if r.dir == "out" and r.kind == "result"]
        finally:
            j.close()
    return out


def test_hostile_messages_are_dropped_or_rejected_and_play_goes_on(broker, tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    link = config_from_url(broker.url, max_payload=LIMIT)
    buses = {}

    def bus_factory(unit_id: str, role: str):
        bus = buses[unit_id] = connect_bus(None, unit_id, link=link, role=role, wait=10.0)
        assert bus.connected
        return bus

    twin = make_driver(tmp_path, "twin")
    live = make_driver(tmp_path, "live", bus_factory)
    raw = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="hostile")
    raw.connect("127.0.0.1", broker.port)
    raw.loop_start()

    def send(topic: str, payload: bytes | str) -> None:
        raw.publish(topic, payload, qos=1).wait_for_publish(10)

    stream, up3 = stream_topic(TABLE), up_topic(TABLE, 3)
    try:
        for rnd in range(1, 9):
            twin.play_round()
            live.play_round()
            if rnd in (2, 5):
                send(stream, b'{"schema": 1, "topic": ')                       # undecodable
                send(up3, "[1, 2, 3]")                                          # JSON, not a message
                send(stream, b"x" * (LIMIT + 1000))                             # oversized
                send(up3, b"{" * (LIMIT + 1))
                send(stream, Message(down_topic(TABLE, 1), "catch_up", f"{TABLE}/dealer", 999,
                                     {"box": 1}).to_json())                     # inner topic differs
                send(stream, Message(stream, "bets_open", f"{TABLE}/seat-2", 1,
                                     {"stream_seq": 10 ** 6, "round": rnd + 1}).to_json())
                send(up3, Message(up3, "locked", f"{TABLE}/seat-2", 10 ** 6,
                                  {"box": 3, "round": rnd, "bets": {"main": "500"}}).to_json())
                live.table.settle()          # through the broker: every message above is handled
        assert settlements(live) == settlements(twin)
        assert all(len(s) >= 3 for s in settlements(live).values()), "the seats did play"
        dealer = live.table.dealer
        seat_buses = [buses[f"{TABLE}/seat-{box}"] for box in range(1, BOXES + 1)]
        dealer_bus = buses[f"{TABLE}/dealer"]
        for bus in seat_buses:                 # twice: undecodable, oversized, misaddressed
            assert (bus.oversized, bus.dropped) == (2, 6), bus.unit_id
        assert (dealer_bus.oversized, dealer_bus.dropped) == (2, 4)
        # the forgeries reached the units and were refused there, never journalled
        for box in (1, 3):                     # seat-2's own bus does not hand it its "own" message
            seat = live.table.seats[box]
            assert seat.rejected == 2
            assert all("only 'hostile-1/dealer' writes the table stream" in r["problem"]
                       for r in seat.rejections)
        assert live.table.seats[2].rejected == 0
        assert dealer.rejected == 2
        assert all("only 'hostile-1/seat-3' speaks for box 3" in r["problem"] for r in dealer.rejections)
        for box in (1, 3):
            j = open_readonly(live.table.spec.state_dir / f"seat-{box}" / "journal.db")
            try:
                # the forgeries are journalled only as evidence of what was rejected, never taken
                forged = [r for r in j.records() if r.dir == "in" and f'"{TABLE}/seat-2"' in json.dumps(r.body)]
                assert forged and all(r.kind == "rejected" for r in forged), forged
                assert all("writes the table stream" in r.body["problem"] for r in forged)
            finally:
                j.close()
        text = caplog.text
        assert f"dropped a {LIMIT + 1000}-byte message on {stream} unread (limit {LIMIT} bytes)" in text
        assert "dropped an undecodable message" in text and "dropped a message for" in text
    finally:
        raw.loop_stop()
        raw.disconnect()
        live.table.close()
        twin.table.close()
        for bus in buses.values():
            bus.close()
