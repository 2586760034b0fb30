"""A seat's reports to the jackpot controller, derived from the seat's own engine state.

Attached through the runtime's observer seam (``Unit.observe``): after every step the seat
takes, :class:`SeatReporter` looks at the seat's round and queues, durably and once each
(idempotency key ``<round>/<kind>``), what the controller needs:

- ``progressive_wager`` once the progressive wager is live (booked at the initial deal);
- ``progressive_hit`` for the highest qualifying hand (Switch §3.7.1): a fixed award or a
  meter share (the controller locks the amount);
- ``envy_bonus`` for each other player's envy hand (Switch §3.7.2), at the end of the round;
- ``side_bet`` for each side bet of the box when the round is over (bet, the category the
  engine judged or null, stake, the player's net), not for a voided round (its bets are
  returned and ``round_result`` says void);
- ``round_result`` when the round is over (confirms a pending hit: §3.7 pays a 100% win at
  the end of the round);
- ``alarm`` for each alarm the seat raises (unknown or barred chip, past-posting, pinching,
  integrity, ...), keyed by its place in the seat's alarm record, which a restarted seat
  rebuilds identically from its journal; an alarm before the first round has no round.

Every report gets the unit's next ``seq`` from the outbox and an idempotency key, so a seat
that restarts and looks at the same state again reports nothing twice. A round that ended
while the seat was down (``seat.missed_rounds``, from the dealer's catch-up) is reported the
same way, under the same keys. A seat behind its confirmed mark (restarted from an older
copy of its state) reports its alarms, no money: the controller holds that time's reports.

:class:`DealerReporter` does the same for a table's dealer (``<table>/dealer``, its own
outbox): an ``alarm`` report for each alarm the dealer itself raises (shoe jam or fault,
door, ``seats_missing``, ``card_keyed``, ``integrity``, interruptions, ...), so they reach the
controller and the casino's systems behind it durably, not only as the table's alarm
messages. The seats' alarms that the dealer also records (from the table alarm topic) are
not reported again: each seat reports its own.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Iterable, Protocol

MAX_DETAIL = 1000             # characters of an alarm's text on the wire

from firmware.engine.money import share_text, wire_text
from firmware.engine.round import Phase
from firmware.engine.settlement import BoxSettlement, box_settlement, box_settlements

from .outbox import Outbox


class ReportLink(Protocol):
    """Where a reporter's reports go: an MQTT bus (:class:`~firmware.link.mqtt.MqttBus`) or
    the in-process controller's link (:class:`~firmware.jackpot.local.LocalReportLink`); both
    queue them in a durable outbox first."""

    @property
    def outbox(self) -> Outbox | None: ...

    def report(self, kind: str, body: dict[str, Any], key: str | None = None,
               **extra: Any) -> int | None: ...

log = logging.getLogger("betbox.link")


#: The money codec's wire text (firmware/engine/money.py), by the name the link has always
#: used; ``share_text`` is the codec's too.
amount_text = wire_text
__all__ = ["amount_text", "share_text", "SeatReporter", "DealerReporter", "AlarmReporter", "hit_body",
           "alarm_code", "progressive_record", "settlement_record"]


class _AlarmCounts:
    """What a unit's reporter says of its alarms (both roles, through :class:`AlarmReporter`)."""

    alarms: "AlarmReporter"

    @property
    def alarms_seen(self) -> int:
        """The running number of the next alarm entry to look at."""
        return self.alarms.seen

    @alarms_seen.setter
    def alarms_seen(self, value: int) -> None:
        self.alarms.seen = value

    @property
    def unreportable(self) -> int:
        """Alarm entries dropped from the unit's bounded log before they were reported."""
        return self.alarms.unreportable


