"""The outbox's sender thread survives a publish that paho took as the link went down.

paho 2.x raises from ``MQTTMessageInfo.is_published()`` for such a publish (rc
MQTT_ERR_NO_CONN). A broker SIGKILLed mid-stream produced exactly that in CI: the sender
thread died and every later report of that unit stayed on disk, unsent, until a restart.
The report must instead stay in the outbox and go out again after the reconnect."""

from __future__ import annotations

import threading

import paho.mqtt.client as mqtt

from firmware.link import connect_bus

from .broker import Broker
from .helpers import wait_until


def test_a_publish_lost_as_the_link_goes_down_is_sent_again_after_the_reconnect(tmp_path):
    b = Broker(tmp_path / "mosquitto").start()
    bus = connect_bus(b.url, "table-1/seat-1", outbox_path=tmp_path / "outbox.db")
    try:
        real_publish = bus._client.publish
        lost: list[int] = []

        def publish_as_the_link_drops(topic, payload=None, qos=0, retain=False, properties=None):
            if topic.endswith("/report") and not lost:
                lost.append(1)                     # what paho returns with no connection
                info = mqtt.MQTTMessageInfo(0)
                info.rc = mqtt.MQTT_ERR_NO_CONN
                return info
            return real_publish(topic, payload, qos=qos, retain=retain, properties=properties)

        bus._client.publish = publish_as_the_link_drops
        bus.report("progressive_wager", {"amount": "5"}, key="1/progressive_wager", table="table-1",
                   box=1, round=1)
        wait_until(lambda: lost, 10, "the publish lost to the link")
        bus.report("round_result", {"void": False, "net": "-5"}, key="1/round_result", table="table-1",
                   box=1, round=1)
        assert not bus.wait_drained(1.5), "nothing resends before the link comes back"
        b.kill()                                   # the link really drops, and comes back
        b.start()
        wait_until(bus.drained, 60, "both reports acknowledged after the reconnect")
        assert bus._sender is not None and bus._sender.is_alive()
    finally:
        bus.close()
        b.stop()


def test_table_messages_published_while_the_link_is_down_do_not_break_the_next_publish(tmp_path):
    """A dealer publishing into an outage: paho answers MQTT_ERR_NO_CONN, and the unit's
    next publish must still work (its journal and the seats' catch-up recover the rest)."""
    from firmware.runtime.bus import Message
    b = Broker(tmp_path / "mosquitto").start()
    bus = connect_bus(b.url, "table-1/dealer", role="dealer")
    try:
        real_publish = bus._client.publish
        calls: list[str] = []

        def publish_into_an_outage(topic, payload=None, qos=0, retain=False, properties=None):
            if topic.endswith("/stream") and not calls:
                calls.append(topic)
                info = mqtt.MQTTMessageInfo(0)
                info.rc = mqtt.MQTT_ERR_NO_CONN
                return info
            return real_publish(topic, payload, qos=qos, retain=retain, properties=properties)

        bus._client.publish = publish_into_an_outage
        stream = "betbox/v1/table/table-1/stream"
        for seq in (1, 2):
            bus.publish(Message(stream, "event", "table-1/dealer", seq, {"n": seq}))
        assert bus.published == 2 and calls == [stream]
        assert bus.wait_published(10)          # the lost one is not waited for in vain
    finally:
        bus.close()
        b.stop()


def test_a_committed_report_is_handed_to_paho_by_the_thread_that_committed_it(tmp_path):
    """No hand-off to the sender thread on a report's way out (issue #17.5): the thread
    that committed it publishes it; the sender marks its PUBACK."""
    b = Broker(tmp_path / "mosquitto").start()
    bus = connect_bus(b.url, "table-1/seat-1", outbox_path=tmp_path / "outbox.db")
    try:
        real_publish = bus._client.publish
        by: list[str] = []

        def publish(topic, payload=None, qos=0, retain=False, properties=None):
            if topic.endswith("/report"):
                by.append(threading.current_thread().name)
            return real_publish(topic, payload, qos=qos, retain=retain, properties=properties)

        bus._client.publish = publish
        for rnd in (1, 2):
            bus.report("round_result", {"void": False, "net": "-5"}, key=f"{rnd}/round_result", table="table-1",
                       box=1, round=rnd)
        wait_until(bus.drained, 30, "both reports acknowledged")
        assert by == [threading.current_thread().name] * 2
    finally:
        bus.close()
        b.stop()


