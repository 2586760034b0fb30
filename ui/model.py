"""Plain values the seat display is made of. No Kivy here.

``SeatSnapshot`` is what the UI reads from the seat unit (its view, the table's faults
included, see ``ui/source.py``); ``SeatScreen`` is what the widgets show,
every text already in the player's language. Both are frozen, so a snapshot taken in the
table's thread can be handed to the UI thread as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from firmware.runtime.view import SeatView
from firmware.runtime.wire import NEVER_HEARD, ControllerStatus

# --- what the UI reads ----------------------------------------------------------------

@dataclass(frozen=True)
class SeatSnapshot:
    """The seat's view (the table's faults are in ``view.table_alarms``), and the simulated
    controller of a demo table whose seats know none."""

    view: SeatView
    title: str = ""                                    # a configured name for the table
    controller: ControllerStatus = NEVER_HEARD       # the seat's, or the demo's simulated one
    controls: tuple[str, ...] = ()                     # a demo table's dealer controls now


# --- what the widgets show ------------------------------------------------------------

@dataclass(frozen=True)
class SpotLine:
    spot: str
    label: str
    amount: str
    note: str
    tone: str           # muted | ok | warn | bad
    chips: tuple[str, ...] = ()     # the stack, bottom first: denominations ("25"), "?" refused
    result: str = ""                # the spot's settled net ("+250"), once the round is over
    result_note: str = ""           # what paid it ("Perfect Pair 25:1", "Win", "Lose")
    result_tone: str = "muted"


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
class Condition:
    """A unit condition in force (``SeatView.conditions`` code) as the player reads it.
    ``blocking``: the seat takes no bets while it lasts (the screen says so over the spots)."""

    code: str
    title: str
    text: str
    blocking: bool


@dataclass(frozen=True)
class JackpotMoment:
    """A progressive hit at this seat: the full-screen moment. ``state`` pending (the
    controller holds it / an attendant pays it) | paid (the award is fixed, the round settled)."""

    title: str          # "JACKPOT"
    category: str       # "Suited Four of a Kind"
    award: str          # "Award 25,000" (gross)
    status: str         # "Award pending: an attendant is on the way" | "Paid: 25,000"
    state: str
    net: str = ""       # "Award 25,000 · your progressive bet 5 · net +24,995"


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
    conditions: tuple[Condition, ...] = ()           # unit conditions in force, worst first
    meter_title: str = ""                            # "PROGRESSIVE JACKPOT" over the meter
    meter_amount: str = ""                           # the meter's amount ("25,000.50"), for counting up
    jackpot: JackpotMoment | None = None

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
        for s in self.spots:
            out += [s.result, s.result_note]
        for c in self.conditions:
            out += [c.title, c.text]
        out += [self.meter_title]
        if self.jackpot is not None:
            j = self.jackpot
            out += [j.title, j.category, j.award, j.status, j.net]
        return [t for t in out if t]
