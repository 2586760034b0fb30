"""Issue #11, findings 1-3: the dealer's record is the authority for money. Against a real
mosquitto with the documented ACL and passwords: a seat holding its own credentials cannot
award itself the jackpot, re-numbered reports are booked once, and a 100% hit is one
amount at the table, on the seat's screen, in the reports and in the controller's books."""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

from firmware.engine.profile import load_profile
from firmware.engine.round import Phase
from firmware.engine.settlement import settlement
from firmware.jackpot.controller import JackpotController, report
from firmware.jackpot.service import JackpotService
from firmware.link import connect_bus
from firmware.link.config import load_link_config
from firmware.link.presence import ControllerWatch
from firmware.link.reporter import DealerReporter, SeatReporter
from firmware.runtime.seatview import build_seat_view
from firmware.sim import chipset
from firmware.sim.table import InProcessTable, TableSpec, seat_spots
from tests.link.broker import Broker
from tests.link.helpers import POOL, Sniffer, dealer_payloads, dealer_records, wait_until
from tests.link.schema import validate_all

DOCS = Path(__file__).resolve().parents[2] / "docs" / "mqtt"
USERS = {"table-1/seat-1": "pw1", "table-1/seat-2": "pw2", "table-1/dealer": "pwd", "jackpot/main": "pwj",
         "observer": "pwo"}
#: A test-only reader of everything: the broker binds client ids to usernames, so a sniffer
#: under the controller's own user would take the controller's place.
OBSERVER = "\nuser observer\ntopic read betbox/v1/#\n"
SEAT1 = "betbox/v1/unit/table-1/seat-1/report"


@pytest.fixture
def acl_broker(tmp_path):
    b = Broker(tmp_path / "mosquitto", acl=(DOCS / "acl").read_text() + OBSERVER, users=USERS).start()
    yield b
    b.stop()


def _service(url: str, ctl: JackpotController) -> JackpotService:
    link = load_link_config({"broker": url, "username": "jackpot/main", "password": "pwj", "allow_insecure": True})
    return JackpotService(ctl, link, tick=0.02).start()


def _seat_report(seq: int, kind: str, round_: int, body: dict) -> str:
    return json.dumps({"schema": 1, "id": f"seat-1-forged-{seq:05d}", "unit": "table-1/seat-1",
                       "table": "table-1", "box": 1, "seq": seq, "kind": kind, "round": round_, "body": body})


FULL_HIT = {"category": "suited_four_of_a_kind", "award": None, "meter_share": "1", "amount": "1000"}


def test_a_seat_cannot_award_itself_the_jackpot_for_a_round_never_played(acl_broker, tmp_path):
    """Finding 1: seat 1's own credentials, its own report topic: a 100% hit for round
    999999 with no progressive wager, then a round_result confirming it. Never locked,
    never reseeded; an integrity alarm names the seat's report and the missing record."""
    ctl = JackpotController(tmp_path / "jackpot.db", [POOL], hold_grace=0.5)
    svc = _service(acl_broker.url, ctl)
    sniffer = Sniffer(acl_broker.url, "betbox/v1/#", username="observer", password="pwo")
    # the dealer reports the rounds really played (through its own outbox, its own user)
    dealer = connect_bus(acl_broker.url, "table-1/dealer", outbox_path=tmp_path / "d.db", role="dealer",
                         username="table-1/dealer", password="pwd", allow_insecure=True)
    played = {1: [("progressive_wager", {"amount": "5"}, 1, "1/w"),
                  ("round_result", {"void": False, "net": "-5"}, 1, "1/r")]}
    for kind, body, rnd, key in dealer_records(played):
        dealer.report(kind, body, key=key, table="table-1", round=rnd)
    attacker = Sniffer(acl_broker.url, "betbox/v1/jackpot/main/meter", username="table-1/seat-1", password="pw1")
    for seq, (kind, rnd, body) in enumerate([
            ("progressive_wager", 1, {"amount": "5"}),                  # what seat 1 really played
            ("round_result", 1, {"void": False, "net": "-5"}),
            ("progressive_hit", 999999, FULL_HIT),                      # the forgery
            ("round_result", 999999, {"void": False, "net": "1000"}),
            ("progressive_hit", 1, FULL_HIT)], start=1):                # and in a round it did play
        attacker.client.publish(SEAT1, _seat_report(seq, kind, rnd, body), qos=1)
    wait_until(lambda: ctl.marks().get("table-1/seat-1") == 5 and ctl.marks().get("table-1/dealer") == 2, 20,
               "every report at the controller")
    alarms = wait_until(lambda: [a for a in report(ctl.db)["integrity"]["last"] if a["round"] == 999999]
                        if len(report(ctl.db)["integrity"]["last"]) >= 3 else None, 20,
                        "the integrity alarms for round 999999")
    data = report(ctl.db)
    pool = data["pools"]["main"]
    assert (pool["meters"]["hits"], pool["meters"]["pending"], pool["meters"]["reseeds"]) == (0, 0, 0)
    assert pool["state"] == "live" and pool["meters"]["won"] == "0"
    assert data["last_hits"] == []
    assert (pool["meters"]["wagers"], pool["meters"]["wagers_in"]) == (1, "5")    # the real round is booked
    # the seat's word for round 999999 is named with the dealer's missing record
    assert {a["kind"] for a in alarms} == {"progressive_hit", "round_result"}
    assert all(a["seat_report"] is not None and a["dealer_report"] is None for a in alarms)
    assert any("999999" in a["detail"] and "table-1/seat-1" in a["detail"] for a in alarms)
    # the hit in round 1 is against the dealer's record of round 1, which has none: named both
    (r1,) = [a for a in data["integrity"]["last"] if a["round"] == 1]
    assert r1["kind"] == "progressive_hit" and r1["reason"] == "not_in_dealer_record"
    assert wait_until(lambda: sniffer.json("/jackpot/main/meter"), 10, "a meter")[-1]["pools"]["main"][
        "state"] == "live"
    attacker.close()
    dealer.close()
    svc.stop()
    seen = validate_all(sniffer.messages)
    assert seen["unitReport"] >= 7
    sniffer.close()
    ctl.close()


