"""Issue #16 item 3: the floor's fault tests with whole tables playing. Every table is a
dealer unit and seat units on mock hardware, played by simulated players (firmware/sim),
each unit its own MQTT client on its table's own mosquitto, bridged to the floor's
mosquitto (``firmware.link.bridge``, the documented ACLs); the jackpot controller on the
floor broker. Each test ends with the books compared to the cent with every report every
unit's outbox stored and every settlement in every seat's journal, each report held once
(tests/tables.py ``check_books``)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from firmware.jackpot.controller import JackpotController, report
from tests.jackpot.controllers import Controllers, pair
from tests.link.helpers import POOL, controller, wait_until
from tests.tables import check_books, deal_initial, finish_round, open_round

from .floor import CONTROLLER, Floor
from .tables import FloorTables

GRACE = 4.0     # the controller's hold grace where an outage must outlast it (default 30 s)

pytestmark = pytest.mark.slow


def _held(ctl) -> int:
    return ctl.db.execute("SELECT COUNT(*) FROM claim WHERE state = 'held'").fetchone()[0]


def test_the_floor_broker_killed_and_restarted_while_three_tables_play_on_their_own_brokers(tmp_path):
    """The floor broker SIGKILLed while a claim waits at the controller for its counterpart
    (a seat's report for its dealer's record, or the other way round), and kept down longer
    than the controller's hold grace: the counterpart, queued at the table broker, is no
    integrity alarm (the controller's own link was down: it could not hear the bridges)."""
    floor = Floor(tmp_path, {f"table-{t}": 3 for t in (1, 2, 3)}).start()
    ctl = JackpotController(tmp_path / "jackpot.db", [POOL], hold_grace=GRACE)
    svc = floor.service(ctl)
    tables = FloorTables(floor, tmp_path)
    try:
        tables.wait_links("up", 20)
        with tables.playing():
            wait_until(lambda: sum(ctl.marks().values()) >= 40, 60, "the first rounds' reports at the controller")
            wait_until(lambda: _held(ctl), 60, "a claim waiting for its counterpart", step=0.001)
            floor.floor.kill()                               # SIGKILL, mid-stream: the tables are playing
            killed = time.monotonic()
            tables.wait_links("down", 20)
            down = tables.round_nos()
            # the tables deal and settle on their own brokers, the progressive closed
            wait_until(lambda: tables.played_since(down, 3) and time.monotonic() - killed > 2 * GRACE, 60,
                       "three rounds at every table and two hold graces, the floor away")
            held = _held(ctl)
            away = tables.round_nos()
            floor.floor.start()
            tables.wait_links("up", 30)
            back = tables.round_nos()
            wait_until(lambda: tables.played_since(back, 2), 60, "two rounds at every table, the floor back")
        wait_until(lambda: tables.confirmed(ctl.marks()), 90, "every report of every unit at the controller")
        data = report(ctl.db)
        books = check_books(data, tables.outboxes(), tables.journals(), POOL.rate)
        tables.wait_meters(data)
        assert books.wagers > 0
        print(f"\n{held} claim(s) waiting at the controller through the floor's outage")
        for t in tables.drivers:
            # rounds opened after the seats saw the floor go, up to the last one they saw it away: no progressive
            assert tables.wagers_in_rounds(t, down[t] + 1, away[t]) == 0, t
    finally:
        tables.close()
        svc.stop()
        ctl.close()
        floor.stop()


def _ingested(ctl, table: str, after_round: int) -> int:
    """Reports of ``table``'s units for rounds after ``after_round`` the controller holds."""
    return ctl.db.execute("SELECT COUNT(*) FROM event WHERE table_id = ? AND round > ?",
                          (table, after_round)).fetchone()[0]


def test_a_tables_bridge_down_for_minutes_holds_its_queue_and_drains_it_in_order(tmp_path):
    """Table-1's floor link cut (a relay between its broker's bridge and the floor broker)
    for ``BETBOX_FLOOR_OUTAGE`` seconds (default 20; 300 for the five minutes of the issue)
    while both tables play on; table-2 untouched."""
    outage = float(os.environ.get("BETBOX_FLOOR_OUTAGE", "20"))
    floor = Floor(tmp_path, {"table-1": 3, "table-2": 2}, relay=("table-1",)).start()
    ctl = controller(tmp_path / "jackpot.db")
    svc = floor.service(ctl)
    tables = FloorTables(floor, tmp_path)
    try:
        tables.wait_links("up", 20)
        with tables.playing(pace=0.5):
            wait_until(lambda: sum(ctl.marks().values()) >= 20, 60, "the first rounds' reports at the controller")
            floor.relays["table-1"].cut()
            cut_at = time.monotonic()
            tables.wait_links("down", 20, ["table-1"])
            down = tables.round_nos()
            assert tables.links(["table-2"]) == {"up"}
            wait_until(lambda: time.monotonic() - cut_at >= outage and tables.played_since(down, 2),
                       outage + 60, f"the outage of {outage:.0f} s, table-1 playing on")
            away = tables.round_nos()
            # nothing of the rounds table-1 opened with its bridge down reached the controller yet
            assert tables.links(["table-1"]) == {"down"} and _ingested(ctl, "table-1", down["table-1"]) == 0
            queued = sum(len(r) for u, r in tables.outboxes().items() if u.startswith("table-1/")) - \
                sum(ctl.marks().get(u, 0) for u in tables.last_seqs() if u.startswith("table-1/"))
            floor.relays["table-1"].restore()
            held = time.monotonic() - cut_at
            tables.wait_links("up", 30)
            back = tables.round_nos()
            wait_until(lambda: tables.played_since(back, 2), 60, "two rounds at every table, the bridge back")
        wait_until(lambda: tables.confirmed(ctl.marks()), 60, "every report of every unit at the controller")
        data = report(ctl.db)
        books = check_books(data, tables.outboxes(), tables.journals(), POOL.rate)
        tables.wait_meters(data)
        assert books.wagers > 0 and queued > 0
        assert tables.wagers_in_rounds("table-1", down["table-1"] + 1, away["table-1"]) == 0
        # drained in order: each unit's reports were taken in the order it numbered them
        for unit in tables.last_seqs():
            seqs = [s for (s,) in ctl.db.execute("SELECT seq FROM event WHERE unit = ? ORDER BY n", (unit,))]
            assert seqs == sorted(seqs), unit
            assert data["units"][unit]["gaps_recorded"] == 0, unit
        print(f"\nbridge down {held:.0f} s: {queued} reports queued at table-1's broker, "
              f"{away['table-1'] - down['table-1']} rounds dealt meanwhile")
    finally:
        tables.close()
        svc.stop()
        ctl.close()
        floor.stop()


def _meter_hits(ctl) -> list[str]:
    return [s for (s,) in ctl.db.execute("SELECT state FROM hit WHERE kind = 'meter' ORDER BY id")]


def test_a_full_hit_pending_when_its_tables_bridge_goes_down_is_paid_once_the_queue_drains(tmp_path):
    """Table-1 deals box 1 a suited four of a kind (100% of the meter): locked, PENDING on
    its seats. Its bridge is cut and the round ends meanwhile: the round's results wait at
    table-1's broker, the hit stays pending at the controller while table-2 plays on; once
    the bridge is back the hit is paid, the pool reseeded, the books exact."""
    floor = Floor(tmp_path, {"table-1": 2, "table-2": 2}, relay=("table-1",)).start()
    ctl = controller(tmp_path / "jackpot.db")
    svc = floor.service(ctl)
    tables = FloorTables(floor, tmp_path)
    try:
        tables.wait_links("up", 20)
        t1 = tables.drivers["table-1"].table
        wait_until(lambda: t1.settle() >= 0 and t1.dealer.meter == POOL.seed, 30, "the seed meter at table-1")
        open_round(t1, {1: {"main": 20, "progressive": 5}, 2: {"main": 20, "progressive": 5}})
        deal_initial(t1, {1: ["AH", "AH", "AH", "AH"], 2: ["TD", "9H", "7S", "8C"]})
        wait_until(lambda: _meter_hits(ctl) == ["pending"], 30, "the 100% hit pending at the controller")
        wait_until(lambda: t1.settle() >= 0 and all(s.controller.pending for s in t1.seats.values()), 30,
                   "PENDING on table-1's seats")
        with tables.playing(pace=0.2, tables=["table-2"]):
            floor.relays["table-1"].cut()
            tables.wait_links("down", 20, ["table-1"])
            finish_round(t1)                         # the round's end, queued behind the cut
            wait_until(lambda: tables.drained(), 30, "the table brokers' PUBACKs")
            cut = tables.round_nos()
            wait_until(lambda: tables.played_since({"table-2": cut["table-2"]}, 2), 60, "table-2 playing on")
            assert _meter_hits(ctl) == ["pending"]
            floor.relays["table-1"].restore()
            wait_until(lambda: _meter_hits(ctl) == ["confirmed"], 30, "the hit paid once the bridge is back")
            tables.wait_links("up", 30, ["table-1"])
        wait_until(lambda: tables.confirmed(ctl.marks()), 60, "every report of every unit at the controller")
        data = report(ctl.db)
        books = check_books(data, tables.outboxes(), tables.journals(), POOL.rate)
        tables.wait_meters(data)
        assert (books.meter_hits, books.meter_won) == (1, POOL.seed)
        assert data["pools"]["main"]["meters"]["reseeds"] == 1
        # the seats hear the confirmation on the controller's status, after the books
        wait_until(lambda: t1.settle() >= 0 and not any(s.controller.pending for s in t1.seats.values()), 30,
                   "PENDING gone from table-1's seats")
    finally:
        tables.close()
        svc.stop()
        ctl.close()
        floor.stop()


# -- two `betbox run` controllers on one PostgreSQL, on the floor broker -------------------


def _pair(floor: Floor, postgres, tmp_path) -> tuple[Controllers, subprocess.Popen, subprocess.Popen]:
    """tests/jackpot/controllers.py's pair, as the floor broker's ``jackpot/main`` user."""
    ctls = Controllers(floor.floor, postgres, tmp_path, user="jackpot/main", password=CONTROLLER["jackpot/main"])
    a, b = pair(ctls)
    return ctls, a, b


def test_the_active_controller_sigkilled_mid_burst_with_a_full_hit_pending_the_standby_books_every_report_once(
        postgres, tmp_path):
    """Table-1 deals box 1 a suited four of a kind (Switch: 100% of the meter) and stops at
    the first decision: the hit is locked, pending until the round ends. Tables 2 and 3 play
    on at full speed. The active controller is SIGKILLed; the standby takes over with the
    hit still pending for the same amount, books the round's end and every report once."""
    floor = Floor(tmp_path, {"table-1": 2, "table-2": 3, "table-3": 3}).start()
    ctls, a, b = _pair(floor, postgres, tmp_path)
    tables = FloorTables(floor, tmp_path)
    try:
        tables.wait_links("up", 30)
        t1 = tables.drivers["table-1"].table
        wait_until(lambda: t1.settle() >= 0 and t1.dealer.meter == POOL.seed, 30, "the seed meter at table-1")
        seed_meter = t1.dealer.meter
        open_round(t1, {1: {"main": 20, "progressive": 5}, 2: {"main": 20, "progressive": 5}})
        deal_initial(t1, {1: ["AH", "AH", "AH", "AH"], 2: ["TD", "9H", "7S", "8C"]})
        wait_until(lambda: ctls.meter_hits() == ["pending"], 30, "the 100% hit pending at the controller")
        wait_until(lambda: t1.settle() >= 0 and all(s.controller.pending for s in t1.seats.values()), 30,
                   "PENDING on table-1's seats")
        with tables.playing(pace=0, tables=["table-2", "table-3"]):
            before = ctls.events()
            wait_until(lambda: ctls.events() >= before + 60, 60, "the burst under way", step=0.005)
            at_kill = {t: n for t, n in tables.round_nos().items() if t != "table-1"}
            os.kill(a.pid, signal.SIGKILL)
            a.wait(10)
            killed = time.monotonic()
            wait_until(lambda: ctls.active_pid() == b.pid, 30, "the standby active", step=0.01)
            took = time.monotonic() - killed
            # the hit is still pending at the new controller, and at table-1's seats
            assert ctls.meter_hits() == ["pending"]
            tables.wait_links("up", 30, ["table-1"])
            wait_until(lambda: t1.settle() >= 0 and all(s.controller.pending for s in t1.seats.values()), 30,
                       "PENDING on table-1's seats, from the new controller")
            after = ctls.events()
            wait_until(lambda: ctls.events() > after, 30, "the standby's first commits")
            wait_until(lambda: tables.played_since(at_kill, 2), 60, "two more rounds at tables 2 and 3")
            finish_round(t1)
            wait_until(lambda: ctls.meter_hits() == ["confirmed"], 30, "the hit confirmed by the round's end")
        wait_until(lambda: tables.confirmed(ctls.marks()), 90, "every report of every unit at the controller")
        data = ctls.report()
        books = check_books(data, tables.outboxes(), tables.journals(), POOL.rate)
        tables.wait_meters(data)
        assert (books.meter_hits, books.meter_won) == (1, seed_meter)
        assert data["pools"]["main"]["meters"]["reseeds"] == 1
        print(f"\ntakeover: the standby active {took * 1000:.0f} ms after the SIGKILL, "
              f"{tables.rounds()} rounds, {sum(tables.last_seqs().values())} reports")
    finally:
        tables.close()
        ctls.close()
        floor.stop()


def test_the_database_restarted_under_the_active_controller_while_tables_play_loses_no_report(
        postgres, tmp_path):
    """PostgreSQL restarted (``pg_ctl restart -m fast``) while three tables play: the active
    controller's session ends and with it its lock; a controller takes the lock again in a
    new epoch and every report reaches the books once."""
    floor = Floor(tmp_path, {f"table-{t}": 2 for t in (1, 2, 3)}).start()
    ctls, a, b = _pair(floor, postgres, tmp_path)
    tables = FloorTables(floor, tmp_path)
    try:
        tables.wait_links("up", 30)
        with tables.playing(pace=0):
            wait_until(lambda: ctls.events() >= 40, 60, "the first rounds' reports at the controller")
            epoch, sessions = ctls.epoch(), ctls.sessions()
            postgres.restart()                               # under the active one, mid-stream
            restarted = tables.round_nos()
            wait_until(lambda: ctls.epoch() > epoch, 60, "a controller active again, in a new epoch")
            tables.wait_links("up", 30)
            wait_until(lambda: tables.played_since(restarted, 2), 60, "two more rounds at every table")
        wait_until(lambda: tables.confirmed(ctls.marks()), 90, "every report of every unit at the controller")
        data = ctls.report()
        books = check_books(data, tables.outboxes(), tables.journals(), POOL.rate)
        tables.wait_meters(data)
        assert books.wagers > 0
        assert a.poll() is None and b.poll() is None and ctls.active_pid() in (a.pid, b.pid)
        # the active one took no more reports once its database was gone (it said so), lost none
        assert "stepping down" in ctls.log("a")
        # ... and closed its link for good: the session taken from it once at most, never taken back
        assert ctls.since(sessions)[1] <= 1, ctls.broker.log()[-3000:]
    finally:
        tables.close()
        ctls.close()
        floor.stop()
