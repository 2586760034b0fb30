"""Blackjack Switch and its progressive jackpot, clause by clause (rws-blackjack-switch-v4)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from firmware.engine.events import Action, Decision
from firmware.engine.outcomes import EnvyBonus, HandSettled, ProgressiveHit
from firmware.script import ScriptError

from .helpers import box, settle, start, step

SW = "rws-blackjack-switch"


def test_a_position_is_dealt_as_two_boxes_s3_3_s3_6():
    # first card to each of the position's two boxes, the dealer's card, then the second cards
    state = start(SW, {1: {"main": 10}, 2: {"main": 10}}, ["2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S", "TS"])
    cards = [[str(c) for c in h.cards] for b in (1, 2) for h in state.box(b).hands]
    assert cards == [["2S", "7S"], ["3S", "8S"], ["4S", "9S"], ["5S", "TS"]]
    assert [str(c) for c in state.dealer] == ["6S"]


def test_main_is_the_stake_of_each_of_the_two_hands():
    r = settle(SW, {1: {"main": 10}}, ["TS", "9H", "6D", "8C", "7C", "TD"], {1: ["stand", "stand"]})
    assert [h["stake"] for h in box(r, 1)["hands"]] == [10, 10]
    # T 8 = 18 wins, 9 7 = 16 loses against the dealer's 16+... 6 T = 16 draws
    assert len(box(r, 1)["hands"]) == 2


def test_switch_exchanges_the_second_cards_before_any_other_decision_s3_11():
    r = settle(SW, {1: {"main": 10}}, ["TS", "5H", "6D", "6C", "TC", "9S", "TD", "7H"],
               {1: ["stand", "double"]}, switch=["1"])
    first, second = box(r, 1)["hands"]
    assert first["cards"] == ["TS", "TC"] and first["switched"]
    assert second["cards"] == ["5H", "6C", "9S"] and second["doubled"] == 10
    assert r["dealer"]["total"] == 23                  # 6 T 7: a dealer bust is over 22
    assert box(r, 1)["bets"]["main"] == 30


def test_a_switched_ace_and_ten_is_21_not_blackjack_s1():
    r = settle(SW, {1: {"main": 10}}, ["AS", "9H", "7D", "5C", "TC", "TH"], {1: ["stand"]}, switch=["1"])
    first, second = box(r, 1)["hands"]
    assert first["cards"] == ["AS", "TC"] and first["total"] == 21 and first["result"] == "win"
    assert first["soft"] and second["cards"] == ["9H", "5C"]
    assert box(r, 1)["bets"]["main"] == 10 - 10      # 21 wins 1:1; 14 loses to 17


def test_blackjack_is_paid_1_to_1_at_once_and_kept_against_a_dealer_blackjack_s3_8():
    state = start(SW, {1: {"main": 10}}, ["AS", "9H", "AD", "KS"])
    state, out = step(state, "7H")
    assert [(o.hand, o.result, o.net) for o in out if isinstance(o, HandSettled)] == [(1, "blackjack", 10)]
    state, out = step(state, (1, "stand"), "KD")       # dealer Blackjack
    assert state.dealer_blackjack
    assert state.box(1).hands[0].net == 10               # not returned
    assert state.box(1).hands[1].result == "lose"
    assert state.box(1).ledger["main"] == 0


def test_no_switch_with_a_blackjack_s3_11():
    with pytest.raises(ScriptError, match="no switch with a Blackjack"):
        settle(SW, {1: {"main": 10}}, ["AS", "9H", "7D", "KS", "7H"], {1: ["stand"]}, switch=["1"])


def test_surrender_either_hand_before_a_switch_and_no_switch_after_it_s3_10_s3_11():
    state = start(SW, {1: {"main": 10}}, ["TS", "9H", "7D", "6C", "7H"])
    state, out = step(state, Decision(1, Action.SURRENDER, hand=2))
    assert [(o.hand, o.result, o.net) for o in out if isinstance(o, HandSettled)] == [(2, "surrender", -5)]
    assert "no switch after a surrender" in state.why_not(Decision(1, Action.SWITCH))


def test_no_surrender_after_a_switch_s3_10():
    state = start(SW, {1: {"main": 10}}, ["TS", "9H", "7D", "6C", "7H"])
    state, _ = step(state, (1, "switch"))
    reason = state.why_not(Decision(1, Action.SURRENDER, hand=1))
    assert reason and "switched" in reason


def test_switch_must_come_before_hit_or_stand():
    state = start(SW, {1: {"main": 10}}, ["TS", "9H", "7D", "6C", "7H"])
    state, _ = step(state, (1, "hit"), "2C")
    assert "before hit, stand, split or double" in state.why_not(Decision(1, Action.SWITCH))


def test_no_switch_outside_blackjack_switch():
    state = start("rws-blackjack", {1: {"main": 10}}, ["TS", "7D", "6C"])
    assert "not offered at rws-blackjack" in state.why_not(Decision(1, Action.SWITCH))


def test_split_and_double_after_the_switch_s3_14_s3_15():
    # hands 8 9 / 5 8 -> switch -> 8 8 / 5 9: split the eights, double the 5 9 (14)
    r = settle(SW, {1: {"main": 10}}, ["8S", "5H", "7D", "9C", "8C", "3D", "2S", "TC", "9H", "9D"],
               {1: ["split", "double", "stand", "double"]}, switch=["1"])
    hands = box(r, 1)["hands"]
    assert [h["cards"] for h in hands] == [["8S", "3D", "2S"], ["8C", "TC"], ["5H", "9C", "9H"]]
    assert hands[0]["doubled"] == 10 and hands[2]["doubled"] == 10


def test_dealer_22_stands_off_against_every_hand_that_has_not_bust_s3_19_2():
    r = settle(SW, {1: {"main": 10}, 2: {"main": 10}},
               ["TS", "9H", "6D", "8C", "TC", "7H", "6C", "KD", "8D", "6S", "2H", "TH"],
               {1: ["stand", "stand"], 2: ["hit", "stand"]})
    # position 1: T 7 (17), 9 6 (15); position 2: 6 K + 6 = 22 bust, 8 8 (16); dealer T 2 T
    assert r["dealer"]["total"] == 22
    results = [h["result"] for b in ("1", "2") for h in r["boxes"][b]["hands"]]
    assert results == ["stand_off", "stand_off", "bust", "stand_off"]
    assert box(r, 1)["net"] == 0 and box(r, 2)["net"] == -10


def test_dealer_blackjack_beats_every_other_hand_split_and_doubled_lose_only_the_initial_bet_s3_14_s3_15():
    r = settle(SW, {1: {"main": 10}}, ["8S", "5H", "AD", "8C", "6C", "TD", "9D", "2S", "KD"],
               {1: ["split", "stand", "stand", "double"]})
    hands = box(r, 1)["hands"]
    assert r["dealer"]["blackjack"]
    assert [h["result"] for h in hands] == ["lose", "lose", "lose"]
    # split family (8 8): loses only the initial 10; doubled 5 6 +2: loses only the initial 10
    assert box(r, 1)["bets"]["main"] == -20


def test_insurance_on_either_hand_s3_9_1():
    r = settle(SW, {1: {"main": 10}}, ["TS", "9H", "AD", "8C", "9C", "KD"], {1: ["stand", "stand"]},
               insurance={"1": [5, 0]})
    assert box(r, 1)["bets"]["insurance"] == 10
    r = settle(SW, {1: {"main": 10}}, ["TS", "9H", "AD", "8C", "9C", "KD"], {1: ["stand", "stand"]},
               insurance={"1": [5, 5]})
    assert box(r, 1)["bets"]["insurance"] == 20 and box(r, 1)["bets"]["main"] == -20


def test_insurance_is_at_most_half_of_that_hands_initial_bet():
    with pytest.raises(ScriptError, match="more than half"):
        settle(SW, {1: {"main": 10}}, ["TS", "9H", "AD", "8C", "9C", "KD"], {1: ["stand", "stand"]},
               insurance={"1": [0, 6]})


def test_compulsory_draw_below_12_s3_18():
    with pytest.raises(ScriptError, match="below 12"):
        settle(SW, {1: {"main": 10}}, ["5S", "TH", "9D", "4C", "8C"], {1: ["stand"]})


# --- progressive jackpot §3.3, §3.7, §4.1.2 -------------------------------------------

@pytest.mark.parametrize("cards,category,award", [
    (["7S", "7S", "7S", "7S"], "suited_four_of_a_kind", 25000),
    (["7S", "7H", "7D", "7C"], "four_of_a_kind", 500),
    (["7S", "7H", "KD", "KC"], "two_pairs", 30),
    (["AS", "AH", "AD", "9C"], "three_of_a_kind", 20),
    (["AS", "AH", "9D", "KC"], "pair_of_aces", 15),
    (["AS", "AH", "KD", "KC"], "two_pairs", 30),        # only the highest hand pays (§3.7.1)
    (["7S", "8H", "KD", "QC"], None, None),
])
def test_progressive_hands_judged_on_the_initial_four_cards(cards, category, award):
    a1, a2, b1, b2 = cards
    shoe = [a1, b1, "6D", a2, b2, "TC", "TH", "TS", "TD", "9C", "9H"]
    r = settle(SW, {1: {"main": 10, "progressive": 5}}, shoe, {1: ["stand", "stand"]}, meter=25000)
    prog = box(r, 1)["progressive"]
    assert prog["hand"] == category
    assert prog["award"] == award
    assert box(r, 1)["bets"]["progressive"] == (award or 0) - 5


def test_fixed_progressive_awards_settle_before_play_continues_and_100_percent_at_the_end_s3_7():
    state = start(SW, {1: {"main": 10, "progressive": 5}}, ["7S", "KH", "6D", "7H"], meter=Fraction(40000))
    state, out = step(state, "KC")                 # two pairs: paid now
    assert [o.category for o in out if isinstance(o, ProgressiveHit)] == ["two_pairs"]
    assert state.box(1).ledger["progressive"] == 25

    state = start(SW, {1: {"main": 10, "progressive": 5}}, ["7S", "7S", "6D", "7S"], meter=Fraction(40000))
    state, out = step(state, "7S")                 # suited four of a kind: 100%, at the end
    hit = [o for o in out if isinstance(o, ProgressiveHit)][0]
    assert hit.meter_share == 1 and hit.award == 40000
    assert state.box(1).ledger["progressive"] == -5
    state, _ = step(state, (1, "split"))
    assert not state.is_over


def test_envy_bonus_goes_to_every_other_progressive_player_s3_7_2():
    # position 2 (no progressive wager) has a suited four of a kind: positions 1 and 3 get the envy bonus
    shoe = ["9S", "9H", "7S", "7S", "KD", "KH", "6D", "9C", "9D", "7S", "7S", "KC", "KS",
            "TC", "TD"]
    r = settle(SW, {1: {"main": 10, "progressive": 5}, 2: {"main": 10}, 3: {"main": 10, "progressive": 5}},
               shoe, {1: ["stand", "stand"], 2: ["stand", "stand"], 3: ["stand", "stand"]}, meter=10000)
    assert box(r, 1)["progressive"]["hand"] == "four_of_a_kind"     # 9 9 9 9 of mixed suits
    assert box(r, 1)["bets"]["envy_bonus"] == 1000
    assert box(r, 3)["bets"]["envy_bonus"] == 1000
    assert "envy_bonus" not in box(r, 2)["bets"] and "progressive" not in box(r, 2)


def test_the_suited_four_of_a_kind_player_gets_no_envy_bonus_for_his_own_hand():
    state = start(SW, {1: {"main": 10, "progressive": 5}, 2: {"main": 10, "progressive": 5}},
                  ["7S", "7S", "9H", "9D", "6D", "7S", "7S", "9C"], meter=Fraction(20000))
    state, out = step(state, "9S")
    assert {(o.box, o.category) for o in out if isinstance(o, ProgressiveHit)} == {(1, "suited_four_of_a_kind"),
                                                                                  (2, "four_of_a_kind")}
    while not state.is_over:
        exp = state.expecting()
        if exp.kind == "card":
            state, out2 = step(state, "TS")
            out.extend(out2)
        else:
            state, out2 = step(state, (exp.box, "stand"))
            out.extend(out2)
    envy = [o for o in out if isinstance(o, EnvyBonus)]
    assert [(e.box, e.from_box, e.award) for e in envy] == [(2, 1, 1000)]
    assert state.box(1).ledger["progressive"] == 20000 - 5
    assert state.box(2).ledger["envy_bonus"] == 1000


def test_progressive_wager_needs_the_initial_bets_s3_3():
    r = settle(SW, {1: {"progressive": 5}, 2: {"main": 10}}, ["TS", "9H", "6D", "8C", "7C", "TD"],
               {2: ["stand", "stand"]})
    assert box(r, 1)["returned"][0]["bet"] == "progressive"
    assert box(r, 1)["bets"] == {"progressive": 0}


def test_progressive_wager_is_fixed():
    with pytest.raises(ScriptError, match="fixed at 5"):
        settle(SW, {1: {"main": 10, "progressive": 10}}, [])


def test_a_100_percent_hit_needs_the_meter_to_settle_a_script():
    with pytest.raises(ScriptError, match="give the meter"):
        settle(SW, {1: {"main": 10, "progressive": 5}}, ["7S", "7S", "6D", "7S", "7S", "TC", "TD"],
               {1: ["stand", "stand"]})


def test_any_ruleset_can_carry_a_progressive_three_card_hand():
    import tomllib
    from importlib import resources

    from firmware.engine.profile import parse_profile

    data = tomllib.loads(resources.files("firmware.profiles").joinpath("rws-blackjack.toml").read_text())
    data["progressive"] = {"hand": "three_card", "wager": 1, "pays": {"suited_three_of_a_kind": "100%",
                                                                       "straight_flush": 200, "flush": 5}}
    profile = parse_profile(data, "test")
    from firmware.engine.cards import parse_card
    from firmware.engine.events import BetsClosed, CardDrawn
    from firmware.engine.round import Round

    state = Round.new(profile, meter=Fraction(1000))
    state, _ = state.apply(BetsClosed.of({1: {"main": 10, "progressive": 1}}))
    out = []
    for c in ["5H", "7H", "6H"]:
        state, o = state.apply(CardDrawn(parse_card(c)))
        out.extend(o)
    hit = [o for o in out if isinstance(o, ProgressiveHit)]
    assert hit and hit[0].category == "straight_flush" and hit[0].award == 200


def test_legal_decisions_name_the_hand_for_insurance_and_surrender():
    state = start(SW, {1: {"main": 10}}, ["TS", "9H", "7D", "6C", "7H"])
    state, _ = step(state, Decision(1, Action.SURRENDER, hand=2))
    assert "already surrendered" in state.legal_decisions(1, hand=2)[Action.SURRENDER]
    assert state.legal_decisions(1, hand=1)[Action.SURRENDER] is None
    state = start(SW, {1: {"main": 10}}, ["TS", "9H", "AD", "6C", "7H"])
    state, _ = step(state, Decision(1, Action.INSURANCE, Fraction(5), hand=1))
    assert "already insured" in state.legal_decisions(1, hand=1)[Action.INSURANCE]
    assert state.legal_decisions(1, hand=2)[Action.INSURANCE] is None
