"""The events a round is fed: frozen records, appended to the round's history.

Every event round-trips through :func:`event_to_dict` / :func:`event_from_dict` so a round
can be journalled and replayed exactly.
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any, Mapping

from .cards import Card, parse_card
from .money import parse_amount, to_json_number, whole_amount


class Action(StrEnum):
    HIT = "hit"
    STAND = "stand"
    DOUBLE = "double"
    SPLIT = "split"
    SURRENDER = "surrender"
    SWITCH = "switch"
    INSURANCE = "insurance"
    EVEN_MONEY = "even_money"


#: Decisions that belong to the hand in play (the others may come during the offer window).
TURN_ACTIONS = frozenset({Action.HIT, Action.STAND, Action.DOUBLE, Action.SPLIT, Action.SWITCH})

Wagers = tuple[tuple[int, tuple[tuple[str, Fraction], ...]], ...]


@dataclass(frozen=True, slots=True)
class BetsClosed:
    """ "No more bets" (§3.10, §5.8) with each box's wagers, bet name -> amount."""

    wagers: Wagers

    @classmethod
    def of(cls, wagers: Mapping[int, Mapping[str, Any]]) -> "BetsClosed":
        return cls(tuple([
            (int(box), tuple([(name if type(name) is str else str(name),
                               # (an int straight to its shared amount: no parse per bet)
                               whole_amount(amount) if type(amount) is int else parse_amount(amount))
                              for name, amount in bets.items()]))
            for box, bets in sorted(wagers.items(), key=lambda kv: int(kv[0]))
        ]))

    def as_dict(self) -> dict[int, dict[str, Fraction]]:
        return {box: dict(bets) for box, bets in self.wagers}


# CardDrawn and Decision are made for every card and decision: their __init__ sets the slots
# through the slots' own setters (the frozen dataclass __init__ goes through
# object.__setattr__ by name, two to three times slower). Still frozen, compared, hashed and
# shown as dataclasses (tests/engine/test_fast_path.py).


@dataclass(frozen=True, slots=True, init=False)
class CardDrawn:
    """A card from the shoe; who receives it follows from the dealing procedure."""

    card: Card

    def __init__(self, card: Card) -> None:
        if type(card) is not Card:      # (text such as "AS" would fail deep inside apply)
            raise TypeError(f"a card drawn is a Card (parse_card makes one of its text), not {card!r}")
        _set_card(self, card)


@dataclass(frozen=True, slots=True, init=False)
class Decision:
    """A player's decision for a box. ``hand`` (1-based) names a hand where it matters:
    insurance or surrender on either hand in Blackjack Switch."""

    box: int
    action: Action
    amount: Fraction | None = None
    hand: int | None = None

    def __init__(self, box: int, action: Action | str, amount: Fraction | int | None = None,
                 hand: int | None = None) -> None:
        # (made by code, not read off the wire, whose codec checks its own; True == 1 would
        # be box 1, hand 1 or a wager of 1 to the engine)
        if type(box) is not int:
            raise TypeError(f"a decision's box is a whole number, not {box!r}")
        if type(action) is not Action:
            action = Action(action)     # its text ("hit"), or ValueError
        if amount is not None and type(amount) is not Fraction:
            if type(amount) is not int:
                raise TypeError(f"a decision's amount is a Fraction or a whole number, not {amount!r}")
            amount = whole_amount(amount)
        if hand is not None and type(hand) is not int:
            raise TypeError(f"a decision's hand is a whole number, not {hand!r}")
        _set_box(self, box)
        _set_action(self, action)
        _set_amount(self, amount)
        _set_hand(self, hand)


_set_card = CardDrawn.__dict__["card"].__set__
_set_box, _set_action, _set_amount, _set_hand = (Decision.__dict__[name].__set__
                                                  for name in ("box", "action", "amount", "hand"))


@dataclass(frozen=True, slots=True)
class WalkedAway:
    """The only player on a box walked away: the House draws for the hand (§5.3)."""

    box: int

    def __post_init__(self) -> None:
        if type(self.box) is not int:       # (True == 1 would be box 1 to the engine)
            raise TypeError(f"a walked-away box is a whole number, not {self.box!r}")


@dataclass(frozen=True, slots=True)
class VoidRound:
    """The round is voided and every bet returned (§5.5, §5.17). ``reason`` is a clause key
    of the profile (``interruption``, ``foreign_card``, ``insufficient_cards``, ...) or free text."""

    reason: str


Event = BetsClosed | CardDrawn | Decision | WalkedAway | VoidRound


def event_to_dict(event: Event) -> dict[str, Any]:
    if isinstance(event, BetsClosed):
        return {"type": "bets_closed", "wagers": {str(box): {n: to_json_number(a) for n, a in bets}
                                                  for box, bets in event.wagers}}
    if isinstance(event, CardDrawn):
        return {"type": "card", "card": str(event.card)}
    if isinstance(event, Decision):
        out: dict[str, Any] = {"type": "decision", "box": event.box, "action": str(event.action)}
        if event.amount is not None:
            out["amount"] = to_json_number(event.amount)
        if event.hand is not None:
            out["hand"] = event.hand
        return out
    if isinstance(event, WalkedAway):
        return {"type": "walked_away", "box": event.box}
    if isinstance(event, VoidRound):
        return {"type": "void", "reason": event.reason}
    raise TypeError(f"not an event: {event!r}")


def _box_number(value: Any) -> int:
    """A box number as JSON holds it: an int, or a box's key as digits ("3", nine at most).
    Not int() of anything: int(True) is 1, int(2.9) is 2 and int("1_0") is 10."""
    if type(value) is int:
        return value
    if type(value) is str and value.isascii() and value.isdigit() and len(value) <= 9:
        return int(value)
    raise ValueError(f"box {reprlib.repr(value)} is not a box number")


def _hand(value: Any) -> int | None:
    """A hand number as a record holds it: an int (event_to_dict writes one), or none."""
    if value is None or type(value) is int:
        return value
    raise ValueError(f"hand {reprlib.repr(value)} is not a hand number")


def event_from_dict(data: Mapping[str, Any]) -> Event:
    kind = data.get("type")
    try:
        if kind == "bets_closed":
            return BetsClosed.of({_box_number(b): bets for b, bets in data["wagers"].items()})
        if kind == "card":
            return CardDrawn(parse_card(data["card"]))
        if kind == "decision":
            amount = data.get("amount")
            return Decision(_box_number(data["box"]), Action(data["action"]),
                            None if amount is None else parse_amount(amount), _hand(data.get("hand")))
        if kind == "walked_away":
            return WalkedAway(_box_number(data["box"]))
        if kind == "void":
            return VoidRound(str(data["reason"]))
    except (KeyError, TypeError, ValueError) as exc:
        # (reprlib: a record of megabytes, or a 5,000-digit box, is named, not printed whole)
        raise ValueError(f"malformed {reprlib.repr(kind)} event {reprlib.repr(dict(data))}: {exc}") from None
    raise ValueError(f"unknown event type {kind!r}")
