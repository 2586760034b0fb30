"""Exact odds: published house edges, closed forms, and brute force on tiny shoes."""

from __future__ import annotations

import tomllib
from collections import Counter
from fractions import Fraction
from importlib import resources
from itertools import permutations
from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware.engine.cards import ALL_CARDS, POKER_ORDER, Card, ShoeComposition, parse_cards
from firmware.engine.odds import (
    SUIT_GROUPS,
    SUIT_SYMMETRY,
    hand_probabilities,
    profile_odds,
    progressive_odds,
    progressive_probabilities,
    side_bet_odds,
    side_bet_probabilities,
)
from firmware.engine.profile import SideBetTable, load_profile, parse_profile
from firmware.engine.progressive import PROGRESSIVE_HANDS
from firmware.engine.sidebets import SIDE_BETS, three_card_category, twenty_one_plus_three

SUITS = "SHDC"


def brute_force(judge, role_sizes, shoe_cards):
    """Every ordered deal of physical cards, counted one by one."""
    n = sum(role_sizes)
    counts: Counter = Counter()
    total = 0
    for deal in permutations(shoe_cards, n):
        roles, i = [], 0
        for size in role_sizes:
            roles.append(list(deal[i:i + size]))
            i += size
        counts[judge(roles)] += 1
        total += 1
    return {c: Fraction(k, total) for c, k in counts.items()}


def side_judge(rule):
    if rule.uses_dealer_card:
        return lambda roles: rule.evaluate(roles[0], roles[1][0])
    return lambda roles: rule.evaluate(roles[0], None)


def side_roles(rule):
    return (2, 1) if rule.uses_dealer_card else (2,)


def nonzero(probs):
    return {c: p for c, p in probs.items() if p}


# --- the poster's published figures ---------------------------------------------------------

def test_uk_poster_house_edges_with_4_decks_uk_poster_house_edge():
    """uk-blackjack-4-deck-poster 'THE HOUSE EDGE USING 4 DECKS': Super Pairs (the poster's
    "PERFECT PAIRS SIDE BET") 17.52%, 21 + 3 4.24%, Top 3 15.04%."""
    odds = profile_odds(load_profile("uk-4-deck"), ShoeComposition.of_decks(4), decks=4)
    edges = {bet.bet: round(float(bet.house_edge) * 100, 2) for bet in odds.side_bets}
    assert edges == {"super_pairs": 17.52, "twenty_one_plus_three": 4.24, "top_3": 15.04}


def test_super_pairs_trips_instead_of_suited_pair_is_the_posters_reading_uk_poster_super_pairs():
    """Paying suited trips on top of the suited pair (25 + 50) would not give the poster's 17.52%."""
    shoe = ShoeComposition.of_decks(4)
    probs = side_bet_probabilities("super_pairs", shoe)
    instead = SideBetTable("super_pairs", {"suited_trips": Fraction(50), "suited_pair": Fraction(25),
                                           "prime_pair": Fraction(10), "any_pair": Fraction(5)})
    both = SideBetTable("super_pairs", {**instead.pays, "suited_trips": Fraction(75)})
    assert round(float(side_bet_odds(instead, shoe).house_edge) * 100, 2) == 17.52
    assert round(float(side_bet_odds(both, shoe).house_edge) * 100, 2) != 17.52
    # 4 decks: a suited pair is 3 of 207, trips one of 206 dealer cards of those
    assert probs["suited_trips"] + probs["suited_pair"] == Fraction(3, 207)
    assert probs["suited_trips"] == Fraction(3, 207) * Fraction(2, 206)


def _edge_21_3_with(straight_rule) -> float:
    def judge(roles):
        hand = [*roles[0], roles[1][0]]
        ranks = sorted(POKER_ORDER[c.rank] for c in hand)
        trips = len({c.rank for c in hand}) == 1
        flush = len({c.suit for c in hand}) == 1
        if trips or flush or straight_rule(ranks):  # every 21 + 3 hand pays 9:1
            return "win"
        return None
    p = hand_probabilities(judge, (2, 1), ShoeComposition.of_decks(4), "suits").get("win", 0)
    return round(float(1 - 10 * p) * 100, 2)


def test_21_plus_3_straight_rule_ace_both_ends_no_wrap_is_the_posters_uk_poster_21_plus_3():
    """A-2-3 and Q-K-A are straights, K-A-2 is not: only that reproduces 4.24%."""
    consecutive = lambda r: len(set(r)) == 3 and r[2] - r[0] == 2  # noqa: E731
    low_ace = lambda r: consecutive(r) or r == [2, 3, 14]  # noqa: E731
    wrap = lambda r: low_ace(r) or r == [2, 13, 14]  # noqa: E731
    assert _edge_21_3_with(low_ace) == 4.24
    assert _edge_21_3_with(consecutive) != 4.24
    assert _edge_21_3_with(wrap) != 4.24


def test_main_game_edge_is_not_a_side_bet():
    """The poster's 'BEST TECHNIQUE IS 0.51%' is basic strategy on the main game: not offered here."""
    odds = profile_odds(load_profile("uk-4-deck"), ShoeComposition.of_decks(4))
    assert {b.bet for b in odds.side_bets} == set(load_profile("uk-4-deck").side_bets)


