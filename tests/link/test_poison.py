"""One message must never stop a unit (issue #11 findings 6-8, #12 finding 9), on a real
mosquitto: every poison (5,000- and 100,000-deep JSON, NaN, 1e999, huge integers, wrong
types, not UTF-8) on every topic a dealer, a seat or the jackpot controller subscribes to is
counted, logged rate-limited, acknowledged and dropped; the table plays on, the controller
books on, and a restarted controller is not handed the poison again. A forged retained
meter above the pool's maximum and a forged confirmation mark are refused; a credentialed
client cannot take the controller's session."""

from __future__ import annotations

import json
import logging
import threading
from fractions import Fraction
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from firmware import wirejson
from firmware.engine.profile import load_profile
from firmware.jackpot.controller import report
from firmware.jackpot.service import JackpotService
from firmware.jackpot.store import KEEP_REJECTED
from firmware.link import connect_bus, topics
from firmware.link.config import config_from_url
from firmware.link.mqtt import MqttBus
from firmware.link.outbox import Outbox
from firmware.link.presence import ControllerWatch, takes_controller_input
from firmware.link.reporter import DealerReporter, SeatReporter
from firmware.runtime.bus import Message, alarm_topic, console_topic, down_topic, stream_topic, topic_matches, up_topic
from firmware.runtime.spots import seat_spots
from firmware.runtime.wire import ControllerStatus, check_stream_message, check_up_message, controller_input
from firmware.sim import chipset
from firmware.sim.driver import TableDriver
from firmware.sim.table import InProcessTable, TableSpec

from .broker import Broker
from .helpers import controller, wait_until
from .test_runtime_on_link import journal_totals

TABLE = "poison-1"
BOXES = 3
BIG = 256 * 1024            # the broker and the units take this much here: the 100,000-deep poison gets in


# -- the bounded decoder -------------------------------------------------------------------

@pytest.mark.parametrize("payload, says", [
    (b"[" * 5000 + b"]" * 5000, "nested more than"),
    (b"[" * 100000, "nested more than"),
    (b'{"a":' * 5000 + b"1" + b"}" * 5000, "nested more than"),
    (b'{"seq": 1e999}', "out of range"),
    (b'{"seq": -1e999}', "out of range"),
    (b'{"seq": NaN}', "NaN is not a number"),
    (b'{"seq": Infinity}', "Infinity is not a number"),
    (b'{"hit": 1234567890123456789012345678901}', "31 digits"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b'{"a": ', "Expecting value"),
])
def test_the_bounded_decoder_refuses_with_a_reason(payload, says):
    with pytest.raises(wirejson.WireJSONError, match=says):
        wirejson.loads(payload)


def test_the_bounded_decoder_reads_what_the_units_send():
    text = '{"a": ["[[[[", {"b": "\\\\"}, -2.5, 9007199254740992], "c": "}}}\\""}'
    assert wirejson.loads(text) == json.loads(text)
    assert wirejson.depth_of(text) == 3
    assert wirejson.loads(b"[" * 32 + b"]" * 32) is not None


# -- every poison on every topic -------------------------------------------------------------

def poisons(topic: str, sender: str) -> list[bytes]:
    """Messages no unit may die of, addressed to ``topic`` so they pass the topic check."""
    env = {"schema": 1, "topic": topic, "kind": "offer", "sender": sender}
    return [
        b"[" * 5000 + b"]" * 5000,                                    # RecursionError in json
        b"[" * 100000,
        json.dumps(env)[:-1].encode() + b', "seq": 1e999, "body": {}}',   # int(inf)
        json.dumps(env)[:-1].encode() + b', "seq": NaN, "body": {}}',
        json.dumps({**env, "seq": 10 ** 40, "body": {}}).encode(),
        json.dumps({**env, "seq": 1, "body": {"round": 10 ** 30, "box": 10 ** 30, "bets": {"main": "1e999999999"}}}
                   ).encode(),
        json.dumps({**env, "seq": 2.5, "body": {}}).encode(),
        json.dumps({**env, "kind": ["x"], "sender": {}, "seq": "1", "body": []}).encode(),
        json.dumps({**env, "seq": 1, "body": {"box": "x", "round": None, "bets": [1]}}).encode(),
        json.dumps({"schema": 1, "id": "poison-0001", "unit": sender, "table": TABLE, "box": 1, "seq": 10 ** 30,
                    "kind": "progressive_wager", "round": 1, "body": {"amount": "5"}}).encode(),
        json.dumps({"schema": 1, "tx": "t", "command": "confirm_hit", "hit": 10 ** 30, "by": "x"}).encode(),
        json.dumps({"schema": 1, "tx": "t", "command": "confirm_hit", "hit": 2 ** 60, "by": "x"}).encode(),
        json.dumps({"schema": 1, "unit": sender, "through_seq": "all", "state": 7, "pools": [], "token": 1}
                   ).encode(),
        b"null", b"[1, 2]", b'"text"', b"", b"\xff\xfe\x00",
    ]


