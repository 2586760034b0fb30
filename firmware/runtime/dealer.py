"""The dealer unit: the one writer of the table's ordered event stream.

It reads the shoe and the dealer console, collects each seat's locked wagers at "no more
bets", and publishes every engine event with a gap-free stream sequence number and the
round id. What the engine refuses, it refuses, and says why (the engine's reason and clause).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Callable, Mapping

from firmware.engine.cards import ShoeComposition, parse_card
from firmware.engine.errors import RuleError
from firmware.engine.events import Action, BetsClosed, CardDrawn, Decision, VoidRound, WalkedAway, event_to_dict
from firmware.engine.money import parse_amount, to_json_number
from firmware.engine.profile import Profile
from firmware.engine.round import Round
from firmware.engine.settlement import settlement
from hal.events import ButtonPressed, CardKeyed, HalEvent, ShoeSignal, ShoeSignalKind, TechnicianKey
from hal.events import CardDrawn as HalCard
from hal.ports import LAMP_OFF, LAMP_ON, Lamps, LampState

from .bus import (
    Bus,
    Message,
    alarm_topic,
    console_topic,
    down_topic,
    pit_command_topic,
    pit_response_topic,
    stream_topic,
    up_topic,
)
from .journal import Journal
from .phases import DealerPhase, SeatPhase
from .software import software_input
from .spots import insurance_hand, insurance_spot, seat_spots
from .unit import BEHIND, LOST, RECONCILED, AlreadyAnswered, Input, InputRefused, Recent, Unit, UnitState
from .wire import (
    NEVER_HEARD,
    TABLE_LASTING,
    ControllerStatus,
    as_json_value,
    bets_from_json,
    bets_to_json,
    by_problem,
    check_table_alarm,
    check_up_message,
    controller_input,
    limits_to_json,
    round_to_json,
    shoe_to_json,
    tx_problem,
)

TURN_BUTTONS = {"hit": Action.HIT, "stand": Action.STAND, "double": Action.DOUBLE,
                "split": Action.SPLIT, "switch": Action.SWITCH}
KEEP_RESULTS = 16
CLOSE_WAIT = 5.0          # seconds a seat has to lock its bets after "no more bets"
#: the console's technician key as a journalled button input ("technician_key" / "..._off")
TECHNICIAN_KEY = "technician_key"
#: The dealer console's lamps ([hardware.lamps], optional; docs/technician.md): ``pit_call``
#: flashes while a pit alarm is in force, ``round_open`` is lit while bets are open,
#: ``no_more_bets`` from "no more bets" until the round is over.
DEALER_LAMPS = ("pit_call", "round_open", "no_more_bets")
PIT_CALL_BLINK = LampState("blink", 0.5, 0.5, None)
#: Alarms that call the pit (issue #14.4): the player is only asked to wait, the pit must
#: come and judge. Chips: past posting and pinching (rws-blackjack-v5 §3.10), a chip the
#: registry does not know or has barred, an addition that does not match its decision, a
#: settlement the seat and the dealer disagree on. Cards: a card drawn while bets are open,
#: a duplicate frame, a shuffle in a round, a technical interruption (§5.4; cards to
#: reconcile or a round voided), bets closed without a seat. Each calls the pit until the
#: next round opens (the dealer opens it once the pit has seen to it).
PIT_CALLS = frozenset({
    "past_posting", "pinching", "unknown_chip", "barred_chip", "addition_mismatch", "integrity",
    "card_while_betting", "duplicate_card", "shuffle_in_round", "interruption_continue",
    "interruption_void", "seats_missing", "foreign_card",
    # a replayed SHUFFLED frame on the shoe's line (hal: someone on the serial line)
    "shoe_replayed_shuffle",
    # reports a jackpot controller restored from an older copy lost: money to reconcile
    "controller_lost_reports",
    # one seat says the dealer lost stream it dealt: the dealer restored, or the seat forged
    "stream_claimed"})
#: The lasting table conditions that call the pit while they last (the shoe's door open:
#: the cards may have been reached); a jam or a lost link is the technician's (seats say so).
PIT_LASTING = frozenset({"shoe_door_opened"})
#: What one seat's credentials can make the dealer journal (docs/runtime.md "What one seat
#: can make the dealer write"). A seat's message is at most MAX_UP_BYTES of JSON (its
#: largest, an alarm, is ~2.2 KB). A hello whose catch-up is journalled already (the box's
#: last hello said again, the table and the box as that step left them) is answered by
#: re-sending that catch-up; a box gets at most CATCHUPS_PER_ROUND new catch-ups a round and
#: one more for each stream message of the round. Its other messages, with what the dealer
#: sends because of them, are journalled up to SEAT_BYTES_PER_ROUND a round (a seat sends
#: ~2 KB in a round). Beyond them a seat's messages are refused until the next round opens.
MAX_UP_BYTES = 8 * 1024
CATCHUPS_PER_ROUND = 16
SEAT_BYTES_PER_ROUND = 256 * 1024
#: A box's catch-up is re-sent at most RESENDS_PER_SECOND times a second, RESEND_BURST at
#: once (a bucket on the monotonic clock): a seat's link reconnects at most once a second,
#: and a flood of hellos would have the dealer publish a catch-up for each faster than the
#: broker takes them (paho holds them in memory). A re-send changes nothing, so the clock
#: may decide it: live only, never in a replay.
RESEND_BURST = 8
RESENDS_PER_SECOND = 2.0


@dataclass(frozen=True)
class Answered:
    """A box's last journalled hello and the catch-up that answered it: the hello's body
    (canonical JSON) and seq, the table as the catch-up was made and the box's part of the
    dealer's state after the step. Made by the step, live and in a replay (not checkpointed:
    a restart from a checkpoint makes the next hello a step again)."""

    hello: str
    seq: int
    catchup: Message
    table: tuple[Any, ...]
    seat: tuple[Any, ...]


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def keyed_card_input(body: Any) -> dict[str, str]:
    """A card keyed in: ``{"card": "AS"}`` (rank A 2-9 T J Q K, suit S H D C), with ``by``
    saying where (``console``, or ``pit:<supervisor>`` for the pit command)."""
    if (not isinstance(body, dict) or "card" not in body or not set(body) <= {"card", "by"}
            or not isinstance(body["card"], str) or not isinstance(body.get("by", ""), str)
            or len(body.get("by", "")) > 80):
        raise ValueError(f"a keyed card is {{'card': 'AS'}}, not {body!r:.200}")
    card = {"card": str(parse_card(body["card"]))}
    return card | {"by": body["by"]} if "by" in body else card


#: Why a pit supervisor may void a round (rws-blackjack-v5 §5.4.2, §5.5.1-§5.5.4): the
#: engine still decides (an interruption voids only while no outcome is established).
PIT_VOID_REASONS = ("interruption", "foreign_card", "card_count", "insufficient_cards", "not_shuffled")
PIT_COMMANDS = ("key_card", "void_round", "acknowledge", "reconciled")
#: The largest box number a table's topics carry (``seat/<1-999>/up``).
MAX_BOX = 999
#: How much further than this dealer's own stream a seat may say it heard (a dealer restored
#: from an older copy lost at most this many stream messages: years of a busy table). A
#: hello past it is no stream this table dealt (one seat's credentials, forging): refused,
#: or it would flag the dealer behind and, once reconciled, push its stream past MAX_COUNT,
#: where every seat refuses it.
MAX_STREAM_LOST = 2 ** 40
#: The alarm of one seat saying it heard more of the dealer's stream than the dealer holds
#: (a dealer restored from an older copy, or that seat's credentials misused): a pit call.
STREAM_CLAIMED = "stream_claimed"


def pit_command(kind: str, body: Any) -> dict[str, Any]:
    """A pit command's body, checked: ``tx`` (the answer echoes it), ``by`` (who), then
    ``card`` (key_card), ``round`` and ``reason`` (void_round) or ``box`` (reconciled: a box
    number, or null for the dealer itself). ValueError names what is wrong."""
    if kind not in PIT_COMMANDS:
        raise ValueError(f"pit command {kind!r:.40}: the pit may {' or '.join(PIT_COMMANDS)}")
    fields = {"key_card": {"tx", "by", "card"}, "void_round": {"tx", "by", "round", "reason"},
              "acknowledge": {"tx", "by"}, "reconciled": {"tx", "by", "box"}}[kind]
    if not isinstance(body, dict) or set(body) != fields:
        got = sorted(body) if isinstance(body, dict) else body
        raise ValueError(f"pit {kind}: the body has {sorted(fields)}, not {got!r:.80}")
    tx, by = body["tx"], body["by"]
    problem = tx_problem(tx, f"pit {kind}") or by_problem(by, f"pit {kind}")
    if problem is not None:
        raise ValueError(problem)
    if kind == "acknowledge":
        return {"tx": tx, "by": by}
    if kind == "reconciled":
        box = body["box"]
        if box is not None and (isinstance(box, bool) or not isinstance(box, int) or not 1 <= box <= MAX_BOX):
            raise ValueError(f"pit reconciled: box must be a box number (1-{MAX_BOX}) or null for the dealer, "
                             f"not {box!r:.40}")
        return {"tx": tx, "by": by, "box": box}
    if kind == "key_card":
        if not isinstance(body["card"], str):
            raise ValueError(f"pit key_card: card must be a card like '7C', not {body['card']!r:.40}")
        return {"tx": tx, "by": by, "card": str(parse_card(body["card"]))}
    number, reason = body["round"], body["reason"]
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number < 2 ** 53:
        raise ValueError(f"pit void_round: round must be a round number, not {number!r:.40}")
    if reason not in PIT_VOID_REASONS:
        raise ValueError(f"pit void_round: reason {reason!r:.40} is not one the rules let the pit void for "
                         f"({', '.join(PIT_VOID_REASONS)})")
    return {"tx": tx, "by": by, "round": number, "reason": reason}


def clock_reading(body: Any) -> dict[str, float]:
    """A ``tick`` input: ``{"now": seconds}`` from the unit's monotonic clock. The clock is
    an input like a card, so a replay decides exactly as the live unit did."""
    if not isinstance(body, dict) or set(body) != {"now"}:
        raise ValueError(f"a tick is {{'now': seconds}}, not {body!r}")
    now = body["now"]
    if isinstance(now, bool) or not isinstance(now, (int, float)) or now != now or now in (
            float("inf"), float("-inf")):
        raise ValueError(f"tick: now must be a finite number of seconds, not {now!r}")
    return {"now": float(now)}


@dataclass(eq=False, repr=False)
class DealerState(UnitState):
    """The dealer's state: what its checkpoint holds (one codec: firmware/runtime/codec.py)."""

    closing_since: float | None = None          # clock reading when the wait for locks began
    # §5.4.1: cards the shoe dealt unseen while play continues. They are keyed in at the
    # console; shoe cards that come meanwhile are held and follow them in order.
    owed: int = 0
    held: list[str] = field(default_factory=list)
    meter: Fraction | None = None               # the meter the next round opens with
    controller: ControllerStatus = NEVER_HEARD
    round_no: int = 0
    round: Round | None = None
    phase: DealerPhase = DealerPhase.IDLE
    stream_seq: int = 0
    round_stream: list[Any] = field(default_factory=list)
    shoe: ShoeComposition = field(default_factory=lambda: ShoeComposition.of_decks(1))   # set from decks
    shoe_counter: int = 0
    shoe_number: int = 0                        # shuffles seen: which shoe this is
    offers: dict[int, dict[str, Fraction]] = field(default_factory=dict)
    locks: dict[int, dict[str, Fraction]] = field(default_factory=dict)
    additions: dict[int, dict[str, Fraction]] = field(default_factory=dict)
    requests: dict[int, list[tuple[Action, int | None]]] = field(default_factory=dict)
    waiting: set[int] = field(default_factory=set)
    online: set[int] = field(default_factory=set)
    seat_seq: dict[str, int] = field(default_factory=dict)
    results: dict[int, Any] = field(default_factory=dict)          # round -> settlement
    # the newest rounds over (as the engine holds them): a seat that was down when one
    # ended gets it in its catch-up and reports it (issue #11.4; format 3 on)
    past_rounds: dict[int, Round] = field(default_factory=dict)
    # the table's lasting conditions in force (shoe jam, door open): the alarm that
    # raised each, as published; a returning seat gets them in its catch-up (format 3 on)
    table_faults: dict[str, dict[str, Any]] = field(default_factory=dict,
                                                    metadata={"read": "_table_faults_from_json"})
    refusals: Recent = field(default_factory=Recent)    # the newest; len() counts them all
    # the pit alarms raised and not yet acknowledged by the pit (code -> how many): the
    # console's pit_call lamp flashes while any is (or a PIT_LASTING condition) in force
    pit_calls: dict[str, int] = field(default_factory=dict)
    # the pit's reconciled commands passed on to a seat and not yet answered by it: box ->
    # the command's tx (the seat's answer is the pit's answer; format 6 on)
    reconciling: dict[int, str] = field(default_factory=dict)
    # seats whose hello says they heard more of this dealer's stream than it holds, not yet
    # corroborated: box -> the stream seq it heard. One seat's word does not stop the table
    # (its credentials could be misused); a second seat's, or the controller's mark (the
    # outbox behind), flags the dealer behind (format 6 on)
    stream_claims: dict[int, int] = field(default_factory=dict)

    @property
    def live(self) -> Round:
        """The round in play: a unit past "idle" always has one (the phases say so)."""
        assert self.round is not None, "no round in play"
        return self.round


