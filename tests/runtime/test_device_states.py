"""Issue #12.4 in process (mock ports): a port's link lost / restored is a journalled input
with an alarm, on the seat's screen as a condition code; a seat whose reader is down takes
no bets that round; the dealer with no shoe cannot deal."""

from __future__ import annotations

import logging
from fractions import Fraction

from firmware.runtime.journal import open_readonly
from firmware.sim import chipset
from tests.tables import booted_table


def inputs(tmp_path, unit: str, kind: str) -> list[dict]:
    j = open_readonly(tmp_path / unit / "journal.db")
    try:
        return [r.body for r in j.records() if r.dir == "in" and r.kind == kind]
    finally:
        j.close()


def test_a_seat_whose_reader_is_lost_mid_betting_takes_no_bets_that_round(table, tmp_path):
    t = table
    t.console.press("open_bets")
    t.settle()
    for box in (1, 2):
        t.readers[box].place_chips("main", chipset.chips_for(Fraction(20), box, 0, 0))
    t.cycle_readers(2, [1, 2])
    assert t.seats[1].offered == {"main": 20}
    t.readers[1].disconnect("antenna cable cut")
    t.settle()
    seat = t.seats[1]
    assert seat.view.conditions == ("reader_down",)
    assert seat.offered == {} and seat.alarms[-1]["alarm"] == "reader_down"
    assert [(i.code, i.reason) for sp in seat.view.spots if sp.name == "main" for i in sp.issues] == [
        ("not_wagered", "reader_down")]
    assert any(a["alarm"] == "reader_down" and a["unit"] == "t/seat-1" for a in t.dealer.alarms)  # to the pit
    t.readers[1].reconnect()                   # back before no more bets: still no bets this round
    t.cycle_readers(2, [1, 2])
    assert seat.view.conditions == () and seat.offered == {}
    t.console.press("no_more_bets")
    t.settle()
    assert seat.unwagered == {"main": "reader_down"}
    assert [b.number for b in t.dealer.round.boxes] == [2]
    assert [b["state"] for b in inputs(tmp_path, "seat-1", "device")] == ["down", "up"]
    assert "antenna cable cut" in inputs(tmp_path, "seat-1", "device")[0]["reason"]
    # the next round takes the seat's bets again
    for card in "9H 6C 7S".split():
        t.shoe.deal(card)
        t.settle()
    t.console.press("stand")
    t.settle()
    for card in ("TC", "TD"):                  # the dealer: 6 10 10
        t.shoe.deal(card)
        t.settle()
    assert t.dealer.phase == "idle"
    t.console.press("open_bets")
    t.settle()
    t.cycle_readers(2, [1])
    assert seat.offered == {"main": 20}


def test_the_dealer_with_no_shoe_cannot_deal_and_the_seats_show_it(table, tmp_path, caplog):
    t = table
    caplog.set_level(logging.INFO, logger="firmware.runtime.unit")
    t.shoe.disconnect("usb unplugged")
    t.settle()
    assert t.dealer.alarms[-1]["alarm"] == "shoe_down"
    assert "t/dealer: card_shoe 'shoe' LOST: usb unplugged" in caplog.text
    for _ in range(5):                         # a flapping link: logged once per LOG_EVERY
        t.shoe.reconnect()
        t.shoe.disconnect("flap")
    t.settle()
    assert caplog.text.count("t/dealer: card_shoe 'shoe'") == 1
    assert all(s.view.conditions == ("shoe_down",) for s in t.seats.values())
    t.console.press("open_bets")
    t.settle()
    assert "card shoe (shoe) is not connected" in t.dealer.refusals[-1]["reason"]
    assert t.dealer.phase == "idle"
    t.console.disconnect("console cable")      # (the gpio backend has no loss to report)
    t.settle()
    assert t.seats[3].view.conditions == ("shoe_down", "console_down")
    t.shoe.reconnect()
    t.console.reconnect()
    t.settle()
    assert all(s.view.conditions == () for s in t.seats.values())
    t.console.press("open_bets")
    t.settle()
    assert t.dealer.phase == "open"
    assert [b["state"] for b in inputs(tmp_path, "dealer", "device")] == ["down"] + ["up", "down"] * 5 + [
        "down", "up", "up"]


def test_a_restart_replays_the_device_states_and_reopens_the_ports(table, tmp_path):
    t = table
    t.readers[2].disconnect("gone")
    t.settle()
    assert t.seats[2].devices_down
    t.close()
    again = booted_table(tmp_path)            # recovered: the same journal replays; at start the port is up
    seat = again.seats[2]
    assert seat.devices_down == {} and seat.view.conditions == ()
    assert [a["alarm"] for a in seat.alarms][-2:] == ["reader_down", "reader_restored"]


def test_an_antenna_fault_is_alarmed_and_that_spot_takes_no_bet_this_round(table, tmp_path):
    t = table
    t.console.press("open_bets")
    t.settle()
    t.readers[1].place_chips("main", chipset.chips_for(Fraction(20), 1, 0, 0))
    t.readers[1].place_chips("player_pair", chipset.chips_for(Fraction(5), 1, 1, 0))
    t.cycle_readers(2, [1])
    seat = t.seats[1]
    assert seat.offered == {"main": 20, "player_pair": 5}
    t.readers[1].fault("antenna_open", "player_pair")
    t.settle()
    assert seat.alarms[-1]["alarm"] == "reader_fault" and seat.alarms[-1]["spot"] == "player_pair"
    assert seat.offered == {"main": 20} and seat.view.conditions == ("reader_down",)
    t.console.press("no_more_bets")
    t.settle()
    assert seat.unwagered == {"player_pair": "antenna_fault"}
    assert inputs(tmp_path, "seat-1", "reader_fault") == [
        {"device": "reader-1", "spot": "player_pair", "code": "antenna_open"}]
