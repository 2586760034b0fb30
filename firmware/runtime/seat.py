"""The seat unit: senses its wagers, replays the table stream through the engine for its
own box, drives its lamps and keeps the view its screen shows.

Wagers change only while bets are open. After "no more bets" a chip that arrives is a legal
addition only when the engine says a double or split (``main`` spot) or insurance
(``insurance`` spot) is legal for this box now; otherwise it is past-posting. A chip that
leaves before the round is over is pinching. Both are alarms, never bet changes
(``rws-blackjack-v5 §5.8``).

The jackpot controller's link is an input like any other (``("controller", {"link",
"meter", "pending"})``, journalled and replayed): while the link is down the progressive
spot is not offered, its lamp is off and :attr:`SeatUnit.progressive_refusal` says why
(DESIGN "Progressive jackpot"; issue #6).

The table's alarms (shoe jam, shoe door, misread, card gap, interruption, integrity, ...),
which the dealer publishes on the table's alarm topic, are seat inputs too: taken only from
``<table>/dealer`` with a well-formed body, journalled and replayed. The seat keeps the
faults in force: a lasting condition (``shoe_jam``, ``shoe_door_opened``) until its
counterpart (``shoe_jam_cleared``, ``shoe_door_closed``), any other alarm for the round it
names (:attr:`SeatUnit.table_faults`, :attr:`SeatUnit.table_alarms`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Iterable, Mapping

from firmware.chips import ChipDebouncer, ChipRegistry, ChipStatus
from firmware.engine.errors import RuleError
from firmware.engine.events import Action, BetsClosed, Decision, Event
from firmware.engine.money import format_amount, to_json_number
from firmware.engine.profile import Profile, load_profile
from firmware.engine.round import Phase, Round
from firmware.engine.settlement import box_settlement
from hal.events import HalEvent, InventoryCycle, ReaderFault
from hal.ports import LAMP_OFF, LAMP_ON, Lamps

from .bus import Bus, Message, alarm_topic, down_topic, stream_topic, up_topic
from .journal import Journal
from .phases import SeatPhase
from .seatview import CONDITIONS, SeatFacts, alarm_mark, build_seat_view, worth
from .software import software_input
from .spots import insurance_hand, insurance_spot
from .unit import BEHIND, LOST, Input, InputRefused, Recent, Unit, UnitState, ck_json, ck_str
from .view import SeatView
from .wire import (
    NEVER_HEARD,
    TABLE_LASTING,
    Catchup,
    ControllerStatus,
    as_json_value,
    bets_to_json,
    check_table_alarm,
    controller_input,
    read_down_message,
    read_stream_message,
)

LINK_DOWN = "controller_link_down"
#: Rounds over that the seat keeps from the dealer's catch-up (issue #11.4).
KEEP_MISSED_ROUNDS = 16
#: The table's round-bound alarms a seat keeps (the newest; the view shows this round's).
KEEP_TABLE_ALARMS = 32


@dataclass(eq=False, repr=False)
class SeatState(UnitState):
    """The seat's state: what its checkpoint holds (one codec: firmware/runtime/codec.py).
    The screen's view is not state: it is built again from this (every alarm entry carries
    its round, so the round's alarms are found without the view's mark)."""

    present: dict[str, frozenset[str]] = field(default_factory=dict, metadata={"read": "_present_from_json"})
    profile: Profile | None = None
    round_no: int = 0
    round: Round | None = None
    phase: SeatPhase = SeatPhase.IDLE
    last_stream: int = 0
    awaiting_catchup: bool = False
    offered: dict[str, Any] | None = None
    locked: dict[str, Fraction] = field(default_factory=dict)
    pending: dict[str, Fraction] = field(default_factory=dict)
    own_result: Any = None
    dealer_result: Any = None
    messages: Recent = field(default_factory=Recent)
    refused_round: str | None = None
    joined_round: int = 0
    # the jackpot controller as last heard: link None = no controller known yet
    controller: ControllerStatus = NEVER_HEARD
    # spots whose chips this round are not a wager, and why (e.g. progressive while
    # the controller link was down when bets locked)
    unwagered: dict[str, str] = field(default_factory=dict)
    # the dealer closed bets without this seat's wagers this round, and why
    # ("lock_timeout" | "closed_by_dealer")
    bets_not_taken: str | None = None
    # the table's alarms (the dealer's, on the alarm topic): lasting conditions in force
    # by code (shoe_jam, shoe_door_opened) until their counterpart, and the newest
    # round-bound ones (each names its round); the dealer's seq of the last one heard
    table_faults: dict[str, dict[str, Any]] = field(default_factory=dict,
                                                    metadata={"read": "_table_faults_from_json"})
    table_alarms: Recent = field(default_factory=lambda: Recent(KEEP_TABLE_ALARMS),
                                 metadata={"read": "_table_alarms_from_json"})
    table_alarm_seq: int = 0
    # the round whose bets this seat does not take because its chip reader was down
    # while they were open (DESIGN "Unit states": a seat with a fault takes no bets)
    reader_lost_round: int = 0
    # spots whose antenna reported a fault -> the round it spoils (the one open, or the next)
    spot_faults: dict[str, int] = field(default_factory=dict)
    # rounds that ended while this seat was down, rebuilt by its engine from the
    # dealer's record in the catch-up: the seat's reporter reports them like its own
    missed_rounds: dict[int, Round] = field(default_factory=dict)
    # the seq of the last pit reconciled command the dealer passed on (each is taken once:
    # a redelivery is not applied twice; format 6 on)
    reconciled_seq: int = 0

    @property
    def live(self) -> Round:
        """The round in play: a unit past "idle" always has one (the phases say so)."""
        assert self.round is not None, "no round in play"
        return self.round


class SeatUnit(Unit, SeatState):
    role = "seat"
    accepts_controller = True

    def __init__(self, unit_id: str, table: str, box: int, bus: Bus, journal: Journal,
                 registry: ChipRegistry, spots: Iterable[str], lamps: Lamps | None = None,
                 confirm_cycles: int = 2, release_cycles: int = 2) -> None:
        super().__init__(unit_id, table, bus, journal)
        self.box = box
        self.registry = registry
        self.spots = tuple(spots)
        self.lamps = lamps
        self.debouncer = ChipDebouncer(confirm_cycles, release_cycles)
        self.present = {s: frozenset() for s in self.spots}
        self._profiles: dict[str, Profile] = {}
        # the screen's view: a frozen snapshot taken after every step, the view built from
        # it when read (issue #18); where this round's alarms start, folded step by step
        self._alarm_mark = 0
        self._mark_round: int | None = None
        self._facts = self.facts()
        self._view: tuple[SeatFacts, SeatView] | None = None
        bus.subscribe(stream_topic(table), self.post, unit_id)
        bus.subscribe(down_topic(table, box), self.post, unit_id)
        bus.subscribe(alarm_topic(table), self.post, unit_id)

    # -- inputs ------------------------------------------------------------------------

    def translate(self, item: Any) -> list[tuple[str, dict[str, Any]]]:
        if isinstance(item, InventoryCycle):
            reads = {spot: uids for spot, uids in item.as_mapping().items() if spot in self.present}
            out = []
            for change in self.debouncer.update(reads):
                present = self.debouncer.present(change.spot)
                if present != self.present.get(change.spot):
                    out.append(("chips", {"spot": change.spot, "uids": sorted(present)}))
            return out
        if isinstance(item, ReaderFault):
            return [("reader_fault", {"device": item.device, "spot": item.spot, "code": str(item.code)[:64]})]
        if isinstance(item, HalEvent):
            return self.device_event(item)        # the reader's link lost / restored
        if isinstance(item, tuple) and len(item) == 2 and item[0] == "controller":
            return [("controller", controller_input(item[1]).to_json())]
        if isinstance(item, tuple) and len(item) == 2 and item[0] == "software":
            return [("software", software_input(item[1]))]
        return super().translate(item)

    def start(self) -> None:
        """Announce the seat to the dealer with the last stream message it holds."""
        self.step("boot", {"box": self.box})

    def request(self, action: str, hand: int | None = None) -> None:
        """The player asks on the screen (even money, surrender); the dealer confirms."""
        self.post(("screen", {"action": action, "hand": hand}))

    def current_round(self) -> int | None:
        return self.round_no or None

    def handle(self, taken: Input) -> bool:
        kind, body = taken.kind, taken.body
        if kind == "boot":
            self._hello()
            self.devices_reopened()
            return True
        if kind == "device":
            return self._on_device(body)
        if kind == "reader_fault":
            return self._on_reader_fault(body)
        if kind == "chips":
            return self._on_chips(body["spot"], frozenset(body["uids"]))
        if kind == "screen":
            return self._on_screen(body["action"], body.get("hand"))
        if kind == "msg":
            assert taken.message is not None
            return self._on_message(taken.message, taken.value)
        if kind == "controller":
            return self._on_controller(taken.value)
        if kind == BEHIND:
            changed = self.on_behind(body)
            if changed and self.phase == SeatPhase.OPEN:
                self._offer()             # withdraw the offer: bets are refused now
            return changed
        if kind == "software":
            return self.on_software(taken.value)
        if kind == LOST:
            return self.on_lost(body)
        raise ValueError(f"seat: unknown input {kind!r}")

    def on_software(self, result: dict[str, Any]) -> bool:
        changed = super().on_software(result)
        if changed and self.phase == SeatPhase.OPEN:
            self._offer()                   # an offer already made is withdrawn
        return changed

    def _hello(self) -> None:
        """Presence, the last stream message held, and what the dealer may have lost."""
        bets = (self.offered if self.phase == SeatPhase.OPEN else
                bets_to_json(self.locked) if self.phase == SeatPhase.CLOSING else None)
        self._up("hello", {"last_stream_seq": self.last_stream, "phase": self.phase, "bets": bets,
                           "pending": {s: to_json_number(a) for s, a in sorted(self.pending.items())}})
        self.awaiting_catchup = True

    def _up(self, kind: str, body: dict[str, Any]) -> None:
        self.emit(up_topic(self.table, self.box), kind, {"box": self.box, "round": self.round_no, **body})

    def publish_alarm(self, entry: dict[str, Any]) -> None:
        self._up("alarm", entry)
        self.messages.append(entry["detail"])

    # -- refusing what is malformed or forged --------------------------------------------

    def check_message(self, m: Message) -> None:
        dealer = f"{self.table}/dealer"
        if m.topic == stream_topic(self.table):
            if m.sender != dealer:
                raise InputRefused(f"stream message {m.kind!r} from {m.sender!r}: only {dealer!r} writes the "
                                   "table stream")
        elif m.topic == down_topic(self.table, self.box):
            if m.sender != dealer:
                raise InputRefused(f"{m.kind!r} for box {self.box} from {m.sender!r}: only {dealer!r} sends to "
                                   "this seat")
            if m.kind == "catchup" and m.body.get("box") == self.box:
                strangers = [c.get("unit") for c in m.body.get("conditions") or ()
                             if isinstance(c, dict) and c.get("unit") != dealer]
                if strangers:
                    raise InputRefused(f"catchup: conditions raised by {strangers[0]!r:.60}, not {dealer!r}")
        elif m.topic == alarm_topic(self.table):
            if m.sender != dealer:
                raise InputRefused(f"table alarm from {m.sender!r}: only {dealer!r} raises the table's alarms at "
                                   "a seat")
            problem = check_table_alarm(m.kind, m.body, m.sender)
            if problem is not None:
                raise InputRefused(problem)
        else:
            raise InputRefused(f"{m.kind!r} on {m.topic!r}: not a topic of seat {self.box} at table {self.table}")

    def read(self, taken: Input) -> Input:
        """The seat's inputs read once: a stream message with its engine event or round,
        a catch-up with its rounds, a controller status, a verification result."""
        kind, body, m = taken.kind, taken.body, taken.message
        if kind == "controller":
            return replace(taken, value=controller_input(body))
        if kind == "software":
            return replace(taken, value=software_input(body))
        if m is not None and m.topic == stream_topic(self.table):
            return replace(taken, value=read_stream_message(m.kind, m.body, self._profile))
        if m is not None and m.topic == down_topic(self.table, self.box):
            return replace(taken, value=read_down_message(m.kind, m.body, self.box, self._profile))
        return taken

    def _profile(self, name: str) -> Profile:
        """Profiles by name, loaded once (a cache, not state)."""
        if name not in self._profiles:
            self._profiles[name] = load_profile(name)
        return self._profiles[name]

    # -- checkpoints -------------------------------------------------------------------

    def profile_of(self, name: str) -> Profile:
        return self._profile(name)

    def state_added(self) -> dict[str, tuple[int, Any]]:
        # the table's alarms came with checkpoint format 2: a format-1 checkpoint had none
        return {**super().state_added(), "table_faults": (2, dict),
                "table_alarms": (2, lambda: Recent(KEEP_TABLE_ALARMS)), "table_alarm_seq": (2, lambda: 0),
                "reader_lost_round": (self._devices_format, lambda: 0),
                "spot_faults": (self._devices_format, dict), "missed_rounds": (3, dict),
                "reconciled_seq": (6, lambda: 0)}

    @property
    def _devices_format(self) -> int:
        return super().state_added()["devices_down"][0]

    def _present_from_json(self, value: Any) -> dict[str, frozenset[str]]:
        if not isinstance(value, dict) or set(value) != set(self.spots):
            raise ValueError(f"the spots are {sorted(self.spots)}, the checkpoint has "
                             f"{sorted(value) if isinstance(value, dict) else value!r}")
        return {spot: frozenset(ck_str(u) for u in uids) for spot, uids in value.items()}

    def _table_alarm_from_json(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise ValueError(f"a table alarm is a mapping, not {value!r:.60}")
        problem = check_table_alarm("alarm", value, f"{self.table}/dealer")
        if problem is not None:
            raise ValueError(problem)
        return ck_json(dict(value))

    def _table_faults_from_json(self, value: Any) -> dict[str, dict[str, Any]]:
        if not isinstance(value, dict) or not set(value) <= set(TABLE_LASTING):
            raise ValueError(f"table faults are lasting conditions {sorted(TABLE_LASTING)}, not {value!r:.80}")
        out = {}
        for code, entry in value.items():
            entry = self._table_alarm_from_json(entry)
            if entry["alarm"] != code:
                raise ValueError(f"table fault {code!r} holds a {entry['alarm']!r} alarm")
            out[code] = entry
        return out

    def _table_alarms_from_json(self, value: Any) -> Recent:
        log = Recent.from_json(value, KEEP_TABLE_ALARMS)
        for entry in log:
            self._table_alarm_from_json(entry)
        return log

    # -- wagers ------------------------------------------------------------------------

    def worth(self, uids: Iterable[str]) -> Fraction:
        return worth(self.registry, uids)

    def wagers(self) -> dict[str, Fraction]:
        """What the seat offers: every spot's valid chips, except addition-only spots and
        the progressive spot while progressive play is refused here; nothing while its
        reader is down, while it is behind its confirmed mark or while its software is not
        verified."""
        if self.reader_refusal is not None:
            return {}
        if self.behind is not None:
            return {}                     # issue #11.5: no bets until the newest state is back
        if self.not_verified is not None:
            return {}
        refused = self.progressive_refusal
        offered = {spot: self.worth(uids) for spot, uids in self.present.items()     # each spot once
                   if insurance_hand(spot) is None and not (spot == "progressive" and refused is not None)
                   and self.spot_faults.get(spot) != self.round_no}
        return {spot: value for spot, value in offered.items() if value > 0}

    # -- the chip reader --------------------------------------------------------------

    @property
    def reader_refusal(self) -> str | None:
        """``reader_down`` while this seat takes no bets: its chip reader is down, or was
        down while this round's bets were open (what it saw then cannot be trusted)."""
        down = any(d["kind"] == "chip_reader" for d in self.devices_down.values())
        return "reader_down" if down or (self.round_no and self.reader_lost_round == self.round_no) else None

    def _on_device(self, body: dict[str, Any]) -> bool:
        self.on_device(body)
        if body.get("kind") == "chip_reader" and body.get("state") == "down" and self.phase == SeatPhase.OPEN:
            self._reader_lost()
        if body.get("kind") == "broker" and body.get("state") == "up" and self.awaiting_catchup:
            # the hello, or the catch-up answering it, may have gone down with the broker
            # (it persists on a time basis): without a new one the seat would wait for ever
            self._hello()
        return True

    def _on_reader_fault(self, body: dict[str, Any]) -> bool:
        """The reader reports a fault on an antenna (a spot) or on itself (spot None): an
        alarm, and the spot (or the whole seat) takes no bets in the round it spoils: the
        round open now, or else the next one (one already locked stands)."""
        spot, code = body.get("spot"), str(body.get("code"))
        where = f"the antenna under {spot}" if spot else "the reader"
        self.alarm("reader_fault", f"chip reader {body.get('device')!r}: {code} on {where}", spot=spot, code=code)
        self.log_change(f"{body.get('device')}/{spot}", "%s: chip reader fault %s on %s", self.unit_id, code, where)
        spoils = self.round_no if self.phase == SeatPhase.OPEN else self.round_no + 1 if self.phase in (
            SeatPhase.IDLE, SeatPhase.OVER, SeatPhase.VOID) else None
        if spoils is None:
            return True
        if spot is None:
            self.reader_lost_round = spoils
        elif spot in self.present:
            self.spot_faults = {s: r for s, r in self.spot_faults.items() if r >= self.round_no}
            self.spot_faults[spot] = spoils
        if self.phase == SeatPhase.OPEN:
            if spot is None:
                self._reader_lost()
            elif self.worth(self.present.get(spot, ())) > 0:
                self.unwagered[spot] = "antenna_fault"
                self._offer()
        return True

    def _reader_lost(self) -> None:
        """Bets are open and the reader is down: this round this seat takes no bets."""
        self.reader_lost_round = self.round_no
        self.messages.append("no bets this round: the chip reader is down")
        for spot, uids in self.present.items():       # what the screen last saw is no wager
            if self.worth(uids) > 0:
                self.unwagered[spot] = "reader_down"
        self._offer()

    # -- the jackpot controller --------------------------------------------------------

    @property
    def progressive_refusal(self) -> str | None:
        """Why progressive wagers are refused at this seat now (a code), or None."""
        return LINK_DOWN if self.controller.link == "down" else None

    def _on_controller(self, status: ControllerStatus) -> bool:
        if status == self.controller:
            return False                  # nothing changed: nothing to journal
        was = self.progressive_refusal
        self.controller = status
        now = self.progressive_refusal
        if now != was and "progressive" in self.present:
            if now is not None:
                self.messages.append("progressive wagers refused: the link to the jackpot controller "
                                     "is down")
            else:
                self.messages.append("progressive wagers accepted again: the jackpot controller is back")
            # While bets are open the offer follows the link. Once locked, the lock stands:
            # the wager was judged when bets closed.
            if self.phase == SeatPhase.OPEN:
                self._offer()
        return True

    def _offer(self) -> None:
        bets = bets_to_json(self.wagers())
        if bets != self.offered:
            self.offered = bets
            self._up("offer", {"bets": bets})

    def _on_chips(self, spot: str, uids: frozenset[str]) -> bool:
        if spot not in self.present:
            return False
        before = self.present[spot]
        self.present[spot] = uids
        arrived, left = uids - before, before - uids
        for uid in sorted(arrived):
            chip = self.registry.get(uid)
            if chip is None:
                self.alarm("unknown_chip", f"a chip the registry does not know ({uid}) on {spot}: not counted",
                           spot=spot, uid=uid)
            elif chip.status is not ChipStatus.VALID:
                self.alarm("barred_chip", f"a {chip.status} chip ({uid}) on {spot}: not counted",
                           spot=spot, uid=uid)
        added, removed = self.worth(arrived), self.worth(left)
        if self.phase == SeatPhase.OPEN:
            self._offer()
        elif self.phase in (SeatPhase.CLOSING, SeatPhase.PLAY):
            clause = self.profile.clause("bets_closed") if self.profile else ""
            if removed and spot in self.unwagered:
                self.messages.append(f"{format_amount(removed)} taken off {spot}: it was not a wager")
            elif removed:
                self.alarm("pinching", f"{format_amount(removed)} taken off {spot} after no more bets "
                           f"({clause})", spot=spot, amount=to_json_number(removed))
            if added:
                if self._addition_allowed(spot):
                    self.pending[spot] = self.pending.get(spot, Fraction(0)) + added
                    self._up("addition", {"spot": spot, "amount": to_json_number(self.pending[spot])})
                else:
                    self.alarm("past_posting", f"{format_amount(added)} added to {spot} after no more bets "
                               f"({clause})", spot=spot, amount=to_json_number(added))
        return True

    def _addition_allowed(self, spot: str) -> bool:
        """Asks the engine: is a double/split (main) or insurance on that spot's hand
        (``insurance``: hand 1, ``insurance_2``: hand 2, Switch §3.9.1) legal now?"""
        state = self.round
        if self.phase != SeatPhase.PLAY or state is None or state.is_over:
            return False
        hand = insurance_hand(spot)
        try:
            legal = state.legal_decisions(self.box, hand=hand)
        except RuleError:
            return False
        if hand is not None:
            return legal.get(Action.INSURANCE) is None
        if spot == "main":
            cur = state.hand_in_play()
            return (cur is not None and cur[0].number == self.box
                    and (legal.get(Action.DOUBLE) is None or legal.get(Action.SPLIT) is None))
        return False

    def _on_screen(self, action: str, hand: int | None) -> bool:
        if self.phase != SeatPhase.PLAY or self.round is None:
            self.messages.append(f"{action}: no round is in play")
            return True
        reason = self.round.why_not(Decision(self.box, Action(action), None, hand))
        if reason is not None:
            self.messages.append(f"{action}: {reason}")
            return True
        self._up("request", {"action": action, "hand": hand})
        return True

    # -- the table stream --------------------------------------------------------------

    def _on_message(self, m: Message, value: Any = None) -> bool:
        if m.topic == down_topic(self.table, self.box):
            if m.kind == "catchup":
                return self._on_catchup(m.body, value)
            if m.kind == "reconciled":
                return self._on_reconciled(m.body)
            if m.kind == "refused":
                self.messages.append(f"refused: {m.body['reason']}")
                if m.body.get("stage") != "offer" and m.body.get("bets") is not None:
                    self.refused_round = m.body["reason"]
                return True
            return False
        if m.topic == alarm_topic(self.table):
            return self._on_table_alarm(m.seq, dict(m.body))
        return self._on_stream(m.kind, m.body, value)

    def _on_reconciled(self, body: Mapping[str, Any]) -> bool:
        """The pit reconciled this seat's rounds (the dealer passes the supervisor's command
        on; only the dealer writes this seat's down topic, :meth:`check_message`): its behind
        flag is cleared and bets are taken again, or, not behind, the pit is told so. Each
        command once: one whose seq is not newer than the last taken is a redelivery."""
        if body["seq"] <= self.reconciled_seq:
            return False
        self.reconciled_seq = body["seq"]
        why = self.reconcile(body["by"])
        if why is None and self.phase == SeatPhase.OPEN:
            self._offer()                 # bets are taken again: the chips on the spots are offered
        said = {"error": why} if why is not None else {"verdict": "reconciled: bets are taken again"}
        self._up("reconcile_answer", {"tx": body["tx"], "ok": why is None, **said})
        return True

    def _on_table_alarm(self, seq: int, body: dict[str, Any]) -> bool:
        """A dealer's alarm (checked by :meth:`check_input`): a lasting condition is in
        force until its counterpart; any other alarm is kept for the round it names."""
        if seq == self.table_alarm_seq:
            return False                    # the same message again (a redelivery)
        self.table_alarm_seq = seq
        code = body["alarm"]
        ends = [start for start, end in TABLE_LASTING.items() if end == code]
        for start in ends:
            self.table_faults.pop(start, None)
        if code in TABLE_LASTING:
            self.table_faults[code] = body
        elif not ends:
            self.table_alarms.append(body)
        return True

    def _on_catchup(self, body: Mapping[str, Any], read: Catchup) -> bool:
        self.awaiting_catchup = False
        heard = body.get("heard") or 0
        if heard > self.seq and self.round_no and self.behind is None:
            # the dealer heard later messages from this seat than its journal holds: the
            # seat was restarted from an older copy of its state (issue #11.5)
            self.on_behind({"unit_seq": self.seq, "heard": heard})
            if self.phase == SeatPhase.OPEN:
                self._offer()             # withdraw the offer: bets are refused now
        self._missed(read.rounds, body.get("unheld"))
        if body.get("conditions") is not None:
            # the dealer's lasting conditions in force now: one raised or cleared while this
            # seat was down is as the dealer says (issue #12.9)
            self.table_faults = {c["alarm"]: dict(c) for c in body["conditions"]}
        messages = body.get("messages", [])
        if body.get("snapshot") and messages:
            # joined in the middle of a round: the dealer's record of its wagers stands
            self.last_stream = messages[0]["body"]["stream_seq"] - 1
            self.joined_round = messages[0]["body"]["round"]
        for m, value in zip(messages, read.values, strict=True):
            self._apply_stream(m["kind"], m["body"], value)
        if not messages and body["head"] > self.last_stream:
            # nothing of a round in play to catch up on: join at the head of the stream
            self.last_stream = body["head"]
        return True

    def _missed(self, rounds: Mapping[int, Round], unheld: list[int] | None) -> None:
        """Rounds that ended while the seat was down, from the dealer's record (rebuilt by
        the engine as the catch-up was read); rounds it cannot have are an alarm, never
        silence (issue #11.4)."""
        for number, state in sorted(rounds.items()):
            if number == self.round_no and self.phase in (SeatPhase.OVER, SeatPhase.VOID):
                continue                        # this seat saw it end: its own engine settled it
            self.missed_rounds[number] = state
        for old in sorted(self.missed_rounds)[:-KEEP_MISSED_ROUNDS]:
            del self.missed_rounds[old]
        if unheld:
            first, last = unheld
            which = f"round {first}" if first == last else f"rounds {first}-{last}"
            self.alarm("rounds_unreported", f"{which} ended while seat {self.box} was down and the dealer no "
                       "longer holds them: this box's reports of them (wagers, hits, results) may be "
                       "missing at the jackpot controller; reconcile them from the dealer's journal "
                       "(betbox journal show)", rounds=[first, last])

    def _on_stream(self, kind: str, body: Mapping[str, Any], value: Any) -> bool:
        seq = body["stream_seq"]
        if seq <= self.last_stream:
            if kind == "dealer_boot":
                # a dealer restarted behind what this seat heard (from an older copy of its
                # state): the hello tells it so (a redelivered boot only asks a catch-up again)
                self._hello()
                return True
            return False
        if seq != self.last_stream + 1:
            if self.awaiting_catchup:
                return False            # the catch-up the dealer is preparing holds it
            self._hello()
            return True
        self._apply_stream(kind, body, value)
        return True

    def _apply_stream(self, kind: str, body: Mapping[str, Any], value: Any) -> None:
        """One stream message in order; ``value`` is what reading it gave (the engine
        event, the round a round_open opens: :func:`~firmware.runtime.wire.read_stream_message`)."""
        seq = body["stream_seq"]
        if seq != self.last_stream + 1:
            return
        self.last_stream = seq
        if kind == "round_open":
            self._round_open(body, value)
        elif kind == "bets_closing":
            if body["round"] == self.round_no and self.phase == SeatPhase.OPEN:
                self.phase = SeatPhase.CLOSING
                self.locked = self.wagers()
                for spot, uids in self.present.items():
                    if self.worth(uids) > 0 and self.reader_refusal is not None:
                        self.unwagered[spot] = self.reader_refusal
                    elif self.worth(uids) > 0 and self.spot_faults.get(spot) == self.round_no:
                        self.unwagered[spot] = "antenna_fault"
                if self.not_verified is not None:
                    for spot, uids in self.present.items():
                        if self.worth(uids) > 0:
                            self.unwagered[spot] = "not_verified"
                refused = self.progressive_refusal
                if refused is not None and self.worth(self.present.get("progressive", ())) > 0:
                    self.unwagered["progressive"] = refused
                    self.messages.append("the chips on progressive are not a wager this round: the link "
                                         "to the jackpot controller is down")
                self._up("lock", {"bets": bets_to_json(self.locked)})
        elif kind == "bets_not_taken":
            if body["round"] == self.round_no and self.box in body["boxes"]:
                self._not_taken(body["reason"])
        elif kind == "event":
            if body["round"] == self.round_no and self.round is not None:
                self._event(body["event"], value)
        elif kind == "dealer_boot":
            self._hello()
        elif kind == "round_result":
            if body["round"] == self.round_no:
                self.dealer_result = as_json_value(body["settlement"]["boxes"].get(str(self.box)))
                self._compare()

    def _not_taken(self, reason: str) -> None:
        """Bets closed without this box: whatever is on its spots is not a wager."""
        self.bets_not_taken = reason
        for spot, uids in self.present.items():
            if self.worth(uids) > 0:
                self.unwagered.setdefault(spot, "bets_not_taken")
        self.locked = {}
        self.messages.append("bets not taken: this seat did not lock its bets in time"
                             if reason == "lock_timeout" else "bets not taken: the dealer closed bets "
                             "without this seat")

    def _round_open(self, body: Mapping[str, Any], state: Round) -> None:
        self.profile = state.profile
        self.round_no = body["round"]
        self.round = state
        self.phase = SeatPhase.OPEN
        self.offered = None
        self.locked, self.pending = {}, {}
        self.own_result = self.dealer_result = None
        self.refused_round = None
        self.unwagered = {}
        self.bets_not_taken = None
        self.messages.clear()
        if self.progressive_refusal is not None and "progressive" in self.present:
            self.messages.append("progressive wagers refused: the link to the jackpot controller is down")
        if any(d["kind"] == "chip_reader" for d in self.devices_down.values()) or (
                self.reader_lost_round == self.round_no):
            self._reader_lost()
            return
        for spot, spoils in self.spot_faults.items():
            if spoils == self.round_no and self.worth(self.present.get(spot, ())) > 0:
                self.unwagered[spot] = "antenna_fault"
        self._offer()

    def _event(self, data: dict[str, Any], event: Event) -> None:
        before = self.live
        try:
            self.round, _ = before.apply(event)
        except RuleError as exc:
            self.alarm("integrity", f"this seat's engine refuses the dealer's event {data}: {exc}")
            return
        if isinstance(event, BetsClosed):
            self.phase = SeatPhase.PLAY
            mine = bets_to_json(event.as_dict().get(self.box, {}))
            if self.joined_round == self.round_no:
                self.locked = event.as_dict().get(self.box, {})
            elif (mine != bets_to_json(self.locked) and self.refused_round is None
                  and self.bets_not_taken is None):
                self.alarm("integrity", f"the dealer closed bets with {mine} for this box; it locked "
                           f"{bets_to_json(self.locked)}", box=self.box)
        elif isinstance(event, Decision) and event.box == self.box:
            self._consume_addition(before, event)
        self._check_pending()
        if self.round.is_over:
            self.phase = SeatPhase.VOID if self.round.phase == Phase.VOID else SeatPhase.OVER
            own = box_settlement(self.round, self.box)
            self.own_result = as_json_value(None if own is None else own.to_json())
            self._up("result", {"settlement": self.own_result})
            self._compare()

    def _consume_addition(self, before: Round, d: Decision) -> None:
        if d.action in (Action.DOUBLE, Action.SPLIT):
            in_play = before.hand_in_play()
            assert in_play is not None          # the engine took this decision: a hand is in play
            _, hand = in_play
            need = (d.amount if d.amount is not None else hand.stake) if d.action == Action.DOUBLE else hand.stake
            spot = "main"
        elif d.action == Action.INSURANCE:
            assert d.amount is not None         # the engine takes no insurance without its amount
            need, spot = d.amount, insurance_spot(d.hand)
        else:
            return
        got = self.pending.pop(spot, Fraction(0))
        if spot not in self.present:
            return                      # no antenna for it at this seat
        if got != need:
            self.alarm("addition_mismatch", f"{d.action} needs {format_amount(need)} on {spot}; "
                       f"{format_amount(got)} was added", spot=spot)

    def _check_pending(self) -> None:
        state = self.live
        main = self.pending.get("main")
        if main:
            cur = state.hand_in_play()
            if state.is_over or cur is None or cur[0].number != self.box:
                self.pending.pop("main")
                self.alarm("past_posting", f"{format_amount(main)} added to main without a double or split")
        for spot in [s for s in self.pending if insurance_hand(s) is not None]:
            if not state.offers_open:
                ins = self.pending.pop(spot)
                self.alarm("past_posting", f"{format_amount(ins)} on {spot} was never taken as insurance",
                           spot=spot)

    def _compare(self) -> None:
        if self.own_result is None or self.dealer_result is None:
            return
        if self.own_result != self.dealer_result:
            self.alarm("integrity", f"round {self.round_no}: this seat's settlement differs from the dealer's",
                       seat=self.own_result, dealer=self.dealer_result)

    # -- lamps and screen --------------------------------------------------------------

    def lamp_wanted(self) -> dict[str, bool]:
        progressive = (self.phase == SeatPhase.OPEN and self.profile is not None and self.not_verified is None
                       and self.profile.progressive is not None and "progressive" in self.present
                       and self.progressive_refusal is None)
        return {"progressive": progressive, "bets_locked": self.phase in (SeatPhase.CLOSING, SeatPhase.PLAY)}

    def after_step(self) -> None:
        if self.replaying:
            return
        if self.lamps is not None and not self.lamps.closed:
            for lamp, on in self.lamp_wanted().items():
                if lamp in self.lamps.lamps and self.lamps.state(lamp) != (LAMP_ON if on else LAMP_OFF):
                    (self.lamps.on if on else self.lamps.off)(lamp)
        self._facts = self.facts()

    def at_round_boundary(self) -> bool:
        return self.phase in (SeatPhase.IDLE, SeatPhase.OVER, SeatPhase.VOID) and not self.awaiting_catchup and not self.pending

    def after_recover(self) -> None:
        # the debouncer starts empty: chips still on the spots are sensed again and any
        # difference from the journal is judged like any other change
        self.debouncer.clear()
        self.not_verified = None        # a past start's verification: this start verifies again

    def facts(self) -> SeatFacts:
        """The seat as its screen needs it, frozen now (cheap: no engine question asked)."""
        self._alarm_mark = alarm_mark(self._alarm_mark, self._mark_round, self.round_no, self.phase,
                                      len(self.alarms))
        self._mark_round = self.round_no
        return SeatFacts(
            box=self.box, round_no=self.round_no, phase=self.phase, round=self.round, profile=self.profile,
            spots=self.spots, present=dict(self.present), registry=self.registry, wagers=self.wagers(),
            locked=dict(self.locked), refused_round=self.refused_round, unwagered=dict(self.unwagered),
            bets_not_taken=self.bets_not_taken, progressive_refusal=self.progressive_refusal,
            controller=self.controller, messages=tuple(self.messages[-8:]), alarms=tuple(self.alarms),
            alarm_total=len(self.alarms), alarm_mark=self._alarm_mark, table_faults=dict(self.table_faults),
            table_alarms=tuple(self.table_alarms),
            lamps=tuple((k, "on" if v else "off") for k, v in self.lamp_wanted().items()),
            conditions=unit_conditions(self))

    @property
    def view(self) -> SeatView:
        """What the screen shows, as of the last step: built from that step's snapshot the
        first time it is read (from any thread: the snapshot is frozen), then kept."""
        facts, built = self._facts, self._view
        if built is None or built[0] is not facts:
            built = (facts, build_seat_view(facts))
            self._view = built
        return built[1]


