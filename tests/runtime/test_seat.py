"""A seat's chips after "no more bets", the dual check, late and restarted seats."""

from __future__ import annotations

from fractions import Fraction

import pytest

from firmware.engine.round import Phase
from firmware.runtime.bus import Message
from firmware.sim import chipset
from firmware.sim.table import InProcessTable
from hal.ports import LAMP_OFF, LAMP_ON
from tests.tables import booted_table


def bet(t: InProcessTable, box: int, amount: int, spot: str = "main", layer: int = 0) -> None:
    t.readers[box].place_chips(spot, chipset.chips_for(Fraction(amount), box, t.spots.index(spot), layer))
    t.cycle_readers(2, [box])


def open_and_close(t: InProcessTable, bets: dict[int, int]) -> None:
    t.console.press("open_bets")
    t.settle()
    for box, amount in bets.items():
        bet(t, box, amount)
    t.console.press("no_more_bets")
    t.settle()


def deal(t: InProcessTable, cards: str) -> None:
    for c in cards.split():
        t.shoe.deal(c)
        t.settle()


def alarms(t: InProcessTable, box: int) -> list[str]:
    return [a["alarm"] for a in t.seats[box].alarms]


def test_wagers_lock_and_lamps_follow_the_round(tmp_path):
    t = booted_table(tmp_path, "rws-blackjack-switch")
    t.console.press("open_bets")
    t.settle()
    assert t.lamps[1].state("progressive") == LAMP_ON      # progressive play available
    bet(t, 1, 20)
    assert t.dealer.offers[1] == {"main": Fraction(20)}
    t.console.press("no_more_bets")
    t.settle()
    assert t.lamps[1].state("bets_locked") == LAMP_ON
    assert t.lamps[1].state("progressive") == LAMP_OFF
    assert t.dealer.round.box(1).stakes == {"main": Fraction(20)}
    assert t.seats[1].view.phase == "play"
    assert t.seats[1].view.spots[0].status == "locked"


def test_past_posting_and_pinching_are_alarms_not_bet_changes(tmp_path):
    t = booted_table(tmp_path, "rws-blackjack")
    open_and_close(t, {1: 20, 2: 50})
    bet(t, 1, 5, layer=chipset.LATE_LAYER)                 # a chip added after no more bets
    assert alarms(t, 1) == ["past_posting"]
    t.readers[2].remove_chips("main", chipset.chips_for(Fraction(25), 2, 0, 0)[:1])
    t.cycle_readers(3, [2])
    assert alarms(t, 2) == ["pinching"]
    assert t.dealer.round.box(1).stakes["main"] == 20
    assert t.dealer.round.box(2).stakes["main"] == 50
    # the dealer unit hears of both
    assert {a["alarm"] for a in t.dealer.alarms} >= {"past_posting", "pinching"}


def test_a_legal_double_is_recognised_as_an_addition(tmp_path):
    t = booted_table(tmp_path, "rws-blackjack")
    open_and_close(t, {1: 20})
    deal(t, "5H 6S 9C")               # box 1: 5 then 9, the dealer 6
    state = t.dealer.round
    assert state.phase == Phase.PLAY and state.box(1).hands[0].total == 14
    bet(t, 1, 20, layer=1)            # double chips while box 1 is in play
    assert t.seats[1].pending == {"main": Fraction(20)} and alarms(t, 1) == []
    t.console.press("double")
    t.settle()
    assert t.dealer.round.box(1).hands[0].doubled == 20
    assert t.seats[1].pending == {} and alarms(t, 1) == []


def test_chips_added_when_it_is_not_the_box_turn_are_past_posting(tmp_path):
    t = booted_table(tmp_path, "rws-blackjack")
    open_and_close(t, {1: 20, 2: 20})
    deal(t, "5H 6S 9C 9D 5C")         # box 1: 5 9, box 2: 6 5, dealer 9
    bet(t, 2, 20, layer=1)            # box 1 is in play, not box 2
    assert alarms(t, 2) == ["past_posting"]


def test_an_unknown_chip_is_refused_and_not_counted(tmp_path):
    t = booted_table(tmp_path, "rws-blackjack")
    t.console.press("open_bets")
    t.settle()
    bet(t, 3, 25)
    t.readers[3].place_chips("main", [chipset.unknown_uid(3, 0)])
    t.cycle_readers(2, [3])
    assert alarms(t, 3) == ["unknown_chip"]
    assert t.dealer.offers[3] == {"main": Fraction(25)}
    assert t.seats[3].view.spots[0].status == "refused"


def test_a_refused_wager_says_why(tmp_path):
    t = booted_table(tmp_path, "my-classic")   # refuses a wager over the maximum
    t.dealer.limits = {"main": (Fraction(10), Fraction(100))}
    t.console.press("open_bets")
    t.settle()
    bet(t, 1, 200)
    assert any("over the maximum" in m for m in t.seats[1].view.messages)


def test_a_seat_whose_result_differs_raises_the_integrity_alarm(tmp_path):
    t = booted_table(tmp_path, "rws-blackjack")

    def tamper(subscriber: str, m: Message):
        if subscriber.endswith("seat-3") and m.kind == "event" and m.body["event"].get("card") == "TD":
            body = dict(m.body)
            body["event"] = {"type": "card", "card": "2D"}
            return Message(m.topic, m.kind, m.sender, m.seq, body)
        return m

    t.bus.tamper = tamper
    open_and_close(t, {3: 20})
    deal(t, "TD 7S 9C")               # seat 3's engine sees 2D 9C = 11, the dealer's TD 9C = 19
    t.console.press("stand")
    t.settle()
    deal(t, "TS")                     # dealer 17: stands
    assert t.dealer.phase == "idle"
    assert "integrity" in alarms(t, 3)
    assert any(a["alarm"] == "integrity" and a.get("box") == 3 for a in t.dealer.alarms)
    assert not any("integrity" in alarms(t, b) for b in (1, 2, 4))


@pytest.mark.parametrize("fresh", [True, False], ids=["late-seat", "restarted-seat"])
def test_a_seat_that_starts_late_or_restarts_catches_up(tmp_path, fresh):
    t = booted_table(tmp_path, "rws-blackjack")
    open_and_close(t, {1: 20, 4: 50})
    deal(t, "5H 6S 9C")
    t.stop_seat(4)
    deal(t, "8D 7C")                  # the second cards, while seat 4 is down
    seat = t.restart_seat(4, fresh=fresh)
    assert seat.round_no == t.dealer.round_no
    assert [h.cards for h in seat.view.hands] == [("6S", "7C")]
    assert seat.last_stream == t.dealer.stream_seq
    t.console.press("stand")
    t.settle()
    t.console.press("stand")
    t.settle()
    deal(t, "TD")
    assert t.dealer.phase == "idle"
    assert seat.own_result == t.dealer.results[t.dealer.round_no]["boxes"]["4"]
    assert "integrity" not in alarms(t, 4)
