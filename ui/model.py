"""Plain values the seat display is made of. No Kivy here.

``SeatSnapshot`` is what the UI reads from the seat unit (its view, the table's faults
included, see ``ui/source.py``); ``SeatScreen`` is what the widgets show,
every text already in the player's language. Both are frozen, so a snapshot taken in the
table's thread can be handed to the UI thread as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from firmware.runtime.view import SeatView


# --- what the UI reads ----------------------------------------------------------------

@dataclass(frozen=True)
class ControllerState:
    """The jackpot controller as this seat sees it. ``link`` None: no controller known."""

    link: str | None = None          # "up" | "down" | None
    meter: Fraction | str | None = None
    pending: bool = False            # a hit is locked: the meter shows PENDING


@dataclass(frozen=True)
class SeatSnapshot:
    """The seat's view (the table's faults are in ``view.table_alarms``), and the simulated
    controller of a demo table whose seats know none."""

    view: SeatView
    title: str = ""                                    # a configured name for the table
    controller: ControllerState = ControllerState()
    controls: tuple[str, ...] = ()                     # a demo table's dealer controls now


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
    kind: str           # jackpot | win | envy | fault
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
    controls: tuple[tuple[str, str], ...] = ()      # (control, label): a demo's dealer buttons

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
        out += [label for _, label in self.controls]
        return [t for t in out if t]
