"""The link and the controller against a real mosquitto: nothing lost, nothing counted
twice, through broker, seat and controller crashes; bad messages harmless."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from fractions import Fraction
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from firmware import __version__
from firmware.jackpot.controller import report
from firmware.jackpot.service import JackpotService
from firmware.link import connect_bus, topics
from firmware.link.config import config_from_url
from firmware.link.presence import UNAVAILABLE_CONTROLLER, ControllerWatch
from tests.link.broker import Broker
from tests.link.helpers import Expected, Sniffer, check_accounting, controller, seat_script, send_dealer, wait_until
from tests.link.schema import validate_all

ROOT = Path(__file__).resolve().parents[2]


def send(bus, unit: str, script) -> None:
    table, box = unit.split("/")[0], int(unit.rsplit("-", 1)[1])
    for kind, body, rnd, key in script:
        bus.report(kind, body, key=key, table=table, box=box, round=rnd)


def dealer(url: str, table: str, tmp_path: Path, **kw):
    """The table's dealer link: its round records are what the controller books the seats by."""
    return connect_bus(url, f"{table}/dealer", outbox_path=tmp_path / f"{table}-dealer.db", role="dealer", **kw)


def all_confirmed(ctl, expected: Expected) -> bool:
    marks = ctl.marks()
    return all(marks.get(u) == n for u, n in expected.events.items())


def test_many_seats_accounting_equals_what_they_sent_and_traffic_matches_the_asyncapi(broker, tmp_path):
    sniffer = Sniffer(broker.url)
    ctl = controller(tmp_path / "jackpot.db")
    svc = JackpotService(ctl, config_from_url(broker.url)).start()
    expected = Expected()
    buses, threads = [], []
    for t in (1, 2):
        scripts = {}
        for box in (1, 2, 3):
            unit = f"table-{t}/seat-{box}"
            script, exp = seat_script(unit, 120, seed=t * 10 + box, meter_hits=True)
            scripts[box] = script
            expected.add(exp)
            bus = connect_bus(broker.url, unit, outbox_path=tmp_path / f"{t}-{box}.db", config={"u": unit})
            buses.append(bus)
            threads.append(threading.Thread(target=send, args=(bus, unit, script)))
        buses.append(dealer(broker.url, f"table-{t}", tmp_path))
        send_dealer(buses[-1], scripts, expected)
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wait_until(lambda: all_confirmed(ctl, expected), 60, "every report at the controller")
    data = report(ctl.db)
    check_accounting(data, expected)
    assert sum(u["duplicates"] for u in data["units"].values()) == 0
    # the outboxes are emptied by the controller's confirmation marks
    wait_until(lambda: all(b.outbox.stats()["confirmed"] == b.outbox.last_seq for b in buses), 20,
               "the confirmation marks at every seat")
    for bus in buses:
        assert bus.outbox.pending() == []
        bus.close()
    svc.stop()
    wait_until(lambda: sniffer.json("/jackpot/main/status") and
               sniffer.json("/jackpot/main/status")[-1]["state"] == "offline", 10, "the controller's goodbye")
    seen = validate_all(sniffer.messages)
    sniffer.close()
    assert seen["unitReport"] >= sum(expected.events.values())
    for channel in ("unitStatus", "jackpotStatus", "jackpotMeter", "jackpotConfirmed"):
        assert seen.get(channel), channel
    births = [json.loads(p) for t, p, _ in sniffer.messages
              if t == topics.status_topic("table-1/seat-1") and json.loads(p)["state"] == "online"]
    assert births and births[0]["firmware"] == __version__ and len(births[0]["config_hash"]) == 16
    ctl.close()


