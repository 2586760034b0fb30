"""Basic strategy for European no-hole-card blackjack, dealer stands on soft 17.

The player's *preferences* only: every choice is checked against
:meth:`firmware.engine.round.Round.legal_decisions`, so a profile's own limits (e.g.
``my-classic`` doubles only on 9-11 without an Ace, no surrender against an Ace) are
respected by falling back to the next preference. No hole card: the dealer may still
have a Blackjack, so doubles and splits against a ten or an Ace are avoided.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from firmware.engine.cards import Card
from firmware.engine.events import Action
from firmware.engine.hand import hand_total

H, S, D, P, R = "hit", "stand", "double", "split", "surrender"


def _up_value(up: Card) -> int:
    """2..11 (Ace = 11) for the strategy tables."""
    return 11 if up.is_ace else up.value


def _hard(total: int, up: int) -> list[str]:
    if total <= 8:
        return [H]
    if total == 9:
        return [D, H] if 3 <= up <= 6 else [H]
    if total == 10:
        return [D, H] if up <= 9 else [H]
    if total == 11:
        return [D, H] if up <= 10 and up != 10 else [H]
    if total == 12:
        return [S, H] if 4 <= up <= 6 else [H, S]
    if total in (15, 16) and up == 10:
        return [R, H, S]
    if total <= 16:
        return [S, H] if up <= 6 else [H, S]
    return [S, H]


def _soft(total: int, up: int) -> list[str]:
    if total in (13, 14):
        return [D, H] if up in (5, 6) else [H]
    if total in (15, 16):
        return [D, H] if 4 <= up <= 6 else [H]
    if total == 17:
        return [D, H] if 3 <= up <= 6 else [H]
    if total == 18:
        if 3 <= up <= 6:
            return [D, S]
        return [S, H] if up in (2, 7, 8) else [H, S]
    return [S, H]


def _pair(rank_value: int, up: int) -> bool:
    """Split this pair (value 1 = Aces) against ``up``?"""
    if rank_value == 1:
        return up <= 10
    if rank_value == 10 or rank_value == 5:
        return False
    if rank_value == 9:
        return up in (2, 3, 4, 5, 6, 8, 9)
    if rank_value == 8:
        return up <= 9
    if rank_value in (7, 3, 2):
        return up <= 7
    if rank_value == 6:
        return up <= 6
    if rank_value == 4:
        return up in (5, 6)
    return False


def preferences(cards: Sequence[Card], up: Card) -> list[str]:
    """The actions this hand would like, best first."""
    total, soft = hand_total(cards)
    u = _up_value(up)
    prefs: list[str] = []
    if len(cards) == 2 and cards[0].value == cards[1].value and _pair(cards[0].value, u):
        prefs.append(P)
    prefs.extend(_soft(total, u) if soft else _hard(total, u))
    return prefs


def choose(cards: Sequence[Card], up: Card, legal: Mapping[Action, str | None]) -> Action:
    """The first preference the engine allows; ``legal`` is ``Round.legal_decisions``."""
    for name in preferences(cards, up):
        action = Action(name)
        if action in legal and legal[action] is None:
            return action
    for action in (Action.STAND, Action.HIT):
        if action in legal and legal[action] is None:
            return action
    raise ValueError("no turn decision is legal for this hand")


def hand_score(cards: Sequence[Card]) -> int:
    """A simple value of a two-card starting hand, for the Switch decision."""
    total, soft = hand_total(cards)
    if len(cards) == 2 and cards[0].is_ace and cards[1].is_ace:
        return 7
    table = {21: 10, 20: 9, 19: 8, 11: 7, 10: 6, 18: 5, 9: 4, 17: 3}
    score = table.get(total, 2 if total <= 8 else 1)
    return score + (1 if soft and total < 17 else 0)


def should_switch(first: Sequence[Card], second: Sequence[Card]) -> bool:
    """Blackjack Switch: exchange the second cards when the pair of hands scores higher."""
    now = hand_score(first) + hand_score(second)
    swapped = hand_score([first[0], second[1]]) + hand_score([second[0], first[1]])
    return swapped > now
