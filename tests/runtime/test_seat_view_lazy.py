"""The seat view is built when something reads it, once per step at most (issue #18: a
table built every seat's whole view after every step, ~240 times a round, whether or not
anyone looked). Reading it gives what building it after the step would have given."""

from __future__ import annotations

from firmware.engine.profile import load_profile
from firmware.runtime import seatview
from firmware.runtime.seatview import build_seat_view
from firmware.sim.driver import TableDriver
from firmware.sim.table import TableSpec


def test_a_round_nobody_looks_at_builds_no_view_and_a_reader_gets_one_build_per_step(tmp_path):
    driver = TableDriver.create(TableSpec("lazy", load_profile("rws-blackjack"), seed=1, state_dir=tmp_path))
    try:
        driver.play_round()
        before = seatview.builds
        driver.play_round()
        assert seatview.builds == before                 # no screen: nothing built
        seat = driver.table.seats[1]
        view = seat.view
        assert seatview.builds == before + 1
        assert seat.view is view and seatview.builds == before + 1     # read again: the same view
        assert view == build_seat_view(seat.facts())     # what an eager build gives
        assert view.round == 2 and view.phase in ("over", "void")
        driver.play_round()
        later = seat.view
        assert later.round == 3 and later != view
    finally:
        driver.table.close()


def test_the_view_follows_every_step_it_is_read_after(tmp_path):
    """Read after each step (as a screen would), the view is the step's, not a stale one."""
    driver = TableDriver.create(TableSpec("lazy2", load_profile("rws-blackjack"), seed=2, state_dir=tmp_path))
    try:
        seat = driver.table.seats[1]
        phases = []
        seat.observe(lambda unit: phases.append((unit.phase, unit.view.phase, unit.view.round, unit.round_no)))
        driver.play_round()
        assert phases and all(p == v and r == n for p, v, r, n in phases)
        assert {"open", "closing", "play"} <= {p for p, *_ in phases}
    finally:
        driver.table.close()