def test_re_numbered_reports_are_booked_once(acl_broker, tmp_path):
    """Finding 2: 75 wager reports sent again under new sequence numbers and ids: the
    pool's wagers stay 75; one re-sent with another amount is an integrity alarm."""
    ctl = JackpotController(tmp_path / "jackpot.db", [POOL])
    svc = _service(acl_broker.url, ctl)
    seat = connect_bus(acl_broker.url, "table-1/seat-1", outbox_path=tmp_path / "s.db",
                       username="table-1/seat-1", password="pw1", allow_insecure=True)
    dealer = connect_bus(acl_broker.url, "table-1/dealer", outbox_path=tmp_path / "d.db", role="dealer",
                         username="table-1/dealer", password="pwd", allow_insecure=True)
    script = [("progressive_wager", {"amount": "5"}, rnd, f"{rnd}/w") for rnd in range(1, 76)]
    for kind, body, rnd, key in script:
        seat.report(kind, body, key=key, table="table-1", box=1, round=rnd)
    for kind, body, rnd, key in dealer_records({1: script}):
        dealer.report(kind, body, key=key, table="table-1", round=rnd)
    wait_until(lambda: ctl.marks().get("table-1/seat-1") == 75 and ctl.marks().get("table-1/dealer") == 75, 30,
               "the seat's and the dealer's reports")
    assert report(ctl.db)["pools"]["main"]["meters"]["wagers"] == 75
    attacker = Sniffer(acl_broker.url, "betbox/v1/jackpot/main/meter", username="table-1/seat-1", password="pw1")
    for rnd in range(1, 76):
        attacker.client.publish(SEAT1, _seat_report(75 + rnd, "progressive_wager", rnd, {"amount": "5"}), qos=1)
    attacker.client.publish(SEAT1, _seat_report(151, "progressive_wager", 3, {"amount": "10"}), qos=1)
    # counts move just after the commit the marks show: wait for both
    wait_until(lambda: ctl.marks().get("table-1/seat-1") == 151 and ctl.counts["repeated"] == 75, 30,
               "the re-numbered reports")
    data = report(ctl.db)
    m = data["pools"]["main"]["meters"]
    assert (m["wagers"], Fraction(m["wagers_in"]), Fraction(m["contributions"])) == \
        (75, Fraction(375), 375 * POOL.rate)
    assert data["units"]["table-1/seat-1"]["events"] == 151         # held, so the seat's seqs stay complete
    assert ctl.counts["repeated"] == 75
    assert data["integrity"]["by_reason"] == {"conflicting_report": 1}
    assert data["integrity"]["last"][0]["round"] == 3
    attacker.close()
    seat.close()
    dealer.close()
    svc.stop()
    ctl.close()


