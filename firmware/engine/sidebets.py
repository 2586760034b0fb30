"""Side bets judged on the player's initial two cards (and, for some, the dealer's first card).

Pure functions, one :class:`SideBetRule` per bet in :data:`SIDE_BETS`. An evaluator names
the single best paying category (categories are listed best first) or ``None`` when the
bet loses. What each category *pays* is not here: it is the profile's pay table
(:class:`firmware.engine.profile.SideBetTable`), so an operator can change odds without
touching the rules.

Three-card poker hands (``uk-blackjack-4-deck-poster "21 + 3"`` and ``"TOP 3"``) follow
one straight rule, chosen because it reproduces the poster's published house edges
exactly (see :func:`is_three_card_straight` and ``tests/engine/test_odds.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from .cards import POKER_ORDER, RANKS, Card


class SideBetError(ValueError):
    """A side bet judged on the wrong number of cards (a caller's mistake, never a hand's)."""


Evaluator = Callable[[Sequence[Card], Card | None], str | None]


@dataclass(frozen=True)
class SideBetRule:
    name: str                       # bet name used in profiles, `betbox settle` and everywhere
    categories: tuple[str, ...]     # outcome names, best first
    uses_dealer_card: bool          # True when the dealer's first card is part of the hand
    clause: str                     # the rule document clause that defines the bet
    evaluate: Evaluator             # (player's initial two cards, dealer's first card) -> category | None


# --- shared judgement -----------------------------------------------------------------

def _two(cards: Sequence[Card], bet: str) -> tuple[Card, Card]:
    if len(cards) != 2:
        raise SideBetError(f"{bet} is judged on the player's initial two cards, got {len(cards)}")
    return cards[0], cards[1]


def _with_dealer(cards: Sequence[Card], dealer: Card | None, bet: str) -> tuple[Card, Card, Card]:
    a, b = _two(cards, bet)
    if dealer is None:
        raise SideBetError(f"{bet} needs the dealer's first card")
    return a, b, dealer


def is_three_card_straight(cards: Sequence[Card]) -> bool:
    """Three consecutive values (``uk-blackjack-4-deck-poster "21 + 3"``: STRAIGHT).

    The Ace plays high or low but does not wrap: A-2-3 and Q-K-A are straights, K-A-2 is
    not. This is the reading that reproduces the poster's published house edges with 4
    decks (21+3 4.24%, Top 3 15.04%); counting K-A-2 as well would give 1.65% and 11.90%,
    and the Ace high only (no A-2-3) 6.84% and 18.17%.
    """
    if len({c.rank for c in cards}) != 3:
        return False
    high = sorted(POKER_ORDER[c.rank] for c in cards)
    if high[2] - high[0] == 2:
        return True
    return high == [2, 3, 14]  # A-2-3 with the Ace low


def three_card_category(cards: Sequence[Card]) -> str | None:
    """The best three-card poker hand of ``cards``, best first.

    ``suited_three_of_a_kind`` (``"TOP 3"`` THREE OF A KIND SUITED: three identical cards,
    possible with more than one deck), ``straight_flush``, ``three_of_a_kind``,
    ``straight``, ``flush`` -- or ``None``. A suited three of a kind is also a flush; it
    is named by its best category only.
    """
    ranks = {c.rank for c in cards}
    suits = {c.suit for c in cards}
    if len(ranks) == 1:
        return "suited_three_of_a_kind" if len(suits) == 1 else "three_of_a_kind"
    straight = is_three_card_straight(cards)
    if straight and len(suits) == 1:
        return "straight_flush"
    if straight:
        return "straight"
    if len(suits) == 1:
        return "flush"
    return None


# --- the bets -------------------------------------------------------------------------

def player_pair(cards: Sequence[Card], dealer: Card | None = None) -> str | None:
    """``rws-blackjack-v5 §1.21, §3.13.1``: same number or picture type, regardless of colour
    and suit. K-K is a pair, K-Q is not (both are worth 10, but §1.21 says *type*)."""
    if len(cards) != 2:             # (_two, written out: judged for every box of every round)
        _two(cards, "player_pair")
    return "pair" if cards[0].rank == cards[1].rank else None


#: ``rws-blackjack-v5 §3.13.2``: each rank's points for under/over 13, all Aces 1 point,
#: pictures 10 (a look-up per card: judged for every box of every round)
_POINTS = {rank: Card(rank, "S").value for rank in RANKS}


def under_13(cards: Sequence[Card], dealer: Card | None = None) -> str | None:
    """``rws-blackjack-v5 §3.13.2 a``: wins below 13. Blackjack counts as under 13 (A+T is 11
    with the Ace at 1, so the rule and the count agree); exactly 13 loses (§3.13.2 c)."""
    if len(cards) != 2:
        _two(cards, "under_13")
    return "under_13" if _POINTS[cards[0].rank] + _POINTS[cards[1].rank] < 13 else None


def over_13(cards: Sequence[Card], dealer: Card | None = None) -> str | None:
    """``rws-blackjack-v5 §3.13.2 b``: wins above 13; exactly 13 loses (§3.13.2 c)."""
    if len(cards) != 2:
        _two(cards, "over_13")
    return "over_13" if _POINTS[cards[0].rank] + _POINTS[cards[1].rank] > 13 else None


def perfect_pairs(cards: Sequence[Card], dealer: Card | None = None) -> str | None:
    """``rws-blackjack-perfect-pairs-v5 §3.14.1-§3.14.3``: a pair of the same rank is perfect
    (same suit), coloured (same colour, different suits) or mixed (different colours)."""
    a, b = _two(cards, "perfect_pairs")
    if a.rank != b.rank:
        return None
    if a.suit == b.suit:
        return "perfect_pair"
    if a.colour == b.colour:
        return "coloured_pair"
    return "mixed_pair"


def super_pairs(cards: Sequence[Card], dealer: Card | None) -> str | None:
    """``uk-blackjack-4-deck-poster 'SUPER PAIRS'``: any pair (one red, one black), prime pair
    (same colour, different suits), suited pair, suited trips (a suited pair that also
    matches the dealer's first card in rank and suit).

    Suited trips pays *instead of* the suited pair (50:1 in all, not 25 + 50): with the
    poster's 5/10/25/50 and 4 decks that gives exactly the published 17.52% house edge
    (the poster's "PERFECT PAIRS SIDE BET" line), where paying both would give 17.17%.
    """
    a, b, d = _with_dealer(cards, dealer, "super_pairs")
    if a.rank != b.rank:
        return None
    if a.suit == b.suit:
        return "suited_trips" if d == a else "suited_pair"
    if a.colour == b.colour:
        return "prime_pair"
    return "any_pair"


def twenty_one_plus_three(cards: Sequence[Card], dealer: Card | None) -> str | None:
    """``uk-blackjack-4-deck-poster "21 + 3"``: the player's two cards and the dealer's first
    card as a three-card poker hand of a flush or better. A suited three of a kind is a
    three of a kind here (every category pays 9:1 on the poster anyway). Straights: see
    :func:`is_three_card_straight`."""
    hand = _with_dealer(cards, dealer, "twenty_one_plus_three")
    category = three_card_category(hand)
    return "three_of_a_kind" if category == "suited_three_of_a_kind" else category


def top_3(cards: Sequence[Card], dealer: Card | None) -> str | None:
    """``uk-blackjack-4-deck-poster "TOP 3"``: three of a kind or better on the player's two
    cards and the dealer's first card -- suited three of a kind, straight flush, three of a
    kind. Same straight rule as 21 + 3. (That Top 3 needs a 21 + 3 wager is the engine's
    business, from the profile's ``requires``.)"""
    hand = _with_dealer(cards, dealer, "top_3")
    category = three_card_category(hand)
    return category if category in ("suited_three_of_a_kind", "straight_flush", "three_of_a_kind") else None


SIDE_BETS: Mapping[str, SideBetRule] = {
    rule.name: rule
    for rule in (
        SideBetRule("player_pair", ("pair",), False, "rws-blackjack-v5 §1.21, §3.13.1", player_pair),
        SideBetRule("under_13", ("under_13",), False, "rws-blackjack-v5 §1.35, §3.13.2", under_13),
        SideBetRule("over_13", ("over_13",), False, "rws-blackjack-v5 §1.18, §3.13.2", over_13),
        SideBetRule("perfect_pairs", ("perfect_pair", "coloured_pair", "mixed_pair"), False,
                    "rws-blackjack-perfect-pairs-v5 §3.14, §4.1.2", perfect_pairs),
        SideBetRule("super_pairs", ("suited_trips", "suited_pair", "prime_pair", "any_pair"), True,
                    "uk-blackjack-4-deck-poster 'SUPER PAIRS'", super_pairs),
        SideBetRule("twenty_one_plus_three", ("straight_flush", "three_of_a_kind", "straight", "flush"), True,
                    'uk-blackjack-4-deck-poster "21 + 3"', twenty_one_plus_three),
        SideBetRule("top_3", ("suited_three_of_a_kind", "straight_flush", "three_of_a_kind"), True,
                    'uk-blackjack-4-deck-poster "TOP 3"', top_3),
    )
}

#: The side bets whose judge reads only the two cards' ranks (neither their suits nor the
#: dealer's card): the engine may remember a box's categories by its two ranks.
#: tests/engine/test_fast_path.py holds each to that on every pair of cards.
RANKS_ONLY = frozenset({"player_pair", "under_13", "over_13"})