class DealerUnit(Unit, DealerState):
    role = "dealer"
    accepts_controller = True

    def __init__(self, unit_id: str, table: str, bus: Bus, journal: Journal, profile: Profile,
                 decks: int | None = None, limits: Mapping[str, tuple[Fraction, Fraction]] | None = None,
                 meter: Fraction | None = None, close_wait: float | None = CLOSE_WAIT,
                 lamps: Lamps | None = None) -> None:
        super().__init__(unit_id, table, bus, journal)
        self.lamps = lamps                       # the console's lamps (DEALER_LAMPS), if fitted
        if close_wait is not None and not 0 < close_wait <= 600:
            raise ValueError(f"close_wait {close_wait!r}: seconds above 0 and at most 600, or None")
        # seats that have not locked this long after "no more bets" are closed without
        # their wagers (None: wait for every seat, the dealer may press again)
        self.close_wait = close_wait
        self.profile = profile
        self.decks = profile.default_decks if decks is None else decks
        self.limits = dict(limits or {})
        self.meter = meter                       # the meter the next round opens with
        Round.new(profile, decks=self.decks, limits=self.limits, meter=meter)  # validates now
        self.shoe = ShoeComposition.of_decks(self.decks)
        self.finished: list[Round] = []                   # rounds over since the last take_finished()
        # what each box's seat had journalled this round (its hellos; the bytes of its other
        # messages and of the dealer's because of them) and its last hello answered: made by
        # the steps, so a replay makes them again
        self.catchups_in_round: dict[int, int] = {}
        self.bytes_in_round: dict[int, int] = {}
        self.answered: dict[int, Answered] = {}
        self.clock: Callable[[], float] = time.monotonic    # the re-sends' bucket (not state)
        self._resends: dict[int, tuple[float, float]] = {}   # box -> (tokens, clock then)
        bus.subscribe(up_topic(table, "+"), self.post, unit_id)
        bus.subscribe(pit_command_topic(table), self.post, unit_id)

    # -- inputs ------------------------------------------------------------------------

    def translate(self, item: Any) -> list[tuple[str, dict[str, Any]]]:
        if isinstance(item, HalCard):
            return [("card", {"card": item.card, "counter": item.counter})]
        if isinstance(item, ShoeSignal):
            named = {"card": item.card} if item.card is not None else {}
            return [("shoe", {"signal": str(item.kind), "counter": item.counter, **named})]
        if isinstance(item, ButtonPressed):
            return [("button", {"button": str(item.button)})]
        if isinstance(item, CardKeyed):
            return [("keyed_card", {"card": item.card, "by": "console"})]
        if isinstance(item, TechnicianKey):        # journalled like the buttons
            return [("button", {"button": TECHNICIAN_KEY if item.on else TECHNICIAN_KEY + "_off"})]
        if isinstance(item, HalEvent):
            return self.device_event(item)    # link lost / restored; releases, key turns: nothing
        if isinstance(item, tuple) and len(item) == 2 and item[0] == "controller":
            return [("controller", controller_input(item[1]).to_json())]
        if isinstance(item, tuple) and len(item) == 2 and item[0] == "keyed_card":
            return [("keyed_card", keyed_card_input(item[1]))]
        if isinstance(item, tuple) and len(item) == 2 and item[0] == "tick":
            return [("tick", clock_reading(item[1]))]
        if isinstance(item, tuple) and len(item) == 2 and item[0] == "software":
            return [("software", software_input(item[1]))]
        return super().translate(item)

    def current_round(self) -> int | None:
        return self.round_no or None

    def read(self, taken: Input) -> Input:
        """The dealer's inputs read once: a controller status, a keyed card, a clock
        reading, a verification result (each checked as it is read)."""
        readers = {"controller": controller_input, "keyed_card": keyed_card_input, "tick": clock_reading,
                   "software": software_input}
        if taken.kind in readers:
            return replace(taken, value=readers[taken.kind](taken.body))
        return taken

    def handle(self, taken: Input) -> bool:
        kind, body, value = taken.kind, taken.body, taken.value
        if kind == "card":
            self._on_card(body["card"], body.get("counter"))
        elif kind == "shoe":
            self._on_shoe(body["signal"], body.get("counter"), body.get("card"))
        elif kind == "button":
            self._on_button(body["button"])
        elif kind == "msg":
            assert taken.message is not None
            return self._on_message(taken.message)
        elif kind == "controller":
            return self._on_controller(value)
        elif kind == "keyed_card":
            self._on_keyed_card(value["card"], value.get("by"))
        elif kind == "tick":
            return self._on_tick(value["now"])
        elif kind == "device":
            return self.on_device(body)
        elif kind == BEHIND:
            if self.behind is not None and "seat_heard" in self.behind and "seat_heard" not in body:
                # behind what a seat heard of its stream already: that mark stands (the reconciled
                # dealer's stream goes on after it); the outbox's own mark is reconciled with it
                return False
            return self.on_behind(body)
        elif kind == LOST:
            return self.on_lost(body)
        elif kind == "software":
            return self.on_software(value)
        elif kind == "boot":
            # seats re-send what the dealer may have lost (offers, locks, additions); a
            # clock reading from before the restart means nothing now: the wait starts again
            self.closing_since = None
            self._stream("dealer_boot", {})
            self.devices_reopened()
        else:
            raise ValueError(f"dealer: unknown input {kind!r}")
        return True

    # -- refusing what is malformed or forged --------------------------------------------

    def check_message(self, m: Message) -> None:
        if m.topic == pit_command_topic(self.table):
            if m.sender != "pit" and not m.sender.startswith("pit/"):
                raise InputRefused(f"pit command from {m.sender!r:.80}: only the pit (user 'pit') commands the table")
            pit_command(m.kind, m.body)
            return
        found = re.fullmatch(re.escape(up_topic(self.table, 0)).replace("/0/", "/([1-9][0-9]{0,2})/"), m.topic)
        if found is None:
            raise InputRefused(f"{m.kind!r} on {m.topic!r}: not a seat's topic at table {self.table}")
        box = int(found.group(1))
        owner = f"{self.table}/seat-{box}"
        if m.sender != owner:
            raise InputRefused(f"{m.kind!r} for box {box} from {m.sender!r}: only {owner!r} speaks for box {box}")
        if m.body.get("box") != box:
            raise InputRefused(f"{m.kind!r} from {owner!r} names box {m.body.get('box')!r} in its body, not {box}")
        problem = check_up_message(m.kind, m.body, owner)
        if problem is not None:
            raise InputRefused(problem)
        if m.kind == "hello" and m.body["last_stream_seq"] > self.stream_seq + MAX_STREAM_LOST:
            raise InputRefused(f"hello from box {box}: it says it heard stream seq {m.body['last_stream_seq']}, more "
                               f"than {MAX_STREAM_LOST} past this dealer's {self.stream_seq}: no stream it dealt")
        self._check_spots(m, box)
        if m.kind == "request":
            self._check_request(m.body, box)
        self._check_flood(m, box)

    def _check_flood(self, m: Message, box: int) -> None:
        """Bound what one seat can make the dealer journal: a hello already answered is
        answered again (:class:`AlreadyAnswered`); past the box's budget of the round, refused."""
        size = len(json.dumps(m.body, separators=(",", ":")))
        if size > MAX_UP_BYTES:
            raise InputRefused(f"{m.kind}: {size} bytes, larger than the {MAX_UP_BYTES} a seat's message may be")
        if m.kind != "hello":
            used = self.bytes_in_round.get(box, 0)
            if used >= SEAT_BYTES_PER_ROUND:
                raise InputRefused(f"{m.kind}: box {box} has had {used} bytes journalled in round {self.round_no}, "
                                   f"past the {SEAT_BYTES_PER_ROUND} a box may: refused until the next round opens")
            return
        again = self._already_answered(m, box)
        if again is not None and not self._may_resend(box):
            raise InputRefused(f"hello: box {box}'s catch-up (seq {again.seq}) is re-sent at most "
                               f"{RESENDS_PER_SECOND:g} times a second ({RESEND_BURST} at once): not again now")
        if again is not None:
            raise AlreadyAnswered(again, f"hello from box {box}: its catch-up (seq {again.seq}) is journalled")
        used, most = self.catchups_in_round.get(box, 0), CATCHUPS_PER_ROUND + len(self.round_stream)
        if used >= most:
            raise InputRefused(f"hello: box {box} has had {used} new catch-ups in round {self.round_no}, the most a "
                               f"box gets ({CATCHUPS_PER_ROUND} and one for each stream message of the round): "
                               "answered again when the table moves or the next round opens")

    def _already_answered(self, m: Message, box: int) -> Message | None:
        """The catch-up journalled for the box's last hello, if this hello says the same,
        newer than all heard from the seat (or that hello again), and the table and the box
        are as that step left them: a step would make the same catch-up (but for ``heard``:
        the seq heard before that hello, lower than this hello's, which a seat takes the same
        way) and change nothing else. A seat's hello seq below what was heard (a replaced or
        restored seat) is always a step: it resets the seq, and ``heard`` tells it."""
        last, heard = self.answered.get(box), self.seat_seq.get(m.sender, 0)
        if (last is None or m.seq < heard or m.seq == heard != last.seq
                or last.table != self._table_moment() or last.seat != self._seat_moment(box)
                or last.hello != _canon(m.body)):
            return None
        return last.catchup

    def _may_resend(self, box: int) -> bool:
        """Take a token from the box's bucket of re-sends (live only: nothing is changed)."""
        now = self.clock()
        tokens, then = self._resends.get(box, (float(RESEND_BURST), now))
        tokens = min(float(RESEND_BURST), tokens + max(now - then, 0.0) * RESENDS_PER_SECOND)
        self._resends[box] = (tokens - 1 if tokens >= 1 else tokens, now)
        return tokens >= 1

    def _table_moment(self) -> tuple[Any, ...]:
        """What a catch-up is made of besides the hello: the stream (the rounds over end on
        it), the round and its phase, the conditions in force."""
        return self.stream_seq, self.round_no, str(self.phase), _canon(self.table_faults)

    def _seat_moment(self, box: int) -> tuple[Any, ...]:
        """What a hello sets for its box: online, waited for, its offer, lock, additions."""
        return (box in self.online, box in self.waiting, repr(sorted(self.offers.get(box, {}).items())),
                repr(sorted(self.locks.get(box, {}).items())), repr(sorted(self.additions.get(box, {}).items())))

    def _check_spots(self, m: Message, box: int) -> None:
        """A seat adds chips only on a spot it has: any other name would be kept as one of
        the box's additions (and read as an insurance spot when the dealer offers it)."""
        named = ([m.body["spot"]] if m.kind == "addition"
                 else list(m.body.get("pending") or ()) if m.kind == "hello" else [])
        own = seat_spots(self.profile)
        for spot in named:
            if spot not in own:
                raise InputRefused(f"{m.kind}: spot {spot!r:.60} is not one of seat {box}'s spots "
                                   f"({', '.join(own)})")

    def _check_request(self, body: Mapping[str, Any], box: int) -> None:
        """A request waits for the dealer's button, once per action and hand of the box: a
        repeat, or a hand the box cannot have, is refused (a seat's flood of them, each
        kept, made the button's one step refuse every copy: seconds to minutes, the table
        deaf meanwhile)."""
        hand, hands = body.get("hand"), self.profile.hands_per_box
        if hand is not None and hand > hands:
            raise InputRefused(f"request: box {box} has no hand {hand} (a box has {hands} initial hand(s) here)")
        if (self.phase == DealerPhase.PLAY and body.get("round") == self.round_no
                and (Action(body["action"]), hand) in self.requests.get(box, ())):
            raise InputRefused(f"request: box {box} has asked for {body['action']} already (hand {hand}); "
                               "it waits for the dealer's button")

    # -- checkpoints -------------------------------------------------------------------

    def profile_of(self, name: str) -> Profile:
        return self._own_profile(name)

    def state_added(self) -> dict[str, Any]:
        # the rounds over and the table's conditions came with checkpoint format 3
        return {**super().state_added(), "past_rounds": (3, dict), "table_faults": (3, dict),
                "pit_calls": (5, dict), "reconciling": (6, dict), "stream_claims": (6, dict)}

    def _table_faults_from_json(self, value: Any) -> dict[str, dict[str, Any]]:
        if not isinstance(value, dict) or not set(value) <= set(TABLE_LASTING):
            raise ValueError(f"table faults are lasting conditions {sorted(TABLE_LASTING)}, not {value!r:.80}")
        for code, entry in value.items():
            problem = check_table_alarm("alarm", entry if isinstance(entry, dict) else {}, self.unit_id)
            if problem is not None or entry.get("alarm") != code:
                raise ValueError(f"table fault {code!r}: {problem or 'holds another alarm'}")
        return {code: dict(entry) for code, entry in value.items()}

    def _own_profile(self, name: str) -> Profile:
        if name != self.profile.name:
            raise ValueError(f"the round was played with {name!r}; this dealer is configured for "
                             f"{self.profile.name!r}")
        return self.profile

    # -- stream ------------------------------------------------------------------------

    def _stream(self, kind: str, body: dict[str, Any]) -> None:
        self.stream_seq += 1
        full = {"round": self.round_no, "stream_seq": self.stream_seq, **body}
        message = self.emit(stream_topic(self.table), kind, full)
        self.round_stream.append(message.to_dict())

    def _apply(self, event) -> bool:
        try:
            new, _ = self.live.apply(event)
        except RuleError as exc:
            self._refuse(str(exc), getattr(exc, "clause", None), event=event_to_dict(event))
            return False
        self.round = new
        self._stream("event", {"event": event_to_dict(event)})
        if new.is_over and (new.void_reason or "").startswith("foreign_card"):
            self._call_pit("foreign_card")        # §5.5.1: a card this shoe cannot hold
        if new.is_over:
            result = as_json_value(settlement(new))
            self.results[self.round_no] = result
            for old in sorted(self.results)[:-KEEP_RESULTS]:
                del self.results[old]
            self._stream("round_result", {"settlement": result})
            self.past_rounds[self.round_no] = new
            for old in sorted(self.past_rounds)[:-KEEP_RESULTS]:
                del self.past_rounds[old]
            self.shoe = new.shoe
            self.phase = DealerPhase.IDLE
            self.owed, self.held = 0, []
            self.finished.append(new)
        return True

    def _refuse(self, reason: str, clause: str | None = None, box: int | None = None, **extra: Any) -> None:
        entry = {"round": self.round_no, "reason": reason, "clause": clause, "box": box, **extra}
        self.refusals.append(entry)
        topic = down_topic(self.table, box) if box is not None else console_topic(self.table)
        self.emit(topic, "refused", entry)

    def publish_alarm(self, entry: dict[str, Any]) -> None:
        body = {"round": self.round_no, **entry}
        self.emit(alarm_topic(self.table), "alarm", body)
        code = entry.get("alarm")
        self._call_pit(code)
        for start, end in TABLE_LASTING.items():
            if end == code:
                self.table_faults.pop(start, None)
        if code in TABLE_LASTING:
            self.table_faults[code] = body

    # -- the shoe ----------------------------------------------------------------------

    def _on_card(self, text: str, counter: int | None) -> None:
        card = parse_card(text)
        if counter is not None and counter <= self.shoe_counter:
            self._duplicate(str(card), counter)     # never dealt, in a round or not
            return
        expected = self.shoe_counter + 1
        if counter is not None:
            self.shoe_counter = counter
        if self.phase != DealerPhase.PLAY:
            # A card out of a round is a burn card: it leaves the shoe's composition.
            if self.shoe.can_draw(card):
                self.shoe = self.shoe.draw(card)
            if self.phase != DealerPhase.IDLE:
                self.alarm("card_while_betting", f"{card} was drawn while bets were {self.phase}")
            return
        if counter is not None and counter != expected:
            self._interruption(f"the shoe counted {counter - expected} card(s) this unit never saw",
                               missed=counter - expected)
            if self.phase != DealerPhase.PLAY:
                return
        if self.owed:
            self.held.append(str(card))     # dealt after the missed cards: it follows them
            return
        self._apply(CardDrawn(card))

    def _on_keyed_card(self, text: str, by: str | None = None) -> None:
        """A card keyed in (console keypad or pit command) goes where a shoe card goes, with
        the engine's refusals (a card the shoe cannot hold voids the round, §5.5.1, as from
        the shoe)."""
        card = parse_card(text)
        if self.phase != DealerPhase.PLAY or self.round is None:
            self._refuse(f"key in {card}: no round is in play (bets {self.phase})")
            return
        if self.round.expecting().kind != "card":
            self._refuse(f"key in {card}: the round expects {self.live.expecting()}",
                         self.profile.clause("deal"))
            return
        if not self.owed:
            # only a card the shoe dealt unseen is keyed in: every other card comes from the shoe
            self._refuse(f"key in {card}: no missed card is owed; cards come from the shoe",
                         self.profile.clause("interruption"))
            return
        if not self._apply(CardDrawn(card)):
            return
        where = ("at the console" if by in (None, "console") else f"by the pit ({by.removeprefix('pit:')})")
        self.alarm("card_keyed", f"{card} keyed in {where}", card=str(card), **({"by": by} if by else {}))
        if self.owed:
            self.owed -= 1
            if not self.owed:
                held, self.held = self.held, []
                for text in held:           # the shoe's cards that came after the missed ones
                    if self.phase != DealerPhase.PLAY:
                        break
                    self._apply(CardDrawn(parse_card(text)))

    def _duplicate(self, card: str, counter: int) -> None:
        """A card whose shoe count does not advance since the last shuffle is a frame seen
        before (repeated, replayed or late): it never left the shoe now, so it is not dealt."""
        self.alarm("duplicate_card", f"{card} with shoe count {counter} is a duplicate (the shoe's count "
                   f"is already {self.shoe_counter} since the last shuffle): not dealt",
                   card=card, counter=counter)

    def _on_shoe(self, signal: str, counter: int | None, card: str | None = None) -> None:
        kind = ShoeSignalKind(signal)
        if kind == ShoeSignalKind.DUPLICATE_CARD:
            self._duplicate(str(parse_card(card)) if card else "a card", -1 if counter is None else counter)
        elif kind == ShoeSignalKind.SHUFFLED:
            if self.phase in (DealerPhase.PLAY, DealerPhase.CLOSING):
                self.alarm("shuffle_in_round", "the shoe was shuffled during a round")
                self._interruption("the shoe was shuffled during the round")
            self.shoe = ShoeComposition.of_decks(self.decks)
            self.shoe_counter = 0 if counter is None else counter
            self.shoe_number += 1
        elif kind in (ShoeSignalKind.MISREAD, ShoeSignalKind.CARD_GAP):
            # the cards that went out unseen: by the shoe's counter when it gives one
            missed = (max(counter - self.shoe_counter, 0) if counter is not None
                      else 1 if kind == ShoeSignalKind.MISREAD else 0)
            if counter is not None:
                self.shoe_counter = max(self.shoe_counter, counter)   # counts never go back
            if self.phase == DealerPhase.PLAY:
                self._interruption(f"shoe reported {kind.value}", missed=missed)
            else:
                self.alarm(kind.value, f"shoe reported {kind.value} outside a round")
        else:
            self.alarm(f"shoe_{kind.value}", f"shoe reported {kind.value}")

    def _interruption(self, why: str, missed: int = 0) -> None:
        """§5.4: a technical interruption. The engine says whether an outcome is established:
        then play continues (§5.4.1) and the ``missed`` cards are owed: keyed in at the
        console before any later shoe card is used; else the round is voided (§5.4.2)."""
        state = self.round
        if state is None or state.is_over:
            return
        if state.outcome_established():
            self.owed += max(missed, 0)
            owed = f"; key in the {self.owed} missed card(s) at the console" if self.owed else ""
            self.alarm("interruption_continue", f"{why}; an outcome is established, play continues "
                       f"({self.profile.clause('interruption')}); a supervisor must reconcile the cards"
                       f"{owed}", owed=self.owed)
        else:
            self.alarm("interruption_void", f"{why}; no outcome established, the round is voided "
                       f"({self.profile.clause('interruption')})")
            self._apply(VoidRound("interruption"))

    # -- the jackpot controller --------------------------------------------------------

    def _on_controller(self, status: ControllerStatus) -> bool:
        """The controller's meter becomes the meter of the next round opened (Switch §3.7:
        a 100% award is the meter's); the round in play keeps the meter it opened with,
        which its ``round_open`` message carries so every seat and a replay agree. A status
        without a meter (controller not yet heard) leaves the last meter in force."""
        if status == self.controller:
            return False
        self.controller = status
        if status.meter is not None:
            self.meter = parse_amount(status.meter)
        return True

    # -- the console -------------------------------------------------------------------

    def _on_button(self, button: str) -> None:
        if button == "open_bets":
            self._open_bets()
        elif button == "no_more_bets":
            self._no_more_bets()
        elif button in TURN_BUTTONS or button == "walked_away":
            self._turn(button)
        elif button == "insurance":
            self._offered(Action.INSURANCE)
        elif button in ("even_money", "surrender"):
            self._offered(Action(button))
        elif button in (TECHNICIAN_KEY, TECHNICIAN_KEY + "_off"):
            # service mode: a lasting table alarm, so every seat's screen asks for the PIN
            # and the pit's reports show who had the table open (issue #14.6)
            self.alarm(button, "technician key turned " + ("off" if button.endswith("_off") else "on"))
        elif button == "void_round":
            if self.phase != DealerPhase.PLAY:
                self._refuse(f"no round is in play to void (bets are {self.phase})")
            elif self.live.outcome_established():
                self._refuse("an outcome has been established: play continues",
                             self.profile.clause("interruption"))
            else:
                self._apply(VoidRound("interruption"))
        else:
            self._refuse(f"the {button} button does nothing at this table")

    def shoe_down(self) -> str | None:
        """Why no round can be dealt now (a card shoe's link is lost), or None."""
        lost = [n for n, d in sorted(self.devices_down.items()) if d["kind"] == "card_shoe"]
        return f"the card shoe ({', '.join(lost)}) is not connected: no round can be dealt" if lost else None

    def _open_bets(self) -> None:
        if self.not_verified is not None:
            self._refuse("the dealer unit's software is not verified: no bets (betbox verify)")
            return
        if self.behind is not None:
            n, m = sorted(self.behind.values())
            self._refuse(f"{self.unit_id} is behind its confirmed mark (seq {n} < {m}): no bets until its "
                         "newest state is restored")
            return
        if self.phase != DealerPhase.IDLE:
            self._refuse(f"round {self.round_no} is not over (bets {self.phase})")
            return
        if (down := self.shoe_down()) is not None:
            self._refuse(down)
            return
        self.round_no += 1
        self.round = Round.new(self.profile, decks=self.decks, limits=self.limits, meter=self.meter,
                               shoe=self.shoe)
        self.phase = DealerPhase.OPEN
        self.round_stream = []
        self.offers, self.locks, self.additions, self.requests = {}, {}, {}, {}
        self.catchups_in_round, self.bytes_in_round = {}, {}     # each box's budget starts again
        self._stream("round_open", {
            "profile": self.profile.name, "decks": self.decks, "limits": limits_to_json(self.limits),
            "meter": None if self.meter is None else to_json_number(self.meter),
            "shoe": shoe_to_json(self.shoe), "shoe_number": self.shoe_number})

    def _no_more_bets(self) -> None:
        if self.phase == DealerPhase.OPEN:
            self.phase = DealerPhase.CLOSING
            self.waiting = set(self.online)
            self._stream("bets_closing", {"waiting": sorted(self.waiting)})
            if not self.waiting:
                self._close()
        elif self.phase == DealerPhase.CLOSING:
            # pressed again: close without the seats that have not locked
            self._close_without("closed_by_dealer", "the dealer pressed no more bets again")
        else:
            self._refuse(f"bets are not open (round {self.round_no} is {self.phase})")

    def _on_tick(self, now: float) -> bool:
        """The bounded wait for locks. Only a reading that starts the wait or ends it is
        accepted (and so journalled); the rest change nothing and are dropped."""
        if self.phase != DealerPhase.CLOSING or self.close_wait is None:
            return False
        if self.closing_since is None or now < self.closing_since:
            self.closing_since = now            # the first reading since the wait began
            return True
        if now - self.closing_since < self.close_wait:
            return False
        self._close_without("lock_timeout", f"no lock within {self.close_wait:g}s of no more bets")
        return True

    def _close_without(self, code: str, why: str) -> None:
        """Close bets without the seats still waited for: their boxes take no part. The
        seats hear it in the stream, before the bets-closed event, so each can say so."""
        missing = sorted(self.waiting)
        self.alarm("seats_missing", f"bets closed without seat(s) {missing}: {why}", boxes=missing,
                   reason=code)
        self._stream("bets_not_taken", {"boxes": missing, "reason": code})
        self._close()

    def _check_box(self, box: int, bets: Mapping[str, Fraction]) -> str | None:
        try:
            Round.new(self.profile, decks=self.decks, limits=self.limits, meter=self.meter,
                      shoe=self.shoe).apply(BetsClosed.of({box: bets}))
        except RuleError as exc:
            return str(exc)
        return None

    def _close(self) -> None:
        wagers = {}
        for box, bets in sorted(self.locks.items()):
            if not bets:
                continue
            reason = self._check_box(box, bets)
            if reason is not None:
                self._refuse(reason, box=box, bets=bets_to_json(bets))
                continue
            wagers[box] = bets
        self.phase = DealerPhase.PLAY
        self.waiting = set()
        self.closing_since = None
        self._apply(BetsClosed.of(wagers))

    def _turn(self, button: str) -> None:
        if self.phase != DealerPhase.PLAY:
            self._refuse(f"{button}: no hand is in play (bets {self.phase})")
            return
        if self.owed:
            self._refuse(f"{button}: {self.owed} missed card(s) must be keyed in first",
                         self.profile.clause("interruption"))
            return
        cur = self.live.hand_in_play()
        if cur is None:
            self._refuse(f"{button}: no hand is in play, the round expects {self.live.expecting()}")
            return
        box = cur[0].number
        if button == "walked_away":
            self._apply(WalkedAway(box))
            return
        action = TURN_BUTTONS[button]
        amount = self.additions.get(box, {}).get("main") if action == Action.DOUBLE else None
        decision = Decision(box, action, amount)
        reason = self.live.why_not(decision)
        if reason is not None:
            self._refuse(reason, box=box, action=button)
            return
        if self._apply(decision) and action in (Action.DOUBLE, Action.SPLIT):
            self.additions.get(box, {}).pop("main", None)

    def _offered(self, action: Action) -> None:
        if self.phase != DealerPhase.PLAY:
            self._refuse(f"{action}: no round is in play")
            return
        todo: list[Decision] = []
        if action == Action.INSURANCE:
            # one decision per insured hand: Switch §3.9.1 insures either or both hands
            for box, adds in sorted(self.additions.items()):
                for spot in sorted(adds):
                    hand = insurance_hand(spot)
                    if hand is not None:
                        todo.append(Decision(box, action, adds[spot],
                                             hand if self.profile.hands_per_box > 1 else None))
        else:
            for box, wanted in sorted(self.requests.items()):
                todo.extend(Decision(box, a, None, hand) for a, hand in wanted if a == action)
        if not todo:
            self._refuse(f"{action}: no seat has asked for it")
            return
        for decision in todo:
            reason = self.live.why_not(decision)
            if reason is not None:
                self._refuse(reason, box=decision.box, action=str(action))
            else:
                self._apply(decision)
            if action == Action.INSURANCE:
                self.additions[decision.box].pop(insurance_spot(decision.hand), None)
            else:
                self.requests[decision.box] = [r for r in self.requests[decision.box]
                                               if r != (decision.action, decision.hand)]

    # -- the seats ---------------------------------------------------------------------

    def _on_pit(self, m: Message) -> bool:
        """A pit supervisor's command (the broker's ACL lets only user ``pit`` write the
        topic): judged like the console's input, answered on the response topic with the
        dealer's verdict. ``seq`` only grows per sender (the CLI sends its clock), so a
        redelivered command is answered as already done and never applied twice."""
        command = pit_command(m.kind, m.body)
        tx = command["tx"]
        last = self.seat_seq.get(m.sender, 0)
        if m.seq <= last:
            self._pit_answer(tx, False, f"command {m.seq} is not newer than the last one handled ({last}): "
                             "already done, or sent out of order; look at the table and send it again")
            return True
        self.seat_seq[m.sender] = m.seq
        refused = len(self.refusals)
        by = f"pit:{command['by']}"
        if m.kind == "acknowledge":
            self._pit_answer(tx, True, self._acknowledge(command["by"]))
            return True
        if m.kind == "reconciled":
            self._reconciled(command, m.seq)
            return True
        if m.kind == "key_card":
            self._on_keyed_card(command["card"], by)
        elif command["round"] != self.round_no or self.phase != DealerPhase.PLAY:
            self._refuse(f"void round {command['round']}: round {self.round_no} is the table's, "
                         f"and it is {'in play' if self.phase == 'play' else 'not in play (bets ' + self.phase + ')'}")
        elif self._apply(VoidRound(command["reason"])):
            self.alarm("round_voided_by_pit", f"round {self.round_no} voided by the pit ({command['by']}): "
                       f"{command['reason']} ({self.live.void_clause})", by=command["by"],
                       reason=command["reason"])
        if len(self.refusals) > refused:
            self._pit_answer(tx, False, self.refusals[-1]["reason"])
        else:
            state = self.round
            self._pit_answer(tx, True, "done", owed=self.owed, phase=self.phase,
                             expects=None if state is None or state.is_over else str(state.expecting()))
        return True

    def _stream_claimed(self, box: int, heard: int) -> None:
        """A seat holds stream messages this dealer's journal does not: the dealer was
        restarted from an older copy of its state, and its seats drop what it numbers again
        as heard already (issue #11.5), or the seat's credentials are misused. Behind once a
        second seat says so, or the controller (its outbox behind): this mark replaces that
        one, the reconciled dealer's stream must go on after what the seats heard."""
        if self.behind is not None and "seat_heard" in self.behind:
            if heard > self.behind["seat_heard"]:
                # another seat heard more of the lost stream: the reconciled dealer goes on
                # after that (the alarm raised stands; the mark it names only grows)
                self.behind = {**self.behind, "seat_heard": heard}
            return
        first = box not in self.stream_claims
        self.stream_claims = {b: h for b, h in self.stream_claims.items() if h > self.stream_seq}
        self.stream_claims[box] = max(heard, self.stream_claims.get(box, 0))
        if len(self.stream_claims) >= 2 or self.behind is not None:
            self.on_behind({"stream_seq": self.stream_seq, "seat_heard": max(self.stream_claims.values())},
                           box=box if len(self.stream_claims) == 1 else None)
        elif first:
            self.alarm(STREAM_CLAIMED, f"seat {box} says it heard stream seq {heard}, past this dealer's "
                       f"{self.stream_seq}; no other seat and not the jackpot controller says so, so the table "
                       f"plays on (seat {box} holds those numbers as heard and takes no part until the stream "
                       "passes them). If this dealer was restored from an older copy of its state, restore its "
                       "newest state, or reconcile its rounds and `betbox pit reconciled --dealer`; if it was not, "
                       f"seat {box}'s credentials are misused: stop it", box=box, stream_seq=self.stream_seq,
                       seat_heard=heard)

    def _reconciled(self, command: dict[str, Any], seq: int) -> None:
        """The pit reconciled a unit behind its confirmed mark. The dealer itself: its flag
        is cleared (and its stream goes on after what a seat heard of it: the seats take its
        next messages). A seat: told on its down topic (only the dealer writes it), with the
        command's seq; the seat clears its own flag and its answer is the pit's answer."""
        tx, by, box = command["tx"], command["by"], command["box"]
        if box is not None:
            if box not in self.online:
                self._pit_answer(tx, False, f"reconciled: no seat of box {box} has said hello to this dealer "
                                 "(is it running?): start it, then send the command again", unit=None)
                return
            self.reconciling[box] = tx
            self.emit(down_topic(self.table, box), "reconciled", {"box": box, "tx": tx, "by": by, "seq": seq})
            return
        was, claimed = self.behind, max(self.stream_claims.values(), default=0)
        if was is None and claimed > self.stream_seq:
            # one seat's word only (not behind): the stream goes on after what it heard
            self.alarm(RECONCILED, f"{self.unit_id}: reconciled by {by}: its stream goes on after stream seq "
                       f"{claimed}, which seat(s) {sorted(self.stream_claims)} said they heard", by=by,
                       was={"stream_seq": self.stream_seq, "seat_heard": claimed})
        else:
            why = self.reconcile(by)
            if why is not None:
                self._pit_answer(tx, False, why, unit=self.unit_id)
                return
            assert was is not None
            claimed = max(claimed, was.get("seat_heard", 0))
        self.stream_claims = {}
        if claimed > self.stream_seq:
            # a seat heard stream messages this journal does not hold: numbering them again
            # would have the seats drop them as heard; the stream goes on after them, and a
            # dealer_boot has every seat say hello (its catch-up brings it to the head)
            self.stream_seq = claimed
            self._stream("dealer_boot", {})
        self._pit_answer(tx, True, "reconciled: bets are taken again", unit=self.unit_id)

    def _seat_reconciled(self, box: int, body: Mapping[str, Any]) -> None:
        """A seat's answer to the pit's reconciled command (the one the dealer passed on to
        it, by its tx; any other is not the pit's answer): passed on to the pit."""
        if self.reconciling.get(box) != body["tx"]:
            return
        del self.reconciling[box]
        self._pit_answer(body["tx"], body["ok"], body["verdict"] if body["ok"] else body["error"],
                         unit=f"{self.table}/seat-{box}")

    def _pit_answer(self, tx: str, ok: bool, verdict: str, **extra: Any) -> None:
        self.emit(pit_response_topic(self.table), "pit_answer",
                  {"tx": tx, "ok": ok, "round": self.round_no, ("verdict" if ok else "error"): verdict, **extra})

    def _on_message(self, m: Message) -> bool:
        if m.topic == pit_command_topic(self.table):
            return self._on_pit(m)
        last = self.seat_seq.get(m.sender, 0)
        if m.seq <= last and m.kind != "hello":
            return False                         # a duplicate after a seat's re-send
        # a hello is always heard: a replaced seat starts its sequence again
        self.seat_seq[m.sender] = m.seq
        box = int(m.body["box"])
        sent = len(self._outs)
        if m.kind == "hello":
            self.catchups_in_round[box] = self.catchups_in_round.get(box, 0) + 1   # (_check_flood)
            self._on_hello(m, box, last)
            return True
        if m.kind == "reconcile_answer":
            self._seat_reconciled(box, m.body)
        else:
            self._seat_said(m, box)
        self._count_bytes(box, m, self._outs[sent:])
        return True

    def _count_bytes(self, box: int, m: Message, outs: list[Message]) -> None:
        """The bytes a seat's message made the dealer journal: its own and the dealer's
        messages because of it (a refusal repeats what was refused): the box's budget."""
        journalled = len(m.to_json()) + sum(len(o.to_json()) for o in outs)
        self.bytes_in_round[box] = self.bytes_in_round.get(box, 0) + journalled

    def _seat_said(self, m: Message, box: int) -> None:
        """A seat's message other than hello, taken in its round and phase."""
        body = m.body
        same_round = body.get("round") == self.round_no
        if m.kind == "offer":
            if same_round and self.phase == DealerPhase.OPEN:
                bets = bets_from_json(body["bets"])
                self.offers[box] = bets
                reason = self._check_box(box, bets) if bets else None
                if reason is not None:
                    self._refuse(reason, box=box, bets=body["bets"], stage="offer")
        elif m.kind == "lock":
            if same_round and self.phase == DealerPhase.CLOSING:
                self.locks[box] = bets_from_json(body["bets"])
                self.waiting.discard(box)
                if not self.waiting:
                    self._close()
        elif m.kind == "addition":
            if same_round and self.phase == DealerPhase.PLAY:
                self.additions.setdefault(box, {})[body["spot"]] = parse_amount(body["amount"])
        elif m.kind == "request":
            if same_round and self.phase == DealerPhase.PLAY:
                self.requests.setdefault(box, []).append((Action(body["action"]), body.get("hand")))
        elif m.kind == "result":
            ours = self.results.get(body["round"]) if isinstance(body.get("round"), int) else None
            if ours is not None:
                expected = ours["boxes"].get(str(box))
                if as_json_value(body.get("settlement")) != expected:
                    self.alarm("integrity", f"seat {box}'s settlement of round {body['round']} differs "
                               "from the dealer's", box=box, seat=body.get("settlement"), dealer=expected)
        elif m.kind == "alarm":
            self.alarms.append({k: v for k, v in body.items()})
            self._call_pit(body.get("alarm"))

    def _on_hello(self, m: Message, box: int, heard: int) -> None:
        """A seat (re)started: its catch-up, and what it says the dealer may have lost."""
        body, same_round = m.body, m.body.get("round") == self.round_no
        self.online.add(box)
        seat_heard = int(body.get("last_stream_seq", 0))
        if seat_heard > self.stream_seq:
            self._stream_claimed(box, seat_heard)
        table = self._table_moment()
        catchup = self._catch_up(box, seat_heard, body["round"], str(body.get("phase")), heard=heard)
        if same_round and body.get("bets") is not None:
            if self.phase == DealerPhase.OPEN and body.get("phase") == SeatPhase.OPEN:
                self.offers[box] = bets_from_json(body["bets"])
            elif self.phase == DealerPhase.CLOSING and body.get("phase") == SeatPhase.CLOSING:
                self.locks[box] = bets_from_json(body["bets"])
                self.waiting.discard(box)
                if not self.waiting:
                    self._close()
        if same_round and self.phase == DealerPhase.PLAY:
            for spot, amount in (body.get("pending") or {}).items():
                self.additions.setdefault(box, {})[spot] = parse_amount(amount)
        self.answered[box] = Answered(_canon(body), m.seq, catchup, table, self._seat_moment(box))

    # -- the console's lamps -----------------------------------------------------------

    def _call_pit(self, code: Any) -> None:
        if code in PIT_CALLS:
            self.pit_calls[code] = self.pit_calls.get(code, 0) + 1

    def _acknowledge(self, by: str) -> str:
        """A supervisor came to the table: the pit calls in force end (a lasting condition,
        the shoe's door open, lasts until it ends). Only the pit ends a call: a dealer who
        opens the next round does not (the call would otherwise be the dealer's to dismiss)."""
        calls, self.pit_calls = self.pit_calls, {}
        if not calls:
            return "no pit call was in force"
        said = ", ".join(f"{code} x{n}" for code, n in sorted(calls.items()))
        self.alarm("pit_acknowledged", f"the pit call ({said}) acknowledged by {by}", by=by, calls=said)
        return f"acknowledged: {said}"

    @property
    def pit_called(self) -> bool:
        """A pit alarm is in force: one since the round opened, or a lasting one."""
        return bool(self.pit_calls) or not PIT_LASTING.isdisjoint(self.table_faults)

    def lamp_wanted(self) -> dict[str, LampState]:
        closed = self.phase in (DealerPhase.CLOSING, DealerPhase.PLAY)
        return {"pit_call": PIT_CALL_BLINK if self.pit_called else LAMP_OFF,
                "round_open": LAMP_ON if self.phase == DealerPhase.OPEN else LAMP_OFF,
                "no_more_bets": LAMP_ON if closed else LAMP_OFF}

    def after_step(self) -> None:
        """Drive the console's lamps from the state (after recovery too: from the journal)."""
        if self.replaying or self.lamps is None or self.lamps.closed:
            return
        for lamp, want in self.lamp_wanted().items():
            if lamp in self.lamps.lamps and self.lamps.state(lamp) != want:
                if want.mode == "blink":
                    self.lamps.blink(lamp, want.on_time or 0.5, want.off_time or 0.5, want.n)
                else:
                    (self.lamps.on if want.mode == "on" else self.lamps.off)(lamp)

    def _catch_up(self, box: int, last: int, seat_round: int = 0, seat_phase: str = "idle",
                  heard: int = 0) -> Message:
        """A seat (re)started: send what it missed of the current round, or a snapshot;
        every round over since the seat's own round (``seat_round``, unless it saw that one
        end) in which its box played (``rounds``), and the rounds it may have played that
        this dealer no longer holds (``unheld``: first and last, or null); and the table's
        lasting conditions in force (``conditions``); and the highest message seq heard
        from the seat before its hello (``heard``: a seat whose journal ends below it was
        restarted from an older copy)."""
        first = self.round_stream[0]["body"]["stream_seq"] if self.round_stream else self.stream_seq + 1
        if last >= self.stream_seq:
            missed: list[dict[str, Any]] = []
            snapshot = False
        elif last + 1 >= first:
            missed = [m for m in self.round_stream if m["body"]["stream_seq"] > last]
            snapshot = False
        else:
            missed = list(self.round_stream)
            snapshot = True
        rounds, unheld = self._rounds_missed(box, seat_round, seat_phase)
        return self.emit(down_topic(self.table, box), "catchup",
                  {"box": box, "head": self.stream_seq, "snapshot": snapshot, "messages": missed,
                   "rounds": rounds, "unheld": unheld, "heard": heard,
                   "conditions": [self.table_faults[c] for c in sorted(self.table_faults)]})

    def _rounds_missed(self, box: int, seat_round: int, seat_phase: str
                       ) -> tuple[dict[str, Any], list[int] | None]:
        """The rounds over that a seat at ``seat_round`` has not seen end (a seat that never
        saw a round has none: it was not at the table)."""
        if seat_round < 1:
            return {}, None
        since = seat_round + (1 if seat_phase in (SeatPhase.OVER, SeatPhase.VOID) else 0)
        rounds: dict[str, Any] = {}
        for number, state in sorted(self.past_rounds.items()):
            if number < since:
                continue
            try:
                state.box(box)
            except (KeyError, ValueError, RuleError):
                continue                       # the box did not play that round
            rounds[str(number)] = round_to_json(state)
        last_over = self.round_no if self.phase == DealerPhase.IDLE else self.round_no - 1
        held_from = min(self.past_rounds) if self.past_rounds else last_over + 1
        unheld = [since, min(held_from - 1, last_over)] if since < held_from and since <= last_over else None
        return rounds, unheld

    # -- after a restart ---------------------------------------------------------------

    def start(self) -> None:
        """After recovery: tell the seats, so they re-send what may not have arrived."""
        self.step("boot", {})

    def at_round_boundary(self) -> bool:
        return self.phase == DealerPhase.IDLE

    def after_restore(self) -> None:
        # made by the steps since the checkpoint (a replay makes them again)
        self.catchups_in_round, self.bytes_in_round, self.answered = {}, {}, {}

    def after_recover(self) -> None:
        self.finished = []
        self.not_verified = None    # a past start's verification: this start verifies again

    def take_finished(self) -> list[Round]:
        out, self.finished = self.finished, []
        return out