def unit_conditions(seat: SeatUnit) -> tuple[str, ...]:
    """The seat's unit conditions in force, as codes (``CONDITIONS`` order). Read from the
    seat's state only; cheap, so the screen may ask again when the bus link changes."""
    found: set[str] = set()
    # the seat's own MQTT link (MqttBus.connected; an in-process bus has none: always up)
    broker_down = getattr(seat.bus, "connected", True) is False
    if broker_down:
        found.add("broker_down")
    # a restarted seat replaying its journal, or catching up on a stream it has played
    catching_up = seat.awaiting_catchup
    history = bool(seat.round_no or seat.last_stream)
    if seat.replaying or (catching_up and history):
        found.add("recovering")
    elif catching_up and not broker_down:
        found.add("no_dealer")          # said hello; no dealer has answered with its stream
    if seat.controller.link == "down" and "progressive" in seat.spots:
        found.add("jackpot_link_down")  # a seat without a progressive spot misses nothing
    # device links: the seat's own chip reader; the dealer's shoe and console (table faults)
    if any(d.get("kind") == "chip_reader" for d in seat.devices_down.values()) or (
            seat.round_no and seat.round_no in seat.spot_faults.values()
            and seat.phase in (SeatPhase.OPEN, SeatPhase.CLOSING)):
        found.add("reader_down")
    found.update(code for code in ("shoe_down", "console_down") if code in seat.table_faults)
    if seat.storage_low or seat.halted:   # state partition low/full
        found.add("storage_low")
    if seat.behind is not None:
        found.add("behind_confirmed")   # restarted from an older copy: bets refused
    if seat.not_verified is not None:
        found.add("not_verified")       # betbox verify failed at start: no bets taken
    return tuple(c for c in CONDITIONS if c in found)
