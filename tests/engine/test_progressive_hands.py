"""Progressive jackpot hands: rws-blackjack-switch-v4 §3.7, §4.1.2 and the three-card hand."""

from __future__ import annotations

from itertools import permutations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmware.engine.cards import ALL_CARDS, parse_cards
from firmware.engine.progressive import PROGRESSIVE_HANDS, four_card, three_card
from firmware.engine.sidebets import SideBetError

cards = st.sampled_from(ALL_CARDS)


def test_registry_names_categories_and_card_counts():
    assert {n: (h.categories, h.cards) for n, h in PROGRESSIVE_HANDS.items()} == {
        "four_card": (("suited_four_of_a_kind", "four_of_a_kind", "two_pairs", "three_of_a_kind",
                       "pair_of_aces"), 4),
        "three_card": (("suited_three_of_a_kind", "straight_flush", "three_of_a_kind", "straight",
                        "flush"), 3),
    }
    assert PROGRESSIVE_HANDS["four_card"].clause.startswith("rws-blackjack-switch-v4 ")


@pytest.mark.parametrize("hand,category", [
    (["7S", "7S", "7S", "7S"], "suited_four_of_a_kind"),  # §4.1.2 Four of a Kind of the same suit
    (["7S", "7H", "7S", "7S"], "four_of_a_kind"),          # §4.1.2 Four of a Kind
    (["7S", "7H", "7D", "7C"], "four_of_a_kind"),
    (["AS", "AH", "AD", "AC"], "four_of_a_kind"),          # not two pairs, not a pair of Aces (§3.7.1)
    (["AS", "AH", "KD", "KC"], "two_pairs"),               # §4.1.2 Two Pairs, above a pair of Aces
    (["9S", "9H", "4D", "4C"], "two_pairs"),
    (["AS", "AH", "AD", "KC"], "three_of_a_kind"),         # §4.1.2 Three of a Kind, above a pair of Aces
    (["5S", "5S", "5S", "KC"], "three_of_a_kind"),         # three identical cards: still three of a kind
    (["AS", "AH", "2D", "KC"], "pair_of_aces"),            # §4.1.2 Pair of Aces
    (["AS", "AS", "2D", "KC"], "pair_of_aces"),
    (["KS", "KH", "2D", "3C"], None),                      # another pair pays nothing
    (["KS", "QH", "JD", "TC"], None),                      # pairs are by rank, not value
    (["AS", "KS", "QS", "JS"], None),
])
def test_four_card_pay_table_switch_4_1_2(hand, category):
    assert four_card(parse_cards(hand)) == category


def test_four_card_two_pairs_ranks_above_three_of_a_kind_switch_4_1_2():
    """The pay table ranks Two Pairs ($30) above Three of a Kind ($20): categories are in that order."""
    cats = PROGRESSIVE_HANDS["four_card"].categories
    assert cats.index("two_pairs") < cats.index("three_of_a_kind") < cats.index("pair_of_aces")


def test_four_card_judges_both_initial_hands_together_switch_3_7():
    """§3.7: the initial four cards -- a pair split across the two hands still counts."""
    first_hand, second_hand = parse_cards(["AS", "9H"]), parse_cards(["AD", "4C"])
    assert four_card([*first_hand, *second_hand]) == "pair_of_aces"


@pytest.mark.parametrize("hand,category", [
    (["QH", "QH", "QH"], "suited_three_of_a_kind"),
    (["2D", "3D", "AD"], "straight_flush"),
    (["QS", "QH", "QD"], "three_of_a_kind"),
    (["KS", "QH", "AD"], "straight"),
    (["2D", "9D", "JD"], "flush"),
    (["KD", "AD", "2H"], None),
    (["KD", "KH", "2H"], None),
])
def test_three_card_hand_uses_21_plus_3_rules_uk_poster(hand, category):
    assert three_card(parse_cards(hand)) == category


@given(cards, cards, cards, cards)
def test_four_card_never_raises_and_ignores_order(a, b, c, d):
    first = four_card([a, b, c, d])
    assert first is None or first in PROGRESSIVE_HANDS["four_card"].categories
    for p in permutations([a, b, c, d]):
        assert four_card(list(p)) == first


@given(cards, cards, cards)
def test_three_card_never_raises_and_ignores_order(a, b, c):
    first = three_card([a, b, c])
    assert first is None or first in PROGRESSIVE_HANDS["three_card"].categories
    for p in permutations([a, b, c]):
        assert three_card(list(p)) == first


def test_wrong_number_of_cards_is_a_caller_error():
    with pytest.raises(SideBetError, match="4 cards"):
        four_card(parse_cards(["AS", "AH", "AD"]))
    with pytest.raises(SideBetError, match="3 cards"):
        three_card(parse_cards(["AS", "AH"]))
