"""After a dealer restart the shoe's counter goes on: no false gap; a real gap is still
caught (rws-blackjack-v5 §5.4)."""

from __future__ import annotations

from pathlib import Path

from firmware.engine.profile import load_profile
from firmware.sim import chipset
from firmware.sim.driver import TableDriver
from firmware.sim.table import InProcessTable, TableSpec, seat_spots


def driver(state_dir: Path) -> TableDriver:
    spec = TableSpec("t", load_profile("rws-blackjack"), seed=9, state_dir=state_dir)
    d = TableDriver(InProcessTable(spec, chipset.registry(spec.boxes, len(seat_spots(spec.profile)))), spec.seed)
    d.boot()
    return d


def interruptions(d: TableDriver) -> list[str]:
    return [a["alarm"] for a in d.table.dealer.alarms if a["alarm"].startswith("interruption")]


def test_no_false_gap_after_a_restart_and_a_real_gap_still_caught(tmp_path):
    d = driver(tmp_path)
    d.play_round()
    counter = d.table.dealer.shoe_counter
    assert counter > 0
    d.table.close()
    again = driver(tmp_path)                       # a new mock shoe, as after a power cut
    assert again.table.shoe.counter == counter == again.table.dealer.shoe_counter
    again.play_round()
    assert interruptions(again) == []              # no false gap
    assert again.table.dealer.shoe_counter > counter
    t = again.table
    t.console.press("open_bets")
    t.settle()
    again._place_bets()
    t.console.press("no_more_bets")
    t.settle()
    assert t.dealer.phase == "play"
    t.shoe.skip(1)                                  # a card leaves unseen: a real gap
    t.settle()
    assert interruptions(again)                    # caught: void, or continue with a card owed
    t.close()