class SeatReporter(_AlarmCounts):
    def __init__(self, seat: Any, bus: ReportLink) -> None:
        self.seat = seat
        self.bus = bus
        self.reported = 0
        self.alarms = AlarmReporter(bus, {"table": seat.table, "box": seat.box})
        self.missed_done: set[int] = set()     # missed rounds reported since this start
        seat.observe(self._after_step, in_step=True)   # its reports commit with the step

    def _report(self, round_no: int, kind: str, body: dict[str, Any], key: str | None = None) -> None:
        seq = self.bus.report(kind, body, key=f"{round_no}/{key or kind}", table=self.seat.table,
                              box=self.seat.box, round=round_no)
        if seq is not None:
            self.reported += 1

    def _known(self, round_no: int, kind: str) -> bool:
        return _known(self.bus, f"{round_no}/{kind}")

    def sync(self) -> None:
        """Report what the seat's state holds now (after its journal was replayed: a crash
        between a step and its report loses nothing; the keys make it idempotent)."""
        self._after_step(self.seat)

    def _after_step(self, seat: Any) -> None:
        self.reported += self.alarms.report(seat)
        if getattr(seat, "behind", None) is not None or (self.bus.outbox is not None
                                                         and self.bus.outbox.behind is not None):
            # restarted from an older copy (issue #11.5): the controller already holds this
            # unit's money reports of that time; a supervisor reconciles them, none go twice
            return
        # rounds that ended while the seat was down, rebuilt from the dealer's record in the
        # catch-up (issue #11.4): the same reports, under the same keys, as if it had seen them
        for rnd, state in sorted((getattr(seat, "missed_rounds", None) or {}).items()):
            if rnd not in self.missed_done:    # a round over: its reports are queued once
                self._report_round(rnd, state)
                self.missed_done.add(rnd)
        if seat.round is not None and seat.round_no:
            self._report_round(seat.round_no, seat.round)

    def _report_round(self, rnd: int, state: Any) -> None:
        try:
            box = state.box(self.seat.box)
        except Exception:          # this box has no wager this round
            return
        progressive = state.profile.progressive
        # a report known made is not made again (its body is work inside the step's transaction)
        if progressive is not None and "progressive" in box.ledger and "progressive" in box.stakes:
            if not self._known(rnd, "progressive_wager"):
                self._report(rnd, "progressive_wager", {"amount": amount_text(box.stakes["progressive"])})
            if box.progressive_hand is not None and not self._known(rnd, "progressive_hit"):
                self._report(rnd, "progressive_hit", hit_body(box))
        if state.is_over and self._known(rnd, "round_result"):
            return            # put last: the round's other settlement reports were put before it
        settled = box_settlement(state, self.seat.box) if state.is_over else None
        if settled is not None:
            if progressive is not None and progressive.envy_bonus is not None and not settled.void:
                for other in settled.envy_from:
                    self._report(rnd, "envy_bonus", {"from_box": other,
                                                     "award": amount_text(progressive.envy_bonus)},
                                 key=f"envy_bonus/{other}")
            for side in side_bet_bodies(state.profile.side_bets, settled):
                self._report(rnd, "side_bet", side, key=f"side_bet/{side['bet']}")
            self._report(rnd, "round_result", {"void": settled.void, "net": amount_text(settled.net)})


def hit_body(box: Any) -> dict[str, Any]:
    """A box's progressive hit on the wire, the seat's and the dealer's alike: a fixed
    ``award``, or a ``meter_share`` and the ``amount`` the table pays for it (the share of
    its round's meter, to the cent; null when the round opened without a meter)."""
    share = box.progressive_share
    if share is None:
        return {"category": box.progressive_hand, "award": amount_text(box.progressive_award), "meter_share": None}
    award = box.progressive_award
    return {"category": box.progressive_hand, "award": None, "meter_share": share_text(share),
            "amount": None if award is None else amount_text(award)}


class AlarmReporter:
    """A unit's own alarms as ``alarm`` reports, for both roles (issue #15).

    ``unit.alarms`` is a :class:`~firmware.runtime.unit.Recent`: ``len()`` counts every entry
    ever recorded and a replayed journal rebuilds the same numbering, so the key
    ``alarm/<n>`` (the entry's running number, from 1) is stable across restarts. Each
    entry's own ``round`` goes on the wire (none before the first round). Entries already
    dropped from the bounded log when the reporter looks (a unit recovered from a journal
    with more alarms than the log keeps) are counted in ``unreportable`` and logged, never
    a crash. An entry another unit raised (a seat's alarm the dealer relays) is skipped:
    each unit reports its own."""

    def __init__(self, bus: ReportLink, extra: dict[str, Any]) -> None:
        self.bus = bus
        self.extra = dict(extra)     # table (and box) of every report
        self.seen = 0
        self.unreportable = 0

    def report(self, unit: Any) -> int:
        """Queue the unit's alarms not yet looked at; how many were queued."""
        alarms = unit.alarms
        total = len(alarms)
        start = self.seen
        first = getattr(alarms, "first", 0)
        if start < first:
            self.unreportable += first - start
            log.warning("%s: %d alarm(s) no longer held in the unit's log (it keeps the newest %d) "
                        "could not be reported (%d so far); the journal holds them",
                        unit.unit_id, first - start, getattr(alarms, "keep", 0), self.unreportable)
            start = first
        queued = 0
        for n in range(start, total):
            entry = alarms[n]
            if not isinstance(entry, dict) or entry.get("unit", unit.unit_id) != unit.unit_id:
                continue
            extra = dict(self.extra)
            rnd = entry.get("round")
            if isinstance(rnd, int) and not isinstance(rnd, bool) and rnd >= 1:
                extra["round"] = rnd
            body: dict[str, Any] = {"alarm": alarm_code(entry.get("alarm", "unknown")),
                                    "detail": str(entry.get("detail", ""))[:MAX_DETAIL]}
            boxes = _alarm_boxes(entry)
            if boxes and "box" not in extra:
                body["boxes"] = boxes
            if self.bus.report("alarm", body, key=f"alarm/{n + 1}", **extra) is not None:
                queued += 1
        self.seen = total
        return queued


def alarm_code(value: Any) -> str:
    """An alarm code the controller accepts (``[a-z0-9_]{1,64}``): a report it rejected would
    never be confirmed and would hold every later one of the unit unconfirmed."""
    code = re.sub(r"[^a-z0-9_]", "_", str(value).lower())[:64]
    return code or "unknown"


