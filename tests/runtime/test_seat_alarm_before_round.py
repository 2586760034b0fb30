"""A seat's alarm raised before the table's first round has no round (``round: null``): the
dealer takes it as a between-rounds alarm (it reaches the pit), and still refuses a forged or
malformed one."""

from __future__ import annotations

from pathlib import Path

from firmware.runtime.bus import Message, up_topic
from firmware.sim import chipset
from firmware.sim.table import InProcessTable
from tests.tables import booted_table


def unknown_chip_before_any_round(state_dir: Path) -> InProcessTable:
    t = booted_table(state_dir)
    assert t.dealer.round_no == 0
    t.readers[3].place_chips("main", [chipset.unknown_uid(3, 0)])
    t.cycle_readers(2, [3])
    return t


def test_a_seat_alarm_before_the_first_round_reaches_the_dealer_and_the_pit(tmp_path):
    t = unknown_chip_before_any_round(tmp_path)
    seat_alarm = t.seats[3].alarms[-1]
    assert (seat_alarm["alarm"], seat_alarm["round"]) == ("unknown_chip", None)
    taken = [a for a in t.dealer.alarms if a.get("unit") == "t/seat-3"]
    assert [(a["alarm"], a["round"]) for a in taken] == [("unknown_chip", None)]
    assert t.dealer.rejected == 0, t.dealer.rejections
    assert t.dealer.pit_calls == {"unknown_chip": 1} and t.dealer.pit_called
    t.close()


def test_a_seat_alarm_without_a_round_that_is_forged_or_malformed_is_refused(tmp_path):
    t = booted_table(tmp_path)
    seq = 1000
    bad = [
        # seat 3 raising an alarm in seat 4's name
        {"box": 3, "round": None, "unit": "t/seat-4", "alarm": "unknown_chip", "detail": "x"},
        # no raiser at all
        {"box": 3, "round": None, "alarm": "unknown_chip", "detail": "x"},
        # a code that is no short name; a round that is no number
        {"box": 3, "round": None, "unit": "t/seat-3", "alarm": "Unknown Chip!", "detail": "x"},
        {"box": 3, "round": "first", "unit": "t/seat-3", "alarm": "unknown_chip", "detail": "x"},
        {"box": 3, "round": None, "unit": "t/seat-3", "alarm": "unknown_chip", "detail": 7},
    ]
    for body in bad:
        seq += 1
        t.bus.publish(Message(up_topic("t", 3), "alarm", "t/seat-3", seq, body))
    t.settle()
    assert t.dealer.rejected == len(bad), t.dealer.alarms
    assert not [a for a in t.dealer.alarms if a.get("unit") != "t/dealer"]
    assert t.dealer.pit_calls == {}
    problems = [r["problem"] for r in t.dealer.rejections]
    assert "raised by 't/seat-4', sent by 't/seat-3'" in problems[0]
    assert "raised by None" in problems[1]
    assert "short name" in problems[2] and "round" in problems[3] and "detail" in problems[4]
    t.close()