def test_broker_killed_and_restarted_mid_stream_loses_nothing_and_counts_nothing_twice(tmp_path):
    b = Broker(tmp_path / "mosquitto").start()
    ctl = controller(tmp_path / "jackpot.db")
    svc = JackpotService(ctl, config_from_url(b.url)).start()
    expected = Expected()
    units = [f"table-1/seat-{n}" for n in (1, 2, 3)]
    scripts = {}
    buses = {}
    for i, unit in enumerate(units):
        scripts[unit], exp = seat_script(unit, 150, seed=100 + i)
        expected.add(exp)
        buses[unit] = connect_bus(b.url, unit, outbox_path=tmp_path / f"{i}.db")
    halves = {u: len(s) // 2 for u, s in scripts.items()}
    table_dealer = dealer(b.url, "table-1", tmp_path)
    send_dealer(table_dealer, {int(u[-1]): scripts[u] for u in units}, expected)
    for u in units:
        send(buses[u], u, scripts[u][:halves[u]])
    # kill while reports are still flowing
    wait_until(lambda: sum(ctl.marks().values()) >= 50, 30, "the first reports at the controller")
    b.kill()
    for u in units:                       # the seats keep reporting while the broker is dead
        send(buses[u], u, scripts[u][halves[u]:])
    assert not all_confirmed(ctl, expected)
    b.start()
    wait_until(lambda: all_confirmed(ctl, expected), 90, "every report after the broker's restart")
    data = report(ctl.db)
    check_accounting(data, expected)
    for u in units:
        assert data["units"][u]["missing_ranges"] == []
    for bus in [*buses.values(), table_dealer]:
        bus.close()
    svc.stop()
    ctl.close()
    b.stop()


def test_a_seat_process_killed_mid_stream_resends_from_its_outbox_after_restart(broker, tmp_path):
    ctl = controller(tmp_path / "jackpot.db")
    svc = JackpotService(ctl, config_from_url(broker.url)).start()
    unit = "table-9/seat-4"
    script, expected = seat_script(unit, 80, seed=7)
    table_dealer = dealer(broker.url, "table-9", tmp_path)
    send_dealer(table_dealer, {4: script}, expected)
    outbox = tmp_path / "seat.db"
    sniffer = Sniffer(broker.url, topics.status_topic(unit))
    cmd = [sys.executable, str(ROOT / "tests" / "link" / "seat_proc.py"), broker.url, unit, str(outbox),
           "80", "7", "0.01"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: ctl.marks().get(unit, 0) >= 20, 30, "the seat's first reports")
        proc.kill()
        proc.wait(10)
        got = ctl.marks()[unit]
        assert got < len(script)
        # its will says it is gone
        wait_until(lambda: sniffer.json("/status") and sniffer.json("/status")[-1]["state"] == "offline",
                   60, "the seat's last will")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        wait_until(lambda: ctl.marks().get(unit) == len(script), 60, "every report after the seat's restart")
        assert proc.stdout.readline().strip() == "queued"
    finally:
        proc.kill()
        proc.wait(10)
    births = [m for m in sniffer.json("/status") if m["state"] == "online"]
    assert len({m["boot_id"] for m in births}) == 2        # a new boot id for the new life
    wait_until(lambda: all_confirmed(ctl, expected), 30, "the dealer's records")
    check_accounting(report(ctl.db), expected)
    table_dealer.close()
    sniffer.close()
    svc.stop()
    ctl.close()


def test_the_controller_restarted_keeps_its_meters_and_gets_what_was_sent_meanwhile(broker, tmp_path):
    db = tmp_path / "jackpot.db"
    ctl = controller(db)
    svc = JackpotService(ctl, config_from_url(broker.url)).start()
    unit = "table-5/seat-1"
    script, expected = seat_script(unit, 100, seed=3, meter_hits=True)
    bus = connect_bus(broker.url, unit, outbox_path=tmp_path / "seat.db")
    table_dealer = dealer(broker.url, "table-5", tmp_path)
    send_dealer(table_dealer, {1: script}, expected)
    send(bus, unit, script[:100])
    wait_until(lambda: ctl.marks().get(unit) == 100 and all_confirmed(ctl, Expected(events={
        table_dealer.unit_id: table_dealer.outbox.last_seq})), 30, "the first 100 reports and the dealer's")
    before = report(ctl.db)
    svc.stop()
    ctl.close()
    send(bus, unit, script[100:])               # published while the controller is down
    wait_until(bus.drained, 30, "the broker's PUBACKs for the rest")
    ctl = controller(db)
    after_restart = report(ctl.db)
    assert after_restart["pools"] == before["pools"] and after_restart["units"] == before["units"]
    svc = JackpotService(ctl, config_from_url(broker.url)).start()
    wait_until(lambda: ctl.marks().get(unit) == len(script), 30, "the reports queued for the controller")
    check_accounting(report(ctl.db), expected)
    bus.close()
    table_dealer.close()
    svc.stop()
    ctl.close()


def _raw_client(url: str, **auth) -> mqtt.Client:
    host, port = url.removeprefix("mqtt://").split(":")
    c = mqtt.Client(CallbackAPIVersion.VERSION2)
    if auth:
        c.username_pw_set(auth["username"], auth["password"])
    c.connect(host, int(port))
    c.loop_start()
    return c


def test_malformed_oversized_and_forged_reports_are_rejected_logged_and_harmless(broker, tmp_path, caplog):
    ctl = controller(tmp_path / "jackpot.db")
    svc = JackpotService(ctl, config_from_url(broker.url)).start()
    unit = "table-3/seat-2"
    script, expected = seat_script(unit, 10, seed=5)
    bus = connect_bus(broker.url, unit, outbox_path=tmp_path / "seat.db")
    marker = ("progressive_wager", {"amount": "10"}, 11, "11/w")
    table_dealer = dealer(broker.url, "table-3", tmp_path)
    send_dealer(table_dealer, {2: [*script, marker]})
    send(bus, unit, script)
    wait_until(lambda: ctl.marks().get(unit) == len(script) and
               ctl.marks().get(table_dealer.unit_id) == table_dealer.outbox.last_seq, 30, "the genuine reports")
    before = report(ctl.db)
    good = json.loads(bus.outbox.pending()[0].payload) if bus.outbox.pending() else None
    template = {"schema": 1, "id": "forged-0001", "unit": unit, "table": "table-3", "box": 2, "seq": 999,
                "kind": "progressive_wager", "round": 50, "body": {"amount": "5"}}
    topic = topics.report_topic(unit)
    bad = [
        (topic, b"not json at all"),
        (topic, b"\xff\xfe\x00"),
        (topic, json.dumps([1, 2, 3]).encode()),
        (topic, json.dumps({**template, "schema": 2}).encode()),
        (topic, json.dumps({**template, "body": {"amount": 5.0}}).encode()),           # a float
        (topic, json.dumps({**template, "body": {"amount": "-5"}}).encode()),
        (topic, json.dumps({**template, "kind": "jackpot_please"}).encode()),
        (topic, json.dumps({**template, "extra": 1}).encode()),
        (topic, json.dumps({**template, "body": {"amount": "5", "x": 1}}).encode()),
        (topic, json.dumps({**template, "padding": "x" * 20000}).encode()),           # oversized
        (topic, json.dumps({**template, "unit": "table-3/seat-5"}).encode()),          # forged unit
        (topic, json.dumps({**template, "table": "table-4"}).encode()),                # forged table
        (topic, json.dumps({**template, "seq": 1, "id": "another-id-1"}).encode()),    # seq reused
        (topics.report_topic("table-3/seat-2") + "/x", b"{}"),
        (topic, json.dumps({**template, "kind": "progressive_hit", "body": {
            "category": "x", "award": "5", "meter_share": "1"}}).encode()),
    ]
    raw = _raw_client(broker.url)
    for t, payload in bad:
        raw.publish(t, payload, qos=1).wait_for_publish(10)
    # a genuine report after them is still taken: the bad ones did no harm
    send(bus, unit, [marker])
    wait_until(lambda: ctl.marks().get(unit) == len(script) + 1, 30, "the genuine report after the bad ones")
    raw.loop_stop()
    raw.disconnect()
    after = report(ctl.db)
    assert after["rejected"]["count"] == len(bad) - 1       # the /x topic is not a report topic
    assert after["rejected"]["by_reason"]["forged"] == 2
    assert after["rejected"]["by_reason"]["oversized"] == 1
    assert after["rejected"]["by_reason"]["seq_reused"] == 1
    m0, m1 = before["pools"]["main"]["meters"], after["pools"]["main"]["meters"]
    assert m1["wagers"] == m0["wagers"] + 1
    assert Fraction(m1["wagers_in"]) == Fraction(m0["wagers_in"]) + 10
    assert after["units"][unit]["events"] == len(script) + 1
    # logged rate-limited: the first ten rejections (the forgeries come 11th and 12th)
    assert sum("rejected a message" in r.message for r in caplog.records) == 10
    assert good is None or good["unit"] == unit
    bus.close()
    table_dealer.close()
    svc.stop()
    ctl.close()


def test_a_meter_share_hit_locks_the_amount_shows_pending_and_reseeds_on_confirmation(broker, tmp_path):
    """The hit locks what the table pays: the share of the meter its round opened with (the
    seed here); the round's own contribution and later ones stay for the next meter."""
    ctl = controller(tmp_path / "jackpot.db")
    svc = JackpotService(ctl, config_from_url(broker.url), tick=0.02).start()
    seat = connect_bus(broker.url, "table-7/seat-1", outbox_path=tmp_path / "s1.db")
    table_dealer = dealer(broker.url, "table-7", tmp_path)
    watch = ControllerWatch(seat)
    hit = {"category": "suited_four_of_a_kind", "award": None, "meter_share": "1", "amount": "1000"}
    script = [("progressive_wager", {"amount": "100"}, 1, "1/w"), ("progressive_hit", hit, 1, "1/h"),
              ("progressive_wager", {"amount": "20"}, 2, "2/w")]
    send(seat, "table-7/seat-1", script)
    send_dealer(table_dealer, {1: script})
    wait_until(lambda: watch.meter and watch.meter["pools"]["main"]["state"] == "pending", 20, "PENDING on the meter")
    pending = watch.meter["pools"]["main"]["pending"]
    assert [(p["box"], p["amount"]) for p in pending] == [(1, "1000.00")]
    # confirmed by the round's end, the seat's and the dealer's (Switch §3.7: 100% paid then)
    end = [("round_result", {"void": False, "net": "895"}, 1, "1/r")]
    send(seat, "table-7/seat-1", end)
    send_dealer(table_dealer, {1: end})
    wait_until(lambda: watch.meter["pools"]["main"]["state"] == "live", 20, "the meter live again")
    # reseeded on top of round 1's own contribution and what came while the hit was pending
    assert watch.meter["pools"]["main"]["amount"] == "1018.00"
    data = report(ctl.db)
    assert data["last_hits"][0]["state"] == "confirmed" and data["last_hits"][0]["amount"] == "1000"
    assert data["pools"]["main"]["balanced"]
    seat.close()
    table_dealer.close()
    svc.stop()
    ctl.close()


def test_an_attendant_confirms_a_hit_by_command_and_gets_an_answer(broker, tmp_path):
    ctl = controller(tmp_path / "jackpot.db")
    svc = JackpotService(ctl, config_from_url(broker.url), tick=0.02).start()
    seat = connect_bus(broker.url, "table-8/seat-2", outbox_path=tmp_path / "s.db")
    script = [("progressive_wager", {"amount": "5"}, 1, "1/w"),
              ("progressive_hit", {"category": "s4k", "award": None, "meter_share": "1", "amount": "1000"}, 1, "1/h")]
    send(seat, "table-8/seat-2", script)
    table_dealer = dealer(broker.url, "table-8", tmp_path)
    send_dealer(table_dealer, {2: script})
    wait_until(lambda: report(ctl.db)["last_hits"], 20, "the hit")
    hit = report(ctl.db)["last_hits"][0]["hit"]
    sniffer = Sniffer(broker.url, topics.response_topic("main"))
    raw = _raw_client(broker.url)
    for tx, cmd in (("t1", {"hit": 9999}), ("t2", {"hit": hit}), ("t3", {"hit": hit})):
        raw.publish(topics.command_topic("main"), json.dumps({"schema": 1, "tx": tx, "command": "confirm_hit",
                                                              "by": "pit boss 7", **cmd}), qos=1)
    wait_until(lambda: len(sniffer.messages) == 3, 20, "three answers")
    answers = {a["tx"]: a for a in sniffer.json("/response")}
    assert answers["t1"]["ok"] is False and "no hit 9999" in answers["t1"]["error"]
    assert answers["t2"] == {"schema": 1, "tx": "t2", "ok": True, "hit": hit, "state": "confirmed"}
    assert answers["t3"]["ok"] is False and "not pending" in answers["t3"]["error"]
    validate_all(sniffer.messages)
    assert report(ctl.db)["last_hits"][0]["confirmed_by"] == "attendant pit boss 7"
    raw.loop_stop()
    raw.disconnect()
    sniffer.close()
    seat.close()
    table_dealer.close()
    svc.stop()
    ctl.close()


def test_progressive_is_closed_at_a_seat_while_the_controller_is_down(broker, tmp_path):
    seat = connect_bus(broker.url, "table-6/seat-1", outbox_path=tmp_path / "s.db")
    watch = ControllerWatch(seat)
    changes: list[tuple[bool, str | None]] = []
    watch.on_change(lambda up, why: changes.append((up, why)))
    ctl = controller(tmp_path / "jackpot.db")
    svc = JackpotService(ctl, config_from_url(broker.url)).start()
    wait_until(lambda: watch.available, 20, "the controller online at the seat")
    svc.stop()
    wait_until(lambda: not watch.available, 20, "the seat noticing the controller is gone")
    assert watch.reason == UNAVAILABLE_CONTROLLER
    svc = JackpotService(ctl, config_from_url(broker.url)).start()
    wait_until(lambda: watch.available, 20, "the controller back at the seat")
    assert [up for up, _ in changes] == [True, False, True]
    assert changes[1][1] == UNAVAILABLE_CONTROLLER
    seat.close()
    svc.stop()
    ctl.close()


def test_the_jackpot_command_line_serves_and_reports(broker, tmp_path):
    db = tmp_path / "cli.db"
    proc = subprocess.Popen([sys.executable, "-m", "firmware", "jackpot", "serve", "--broker", broker.url,
                             "--db", str(db), "--link", "cli"], cwd=ROOT)
    try:
        unit = "table-2/seat-6"
        seat = connect_bus(broker.url, unit, outbox_path=tmp_path / "s.db", link_id="cli")
        watch = ControllerWatch(seat, "cli")
        wait_until(lambda: watch.available, 30, "the served controller online")
        script, expected = seat_script(unit, 30, seed=11)
        send(seat, unit, script)
        table_dealer = dealer(broker.url, "table-2", tmp_path, link_id="cli")
        n = send_dealer(table_dealer, {6: script}, expected)
        wait_until(lambda: seat.outbox.stats()["confirmed"] == len(script), 30, "the served controller's mark")
        wait_until(lambda: table_dealer.outbox.stats()["confirmed"] == n, 30, "the mark for the dealer's records")
        seat.close()
        table_dealer.close()
    finally:
        proc.terminate()
        assert proc.wait(20) == 0
    out = subprocess.run([sys.executable, "-m", "firmware", "jackpot", "report", "--db", str(db), "--json"],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    check_accounting(data, expected)
    text = subprocess.run([sys.executable, "-m", "firmware", "jackpot", "report", "--db", str(db)],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert f"{unit}: {len(script)} events, highest seq {len(script)}" in text
    bad = subprocess.run([sys.executable, "-m", "firmware", "jackpot", "serve", "--broker", "http://x:1",
                          "--db", str(db)], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "mqtt://" in bad.stderr
