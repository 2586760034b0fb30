"""The seat display's presenter: a seat snapshot in, the screen's texts and tones out.

Plain Python, no Kivy: tested without a window. It decides how things are *said* (words,
order, colour tone), never what the game's outcome is: every total, result, refusal and
payout comes from the engine through the seat unit.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Iterable

from firmware.engine.money import parse_amount

from .i18n import DEFAULT_LANGUAGE, LANGUAGES, tr
from .model import (Banner, CardFace, HandLine, ResultLine, SeatScreen, SeatSnapshot, SpotLine)

SUITS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
RECALL_ROUNDS = 10


# --- formatting -----------------------------------------------------------------------

def money(value: str | Fraction | int | None, signed: bool = False) -> str:
    """``1234.5`` -> ``1,234.50``; whole amounts without decimals; ``+``/``−`` when signed."""
    if value is None or value == "":
        return ""
    amount = value if isinstance(value, Fraction) else parse_amount(value)
    sign = ""
    if amount < 0:
        sign, amount = "−", -amount
    elif signed and amount > 0:
        sign = "+"
    whole = amount.numerator // amount.denominator
    text = f"{whole:,}"
    if amount.denominator != 1:
        cents = int(round((amount - whole) * 100))
        text += f".{cents:02d}"
    return sign + text


def odds(value: Fraction) -> str:
    """Odds to one as the pay table writes them: ``25:1``, ``3:2``."""
    value = Fraction(value)
    return f"{value.numerator}:{value.denominator}"


def card_face(text: str) -> CardFace:
    rank, suit = text[:-1], text[-1]
    return CardFace(("10" if rank == "T" else rank) + SUITS.get(suit, suit), suit in "HD")


def spot_label(lang: str, spot: str) -> str:
    key = f"spot.{spot}"
    text = tr(lang, key)
    return spot.replace("_", " ").title() if text == key else text


def category_label(lang: str, category: str) -> str:
    key = f"cat.{category}"
    text = tr(lang, key)
    return category.replace("_", " ").title() if text == key else text


def total_text(lang: str, cards: Iterable[str], total: int, soft: bool, status: str | None) -> str:
    cards = tuple(cards)
    if not cards:
        return ""
    if status == "blackjack":
        return tr(lang, "total.blackjack")
    if total > 21 or status == "bust":
        return tr(lang, "total.bust", total=total)
    if soft and total < 21:
        return tr(lang, "total.soft", total=total)
    return tr(lang, "total.hard", total=total)


# --- the screen -----------------------------------------------------------------------

PLAY_TURNS = {"mine": "phase.your_hand", "others": "phase.others", "dealer": "phase.dealer",
              "dealing": "phase.dealing"}


def phase_key(s: SeatSnapshot) -> str:
    v = s.view
    if v.phase == "play":
        if any(h.in_play for h in v.hands) or s.turn == "mine":
            return "phase.your_hand"
        return PLAY_TURNS.get(s.turn or "dealing", "phase.dealing")
    return f"phase.{v.phase}" if v.phase in ("idle", "open", "closing", "over", "void") else "phase.idle"


def _spot(lang: str, s: SeatSnapshot, spot) -> SpotLine:
    label = spot_label(lang, spot.name)
    amount = "" if spot.amount in ("0", "") else money(spot.amount)
    refused = [status for sp, _uid, status in s.chips if sp == spot.name]
    issue = next((i for i in s.issues if i.spot == spot.name), None)
    lo, hi = s.limits.get(spot.name, (None, None))
    if refused:
        key = "status.unknown_chip" if "unknown" in refused else "status.barred_chip"
        return SpotLine(spot.name, label, amount, tr(lang, key), "bad")
    if spot.name == "progressive" and s.controller.link == "down":
        return SpotLine(spot.name, label, amount, tr(lang, "status.progressive_unavailable"), "bad")
    if spot.name in s.late_spots:
        return SpotLine(spot.name, label, amount, tr(lang, "status.bets_closed"), "bad")
    if issue is not None:
        if issue.issue == "over_maximum":
            return SpotLine(spot.name, label, amount, tr(lang, "status.over_maximum", hi=money(hi)), "bad")
        if issue.issue == "under_minimum":
            return SpotLine(spot.name, label, amount, tr(lang, "status.under_minimum", lo=money(lo)), "bad")
        if issue.issue == "pro_rata":
            return SpotLine(spot.name, label, amount, tr(lang, "status.pro_rata", hi=money(hi)), "warn")
        if issue.issue == "no_initial_bet":
            return SpotLine(spot.name, label, amount, tr(lang, "status.no_initial_bet"), "warn")
        if issue.issue == "requires":
            return SpotLine(spot.name, label, amount,
                            tr(lang, "status.requires", bet=spot_label(lang, issue.requires or "")), "warn")
        return SpotLine(spot.name, label, amount,
                        tr(lang, "status.refused") + (f": {issue.detail}" if issue.detail else ""), "bad")
    if spot.status == "locked":
        return SpotLine(spot.name, label, amount, tr(lang, "status.locked"), "ok")
    if amount:
        return SpotLine(spot.name, label, amount, tr(lang, "status.counted"), "ok")
    return SpotLine(spot.name, label, "", "", "muted")


def _results(lang: str, s: SeatSnapshot) -> tuple[tuple[ResultLine, ...], str, str]:
    v = s.view
    if v.phase not in ("over", "void") or not v.results:
        return (), "", "muted"
    lines: list[ResultLine] = []
    total = Fraction(0)
    for bet, net_text in v.results:
        net = parse_amount(net_text)
        total += net
        tone = "ok" if net > 0 else "bad" if net < 0 else "muted"
        signed = money(net, signed=True)
        if bet in s.side_odds:
            category = s.side_results.get(bet)
            pays = s.side_odds[bet].get(category) if category else None
            if category and pays is not None:
                text = f"{category_label(lang, category)} {odds(pays)}  {signed}"
            elif net == 0:
                text = f"{spot_label(lang, bet)}  {tr(lang, 'result.returned')}"
            else:
                text = f"{spot_label(lang, bet)}  {signed}"
        elif bet == "insurance" and net > 0 and s.insurance_odds is not None:
            text = f"{spot_label(lang, bet)} {odds(s.insurance_odds)}  {signed}"
        elif bet == "progressive" and s.progressive and s.progressive[0]:
            text = f"{spot_label(lang, bet)}: {category_label(lang, s.progressive[0])}  {signed}"
        else:
            text = f"{spot_label(lang, bet)}  {signed}"
        lines.append(ResultLine(text, tone))
    net_tone = "ok" if total > 0 else "bad" if total < 0 else "muted"
    return tuple(lines), tr(lang, "net", net=money(total, signed=True)), net_tone


def _meter(lang: str, s: SeatSnapshot) -> tuple[str, str]:
    c = s.controller
    has_progressive = any(sp.name == "progressive" for sp in s.view.spots)
    if c.link is None:
        return (tr(lang, "meter.none"), "muted") if has_progressive else ("", "muted")
    if c.link == "down":
        return tr(lang, "meter.link_down"), "bad"
    if c.pending:
        return tr(lang, "meter.pending"), "warn"
    if c.meter is None:
        return tr(lang, "meter.none"), "muted"
    return tr(lang, "meter", amount=money(c.meter)), "gold"


FAULT_KEYS = {"shoe": "fault.shoe", "link": "fault.link", "tamper": "fault.tamper",
              "void": "fault.void", "integrity": "fault.integrity", "chip": "fault.chip",
              "other": "fault.other"}


def _banners(lang: str, s: SeatSnapshot) -> tuple[Banner, ...]:
    out: list[Banner] = []
    if s.progressive and s.progressive[0] and len(s.progressive) > 2 and s.progressive[2]:
        category, award = s.progressive[0], s.progressive[1]
        text = (tr(lang, "jackpot.award", amount=money(award)) if award
                else tr(lang, "jackpot.pending"))
        out.append(Banner("jackpot", tr(lang, "jackpot", hand=category_label(lang, category)), text))
    for from_box, amount in s.envy:
        out.append(Banner("envy", spot_label(lang, "envy_bonus"),
                          tr(lang, "envy", amount=money(amount), seat=from_box)))
    kinds = set()
    if s.view.phase == "void":
        out.append(Banner("fault", tr(lang, "alarm.title"), tr(lang, "fault.void")))
        kinds.add("void")
    for f in s.faults:
        if f.kind in kinds and f.kind in ("void", "integrity"):
            continue
        kinds.add(f.kind)
        out.append(Banner("fault", tr(lang, "alarm.title"),
                          tr(lang, FAULT_KEYS.get(f.kind, "fault.other"), detail=f.detail)))
    return tuple(out)


def present(s: SeatSnapshot, lang: str = DEFAULT_LANGUAGE) -> SeatScreen:
    v = s.view
    key = phase_key(s)
    main = s.limits.get("main")
    limits = tr(lang, "limits", lo=money(main[0]), hi=money(main[1])) if main else ""
    spots = tuple(_spot(lang, s, sp) for sp in v.spots
                  if sp.name != "insurance" or sp.amount not in ("0", "") or sp.refused_chips)
    hands = []
    many = len(v.hands) > 1
    for i, h in enumerate(v.hands, 1):
        result = ""
        tone = "muted"
        if h.result:
            net = parse_amount(h.net) if h.net is not None else Fraction(0)
            result = tr(lang, f"result.{h.result}") + (f"  {money(net, signed=True)}" if h.net is not None else "")
            tone = "ok" if net > 0 else "bad" if net < 0 else "muted"
        elif h.in_play:
            tone = "play"
        hands.append(HandLine(tr(lang, "hand", n=i) if many else tr(lang, "your_cards"),
                              tuple(card_face(c) for c in h.cards),
                              total_text(lang, h.cards, h.total, h.soft, h.status),
                              h.in_play, result, tone))
    dealer_total = ""
    if v.dealer_cards and v.dealer_total is not None:
        dealer_total = total_text(lang, v.dealer_cards, v.dealer_total, v.dealer_soft,
                                  "blackjack" if v.dealer_blackjack else None)
    switch_note = ""
    if s.switched:
        switch_note = tr(lang, "switched")
    elif s.switch_legal:
        switch_note = tr(lang, "switch_offer")
    decisions = ""
    if key == "phase.your_hand" and v.decisions:
        decisions = tr(lang, "decisions", actions=", ".join(tr(lang, f"action.{d}") for d in v.decisions))
    results, net, net_tone = _results(lang, s)
    meter, meter_tone = _meter(lang, s)
    return SeatScreen(
        lang=lang, title=s.title, limits=limits, seat=tr(lang, "seat", box=v.box),
        round=tr(lang, "round", n=v.round) if v.round else "", phase=tr(lang, key), phase_key=key,
        spots=spots, hands=tuple(hands), dealer_label=tr(lang, "dealer") if v.dealer_cards else "",
        dealer_cards=tuple(card_face(c) for c in v.dealer_cards), dealer_total=dealer_total,
        switch_note=switch_note, decisions=decisions, results=results, net=net, net_tone=net_tone,
        meter=meter, meter_tone=meter_tone, banners=_banners(lang, s), messages=tuple(v.messages[-2:]))


# --- the last rounds (recall) ---------------------------------------------------------

@dataclass(frozen=True)
class RoundRecall:
    round: int
    void: bool
    hands: tuple[tuple[tuple[str, ...], int, bool, str, str | None, str | None], ...]
    dealer: tuple[str, ...]
    dealer_total: tuple[int | None, bool, bool]      # total, soft, Blackjack — as the engine said
    results: tuple[tuple[str, str], ...]
    side_results: tuple[tuple[str, str | None], ...]


class RecallBook:
    """The last rounds of this box, as the seat showed them when they were settled."""

    def __init__(self, size: int = RECALL_ROUNDS) -> None:
        self.rounds: deque[RoundRecall] = deque(maxlen=size)

    def note(self, s: SeatSnapshot) -> bool:
        v = s.view
        if v.phase not in ("over", "void") or not v.round:
            return False
        if any(r.round == v.round for r in self.rounds):
            return False
        if not v.hands and not v.results and v.phase != "void":
            return False          # no bet at this box this round
        self.rounds.append(RoundRecall(
            v.round, v.phase == "void",
            tuple((h.cards, h.total, h.soft, h.status, h.result, h.net) for h in v.hands),
            v.dealer_cards, (v.dealer_total, v.dealer_soft, v.dealer_blackjack), v.results,
            tuple(sorted(s.side_results.items()))))
        return True

    def lines(self, lang: str) -> list[tuple[str, str, str, str]]:
        """Newest first: (round, your cards, dealer's cards, net and results)."""
        out = []
        for r in reversed(self.rounds):
            cards = "  ".join(" ".join(card_face(c).text for c in h[0])
                              + f" ({total_text(lang, h[0], h[1], h[2], h[3])})" for h in r.hands)
            dealer = " ".join(card_face(c).text for c in r.dealer)
            total, soft, blackjack = r.dealer_total
            if r.dealer and total is not None:
                dealer += f" ({total_text(lang, r.dealer, total, soft, 'blackjack' if blackjack else None)})"
            net = sum((parse_amount(n) for _, n in r.results), Fraction(0))
            sides = [category_label(lang, c) for _, c in r.side_results if c]
            result = (tr(lang, "history.void") if r.void else money(net, signed=True) or "0")
            if sides:
                result += "  " + ", ".join(sides)
            out.append((tr(lang, "history.round", n=r.round), cards, dealer, result))
        return out


# --- the presenter --------------------------------------------------------------------

Listener = Callable[[SeatScreen], None]


class SeatPresenter:
    """Holds the last snapshot, the language and the recall; tells listeners when the
    screen changes (and only then: an unchanged screen is not redrawn)."""

    def __init__(self, lang: str = DEFAULT_LANGUAGE, recall: int = RECALL_ROUNDS) -> None:
        if lang not in LANGUAGES:
            raise ValueError(f"unknown language {lang!r} (known: {', '.join(LANGUAGES)})")
        self.lang = lang
        self.snapshot: SeatSnapshot | None = None
        self.screen: SeatScreen | None = None
        self.recall = RecallBook(recall)
        self._listeners: list[Listener] = []

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def update(self, snapshot: SeatSnapshot) -> SeatScreen | None:
        """A new snapshot; returns the new screen, or None when nothing visible changed."""
        self.snapshot = snapshot
        self.recall.note(snapshot)
        return self._render()

    def set_language(self, lang: str) -> SeatScreen | None:
        if lang not in LANGUAGES:
            raise ValueError(f"unknown language {lang!r}")
        self.lang = lang
        return self._render()

    def _render(self) -> SeatScreen | None:
        if self.snapshot is None:
            return None
        screen = present(self.snapshot, self.lang)
        if screen == self.screen:
            return None
        self.screen = screen
        for listener in self._listeners:
            listener(screen)
        return screen
