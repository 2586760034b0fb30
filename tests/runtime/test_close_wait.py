"""The bounded wait for locks after "no more bets": a seat that has not locked within the
dealer's ``close_wait`` is closed without its wagers (`rws-blackjack-v5 §3.10`, §5.8: no bet
is placed after "no more bets"). Time is a journalled input (``("tick", {"now": s})``), so
these tests use no sleeps and a replay decides as the live dealer did."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from firmware.engine.profile import load_profile
from firmware.runtime.bus import Message
from firmware.runtime.dealer import DealerUnit
from firmware.runtime.journal import open_readonly
from firmware.sim import chipset
from firmware.sim.table import InProcessTable, TableSpec, seat_spots


def reboot(tmp_path: Path, silent: int | None = None) -> InProcessTable:
    """The table's units powered on: each recovers from its journal under ``tmp_path``."""
    p = load_profile("rws-blackjack")
    t = InProcessTable(TableSpec("t", p, 0, tmp_path), chipset.registry(7, len(seat_spots(p))))
    if silent is not None:
        silence_locks_of(t, silent)
    t.boot()
    return t


def make(tmp_path: Path) -> InProcessTable:
    t = reboot(tmp_path)
    t.shoe.shuffle()
    t.settle()
    return t


def bet(t: InProcessTable, box: int, amount: int, spot: str = "main") -> None:
    t.readers[box].place_chips(spot, chipset.chips_for(Fraction(amount), box, t.spots.index(spot), 0))
    t.cycle_readers(2, [box])


def tick(t: InProcessTable, now: float) -> None:
    t.dealer.post(("tick", {"now": now}))
    t.settle()


def silence_locks_of(t: InProcessTable, box: int) -> None:
    """The seat's lock never reaches the dealer (a stuck seat, a lost link)."""
    def tamper(subscriber: str, m: Message):
        if subscriber.endswith("dealer") and m.kind in ("lock", "hello") and m.body.get("box") == box:
            return None
        return m
    t.bus.tamper = tamper


def closing_with_seat_3_silent(tmp_path: Path) -> InProcessTable:
    t = make(tmp_path)
    t.console.press("open_bets")
    t.settle()
    bet(t, 1, 20)
    bet(t, 3, 50)
    silence_locks_of(t, 3)
    t.console.press("no_more_bets")
    t.settle()
    assert t.dealer.phase == "closing" and t.dealer.waiting == {3}
    return t


def test_a_seat_that_does_not_lock_in_time_is_closed_without_its_wagers(tmp_path):
    t = closing_with_seat_3_silent(tmp_path)
    assert t.dealer.close_wait == 5.0
    tick(t, 100.0)                     # the wait begins at the first reading
    tick(t, 104.9)
    assert t.dealer.phase == "closing"
    tick(t, 105.0)
    assert t.dealer.phase == "play"
    assert [b.number for b in t.dealer.round.boxes] == [1]       # box 3 takes no part
    missing = [a for a in t.dealer.alarms if a["alarm"] == "seats_missing"]
    assert missing and missing[0]["boxes"] == [3] and "[3]" in missing[0]["detail"]
    seat = t.seats[3]
    assert seat.bets_not_taken == "lock_timeout"
    assert seat.unwagered == {"main": "bets_not_taken"}
    assert any("bets not taken" in m for m in seat.messages)
    assert [a["alarm"] for a in seat.alarms] == []                # no integrity alarm
    assert t.seats[1].bets_not_taken is None
    # the seat's chips were never a wager: taking them back is not pinching
    t.readers[3].remove_chips("main")
    t.cycle_readers(3, [3])
    assert [a["alarm"] for a in seat.alarms] == []


