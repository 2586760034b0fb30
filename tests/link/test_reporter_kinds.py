"""A seat's side-bet results and alarms reported to the controller: each once, with the
unit's seq and an idempotency key, valid against the AsyncAPI document, and equal to what
the seats' journals say."""

from __future__ import annotations

from fractions import Fraction

from firmware.engine.profile import load_profile
from firmware.jackpot.service import JackpotService
from firmware.link import connect_bus
from firmware.link.config import config_from_url
from firmware.link.reporter import SeatReporter
from firmware.runtime.journal import open_readonly
from firmware.sim.driver import TableDriver
from firmware.sim.table import TableSpec

from .helpers import Sniffer, controller, wait_until
from .schema import validate_all


def test_side_bets_and_alarms_are_reported_once_and_match_the_journals(broker, tmp_path):
    profile = load_profile("rws-blackjack")
    assert profile.side_bets
    ctl = controller(tmp_path / "jackpot.db")
    svc = JackpotService(ctl, config_from_url(broker.url), tick=0.02).start()
    sniffer = Sniffer(broker.url)
    spec = TableSpec(table_id="kinds-1", profile=profile, seed=9, state_dir=tmp_path / "t", boxes=4)
    driver = TableDriver.create(spec)
    buses, reporters = [], []
    for box, seat in driver.table.seats.items():
        bus = connect_bus(broker.url, seat.unit_id, outbox_path=tmp_path / f"ob-{box}.db")
        buses.append(bus)
        reporters.append(SeatReporter(seat, bus))
    # an unknown chip before any round: an alarm without a round
    driver.table.readers[1].place_chips("main", ["FFEE01"])
    driver.table.cycle_readers(2, [1])
    for _ in range(12):
        driver.play_round()
    wait_until(lambda: all(b.drained() for b in buses), 60, "every report at the broker")
    wait_until(lambda: all(ctl.marks().get(b.unit_id) == b.outbox.last_seq for b in buses), 60,
               "every report at the controller")
    kinds = {}
    for r in sniffer.json("/report"):
        kinds.setdefault(r["kind"], []).append(r)
    assert kinds.get("side_bet") and kinds.get("alarm"), sorted(kinds)
    first = [r for r in kinds["alarm"] if r["unit"] == "kinds-1/seat-1"][0]
    assert first["body"]["alarm"] == "unknown_chip" and "round" not in first
    # each report once per (unit, seq); seqs gap-free per unit
    for bus in buses:
        seqs = sorted({r["seq"] for rs in kinds.values() for r in rs if r["unit"] == bus.unit_id})
        assert seqs == list(range(1, bus.outbox.last_seq + 1))
    # the side bets' nets and the alarms equal the seats' journals
    journal_side: dict[tuple[str, int], Fraction] = {}
    journal_alarms = 0
    for box in driver.table.seats:
        j = open_readonly(spec.state_dir / f"seat-{box}" / "journal.db")
        try:
            for r in j.records():
                if r.dir == "out" and r.kind == "result":
                    s = r.body["body"]["settlement"]
                    if s and not s.get("void"):
                        for bet in profile.side_bets:
                            if bet in s["bets"]:
                                journal_side[(f"kinds-1/seat-{box}", r.round)] = (
                                    journal_side.get((f"kinds-1/seat-{box}", r.round), Fraction(0))
                                    + Fraction(str(s["bets"][bet])))
                if r.dir == "out" and r.kind == "alarm":
                    journal_alarms += 1
        finally:
            j.close()
    reported_side: dict[tuple[str, int], Fraction] = {}
    for r in kinds["side_bet"]:
        key = (r["unit"], r["round"])
        reported_side[key] = reported_side.get(key, Fraction(0)) + Fraction(r["body"]["net"])
    assert reported_side == journal_side
    assert len(kinds["alarm"]) == journal_alarms
    # a reporter that looks at the same state again (a restart) reports nothing new
    before = [b.outbox.last_seq for b in buses]
    for rep in reporters:
        rep.alarms_seen = 0
        rep.sync()
    assert [b.outbox.last_seq for b in buses] == before
    seen = validate_all(sniffer.messages)
    assert seen["unitReport"] == sum(before)
    for bus in buses:
        bus.close()
    driver.table.close()
    sniffer.close()
    svc.stop()
    ctl.close()
