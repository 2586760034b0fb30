"""The jackpot controller's link gate and meter as journalled inputs of the seat and the
dealer (DESIGN "Progressive jackpot": if a seat loses its link to the controller,
progressive wagers are disabled at that seat, lamp off, screen says why, until it is back;
issue #6). The meter in force for a round is the dealer's, carried in ``round_open``
(`rws-blackjack-switch-v4 §3.7`: a 100% award is the meter's)."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest

from firmware.engine.round import Phase
from firmware.runtime.codec import decode, encode
from firmware.runtime.journal import open_readonly
from firmware.runtime.wire import NEVER_HEARD, ControllerStatus, controller_input
from firmware.sim.table import InProcessTable
from hal.ports import LAMP_OFF, LAMP_ON
from tests.tables import booted_table, place_bet

SWITCH = "rws-blackjack-switch"
UP = {"link": "up", "meter": "1000", "pending": False}
DOWN = {"link": "down", "meter": None, "pending": False}


def link(t: InProcessTable, box: int, status: dict) -> None:
    t.seats[box].post(("controller", status))
    t.settle()


def inputs(t: InProcessTable, unit: str, kind: str) -> list[dict]:
    j = open_readonly(t.spec.state_dir / unit / "journal.db")
    try:
        return [dict(r.body) for r in j.records() if r.dir == "in" and r.kind == kind]
    finally:
        j.close()


def test_no_controller_heard_yet_leaves_progressive_play_as_before(tmp_path):
    t = booted_table(tmp_path, SWITCH)
    seat = t.seats[1]
    assert seat.controller == ControllerStatus() == NEVER_HEARD
    assert seat.progressive_refusal is None
    t.console.press("open_bets")
    t.settle()
    assert t.lamps[1].state("progressive") == LAMP_ON


def test_link_down_while_bets_are_open_withdraws_the_progressive_wager(tmp_path):
    t = booted_table(tmp_path, SWITCH)
    link(t, 1, UP)
    t.console.press("open_bets")
    t.settle()
    place_bet(t, 1, 20)
    place_bet(t, 1, 5, "progressive")
    assert t.dealer.offers[1] == {"main": 20, "progressive": 5}
    assert t.lamps[1].state("progressive") == LAMP_ON

    link(t, 1, DOWN)
    seat = t.seats[1]
    assert seat.progressive_refusal == "controller_link_down"
    assert t.lamps[1].state("progressive") == LAMP_OFF      # lamp off ...
    assert any("jackpot controller" in m for m in seat.messages)   # ... and the screen says why
    assert t.dealer.offers[1] == {"main": 20}               # the offer follows the link
    assert t.lamps[2].state("progressive") == LAMP_ON       # only this seat lost its link

    t.console.press("no_more_bets")
    t.settle()
    # the dealer never sees the progressive chips: the box plays its main bet only
    assert t.dealer.round.box(1).stakes == {"main": 20}
    assert seat.unwagered == {"progressive": "controller_link_down"}
    assert [a["alarm"] for a in seat.alarms] == []           # no integrity alarm either
    # taking back chips that were not a wager is not pinching
    t.readers[1].remove_chips("progressive")
    t.cycle_readers(3, [1])
    assert [a["alarm"] for a in seat.alarms] == []


def test_link_back_up_offers_the_progressive_spot_again(tmp_path):
    t = booted_table(tmp_path, SWITCH)
    link(t, 1, DOWN)
    t.console.press("open_bets")
    t.settle()
    place_bet(t, 1, 20)
    place_bet(t, 1, 5, "progressive")
    assert t.dealer.offers[1] == {"main": 20}
    assert t.lamps[1].state("progressive") == LAMP_OFF
    link(t, 1, UP)
    assert t.seats[1].progressive_refusal is None
    assert t.lamps[1].state("progressive") == LAMP_ON
    assert t.dealer.offers[1] == {"main": 20, "progressive": 5}
    t.console.press("no_more_bets")
    t.settle()
    assert t.dealer.round.box(1).stakes == {"main": 20, "progressive": 5}
    assert t.seats[1].unwagered == {}


def test_a_link_lost_after_bets_locked_leaves_the_locked_wager_standing(tmp_path):
    t = booted_table(tmp_path, SWITCH)
    link(t, 1, UP)
    t.console.press("open_bets")
    t.settle()
    place_bet(t, 1, 20)
    place_bet(t, 1, 5, "progressive")
    t.console.press("no_more_bets")
    t.settle()
    link(t, 1, DOWN)
    # judged when bets closed: the wager stands, lamp stays off as for any locked round
    assert t.dealer.round.box(1).stakes == {"main": 20, "progressive": 5}
    assert t.seats[1].unwagered == {}
    assert t.lamps[1].state("progressive") == LAMP_OFF


def test_the_controller_status_is_journalled_and_recovered(tmp_path):
    t = booted_table(tmp_path, SWITCH)
    link(t, 1, UP)
    link(t, 1, UP)                         # the same status again: nothing new to journal
    link(t, 1, DOWN)
    assert inputs(t, "seat-1", "controller") == [UP, DOWN]
    t.console.press("open_bets")
    t.settle()
    place_bet(t, 1, 20)
    place_bet(t, 1, 5, "progressive")
    seat = t.restart_seat(1)              # power cut: the journal is all it has
    assert seat.controller.to_json() == DOWN
    assert seat.progressive_refusal == "controller_link_down"
    assert t.lamps[1].state("progressive") == LAMP_OFF
    assert t.dealer.offers[1] == {"main": 20}


@pytest.mark.parametrize("body, wrong", [
    ({"link": "sideways", "meter": None, "pending": False}, "link"),
    ({"link": "up", "meter": 1000, "pending": False}, "meter"),
    ({"link": "up", "meter": "lots", "pending": False}, "meter"),
    ({"link": "up", "meter": "-1", "pending": False}, "negative"),
    ({"link": "up", "meter": None, "pending": "no"}, "pending"),
    ({"link": "up", "meter": None, "pending": False, "colour": "red"}, "colour"),
    ("up", "mapping"),
])
def test_a_bad_controller_status_is_refused_naming_what_is_wrong(tmp_path, body, wrong):
    t = booted_table(tmp_path, SWITCH)
    link(t, 1, UP)
    before = t.seats[1].journal.last_step
    for unit in (t.seats[1], t.dealer):
        unit.post(("controller", body))
        with pytest.raises(ValueError, match=wrong):
            unit.pump()
    assert t.seats[1].journal.last_step == before            # nothing journalled
    assert t.seats[1].controller.to_json() == UP                       # nothing lost or changed


def test_the_dealer_opens_each_round_with_the_controller_meter(tmp_path):
    t = booted_table(tmp_path, SWITCH)
    t.dealer.post(("controller", {"link": "up", "meter": "1234.56", "pending": False}))
    t.settle()
    t.console.press("open_bets")
    t.settle()
    assert t.dealer.round.meter == Fraction("1234.56")
    # the meter in force is in the round's stream message: every seat opens with it
    assert all(seat.round.meter == Fraction("1234.56") for seat in t.seats.values())
    # a meter that moves during the round is for the next one
    t.dealer.post(("controller", {"link": "up", "meter": "1300", "pending": False}))
    t.settle()
    assert t.dealer.round.meter == Fraction("1234.56")
    t.console.press("no_more_bets")
    t.settle()
    t.console.press("void_round")
    t.settle()
    t.console.press("open_bets")
    t.settle()
    assert t.dealer.round.meter == 1300
    # a status with no meter (controller not heard) leaves the last meter in force
    t.dealer.post(("controller", {"link": "down", "meter": None, "pending": False}))
    t.settle()
    assert t.dealer.meter == 1300
    assert inputs(t, "dealer", "controller")[0]["meter"] == "1234.56"


def test_a_restarted_dealer_recovers_the_meter(tmp_path):
    t = booted_table(tmp_path, SWITCH)
    t.dealer.post(("controller", {"link": "up", "meter": "777.5", "pending": True}))
    t.settle()
    t.close()
    again = booted_table(tmp_path, SWITCH)          # a power cut: every unit recovers from its journal
    assert again.dealer.meter == Fraction("777.5")
    assert again.dealer.controller == ControllerStatus("up", "777.5", True)


def test_a_switch_100_percent_award_is_the_live_meter(tmp_path):
    """`rws-blackjack-switch-v4 §3.7`, §4.1.2: the suited four of a kind wins 100% of the meter."""
    t = booted_table(tmp_path, SWITCH)
    t.dealer.post(("controller", {"link": "up", "meter": "25000", "pending": False}))
    link(t, 1, {"link": "up", "meter": "25000", "pending": False})
    t.console.press("open_bets")
    t.settle()
    place_bet(t, 1, 20)
    place_bet(t, 1, 5, "progressive")
    t.console.press("no_more_bets")
    t.settle()
    state = t.dealer.round
    cards = {"box": iter(["AH"] * 4), "dealer": iter(["9C"])}
    while state.phase == Phase.INITIAL_DEAL:
        e = state.expecting()
        t.shoe.deal(next(cards["dealer" if e.to_dealer else "box"]))
        t.settle()
        state = t.dealer.round
    box = state.box(1)
    assert box.progressive_hand == "suited_four_of_a_kind"
    assert box.progressive_award == 25000
    assert t.seats[1].round.box(1).progressive_award == 25000


def test_one_controller_status_type_keeps_the_journal_and_checkpoint_json():
    """Issue #15: one ControllerStatus from the link's watch to the unit's state; its JSON
    is the journal input's and the checkpoint field's as before (a dict of link, meter,
    pending), and what does not fit is refused with what is wrong."""
    status = controller_input({"link": "up", "meter": "25009.25", "pending": True})
    assert status == ControllerStatus("up", "25009.25", True)
    assert controller_input(status) == status                       # the watch posts the type itself
    assert status.to_json() == {"link": "up", "meter": "25009.25", "pending": True}
    assert encode(status, ControllerStatus) == status.to_json()
    assert decode(status.to_json(), ControllerStatus, lambda name: None) == status
    assert decode({"link": None, "meter": None, "pending": False}, ControllerStatus, lambda name: None) is NEVER_HEARD
    with pytest.raises(ValueError, match="never heard has no meter"):
        ControllerStatus.from_json({"link": None, "meter": "5", "pending": False})
    with pytest.raises(ValueError, match="link must be 'up' or 'down'"):
        controller_input({"link": "sideways", "meter": None, "pending": False})
    with pytest.raises(dataclasses.FrozenInstanceError):
        status.link = "down"  # type: ignore[misc]