def test_a_confirmation_is_written_by_the_sender_not_on_pahos_network_thread(tmp_path):
    """paho's network thread reads and writes every packet of the unit (the dealer's card
    messages at a seat, the PUBACKs): the controller's confirmation mark deletes reports in
    the unit's file, which waits for the journal's lock (a step's fsync) and SQLite. It is
    read and checked on paho's thread and written by the outbox's sender."""
    from firmware.link import topics

    b = Broker(tmp_path / "mosquitto").start()
    bus = connect_bus(b.url, "table-1/seat-1", outbox_path=tmp_path / "outbox.db")
    pit = connect_bus(b.url, "table-1/pit")
    try:
        assert bus.outbox is not None
        real_confirm = bus.outbox.confirm_through
        by: list[str] = []

        def confirm_through(seq: int) -> int:
            by.append(threading.current_thread().name)
            return real_confirm(seq)

        bus.outbox.confirm_through = confirm_through   # type: ignore[method-assign]
        for rnd in (1, 2):
            bus.report("round_result", {"void": False, "net": "-5"}, key=f"{rnd}/round_result", table="table-1",
                       box=1, round=rnd)
        wait_until(bus.drained, 30, "both reports acknowledged")
        pit.publish_raw(topics.confirmed_topic(bus.link_id, bus.unit_id),
                        '{"unit": "table-1/seat-1", "through_seq": 2}')
        wait_until(lambda: bus.outbox is not None and bus.outbox.stats()["confirmed"] == 2, 30, "the mark written")
        assert by == [f"outbox:{bus.unit_id}"]
        assert bus.outbox.pending() == [] and bus.bad_marks == 0
    finally:
        pit.close()
        bus.close()
        b.stop()


def test_a_table_messages_puback_does_not_wake_the_outbox_sender(tmp_path):
    """The sender marks reports' PUBACKs; a table message's PUBACK (the dealer's card at every
    step) has nothing for it: waking it took the interpreter from the unit's next step."""
    from firmware.runtime.bus import Message

    b = Broker(tmp_path / "mosquitto").start()
    bus = connect_bus(b.url, "table-1/dealer", role="dealer", outbox_path=tmp_path / "outbox.db")
    try:
        # the connect's own wake and its online status's PUBACK (a QoS 1 publish of the link's,
        # not a table message) come from paho's thread after connect_bus returns: past first
        wait_until(lambda: not bus._client._out_messages, 10, "the online status acknowledged")
        wakes: list[int] = []
        real_set = bus._wake.set

        def counted_set() -> None:
            wakes.append(1)
            real_set()

        bus._wake.set = counted_set                    # type: ignore[method-assign]
        for seq in range(1, 21):
            bus.publish(Message(topic="betbox/v1/table/table-1/stream", kind="event", sender="table-1/dealer",
                                seq=seq, body={"stream_seq": seq}))
        assert bus.wait_published(10)
        assert wakes == []
        bus.report("alarm", {"alarm": "door", "detail": "open"}, key="alarm/1", table="table-1")
        wait_until(bus.drained, 30, "the report acknowledged")     # its PUBACK still marked
        assert wakes
    finally:
        bus.close()
        b.stop()


def test_a_unit_started_anew_numbers_its_reports_after_what_the_controller_holds_of_its_id(tmp_path):
    """A unit given a new state directory (the pit's remedy for a state that cannot be
    used) under the same unit id: the controller's retained mark says it holds that id's
    reports through 5. The new outbox numbered from 1 again, and the controller refused
    every one of them as a seq reused (money never booked; their marks deleting them once
    repeated). It numbers after the mark instead, and is not behind: it has no older state."""
    from firmware.jackpot.service import JackpotService
    from firmware.link.config import load_link_config

    from .helpers import controller

    b = Broker(tmp_path / "mosquitto").start()
    ctl = controller(tmp_path / "jackpot.db")
    service = JackpotService(ctl, load_link_config({"broker": b.url}), tick=0.02).start()
    unit = "table-1/seat-1"
    try:
        bus = connect_bus(b.url, unit, outbox_path=tmp_path / "old" / "outbox.db")
        for rnd in range(1, 6):
            bus.report("progressive_wager", {"amount": "5"}, key=f"{rnd}/progressive_wager", table="table-1",
                       box=1, round=rnd)
        wait_until(lambda: ctl.marks().get(unit) == 5, 30, "the first life's five reports confirmed")
        bus.close()
        bus = connect_bus(b.url, unit, outbox_path=tmp_path / "new" / "outbox.db")     # started anew
        wait_until(lambda: bus.outbox.last_seq == 5, 30, "the new outbox numbering after the mark")
        for rnd in range(6, 9):
            bus.report("progressive_wager", {"amount": "7"}, key=f"{rnd}/progressive_wager", table="table-1",
                       box=1, round=rnd)
        wait_until(lambda: ctl.marks().get(unit) == 8, 30, "the new life's reports booked")
        wait_until(lambda: bus.outbox.pending() == [], 30, "and confirmed")
        assert ctl.counts["rejected"] == 0 and bus.outbox.behind is None
        bus.close()
    finally:
        service.stop()
        ctl.close()
        b.stop()
