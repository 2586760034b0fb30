"""Builds a seat's :class:`~firmware.runtime.view.SeatView` from a frozen snapshot of the
seat unit's state (:class:`SeatFacts`, taken after every step: cheap, references to
immutable values and small copies). The view itself is built only when something reads it
(the screen, the reporter, a test), at most once per snapshot (issue #18: it was built after
every step, ~240 times a round at a 7-box table, read by nobody most of them). Kept apart
from the seat unit so the screen's needs and the seat's rules change separately; it reads
the snapshot and asks the engine, and decides no rule itself.

Every fact is a code, an amount string or a card: the screen words it in the player's
language. Why a wager would not be counted is the engine's own answer ("no more bets" for
this box, asked of a fresh round exactly as the dealer asks it), never guessed here.

``SeatFacts.alarm_mark`` (kept by the seat, step by step) is where this round's alarms start
in ``seat.alarms``, used only for alarm entries that do not carry their ``round``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Iterable, Mapping

from firmware.chips import ChipRegistry, ChipStatus
from firmware.engine.errors import IllegalWager, RuleError
from firmware.engine.events import Action, BetsClosed
from firmware.engine.hand import hand_total
from firmware.engine.money import display_text
from firmware.engine.outcomes import BetReturned, WagerFlagged
from firmware.engine.profile import Profile
from firmware.engine.round import Phase, Round
from firmware.engine.settlement import BoxSettlement, box_settlement

from .phases import SeatPhase
from .view import (
    AlarmView,
    ChipView,
    HandView,
    ProgressiveView,
    ResultView,
    SeatView,
    SpotIssue,
    SpotView,
)
from .wire import ControllerStatus

#: Views built since the firmware started (bench/bench_runtime.py prints them per round).
builds = 0
#: Spots that take only additions (insurance), never an initial wager.
ADDITION_PREFIX = "insurance"
#: Alarm parameters worth carrying to the screen (plain scalars only).
_SKIP_PARAMS = {"unit", "alarm", "detail", "round"}


def _odds(value: Fraction) -> str:
    value = Fraction(value)
    return f"{value.numerator}:{value.denominator}"


def _amount(value: Fraction | str | None) -> str | None:
    """An amount for the view (display text); a meter already text stays as it is."""
    return value if value is None or isinstance(value, str) else display_text(Fraction(value))


def _worth(seat: SeatFacts, uids: Iterable[str]) -> Fraction:
    return worth(seat.registry, uids)


def worth(registry: ChipRegistry, uids: Iterable[str]) -> Fraction:
    """What the valid chips among ``uids`` are worth (unknown and barred chips: nothing)."""
    # summed as Decimals, made a Fraction once (a Fraction a chip was most of a seat's step
    # after its report): exact, denominations have two decimals and are at most 10^6
    total = Decimal(0)
    for uid in uids:
        chip = registry.get(uid)
        if chip is not None and chip.status is ChipStatus.VALID:
            total += chip.denomination
    return Fraction(total)


@dataclass(frozen=True, eq=False)
class SeatFacts:
    """What a seat's screen is built from, frozen after a step (:meth:`SeatUnit.facts`).
    Its values are immutable (the engine's round, frozensets, tuples) or copies; the alarm
    entries and the controller status are never changed once made, so holding them is safe
    from the screen's thread."""

    box: int
    round_no: int
    phase: str
    round: Round | None
    profile: Profile | None
    spots: tuple[str, ...]
    present: Mapping[str, frozenset[str]]
    registry: ChipRegistry
    wagers: Mapping[str, Fraction]               # what the seat offers now (SeatUnit.wagers())
    locked: Mapping[str, Fraction]
    refused_round: str | None
    unwagered: Mapping[str, str]
    bets_not_taken: str | None
    progressive_refusal: str | None
    controller: ControllerStatus
    messages: tuple[str, ...]                    # the newest 8
    alarms: tuple[dict[str, Any], ...]           # the kept entries, oldest first
    alarm_total: int                             # running count (len(seat.alarms))
    alarm_mark: int                              # where this round's alarms start (untagged ones)
    table_faults: Mapping[str, Mapping[str, Any]]
    table_alarms: tuple[dict[str, Any], ...]
    lamps: tuple[tuple[str, str], ...]
    conditions: tuple[str, ...]


# --- the wager preview ------------------------------------------------------------------

def wager_issues(state: Round, box: int, bets: Mapping[str, Fraction]) -> dict[str, list[SpotIssue]]:
    """What "no more bets" would make of ``bets`` for ``box`` now (the dealer asks the
    same question of the seat's offer): issues per spot."""
    bets = {k: v for k, v in bets.items() if v}
    if not bets:
        return {}
    fresh = Round.new(state.profile, decks=state.decks, limits=state.limits, meter=state.meter,
                      shoe=state.shoe)
    try:
        _, outcomes = fresh.apply(BetsClosed.of({box: bets}))
    except IllegalWager as exc:
        return {exc.bet or "main": [_refusal(state, exc)]}
    except RuleError as exc:
        return {"main": [SpotIssue("refused", getattr(exc, "clause", "") or "")]}
    return _from_outcomes(state, outcomes)


def _refusal(state: Round, exc: IllegalWager) -> SpotIssue:
    code = exc.issue or "refused"
    limit = None
    if exc.bet and code in ("over_maximum", "under_minimum"):
        lo, hi = state.limits.get(exc.bet, (None, None))
        limit = _amount(hi if code == "over_maximum" else lo)
    return SpotIssue(code, getattr(exc, "clause", "") or "", limit)


def _from_outcomes(state: Round, outcomes: Iterable[Any]) -> dict[str, list[SpotIssue]]:
    out: dict[str, list[SpotIssue]] = {}
    for o in outcomes:
        if isinstance(o, WagerFlagged):
            lo, hi = state.limits.get(o.bet, (None, None))
            if o.issue == "over_maximum":
                issue = SpotIssue("pro_rata", o.clause, _amount(o.counted))
            elif o.issue == "under_minimum":
                issue = SpotIssue("played_under_minimum", o.clause, _amount(lo))
            else:
                issue = SpotIssue(o.issue, o.clause)
            out.setdefault(o.bet, []).append(issue)
        elif isinstance(o, BetReturned):
            if o.reason.startswith("requires_"):
                issue = SpotIssue("requires", o.clause, requires=o.reason[len("requires_"):])
            else:
                issue = SpotIssue(o.reason, o.clause)
            out.setdefault(o.bet, []).append(issue)
    return out


def _box(state: Round | None, number: int):
    if state is None or state.phase == Phase.BETTING:
        return None
    return next((b for b in state.boxes if b.number == number), None)


# --- pieces -----------------------------------------------------------------------------

def _chips(seat: SeatFacts, uids: Iterable[str]) -> tuple[ChipView, ...]:
    out = []
    for uid in sorted(uids):
        chip = seat.registry.get(uid)
        if chip is None:
            out.append(ChipView(uid, "unknown"))
        else:
            out.append(ChipView(uid, str(chip.status), display_text(Fraction(chip.denomination))))
    return tuple(out)


def alarm_mark(mark: int, mark_round: int | None, round_no: int, phase: str, alarms: int) -> int:
    """Where this round's alarms start in the seat's alarm log, folded step by step (by the
    seat): a new round (``round_no`` not ``mark_round``) seen while bets are open or idle
    starts at the alarms recorded so far."""
    if mark_round != round_no and phase in (SeatPhase.OPEN, SeatPhase.IDLE):
        mark = alarms
    return min(mark, alarms)


def _round_alarms(seat: SeatFacts) -> tuple[tuple[AlarmView, ...], int]:
    """This round's alarms. An entry carries its ``round`` (the unit's round when raised;
    None before the first): picked exactly, across restarts. An entry without it (from an
    older journal) counts from ``alarm_mark``, where the seat saw this round begin."""
    mark = seat.alarm_mark
    current = seat.round_no or None
    picked = []
    n = seat.alarm_total                # running numbers (seat.alarms may keep only the newest)
    for entry in reversed(seat.alarms):
        n -= 1
        if "round" in entry:
            r = entry["round"]
            if r == current:
                picked.append(entry)
            elif isinstance(r, int) and current is not None and r < current:
                break                   # entries are in order: the rest are older rounds
        elif n >= mark:
            picked.append(entry)
        else:
            break
    return tuple(_alarm_view(entry) for entry in reversed(picked)), mark


def _alarm_view(entry: dict[str, Any], lasting: bool = False) -> AlarmView:
    params = tuple(sorted((k, str(v)) for k, v in entry.items()
                          if k not in _SKIP_PARAMS and isinstance(v, (str, int, float))))
    return AlarmView(str(entry.get("alarm", "")), params, lasting)


def _table_alarms(seat: SeatFacts) -> tuple[AlarmView, ...]:
    """The table's faults in force at this seat (the dealer's alarms, journalled by the
    seat): every lasting condition, then the alarms of the seat's round. An alarm that
    names a box (``box``) other than this seat's is about that box, not shown here."""
    out = [_alarm_view(dict(entry), lasting=True) for _, entry in sorted(seat.table_faults.items())]
    current = seat.round_no or None
    for entry in seat.table_alarms:
        box = entry.get("box")
        if current is None or entry.get("round") != current:
            continue
        if isinstance(box, int) and not isinstance(box, bool) and box != seat.box:
            continue
        out.append(_alarm_view(entry))
    return tuple(out)


def _spot_issues(seat: SeatFacts, state: Round | None, alarms: tuple[AlarmView, ...],
                 refusal: str | None) -> dict[str, list[SpotIssue]]:
    profile = seat.profile
    issues: dict[str, list[SpotIssue]] = {}
    if state is None or profile is None:
        return issues
    if seat.phase == SeatPhase.OPEN:
        issues = wager_issues(state, seat.box, seat.wagers)
    elif seat.phase == SeatPhase.CLOSING:
        issues = wager_issues(state, seat.box, seat.locked)
    elif seat.phase in (SeatPhase.PLAY, SeatPhase.OVER, SeatPhase.VOID):
        box = _box(state, seat.box)
        if seat.refused_round is not None:
            # the dealer refused this box's wagers: the engine's reason on its spot
            why = wager_issues(state, seat.box, seat.locked)
            reason = next((i[0].code for i in why.values() if i), None)
            issues = {s: [SpotIssue("refused", reason=reason)] for s, a in seat.locked.items() if a}
            for spot, found in why.items():
                issues[spot] = found
        elif box is not None:
            issues = _from_outcomes(state, [*box.flags, *box.returned])
    unwagered = dict(seat.unwagered)
    if refusal is not None and "progressive" in seat.present:
        unwagered.setdefault("progressive", refusal)
    for spot, reason in unwagered.items():
        # chips the seat does not offer as a wager this round (progressive while the
        # controller link is down), and the seat's code for why
        if reason == "bets_not_taken":
            # the dealer closed bets without this seat's lock (seat.bets_not_taken says why)
            issues.setdefault(spot, []).insert(0, SpotIssue("bets_not_taken", reason=seat.bets_not_taken))
            continue
        code = "progressive_unavailable" if spot == "progressive" else "not_wagered"
        issues.setdefault(spot, []).insert(0, SpotIssue(code, profile.clause("progressive"), reason=str(reason)))
    closed = profile.clause("bets_closed")
    for a in alarms:
        posted = a.param("spot")
        if a.code == "past_posting" and posted:
            if not any(i.code == "bets_closed" for i in issues.get(posted, [])):
                issues.setdefault(posted, []).insert(0, SpotIssue("bets_closed", closed))
        elif a.code == "bets_not_taken":
            for s, amount in (seat.locked or {}).items():
                if amount:
                    issues.setdefault(s, []).insert(0, SpotIssue("bets_not_taken", a.param("clause") or ""))
    return issues


def _pay_lines(seat: SeatFacts, settled: BoxSettlement) -> tuple[ResultView, ...]:
    profile = seat.profile
    assert profile is not None                  # a round is over: the seat knows its profile
    out = []
    for bet, net in sorted(settled.bets):
        category = odds = None
        if bet in profile.side_bets:
            category = settled.category(bet)
            pays = profile.side_bets[bet].pays.get(category) if category else None
            odds = _odds(pays) if pays is not None and net > 0 else None
        elif bet.startswith("insurance") and net > 0:
            odds = _odds(profile.rules.insurance_pays)
        elif bet == "progressive":
            category = settled.progressive.hand if settled.progressive is not None else None
        out.append(ResultView(bet, display_text(net), category, odds))
    return tuple(out)


#: Decisions asked per initial hand while the offers are open (§3.14, §3.16).
OFFERS = ("insurance", "even_money", "surrender")


def _offers(seat: SeatFacts, state: Round | None, box) -> tuple[tuple[str, int], ...]:
    """The engine's answer, hand by hand, to "may this box take insurance / even money /
    surrender now?" (``legal_decisions(box, hand=n)``)."""
    if state is None or box is None or seat.phase != SeatPhase.PLAY or state.is_over or not state.offers_open:
        return ()
    hands = seat.profile.hands_per_box if seat.profile is not None else 1
    out = []
    for n in range(1, hands + 1):
        try:
            legal = state.legal_decisions(seat.box, hand=n if hands > 1 else None)
        except RuleError:
            continue
        out += [(a, n) for a in OFFERS if legal.get(Action(a), "") is None]
    return tuple(out)


def _turn(seat: SeatFacts, state: Round | None) -> str | None:
    if state is None or seat.phase != SeatPhase.PLAY or state.is_over:
        return None
    if state.phase == Phase.INITIAL_DEAL:
        return "dealing"
    if state.phase == Phase.DEALER:
        return "dealer"
    cur = state.hand_in_play()
    if cur is None:
        return "dealing"
    return "mine" if cur[0].number == seat.box else "others"


# --- unit conditions ----------------------------------------------------------------------

#: Every unit condition code a seat's screen knows, in the order it is shown (worst first).
CONDITIONS = ("recovering", "no_dealer", "broker_down", "not_verified", "reader_down",
              "shoe_down", "console_down", "storage_low", "behind_confirmed", "jackpot_link_down")


# --- the view ---------------------------------------------------------------------------

def build_seat_view(seat: SeatFacts) -> SeatView:
    """The screen's view of a seat snapshot (:meth:`SeatUnit.facts`; ``SeatUnit.view``
    builds it once per snapshot, when read)."""
    global builds
    builds += 1
    state: Round | None = seat.round
    profile = seat.profile
    alarms, mark = _round_alarms(seat)
    refusal = seat.progressive_refusal if profile is not None and profile.progressive else None
    issues = _spot_issues(seat, state, alarms, refusal)
    spots = []
    locked = seat.phase in (SeatPhase.CLOSING, SeatPhase.PLAY)
    # chips the seat does not offer as a wager (bets not taken, progressive while the link is down)
    unwagered = set(seat.unwagered)
    for spot in seat.spots:
        uids = seat.present[spot]
        worth = _worth(seat, uids)
        chips = _chips(seat, uids)
        refused = tuple(c.uid for c in chips if c.status != str(ChipStatus.VALID))
        found = list(issues.get(spot, []))
        barred = sum(1 for c in chips if c.status not in (str(ChipStatus.VALID), "unknown"))
        unknown = sum(1 for c in chips if c.status == "unknown")
        if barred:
            found.insert(0, SpotIssue("barred_chip", count=barred))
        if unknown:
            found.insert(0, SpotIssue("unknown_chip", count=unknown))
        status = ("refused" if refused else "not_wagered" if worth and spot in unwagered else
                  "locked" if locked and worth else "open" if worth else "empty")
        spots.append(SpotView(spot, display_text(worth), status, refused, tuple(found), chips))
    hands: list[HandView] = []
    results: tuple = ()
    pay_lines: tuple = ()
    decisions: tuple = ()
    dealer: tuple = ()
    dealer_total = None
    dealer_soft = dealer_blackjack = switched = False
    progressive = None
    envy: tuple = ()
    box = _box(state, seat.box)
    if state is not None and state.phase != Phase.BETTING:
        dealer = tuple(str(c) for c in state.dealer)
        if state.dealer:
            dealer_total, dealer_soft = hand_total(state.dealer)
            dealer_blackjack = state.dealer_blackjack
        if box is not None:
            cur = state.hand_in_play()
            for hand in box.hands:
                total, soft = hand_total(hand.cards)
                hands.append(HandView(tuple(str(c) for c in hand.cards), total, soft, hand.status,
                                      hand.result, None if hand.net is None else display_text(hand.net),
                                      cur is not None and cur[1] is hand, hand.switched))
            switched = bool(box.switched or any(h.switched for h in box.hands))
            if box.progressive_hand is not None:
                progressive = ProgressiveView(box.progressive_hand, _amount(box.progressive_award),
                                              box.progressive_share is not None,
                                              box.progressive_pending and not state.is_over)
            progressive_rules = profile.progressive if profile is not None else None
            if box.envy_from and progressive_rules is not None and progressive_rules.envy_bonus is not None:
                envy = tuple((b, display_text(progressive_rules.envy_bonus)) for b in box.envy_from)
            settled = box_settlement(state, seat.box) if state.is_over else None
            if settled is not None:
                results = tuple((k, display_text(v)) for k, v in sorted(settled.bets))
                pay_lines = _pay_lines(seat, settled)
            if cur is not None and cur[0] is box:
                decisions = tuple(str(a) for a, r in state.legal_decisions(seat.box).items() if r is None)
    limits: tuple[tuple[str, str, str], ...] = ()
    if state is not None:
        limits = tuple((bet, display_text(lo), display_text(hi)) for bet, (lo, hi) in sorted(state.limits.items()))
    return SeatView(seat.box, seat.round_no, seat.phase, tuple(spots), tuple(hands), dealer,
                    dealer_total, results, seat.messages,
                    tuple(a["detail"] for a in seat.alarms[-8:]), seat.lamps, decisions,
                    dealer_soft, dealer_blackjack,
                    profile=profile.name if profile else "", title=profile.title if profile else "",
                    limits=limits, turn=_turn(seat, state), pay_lines=pay_lines, switched=switched,
                    progressive=progressive, envy=envy, round_alarms=alarms,
                    table_alarms=_table_alarms(seat), controller=seat.controller,
                    alarm_mark=mark, offers=_offers(seat, state, box), conditions=seat.conditions)
