"""A seat whose journal holds more alarms than its bounded alarm log keeps (unknown-chip
alarms add up over a shift) starts again: its reporter reports the alarms still held, each
with the round it was raised in, and counts the ones no longer held (issue #15, "a crash to
fix first": ``SeatReporter.sync()`` raised IndexError on every start)."""

from __future__ import annotations

from firmware.engine.profile import load_profile
from firmware.link import connect_bus
from firmware.link.reporter import SeatReporter
from firmware.runtime.bus import InProcessBus
from firmware.runtime.journal import JOURNAL_NAME, Journal
from firmware.runtime.seat import SeatUnit
from firmware.runtime.unit import KEEP_RECENT
from firmware.sim.driver import TableDriver
from firmware.sim.table import TableSpec

from .helpers import Sniffer, wait_until

TABLE = "overflow-1"


def unknown_chips(driver: TableDriver, first: int, count: int) -> None:
    """``count`` unknown chips, one at a time on and off box 1's main spot: one alarm each."""
    reader = driver.table.readers[1]
    for n in range(first, first + count):
        reader.place_chips("main", [f"FF{n:06X}"])
        driver.table.cycle_readers(2, [1])
        reader.place_chips("main", [])
        driver.table.cycle_readers(2, [1])


def test_a_seat_recovered_with_250_alarms_starts_reports_what_it_holds_and_counts_the_rest(broker, tmp_path):
    profile = load_profile("rws-blackjack")
    spec = TableSpec(table_id=TABLE, profile=profile, seed=5, state_dir=tmp_path / "t", boxes=1)
    driver = TableDriver.create(spec)
    unknown_chips(driver, 0, 100)                 # before any round: no round
    driver.play_round()
    driver.play_round()
    seat = driver.table.seats[1]
    assert seat.round_no == 2
    unknown_chips(driver, 100, 150)               # after round 2
    assert len(seat.alarms) >= 250 and seat.alarms.first >= 50
    total, first = len(seat.alarms), seat.alarms.first
    registry, spots = seat.registry, seat.spots
    driver.table.close()

    # the seat starts again from its journal, as `betbox run` does: recover, then sync
    journal = Journal(spec.state_dir / "seat-1" / JOURNAL_NAME, f"{TABLE}/seat-1", "seat")
    again = SeatUnit(f"{TABLE}/seat-1", TABLE, 1, InProcessBus(), journal, registry, spots)
    again.recover()
    assert (len(again.alarms), again.alarms.first) == (total, first)
    sniffer = Sniffer(broker.url, f"betbox/v1/unit/{TABLE}/#")
    bus = connect_bus(broker.url, again.unit_id, outbox_path=tmp_path / "outbox.db")
    try:
        reporter = SeatReporter(again, bus)
        reporter.sync()                           # raised IndexError before the fix
        assert reporter.unreportable == first     # the alarms no longer held: counted
        held = [again.alarms[n] for n in range(first, total)]
        own = [a for a in held if a["unit"] == again.unit_id]
        wait_until(lambda: len([r for r in sniffer.json("/report") if r["kind"] == "alarm"]) >= len(own), 30,
                   "the held alarms at the broker")
        alarms = [r for r in sniffer.json("/report") if r["kind"] == "alarm"]
        assert len(alarms) == len(own) <= KEEP_RECENT
        # each with its own round (none before the first round), not the seat's current one
        assert [r.get("round") for r in alarms] == [a["round"] for a in own]
        assert {r.get("round") for r in alarms} == {None, 2}
        assert sorted(r["seq"] for r in alarms) == list(range(1, len(own) + 1))
        # a second look reports nothing again
        reporter.sync()
        assert bus.outbox.last_seq == len(own)
        # and the seat plays on: its next alarm (a step like any other) is reported, numbered
        # after every alarm it ever recorded, with the seat's round
        assert again.step("chips", {"spot": "main", "uids": ["FFEEEEEE"]})
        assert len(again.alarms) == total + 1
        wait_until(lambda: len([r for r in sniffer.json("/report") if r["kind"] == "alarm"]) > len(own), 30,
                   "the new alarm at the broker")
        newest = [r for r in sniffer.json("/report") if r["kind"] == "alarm"][-1]
        assert (newest["seq"], newest.get("round"), newest["body"]["alarm"]) == (len(own) + 1, 2, "unknown_chip")
        assert reporter.unreportable == first
    finally:
        bus.close()
        bus.outbox.close()
        journal.close()
        sniffer.close()
