"""What a seat's screen shows: a plain, immutable view of the box, built from a snapshot of
the seat's state when something reads it (:mod:`firmware.runtime.seatview`). The UI observes it; it never
decides a rule. Everything is a code or an amount string, never a sentence: the screen
says it in the player's language."""

from __future__ import annotations

from dataclasses import dataclass, field

from .wire import NEVER_HEARD, ControllerStatus


@dataclass(frozen=True)
class ChipView:
    """One chip the reader senses on a spot, as the chip registry knows it."""

    uid: str
    status: str                 # the registry's status (valid, barred, ...) or "unknown"
    denomination: str | None = None


@dataclass(frozen=True)
class SpotIssue:
    """Why (part of) a spot is not counted as placed, with the rule that says so.

    ``code``: unknown_chip | barred_chip (``count`` chips not counted) | no_initial_bet |
    requires (``requires`` names the bet) | over_maximum | under_minimum (refused at this
    table; ``limit``) | pro_rata (over the maximum, played on ``limit``) |
    played_under_minimum | progressive_unavailable (``reason``: controller_link_down, ...) |
    bets_closed (chips added after no more bets) | refused (the dealer refused the box's
    wagers; ``reason`` the engine's issue code when known) | bets_not_taken | or an
    :class:`~firmware.engine.errors.IllegalWager` issue (above_initial_bet,
    progressive_amount, not_cents, ...)."""

    code: str
    clause: str = ""
    limit: str | None = None
    requires: str | None = None
    reason: str | None = None
    count: int = 0


@dataclass(frozen=True)
class SpotView:
    name: str
    amount: str                 # what the valid chips on the spot are worth
    status: str                 # empty | open | locked | refused | not_wagered (seat.unwagered)
    refused_chips: tuple[str, ...] = ()
    issues: tuple[SpotIssue, ...] = ()
    chips: tuple[ChipView, ...] = ()

    @property
    def issue(self) -> str | None:
        return self.issues[0].code if self.issues else None

    @property
    def clause(self) -> str:
        return self.issues[0].clause if self.issues else ""


@dataclass(frozen=True)
class HandView:
    cards: tuple[str, ...]
    total: int
    soft: bool
    status: str
    result: str | None
    net: str | None
    in_play: bool = False
    switched: bool = False


@dataclass(frozen=True)
class ResultView:
    """One bet's settlement with the pay-table line that paid it (``odds`` "25:1")."""

    bet: str
    net: str
    category: str | None = None
    odds: str | None = None


@dataclass(frozen=True)
class AlarmView:
    """An alarm: its code and plain parameters (spot, amount, uid, ...). In
    ``SeatView.round_alarms`` the seat's own alarms of this round; in
    ``SeatView.table_alarms`` the table's faults in force (the dealer's alarms), where
    ``lasting`` marks a condition that holds until its counterpart (a shoe jam until
    ``shoe_jam_cleared``, an open shoe door until ``shoe_door_closed``), not just this round."""

    code: str
    params: tuple[tuple[str, str], ...] = ()
    lasting: bool = False

    def param(self, key: str) -> str | None:
        return dict(self.params).get(key)


@dataclass(frozen=True)
class ProgressiveView:
    hand: str                   # the qualifying category the engine judged
    award: str | None           # None while the controller has not fixed it
    share: bool = False         # a share of the meter (100% wins), paid at the end
    pending: bool = False


@dataclass(frozen=True)
class SeatView:
    box: int
    round: int
    phase: str                  # idle | open | closing | play | over | void
    spots: tuple[SpotView, ...]
    hands: tuple[HandView, ...] = ()
    dealer_cards: tuple[str, ...] = ()
    dealer_total: int | None = None
    results: tuple[tuple[str, str], ...] = ()   # bet -> net, once settled
    messages: tuple[str, ...] = ()              # for logs; the screen shows codes only
    alarms: tuple[str, ...] = ()                # details, for logs
    lamps: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    decisions: tuple[str, ...] = ()             # legal now for the hand in play
    dealer_soft: bool = False                   # as the engine counts them (§3.2)
    dealer_blackjack: bool = False
    profile: str = ""
    title: str = ""
    limits: tuple[tuple[str, str, str], ...] = ()   # (bet, minimum, maximum)
    turn: str | None = None                     # mine | others | dealer | dealing
    pay_lines: tuple[ResultView, ...] = ()      # results with the line that paid, once settled
    switched: bool = False
    progressive: ProgressiveView | None = None
    envy: tuple[tuple[int, str], ...] = ()      # (from box, amount)
    round_alarms: tuple[AlarmView, ...] = ()    # this round's alarms, as codes
    #: the table's faults in force, heard from the dealer: lasting conditions first (shoe
    #: jam, shoe door open), then the dealer's alarms of this round (misread, card gap,
    #: interruption, integrity, ...); one naming another box (``box``) is that box's
    table_alarms: tuple[AlarmView, ...] = ()
    controller: ControllerStatus = NEVER_HEARD     # as the seat unit holds it (issue #15)
    alarm_mark: int = 0                         # where this round's alarms start in seat.alarms
    #: insurance / even money / surrender legal now for this box, per initial hand
    #: (1-based; Blackjack Switch §3.9.1 insures either hand): the engine's
    #: ``legal_decisions(box, hand=n)`` while the offers are open, whoever's turn it is.
    offers: tuple[tuple[str, int], ...] = ()
    #: the seat's unit conditions in force, as codes (``unit_conditions`` in seat.py):
    #: recovering | no_dealer | broker_down | jackpot_link_down | reader_down | shoe_down |
    #: console_down | not_verified | storage_low | behind_confirmed
    conditions: tuple[str, ...] = ()

    def limit(self, bet: str) -> tuple[str, str] | None:
        return next(((lo, hi) for b, lo, hi in self.limits if b == bet), None)
