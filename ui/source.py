"""Reads what the seat display needs from a seat unit, in the unit's own thread.

The runtime's :class:`~firmware.runtime.view.SeatView` is the main input. Until the view
carries everything the screen shows, this adapter reads the rest from the seat unit and
asks the engine (never deciding a rule itself) — every such read is marked ``VIEW-GAP``
and listed in ``docs/ui.md`` as a request to the runtime:

* why a wager would not be counted (the engine's preview of "no more bets" for this box);
* the registry status of each refused chip; which spots had chips past-posted;
* side-bet categories, the progressive hand and award, envy bonuses (settlement);
* the switch; whose turn it is; alarms of this round (seat and dealer, with their codes).

Plain Python, no Kivy. :meth:`SeatSource.snapshot` must be called in the thread that owns
the seat (its observer callback does), so the seat's state is read between two steps.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from fractions import Fraction
from typing import Any, Callable

from firmware.engine.errors import IllegalWager, RuleError
from firmware.engine.events import BetsClosed
from firmware.engine.money import format_amount, parse_amount
from firmware.engine.round import Phase, Round
from firmware.runtime.bus import Message, alarm_topic

from .model import ControllerState, Fault, SeatSnapshot, WagerIssue

#: Runtime alarm codes -> what the player is told (see ``ui.i18n`` ``fault.*``).
FAULT_KINDS = {
    "shoe_jam": "shoe", "misread": "shoe", "card_gap": "shoe", "shuffle_in_round": "shoe",
    "card_while_betting": "shoe", "interruption_continue": "shoe", "shoe_misread": "shoe",
    "shoe_door_opened": "tamper", "pinching": "tamper", "past_posting": "tamper",
    "addition_mismatch": "tamper",
    "interruption_void": "void", "integrity": "integrity",
    "link_lost": "link", "controller_link": "link", "broker_link": "link",
}
#: Conditions that last until their counterpart arrives (not just this round).
LASTING = {"shoe_jam": "shoe_jam_cleared", "shoe_door_opened": "shoe_door_closed"}
#: Alarms shown on the spot itself (not as a banner) or not for the player at all.
NOT_BANNERS = {"unknown_chip", "barred_chip", "seats_missing", "shoe_cut_card", "shoe_shuffled"}


class ControllerFeed:
    """The jackpot controller link as the seat sees it (meter, PENDING, link state).

    The MQTT controller link does not exist yet (VIEW-GAP); the demo drives this object
    directly, and a seat without a controller leaves ``link`` None."""

    def __init__(self, link: str | None = None, meter: Fraction | None = None) -> None:
        self._lock = threading.Lock()
        self._state = ControllerState(link, meter, False)
        self._listeners: list[Callable[[ControllerState], None]] = []

    @property
    def state(self) -> ControllerState:
        with self._lock:
            return self._state

    def listen(self, callback: Callable[[ControllerState], None]) -> None:
        self._listeners.append(callback)

    def set(self, **changes: Any) -> None:
        with self._lock:
            self._state = replace(self._state, **changes)
            state = self._state
        for callback in self._listeners:
            callback(state)


class SeatSource:
    """Snapshots of one seat unit for its screen."""

    def __init__(self, seat, controller: ControllerFeed | None = None, bus=None,
                 title: str | None = None) -> None:
        self.seat = seat
        self.controller = controller or ControllerFeed()
        self.title = title
        self._lock = threading.Lock()
        self._table_alarms: list[dict[str, Any]] = []
        self._lasting: dict[str, dict[str, Any]] = {}
        self._round_seen = -1
        self._seat_alarm_mark = 0
        if bus is not None:
            # VIEW-GAP: the seat does not pass the table's alarms (shoe, door) to its view.
            bus.subscribe(alarm_topic(seat.table), self._on_alarm, f"{seat.unit_id}/screen")

    def _on_alarm(self, m: Message) -> None:
        body = dict(m.body)
        code = str(body.get("alarm", ""))
        with self._lock:
            for start, end in LASTING.items():
                if code == end:
                    self._lasting.pop(start, None)
            if code in LASTING:
                self._lasting[code] = body
            elif code not in LASTING.values():
                self._table_alarms.append(body)
                del self._table_alarms[:-16]

    # -- the snapshot ------------------------------------------------------------------

    def snapshot(self) -> SeatSnapshot:
        seat = self.seat
        view = seat.view
        profile = seat.profile
        state: Round | None = seat.round
        if view.round != self._round_seen:
            self._round_seen = view.round
            self._seat_alarm_mark = len(seat.alarms) if view.phase in ("open", "idle") else self._seat_alarm_mark
        seat_alarms = [dict(a) for a in seat.alarms[self._seat_alarm_mark:]]
        controller = self.controller.state
        limits = dict(state.limits) if state is not None else {}
        snap = SeatSnapshot(
            view=view,
            profile_name=profile.name if profile else "",
            title=self.title or (profile.title if profile else ""),
            limits=limits,
            turn=self._turn(state),
            issues=self._issues(state),
            chips=self._chips(),
            late_spots=tuple(sorted({a.get("spot") for a in seat_alarms
                                     if a.get("alarm") == "past_posting" and a.get("spot")})),
            side_odds={n: dict(t.pays) for n, t in profile.side_bets.items()} if profile else {},
            insurance_odds=profile.rules.insurance_pays if profile else None,
            controller=controller,
            faults=self._faults(seat_alarms, view.round, controller),
            **self._results(state),
        )
        return snap

    def _turn(self, state: Round | None) -> str | None:
        if state is None or self.seat.phase != "play" or state.is_over:
            return None
        if state.phase == Phase.INITIAL_DEAL:
            return "dealing"
        if state.phase == Phase.DEALER:
            return "dealer"
        cur = state.hand_in_play()
        if cur is None:
            return "dealing"
        return "mine" if cur[0].number == self.seat.box else "others"

    def _chips(self) -> tuple[tuple[str, str, str], ...]:
        out = []
        for spot, uids in self.seat.present.items():
            for uid in sorted(uids):
                chip = self.seat.registry.get(uid)
                if chip is None:
                    out.append((spot, uid, "unknown"))
                elif str(chip.status) != "valid":
                    out.append((spot, uid, str(chip.status)))
        return tuple(out)

    def _issues(self, state: Round | None) -> tuple[WagerIssue, ...]:
        seat = self.seat
        if state is None or seat.profile is None:
            return ()
        if seat.phase == "open":
            return wager_preview(state, seat.box, seat.wagers())
        if seat.refused_round is not None and seat.phase in ("play", "over"):
            return tuple(WagerIssue(s, "refused", seat.refused_round)
                         for s, a in seat.locked.items() if a)
        try:
            box = state.box(seat.box)
        except (ValueError, KeyError, RuleError):
            return ()
        out = [WagerIssue(f.bet, "pro_rata" if f.issue == "over_maximum" else f.issue, f.clause)
               for f in box.flags]
        for r in box.returned:
            if r.reason.startswith("requires_"):
                out.append(WagerIssue(r.bet, "requires", r.clause, r.reason[len("requires_"):]))
            else:
                out.append(WagerIssue(r.bet, r.reason, r.clause))
        return tuple(out)

    def _results(self, state: Round | None) -> dict[str, Any]:
        seat = self.seat
        out: dict[str, Any] = {}
        result = seat.own_result or {}
        out["side_results"] = dict(result.get("side_bets") or {})
        prog = result.get("progressive")
        profile = seat.profile
        if prog and prog.get("hand") and profile and profile.progressive:
            award = profile.progressive.pays.get(prog["hand"])
            out["progressive"] = (prog["hand"], None if prog.get("award") is None else str(prog["award"]),
                                  award is not None and award.meter_share is not None)
        if state is not None and state.phase != Phase.BETTING:
            try:
                box = state.box(seat.box)
            except (ValueError, KeyError, RuleError):
                box = None
            if box is not None:
                out["switched"] = bool(box.switched or any(h.switched for h in box.hands))
                if box.envy_from and profile and profile.progressive and profile.progressive.envy_bonus:
                    out["envy"] = tuple((b, format_amount(profile.progressive.envy_bonus))
                                        for b in box.envy_from)
        out["switch_legal"] = "switch" in seat.view.decisions
        return out

    def _faults(self, seat_alarms: list[dict[str, Any]], round_no: int,
                controller: ControllerState) -> tuple[Fault, ...]:
        out: list[Fault] = []
        with self._lock:
            lasting = list(self._lasting.values())
            table = [a for a in self._table_alarms if a.get("round") == round_no]
        for a in [*lasting, *table, *seat_alarms]:
            code = str(a.get("alarm", ""))
            if code in NOT_BANNERS:
                continue
            out.append(Fault(FAULT_KINDS.get(code, "other"), code, str(a.get("detail", code))))
        if controller.link == "down":
            out.append(Fault("link", "controller_link", "jackpot controller"))
        seen, unique = set(), []
        for f in out:
            if (f.kind, f.detail) not in seen:
                seen.add((f.kind, f.detail))
                unique.append(f)
        return tuple(unique[-4:])


def wager_preview(state: Round, box: int, bets: dict[str, Fraction]) -> tuple[WagerIssue, ...]:
    """Ask the engine what "no more bets" would make of these wagers now (the dealer asks
    the same question when it receives the seat's offer). A refusal is shown on the spot
    the engine names."""
    bets = {k: v for k, v in bets.items() if v}
    if not bets:
        return ()

    def close(wagers: dict[str, Fraction]):
        fresh = Round.new(state.profile, decks=state.decks, limits=state.limits, meter=state.meter,
                          shoe=state.shoe)
        return fresh.apply(BetsClosed.of({box: wagers}))[1]

    try:
        outcomes = close(bets)
    except IllegalWager as exc:
        # the engine names the spot and the issue; the screen only shows them
        issue = exc.issue if exc.issue in ("over_maximum", "under_minimum") else "refused"
        return (WagerIssue(exc.bet or "main", issue, exc.reason),)
    out = []
    for o in outcomes:
        kind = type(o).__name__
        if kind == "WagerFlagged":
            out.append(WagerIssue(o.bet, "pro_rata" if o.issue == "over_maximum" else o.issue, o.clause))
        elif kind == "BetReturned":
            if o.reason.startswith("requires_"):
                out.append(WagerIssue(o.bet, "requires", o.clause, o.reason[len("requires_"):]))
            else:
                out.append(WagerIssue(o.bet, o.reason, o.clause))
    return tuple(out)


def amount(text: str) -> Fraction:
    return parse_amount(text)