def subscribed(bus: MqttBus) -> list[str]:
    """Every topic filter the bus subscribes to (the unit's, its raw sinks', sync, confirmed)."""
    out = [p for p, _, _ in bus._subs] + [p for p, _ in bus._raw]
    if bus.sync_topic:
        out.append(bus.sync_topic)
    if bus.outbox is not None:
        out.append(topics.confirmed_topic(bus.link_id, bus.unit_id))
    return out


def raw_client(port: int) -> mqtt.Client:
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="poisoner")
    c.connect("127.0.0.1", port)
    c.loop_start()
    return c


def settle(buses) -> None:
    """Everything queued for each bus before now has reached it (a marker through the broker)."""
    for bus in buses:
        assert bus.send_marker().wait(30), bus.unit_id


def test_every_poison_on_every_topic_is_dropped_and_the_table_and_controller_go_on(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    b = Broker(tmp_path / "mosquitto", message_size_limit=BIG + 1024).start()
    link = config_from_url(b.url, max_payload=BIG)
    ctl = controller(tmp_path / "jackpot.db")
    svc = JackpotService(ctl, link, tick=0.02).start()
    buses: dict[str, MqttBus] = {}

    def bus_factory(unit_id: str, role: str) -> MqttBus:
        outbox = tmp_path / "outbox" / f"{unit_id.replace('/', '-')}.db" if role in ("seat", "dealer") else None
        bus = buses[unit_id] = connect_bus(None, unit_id, link=link, role=role,
                                           outbox_path=outbox, wait=10.0)
        assert bus.connected
        return bus

    def on_unit(unit, bus) -> None:
        if unit.role == "seat":
            SeatReporter(unit, bus)
        elif unit.role == "dealer":     # the controller books by the dealer's round records
            DealerReporter(unit, bus)
        if takes_controller_input(unit):
            ControllerWatch(bus, "main", unit.table).feed(unit)

    profile = load_profile("rws-blackjack-switch")
    spec = TableSpec(TABLE, profile, seed=91, state_dir=tmp_path / "table", boxes=BOXES)
    table = InProcessTable(spec, chipset.registry(BOXES, len(seat_spots(profile))), bus_factory=bus_factory,
                           on_unit=on_unit)
    driver = TableDriver(table, spec.seed)
    driver.boot()
    raw = raw_client(b.port)
    try:
        for _ in range(3):
            driver.play_round()
        # every topic anyone subscribes to, wildcards made concrete
        concrete = [stream_topic(TABLE), alarm_topic(TABLE), console_topic(TABLE),
                    topics.jackpot_status_topic("main"), topics.meter_topic("main"),
                    topics.command_topic("main"), topics.response_topic("main")]
        for box in range(1, BOXES + 1):
            concrete += [up_topic(TABLE, box), down_topic(TABLE, box)]
        everyone = [*buses.values(), svc.bus]
        for bus in everyone:
            concrete += [topics.status_topic(bus.unit_id), topics.report_topic(bus.unit_id)]
            concrete += [t for t in subscribed(bus) if "+" not in t and "#" not in t]
        concrete = sorted(set(concrete))
        for bus in everyone:
            for pattern in subscribed(bus):
                assert any(topic_matches(pattern, t) for t in concrete), (bus.unit_id, pattern)
        sent = 0
        for topic in concrete:
            sender = topics.unit_from_topic(topic, topic.rsplit("/", 1)[-1]) or f"{TABLE}/seat-1"
            for payload in poisons(topic, sender):
                info = raw.publish(topic, payload, qos=1)
                info.wait_for_publish(10)
                assert info.is_published(), topic
                sent += 1
        settle(everyone)
        # every paho thread alive, every callback survived; each poison counted somewhere
        for bus in everyone:
            assert bus._client._thread is not None and bus._client._thread.is_alive(), bus.unit_id
            assert bus.dropped > 0 or bus is svc.bus, bus.unit_id
        # the marker came back through paho's thread; the reports it queued before it are
        # stored by the ingest thread after (group commit): wait for them, not only the marker
        wait_until(lambda: ctl.counts["rejected"] >= len(poisons("x", "y")) * BOXES, 30,
                   "every seat's poisoned reports rejected by the controller")
        assert svc.failed == 0
        # the table plays on and reports; the controller books on
        before = report(ctl.db)["pools"]["main"]["meters"]["wagers"]
        rounds = table.dealer.round_no
        for _ in range(6):
            driver.play_round()
        table.settle()
        seat_buses = [bus for bus in buses.values() if bus.outbox is not None]
        wait_until(lambda: all(ctl.marks().get(bus.unit_id) == bus.outbox.last_seq for bus in seat_buses),
                   60, "every seat's reports at the controller")
        data = report(ctl.db)
        wagers, wagers_in, *_ = journal_totals(spec.state_dir, table.seats)
        assert data["pools"]["main"]["meters"]["wagers"] == wagers > before
        assert Fraction(data["pools"]["main"]["meters"]["wagers_in"]) == wagers_in
        assert table.dealer.round_no == rounds + 6 and table.dealer.phase == "idle"
        # counted in full, logged rate-limited: no flood in the log
        assert len(caplog.records) < sent / 2, len(caplog.records)
        # the controller restarted (its persistent session) is not handed the poison again
        rejected = ctl.counts["rejected"]
        svc.stop()
        svc = JackpotService(ctl, link, tick=0.02).start()
        assert svc.bus.connected
        settle([svc.bus])
        assert (svc.bus.dropped, svc.failed, ctl.counts["rejected"]) == (0, 0, rejected)
        # and the stored rejections are the newest only, all of them counted
        assert ctl.db.execute("SELECT COUNT(*) FROM rejected").fetchone()[0] <= KEEP_REJECTED
        assert report(ctl.db)["rejected"]["count"] == rejected
    finally:
        raw.loop_stop()
        raw.disconnect()
        table.close()
        for bus in buses.values():
            bus.close()
        svc.stop()
        ctl.close()
        b.stop()


# -- identity on the broker (finding 7) ------------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "mqtt"
USERS = {"table-1/seat-1": "pw1", "table-1/seat-2": "pw2", "jackpot/main": "pwj"}


def take_over(port: int, client_id: str, username: str, password: str) -> None:
    """A client with someone's credentials connects with ``client_id``, clean session, and goes."""
    connected = threading.Event()
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=True)
    c.username_pw_set(username, password)
    c.on_connect = lambda cl, u, f, rc, p: connected.set() if not rc.is_failure else None
    c.connect("127.0.0.1", port)
    c.loop_start()
    try:
        assert connected.wait(10), f"{username} as {client_id} was not let in at all"
    finally:
        c.disconnect()
        c.loop_stop()