def test_the_store_holds_one_claim_and_one_hit_per_box_and_round(tmp_path):
    """Finding 2 in the store itself: whatever code writes to it, a second seat claim or a
    second progressive hit for the same (table, round, box) is refused by SQLite."""
    ctl = JackpotController(tmp_path / "jackpot.db", [POOL])
    db = ctl.db
    db.execute("INSERT INTO claim (table_id, round, box, kind, key, source, event, value, held_at) "
               "VALUES ('t', 1, 1, 'progressive_wager', '', 'seat', 1, '{}', 0)")
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("INSERT INTO claim (table_id, round, box, kind, key, source, event, value, held_at) "
                   "VALUES ('t', 1, 1, 'progressive_wager', '', 'seat', 2, '{}', 0)")
    db.execute("INSERT INTO hit (event, unit, table_id, box, round, pool, kind, amount, state) "
               "VALUES (1, 't/seat-1', 't', 1, 1, 'main', 'meter', '10', 'pending')")
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("INSERT INTO hit (event, unit, table_id, box, round, pool, kind, amount, state) "
                   "VALUES (2, 't/seat-1', 't', 1, 1, 'main', 'fixed', '30', 'paid')")
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("INSERT INTO booking (table_id, round, box, kind, key, seat_event, dealer_event) "
                   "VALUES ('t', 1, 1, 'round_result', '', 1, 2), ('t', 1, 1, 'round_result', '', 3, 4)")
    ctl.close()


# -- finding 3: one amount for a 100% hit ------------------------------------------------


def _bet(t: InProcessTable, box: int, amount: int, spot: str) -> None:
    t.readers[box].place_chips(spot, chipset.chips_for(Fraction(amount), box, t.spots.index(spot), 0))
    t.cycle_readers(2, [box])


def _play_round(t: InProcessTable, cards: dict[int, list[str]]) -> None:
    """One round: main and progressive at every box of ``cards``, those initial cards, the
    dealer's 9C, every hand stands, the dealer draws tens."""
    t.console.press("open_bets")
    t.settle()
    for box in cards:
        _bet(t, box, 20, "main")
        _bet(t, box, 5, "progressive")
    t.console.press("no_more_bets")
    t.settle()
    dealt = {box: iter(c) for box, c in cards.items()}
    for _ in range(60):
        state = t.dealer.round
        if t.dealer.phase != "play" or state.is_over:
            break
        e = state.expecting()
        if e.kind == "decision":
            t.console.press("stand")
        elif e.to_dealer:
            t.shoe.deal("9C" if not state.dealer else "TD")
        else:
            t.shoe.deal(next(dealt[e.box], "TC"))
        t.settle()
    assert t.dealer.round.is_over and t.dealer.phase == "idle", (t.dealer.phase, list(t.dealer.refusals)[-3:])
    for box in cards:
        t.readers[box].remove_chips("main")
        t.readers[box].remove_chips("progressive")
        t.cycle_readers(2, [box])


