"""The main game, clause by clause, for each ruleset that has the clause.

Clauses cited are rws-blackjack-v5 unless named; the perfect-pairs document carries the
same rules one number later from §3.15 on.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from firmware.engine.cards import parse_cards
from firmware.engine.errors import IllegalDecision, NotYourTurn, RoundOver, UnexpectedCard
from firmware.engine.events import Action, Decision, VoidRound
from firmware.engine.hand import hand_total
from firmware.engine.outcomes import HandSettled, SideBetSettled
from firmware.engine.round import Phase
from firmware.script import ScriptError

from .helpers import box, settle, start, step

RWS = ["rws-blackjack", "rws-perfect-pairs"]
ALL = ["rws-blackjack", "rws-perfect-pairs", "uk-4-deck", "my-classic"]


# --- §3.2 card values, §1.11 hard and §1.28 soft totals -------------------------------

@pytest.mark.parametrize("cards,total,soft", [
    ("AS 6H", 17, True),          # §3.2.1 Ace as 11
    ("AS 6H TD", 17, False),      # Ace falls back to 1
    ("AS AH", 12, True),          # only one Ace can count 11
    ("AS AH 9D", 21, True),       # soft 21
    ("KS QH", 20, False),         # §3.2.3 pictures count 10
    ("TS 5H 7D", 22, False),      # bust
    ("2S 3H 4D 5C 6S", 20, False),
])
def test_point_totals_s3_2(cards, total, soft):
    assert hand_total(parse_cards(cards.split())) == (total, soft)


# --- §3.11 dealing procedure, European no-hole-card -----------------------------------

@pytest.mark.parametrize("profile", ALL)
def test_deal_order_first_card_each_box_then_dealer_then_second_cards_s3_11(profile):
    state = start(profile, {1: {"main": 10}, 3: {"main": 10}}, ["2S", "3S", "4S", "5S", "6S"])
    assert [str(c) for c in state.box(1).hands[0].cards] == ["2S", "5S"]
    assert [str(c) for c in state.box(3).hands[0].cards] == ["3S", "6S"]
    assert [str(c) for c in state.dealer] == ["4S"]   # one card only: no hole card


def test_box_without_initial_bet_is_not_dealt_and_its_side_bet_returned_s5_15():
    r = settle("rws-blackjack", {1: {"main": 10}, 2: {"player_pair": 5}},
               ["TS", "9H", "7D", "TC", "8H"], {1: ["stand"]})
    b2 = box(r, 2)
    assert b2["hands"] == []
    assert b2["bets"] == {"player_pair": 0}
    assert b2["returned"][0]["reason"] == "no_initial_bet"
    assert "§5.15" in b2["returned"][0]["clause"]
    assert box(r, 1)["hands"][0]["cards"] == ["TS", "7D"]


def test_dealer_second_card_comes_after_all_players_acted():
    state = start("rws-blackjack", {1: {"main": 10}, 2: {"main": 10}}, ["TS", "9H", "7D", "TC", "8H"])
    assert state.expecting().kind == "decision" and state.expecting().box == 1
    state, _ = step(state, (1, "stand"))
    assert len(state.dealer) == 1
    state, _ = step(state, (2, "stand"))
    assert state.expecting().to_dealer
    state, out = step(state, "9C")   # dealer 16
    assert state.expecting().to_dealer
    state, out = step(state, "5C")   # dealer 21
    assert state.is_over
    assert [o.result for o in out if isinstance(o, HandSettled)] == ["lose", "lose"]


def test_an_illegal_card_or_turn_explains_itself():
    state = start("rws-blackjack", {1: {"main": 10}, 2: {"main": 10}}, ["TS", "9H", "7D", "TC", "8H"])
    with pytest.raises(UnexpectedCard, match="box 1 hand 1 .* waiting for a decision"):
        step(state, "2C")
    with pytest.raises(NotYourTurn, match="box 1 is in play, not box 2"):
        step(state, (2, "stand"))
    assert "box 1 is in play" in state.why_not(Decision(2, Action.HIT))


# --- Blackjack §1.2, §3.15, §3.17 -----------------------------------------------------

@pytest.mark.parametrize("profile", ALL)
def test_blackjack_against_a_small_card_is_paid_3_to_2_at_the_interim_settlement_s3_15(profile):
    state = start(profile, {1: {"main": 25}, 2: {"main": 10}}, ["AS", "9H", "6D", "KD"])
    state, out = step(state, "8H")           # last card of the initial deal
    paid = [o for o in out if isinstance(o, HandSettled)]
    assert paid and paid[0].box == 1 and paid[0].result == "blackjack" and paid[0].net == Fraction(75, 2)
    assert state.expecting().box == 2        # box 1 takes no decision (§3.17)


@pytest.mark.parametrize("profile", RWS)
def test_blackjack_against_dealer_ten_waits_and_stands_off_with_dealer_blackjack_s3_15(profile):
    r = settle(profile, {1: {"main": 20}}, ["AS", "TH", "KD", "AH"])
    assert box(r, 1)["hands"][0]["result"] == "stand_off"
    assert box(r, 1)["net"] == 0
    r = settle(profile, {1: {"main": 20}}, ["AS", "TH", "KD", "9H"])
    assert box(r, 1)["hands"][0]["result"] == "blackjack" and box(r, 1)["net"] == 30
    assert r["dealer"]["cards"] == ["TH", "9H"]      # the dealer stops once nothing depends on him


@pytest.mark.parametrize("profile", ALL)
def test_split_aces_with_a_ten_make_21_not_blackjack_s3_21_2(profile):
    r = settle(profile, {1: {"main": 10}}, ["AS", "7H", "AD", "KC", "QD", "TH", "8S"], {1: ["split"]})
    hands = box(r, 1)["hands"]
    assert [h["result"] for h in hands] == ["win", "win"]        # 21 vs 17 pays 1:1, not 3:2
    assert box(r, 1)["bets"]["main"] == 20


@pytest.mark.parametrize("profile", RWS + ["uk-4-deck"])
def test_split_tens_with_an_ace_are_21_not_blackjack(profile):
    r = settle(profile, {1: {"main": 10}}, ["TS", "7H", "KD", "AC", "9D", "QH", "TC"],
               {1: ["split", "stand"]})
    first, second = box(r, 1)["hands"]
    assert first["cards"] == ["TS", "AC"] and first["result"] == "win"   # 21 beats 17, even money
    assert second["cards"] == ["KD", "9D"]
    assert box(r, 1)["bets"]["main"] == 20


@pytest.mark.parametrize("profile", ALL)
def test_soft_21_stands_by_itself_and_takes_no_card_s3_17(profile):
    state = start(profile, {1: {"main": 10}}, ["AS", "9H", "5D"])
    state, _ = step(state, (1, "hit"), "5C")            # A 5 5 = soft 21
    assert state.box(1).hands[0].status == "twenty_one"
    assert state.expecting().to_dealer
    assert "no more cards" in state.why_not(Decision(1, Action.HIT)) or state.why_not(Decision(1, Action.HIT))


# --- §3.19 compulsory draw below 12 ---------------------------------------------------

@pytest.mark.parametrize("profile", RWS + ["my-classic"])
def test_a_stand_below_12_is_illegal_s3_19(profile):
    state = start(profile, {1: {"main": 10}}, ["5S", "9H", "6D"])
    with pytest.raises(IllegalDecision, match="below 12: the hand must draw"):
        step(state, (1, "stand"))
    state, _ = step(state, (1, "hit"), "AC")            # 12
    state, _ = step(state, (1, "stand"))
    assert state.expecting().to_dealer


def test_uk_has_no_compulsory_draw():
    r = settle("uk-4-deck", {1: {"main": 10}}, ["5S", "9H", "6D", "7C", "TC"], {1: ["stand"]})
    assert box(r, 1)["hands"][0]["total"] == 11
    assert r["dealer"]["total"] == 26 and box(r, 1)["net"] == 10


# --- §3.14.2 insurance and §3.14.1 even money -----------------------------------------

@pytest.mark.parametrize("profile", ALL)
def test_insurance_pays_2_to_1_when_the_dealer_has_blackjack_s3_14_2(profile):
    r = settle(profile, {1: {"main": 100}}, ["TS", "AH", "9D", "KC"], {1: ["stand"]}, insurance={"1": 50})
    b = box(r, 1)
    assert b["bets"]["insurance"] == 100
    assert b["bets"]["main"] == -100
    assert b["net"] == 0


@pytest.mark.parametrize("profile", ALL)
def test_insurance_loses_when_the_dealer_has_no_blackjack(profile):
    r = settle(profile, {1: {"main": 100}}, ["TS", "AH", "9D", "6C", "TC"], {1: ["stand"]}, insurance={"1": 20})
    assert box(r, 1)["bets"] == {"insurance": -20, "main": 100}


def test_insurance_only_against_a_dealer_ace_and_at_most_half_the_initial_bet():
    with pytest.raises(ScriptError, match="only when the dealer's first card is an Ace"):
        settle("rws-blackjack", {1: {"main": 100}}, ["TS", "KH", "9D"], {1: ["stand"]}, insurance={"1": 50})
    with pytest.raises(ScriptError, match="more than half the initial bet"):
        settle("rws-blackjack", {1: {"main": 100}}, ["TS", "AH", "9D"], {1: ["stand"]}, insurance={"1": 51})


def test_insurance_window_closes_with_the_first_further_card_s3_14_2_a():
    state = start("rws-blackjack", {1: {"main": 100}, 2: {"main": 100}}, ["TS", "5H", "AD", "2C", "6H"])
    state, _ = step(state, (1, "hit"), "4C")
    with pytest.raises(IllegalDecision, match="before any additional card"):
        step(state, Decision(2, Action.INSURANCE, Fraction(50)))


@pytest.mark.parametrize("profile", ["rws-blackjack", "rws-perfect-pairs", "my-classic"])
def test_even_money_pays_1_to_1_at_once_s3_14_1(profile):
    state = start(profile, {1: {"main": 40}}, ["AS", "AH", "KD"])
    state, out = step(state, Decision(1, Action.EVEN_MONEY))
    assert [(o.result, o.net) for o in out if isinstance(o, HandSettled)] == [("even_money", 40)]
    # settled whatever the dealer's second card: nothing is left for it to decide
    assert state.is_over and state.box(1).ledger["main"] == 40 and len(state.dealer) == 1


def test_blackjack_against_ace_without_even_money_stands_off_with_dealer_blackjack_s3_14_1():
    r = settle("rws-blackjack", {1: {"main": 40}}, ["AS", "AH", "KD", "KC"])
    assert box(r, 1)["hands"][0]["result"] == "stand_off"
    r = settle("rws-blackjack", {1: {"main": 40}}, ["AS", "AH", "KD", "5C"])
    assert box(r, 1)["bets"]["main"] == 60


def test_even_money_needs_a_blackjack_and_is_not_offered_in_uk():
    with pytest.raises(ScriptError, match="no unsettled Blackjack"):
        settle("rws-blackjack", {1: {"main": 40}}, ["9S", "AH", "KD"], {1: ["stand"]}, even_money=["1"])
    with pytest.raises(ScriptError, match="even money is not offered at uk-4-deck"):
        settle("uk-4-deck", {1: {"main": 40}}, ["AS", "AH", "KD"], even_money=["1"])


# --- §3.16 surrender ------------------------------------------------------------------

@pytest.mark.parametrize("profile", RWS + ["my-classic"])
def test_surrender_gives_up_half_the_initial_bet_s3_16(profile):
    r = settle(profile, {1: {"main": 50}}, ["TS", "TH", "6D", "7C"], {1: ["surrender"]})
    assert box(r, 1)["hands"][0]["result"] == "surrender"
    assert box(r, 1)["bets"]["main"] == -25
    assert r["dealer"]["cards"] == ["TH"]      # nothing left for the dealer to decide


@pytest.mark.parametrize("profile", RWS + ["my-classic"])
def test_no_surrender_against_a_dealer_ace(profile):
    with pytest.raises(ScriptError, match="not allowed when the dealer's first card is an Ace"):
        settle(profile, {1: {"main": 50}}, ["TS", "AH", "6D", "7C"], {1: ["surrender"]})


@pytest.mark.parametrize("profile", RWS)
def test_surrender_must_come_before_any_further_card_to_any_player_s3_16(profile):
    state = start(profile, {1: {"main": 50}, 2: {"main": 50}}, ["5S", "TH", "9D", "4C", "6H"])
    state, _ = step(state, (1, "hit"), "2C")
    with pytest.raises(IllegalDecision, match="before any additional card is dealt to any player"):
        step(state, Decision(2, Action.SURRENDER))


def test_my_guide_surrender_is_per_player_immediately_after_his_two_cards():
    # "All decisions to Surrender shall be made immediately after the initial 2 cards are dealt to you."
    state = start("my-classic", {1: {"main": 50}, 2: {"main": 50}}, ["5S", "TH", "9D", "4C", "6H"])
    state, _ = step(state, (1, "hit"), "2C", (1, "hit"), "9S")
    state, out = step(state, Decision(2, Action.SURRENDER))
    assert [o.result for o in out if isinstance(o, HandSettled)] == ["surrender"]


def test_no_surrender_after_a_split_s3_21():
    state = start("rws-blackjack", {1: {"main": 50}}, ["8S", "TH", "8D"])
    state, _ = step(state, (1, "split"), "3C")
    assert "split hand cannot be surrendered" in state.why_not(Decision(1, Action.SURRENDER))


def test_uk_offers_no_surrender():
    with pytest.raises(ScriptError, match="surrender is not offered at uk-4-deck"):
        settle("uk-4-deck", {1: {"main": 50}}, ["TS", "TH", "6D"], {1: ["surrender"]})


# --- §3.21 split ----------------------------------------------------------------------

def test_split_needs_two_cards_of_identical_value_s3_21():
    state = start("rws-blackjack", {1: {"main": 10}}, ["KS", "6H", "TD"])
    assert state.why_not(Decision(1, Action.SPLIT)) is None            # K and T: both 10 points
    state = start("rws-blackjack", {1: {"main": 10}}, ["8S", "6H", "9D"])
    assert "not of identical value" in state.why_not(Decision(1, Action.SPLIT))


def test_split_hands_are_dealt_in_order_first_hand_at_once_s3_21_2():
    state = start("rws-blackjack", {1: {"main": 10}}, ["8S", "6H", "8D"])
    state, _ = step(state, (1, "split"))
    assert state.expecting().kind == "card" and state.expecting().hand == 1
    state, _ = step(state, "3C")                    # first hand: 8 3
    assert state.expecting().kind == "decision" and state.expecting().hand == 1
    assert len(state.box(1).hands[1].cards) == 1    # the next hand waits
    state, _ = step(state, (1, "hit"), "9H", (1, "stand"))   # 20
    assert state.expecting().kind == "card" and state.expecting().hand == 2
    state, _ = step(state, "TC", (1, "stand"), "TS", "7S")   # second hand 18; dealer 6 T 7 = 23
    assert [h.result for h in state.box(1).hands] == ["win", "win"]
    assert state.box(1).ledger["main"] == 20


def test_a_resplit_hand_is_played_right_after_the_hand_it_came_from():
    # 8 8 split; the first hand draws another 8 and is split again: the new hand is hand 2.
    state = start("rws-blackjack", {1: {"main": 10}}, ["8S", "6H", "8D"])
    state, _ = step(state, (1, "split"), "8C", (1, "split"), "2S")
    cards = [[str(c) for c in h.cards] for h in state.box(1).hands]
    assert cards == [["8S", "2S"], ["8C"], ["8D"]]


@pytest.mark.parametrize("profile,hands", [("rws-blackjack", 4), ("rws-perfect-pairs", 4), ("my-classic", 3)])
def test_no_more_hands_than_the_rules_allow_s3_21_2(profile, hands):
    state = start(profile, {1: {"main": 10}}, ["8S", "6H", "8D"])
    for _ in range(hands - 1):
        state, _ = step(state, (1, "split"), "8C")
    assert len(state.box(1).hands) == hands
    reason = state.why_not(Decision(1, Action.SPLIT))
    assert reason and f"no more than {hands} hands" in reason


def test_uk_splits_without_a_limit():
    state = start("uk-4-deck", {1: {"main": 10}}, ["8S", "6H", "8D"])
    for eight in ["8C", "8H", "8C", "8H", "8S"]:      # a 4-deck shoe: at most four of each
        state, _ = step(state, (1, "split"), eight)
    assert len(state.box(1).hands) == 6
    assert state.why_not(Decision(1, Action.SPLIT)) is None


@pytest.mark.parametrize("profile", RWS + ["my-classic"])
def test_split_aces_take_one_card_each_and_cannot_be_resplit(profile):
    state = start(profile, {1: {"main": 10}}, ["AS", "6H", "AD"])
    state, _ = step(state, (1, "split"), "AC")     # the first hand gets another Ace: no resplit
    assert state.box(1).hands[0].done
    state, _ = step(state, "5H")                    # second hand: one card, done
    assert state.expecting().to_dealer


def test_uk_resplits_aces_one_card_each():
    state = start("uk-4-deck", {1: {"main": 10}}, ["AS", "6H", "AD"])
    state, _ = step(state, (1, "split"), "AC")
    assert state.why_not(Decision(1, Action.SPLIT)) is None
    assert "one card each" in state.why_not(Decision(1, Action.HIT))
    state, _ = step(state, (1, "split"), "9C", "KC", "7D")
    assert [[str(c) for c in h.cards] for h in state.box(1).hands] == [["AS", "9C"], ["AC", "KC"], ["AD", "7D"]]
    assert state.expecting().to_dealer


# --- §3.22 double ---------------------------------------------------------------------

def test_double_takes_exactly_one_card_and_may_be_less_than_the_initial_bet_s3_22():
    r = settle("rws-blackjack", {1: {"main": 100}}, ["5S", "6H", "4D", "2C", "TH", "9C"], {1: ["double:60"]})
    hand = box(r, 1)["hands"][0]
    assert hand["cards"] == ["5S", "4D", "2C"] and hand["doubled"] == 60   # 11 after the double: no draw
    assert r["dealer"]["total"] == 25 and box(r, 1)["bets"]["main"] == 160


def test_double_more_than_the_initial_bet_is_refused_s1_6():
    with pytest.raises(ScriptError, match="more than the initial bet"):
        settle("rws-blackjack", {1: {"main": 100}}, ["5S", "6H", "4D"], {1: ["double:150"]})


@pytest.mark.parametrize("profile", ["my-classic", "uk-4-deck"])
def test_double_must_equal_the_original_stake_my_uk(profile):
    with pytest.raises(ScriptError, match="must equal the initial bet"):
        settle(profile, {1: {"main": 100}}, ["5S", "6H", "4D"], {1: ["double:60"]})


def test_my_guide_doubles_only_on_9_10_11_without_an_ace():
    assert "total of 9, 10, 11, not 8" in start("my-classic", {1: {"main": 10}}, ["5S", "6H", "3D"]).why_not(
        Decision(1, Action.DOUBLE))
    assert "include an Ace" in start("my-classic", {1: {"main": 10}}, ["AS", "6H", "8D"]).why_not(
        Decision(1, Action.DOUBLE))
    assert start("my-classic", {1: {"main": 10}}, ["5S", "6H", "6D"]).why_not(Decision(1, Action.DOUBLE)) is None


def test_uk_soft_double_counts_the_ace_as_eleven():
    # poster: "doubles on ... Ace + 7 and receives a 3 ... this is 21 and not 11"
    r = settle("uk-4-deck", {1: {"main": 10}}, ["AS", "9H", "7D", "3C", "TC"], {1: ["double"]})
    assert box(r, 1)["hands"][0]["total"] == 21
    assert box(r, 1)["bets"]["main"] == 20


def test_double_after_split_but_not_on_split_aces_s3_22():
    state = start("rws-blackjack", {1: {"main": 10}}, ["5S", "6H", "5D"])
    state, _ = step(state, (1, "split"), "6C")
    assert state.why_not(Decision(1, Action.DOUBLE)) is None
    state = start("rws-blackjack", {1: {"main": 10}}, ["AS", "6H", "AD"])
    state, _ = step(state, (1, "split"))
    state, _ = step(state, "5C")
    assert state.box(1).hands[0].done      # split aces take their one card and stand


def test_no_double_on_21():
    state = start("uk-4-deck", {1: {"main": 10}}, ["TS", "6H", "TD"])
    state, _ = step(state, (1, "split"), "AC")          # T A after a split: 21, stands by itself
    assert state.box(1).hands[0].status == "twenty_one"


# --- §3.23 dealer draws to 16, stands on 17 -------------------------------------------

@pytest.mark.parametrize("profile", ALL)
def test_dealer_stands_on_soft_17_s3_23(profile):
    r = settle(profile, {1: {"main": 10}}, ["TS", "AH", "8D", "6C"], {1: ["stand"]})
    assert r["dealer"]["cards"] == ["AH", "6C"] and r["dealer"]["total"] == 17
    assert box(r, 1)["hands"][0]["result"] == "win"


@pytest.mark.parametrize("profile", ALL)
def test_dealer_draws_to_16(profile):
    r = settle(profile, {1: {"main": 10}}, ["TS", "TH", "8D", "6C", "5D"], {1: ["stand"]})
    assert r["dealer"]["cards"] == ["TH", "6C", "5D"]
    assert box(r, 1)["hands"][0]["result"] == "lose"


def test_equal_totals_stand_off_and_dealer_bust_wins_s3_23():
    r = settle("rws-blackjack", {1: {"main": 10}, 2: {"main": 10}},
               ["TS", "TC", "TH", "8D", "7D", "6S", "8C"], {1: ["stand"], 2: ["stand"]})
    assert [box(r, b)["hands"][0]["result"] for b in (1, 2)] == ["win", "win"]   # dealer 24
    r = settle("rws-blackjack", {1: {"main": 10}}, ["TS", "TH", "8D", "8C"], {1: ["stand"]})
    assert box(r, 1)["hands"][0]["result"] == "stand_off" and box(r, 1)["net"] == 0


def test_no_dealer_draw_when_every_hand_is_bust():
    r = settle("rws-blackjack", {1: {"main": 10}}, ["TS", "6H", "5D", "KC"], {1: ["hit"]})
    assert r["dealer"]["cards"] == ["6H"]
    assert box(r, 1)["hands"][0]["result"] == "bust" and box(r, 1)["net"] == -10


# --- dealer Blackjack against split and doubled hands ---------------------------------

@pytest.mark.parametrize("profile", RWS)
def test_dealer_blackjack_takes_only_the_initial_bet_from_split_hands_s3_21_3(profile):
    r = settle(profile, {1: {"main": 10}}, ["8S", "AH", "8D", "TC", "9D", "KH"], {1: ["split", "stand", "stand"]})
    assert box(r, 1)["bets"]["main"] == -10


@pytest.mark.parametrize("profile", RWS)
def test_dealer_blackjack_takes_only_the_initial_bet_from_a_doubled_hand_s3_22_2(profile):
    r = settle(profile, {1: {"main": 10}}, ["5S", "TH", "6D", "9C", "AH"], {1: ["double"]})
    assert box(r, 1)["bets"]["main"] == -10


def test_busted_split_hands_lose_all_and_the_rest_only_the_initial_bet_s3_21_3():
    r = settle("rws-blackjack", {1: {"main": 10}}, ["8S", "AH", "8D", "6C", "KC", "TD", "KH"],
               {1: ["split", "hit", "stand"]})
    # hand 1: 8 6 K bust (-10); hand 2: 8 T (18) against the dealer's Blackjack loses the initial bet only
    assert [h["result"] for h in box(r, 1)["hands"]] == ["bust", "lose"]
    assert box(r, 1)["bets"]["main"] == -20


@pytest.mark.parametrize("profile", ["uk-4-deck", "my-classic"])
def test_dealer_blackjack_takes_everything_where_no_original_bets_only_rule(profile):
    r = settle(profile, {1: {"main": 10}}, ["8S", "AH", "8D", "TC", "9D", "KH"], {1: ["split", "stand", "stand"]})
    assert box(r, 1)["bets"]["main"] == -20


# --- §5 irregularities ----------------------------------------------------------------

def test_a_card_that_cannot_be_in_the_shoe_voids_the_round_and_returns_every_bet_s5_5():
    # a 4-deck shoe holds four Aces of spades
    r = settle("rws-blackjack", {1: {"main": 10, "player_pair": 5}, 2: {"main": 10}, 3: {"main": 10}},
               ["AS", "AS", "AS", "AS", "AS"], decks=4)
    assert r["void"] and r["reason"].startswith("foreign_card") and "§5.5.1" in r["clause"]
    assert all(b["net"] == 0 and set(b["bets"].values()) == {0} for b in r["boxes"].values())


def test_insufficient_cards_void_the_round_s5_5_3():
    r = settle("rws-blackjack", {1: {"main": 10}}, ["TS", "6H"])
    assert r["void"] and r["reason"] == "insufficient_cards" and "§5.5.3" in r["clause"]


def test_void_after_interim_settlement_returns_every_bet_s5_17():
    state = start("rws-blackjack", {1: {"main": 10, "player_pair": 10}}, ["8S", "6H", "8D"])
    assert state.box(1).ledger["player_pair"] == 110
    state, out = state.apply(VoidRound("insufficient_cards"))
    assert state.phase == Phase.VOID
    assert all(v == 0 for v in state.box(1).ledger.values())
    with pytest.raises(RoundOver):
        step(state, "2C")


def test_outcome_established_decides_void_or_continue_s5_4():
    state = start("rws-blackjack", {1: {"main": 10}}, ["8S", "6H"])
    assert not state.outcome_established()
    state, _ = step(state, "9D")
    assert not state.outcome_established()
    state, _ = step(state, (1, "hit"), "KD")     # bust: a bet has conclusively lost
    assert state.outcome_established()


def test_over_the_maximum_is_settled_pro_rata_on_the_maximum_s5_1_1():
    r = settle("rws-blackjack", {1: {"main": 7000}}, ["TS", "6H", "9D", "TC", "8C"], {1: ["stand"]},
               limits={"main": [10, 5000]})
    b = box(r, 1)
    assert b["bets"]["main"] == 5000
    assert b["flags"][0]["issue"] == "over_maximum" and b["flags"][0]["counted"] == 5000
    assert "§5.1.1" in b["flags"][0]["clause"]


def test_under_the_minimum_is_won_or_lost_as_placed_s5_2_1():
    r = settle("rws-blackjack", {1: {"main": 5}}, ["TS", "6H", "9D", "TC", "8C"], {1: ["stand"]},
               limits={"main": [10, 5000]})
    assert box(r, 1)["bets"]["main"] == 5 and box(r, 1)["flags"][0]["issue"] == "under_minimum"


@pytest.mark.parametrize("profile", ["uk-4-deck", "my-classic", "rws-blackjack-switch"])
def test_rulesets_without_pro_rata_refuse_a_wager_over_the_maximum(profile):
    with pytest.raises(ScriptError, match="over the maximum 500"):
        settle(profile, {1: {"main": 600}}, [], limits={"main": [10, 500]})


def test_side_bet_limits_are_checked_per_bet_name():
    r = settle("rws-blackjack", {1: {"main": 100, "player_pair": 80}}, ["8S", "6H", "8D", "2C", "TC"],
               {1: ["stand"]}, limits={"player_pair": [1, 50]})
    assert box(r, 1)["bets"]["player_pair"] == 50 * 11


@pytest.mark.parametrize("profile", RWS + ["my-classic"])
def test_walked_away_hand_is_drawn_to_12_or_more_by_the_house_s5_3(profile):
    r = settle(profile, {1: {"main": 10}}, ["4S", "TH", "3D", "2C", "2H", "5H", "8D"], walked_away=["1"])
    hand = box(r, 1)["hands"][0]
    assert hand["cards"] == ["4S", "3D", "2C", "2H", "5H"] and hand["total"] == 16
    assert box(r, 1)["walked_away"] and r["dealer"]["total"] == 18
    assert box(r, 1)["bets"]["main"] == -10


def test_no_decisions_for_a_walked_away_box():
    state = start("rws-blackjack", {1: {"main": 10}, 2: {"main": 10}}, ["TS", "9H", "6D", "8C", "8H"])
    state, _ = state.apply(__import__("firmware.engine.events", fromlist=["WalkedAway"]).WalkedAway(2))
    state, _ = step(state, (1, "stand"))
    assert state.expecting().to_dealer                 # box 2 (17) stands for the House
    assert "walked away" in state.why_not(Decision(2, Action.HIT))


# --- purity and replay ----------------------------------------------------------------

def test_apply_leaves_the_round_it_was_called_on_unchanged():
    state = start("rws-blackjack", {1: {"main": 10, "player_pair": 5}}, ["8S", "6H", "8D"])
    before = (state.phase, [list(h.cards) for h in state.box(1).hands], dict(state.box(1).ledger))
    step(state, (1, "split"), "3C", (1, "hit"))
    assert before == (state.phase, [list(h.cards) for h in state.box(1).hands], dict(state.box(1).ledger))


def test_side_bets_settle_at_the_interim_settlement_before_any_further_card_s3_13():
    state = start("rws-blackjack", {1: {"main": 10, "player_pair": 5, "under_13": 5, "over_13": 5}}, ["8S", "6H"])
    state, out = step(state, "8D")
    settled = {o.bet: o.net for o in out if isinstance(o, SideBetSettled)}
    assert settled == {"player_pair": 55, "under_13": -5, "over_13": 5}


def test_offers_open_until_the_first_further_card():
    state = start("rws-blackjack", {1: {"main": 10}, 2: {"main": 10}}, ["TS", "5H", "AD", "7C"])
    assert not state.offers_open                       # initial deal not complete
    state, _ = step(state, "6H")
    assert state.offers_open
    state, _ = step(state, (1, "stand"))
    assert state.offers_open                           # a stand deals no card
    state, _ = step(state, (2, "hit"), "4C")
    assert not state.offers_open


def test_wagered_counts_doubles_split_stakes_and_insurance():
    state = start("rws-blackjack", {1: {"main": 10, "player_pair": 5}}, ["8S", "AH", "8D"])
    state, _ = step(state, Decision(1, Action.INSURANCE, Fraction(5)), (1, "split"), "3C",
                    Decision(1, Action.DOUBLE, Fraction(10)), "9C")
    assert state.wagered(1) == {"main": 30, "player_pair": 5, "insurance": 5}


def test_amounts_are_whole_cents():
    from firmware.engine.errors import IllegalWager
    from firmware.engine.events import BetsClosed
    from firmware.engine.profile import load_profile
    from firmware.engine.round import Round

    with pytest.raises(IllegalWager, match="not a whole number of cents"):
        Round.new(load_profile("rws-blackjack")).apply(BetsClosed.of({1: {"main": "10.005"}}))
    state = start("rws-blackjack", {1: {"main": "10.50"}}, ["5S", "6H", "4D"])
    assert state.why_not(Decision(1, Action.DOUBLE, Fraction("10.25"))) is None


def test_an_interruption_voids_only_while_no_outcome_is_established_s5_4():
    state = start("rws-blackjack", {1: {"main": 10}, 2: {"main": 10}}, ["5S", "7C", "6H", "4D", "8C"])
    voided, _ = state.apply(VoidRound("interruption"))                 # §5.4.2
    assert voided.phase == Phase.VOID
    state, _ = step(state, (1, "hit"), "TC", (1, "hit"), "9C")        # bust: an outcome (§5.4.1)
    assert not state.is_over
    with pytest.raises(Exception, match="outcome has been established"):
        state.apply(VoidRound("interruption"))
    foreign, _ = state.apply(VoidRound("foreign_card"))               # §5.5 voids whatever happened
    assert foreign.phase == Phase.VOID


def test_a_refused_wager_names_its_box_bet_and_issue():
    from firmware.engine.errors import IllegalWager
    from firmware.engine.events import BetsClosed
    from firmware.engine.profile import load_profile
    from firmware.engine.round import Round

    state = Round.new(load_profile("uk-4-deck"), limits={"main": [10, 500], "top_3": [1, 50]})
    with pytest.raises(IllegalWager) as err:
        state.apply(BetsClosed.of({3: {"main": 100, "twenty_one_plus_three": 5, "top_3": 60}}))
    assert (err.value.box, err.value.bet, err.value.issue) == (3, "top_3", "over_maximum")
    with pytest.raises(IllegalWager) as err:
        state.apply(BetsClosed.of({2: {"main": 5}}))
    assert (err.value.box, err.value.bet, err.value.issue) == (2, "main", "under_minimum")


@pytest.mark.parametrize("wagers,says", [
    (((True, (("main", Fraction(10)),)),), "box True is not a box number"),    # True == 1, no box
    ((("1", (("main", Fraction(10)),)),), "box '1' is not a box number"),
    (((1.0, (("main", Fraction(10)),)),), "box 1.0 is not a box number"),
    (((1, (("main", True),)),), "box 1: 'main' wager True is not an amount"),  # not a wager of 1
    (((1, (("main", 10.0),)),), "box 1: 'main' wager 10.0 is not an amount"),
    (((1, (("main", "10"),)),), "box 1: 'main' wager '10' is not an amount"),
    (((1, (("main", None),)),), "box 1: 'main' wager None is not an amount"),
    (((1, ((["main"], Fraction(10)),)),), r"box 1: \['main'\] is not a bet name"),
    (((1, None),), r"\(1, None\) is not a box's wagers"),
    ((5,), "5 is not a box's wagers"),
    (None, "None are not wagers"),
])
def test_a_no_more_bets_made_by_hand_with_what_is_no_box_or_amount_is_refused_by_name(wagers, says):
    """``BetsClosed.of`` and the wire make box numbers ints and amounts Fractions; an event
    built directly may hold anything. The engine's contract: an illegal event raises a
    RuleError that explains itself and leaves the round as it was (a TypeError from deep
    inside, or True taken for box 1 or for a wager of 1, is neither)."""
    from firmware.engine.errors import IllegalWager
    from firmware.engine.events import BetsClosed
    from firmware.engine.profile import load_profile
    from firmware.engine.round import Round, _plan

    from .test_properties import serialised

    profile = load_profile("rws-blackjack")
    state = Round.new(profile)
    before = serialised(state)
    for memo in (True, False):          # with a "no more bets" closed before, and without
        if memo:
            state.apply(BetsClosed.of({1: {"main": 10}}))
        else:
            _plan(profile).closed.clear()
        with pytest.raises(IllegalWager, match=says):
            state.apply(BetsClosed(wagers))             # type: ignore[arg-type]
        assert serialised(state) == before
    # a whole int amount made by hand is that amount (BetsClosed.of makes it so too)
    hand_made, _ = state.apply(BetsClosed(((1, (("main", 10),)),)))     # type: ignore[arg-type]
    assert hand_made.box(1).stakes["main"] == Fraction(10) and type(hand_made.box(1).stakes["main"]) is Fraction
