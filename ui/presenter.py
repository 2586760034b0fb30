"""The seat display's presenter: a seat snapshot in, the screen's texts and tones out.

Plain Python, no Kivy: tested without a window. It decides how things are *said* (words,
order, colour tone), never what the game's outcome is: every total, result, refusal and
payout comes from the engine through the seat unit.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Callable, Iterable

from firmware.engine.money import parse_amount
from firmware.runtime.phases import SeatPhase
from firmware.runtime.view import ResultView, SeatView, SpotIssue, SpotView

from .i18n import DEFAULT_LANGUAGE, LANGUAGES, has, tr
from .model import Banner, CardFace, Condition, HandLine, JackpotMoment, ResultLine, SeatScreen, SeatSnapshot, SpotLine

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


def not_taken(v: SeatView) -> SpotIssue | None:
    """The seat's word that bets were closed without this box (its reason: lock_timeout |
    closed_by_dealer), or None."""
    return next((i for sp in v.spots for i in sp.issues if i.code == "bets_not_taken"), None)


def phase_key(s: SeatSnapshot) -> str:
    v = s.view
    if v.phase in (SeatPhase.PLAY, SeatPhase.OVER) and not v.hands and not_taken(v) is not None:
        return "phase.not_in_round"       # the table plays on; this box is not in it
    if v.phase == SeatPhase.PLAY:
        if any(h.in_play for h in v.hands) or v.turn == "mine":
            return "phase.your_hand"
        return PLAY_TURNS.get(v.turn or "dealing", "phase.dealing")
    return f"phase.{v.phase}" if v.phase in (SeatPhase.IDLE, SeatPhase.OPEN, SeatPhase.CLOSING, SeatPhase.OVER, SeatPhase.VOID) else "phase.idle"


def _chips_note(lang: str, issue: SpotIssue, amount: str) -> str:
    kind = "unknown" if issue.code == "unknown_chip" else "barred"
    chips = tr(lang, f"chips.{kind}" if issue.count <= 1 else f"chips.{kind}_n", n=issue.count)
    if amount:
        return tr(lang, "status.chips_not_counted_part", chips=chips, amount=amount)
    return tr(lang, "status.chips_not_counted", chips=chips)


#: Spot issue codes -> (text key, tone). Texts take {hi}, {lo}, {bet}, {why}.
ISSUE_TEXTS = {
    "over_maximum": ("status.over_maximum", "bad"),
    "under_minimum": ("status.under_minimum", "bad"),
    "pro_rata": ("status.pro_rata", "warn"),
    "played_under_minimum": ("status.played_under_minimum", "warn"),
    "no_initial_bet": ("status.no_initial_bet", "warn"),
    "requires": ("status.requires", "warn"),
    "bets_closed": ("status.bets_closed", "bad"),
    "bets_not_taken": ("status.bets_not_taken", "bad"),
    "above_initial_bet": ("status.above_initial_bet", "bad"),
    "progressive_amount": ("status.progressive_amount", "bad"),
}


def issue_text(lang: str, issue: SpotIssue, v: SeatView, spot: str) -> tuple[str, str]:
    code = issue.code
    if code == "progressive_unavailable":
        key = ("status.progressive_unavailable" if issue.reason in (None, "controller_link_down")
               else "status.progressive_off")
        return tr(lang, key), "bad"
    if code == "refused":
        if issue.reason and issue.reason in ISSUE_TEXTS:
            why = tr(lang, f"why.{issue.reason}") if has(f"why.{issue.reason}") else ""
            return (tr(lang, "status.refused_why", why=why) if why else tr(lang, "status.refused")), "bad"
        return tr(lang, "status.refused"), "bad"
    key, tone = ISSUE_TEXTS.get(code, ("status.refused", "bad"))
    lo, hi = v.limit(spot) or (None, None)
    limit = issue.limit
    return tr(lang, key, hi=money(limit or hi), lo=money(limit or lo),
              bet=spot_label(lang, issue.requires or "")), tone


def _spot(lang: str, s: SeatSnapshot, spot: SpotView) -> SpotLine:
    v = s.view
    label = spot_label(lang, spot.name)
    amount = "" if spot.amount in ("0", "") else money(spot.amount)
    issues = list(spot.issues)
    if spot.name == "progressive" and s.controller.link == "down" and not any(
            i.code == "progressive_unavailable" for i in issues):
        issues.insert(0, SpotIssue("progressive_unavailable", reason="controller_link_down"))
    notes: list[str] = []
    tone = ""
    for issue in issues:
        if issue.code in ("unknown_chip", "barred_chip"):
            notes.append(_chips_note(lang, issue, amount))
            tone = tone or "bad"
        else:
            text, t = issue_text(lang, issue, v, spot.name)
            notes.append(text)
            tone = tone or t
        if len(notes) == 1:             # the first, most pressing: a spot has room for one
            break
    chips = chip_stack(spot)
    if notes:
        return SpotLine(spot.name, label, amount, " · ".join(notes), tone, chips)
    if spot.status == "locked":
        return SpotLine(spot.name, label, amount, tr(lang, "status.locked"), "ok", chips)
    if amount:
        return SpotLine(spot.name, label, amount, tr(lang, "status.counted"), "ok", chips)
    return SpotLine(spot.name, label, "", "", "muted", chips)


def chip_stack(spot: SpotView) -> tuple[str, ...]:
    """The chips to draw on a spot, bottom first: the valid ones biggest first (as a
    dealer stacks them), then any refused chip as "?" on top."""
    valid = [c.denomination for c in spot.chips if c.status == "valid" and c.denomination]
    valid.sort(key=lambda d: -parse_amount(d))
    return (*valid, *("?" for c in spot.chips if c.status != "valid"))


def result_text(lang: str, r: ResultView) -> str:
    net = parse_amount(r.net)
    signed = money(net, signed=True)
    if r.bet == "progressive" and r.category:
        return f"{spot_label(lang, r.bet)}: {category_label(lang, r.category)}  {signed}"
    if r.category and r.odds:
        return f"{category_label(lang, r.category)} {r.odds}  {signed}"
    if r.odds:
        return f"{spot_label(lang, r.bet)} {r.odds}  {signed}"
    if net == 0 and r.bet not in ("main",):
        return f"{spot_label(lang, r.bet)}  {tr(lang, 'result.returned')}"
    return f"{spot_label(lang, r.bet)}  {signed}"


def _results(lang: str, s: SeatSnapshot) -> tuple[tuple[ResultLine, ...], str, str]:
    v = s.view
    if v.phase not in (SeatPhase.OVER, SeatPhase.VOID) or not v.pay_lines:
        return (), "", "muted"
    lines: list[ResultLine] = []
    total = Fraction(0)
    for r in v.pay_lines:
        net = parse_amount(r.net)
        total += net
        tone = "ok" if net > 0 else "bad" if net < 0 else "muted"
        lines.append(ResultLine(result_text(lang, r), tone))
    net_tone = "ok" if total > 0 else "bad" if total < 0 else "muted"
    return tuple(lines), tr(lang, "net", net=money(total, signed=True)), net_tone


def result_on_spot(lang: str, r: ResultView) -> tuple[str, str, str]:
    """A pay line on its spot: (signed net, what paid it, tone)."""
    net = parse_amount(r.net)
    tone = "ok" if net > 0 else "bad" if net < 0 else "muted"
    if r.category and r.odds:
        what = f"{category_label(lang, r.category)} {r.odds}"
    elif r.bet == "progressive" and r.category:
        what = category_label(lang, r.category)
    elif r.odds:
        what = r.odds
    else:
        what = tr(lang, "result.win" if net > 0 else "result.lose" if net < 0 else "result.push")
    return money(net, signed=True) if net else "0", what, tone


def _spots_with_results(lang: str, s: SeatSnapshot, spots: list[SpotLine]) -> tuple[SpotLine, ...]:
    """Each settled bet's result on the spot it belongs to; a bet with no spot shown
    (an insurance taken and cleared) gets a row of its own."""
    v = s.view
    if v.phase not in (SeatPhase.OVER, SeatPhase.VOID) or not v.pay_lines:
        return tuple(spots)
    out = list(spots)
    for r in v.pay_lines:
        net, what, tone = result_on_spot(lang, r)
        i = next((n for n, sp in enumerate(out) if sp.spot == r.bet), None)
        if i is None:
            out.append(SpotLine(r.bet, spot_label(lang, r.bet), "", "", "muted", (), net, what, tone))
        else:
            out[i] = replace(out[i], result=net, result_note=what, result_tone=tone)
    return tuple(out)


#: Conditions under which the seat takes no bets: said over the spots, in place of the phase.
BLOCKING = ("recovering", "no_dealer", "broker_down", "not_verified", "reader_down", "shoe_down",
            "console_down", "behind_confirmed")


def conditions(lang: str, s: SeatSnapshot) -> tuple[Condition, ...]:
    """The unit conditions in force (``view.conditions``; a demo's simulated controller
    link down too), in the view's order, each with its title and sentence."""
    codes = list(s.view.conditions)
    if s.controller.link == "down" and _has_progressive(s) and "jackpot_link_down" not in codes:
        codes.append("jackpot_link_down")
    return tuple(Condition(c, tr(lang, f"cond.{c}"), tr(lang, f"cond.{c}.text"), c in BLOCKING)
                 for c in codes if has(f"cond.{c}"))


