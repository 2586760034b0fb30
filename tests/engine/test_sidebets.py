"""Side-bet evaluators, one test per clause and pay-table category."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmware.engine.cards import ALL_CARDS, parse_card, parse_cards
from firmware.engine.sidebets import (
    SIDE_BETS,
    SideBetError,
    is_three_card_straight,
    over_13,
    perfect_pairs,
    player_pair,
    super_pairs,
    three_card_category,
    top_3,
    twenty_one_plus_three,
    under_13,
)

cards = st.sampled_from(ALL_CARDS)


def two(a: str, b: str):
    return parse_cards([a, b])


def test_registry_names_and_categories_are_the_fixed_ones():
    """Profiles and `betbox settle` output use these names: they must not drift."""
    assert {name: rule.categories for name, rule in SIDE_BETS.items()} == {
        "player_pair": ("pair",),
        "under_13": ("under_13",),
        "over_13": ("over_13",),
        "perfect_pairs": ("perfect_pair", "coloured_pair", "mixed_pair"),
        "super_pairs": ("suited_trips", "suited_pair", "prime_pair", "any_pair"),
        "twenty_one_plus_three": ("straight_flush", "three_of_a_kind", "straight", "flush"),
        "top_3": ("suited_three_of_a_kind", "straight_flush", "three_of_a_kind"),
    }
    for name, rule in SIDE_BETS.items():
        assert rule.name == name
        assert rule.clause.split()[0] in ("rws-blackjack-v5", "rws-blackjack-perfect-pairs-v5",
                                          "uk-blackjack-4-deck-poster")
    assert [n for n, r in SIDE_BETS.items() if r.uses_dealer_card] == [
        "super_pairs", "twenty_one_plus_three", "top_3"]


# --- rws-blackjack-v5 §1.21, §3.13.1 Player Pair ----------------------------------------------

@pytest.mark.parametrize("a,b", [("KS", "KH"), ("TS", "TD"), ("7C", "7C"), ("AH", "AD")])
def test_player_pair_same_number_or_picture_type_rws_3_13_1(a, b):
    assert player_pair(two(a, b), None) == "pair"


@pytest.mark.parametrize("a,b", [("KS", "QS"), ("TS", "JS"), ("AS", "2S"), ("9H", "8H")])
def test_player_pair_same_value_different_type_loses_rws_1_21(a, b):
    """§1.21: 'same number or picture type' -- K-Q are both worth 10 but are not a pair."""
    assert player_pair(two(a, b), None) is None


# --- rws-blackjack-v5 §3.13.2 Under 13 / Over 13 -------------------------------------------------

@pytest.mark.parametrize("a,b,under,over", [
    ("AS", "KS", "under_13", None),    # Blackjack is under 13 (§3.13.2): A counts 1
    ("AS", "AH", "under_13", None),    # two Aces: 2 points
    ("6S", "6H", "under_13", None),    # 12
    ("3S", "TH", None, None),          # exactly 13: the House wins both (§3.13.2 c)
    ("6S", "7H", None, None),
    ("4S", "TH", None, "over_13"),     # 14
    ("KS", "QH", None, "over_13"),     # pictures count 10: 20
    ("AS", "2D", "under_13", None),
])
def test_under_over_13_point_total_rws_3_13_2(a, b, under, over):
    hand = two(a, b)
    assert under_13(hand, None) == under
    assert over_13(hand, None) == over


@given(cards, cards)
def test_under_13_and_over_13_never_both_win_and_13_loses_both_rws_3_13_2(a, b):
    total = a.value + b.value
    u, o = under_13([a, b], None), over_13([a, b], None)
    assert not (u and o)
    assert (u is None and o is None) == (total == 13)


# --- rws-blackjack-perfect-pairs-v5 §3.14, §4.1.2 -----------------------------------------------

@pytest.mark.parametrize("a,b,category", [
    ("QS", "QS", "perfect_pair"),   # §3.14.1 two Queen of spades
    ("5C", "5C", "perfect_pair"),
    ("QC", "QS", "coloured_pair"),  # §3.14.2 Queen of clubs and Queen of spades
    ("8H", "8D", "coloured_pair"),
    ("QC", "QH", "mixed_pair"),     # §3.14.3 Queen of clubs and Queen of hearts
    ("AD", "AS", "mixed_pair"),
    ("QC", "KC", None),
    ("TS", "JS", None),
])
def test_perfect_pairs_pay_table_perfect_pairs_v5_3_14(a, b, category):
    assert perfect_pairs(two(a, b), None) == category


# --- uk-blackjack-4-deck-poster 'SUPER PAIRS' ----------------------------------------------------

@pytest.mark.parametrize("a,b,dealer,category", [
    ("9S", "9H", "2C", "any_pair"),       # ANY PAIR 5-1 (one red, one black)
    ("9S", "9C", "2C", "prime_pair"),     # PRIME PAIR 10-1 (both black, different suits)
    ("9H", "9D", "9H", "prime_pair"),     # dealer matches one card, but not a suited pair
    ("9S", "9S", "2C", "suited_pair"),    # SUITED PAIR 25-1
    ("9S", "9S", "9C", "suited_pair"),    # dealer same rank, other suit: not trips
    ("9S", "9S", "9S", "suited_trips"),   # SUITED TRIPS 50-1
    ("9S", "TS", "9S", None),
    ("KS", "QS", "KS", None),
])
def test_super_pairs_pay_table_uk_poster_super_pairs(a, b, dealer, category):
    assert super_pairs(two(a, b), parse_card(dealer)) == category


def test_super_pairs_suited_trips_pays_instead_of_suited_pair_uk_poster_super_pairs():
    """One category per hand: suited trips is named alone (50:1, not 25 + 50). The
    house edge that this reading gives is checked against the poster in test_odds."""
    assert super_pairs(two("JD", "JD"), parse_card("JD")) == "suited_trips"


# --- uk-blackjack-4-deck-poster "21 + 3" ---------------------------------------------------------

@pytest.mark.parametrize("a,b,dealer,category", [
    ("5H", "6H", "7H", "straight_flush"),     # STRAIGHT FLUSH
    ("AS", "2S", "3S", "straight_flush"),     # Ace low
    ("QD", "AD", "KD", "straight_flush"),     # Ace high
    ("7S", "7H", "7C", "three_of_a_kind"),    # THREE OF A KIND
    ("7S", "7S", "7S", "three_of_a_kind"),    # suited three of a kind is a three of a kind here
    ("5H", "6C", "7H", "straight"),           # STRAIGHT
    ("AS", "2H", "3S", "straight"),
    ("QS", "KH", "AS", "straight"),
    ("KS", "AH", "2S", None),                 # no wrap-around
    ("KS", "AS", "2S", "flush"),              # ... so K-A-2 suited is only a flush
    ("2H", "9H", "KH", "flush"),              # FLUSH
    ("2H", "9H", "KS", None),
    ("7S", "7H", "8C", None),                 # a pair is not paid
])
def test_twenty_one_plus_three_hands_uk_poster_21_plus_3(a, b, dealer, category):
    assert twenty_one_plus_three(two(a, b), parse_card(dealer)) == category


def test_21_plus_3_order_of_cards_does_not_matter_uk_poster_21_plus_3():
    assert twenty_one_plus_three(two("3S", "AS"), parse_card("2S")) == "straight_flush"
    assert twenty_one_plus_three(two("KS", "AD"), parse_card("QH")) == "straight"


# --- uk-blackjack-4-deck-poster "TOP 3" ----------------------------------------------------------

@pytest.mark.parametrize("a,b,dealer,category", [
    ("QH", "QH", "QH", "suited_three_of_a_kind"),  # THREE OF A KIND SUITED 270-1
    ("9C", "TC", "JC", "straight_flush"),          # STRAIGHT FLUSH 180-1
    ("AC", "2C", "3C", "straight_flush"),
    ("QH", "QS", "QH", "three_of_a_kind"),         # THREE OF A KIND 90-1
    ("5H", "6C", "7H", None),                      # a straight is not enough
    ("2H", "9H", "KH", None),                      # nor a flush
    ("KC", "AC", "2C", None),
])
def test_top_3_hands_uk_poster_top_3(a, b, dealer, category):
    assert top_3(two(a, b), parse_card(dealer)) == category


# --- the straight rule --------------------------------------------------------------------------

@pytest.mark.parametrize("ranks,straight", [
    ("A23", True), ("QKA", True), ("KA2", False), ("234", True), ("9TJ", True), ("JQK", True),
    ("A24", False), ("AA2", False), ("TJK", False),
])
def test_three_card_straight_ace_high_or_low_never_round_the_corner(ranks, straight):
    cards = [parse_card(r + s) for r, s in zip(ranks, "SHD", strict=True)]
    assert is_three_card_straight(cards) is straight


# --- properties ---------------------------------------------------------------------------------

@given(cards, cards, cards)
def test_every_side_bet_judges_any_cards_without_raising(a, b, d):
    for rule in SIDE_BETS.values():
        category = rule.evaluate([a, b], d)
        assert category is None or category in rule.categories


@given(cards, cards, cards)
def test_the_order_of_the_players_two_cards_does_not_matter(a, b, d):
    for rule in SIDE_BETS.values():
        assert rule.evaluate([a, b], d) == rule.evaluate([b, a], d)


@given(cards, cards)
def test_bets_without_the_dealer_card_ignore_it(a, b):
    for rule in SIDE_BETS.values():
        if not rule.uses_dealer_card:
            assert rule.evaluate([a, b], None) == rule.evaluate([a, b], ALL_CARDS[7])


@given(cards, cards, cards)
def test_top_3_wins_only_where_21_plus_3_wins_uk_poster_top_3(a, b, d):
    """Top 3 is 'Three of a Kind or better' of the same three-card hand as 21 + 3."""
    if top_3([a, b], d) is not None:
        assert twenty_one_plus_three([a, b], d) in ("straight_flush", "three_of_a_kind")


@given(cards, cards, cards)
def test_three_card_category_ignores_order(a, b, d):
    assert three_card_category([a, b, d]) == three_card_category([d, a, b]) == three_card_category([b, d, a])


def test_wrong_card_count_or_missing_dealer_card_is_a_caller_error():
    with pytest.raises(SideBetError):
        player_pair(parse_cards(["AS"]), None)
    with pytest.raises(SideBetError):
        perfect_pairs(parse_cards(["AS", "AH", "AD"]), None)
    with pytest.raises(SideBetError, match="dealer's first card"):
        twenty_one_plus_three(two("AS", "2S"), None)
    assert issubclass(SideBetError, ValueError)
