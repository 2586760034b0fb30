"""Point totals (``rws-blackjack-v5 §3.2``, §1.11 hard, §1.28 soft)."""

from __future__ import annotations

from typing import Sequence

from .cards import RANKS, Card

#: Each rank's value with an Ace as 1 (§3.2), the same as :attr:`Card.value`.
_VALUE = {rank: Card(rank, "S").value for rank in RANKS}


def hand_total(cards: Sequence[Card]) -> tuple[int, bool]:
    """The best total and whether it is soft (an Ace counted as 11, §1.28).

    At most one Ace can count 11 without busting, which is also the UK poster's "the
    Dealer's first ace counts as 11 unless it busts the hand; subsequent aces count as one".
    """
    n = len(cards)
    if n == 2:                         # most counts are of two cards: a look-up per rank
        return _BY_TWO_RANKS[cards[0].rank][cards[1].rank]
    if n == 3:                         # and most others of three (a hit, a double): likewise
        return _BY_THREE_RANKS[cards[0].rank][cards[1].rank][cards[2].rank]
    total = 0
    has_ace = False
    for card in cards:
        rank = card.rank
        total += _VALUE[rank]      # a dict look-up: this runs several times per event
        if rank == "A":
            has_ace = True
    if has_ace and total + 10 <= 21:
        return total + 10, True
    return total, False


def _count(ranks: tuple[str, ...]) -> tuple[int, bool]:
    """(total, soft) of these ranks, as :func:`hand_total`'s loop counts them."""
    total = sum(_VALUE[r] for r in ranks)
    return (total + 10, True) if "A" in ranks and total + 10 <= 21 else (total, False)


#: every two and every three ranks' (total, soft), by rank and rank (tests/engine/test_fast_path.py):
#: a look-up by a rank (a str keeps its hash) is cheaper than one by a tuple made and hashed per count
_BY_TWO_RANKS = {a: {b: _count((a, b)) for b in RANKS} for a in RANKS}
_BY_THREE_RANKS = {a: {b: {c: _count((a, b, c)) for c in RANKS} for b in RANKS} for a in RANKS}


def is_two_card_21(cards: Sequence[Card]) -> bool:
    """An Ace and a ten-value card. Whether it is a *Blackjack* also depends on how the hand
    was formed (not from a split or a switch: §1.2, §3.21.2, Switch §1)."""
    return len(cards) == 2 and hand_total(cards)[0] == 21


def describe(cards: Sequence[Card]) -> str:
    total, soft = hand_total(cards)
    kind = "soft " if soft else ""
    return f"{' '.join(str(c) for c in cards)} ({kind}{total})"