def test_a_seats_credentials_cannot_take_the_controllers_client_id_nor_discard_its_queue(tmp_path):
    b = Broker(tmp_path / "mosquitto", acl=(DOCS / "acl").read_text(), users=USERS).start()
    ctl = controller(tmp_path / "jackpot.db")
    jlink = config_from_url(b.url, username="jackpot/main", password="pwj", allow_insecure=True)
    svc = JackpotService(ctl, jlink, tick=0.02).start()
    seat = connect_bus(b.url, "table-1/seat-1", outbox_path=tmp_path / "seat.db", username="table-1/seat-1",
                       password="pw1", allow_insecure=True)
    ids = ("betbox-jackpot-main", "jackpot/main", svc.bus._client._client_id.decode())
    try:
        assert svc.bus.connected and seat.connected
        seat.report("progressive_wager", {"amount": "10"}, key="1/w", table="table-1", box=1, round=1)
        wait_until(lambda: ctl.marks().get("table-1/seat-1") == 1, 20, "the first report at the controller")
        for client_id in ids:
            take_over(b.port, client_id, "table-1/seat-2", "pw2")
        settle([svc.bus, seat])
        assert (svc.bus.connects, seat.connects) == (1, 1)       # nobody was knocked off
        # the controller away: what the seat reports meanwhile waits in its session at the broker
        svc.stop()
        for rnd in (2, 3, 4):
            seat.report("progressive_wager", {"amount": "10"}, key=f"{rnd}/w", table="table-1", box=1, round=rnd)
        wait_until(seat.drained, 20, "the seat's reports at the broker")
        for client_id in ids:                                   # a clean-session takeover attempt
            take_over(b.port, client_id, "table-1/seat-2", "pw2")
        svc = JackpotService(ctl, jlink, tick=0.02).start()
        # the seat does not reconnect (it never resends): only the queued session can deliver
        wait_until(lambda: ctl.marks().get("table-1/seat-1") == 4, 20, "the queued reports at the controller")
        assert seat.connects == 1
        # all four at the controller (held until the dealer's record corroborates them)
        assert report(ctl.db)["held"]["seat"] == 4
    finally:
        seat.close()
        seat.outbox.close()
        svc.stop()
        ctl.close()
        b.stop()


