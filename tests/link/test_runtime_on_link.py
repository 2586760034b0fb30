"""Whole tables of the runtime's units (simulated players on mock hardware) with every
seat reporting to the jackpot controller over a real mosquitto through the observer seam:
the controller's accounting equals the sum of the seats' journals."""

from __future__ import annotations

from fractions import Fraction

from firmware.engine.profile import load_profile
from firmware.jackpot.controller import report
from firmware.jackpot.service import JackpotService
from firmware.link import connect_bus
from firmware.link.config import config_from_url
from firmware.link.reporter import DealerReporter, SeatReporter
from firmware.runtime.journal import open_readonly
from firmware.sim.driver import TableDriver
from firmware.sim.table import TableSpec

from .helpers import POOL, controller, wait_until


def journal_totals(state_dir, boxes):
    """What the seats' own journals say was wagered and won on the progressive."""
    wagers = hits = envy = 0
    wagers_in = fixed = envy_won = Fraction(0)
    for box in boxes:
        j = open_readonly(state_dir / f"seat-{box}" / "journal.db")
        try:
            for r in j.records():
                if r.dir != "out" or r.kind != "result":
                    continue
                s = r.body["body"]["settlement"]
                if s is None or s.get("void") or "progressive" not in s:
                    continue
                wagers += 1
                wagers_in += Fraction(5)
                p = s["progressive"]
                if p["hand"] is not None and p["award"] is not None:
                    hits += 1
                    fixed += Fraction(str(p["award"]))
                if "envy_bonus" in s["bets"]:
                    envy_won += Fraction(str(s["bets"]["envy_bonus"]))
                    envy += int(Fraction(str(s["bets"]["envy_bonus"])) / 1000)
        finally:
            j.close()
    return wagers, wagers_in, hits, fixed, envy, envy_won


def test_rounds_at_several_tables_reported_over_mqtt_match_the_seats_journals(broker, tmp_path):
    profile = load_profile("rws-blackjack-switch")
    assert profile.progressive is not None and profile.progressive.wager == 5
    ctl = controller(tmp_path / "jackpot.db")
    svc = JackpotService(ctl, config_from_url(broker.url)).start()
    drivers, buses, reporters = [], [], []
    for t in (1, 2):
        spec = TableSpec(table_id=f"rt-{t}", profile=profile, seed=40 + t, state_dir=tmp_path / f"rt-{t}", boxes=4)
        driver = TableDriver.create(spec)
        drivers.append(driver)
        # the dealer's record of every round: what the controller books the seats' reports by
        bus = connect_bus(broker.url, driver.table.dealer.unit_id, outbox_path=tmp_path / f"rt-{t}-dealer.db",
                          role="dealer")
        buses.append(bus)
        reporters.append(DealerReporter(driver.table.dealer, bus))
        for box, seat in driver.table.seats.items():
            bus = connect_bus(broker.url, seat.unit_id, outbox_path=tmp_path / f"rt-{t}-ob-{box}.db")
            buses.append(bus)
            reporters.append(SeatReporter(seat, bus))
    for _ in range(25):
        for driver in drivers:
            driver.play_round()
    wait_until(lambda: all(b.drained() for b in buses), 60, "every seat's reports at the broker")
    wait_until(lambda: all(ctl.marks().get(b.unit_id) == b.outbox.last_seq for b in buses if b.outbox.last_seq),
               60, "every report at the controller")
    data = report(ctl.db)
    m = data["pools"]["main"]["meters"]
    totals = [journal_totals(d.table.spec.state_dir, d.table.seats) for d in drivers]
    wagers, wagers_in, hits, fixed, envy, envy_won = (sum(x[i] for x in totals) for i in range(6))
    assert wagers > 10                                   # the players did bet the progressive
    assert (m["wagers"], Fraction(m["wagers_in"])) == (wagers, wagers_in)
    assert Fraction(m["contributions"]) == wagers_in * POOL.rate
    assert (m["fixed_hits"], Fraction(m["fixed_won"])) == (hits, fixed)
    assert (m["envy"], Fraction(m["envy_won"])) == (envy, envy_won)
    assert data["pools"]["main"]["balanced"]
    for u in data["units"].values():
        assert u["missing"] == 0 and u["duplicates"] == 0
    # every seat's word agreed with its dealer's record: nothing disputed, nothing waiting
    assert data["integrity"]["count"] == 0 and data["held"] == {"seat": 0, "dealer": 0}
    for driver in drivers:
        driver.table.close()
    for bus in buses:
        bus.close()
    svc.stop()
    ctl.close()