# --- closed forms ----------------------------------------------------------------------------

@pytest.mark.parametrize("decks", [1, 2, 4, 6, 8])
def test_perfect_pairs_closed_form_perfect_pairs_v5_3_14(decks):
    """Given the first card, the second of 52N-1: N-1 identical, N same colour other suit, 2N other colour."""
    probs = side_bet_probabilities("perfect_pairs", ShoeComposition.of_decks(decks))
    left = 52 * decks - 1
    assert probs == {"perfect_pair": Fraction(decks - 1, left), "coloured_pair": Fraction(decks, left),
                     "mixed_pair": Fraction(2 * decks, left), None: 1 - Fraction(4 * decks - 1, left)}


def test_perfect_pairs_25_12_6_with_8_decks_is_17_of_415_perfect_pairs_v5_4_1_2():
    table = load_profile("rws-perfect-pairs").side_bets["perfect_pairs"]
    assert side_bet_odds(table, ShoeComposition.of_decks(8)).house_edge == Fraction(17, 415)


@pytest.mark.parametrize("decks", [4, 6, 8])
def test_player_pair_and_13_closed_forms_rws_3_13(decks):
    shoe = ShoeComposition.of_decks(decks)
    total = comb(52 * decks, 2)
    assert side_bet_probabilities("player_pair", shoe)["pair"] == Fraction(13 * comb(4 * decks, 2), total)
    # exactly 13: A+Q-like pairs of values (3,10), (4,9), (5,8), (6,7); ten-values are 16N cards
    thirteen = (4 * decks * 16 * decks) + 3 * (4 * decks) ** 2
    u = side_bet_probabilities("under_13", shoe)["under_13"]
    o = side_bet_probabilities("over_13", shoe)["over_13"]
    assert u + o + Fraction(thirteen, total) == 1


@pytest.mark.parametrize("decks", [1, 4, 6, 8])
def test_four_card_closed_forms_switch_4_1_2(decks):
    shoe = ShoeComposition.of_decks(decks)
    t, r = 52 * decks, 4 * decks
    hands = comb(t, 4)
    suited4 = 52 * comb(decks, 4)
    expected = {
        "suited_four_of_a_kind": Fraction(suited4, hands),
        "four_of_a_kind": Fraction(13 * comb(r, 4) - suited4, hands),
        "two_pairs": Fraction(comb(13, 2) * comb(r, 2) ** 2, hands),
        "three_of_a_kind": Fraction(13 * comb(r, 3) * (t - r), hands),
        "pair_of_aces": Fraction(comb(r, 2) * (comb(t - r, 2) - 12 * comb(r, 2)), hands),
    }
    expected[None] = 1 - sum(expected.values())
    assert progressive_probabilities("four_card", shoe) == expected


def test_progressive_return_with_a_meter_switch_4_1_2():
    table = load_profile("rws-blackjack-switch").progressive
    shoe = ShoeComposition.of_decks(6)
    probs = progressive_probabilities("four_card", shoe)
    meter = Fraction(25000)
    odds = progressive_odds(table, shoe, meter)
    expected = sum(probs[c] * table.pays[c].value(meter) for c in table.pays)
    assert odds.expected_award == expected
    assert odds.return_ == expected / table.wager
    assert progressive_odds(table, shoe).return_ is None  # 100% of an unknown meter


# --- exhaustive cross-checks -------------------------------------------------------------------

@pytest.mark.parametrize("name", ["perfect_pairs", "super_pairs", "twenty_one_plus_three", "top_3",
                                  "player_pair"])
def test_one_deck_odds_equal_brute_force(name):
    rule = SIDE_BETS[name]
    expected = brute_force(side_judge(rule), side_roles(rule), ALL_CARDS)
    assert nonzero(side_bet_probabilities(name, ShoeComposition.of_decks(1))) == expected


@pytest.mark.parametrize("name", ["super_pairs", "twenty_one_plus_three", "top_3"])
def test_partly_used_shoe_equals_enumeration_without_symmetry(name):
    """The winning-classes path on an uneven shoe against judging every hand."""
    shoe = ShoeComposition.of_decks(4).without(parse_cards(["AS", "AS", "KH", "7D", "7D", "7D", "2C", "QS"]))
    rule = SIDE_BETS[name]
    fast = side_bet_probabilities(name, shoe)
    slow = hand_probabilities(side_judge(rule), side_roles(rule), shoe, "none")
    assert nonzero(fast) == slow


# a tiny shoe with room for pairs, trips, straights (A-2-3, Q-K-A, K-A-2) and flushes
TINY_KINDS = [Card(r, s) for r in "A23QK" for s in "SH"]
tiny_shoes = st.lists(st.integers(0, 2), min_size=len(TINY_KINDS), max_size=len(TINY_KINDS)).filter(
    lambda c: 4 <= sum(c) <= 8)


def _tiny(counts):
    return (ShoeComposition.from_counts(dict(zip(TINY_KINDS, counts, strict=True))),
            [card for card, n in zip(TINY_KINDS, counts, strict=True) for _ in range(n)])


