"""Progressive jackpot hands: which initial cards trigger which award.

Pure functions, one :class:`ProgressiveHand` per evaluator in :data:`PROGRESSIVE_HANDS`;
a profile's ``[progressive] hand = "..."`` names one. Only the highest qualifying hand is
named (``rws-blackjack-switch-v4 §3.7.1``); what it pays is the profile's pay table.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from .cards import Card
from .sidebets import SideBetError, three_card_category


@dataclass(frozen=True)
class ProgressiveHand:
    name: str                     # evaluator name used in profiles' [progressive] hand = "..."
    categories: tuple[str, ...]   # best first
    cards: int                    # how many cards it judges
    clause: str
    evaluate: Callable[[Sequence[Card]], str | None]


def _count(cards: Sequence[Card], n: int, hand: str) -> None:
    if len(cards) != n:
        raise SideBetError(f"the {hand} progressive hand is judged on {n} cards, got {len(cards)}")


def four_card(cards: Sequence[Card]) -> str | None:
    """``rws-blackjack-switch-v4 §3.3, §3.7, §4.1.2``: the player's initial four cards (both
    hands' first two cards, before any switch), highest qualifying hand only (§3.7.1).

    Pay-table order, which ranks two pairs ($30) above three of a kind ($20). Pairs are by
    rank (a K and a Q are not a pair). Edge cases, each the highest hand that the four
    cards make: four Aces is a four of a kind (not two pairs or a pair of Aces); A-A-K-K is
    two pairs; A-A-A-x is a three of a kind; A-A-x-y (x, y not a pair) is a pair of Aces;
    four cards of one rank and one suit (possible with 4+ decks) is the suited four of a
    kind.
    """
    _count(cards, 4, "four_card")
    by_rank = Counter(c.rank for c in cards)
    shape = sorted(by_rank.values(), reverse=True)
    if shape[0] == 4:
        return "suited_four_of_a_kind" if len({c.suit for c in cards}) == 1 else "four_of_a_kind"
    if shape == [2, 2]:
        return "two_pairs"
    if shape[0] == 3:
        return "three_of_a_kind"
    if by_rank.get("A") == 2:
        return "pair_of_aces"
    return None


def three_card(cards: Sequence[Card]) -> str | None:
    """The player's initial two cards and the dealer's first card, as a three-card poker
    hand, so that any ruleset can carry a progressive. Categories and the straight rule
    (A-2-3 and Q-K-A, never K-A-2) are those of ``uk-blackjack-4-deck-poster "21 + 3"``
    and ``"TOP 3"``."""
    _count(cards, 3, "three_card")
    return three_card_category(cards)


PROGRESSIVE_HANDS: Mapping[str, ProgressiveHand] = {
    hand.name: hand
    for hand in (
        ProgressiveHand("four_card",
                        ("suited_four_of_a_kind", "four_of_a_kind", "two_pairs", "three_of_a_kind", "pair_of_aces"),
                        4, "rws-blackjack-switch-v4 §3.3, §3.7, §4.1.2", four_card),
        ProgressiveHand("three_card",
                        ("suited_three_of_a_kind", "straight_flush", "three_of_a_kind", "straight", "flush"),
                        3, 'uk-blackjack-4-deck-poster "21 + 3", "TOP 3"', three_card),
    )
}
