"""Insurance sensed per initial hand: `rws-blackjack-switch-v4 §3.9.1` "A Player can place an
insurance bet on either or both hands"; at a one-hand game there is one insurance spot
(`rws-blackjack-v5 §3.14`)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from firmware.engine.profile import load_profile, profile_names
from firmware.engine.round import Phase
from firmware.runtime.spots import insurance_hand, insurance_spot, seat_spots
from firmware.sim.driver import TableDriver
from firmware.sim.table import InProcessTable, TableSpec
from tests.tables import booted_table, place_bet

SWITCH = "rws-blackjack-switch"


def deal_initial(t: InProcessTable, box_cards: list[str], dealer_cards: list[str]) -> None:
    cards = {"box": iter(box_cards), "dealer": iter(dealer_cards)}
    while t.dealer.round.phase == Phase.INITIAL_DEAL:
        t.shoe.deal(next(cards["dealer" if t.dealer.round.expecting().to_dealer else "box"]))
        t.settle()


def alarms(t: InProcessTable, box: int) -> list[str]:
    return [a["alarm"] for a in t.seats[box].alarms]


def switch_round_with_an_ace_up(tmp_path: Path) -> InProcessTable:
    t = booted_table(tmp_path, SWITCH)
    t.console.press("open_bets")
    t.settle()
    place_bet(t, 1, 20)
    t.console.press("no_more_bets")
    t.settle()
    deal_initial(t, ["9H", "TC", "7S", "8D"], ["AS"])
    assert t.dealer.round.offers_open
    return t


def test_the_switch_seat_has_an_insurance_spot_per_hand():
    assert seat_spots(load_profile(SWITCH))[:3] == ("main", "insurance", "insurance_2")
    for name in profile_names():
        p = load_profile(name)
        spots = seat_spots(p)
        assert [s for s in spots if insurance_hand(s)] == [insurance_spot(n) for n in
                                                           range(1, (p.hands_per_box if p.rules.insurance
                                                                     else 1) + 1)]
    assert insurance_hand("main") is None and insurance_hand("insurance_x") is None


def test_insurance_on_the_second_hand_only(tmp_path):
    t = switch_round_with_an_ace_up(tmp_path)
    place_bet(t, 1, 10, "insurance_2", layer=1)
    assert t.seats[1].pending == {"insurance_2": Fraction(10)} and alarms(t, 1) == []
    t.console.press("insurance")
    t.settle()
    box = t.dealer.round.box(1)
    assert box.insurance == {1: Fraction(10)}             # family 1: the second hand
    assert t.seats[1].round.box(1).insurance == {1: Fraction(10)}
    assert t.seats[1].pending == {} and alarms(t, 1) == []


def test_insurance_on_both_hands(tmp_path):
    t = switch_round_with_an_ace_up(tmp_path)
    place_bet(t, 1, 10, "insurance", layer=1)
    place_bet(t, 1, 5, "insurance_2", layer=1)
    assert t.seats[1].pending == {"insurance": Fraction(10), "insurance_2": Fraction(5)}
    t.console.press("insurance")
    t.settle()
    assert t.dealer.round.box(1).insurance == {0: Fraction(10), 1: Fraction(5)}
    assert alarms(t, 1) == []
    # the dealer has no Blackjack: both insurance bets lose (§3.9.1); seat and dealer agree
    t.console.press("stand")
    t.settle()
    t.console.press("stand")
    t.settle()
    t.shoe.deal("7C")
    t.settle()
    assert t.dealer.phase == "idle"
    ledger = t.dealer.results[1]["boxes"]["1"]
    assert t.seats[1].own_result == ledger
    assert "integrity" not in alarms(t, 1)


def test_a_second_insurance_on_an_insured_hand_is_past_posting(tmp_path):
    t = switch_round_with_an_ace_up(tmp_path)
    place_bet(t, 1, 10, "insurance_2", layer=1)
    t.console.press("insurance")
    t.settle()
    place_bet(t, 1, 5, "insurance_2", layer=2)                  # hand 2 is already insured
    assert alarms(t, 1) == ["past_posting"]
    assert t.dealer.round.box(1).insurance == {1: Fraction(10)}


def test_insurance_chips_without_an_ace_up_are_past_posting(tmp_path):
    t = booted_table(tmp_path, SWITCH)
    t.console.press("open_bets")
    t.settle()
    place_bet(t, 1, 20)
    t.console.press("no_more_bets")
    t.settle()
    deal_initial(t, ["9H", "TC", "7S", "8D"], ["6S"])
    place_bet(t, 1, 10, "insurance_2", layer=1)
    assert alarms(t, 1) == ["past_posting"]


def test_simulated_switch_players_insure_the_second_hand_too(tmp_path):
    spec = TableSpec("t", load_profile(SWITCH), seed=3, state_dir=tmp_path)
    driver = TableDriver.create(spec)
    second = 0
    for _ in range(60):
        state = driver.play_round()
        second += sum(1 for b in state.boxes if 1 in b.insurance)
    summary = driver.summary()
    driver.table.close()
    assert second > 0
    assert summary.alarms["integrity"] == 0 and summary.alarms["addition_mismatch"] == 0
