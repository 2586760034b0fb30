"""Plain values the seat display is made of. No Kivy here.

``SeatSnapshot`` is what the UI reads from the seat unit (its view plus a few facts the
view does not carry yet, see ``ui/source.py``); ``SeatScreen`` is what the widgets show,
every text already in the player's language. Both are frozen, so a snapshot taken in the
table's thread can be handed to the UI thread as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Mapping

from firmware.runtime.view import SeatView


# --- what the UI reads ----------------------------------------------------------------

@dataclass(frozen=True)
class WagerIssue:
    """Why the engine would not count a spot as placed (asked of the engine, never guessed).

    ``issue``: over_maximum | under_minimum | pro_rata | no_initial_bet | requires | refused.
    """

    spot: str
    issue: str
    detail: str = ""
    requires: str | None = None


@dataclass(frozen=True)
class Fault:
    """An alarm or fault worth telling the player. ``kind`` groups the runtime's alarm codes:
    shoe | link | tamper | void | integrity | chip | other."""

    kind: str
    code: str
    detail: str


@dataclass(frozen=True)
class ControllerState:
    """The jackpot controller as this seat sees it. ``link`` None: no controller configured."""

    link: str | None = None          # "up" | "down" | None
    meter: Fraction | None = None
    pending: bool = False            # a hit is locked: the meter shows PENDING


@dataclass(frozen=True)
class SeatSnapshot:
    view: SeatView
    profile_name: str = ""
    title: str = ""
    limits: Mapping[str, tuple[Fraction, Fraction]] = field(default_factory=dict)
    turn: str | None = None                                  # mine | others | dealer | dealing
    issues: tuple[WagerIssue, ...] = ()
    chips: tuple[tuple[str, str, str], ...] = ()              # (spot, uid, unknown | barred | ...)
    late_spots: tuple[str, ...] = ()                          # chips added after no more bets
    side_results: Mapping[str, str | None] = field(default_factory=dict)   # bet -> category
    side_odds: Mapping[str, Mapping[str, Fraction]] = field(default_factory=dict)  # pay tables
    insurance_odds: Fraction | None = None
    progressive: tuple[str | None, str | None] | None = None  # (category, award) once judged
    envy: tuple[tuple[int, str], ...] = ()                    # (from box, amount)
    switched: bool = False
    switch_legal: bool = False
    controller: ControllerState = ControllerState()
    faults: tuple[Fault, ...] = ()


# --- what the widgets show ------------------------------------------------------------

@dataclass(frozen=True)
class SpotLine:
    spot: str
    label: str
    amount: str
    note: str
    tone: str           # muted | ok | warn | bad


@dataclass(frozen=True)
class CardFace:
    text: str           # "10♠"
    red: bool


@dataclass(frozen=True)
class HandLine:
    label: str
    cards: tuple[CardFace, ...]
    total: str
    in_play: bool
    result: str         # "" until settled
    tone: str


@dataclass(frozen=True)
class ResultLine:
    text: str           # "Perfect Pair 25:1  +250"
    tone: str


@dataclass(frozen=True)
class Banner:
    kind: str           # jackpot | envy | fault
    title: str
    text: str


@dataclass(frozen=True)
class SeatScreen:
    lang: str
    title: str
    limits: str
    seat: str
    round: str
    phase: str
    phase_key: str
    spots: tuple[SpotLine, ...]
    hands: tuple[HandLine, ...]
    dealer_label: str
    dealer_cards: tuple[CardFace, ...]
    dealer_total: str
    switch_note: str
    decisions: str
    results: tuple[ResultLine, ...]
    net: str
    net_tone: str
    meter: str
    meter_tone: str
    banners: tuple[Banner, ...]
    messages: tuple[str, ...]

    def texts(self) -> list[str]:
        """Every text on the screen (for tests and accessibility checks)."""
        out = [self.title, self.limits, self.seat, self.round, self.phase, self.dealer_label,
               self.dealer_total, self.switch_note, self.decisions, self.net, self.meter]
        for s in self.spots:
            out += [s.label, s.amount, s.note]
        for h in self.hands:
            out += [h.label, h.total, h.result, *(c.text for c in h.cards)]
        out += [c.text for c in self.dealer_cards]
        out += [r.text for r in self.results]
        for b in self.banners:
            out += [b.title, b.text]
        out += list(self.messages)
        return [t for t in out if t]
