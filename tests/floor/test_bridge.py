"""Table brokers bridged to the floor broker (real mosquitto processes on loopback): the
floor's ACL keeps each table's bridge to its own table, the progressive closes while the
bridge is down, and what was queued reaches the controller once it is back, in order; the
books equal the units' outboxes to the cent."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from fractions import Fraction
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from firmware.cli import main as betbox
from firmware.jackpot.controller import report
from firmware.link import connect_bus, topics
from firmware.link.bridge import Bridge, render_bridge
from firmware.link.presence import (
    UNAVAILABLE_CONTROLLER,
    UNAVAILABLE_FLOOR,
    ControllerWatch,
)
from tests.jackpot.test_jackpot_integration import all_confirmed, send
from tests.link.broker import Broker
from tests.link.helpers import (
    Books,
    Sniffer,
    check_accounting,
    controller,
    seat_script,
    send_dealer,
    wait_until,
)
from tests.link.schema import validate_all

from .floor import Floor, unit_password

DOCS = Path(__file__).resolve().parents[2] / "docs" / "mqtt"


def _client(url: str, user: str, password: str) -> mqtt.Client:
    host, port = url.removeprefix("mqtt://").split(":")
    c = mqtt.Client(CallbackAPIVersion.VERSION2)
    c.username_pw_set(user, password)
    c.connect(host, int(port))
    c.loop_start()
    return c


def _published(url: str, user: str, password: str, topic: str, payload: str, retain: bool = False) -> bool:
    """One QoS 1 publish on a connection of its own; whether the broker acknowledged it."""
    c = _client(url, user, password)
    try:
        c.publish(topic, payload, qos=1, retain=retain).wait_for_publish(5)
        return True
    except (RuntimeError, ValueError):
        return False
    finally:
        c.disconnect()
        c.loop_stop()


def _denied(url: str, user: str, password: str, topic: str, payload: str, retain: bool = False) -> None:
    """A publish the ACL denies: mosquitto 2.0.11 acknowledges and drops it, then drops the
    connection (its log: "Bad socket read/write"); the test then checks it reached no one."""
    _published(url, user, password, topic, payload, retain)


def _report(unit: str, seq: int, rnd: int) -> str:
    table, box = unit.split("/")[0], int(unit.rsplit("-", 1)[1])
    return json.dumps({"schema": 1, "id": unit.replace("/", "-") + f"-{seq:06d}", "unit": unit, "table": table, "box": box, "seq": seq,
                       "kind": "progressive_wager", "round": rnd, "body": {"amount": "5"}})


def _events(ctl) -> dict[str, list[tuple[int, str]]]:
    """Per unit, (seq, id) in the order the controller stored them."""
    out: dict[str, list[tuple[int, str]]] = {}
    for unit, seq, rid in ctl.db.execute("SELECT unit, seq, id FROM event ORDER BY rowid"):
        out.setdefault(unit, []).append((seq, rid))
    return out


def _runs(seqs: list[int]) -> list[tuple[int, int]]:
    """Arrival order as runs of consecutive seqs: [(1, 86), (133, 140), (87, 132), ...]."""
    out: list[tuple[int, int]] = []
    for s in seqs:
        if out and s == out[-1][1] + 1:
            out[-1] = (out[-1][0], s)
        else:
            out.append((s, s))
    return out


def _outboxes(buses) -> dict[str, set[tuple[int, str]]]:
    return {b.unit_id: {(p.seq, p.id) for p in b.outbox.pending(limit=100000)} for b in buses}


def test_the_floor_acl_keeps_each_tables_bridge_and_units_to_their_own_table(tmp_path):
    floor = Floor(tmp_path, {"table-1": 2, "table-2": 2}).start()
    ctl = controller(tmp_path / "jackpot.db")
    svc = floor.service(ctl)
    try:
        # table-1's bridge credentials at the floor broker, writing as table-2's seat, then its
        # own. Each publish on a connection of its own: mosquitto 2.0.11 may drop a connection
        # after a denied QoS 1 publish (seen as "Bad socket read/write" in its log), and the
        # username is the client id, so the forger also contends with the live bridge.
        bridge = ("table-1/bridge", unit_password("table-1/bridge"))
        _denied(floor.floor.url, *bridge, topics.report_topic("table-2/seat-1"), _report("table-2/seat-1", 1, 1))
        _denied(floor.floor.url, *bridge, topics.status_topic("table-2/seat-1"), json.dumps(
            {"schema": 1, "unit": "table-2/seat-1", "role": "seat", "state": "offline"}), retain=True)
        wait_until(lambda: _published(floor.floor.url, *bridge, topics.report_topic("table-1/seat-1"),
                                      _report("table-1/seat-1", 1, 1)), 20, "the bridge user's own-table report taken")
        # a unit of table-1 on its own table's broker, writing as table-2's seat: not bridged,
        # and not even accepted there
        seat = ("table-1/seat-2", unit_password("table-1/seat-2"))
        _denied(floor.tables["table-1"].url, *seat, topics.report_topic("table-2/seat-2"), _report("table-2/seat-2", 1, 1))
        wait_until(lambda: _published(floor.tables["table-1"].url, *seat, topics.report_topic("table-1/seat-2"),
                                      _report("table-1/seat-2", 1, 1)), 20, "the seat's own report taken")
        # each user's messages arrive in order: once its own report is in, the forged one never will be
        wait_until(lambda: ctl.marks().get("table-1/seat-1") == 1 and ctl.marks().get("table-1/seat-2") == 1, 20,
                   "table-1's own reports, one through its bridge")
        units = report(ctl.db)["units"]
        assert "table-2/seat-1" not in units and "table-2/seat-2" not in units
        # table-2's bridge, untouched, still carries table-2's reports
        bus = floor.bus("table-2/seat-1", tmp_path / "t2s1.db")
        bus.report("progressive_wager", {"amount": "5"}, key="1/w", table="table-2", box=1, round=1)
        wait_until(lambda: ctl.marks().get("table-2/seat-1") == 1, 20, "table-2's own report through its bridge")
        bus.close()
    finally:
        svc.stop()
        ctl.close()
        floor.stop()


def test_while_the_bridge_is_down_the_gate_is_closed_and_the_queue_drains_in_order_after(tmp_path):
    """The floor link of table-1 cut for OUTAGE seconds (a relay between the table broker's
    bridge and the floor broker) while its three seats and dealer report; table-2 plays on.
    20 s by default (what the queue needs: everything published while cut is queued within
    the first seconds); BETBOX_FLOOR_OUTAGE=300 holds it for minutes."""
    outage = float(os.environ.get("BETBOX_FLOOR_OUTAGE", "20"))
    floor = Floor(tmp_path, {"table-1": 3, "table-2": 1}, relay=("table-1",)).start()
    ctl = controller(tmp_path / "jackpot.db")
    svc = floor.service(ctl)
    expected = Books()
    scripts, buses, watches = {}, {}, {}
    for box in (1, 2, 3):
        unit = f"table-1/seat-{box}"
        scripts[unit], exp = seat_script(unit, 120, seed=40 + box, meter_hits=True)
        expected.add(exp)
        buses[unit] = floor.bus(unit, tmp_path / f"{box}.db")
        watches[unit] = ControllerWatch(buses[unit], "main", "table-1")
    other = "table-2/seat-1"
    scripts[other], exp = seat_script(other, 120, seed=49)
    expected.add(exp)
    buses[other] = floor.bus(other, tmp_path / "t2.db")
    watches[other] = ControllerWatch(buses[other], "main", "table-2")
    dealers = {t: floor.bus(f"{t}/dealer", tmp_path / f"{t}-dealer.db") for t in ("table-1", "table-2")}
    states = Sniffer(floor.tables["table-1"].url, "betbox/v1/bridge/#", username="observer",
                     password=unit_password("observer"))
    try:
        wait_until(lambda: all(w.available for w in watches.values()), 20, "every seat's progressive open")
        # rounds 1-40 through an up bridge, the seats' reports and the dealers' records of them
        # (a round's reports from both sides come together, as at a table)
        early = {u: [r for r in sc if r[2] <= 40] for u, sc in scripts.items()}
        late = {u: [r for r in sc if r[2] > 40] for u, sc in scripts.items()}

        def dealer_records_of(part: dict[str, list]) -> None:
            for t, d in dealers.items():
                send_dealer(d, {int(u.rsplit("-", 1)[1]): sc for u, sc in part.items() if u.startswith(t + "/")},
                            expected)

        for unit in scripts:
            send(buses[unit], unit, early[unit])
        dealer_records_of(early)
        wait_until(lambda: all_confirmed(ctl, Books(events={**{u: len(e) for u, e in early.items()}, **{
            d.unit_id: d.outbox.last_seq for d in dealers.values()}})), 30, "rounds 1-40 at the controller")
        floor.relays["table-1"].cut()
        wait_until(lambda: not any(watches[f"table-1/seat-{b}"].available for b in (1, 2, 3)), 20,
                   "table-1's gate closing")
        for b in (1, 2, 3):
            w = watches[f"table-1/seat-{b}"]
            assert w.reason == UNAVAILABLE_FLOOR and w.state().link == "down"
        assert watches[other].available                     # the other table is untouched
        before = dict(ctl.marks())
        # the other 80 rounds while table-1's bridge is down: the table broker takes them (its
        # PUBACKs) and queues them for the bridge
        cut_at = time.monotonic()
        for unit in scripts:
            send(buses[unit], unit, late[unit])
        dealer_records_of(late)
        wait_until(lambda: all(b.drained() for b in [*buses.values(), *dealers.values()]), 30,
                   "the table brokers' PUBACKs")
        wait_until(lambda: all_confirmed(ctl, Books(events={u: n for u, n in expected.events.items()
                                                               if u.startswith("table-2/")})), 30,
                   "table-2's reports while table-1 is cut off")
        time.sleep(max(0.0, outage - (time.monotonic() - cut_at)))
        # nothing of table-1 reached the controller, the gate stayed closed all along
        assert {u: n for u, n in ctl.marks().items() if u.startswith("table-1/")} == \
            {u: n for u, n in before.items() if u.startswith("table-1/")}
        assert not any(watches[f"table-1/seat-{b}"].available for b in (1, 2, 3))
        floor.relays["table-1"].restore()
        wait_until(lambda: all(w.available for w in watches.values()), 30, "table-1's gate open again")
        wait_until(lambda: all_confirmed(ctl, expected), 60, "everything queued, at the controller")
        data = report(ctl.db)
        check_accounting(data, expected)
        assert data["integrity"]["count"] == 0 and data["held"] == {"seat": 0, "dealer": 0}
        events = _events(ctl)
        for unit in [*scripts, *(d.unit_id for d in dealers.values())]:
            seqs = [s for s, _ in events[unit]]
            assert seqs == sorted(seqs) == list(range(1, expected.events[unit] + 1)), (unit, _runs(seqs))
            assert data["units"][unit]["missing_ranges"] == []
            assert data["units"][unit]["gaps_recorded"] == 0      # nothing came ahead of a missing one
        # the books are the outboxes (what they still hold; the marks empty them next)
        wait_until(lambda: all(b.outbox.pending() == [] for b in [*buses.values(), *dealers.values()]), 30,
                   "the confirmation marks back through the bridge")
        # what the seats saw of the bridge: 1, 0 while cut, 1 again (the AsyncAPI's bridgeState)
        assert validate_all(states.messages)["bridgeState"] >= 3
        seen = [p for p, _ in itertools.groupby(p for _, p, _ in states.messages)]    # repeats collapsed
        assert seen[-3:] == [b"1", b"0", b"1"], seen
    finally:
        states.close()
        for b in [*buses.values(), *dealers.values()]:
            b.close()
        svc.stop()
        ctl.close()
        floor.stop()


@pytest.mark.slow
def test_the_floor_broker_killed_and_restarted_while_three_tables_play_on_loses_nothing(tmp_path):
    floor = Floor(tmp_path, {f"table-{t}": 3 for t in (1, 2, 3)}).start()
    db = tmp_path / "jackpot.db"
    ctl = controller(db)
    svc = floor.service(ctl)
    expected = Books()
    scripts, buses, watches = {}, {}, {}
    for t in (1, 2, 3):
        for box in (1, 2, 3):
            unit = f"table-{t}/seat-{box}"
            scripts[unit], exp = seat_script(unit, 150, seed=10 * t + box, meter_hits=True)
            expected.add(exp)
            buses[unit] = floor.bus(unit, tmp_path / f"{t}-{box}.db")
            watches[unit] = ControllerWatch(buses[unit], "main", f"table-{t}")
    dealers = [floor.bus(f"table-{t}/dealer", tmp_path / f"{t}-dealer.db") for t in (1, 2, 3)]
    try:
        wait_until(lambda: all(w.available for w in watches.values()), 20, "every seat's progressive open")
        for t, d in enumerate(dealers, 1):
            send_dealer(d, {b: scripts[f"table-{t}/seat-{b}"] for b in (1, 2, 3)}, expected)
        threads = [threading.Thread(target=send, args=(buses[u], u, s)) for u, s in scripts.items()]
        for th in threads:
            th.start()
        wait_until(lambda: sum(ctl.marks().values()) >= 100, 30, "the first reports at the controller")
        floor.floor.kill()                               # mid-stream
        wait_until(lambda: not any(w.available for w in watches.values()), 20, "every table's gate closing")
        for th in threads:
            th.join()
        # the tables played on: their own brokers took every report
        wait_until(lambda: all(b.drained() for b in [*buses.values(), *dealers]), 30, "the table brokers' PUBACKs")
        # what the controller had not confirmed when its broker died, still in the outboxes
        unconfirmed = _outboxes([*buses.values(), *dealers])
        assert all(b.outbox.last_seq == expected.events[b.unit_id] for b in [*buses.values(), *dealers])
        assert not all_confirmed(ctl, expected) and sum(map(len, unconfirmed.values())) > 0
        floor.floor.start()
        wait_until(lambda: all(w.available for w in watches.values()), 30, "every gate open again")
        wait_until(lambda: all_confirmed(ctl, expected), 90, "every report after the floor broker's restart")
        data = report(ctl.db)
        check_accounting(data, expected)
        events = _events(ctl)
        for unit, held in unconfirmed.items():
            # every report each unit numbered, once; those its outbox held are those it sent
            assert sorted(s for s, _ in events[unit]) == list(range(1, expected.events[unit] + 1)), unit
            assert held <= set(events[unit]), unit
        assert data["integrity"]["count"] == 0 and data["held"] == {"seat": 0, "dealer": 0}
        for unit in unconfirmed:
            assert data["units"][unit]["missing_ranges"] == []
    finally:
        for b in [*buses.values(), *dealers]:
            b.close()
        svc.stop()
        ctl.close()
        floor.stop()


def test_a_table_broker_started_while_the_floor_is_away_keeps_the_gate_closed(tmp_path):
    """A stale retained ``online`` from the controller (the table broker's saved state) must
    not open the gate while its bridge has not connected: the broker says ``0`` first."""
    floor = Floor(tmp_path, {"table-1": 1}).start()
    ctl = controller(tmp_path / "jackpot.db")
    svc = floor.service(ctl)
    bus = floor.bus("table-1/seat-1")
    watch = ControllerWatch(bus, "main", "table-1")
    try:
        wait_until(lambda: watch.available, 20, "the gate open through the bridge")
        bus.close()
        table = floor.tables["table-1"]
        table.stop()                                    # saved: the controller's retained online
        floor.floor.kill()
        table.start()
        bus = floor.bus("table-1/seat-1")
        watch = ControllerWatch(bus, "main", "table-1")
        wait_until(lambda: watch.reason == UNAVAILABLE_FLOOR, 20, "the bridge's 0 at the table broker")
        time.sleep(1.0)
        assert not watch.available
        floor.floor.start()
        wait_until(lambda: watch.available, 30, "the gate open once the bridge is back")
    finally:
        bus.close()
        svc.stop()
        ctl.close()
        floor.stop()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_bridge_config_writes_a_table_broker_that_bridges_over_tls(tmp_path, capsys):
    from tests.tech.pki import make_ca, make_cert
    pki = tmp_path / "pki"
    make_ca(pki)
    make_cert(pki, "floor", "127.0.0.1", ext="subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth")
    make_cert(pki, "bridge", "table-1/bridge")
    make_cert(pki, "jackpot", "jackpot/main")
    users = {"jackpot/main": "pwj", "table-1/bridge": "pw-bridge"}
    from firmware.link.bridge import render_floor_acl
    floor = Broker(tmp_path / "floor", users=users, acl=render_floor_acl({"table-1": 1}),
                   tls={"ca": pki / "ca.pem", "cert": pki / "floor.pem", "key": pki / "floor.key"}).start()
    (tmp_path / "pw").write_text("pw-bridge\n")
    table_dir = tmp_path / "table"
    table_dir.mkdir()
    # refused without TLS to the floor unless asked for
    assert betbox(["floor", "bridge-config", "--table", "table-1", "--floor", f"127.0.0.1:{floor.port}",
                   "--password-file", str(tmp_path / "pw"), "--out", "-"]) == 2
    assert "--bridge-ca" in capsys.readouterr().err
    conf = table_dir / "bridge.conf"
    assert betbox(["floor", "bridge-config", "--table", "table-1", "--boxes", "1", "--floor",
                   f"127.0.0.1:{floor.port}", "--password-file", str(tmp_path / "pw"),
                   "--bridge-ca", str(pki / "ca.pem"), "--bridge-cert", str(pki / "bridge.pem"),
                   "--bridge-key", str(pki / "bridge.key"), "--listen", "127.0.0.1:1",
                   "--out", str(conf), "--acl-out", str(table_dir / "acl.out")]) == 0
    assert conf.stat().st_mode & 0o077 == 0                    # the bridge password is in it
    text = conf.read_text()
    bridge = text[text.index("connection floor-table-1"):]
    for line in ("cleansession false", "local_cleansession false", "remote_username table-1/bridge",
                 f"bridge_cafile {pki / 'ca.pem'}", "topic betbox/v1/unit/table-1/+/report out 1",
                 "topic betbox/v1/jackpot/main/confirmed/table-1/+ in 1",
                 "notification_topic betbox/v1/bridge/table-1/state", "max_queued_messages 50000"):
        assert line in text, line
    # the generated bridge section, run by a real table broker: a report crosses over TLS
    table = Broker(table_dir / "broker", extra=bridge).start()
    ctl = controller(tmp_path / "jackpot.db")
    from firmware.jackpot.service import JackpotService
    from firmware.link.config import load_link_config
    svc = JackpotService(ctl, load_link_config({"broker": f"mqtts://127.0.0.1:{floor.port}", "username": "jackpot/main",
                                                "password": "pwj", "tls": {
                                                    "ca": str(pki / "ca.pem"), "cert": str(pki / "jackpot.pem"),
                                                    "key": str(pki / "jackpot.key")}})).start()
    bus = connect_bus(table.url, "table-1/seat-1", outbox_path=tmp_path / "s.db")
    try:
        bus.report("progressive_wager", {"amount": "5"}, key="1/w", table="table-1", box=1, round=1)
        wait_until(lambda: ctl.marks().get("table-1/seat-1") == 1, 30, "the report over the TLS bridge")
        wait_until(lambda: bus.outbox.pending() == [], 20, "the mark back over the TLS bridge")
    finally:
        bus.close()
        svc.stop()
        ctl.close()
        table.stop()
        floor.stop()


def test_the_documented_bridge_is_what_render_bridge_makes():
    doc = (DOCS / "table-bridge.conf").read_text()
    made = render_bridge(Bridge("table-1", "floor.casino.example:8883", "CHANGE-ME",
                                "/etc/mosquitto/ca_certificates/betbox-ca.pem",
                                "/etc/mosquitto/certs/table-1-bridge.pem", "/etc/mosquitto/certs/table-1-bridge.key"))
    assert made in doc


CONTROLLER_PROC = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from firmware.jackpot.service import JackpotService
from firmware.link.config import load_link_config
from tests.link.helpers import controller
JackpotService(controller(Path({db!r})), load_link_config({link!r})).start()
print("up", flush=True)
time.sleep(600)
"""


def test_a_killed_controllers_will_closes_the_gate_at_every_table_through_its_bridge(tmp_path):
    """The controller SIGKILLed: its will (``offline``, retained at the floor) comes down
    every bridge, so every table's seats close the progressive; a new controller's
    ``online`` opens them again."""
    floor = Floor(tmp_path, {"table-1": 1, "table-2": 1}).start()
    root = str(Path(__file__).resolve().parents[2])
    link = {"broker": floor.floor.url, "username": "jackpot/main", "password": "pw-jackpot", "allow_insecure": True}
    code = CONTROLLER_PROC.format(root=root, db=str(tmp_path / "jackpot.db"), link=link)
    buses = [floor.bus(f"table-{t}/seat-1") for t in (1, 2)]
    watches = [ControllerWatch(b, "main", b.unit_id.split("/")[0]) for b in buses]
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
        wait_until(lambda: all(w.available for w in watches), 20, "every table's gate open")
        proc.kill()
        proc.wait(10)
        wait_until(lambda: not any(w.available for w in watches), 20, "the controller's will at every table")
        assert all(w.reason == UNAVAILABLE_CONTROLLER for w in watches)   # the bridges are up: the controller is not
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        wait_until(lambda: all(w.available for w in watches), 20, "every gate open for the new controller")
    finally:
        proc.kill()
        proc.wait(10)
        for b in buses:
            b.close()
        floor.stop()


def test_a_bridge_queue_past_its_bound_drops_at_the_broker_only_the_outbox_sends_it_again(tmp_path):
    """The table broker queues at most ``max_queued_messages`` (here 20) for the bridge; what
    the seat reports beyond that while the floor is away is dropped there, and the seat's
    outbox, not confirmed, sends it again: the books are exact all the same. The floor link
    comes back once and stays (no relay idle drops: those reconnected the bridge again and
    again, and each reconnect made the seat send again, hiding that the send after the
    first reconnect overflowed the bound too and nothing sent the rest): the seat sends
    again when the controller, online, has confirmed nothing more for a while."""
    floor = Floor(tmp_path, {"table-1": 1}, relay=("table-1",), table_queue=20, relay_idle=None).start()
    ctl = controller(tmp_path / "jackpot.db")
    svc = floor.service(ctl)
    unit = "table-1/seat-1"
    script, expected = seat_script(unit, 150, seed=77)
    bus = floor.bus(unit, tmp_path / "seat.db")
    table_dealer = floor.bus("table-1/dealer", tmp_path / "dealer.db")
    bus.resend_stalled = table_dealer.resend_stalled = 3.0         # 60 s as shipped
    watch = ControllerWatch(bus, "main", "table-1")
    try:
        wait_until(lambda: watch.available, 20, "the gate open")
        floor.relays["table-1"].cut()
        wait_until(lambda: not watch.available, 20, "the gate closing")
        send(bus, unit, script)
        send_dealer(table_dealer, {1: script}, expected)
        wait_until(lambda: bus.drained() and table_dealer.drained(), 30, "the table broker's PUBACKs")
        assert len(script) > 100 and ctl.marks().get(unit) is None
        # the floor away: nothing is sent again into the bridge's queue (it would fill it with
        # duplicates), however long the controller's mark stands still
        time.sleep(2 * bus.resend_stalled)
        assert bus.stalled_resends == 0 and table_dealer.stalled_resends == 0
        floor.relays["table-1"].restore()
        wait_until(lambda: all_confirmed(ctl, expected), 60, "every report, the dropped ones sent again")
        assert "Outgoing messages are being dropped for client bridge-table-1" in floor.tables["table-1"].log()
        # which unit needs the stalled resend (or whether the send at the controller's return
        # already fitted the queue) is the bridge's timing: tests/link/test_stalled_resend.py
        # pins the mechanism itself; here what counts is that every report arrived
        data = report(ctl.db)
        check_accounting(data, expected)
        assert data["integrity"]["count"] == 0 and data["units"][unit]["missing_ranges"] == []
    finally:
        bus.close()
        table_dealer.close()
        svc.stop()
        ctl.close()
        floor.stop()


def test_a_seat_unit_withdraws_its_progressive_wager_while_its_tables_bridge_is_down(tmp_path):
    """The real seat's gate (firmware/runtime: lamp off, the offer without the progressive)
    fed by the ControllerWatch on its table's broker: the bridge cut while bets are open, the
    seat withdraws the progressive exactly as when the controller is offline; back, it is
    offered again."""
    from firmware.engine.profile import load_profile
    from firmware.sim import chipset
    from firmware.sim.table import InProcessTable, TableSpec, seat_spots
    from hal.ports import LAMP_OFF, LAMP_ON
    profile = load_profile("rws-blackjack-switch")
    floor = Floor(tmp_path, {"table-1": 1}, relay=("table-1",)).start()
    ctl = controller(tmp_path / "jackpot.db")
    svc = floor.service(ctl)
    t = InProcessTable(TableSpec("table-1", profile, 0, tmp_path / "table"), chipset.registry(7, len(seat_spots(profile))))
    bus = floor.bus("table-1/seat-1")
    try:
        t.boot()
        t.shoe.shuffle()
        t.settle()
        ControllerWatch(bus, "main", "table-1").feed(t.seats[1])
        seat = t.seats[1]

        def link_is(state: str) -> bool:
            t.settle()
            return seat.controller.link == state

        wait_until(lambda: link_is("up"), 20, "the controller's link up at the seat")
        t.console.press("open_bets")
        t.settle()
        for spot, amount in (("main", 20), ("progressive", 5)):
            t.readers[1].place_chips(spot, chipset.chips_for(Fraction(amount), 1, t.spots.index(spot), 0))
            t.cycle_readers(2, [1])
        assert t.dealer.offers[1] == {"main": 20, "progressive": 5}
        floor.relays["table-1"].cut()
        wait_until(lambda: link_is("down"), 20, "the bridge's 0 at the seat")
        assert seat.progressive_refusal == "controller_link_down"
        assert t.lamps[1].state("progressive") == LAMP_OFF
        assert t.dealer.offers[1] == {"main": 20}
        floor.relays["table-1"].restore()
        wait_until(lambda: link_is("up"), 30, "the link up again once the bridge is back")
        t.cycle_readers(2, [1])
        assert seat.progressive_refusal is None and t.lamps[1].state("progressive") == LAMP_ON
        assert t.dealer.offers[1] == {"main": 20, "progressive": 5}
    finally:
        t.close()
        bus.close()
        svc.stop()
        ctl.close()
        floor.stop()
