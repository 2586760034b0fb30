"""Issue #14.6: the dealer console's technician key reaches every seat's screen. The key
turn is a journalled console input of the dealer (like its buttons), published as a
lasting table alarm (``technician_key`` until ``technician_key_off``) that each seat takes
as a journalled input, keeps across a restart and shows in its view; the seat display
opens its PIN pad on it (tests/ui/test_window_updates.py)."""

from __future__ import annotations

from firmware.engine.profile import load_profile
from firmware.runtime.journal import open_readonly
from firmware.sim import chipset
from firmware.sim.table import InProcessTable, TableSpec, seat_spots


def make(tmp_path) -> InProcessTable:
    p = load_profile("rws-blackjack")
    t = InProcessTable(TableSpec("t", p, 0, tmp_path, boxes=2), chipset.registry(2, len(seat_spots(p))))
    t.boot()
    return t


def key_on(seat) -> bool:
    return any(a.code == "technician_key" and a.lasting for a in seat.view.table_alarms)


def inputs(tmp_path, unit: str) -> list[dict]:
    j = open_readonly(tmp_path / unit / "journal.db")
    try:
        return [r.body for r in j.records() if r.dir == "in" and r.kind == "button"]
    finally:
        j.close()


def test_the_technician_key_is_journalled_and_shown_by_every_seat_until_turned_back(tmp_path):
    t = make(tmp_path)
    assert not any(key_on(s) for s in t.seats.values())
    t.console.turn_key(True)
    t.settle()
    assert all(key_on(s) for s in t.seats.values())
    assert [a["alarm"] for a in t.dealer.alarms][-1:] == ["technician_key"]      # the pit hears it too
    t.console.turn_key(False)
    t.settle()
    assert not any(key_on(s) for s in t.seats.values())
    assert inputs(tmp_path, "dealer")[-2:] == [{"button": "technician_key"}, {"button": "technician_key_off"}]


def test_a_seat_restarted_while_the_key_is_on_still_shows_it(tmp_path):
    t = make(tmp_path)
    t.console.turn_key(True)
    t.settle()
    seat = t.restart_seat(2)
    t.settle()
    assert key_on(seat)
    t.console.turn_key(False)
    t.settle()
    assert not key_on(t.seats[2])