def test_a_100_percent_hit_is_one_amount_at_the_table_on_the_screen_in_the_reports_and_books(acl_broker,
                                                                                             tmp_path):
    """Finding 3: the meter a round opened with pays its 100% hit; the round's own
    contributions stay for the next meter. Table 1.000,75 → books 1.000,75 (not 1.001,50)."""
    profile = load_profile("rws-blackjack-switch")
    ctl = JackpotController(tmp_path / "jackpot.db", [POOL])
    svc = _service(acl_broker.url, ctl)
    sniffer = Sniffer(acl_broker.url, "betbox/v1/#", username="observer", password="pwo")
    t = InProcessTable(TableSpec("table-1", profile, 0, tmp_path / "table"),
                       chipset.registry(7, len(seat_spots(profile))))
    t.boot()
    t.shoe.shuffle()
    t.settle()
    buses = {"dealer": connect_bus(acl_broker.url, "table-1/dealer", outbox_path=tmp_path / "d.db", role="dealer",
                                   username="table-1/dealer", password="pwd", allow_insecure=True)}
    DealerReporter(t.dealer, buses["dealer"]).sync()
    ControllerWatch(buses["dealer"], "main", "table-1").feed(t.dealer)
    for box in (1, 2):
        bus = buses[box] = connect_bus(acl_broker.url, f"table-1/seat-{box}", outbox_path=tmp_path / f"{box}.db",
                                       username=f"table-1/seat-{box}", password=f"pw{box}", allow_insecure=True)
        SeatReporter(t.seats[box], bus).sync()
        ControllerWatch(bus, "main", "table-1").feed(t.seats[box])

    def meter_is(amount: str) -> bool:
        t.settle()
        return t.dealer.meter == Fraction(amount) and all(
            s.controller.meter == amount for s in t.seats.values() if s.box in (1, 2))

    wait_until(lambda: meter_is("1000.00"), 20, "the seed meter at the dealer and the seats")
    _play_round(t, {1: ["TS", "9C", "8H", "7D"], 2: ["TD", "9H", "7S", "8C"]})       # no hit: 2 x 0.75 in
    wait_until(lambda: meter_is("1001.50"), 20, "round 1's contributions on the meter")
    _play_round(t, {1: ["AH", "AH", "AH", "AH"], 2: ["TD", "9H", "7S", "8C"]})       # the suited four
    table_box = settlement(t.dealer.round)["boxes"]["1"]
    seat_screen = build_seat_view(t.seats[1].facts()).progressive
    wait_until(lambda: all(b.drained() for b in buses.values()), 30, "every report at the broker")
    wait_until(lambda: [h["state"] for h in report(ctl.db)["last_hits"] if h["kind"] == "meter"] == ["confirmed"],
               30, "the hit locked and confirmed")
    reports = [json.loads(p) for tp, p, _ in sniffer.messages if tp.endswith("/report")]
    seat_hit = [r["body"] for r in reports if r["unit"] == "table-1/seat-1" and r["kind"] == "progressive_hit"]
    dealer_hit = [b["hit"] for r in reports if r["kind"] == "round_progressive" and r["round"] == 2
                  for b in r["body"]["boxes"] if b["box"] == 1]
    data = report(ctl.db)
    meter_hits = [h for h in data["last_hits"] if h["kind"] == "meter"]
    amounts = {"table": Fraction(str(table_box["progressive"]["award"])),
               "screen": Fraction(seat_screen.award),
               "seat report": Fraction(seat_hit[0]["amount"]),
               "dealer report": Fraction(dealer_hit[0]["amount"]),
               "books": Fraction(meter_hits[0]["amount"]),
               "books won": Fraction(data["pools"]["main"]["meters"]["won"])}
    assert set(amounts.values()) == {Fraction("1001.50")}, amounts
    assert seat_screen.hand == "suited_four_of_a_kind" and not seat_screen.pending
    # the round's own contributions stay in the pool: reseeded on top of them
    pool = data["pools"]["main"]
    assert Fraction(pool["exact"]["amount"]) == POOL.seed + 2 * 5 * POOL.rate
    assert pool["balanced"] and pool["meters"]["shortfall"] == "0"
    # box 2's envy bonus (Switch §3.7.2) and every result were booked against the dealer's record
    assert (pool["meters"]["envy"], pool["meters"]["wagers"]) == (1, 4)
    assert data["integrity"]["count"] == 0 and data["held"] == {"seat": 0, "dealer": 0}
    assert t.dealer.round.phase != Phase.VOID
    t.close()
    for bus in buses.values():
        bus.close()
    svc.stop()
    validate_all(sniffer.messages)
    sniffer.close()
    ctl.close()


# -- the controller's side, ingested directly ----------------------------------------------


def _ingest_seat(ctl, seq: int, kind: str, round_: int, body: dict, box: int = 1):
    unit = f"table-1/seat-{box}"
    return ctl.ingest(f"betbox/v1/unit/{unit}/report", json.dumps(
        {"schema": 1, "id": f"seat-{box}-{seq:06d}", "unit": unit, "table": "table-1", "box": box, "seq": seq,
         "kind": kind, "round": round_, "body": body}).encode())


def test_a_seat_and_dealer_that_disagree_book_nothing_and_the_alarm_names_both(tmp_path):
    ctl = JackpotController(tmp_path / "jackpot.db", [POOL])
    _ingest_seat(ctl, 1, "progressive_wager", 1, {"amount": "10"})
    ((topic, payload),) = dealer_payloads("table-1", dealer_records({1: [("progressive_wager", {"amount": "5"},
                                                                         1, "1/w")]}))
    assert ctl.ingest(topic, payload).status == "accepted"
    data = report(ctl.db)
    assert data["pools"]["main"]["meters"]["wagers"] == 0
    (alarm,) = data["integrity"]["last"]
    assert alarm["reason"] == "disagrees_with_dealer" and alarm["seat_report"] == 1 and alarm["dealer_report"] == 2
    assert "10" in alarm["detail"] and "5" in alarm["detail"]
    ctl.close()