def jackpot_moment(lang: str, s: SeatSnapshot) -> JackpotMoment | None:
    """A progressive hit at this seat as the full-screen moment: the gross award, and
    once settled the progressive bet and the net the pay line shows."""
    p = s.view.progressive
    if p is None:
        return None
    award = money(p.award) if p.award else ""
    settled = s.view.phase == SeatPhase.OVER and not p.pending and bool(award)
    net = ""
    line = next((r for r in s.view.pay_lines if r.bet == "progressive"), None)
    if settled and line is not None:
        gross, won = parse_amount(p.award), parse_amount(line.net)
        net = tr(lang, "jackpot.net", award=award, bet=money(gross - won), net=money(won, signed=True))
    return JackpotMoment(tr(lang, "jackpot.moment"), category_label(lang, p.hand),
                         tr(lang, "jackpot.award", amount=award) if award else "",
                         tr(lang, "jackpot.paid", amount=award) if settled else tr(lang, "jackpot.pending"),
                         "paid" if settled else "pending", net)


def game_title(lang: str, s: SeatSnapshot) -> str:
    """A configured table name as given; a profile's title in the player's language."""
    if s.title:
        return s.title
    key = f"title.{s.view.profile}"
    return tr(lang, key) if s.view.profile and has(key) else s.view.title


