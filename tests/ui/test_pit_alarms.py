"""Words for players and words for staff (issue 14.4): an alarm that concerns the pit (past
posting, pinching, the shoe's door opened) shows the player only a neutral "Please wait for
the dealer" in every language, while the dealer unit and the reports the seat sends the
controller name the real reason, the box and the spot. A real in-process table."""

from __future__ import annotations

import pytest

from firmware.link.reporter import alarm_code
from ui.i18n import tr
from ui.presenter import present

from .helpers import Table

#: words that would tell a player what the pit is told
REASONS = ("past", "post", "pinch", "door", "security", "alarm", "supervisor", "tamper", "removed", "added")


@pytest.fixture
def table(tmp_path):
    t = Table(tmp_path, boxes=2)
    t.table.shoe.shuffle()
    t.table.settle()
    yield t
    t.close()


def _past_posting(t: Table) -> None:
    t.bet(1, "perfect_pairs", 5, layer=1)               # a chip added after no more bets


def _pinching(t: Table) -> None:
    reader = t.table.readers[1]
    reader.remove_chips("main", sorted(reader.chips_on("main"))[:1])     # a chip taken back
    t.table.cycle_readers(3, [1])


def _shoe_door(t: Table) -> None:
    t.table.shoe.open_door()
    t.table.settle()


@pytest.mark.parametrize("make, code, spot, amount", [
    (_past_posting, "past_posting", "perfect_pairs", 5),
    (_pinching, "pinching", "main", 25),
    (_shoe_door, "shoe_door_opened", None, None),
])
def test_the_player_is_asked_to_wait_while_staff_are_told_the_reason(table, make, code, spot, amount):
    table.open()
    table.bet(1, "main", 25)
    table.press("no_more_bets")
    make(table)
    snap = table.snap()
    for lang in ("en", "zh", "ms"):
        screen = present(snap, lang)
        faults = [b for b in screen.banners if b.kind == "fault"]
        assert [b.text for b in faults] == [tr(lang, "fault.tamper")], lang     # "Please wait for the dealer."
        if lang == "en":
            assert faults[0].text == "Please wait for the dealer."
            words = " ".join(screen.texts()).lower()
            assert not [w for w in REASONS if w in words], words
    # staff: the dealer unit holds the alarm with its reason and box (its console's and the
    # pit's source), and the seat's / dealer's report to the controller carries the code
    [held] = [a for a in table.table.dealer.alarms if a.get("alarm") == code]
    assert alarm_code(held["alarm"]) == code            # the code the controller's report carries
    if spot is not None:                                # a seat's alarm: box, spot, amount, clause
        assert (held["unit"], held["box"], held["spot"], held["amount"]) == ("t1/seat-1", 1, spot, amount)
        assert f"{amount} " in held["detail"] and spot in held["detail"] and "§3.10" in held["detail"]
        assert any(a["alarm"] == code for a in table.seat(1).alarms)    # the seat's reports
    else:                                               # the dealer's own
        assert held["unit"] == "t1/dealer" and "door" in held["detail"]

def test_an_unknown_chip_is_said_on_its_spot_without_an_alarm_word(table):
    table.open()
    table.unknown_chip(1, "main")
    s = present(table.snap())
    assert not [b for b in s.banners if b.kind == "fault"]
    words = " ".join(s.texts()).lower()
    assert "not accepted" in words and not [w for w in ("security", "alarm", "supervisor") if w in words]