# -- the sender field protects nothing without the ACL (finding 8) ----------------------------

def test_a_forged_meter_above_the_pools_maximum_is_refused_and_the_last_good_one_stays(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    b = Broker(tmp_path / "mosquitto").start()
    ctl = controller(tmp_path / "jackpot.db")
    svc = JackpotService(ctl, config_from_url(b.url), tick=0.02).start()
    dealer = connect_bus(b.url, "table-1/dealer", role="dealer")
    bounded = connect_bus(b.url, "table-1/seat-1")
    raw = raw_client(b.port)
    try:
        watch = ControllerWatch(dealer, "main", "table-1")
        states: list[ControllerStatus] = []
        watch.on_state(states.append)
        wait_until(lambda: watch.available and watch.state().meter is not None, 20, "the controller's meter")
        real = watch.state().meter
        forged = json.loads(json.dumps(watch.meter))
        forged["pools"]["main"]["amount"] = "987654.32"            # above the pool's 250,000
        info = raw.publish(topics.meter_topic("main"), json.dumps(forged), qos=1, retain=True)
        info.wait_for_publish(10)
        settle([dealer])
        assert all(s.meter != "987654.32" for s in states)
        assert watch.state().meter == real and watch.refused == 1
        assert "above the pool's maximum 250000" in caplog.text
        # the maximum forged too: a unit that knows its pool's maximum refuses it still
        forged["pools"]["main"]["maximum"] = "1000000.00"
        info = raw.publish(topics.meter_topic("main"), json.dumps(forged), qos=1, retain=True)
        info.wait_for_publish(10)
        own = ControllerWatch(bounded, "main", "table-1", maximum=Fraction(250000))
        settle([bounded])
        assert own.refused == 1 and own.state().meter is None
    finally:
        raw.loop_stop()
        raw.disconnect()
        for bus in (dealer, bounded):
            bus.close()
        svc.stop()
        ctl.close()
        b.stop()


def test_a_forged_confirmation_mark_never_deletes_a_report_that_was_not_sent(tmp_path):
    b = Broker(tmp_path / "mosquitto").start()
    unit = "table-1/seat-1"
    outbox = Outbox(tmp_path / "seat.db", unit)
    for rnd in (1, 2, 3):
        outbox.put(topics.report_topic(unit), "progressive_wager", {"amount": "5"}, key=f"{rnd}/w",
                   extra={"table": "table-1", "box": 1, "round": rnd})
    link = config_from_url(b.url)
    # the seat's link up, its outbox sender not started: these three reports are not sent
    bus = MqttBus(link, unit, outbox=outbox)
    bus._client.connect_async("127.0.0.1", b.port)
    bus._client.loop_start()
    raw = raw_client(b.port)
    ctl = svc = None
    try:
        assert bus.wait_connected(10)
        settle([bus])           # its subscriptions in place (a marker back): no mark goes unheard
        mark = topics.confirmed_topic("main", unit)
        # (a mark past everything the outbox ever numbered is the other case: the unit is
        # behind, tests/runtime/test_behind.py; here the reports are numbered, never sent)
        for body in ({"schema": 1, "unit": unit, "through_seq": 3},
                     {"schema": 1, "unit": "table-1/seat-2", "through_seq": 2},
                     {"schema": 1, "unit": unit, "through_seq": 1e999}):
            info = raw.publish(mark, json.dumps(body), qos=1)
            info.wait_for_publish(10)
        settle([bus])
        assert outbox.stats()["waiting"] == 3 and outbox.stats()["confirmed"] == 0
        assert bus.bad_marks == 3 and outbox.behind is None
        bus._client.disconnect()
        bus._client.loop_stop()
        # the seat as it runs, with a controller: every report booked, then confirmed
        ctl = controller(tmp_path / "jackpot.db")
        svc = JackpotService(ctl, link, tick=0.02).start()
        bus = MqttBus(link, unit, outbox=outbox).start()
        wait_until(lambda: ctl.marks().get(unit) == 3, 20, "the three reports at the controller")
        wait_until(lambda: outbox.stats()["confirmed"] == 3, 20, "the controller's mark at the seat")
        assert report(ctl.db)["held"]["seat"] == 3      # booked once the dealer's record agrees
    finally:
        raw.loop_stop()
        raw.disconnect()
        bus.close()
        outbox.close()
        if svc is not None:
            svc.stop()
            ctl.close()
        b.stop()


# -- #12 finding 9: junk is counted in full, kept and logged sparsely ---------------------------

def test_a_flood_of_junk_reports_keeps_the_newest_rejections_counts_all_and_logs_sparsely(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="betbox.jackpot")
    ctl = controller(tmp_path / "jackpot.db")
    n = KEEP_REJECTED + 500
    try:
        for i in range(n):
            assert ctl.ingest(topics.report_topic("table-1/seat-1"), b"junk %d" % i).status == "rejected"
        kept = [e for (e,) in ctl.db.execute("SELECT excerpt FROM rejected ORDER BY id")]
        assert kept == [f"junk {i}" for i in range(n - KEEP_REJECTED, n)]          # the newest
        assert report(ctl.db)["rejected"] == {"count": n, "by_reason": {"not_json": n}}
        lines = [r.getMessage() for r in caplog.records if "rejected a message" in r.getMessage()]
        assert len(lines) == 10 + 1 and lines[-1].endswith("(1000 so far)")   # the first ten, every 1000th
    finally:
        ctl.close()
    # counted across a restart too
    ctl = controller(tmp_path / "jackpot.db")
    try:
        ctl.ingest(topics.report_topic("table-1/seat-1"), b"junk again")
        assert report(ctl.db)["rejected"]["count"] == n + 1
    finally:
        ctl.close()


# -- numbers on the wire: bounded, with the reason --------------------------------------------

ENVELOPE = {"schema": 1, "topic": "betbox/v1/table/t/seat/1/up", "kind": "offer", "sender": "t/seat-1",
            "seq": 1, "body": {}}


@pytest.mark.parametrize("change, says", [
    ({"seq": 2 ** 53 + 1}, "seq must be a whole number from 0 to 9007199254740992"),
    ({"seq": 1.5}, "seq must be a whole number"),
    ({"seq": True}, "seq must be a whole number"),
    ({"kind": ["x"]}, "kind must be a string"),
    ({"body": [["round", 1]]}, "body must be a mapping"),
])
def test_a_message_envelope_out_of_range_is_refused_with_its_reason(change, says):
    with pytest.raises(ValueError, match=says):
        Message.from_json(json.dumps({**ENVELOPE, **change}))


def test_rounds_boxes_and_amounts_in_messages_are_bounded_before_they_are_converted():
    assert "round must be a whole number from 0 to" in check_up_message("offer", {"round": 10 ** 17, "bets": {}})
    problem = check_up_message("offer", {"round": 1, "bets": {"main": "1e999999999"}})   # no billion-digit number
    assert "is not an amount (0 to 1000000000)" in problem
    assert "is not an amount" in check_up_message("offer", {"round": 1, "bets": {"main": 10 ** 12}})
    assert check_up_message("offer", {"round": 1, "bets": {"main": "25.50", "progressive": 5}}) is None
    assert "must be a list of boxes" in check_stream_message(
        "bets_closing", {"stream_seq": 1, "round": 1, "waiting": [10 ** 6]}, load_profile)
    with pytest.raises(ValueError, match="is not an amount"):
        controller_input({"link": "up", "meter": "9" * 41, "pending": False})