def test_only_the_readings_that_start_or_end_the_wait_are_journalled(tmp_path):
    t = closing_with_seat_3_silent(tmp_path)
    tick(t, 0.5)                       # starts the wait
    for now in (1.0, 2.0, 3.0, 4.0):
        tick(t, now)
    tick(t, 5.5)                       # ends it
    tick(t, 6.0)                       # bets are closed: nothing to time
    j = open_readonly(tmp_path / "dealer" / "journal.db")
    try:
        ticks = [r.body["now"] for r in j.records() if r.dir == "in" and r.kind == "tick"]
    finally:
        j.close()
    assert ticks == [0.5, 5.5]


def test_ticks_while_bets_are_open_start_nothing(tmp_path):
    t = make(tmp_path)
    t.console.press("open_bets")
    t.settle()
    tick(t, 0.0)
    bet(t, 1, 20)
    silence_locks_of(t, 3)
    t.console.press("no_more_bets")
    t.settle()
    tick(t, 10.0)                      # the wait begins now, not at the reading while open
    assert t.dealer.phase == "closing"
    tick(t, 14.0)
    assert t.dealer.phase == "closing"
    tick(t, 15.0)
    assert t.dealer.phase == "play"


def test_a_replayed_dealer_closes_exactly_as_it_did(tmp_path):
    t = closing_with_seat_3_silent(tmp_path)
    tick(t, 50.0)
    tick(t, 56.0)
    head = t.dealer.stream_seq
    t.close()
    again = reboot(tmp_path, silent=3)   # recover() raises if the replay gives other messages
    assert again.dealer.phase == "play" and again.dealer.replayed_steps > 0
    assert again.dealer.round.box(1).stakes == {"main": 20}
    assert [b.number for b in again.dealer.round.boxes] == [1]
    assert again.dealer.stream_seq > head   # and the restarted table carries on


def test_a_restarted_dealer_starts_the_wait_again(tmp_path):
    t = closing_with_seat_3_silent(tmp_path)
    tick(t, 1000.0)                    # a reading of the clock before the restart ...
    t.close()
    again = reboot(tmp_path, silent=3)
    assert again.dealer.phase == "closing" and again.dealer.closing_since is None
    tick(again, 3.0)                   # ... means nothing after it (a monotonic clock restarts)
    tick(again, 7.9)
    assert again.dealer.phase == "closing"
    tick(again, 8.0)
    assert again.dealer.phase == "play" and again.seats[3].bets_not_taken == "lock_timeout"


def test_the_dealer_pressing_again_says_so_to_the_seat(tmp_path):
    t = closing_with_seat_3_silent(tmp_path)
    t.console.press("no_more_bets")
    t.settle()
    assert t.dealer.phase == "play"
    assert t.seats[3].bets_not_taken == "closed_by_dealer"


def test_a_seat_that_locked_in_time_plays(tmp_path):
    t = make(tmp_path)
    t.console.press("open_bets")
    t.settle()
    bet(t, 1, 20)
    t.console.press("no_more_bets")
    t.settle()
    assert t.dealer.phase == "play"    # every seat locked: no wait at all
    assert not any(a["alarm"] == "seats_missing" for a in t.dealer.alarms)


@pytest.mark.parametrize("body, wrong", [({"now": "soon"}, "now"), ({"now": float("nan")}, "finite"),
                                         ({"then": 1}, "tick"), ({"now": True}, "now")])
def test_a_bad_clock_reading_is_refused_naming_what_is_wrong(tmp_path, body, wrong):
    t = closing_with_seat_3_silent(tmp_path)
    before = t.dealer.journal.last_step
    t.dealer.post(("tick", body))
    with pytest.raises(ValueError, match=wrong):
        t.dealer.pump()
    assert t.dealer.journal.last_step == before and t.dealer.phase == "closing"


def test_the_wait_is_a_bounded_setting(tmp_path):
    p = load_profile("rws-blackjack")
    from firmware.runtime.bus import InProcessBus
    from firmware.runtime.journal import Journal
    with pytest.raises(ValueError, match="close_wait"):
        DealerUnit("d", "t", InProcessBus(), Journal(tmp_path / "j.db", "d", "dealer"), p, close_wait=0)
