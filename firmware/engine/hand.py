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


#: every two ranks' (total, soft), as the loop above counts them (tests/engine/test_fast_path.py)
_TWO_CARDS: dict[tuple[str, str], tuple[int, bool]] = {}
for _a in RANKS:
    for _b in RANKS:
        _t = _VALUE[_a] + _VALUE[_b]
        _TWO_CARDS[_a, _b] = (_t + 10, True) if "A" in (_a, _b) and _t + 10 <= 21 else (_t, False)
#: every three ranks' (total, soft), likewise
_THREE_CARDS: dict[tuple[str, str, str], tuple[int, bool]] = {}
for _a in RANKS:
    for _b in RANKS:
        for _c in RANKS:
            _t = _VALUE[_a] + _VALUE[_b] + _VALUE[_c]
            _THREE_CARDS[_a, _b, _c] = ((_t + 10, True) if "A" in (_a, _b, _c) and _t + 10 <= 21
                                        else (_t, False))
#: the same tables by rank and rank: a look-up by a rank (a str with its hash kept) is cheaper
#: than one by a tuple of ranks made and hashed per count
_BY_TWO_RANKS = {_a: {_b: _TWO_CARDS[_a, _b] for _b in RANKS} for _a in RANKS}
_BY_THREE_RANKS = {_a: {_b: {_c: _THREE_CARDS[_a, _b, _c] for _c in RANKS} for _b in RANKS} for _a in RANKS}
del _a, _b, _c, _t


def is_two_card_21(cards: Sequence[Card]) -> bool:
    """An Ace and a ten-value card. Whether it is a *Blackjack* also depends on how the hand
    was formed (not from a split or a switch: §1.2, §3.21.2, Switch §1)."""
    return len(cards) == 2 and hand_total(cards)[0] == 21


def describe(cards: Sequence[Card]) -> str:
    total, soft = hand_total(cards)
    kind = "soft " if soft else ""
    return f"{' '.join(str(c) for c in cards)} ({kind}{total})"