@settings(max_examples=25, deadline=None)
@given(tiny_shoes, st.sampled_from(sorted(SIDE_BETS)))
def test_side_bet_odds_on_any_shoe_equal_a_brute_force_count(counts, name):
    shoe, cards = _tiny(counts)
    rule = SIDE_BETS[name]
    assert nonzero(side_bet_probabilities(name, shoe)) == brute_force(side_judge(rule), side_roles(rule), cards)


@settings(max_examples=15, deadline=None)
@given(tiny_shoes, st.sampled_from(sorted(PROGRESSIVE_HANDS)))
def test_progressive_odds_on_any_shoe_equal_a_brute_force_count(counts, name):
    shoe, cards = _tiny(counts)
    hand = PROGRESSIVE_HANDS[name]
    expected = brute_force(lambda roles: hand.evaluate(roles[0]), (hand.cards,), cards)
    assert nonzero(progressive_probabilities(name, shoe)) == expected


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 8), st.sampled_from(sorted(SIDE_BETS) + ["progressive:" + n for n in PROGRESSIVE_HANDS]))
def test_categories_and_lose_sum_to_exactly_one_on_a_full_shoe(decks, name):
    """On a full shoe every class, losers included, is counted: the total must be exactly 1."""
    shoe = ShoeComposition.of_decks(decks)
    if name.startswith("progressive:"):
        probs = progressive_probabilities(name.split(":")[1], shoe)
    else:
        probs = side_bet_probabilities(name, shoe)
    assert sum(probs.values()) == 1
    assert all(p >= 0 for p in probs.values())
    assert isinstance(probs[None], Fraction)


@settings(max_examples=200)
@given(st.sampled_from(sorted(SUIT_SYMMETRY)), st.lists(st.sampled_from(ALL_CARDS), min_size=4, max_size=4),
       st.data())
def test_each_bet_is_invariant_under_its_declared_suit_symmetry(name, cards, data):
    """The enumeration judges one hand per suit class: that is only right if the bet agrees."""
    g = data.draw(st.sampled_from(SUIT_GROUPS[SUIT_SYMMETRY[name]]))
    image = [Card(c.rank, SUITS[g[SUITS.index(c.suit)]]) for c in cards]
    if name in SIDE_BETS:
        rule = SIDE_BETS[name]
        assert rule.evaluate(cards[:2], cards[2]) == rule.evaluate(image[:2], image[2])
    else:
        hand = PROGRESSIVE_HANDS[name]
        assert hand.evaluate(cards[:hand.cards]) == hand.evaluate(image[:hand.cards])


def test_colour_group_keeps_colours_together_and_has_eight_members():
    red = {SUITS.index("H"), SUITS.index("D")}
    assert len(SUIT_GROUPS["colours"]) == 8
    for g in SUIT_GROUPS["colours"]:
        assert {g[s] for s in red} in (red, set(range(4)) - red)


def test_a_shoe_too_small_for_the_hand_is_refused():
    shoe = ShoeComposition.from_counts({Card("A", "S"): 1, Card("K", "S"): 1})
    with pytest.raises(ValueError, match="needs 3"):
        side_bet_probabilities("twenty_one_plus_three", shoe)
    assert side_bet_probabilities("perfect_pairs", shoe)[None] == 1


# --- a profile built for the test: the three-card progressive ----------------------------------

def test_three_card_progressive_on_any_profile():
    data = tomllib.loads(resources.files("firmware.profiles").joinpath("uk-4-deck.toml").read_text("utf-8"))
    data["progressive"] = {"hand": "three_card", "wager": 1,
                           "pays": {"suited_three_of_a_kind": "100%", "straight_flush": 200, "three_of_a_kind": 50,
                                    "straight": 5, "flush": 3}}
    profile = parse_profile(data, "<test>")
    shoe = ShoeComposition.of_decks(4)
    odds = profile_odds(profile, shoe, meter=Fraction(1000))
    probs = {o.category: o.probability for o in odds.progressive.outcomes}
    bets = {b.bet: b for b in odds.side_bets}
    # the same three cards as 21 + 3: its categories' probabilities carry over
    t = {o.category: o.probability for o in bets["twenty_one_plus_three"].outcomes}
    assert probs["straight"] == t["straight"] and probs["flush"] == t["flush"]
    assert probs["suited_three_of_a_kind"] + probs["three_of_a_kind"] == t["three_of_a_kind"]
    assert odds.progressive.return_ == (probs["suited_three_of_a_kind"] * 1000 + probs["straight_flush"] * 200
                                        + probs["three_of_a_kind"] * 50 + probs["straight"] * 5
                                        + probs["flush"] * 3)


def test_three_card_category_matches_21_plus_3_on_sample_hands():
    for a, b, d in [parse_cards(x) for x in (["AS", "2S", "3S"], ["QD", "KH", "AC"], ["7S", "7S", "7S"])]:
        assert twenty_one_plus_three([a, b], d) in (three_card_category([a, b, d]), "three_of_a_kind")