def _alarm_boxes(entry: Any) -> list[int]:
    """The boxes a dealer's alarm concerns (``box`` / ``boxes`` in its entry), for the wire."""
    raw = entry.get("boxes")
    raw = raw if isinstance(raw, (list, tuple)) else [entry.get("box")]
    return sorted({b for b in raw if isinstance(b, int) and not isinstance(b, bool) and 1 <= b <= 99})


class DealerReporter(_AlarmCounts):
    """The dealer's alarms and its record of each round to the jackpot controller, through
    the dealer's own outbox.

    The round record is the authority for money (DESIGN "Progressive jackpot"): the
    controller books a seat's wager, hit, envy bonus or result only when it agrees with
    it. ``round_progressive`` (key ``<round>/round_progressive``) goes out once the engine
    has judged the progressive on the initial cards: every box's progressive wager and hit,
    and the meter the round opened with; so a hit is locked at once, not at the round's
    end. ``round_settlement`` (key ``<round>/round_settlement``) when the round is over:
    every box's net, envy bonuses and side bets (none for a void round).

    Alarms go through :class:`AlarmReporter` (each entry with its own round; entries no
    longer held are counted, never a crash); a seat's alarm the dealer also records (from the
    table's alarm topic) is not reported again: each seat reports its own."""

    def __init__(self, dealer: Any, bus: ReportLink) -> None:
        self.dealer = dealer
        self.bus = bus
        self.reported = 0
        self.alarms = AlarmReporter(bus, {"table": dealer.table})
        dealer.observe(self._after_step, in_step=True)

    def sync(self) -> None:
        """Report what the dealer's state holds now (after its journal was replayed)."""
        self._after_step(self.dealer)

    def _after_step(self, dealer: Any) -> None:
        self.reported += self.alarms.report(dealer)
        self._round_record(dealer)

    def _round_record(self, dealer: Any) -> None:
        state, rnd = dealer.round, dealer.round_no
        if state is None or not rnd:
            return
        # a record known made is not made again (its body is work inside the step's transaction)
        progressive = None if _known(self.bus, f"{rnd}/round_progressive") else progressive_record(state)
        if progressive is not None and self.bus.report("round_progressive", progressive, key=f"{rnd}/round_progressive",
                                                       table=dealer.table, round=rnd) is not None:
            self.reported += 1
        settled = f"{rnd}/round_settlement"
        if state.is_over and not _known(self.bus, settled) and self.bus.report(
                "round_settlement", settlement_record(state), key=settled, table=dealer.table, round=rnd) is not None:
            self.reported += 1


def _known(bus: ReportLink, key: str) -> bool:
    """The report under ``key`` is known made (its outbox remembers it committed)."""
    outbox = bus.outbox
    return outbox is not None and outbox.known(key)


def progressive_record(state: Any) -> dict[str, Any] | None:
    """The dealer's record of a round's progressive, once every progressive wager is booked
    (judged on the initial cards); None before that, or when there is none."""
    if state.profile.progressive is None:
        return None
    boxes = [box for box in state.boxes if "progressive" in box.stakes]
    if not boxes or not all("progressive" in box.ledger for box in boxes):
        return None
    return {"meter": None if state.meter is None else amount_text(state.meter),
            "boxes": [{"box": box.number, "wager": amount_text(box.stakes["progressive"]),
                       "hit": None if box.progressive_hand is None else hit_body(box)} for box in boxes]}


def settlement_record(state: Any) -> dict[str, Any]:
    """The dealer's record of a finished round: each box's net (what the seat's
    ``round_result`` says), envy bonuses and side bets (what its ``envy_bonus`` and
    ``side_bet`` reports say; none for a void round)."""
    void = state.phase == Phase.VOID
    progressive = state.profile.progressive
    out = []
    for settled in box_settlements(state):    # every box in the round, as each seat reports its own
        envy = []
        if not void and progressive is not None and progressive.envy_bonus is not None \
                and settled.progressive is not None:
            envy = [{"from_box": other, "award": amount_text(progressive.envy_bonus)} for other in settled.envy_from]
        side = side_bet_bodies(state.profile.side_bets, settled)
        out.append({"box": settled.box, "net": amount_text(settled.net), "envy": envy, "side_bets": side})
    return {"void": void, "boxes": out}


def side_bet_bodies(side_bets: Iterable[str], settled: BoxSettlement) -> list[dict[str, Any]]:
    """A box's side bets as reported (a seat's ``side_bet`` bodies, the dealer's record's
    ``side_bets``): one per side bet it wagered, in name order; none for a void round."""
    if settled.void:
        return []
    out = []
    for bet in sorted(side_bets):
        stake = settled.stake(bet)
        if stake is not None:
            out.append({"bet": bet, "category": settled.category(bet), "stake": amount_text(stake),
                        "net": amount_text(settled.bet_net(bet))})
    return out