def _has_progressive(s: SeatSnapshot) -> bool:
    return any(sp.name == "progressive" for sp in s.view.spots)


def _meter(lang: str, s: SeatSnapshot) -> tuple[str, str]:
    c = s.controller
    if not _has_progressive(s):
        return "", "muted"      # no progressive spot at this seat: nothing to show or miss
    if c.link is None:
        return tr(lang, "meter.none"), "muted"
    if c.link == "down":
        return tr(lang, "meter.link_down"), "bad"
    if c.pending:
        return tr(lang, "meter.pending"), "warn"
    if c.meter is None or c.meter == "":
        return tr(lang, "meter.none"), "muted"
    return tr(lang, "meter", amount=money(c.meter)), "gold"


#: Alarm codes -> what the player is told (``fault.*`` in ``ui.i18n``).
FAULT_KINDS = {
    "shoe_jam": "shoe", "misread": "shoe", "card_gap": "shoe", "shuffle_in_round": "shoe",
    "card_while_betting": "shoe", "interruption_continue": "shoe", "shoe_misread": "shoe",
    "shoe_card_gap": "shoe", "shoe_disconnected": "shoe",
    "shoe_door_opened": "tamper", "pinching": "tamper", "past_posting": "tamper",
    "addition_mismatch": "tamper", "tamper": "tamper", "shoe_replayed_shuffle": "tamper",
    "interruption_void": "void", "integrity": "integrity",
    "link_lost": "link", "broker_link": "link", "dealer_link": "link",
    "controller_link": "controller", "controller_link_down": "controller",
    "bets_not_taken": "not_taken",
}
#: Alarms shown on the spot itself, or not for the player at all.
NOT_BANNERS = {"unknown_chip", "barred_chip", "seats_missing", "shoe_cut_card", "shoe_shuffled",
               "shoe_jam_cleared", "shoe_door_closed", "pit_acknowledged"}


def faults(s: SeatSnapshot) -> tuple[str, ...]:
    """The kinds of fault to tell the player about, in order, each once."""
    kinds: list[str] = []
    if s.view.phase == SeatPhase.VOID:
        kinds.append("void")
    for a in (*s.view.table_alarms, *s.view.round_alarms):
        if a.code in NOT_BANNERS:
            continue
        kind = FAULT_KINDS.get(a.code, "other")
        if kind == "controller" and not _has_progressive(s):
            continue
        if kind not in kinds:
            kinds.append(kind)
    if "not_taken" not in kinds and not_taken(s.view) is not None:
        kinds.append("not_taken")
    if s.controller.link == "down" and "controller" not in kinds and _has_progressive(s):
        kinds.append("controller")
    return tuple(kinds)


def _banners(lang: str, s: SeatSnapshot) -> tuple[Banner, ...]:
    out: list[Banner] = []
    v = s.view
    p = v.progressive
    if p is not None:
        hand = category_label(lang, p.hand)
        if p.share:
            text = (tr(lang, "jackpot.award", amount=money(p.award)) if p.award
                    else tr(lang, "jackpot.pending"))
            out.append(Banner("jackpot", tr(lang, "jackpot", hand=hand), text))
        else:
            out.append(Banner("win", tr(lang, "progressive.hit", hand=hand),
                              tr(lang, "jackpot.award", amount=money(p.award)) if p.award else ""))
    for from_box, amount in v.envy:
        out.append(Banner("envy", spot_label(lang, "envy_bonus"),
                          tr(lang, "envy", amount=money(amount), seat=from_box)))
    shown = {c.code for c in conditions(lang, s)}
    for kind in faults(s):
        if kind == "controller" and "jackpot_link_down" in shown:
            continue                    # the condition strip says it
        if kind == "not_taken" and getattr(not_taken(v), "reason", None) == "closed_by_dealer":
            kind = "not_taken_by_dealer"
        out.append(Banner("fault", tr(lang, "alarm.title"), tr(lang, f"fault.{kind}")))
    return tuple(out)


