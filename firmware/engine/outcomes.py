"""What applying an event produced: frozen records the runtime fans out (screen, lamps,
reports). Amounts are the player's net: won > 0, lost < 0, stand off or returned = 0."""

from __future__ import annotations

from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any, Callable, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class WagerFlagged:
    """A wager outside the table limits that the rules let stand (§5.1.1 pro rata, §5.2.1)."""

    box: int
    bet: str
    issue: str            # "over_maximum" | "under_minimum"
    placed: Fraction
    counted: Fraction     # the stake the bet is settled on
    clause: str


@dataclass(frozen=True, slots=True)
class BetReturned:
    box: int
    bet: str
    amount: Fraction
    reason: str           # e.g. "no_initial_bet", "requires_twenty_one_plus_three"
    clause: str


@dataclass(frozen=True, slots=True)
class SideBetSettled:
    box: int
    bet: str
    category: str | None  # None: the bet lost
    odds: Fraction | None
    stake: Fraction
    net: Fraction
    clause: str


@dataclass(frozen=True, slots=True)
class ProgressiveHit:
    """A qualifying progressive hand. ``meter_share`` is set for a share-of-meter award
    (settled at the end of the round, Switch §3.7); ``award`` is None when no meter was given."""

    box: int
    category: str
    award: Fraction | None
    meter_share: Fraction | None
    clause: str


@dataclass(frozen=True, slots=True)
class EnvyBonus:
    box: int
    from_box: int
    award: Fraction
    clause: str


@dataclass(frozen=True, slots=True)
class InsuranceSettled:
    box: int
    hand: int
    stake: Fraction
    net: Fraction
    clause: str


@dataclass(frozen=True, slots=True)
class HandSettled:
    box: int
    hand: int             # the hand's stable id (Round.hand_by_id), not its position
    result: str           # blackjack | win | lose | bust | stand_off | surrender | even_money
    net: Fraction
    clause: str


@dataclass(frozen=True, slots=True)
class RoundVoided:
    reason: str
    clause: str


@dataclass(frozen=True, slots=True)
class RoundComplete:
    dealer_total: int | None


Outcome = (WagerFlagged | BetReturned | SideBetSettled | ProgressiveHit | EnvyBonus
           | InsuranceSettled | HandSettled | RoundVoided | RoundComplete)


# --- the hot records, made without the frozen dataclass __init__ ---------------------------
# A frozen dataclass sets each field through object.__setattr__ by name (~1.5 us for a
# HandSettled); the slots' own descriptors do the same in a third of the time. The records
# are the very same frozen types (tests/engine/test_fast_records.py: equal, every field set).

_new = object.__new__


def _setters(cls: Any, *names: str) -> tuple[Any, ...]:
    assert names == tuple(f.name for f in fields(cls)), f"{cls.__name__}: fields changed"
    return tuple(cls.__dict__[n].__set__ for n in names)


def record_maker(cls: type[T]) -> Callable[..., T]:
    """A maker of ``cls`` records from every field's value, in field order, positionally
    (for the other frozen records made per round: the settlement projection). The maker is
    written out per class (a loop over the fields costs about what it saves)."""
    record: Any = cls
    names = tuple(f.name for f in fields(record))
    setters = _setters(record, *names)
    args = ", ".join(f"v{i}" for i in range(len(names)))
    body = "".join(f"    s{i}(o, v{i})\n" for i in range(len(names)))
    source = f"def make({args}):\n    o = new(cls)\n{body}    return o\n"
    scope: dict[str, Any] = {"new": _new, "cls": cls, **{f"s{i}": put for i, put in enumerate(setters)}}
    exec(compile(source, f"<record_maker {cls.__name__}>", "exec"), scope)   # only the text above
    make: Callable[..., T] = scope["make"]
    return make


_HS = _setters(HandSettled, "box", "hand", "result", "net", "clause")
_SB = _setters(SideBetSettled, "box", "bet", "category", "odds", "stake", "net", "clause")


def hand_settled(box: int, hand: int, result: str, net: Fraction, clause: str) -> HandSettled:
    o: HandSettled = _new(HandSettled)
    s_box, s_hand, s_result, s_net, s_clause = _HS
    s_box(o, box)
    s_hand(o, hand)
    s_result(o, result)
    s_net(o, net)
    s_clause(o, clause)
    return o


def side_bet_settled(box: int, bet: str, category: str | None, odds: Fraction | None, stake: Fraction,
                     net: Fraction, clause: str) -> SideBetSettled:
    o: SideBetSettled = _new(SideBetSettled)
    s_box, s_bet, s_category, s_odds, s_stake, s_net, s_clause = _SB
    s_box(o, box)
    s_bet(o, bet)
    s_category(o, category)
    s_odds(o, odds)
    s_stake(o, stake)
    s_net(o, net)
    s_clause(o, clause)
    return o
