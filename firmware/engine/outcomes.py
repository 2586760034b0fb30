"""What applying an event produced: frozen records the runtime fans out (screen, lamps,
reports). Amounts are the player's net: won > 0, lost < 0, stand off or returned = 0."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


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
