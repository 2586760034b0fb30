"""Group commit at the controller: reports stored in one transaction, acknowledged after
it. A controller process SIGKILLed between the commit and the PUBACKs gets the batch again
from the broker (its persistent session) and books each report once."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from firmware.jackpot import service as S
from firmware.jackpot.controller import report
from firmware.jackpot.pools import PoolState
from firmware.jackpot.service import JackpotService
from firmware.link import connect_bus, topics
from firmware.link.config import config_from_url
from tests.jackpot.test_jackpot_integration import all_confirmed, dealer, send
from tests.link.helpers import Expected, check_accounting, controller, seat_script, send_dealer, wait_until

HERE = Path(__file__).resolve().parent.parent / "link"          # controller_proc.py is there


def test_a_controller_killed_between_commit_and_puback_gets_the_batch_again_and_books_it_once(own_broker,
                                                                                              tmp_path):
    db = tmp_path / "jackpot.db"
    proc = subprocess.Popen([sys.executable, str(HERE / "controller_proc.py"), own_broker.url, str(db), "3"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        expected = Expected()
        units = [f"table-2/seat-{n}" for n in (1, 2, 3)]
        scripts, buses = {}, {}
        for i, unit in enumerate(units):
            scripts[unit], exp = seat_script(unit, 60, seed=500 + i, meter_hits=True)
            expected.add(exp)
            buses[unit] = connect_bus(own_broker.url, unit, outbox_path=tmp_path / f"{i}.db")
        table_dealer = dealer(own_broker.url, "table-2", tmp_path)
        send_dealer(table_dealer, {int(u[-1]): scripts[u] for u in units}, expected)
        threads = [threading.Thread(target=send, args=(buses[u], u, scripts[u])) for u in units]
        for th in threads:
            th.start()
        assert proc.wait(60) == -signal.SIGKILL
        out = proc.stdout.read().split("\n")
    finally:
        proc.kill()
        proc.wait(10)
    for th in threads:
        th.join()
    committed = [(line.split()[1], int(line.split()[2])) for line in out if line.startswith("committed")]
    assert committed
    ctl = controller(db)
    # committed, never acknowledged: in the database already
    for unit, seq in committed:
        assert ctl.db.execute("SELECT COUNT(*) FROM event WHERE unit = ? AND seq = ?", (unit, seq)).fetchone() == (1,)
    svc = JackpotService(ctl, config_from_url(own_broker.url)).start()
    wait_until(lambda: all_confirmed(ctl, expected), 60, "every report after the controller's restart")
    data = report(ctl.db)
    check_accounting(data, expected)                 # each report booked once
    assert data["integrity"]["count"] == 0 and data["held"] == {"seat": 0, "dealer": 0}
    # the broker delivered the unacknowledged batch again and the controller dropped it
    assert sum(u["duplicates"] for u in data["units"].values()) >= len(committed)
    assert svc.batches >= 1 and ctl.counts["duplicate"] >= len(committed)
    for bus in [*buses.values(), table_dealer]:
        bus.close()
    svc.stop()
    ctl.close()


def test_a_batch_is_one_transaction_a_rejected_report_in_it_changes_nothing_and_pools_are_stored_exactly(tmp_path):
    def wager(seq, rnd, amount="5", unit="table-3/seat-1", rid=None):
        return (topics.report_topic(unit), json.dumps({
            "schema": 1, "id": rid or f"table-3-seat-1-{seq:08d}", "unit": unit, "table": "table-3", "box": 1,
            "seq": seq,
            "kind": "progressive_wager", "round": rnd, "body": {"amount": amount}}).encode())

    def record(seq, rnd):
        return (topics.report_topic("table-3/dealer"), json.dumps({
            "schema": 1, "id": f"table-3-dealer-{seq:08d}", "unit": "table-3/dealer", "table": "table-3", "seq": seq,
            "kind": "round_progressive", "round": rnd, "body": {"meter": "1000", "boxes": [
                {"box": 1, "wager": "5", "hit": None}]}}).encode())

    db = tmp_path / "jackpot.db"
    ctl = controller(db)
    batch = [wager(1, 1), record(1, 1), wager(2, 2, amount="-5"), (topics.report_topic("table-3/seat-1"), b"{"),
             wager(2, 2), record(2, 2), wager(2, 2), wager(2, 2, rid="table-3-seat-1-99999999")]
    results = ctl.ingest_batch(batch)
    assert [(r.status, r.reason) for r in results] == [
        ("accepted", None), ("accepted", None), ("rejected", "bad_amount"), ("rejected", "not_json"),
        ("accepted", None), ("accepted", None), ("duplicate", None), ("rejected", "seq_reused")]
    data = report(ctl.db)
    assert data["pools"]["main"]["meters"]["wagers"] == 2
    assert data["rejected"]["count"] == 3 and data["units"]["table-3/seat-1"]["events"] == 2
    # the pool row (written as a patch of what changed) equals the state in memory
    (state,) = ctl.db.execute("SELECT state FROM pool WHERE name = 'main'").fetchone()
    assert PoolState.from_json(json.loads(state)) == ctl.states["main"]
    ctl.close()
    ctl = controller(db)
    assert report(ctl.db)["pools"] == data["pools"]
    # a batch that cannot be committed leaves nothing behind, in the database or in memory
    before = ctl.states["main"]
    ctl.db.execute("CREATE TRIGGER boom BEFORE INSERT ON booking BEGIN SELECT RAISE(ABORT, 'disk'); END")
    try:
        ctl.ingest_batch([wager(3, 3), record(3, 3)])
    except Exception as exc:                    # noqa: BLE001 - the trigger's error
        assert "disk" in str(exc)
    else:
        raise AssertionError("the batch should have failed")
    assert ctl.states["main"] == before
    assert ctl.db.execute("SELECT COUNT(*) FROM event WHERE unit = 'table-3/seat-1'").fetchone() == (2,)
    ctl.db.execute("DROP TRIGGER boom")
    assert [r.status for r in ctl.ingest_batch([wager(3, 3), record(3, 3)])] == ["accepted", "accepted"]
    assert report(ctl.db)["pools"]["main"]["meters"]["wagers"] == 3
    ctl.close()


def test_a_flood_of_qos0_reports_waits_in_the_socket_not_in_memory_and_every_one_is_counted(own_broker, tmp_path):
    # a broker of its own: the shared one may hold earlier tests' retained junk on the report
    # topics, which the controller counts too (the count must be exactly this flood's)
    broker = own_broker
    ctl = controller(tmp_path / "jackpot.db")
    svc = JackpotService(ctl, config_from_url(broker.url))
    release = threading.Event()
    ingest = ctl.ingest_batch

    def slow(messages):
        release.wait(60)                        # the controller falls behind
        return ingest(messages)

    ctl.ingest_batch = slow
    svc.start()
    flood = mqtt.Client(CallbackAPIVersion.VERSION2)
    flood.connect("127.0.0.1", broker.port)
    flood.loop_start()
    n = S.MAX_WAITING + 2000
    try:
        for i in range(n):
            flood.publish(topics.report_topic("table-1/seat-1"), b"junk %d" % i, qos=0)
        wait_until(lambda: svc._inbox.full(), 30, "the ingest queue full")
        assert svc._inbox.qsize() == S.MAX_WAITING      # the rest waits in the socket / at the broker
        release.set()
        wait_until(lambda: ctl.counts["rejected"] == n, 60, "every report counted")
        assert svc.failed == 0 and svc.bus.dropped == 0
    finally:
        release.set()
        flood.loop_stop()
        flood.disconnect()
        svc.stop()
        ctl.close()