def present(s: SeatSnapshot, lang: str = DEFAULT_LANGUAGE) -> SeatScreen:
    v = s.view
    key = phase_key(s)
    main = v.limit("main")
    limits = tr(lang, "limits", lo=money(main[0]), hi=money(main[1])) if main else ""
    spots = _spots_with_results(lang, s, [_spot(lang, s, sp) for sp in v.spots
                                          if not sp.name.startswith("insurance") or sp.amount not in ("0", "")
                                          or sp.issues])
    conds = conditions(lang, s)
    blocking = next((c for c in conds if c.blocking), None)
    if blocking is not None:
        key = "phase.condition"         # no bets taken: the phase says why, not "Place your bets"
    hands = []
    many = len(v.hands) > 1
    for i, h in enumerate(v.hands, 1):
        result = ""
        tone = "muted"
        if h.result:
            hand_net = parse_amount(h.net) if h.net is not None else Fraction(0)
            result = tr(lang, f"result.{h.result}") + (f"  {money(hand_net, signed=True)}" if h.net is not None else "")
            tone = "ok" if hand_net > 0 else "bad" if hand_net < 0 else "muted"
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
    if v.switched:
        switch_note = tr(lang, "switched")
    elif "switch" in v.decisions:
        switch_note = tr(lang, "switch_offer")
    decisions = ""
    if key == "phase.your_hand" and v.decisions:
        decisions = tr(lang, "decisions", actions=tr(lang, "list.sep").join(tr(lang, f"action.{d}") for d in v.decisions))
    results, net, net_tone = _results(lang, s)
    meter, meter_tone = _meter(lang, s)
    c = s.controller
    meter_amount = (money(c.meter) if _has_progressive(s) and c.link == "up" and not c.pending
                    and c.meter not in (None, "") else "")
    return SeatScreen(
        lang=lang, title=game_title(lang, s), limits=limits, seat=tr(lang, "seat", box=v.box),
        round=tr(lang, "round", n=v.round) if v.round else "",
        phase=blocking.title if blocking is not None and key == "phase.condition" else tr(lang, key), phase_key=key,
        spots=spots, hands=tuple(hands), dealer_label=tr(lang, "dealer"),
        dealer_cards=tuple(card_face(c) for c in v.dealer_cards), dealer_total=dealer_total,
        switch_note=switch_note, decisions=decisions, results=results, net=net, net_tone=net_tone,
        meter=meter, meter_tone=meter_tone, banners=_banners(lang, s),
        controls=tuple((c, control_label(lang, c)) for c in s.controls),
        conditions=conds, meter_title=tr(lang, "meter.title") if _has_progressive(s) else "",
        meter_amount=meter_amount, jackpot=jackpot_moment(lang, s))


def control_label(lang: str, control: str) -> str:
    """A dealer control's button text: the console's word, or the player's decision
    (``insurance_2``: insurance on the second hand of Blackjack Switch)."""
    if has(f"dealer.{control}"):
        return tr(lang, f"dealer.{control}", amount=money(DEMO_BET))
    action, _, hand = control.rpartition("_")
    if hand.isdigit() and has(f"action.{action}"):
        text = tr(lang, "control.on_hand", action=tr(lang, f"action.{action}"), n=int(hand))
    else:
        text = tr(lang, f"action.{control}")
    return text[:1].upper() + text[1:]


DEMO_BET = Fraction(20)


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
        if v.phase not in (SeatPhase.OVER, SeatPhase.VOID) or not v.round:
            return False
        if any(r.round == v.round for r in self.rounds):
            return False
        if not v.hands and not v.results and v.phase != SeatPhase.VOID:
            return False          # no bet at this box this round
        self.rounds.append(RoundRecall(
            v.round, v.phase == SeatPhase.VOID,
            tuple((h.cards, h.total, h.soft, h.status, h.result, h.net) for h in v.hands),
            v.dealer_cards, (v.dealer_total, v.dealer_soft, v.dealer_blackjack), v.results,
            tuple((r.bet, r.category) for r in v.pay_lines if r.bet != "main" and r.category)))
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