def test_a_dealer_record_no_seat_reports_is_alarmed_after_the_grace_and_booked_when_the_seat_comes(tmp_path):
    ctl = JackpotController(tmp_path / "jackpot.db", [POOL], hold_grace=30)
    played = [("progressive_wager", {"amount": "5"}, 1, "1/w"),
              ("round_result", {"void": False, "net": "-5"}, 1, "1/r")]
    for topic, payload in dealer_payloads("table-1", dealer_records({1: played})):
        ctl.ingest(topic, payload)
    assert ctl.check_holds() == []                           # within the grace
    late = ctl.check_holds(now=10 ** 12)
    assert {(a["kind"], a["source"]) for a in late} == {("progressive_wager", "dealer"), ("round_result", "dealer")}
    assert ctl.check_holds(now=10 ** 12) == []               # alarmed once each
    assert report(ctl.db)["held"] == {"seat": 0, "dealer": 2}
    _ingest_seat(ctl, 1, "progressive_wager", 1, {"amount": "5"})     # the seat's catch-up, later
    _ingest_seat(ctl, 2, "round_result", 1, {"void": False, "net": "-5"})
    data = report(ctl.db)
    assert data["pools"]["main"]["meters"]["wagers"] == 1 and data["held"] == {"seat": 0, "dealer": 0}
    ctl.close()


def test_a_seat_may_hold_only_so_many_claims_the_dealer_never_recorded(tmp_path, monkeypatch):
    import firmware.jackpot.controller as controller_module
    monkeypatch.setattr(controller_module, "MAX_HELD", 3)
    ctl = JackpotController(tmp_path / "jackpot.db", [POOL])
    assert [_ingest_seat(ctl, n, "progressive_wager", 1000 + n, {"amount": "5"}).status for n in (1, 2, 3, 4)] == \
        ["accepted"] * 3 + ["rejected"]
    assert report(ctl.db)["rejected"]["by_reason"] == {"hold_full": 1}
    assert _ingest_seat(ctl, 1, "progressive_wager", 1, {"amount": "5"}, box=2).status == "accepted"  # per seat
    ctl.close()


def test_a_meter_share_award_is_rounded_down_to_the_cent_as_the_controller_locks_it():
    """Finding 3 for shares below 100%: the engine pays what the controller can lock (and
    what a report can carry: whole cents), 10% of 1,000.05 is 100.00, not 100.005."""
    from firmware.engine.profile import Award
    from firmware.jackpot import pools as P
    assert Award(meter_share=Fraction(1, 10)).value(Fraction("1000.05")) == Fraction(100)
    assert Award(meter_share=Fraction(1)).value(Fraction("1234.56")) == Fraction("1234.56")
    spec = POOL
    s = P.lock_amount(spec, P.new_pool(spec), Fraction(1, 10), Fraction(100))
    assert (s.amount, s.won, s.needs_seed, P.balanced(s)) == (Fraction(900), Fraction(100), False, True)
    # a pool holding less than the table's amount: the difference is seed money, counted
    short = P.lock_amount(spec, P.new_pool(spec), Fraction(1), Fraction(1200))
    assert (short.amount, short.shortfall, short.won, P.balanced(short)) == (0, Fraction(200), Fraction(1200), True)
    with pytest.raises(ValueError, match="cents"):
        P.lock_amount(spec, P.new_pool(spec), Fraction(1), Fraction("0.005"))


def test_a_hit_that_arrives_before_its_wager_waits_for_it_and_locks(tmp_path):
    """After a reconnect the outbox resends from the controller's mark while the broker may
    still deliver newer reports: a seat's hit can come before its own wager report."""
    ctl = JackpotController(tmp_path / "jackpot.db", [POOL])
    script = [("progressive_wager", {"amount": "5"}, 1, "1/w"), ("progressive_hit", FULL_HIT, 1, "1/h")]
    for topic, payload in dealer_payloads("table-1", dealer_records({1: script})):
        ctl.ingest(topic, payload)
    _ingest_seat(ctl, 2, "progressive_hit", 1, FULL_HIT)
    assert report(ctl.db)["pools"]["main"]["meters"]["hits"] == 0          # waits for its wager
    _ingest_seat(ctl, 1, "progressive_wager", 1, {"amount": "5"})
    data = report(ctl.db)
    assert (data["pools"]["main"]["meters"]["hits"], data["pools"]["main"]["state"]) == (1, "pending")
    assert data["last_hits"][0]["amount"] == "1000" and data["integrity"]["count"] == 0
    ctl.close()
