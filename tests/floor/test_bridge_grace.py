"""A table's bridge down longer than the controller's hold grace: the seats' claims that
reached the controller before the cut wait for the dealer's records queued behind it, and
that is no integrity alarm; the grace counts again from the bridge's return."""

from __future__ import annotations

import json
import time

from firmware.jackpot.controller import JackpotController, report
from firmware.link import topics
from tests.jackpot.test_jackpot_integration import all_confirmed, send
from tests.link.helpers import POOL, Books, send_dealer, wait_until

from .floor import Floor

GRACE = 2.0     # a short hold grace, so the outage below outlasts it several times


def _wager(unit: str, seq: int, rnd: int) -> bytes:
    table, box = unit.split("/")[0], int(unit.rsplit("-", 1)[1])
    return json.dumps({"schema": 1, "id": f"{unit.replace('/', '-')}-{seq:06d}", "unit": unit, "table": table,
                       "box": box, "seq": seq, "kind": "progressive_wager", "round": rnd,
                       "body": {"amount": "5"}}).encode()


def _held(ctl: JackpotController, table: str) -> int:
    return ctl.db.execute("SELECT COUNT(*) FROM claim WHERE state = 'held' AND table_id = ?", (table,)).fetchone()[0]


def test_held_claims_wait_while_their_tables_bridge_is_down_and_the_grace_counts_from_its_return(tmp_path):
    ctl = JackpotController(tmp_path / "jackpot.db", [POOL], hold_grace=30.0)
    try:
        for unit in ("table-1/seat-1", "table-2/seat-1"):
            assert ctl.ingest(topics.report_topic(unit), _wager(unit, 1, 1)).status == "accepted"
        t0 = time.time()
        ctl.bridge_state("table-1", True, now=t0)           # the retained 1 at start: not a return
        ctl.bridge_state("table-1", False, now=t0 + 1)
        assert ctl.bridges_down == {"table-1"}
        # minutes later: only table-2's seat is warned, table-1's dealer record is queued
        assert [w["table"] for w in ctl.check_holds(now=t0 + 300)] == ["table-2"]
        ctl.bridge_state("table-1", True, now=t0 + 300)
        assert ctl.bridges_down == frozenset()
        assert ctl.check_holds(now=t0 + 329) == []          # grace from the return, not from the claim
        warned = ctl.check_holds(now=t0 + 331)
        assert [(w["table"], w["kind"], w["source"]) for w in warned] == [("table-1", "progressive_wager", "seat")]
        assert report(ctl.db)["integrity"]["count"] == 2
    finally:
        ctl.close()


def test_a_bridge_down_longer_than_the_hold_grace_raises_no_uncorroborated_alarm(tmp_path):
    """Real brokers: table-1's seat reports its wager, the bridge is cut (a relay), the
    dealer's record of the round queues at the table broker for several hold graces; the
    controller (watching the bridge's retained state on the floor broker) raises nothing,
    and books the round once the bridge is back."""
    floor = Floor(tmp_path, {"table-1": 1}, relay=("table-1",)).start()
    ctl = JackpotController(tmp_path / "jackpot.db", [POOL], hold_grace=GRACE)
    svc = floor.service(ctl)
    unit = "table-1/seat-1"
    seat, dealer = floor.bus(unit, tmp_path / "seat.db"), floor.bus("table-1/dealer", tmp_path / "dealer.db")
    script = [("progressive_wager", {"amount": "5"}, 1, "1/w"), ("round_result", {"void": False, "net": "10"}, 1, "1/r")]
    expected = Books(events={unit: len(script)})
    try:
        send(seat, unit, script)
        wait_until(lambda: _held(ctl, "table-1") == len(script), 20, "the seat's claims held at the controller")
        floor.relays["table-1"].cut()
        wait_until(lambda: "table-1" in ctl.bridges_down, 20, "the bridge's 0 at the controller")
        send_dealer(dealer, {1: script}, expected)
        wait_until(dealer.drained, 20, "the table broker's PUBACK of the dealer's records")
        time.sleep(3 * GRACE)                   # the outage outlasts the grace (the service checks every tick)
        assert report(ctl.db)["integrity"]["count"] == 0
        assert _held(ctl, "table-1") == len(script)
        floor.relays["table-1"].restore()
        wait_until(lambda: all_confirmed(ctl, expected), 30, "the dealer's queued records at the controller")
        data = report(ctl.db)
        assert data["integrity"]["count"] == 0 and data["held"] == {"seat": 0, "dealer": 0}
        assert data["pools"]["main"]["meters"]["wagers"] == 1
    finally:
        seat.close()
        dealer.close()
        svc.stop()
        ctl.close()
        floor.stop()


def test_the_floor_broker_down_longer_than_the_hold_grace_raises_no_uncorroborated_alarm(tmp_path):
    """The floor broker SIGKILLed, not one bridge: the controller loses its own link and
    with it every table's bridge state (the floor broker's will for the bridges never
    reaches it). A seat's claim that reached it before the kill waits for the dealer's
    record queued at the table broker; while its link is down the controller cannot know,
    so it raises nothing, and the grace counts from its link's return."""
    floor = Floor(tmp_path, {"table-1": 1}).start()
    ctl = JackpotController(tmp_path / "jackpot.db", [POOL], hold_grace=GRACE)
    svc = floor.service(ctl)
    unit = "table-1/seat-1"
    seat, dealer = floor.bus(unit, tmp_path / "seat.db"), floor.bus("table-1/dealer", tmp_path / "dealer.db")
    script = [("progressive_wager", {"amount": "5"}, 1, "1/w"), ("round_result", {"void": False, "net": "10"}, 1, "1/r")]
    expected = Books(events={unit: len(script)})
    try:
        send(seat, unit, script)
        wait_until(lambda: _held(ctl, "table-1") == len(script), 20, "the seat's claims held at the controller")
        floor.floor.kill()
        wait_until(lambda: not svc.bus.connected, 20, "the controller's link down")
        send_dealer(dealer, {1: script}, expected)
        wait_until(dealer.drained, 20, "the table broker's PUBACK of the dealer's records")
        time.sleep(3 * GRACE)                   # the outage outlasts the grace (the service checks every tick)
        assert report(ctl.db)["integrity"]["count"] == 0
        floor.floor.start()
        wait_until(lambda: all_confirmed(ctl, expected), 30, "the dealer's queued records at the controller")
        data = report(ctl.db)
        assert data["integrity"]["count"] == 0 and data["held"] == {"seat": 0, "dealer": 0}
        assert data["pools"]["main"]["meters"]["wagers"] == 1
    finally:
        seat.close()
        dealer.close()
        svc.stop()
        ctl.close()
        floor.stop()
