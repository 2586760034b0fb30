"""What every unit shares: one dispatch queue, one writer of state, journal-then-act.

A step is one accepted input and every message it makes the unit emit. The handler
(:meth:`Unit.handle`) is deterministic: no clock, no randomness, only the unit's state and
the input. The step is written to the journal in one transaction, and only then are the
messages published and the lamps and screen updated. A restarted unit runs its journalled
inputs through the same handler (emitting nothing), checks that it would have emitted
exactly what the journal holds, re-sends what was never delivered, and carries on.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import reprlib
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterator

from firmware import __version__
from firmware.engine.profile import Profile
from firmware.wirejson import RateLimitedLog
from hal.events import ConnectionLost, ConnectionRestored, HalEvent

from .bus import Bus, Message
from .codec import state_from_json, state_to_json
from .journal import CheckpointError, Journal, Record
from .storage import StorageError, StorageFull

log = logging.getLogger(__name__)

#: The checkpoint layout this firmware writes and reads (bump it, and read the old one, when
#: the layout changes: a journal must stay readable across a firmware update).
CHECKPOINT_FORMAT = 6
#: Older layouts this firmware still reads (state added since comes from ``state_added``).
#: Format 4 has format 3's layout, written by one codec from the state dataclasses
#: (``firmware/runtime/codec.py``; issue #15); a phase is read back as its enum. Format 5
#: adds the dealer's ``pit_calls`` (its console's pit_call lamp, issue #14.4). Format 6 the
#: pit's ``reconciled`` command's: the seat's ``reconciled_seq``, the dealer's ``reconciling``.
READS_FORMATS = (1, 2, 3, 4, 5, 6)
#: Entries kept in a unit's alarm / refusal / message logs (older ones are dropped; the
#: running counts stay).
KEEP_RECENT = 200
#: The largest input body a unit takes (JSON bytes): a catch-up of a long round fits.
MAX_INPUT_BYTES = 256 * 1024
#: Rejected inputs are journalled as evidence (kind ``rejected``, never replayed into the
#: state): at most this many a minute, each with the first EVIDENCE_BYTES of what came and
#: how many rejections since the last one were only counted, so a flood cannot fill the disk.
REJECTED = "rejected"
EVIDENCE_PER_MINUTE = 30
EVIDENCE_BYTES = 512


@dataclass(frozen=True)
class Input:
    """One input as a unit takes it, read once (issue #15 "parse once"): ``check_input``
    returns it live, ``read_input`` in a replay, and ``handle`` applies it. ``body`` is what
    the journal holds; ``message`` the bus message of a ``msg`` input; ``value`` what the
    role read from it (the engine ``Event`` of a stream event, the ``Round`` a ``round_open``
    opens, a catch-up, a checked controller status, ...)."""

    kind: str
    body: dict[str, Any]
    message: Message | None = None
    value: Any = None


class InputRefused(ValueError):
    """An input a unit does not take (malformed or forged): what is wrong with it."""


class AlreadyAnswered(Exception):
    """An input whose answer is a message the journal holds already (a seat's hello whose
    catch-up is journalled, the table as it was): that message is re-sent, as after a
    reconnect, and nothing is journalled or changed. Not a refusal: the sender is answered."""

    def __init__(self, message: Message, why: str) -> None:
        super().__init__(why)
        self.message = message


class ReplayDiverged(RuntimeError):
    """The journal says the unit emitted something its handlers would not emit now:
    a different firmware or a corrupted journal. The unit must not go on."""


#: A port's kind -> the code its states go by in alarms and on the seat's screen
#: (``shoe_down`` / ``shoe_restored``, ``console_down``, ``reader_down``, ...).
DEVICE_CODES = {"card_shoe": "shoe", "console": "console", "chip_reader": "reader", "broker": "broker"}
#: Log a device's state changes at most this often (seconds); the ones between are counted.
LOG_EVERY = 5.0


def device_input(body: Any) -> dict[str, str]:
    """A device's link state as a journalled input: ``{"device": port name, "kind": port
    kind, "state": "down" | "up", "reason": why (down only)}``."""
    if not isinstance(body, dict) or not {"device", "kind", "state"} <= set(body) <= {
            "device", "kind", "state", "reason"}:
        raise ValueError(f"a device state is {{'device', 'kind', 'state'[, 'reason']}}, not {body!r:.200}")
    if body["state"] not in ("down", "up") or not all(isinstance(v, str) for v in body.values()):
        raise ValueError(f"a device's state is 'down' or 'up', named by strings, not {body!r:.200}")
    return dict(body)


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class Recent:
    """A bounded log with running numbers: it keeps the ``keep`` newest entries.

    ``len()`` is the number of entries *ever* recorded and indexes are those running
    numbers (``log[n]`` is the n-th entry recorded, ``log[-1]`` the newest, ``log[mark:]``
    what came since ``mark``), so code that remembers a position (a reporter's "seen so
    far", the seat view's mark) stays right when old entries are dropped. Iteration gives
    the entries kept, oldest first; an index whose entry was dropped raises IndexError.
    """

    def __init__(self, keep: int = KEEP_RECENT, items: Any = (), total: int | None = None) -> None:
        if keep < 1:
            raise ValueError(f"a log keeps at least 1 entry, not {keep}")
        self.keep = keep
        self._items: list[Any] = list(items)[-keep:]
        self.total = len(self._items) if total is None else total
        if self.total < len(self._items):
            raise ValueError(f"a log of {len(self._items)} entries cannot have recorded only {self.total}")

    @property
    def first(self) -> int:
        """The running number of the oldest entry kept."""
        return self.total - len(self._items)

    def append(self, item: Any) -> None:
        self._items.append(item)
        self.total += 1
        if len(self._items) > self.keep:
            del self._items[0]

    def clear(self) -> None:
        """Forget the entries (the running count goes on)."""
        self._items.clear()

    def __len__(self) -> int:
        return self.total

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._items))

    def __bool__(self) -> bool:
        return bool(self._items)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(self.total)
            if step != 1:
                raise ValueError("a log is sliced with step 1")
            lo, hi = max(start, self.first) - self.first, max(stop, self.first) - self.first
            return self._items[lo:hi]
        n = index + self.total if index < 0 else index
        if not self.first <= n < self.total:
            raise IndexError(f"entry {index} is not kept (kept: {self.first} to {self.total - 1})")
        return self._items[n - self.first]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Recent):
            return self.total == other.total and self._items == other._items
        if isinstance(other, list):
            return self._items == other
        return NotImplemented

    def __repr__(self) -> str:
        return f"Recent(total={self.total}, kept={self._items!r})"

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "kept": list(self._items)}

    @classmethod
    def from_json(cls, data: Any, keep: int = KEEP_RECENT) -> "Recent":
        if not isinstance(data, dict) or set(data) != {"total", "kept"}:
            raise ValueError(f"a log is {{'total': n, 'kept': [...]}}, not {_short(data)}")
        total, kept = data["total"], data["kept"]
        if not _is_int(total) or total < 0 or not isinstance(kept, list):
            raise ValueError(f"a log's total is a count and kept a list, not {_short(data)}")
        return cls(keep, kept, total)


# -- checkpoint values: exact, plain JSON ---------------------------------------------

def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def ck_str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, not {_short(value)}")
    return value


def ck_json(value: Any) -> Any:
    """A value kept as the JSON it is (messages, settlements)."""
    json.dumps(value)
    return value


#: The input (and alarm code) of a unit behind the controller's confirmed mark.
BEHIND = "behind_confirmed"


#: The alarm of a unit whose behind flag a supervisor cleared after reconciling its rounds
#: (the pit's ``reconciled`` command; docs/runtime.md).
RECONCILED = "reconciled"


#: What a unit is behind: the controller's confirmed mark (its outbox's last seq, the mark);
#: for a seat, what the dealer heard from it (its own last message seq, the dealer's); for
#: the dealer, what a seat heard of its stream (its own last stream seq, the seat's).
BEHIND_KEYS = ({"outbox_seq", "confirmed"}, {"unit_seq", "heard"}, {"stream_seq", "seat_heard"})


def behind_from_json(value: Any) -> dict[str, int]:
    """``{"outbox_seq": n, "confirmed": m}``, ``{"unit_seq": n, "heard": m}`` or
    ``{"stream_seq": n, "seat_heard": m}``, 0 <= n < m."""
    if not isinstance(value, dict) or set(value) not in BEHIND_KEYS:
        raise ValueError(f"behind_confirmed is {{'outbox_seq': n, 'confirmed': m}}, {{'unit_seq': n, "
                         f"'heard': m}} or {{'stream_seq': n, 'seat_heard': m}}, not {_short(value)}")
    (a, n), (b, m) = sorted(value.items(), key=lambda kv: kv[0] in ("confirmed", "heard", "seat_heard"))
    if not (_is_int(n) and _is_int(m) and 0 <= n < m < 2 ** 63):
        raise ValueError(f"behind_confirmed: {a} {_short(n)} must be a count below {b} {_short(m)}")
    return {a: n, b: m}


#: The input (and alarm code) of reports the jackpot controller lost and this unit no longer
#: keeps: its confirmed mark went back (restored from an older copy) below them.
LOST = "controller_lost_reports"
LOST_KEYS = ("controller", "first", "last", "confirmed")


def lost_from_json(value: Any) -> dict[str, int]:
    """``{"controller": c, "first": f, "last": l, "confirmed": m}``, 0 <= c < f <= l <= m."""
    if not isinstance(value, dict) or set(value) != set(LOST_KEYS):
        raise ValueError(f"{LOST} is {{'controller': c, 'first': f, 'last': l, 'confirmed': m}}, not {_short(value)}")
    c, f, last, m = (value[k] for k in LOST_KEYS)
    if not (all(_is_int(n) for n in (c, f, last, m)) and 0 <= c < f <= last <= m < 2 ** 63):
        raise ValueError(f"{LOST}: seqs {_short(value)} must be counts with controller < first <= last <= confirmed")
    return {k: value[k] for k in LOST_KEYS}


@dataclass(eq=False, repr=False)
class UnitState:
    """What every unit's checkpoint holds (the roles' state dataclasses add theirs). The
    unit *is* its state: its fields are the unit's attributes, written and read by the one
    codec of :mod:`firmware.runtime.codec`. Wiring and configuration (bus, journal, a
    dealer's profile, ...) are not state: a restart takes them from the configuration."""

    seq: int = 0
    #: the newest alarms (each with its round); counts per alarm kind raised here, ever
    alarms: Recent = field(default_factory=Recent)
    alarm_counts: dict[str, int] = field(default_factory=dict)
    #: the ports whose link is lost, with why (format 3 on)
    devices_down: dict[str, dict[str, str]] = field(default_factory=dict)
    #: set when the jackpot controller has confirmed reports this unit's state does not
    #: hold (restarted from an older copy): {"outbox_seq": n, "confirmed": m}; bets are
    #: refused while it is set (issue #11.5; format 3 on)
    behind: dict[str, int] | None = field(default=None, metadata={"read": "_behind_from_json"})

    @staticmethod
    def _behind_from_json(value: Any) -> dict[str, int] | None:
        return None if value is None else behind_from_json(value)

    def reset_state(self) -> None:
        """Every state field at its initial value (a unit's state before its first input)."""
        for f in fields(self):
            setattr(self, f.name, f.default_factory() if callable(f.default_factory) else f.default)


class Unit(UnitState, ABC):
    role = "unit"
    #: May this unit be told the jackpot controller's status (a ``("controller", {...})``
    #: input)? The link asks this rather than inspecting the unit's code.
    accepts_controller: bool = False

    def __init__(self, unit_id: str, table: str, bus: Bus, journal: Journal) -> None:
        self.unit_id = unit_id
        self.table = table
        self.bus = bus
        self.journal = journal
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.reset_state()
        # inputs refused as malformed or forged since this unit started (not journalled:
        # they are not inputs of the game; logged, counted, the newest kept for the screen)
        self.rejected = 0
        self.check_faults = 0           # inputs refused because checking them failed (a fault)
        self.rejections = Recent(32)
        self.rejected_log = RateLimitedLog(log)   # a flood of forged offers: all counted, a few logged
        self._evidence_tokens = float(EVIDENCE_PER_MINUTE)
        self._evidence_at = time.monotonic()
        self.evidence_skipped = 0           # rejections since the last journalled one
        self.answered_again = 0             # inputs answered by re-sending a journalled message
        # configuration: port name -> kind (card_shoe, console, chip_reader), set by whoever
        # starts the ports (the ports whose link is lost are state: devices_down)
        self.device_kinds: dict[str, str] = {}
        self._logged: dict[str, tuple[float, int]] = {}
        self._outs: list[Message] = []
        self._replaying = False
        self._observers: list[Callable[["Unit"], None]] = []
        self._step_observers: list[Callable[["Unit"], None]] = []
        self.replayed_steps = 0
        # the state partition (see docs/runtime.md "Disk"): below storage_low bytes free the
        # pit is alarmed (a journalled "storage" input); below storage_reserve, or when a step
        # cannot be written, the unit halts: it takes no input (no bet) until restarted
        self.storage_low_bytes: int | None = None       # None: not watched
        self.storage_reserve_bytes = 0
        self.storage_low = False
        self.halted: str | None = None
        self.refused_halted = 0
        # why this start's software verification failed (betbox verify), or None: a unit whose
        # software is not verified takes no bets (not checkpointed: each start verifies again)
        self.not_verified: str | None = None
        # wiring: the link's durable outbox, if this unit reports (``betbox run`` sets it):
        # a reconciliation moves the reports it holds under the controller's mark aside
        self.outbox: Any = None
        self._in_step: list[Callable[[], None]] = []    # written inside the step's transaction

    # -- entry points ------------------------------------------------------------------

    def post(self, item: Any) -> None:
        """Thread-safe: HAL events and bus messages join the one dispatch queue."""
        self.inbox.put(item)

    def pump(self, limit: int | None = None) -> int:
        """Handle queued inputs (all, or at most ``limit``); returns how many."""
        done = 0
        while limit is None or done < limit:
            try:
                item = self.inbox.get_nowait()
            except queue.Empty:
                break
            for kind, body in self.translate(item):
                self.step(kind, body)
            done += 1
        return done

    def observe(self, callback: Callable[["Unit"], None], in_step: bool = False) -> None:
        """``callback(unit)`` after every step (and a halt). ``in_step``: inside the step's
        journal transaction, before it commits (the reporters: the reports a step makes
        commit with it, issue #17.5); it sees the state the step made and must not act on
        the world, only queue reports."""
        (self._step_observers if in_step else self._observers).append(callback)

    # -- the step ----------------------------------------------------------------------

    def step(self, kind: str, body: dict[str, Any]) -> bool:
        """Handle one input; journal it with its messages; then act. False: not accepted."""
        if self.halted is not None or not self._watch_storage():
            self.refused_halted += 1              # not handled: nothing changed, nothing lost
            return False
        return self._step(kind, body)

    def _step(self, kind: str, body: dict[str, Any]) -> bool:
        self._outs, self._in_step = [], []
        try:
            taken = self.check_input(kind, body)
        except AlreadyAnswered as again:         # not a step: its answer is journalled already
            self._answer_again(again)
            return False
        except ValueError as exc:                # InputRefused, or a body the role cannot read
            self.reject(kind, body, str(exc))
            return False
        except Exception as exc:  # noqa: BLE001 - a check that fails on an input refuses it
            # A check only reads (nothing is changed or journalled before it returns), so an
            # input that trips a fault in it is refused like a malformed one, naming the fault:
            # the dispatch loop, and the table with it, is not stopped by one hostile message
            self.check_faults += 1
            self.reject(kind, body, f"could not be checked, a fault in betbox ({type(exc).__name__}: "
                                    f"{reprlib.repr(str(exc))}); please report it")
            return False
        accepted = self._take(taken)
        if not accepted:
            if self._outs:
                raise RuntimeError(f"{self.unit_id}: a refused input emitted messages")
            return False
        records = [Record("in", kind, body, round=self.current_round())]
        records += [Record("out", m.kind, m.to_dict(), seq=m.seq, round=self.current_round(), text=m.to_json())
                    for m in self._outs]
        try:
            self.journal.write_step(records, within=self._report, notify=False)   # journal first, one commit ...
        except StorageFull as exc:
            # not written, so never acted on: the restarted unit replays up to the step before
            self._outs = []
            self._halt(str(exc))
            return False
        outs, self._outs = self._outs, []
        handed = 0
        try:
            for message in outs:                 # ... then act
                self.bus.publish(message)
        finally:
            handed = self.journal.notify_committed()     # then its reports go (the table's messages first)
        # paho's network thread, woken (its socketpair) to write them, waits for the
        # interpreter while this thread goes on (up to a switch interval): let it go first;
        # a step that handed nothing over has nothing to let go first
        if (outs or handed) and hasattr(os, "sched_yield"):     # (Linux, the units' system)
            os.sched_yield()
        try:
            self.journal.mark_delivered([m.seq for m in outs], later=True)   # with the next step
            if self.at_round_boundary() and self.journal.wants_rotation(self.current_round()):
                self.journal.rotate(self.checkpoint())
        except StorageFull as exc:
            # the step is journalled and acted on; its messages go again after a restart
            # (receivers drop them by sequence number)
            self._halt(str(exc))
        self.after_step()
        self._notify()
        self.journal.checkpoint_due(waiting=not self.inbox.empty())   # the WAL folded in off the card's way
        return True

    def _answer_again(self, again: AlreadyAnswered) -> None:
        """Re-send a journalled message (as a restart re-sends the undelivered ones; its
        receiver takes it as it took it before): a live answer that writes nothing."""
        self.answered_again += 1
        self.bus.publish(again.message)

    def _report(self) -> None:
        """Inside the step's transaction: the reports it makes (a full partition fails the
        whole step: not written, so never acted on)."""
        if self._in_step:
            actions, self._in_step = self._in_step, []
            for action in actions:
                action()
        for callback in self._step_observers:
            callback(self)

    def _notify(self, everyone: bool = False) -> None:
        for callback in [*(self._step_observers if everyone else ()), *self._observers]:
            try:
                callback(self)
            except StorageFull as exc:         # a report that did not fit the outbox: the
                self._halt(str(exc))           # restarted unit's reporter makes it again

    # -- the state partition -------------------------------------------------------------

    def _take(self, taken: Input) -> bool:
        """Apply one journalled input (live and in replay): the unit's own storage input
        here, everything else by the role."""
        if taken.kind == "storage":
            return self._on_storage(taken.body)
        return self.handle(taken)

    def _watch_storage(self) -> bool:
        """Before each input: alarm when free space crosses ``storage_low`` (either way),
        halt below ``storage_reserve``. False: halted, take nothing."""
        if self.storage_low_bytes is None or self._replaying:
            return True
        try:
            free = self.journal.free_bytes()
        except OSError:
            return True
        if free < self.storage_reserve_bytes:
            self._step("storage", {"free": free, "low": True, "halt": True,      # tell the pit, if it can
                                   "below": self.storage_reserve_bytes})
            self._halt(f"state partition full: {free} bytes free, below the {self.storage_reserve_bytes} "
                       f"reserved ({self.journal.path.parent})")
            return False
        low = free < self.storage_low_bytes
        clear = free >= self.storage_low_bytes + self.storage_low_bytes // 8     # hysteresis
        if low and not self.storage_low or self.storage_low and clear:
            self._step("storage", {"free": free, "low": low, "below": self.storage_low_bytes})
        return self.halted is None

    def _on_storage(self, body: dict[str, Any]) -> bool:
        """The journalled storage input: everything it says comes from its body (replay)."""
        free, below = body.get("free"), body.get("below")
        low = bool(body.get("low"))
        if body.get("halt"):
            self.alarm("storage_full", f"state partition: {free} bytes free, below the {below} reserved; "
                                       "the unit stops taking inputs")
        elif low:
            self.alarm("storage_low", f"state partition: {free} bytes free, below {below}")
        else:
            self.alarm("storage_ok", f"state partition: {free} bytes free again")
        self.storage_low = low
        return True

    def _halt(self, reason: str) -> None:
        """Stop taking inputs (the dispatch loop goes on, so systemd does not restart the
        unit into the same full partition); the screen shows it, the log says why."""
        if self.halted is None:
            self.halted = reason
            self.storage_low = True
            log.error("%s: halted, takes no input until restarted: %s", self.unit_id, reason)
            self.after_step()
            self._notify(everyone=True)

    def emit(self, topic: str, kind: str, body: dict[str, Any]) -> Message:
        self.seq += 1
        message = Message(topic=topic, kind=kind, sender=self.unit_id, seq=self.seq, body=body)
        self._outs.append(message)
        return message

    def alarm(self, kind: str, detail: str, **extra: Any) -> dict[str, Any]:
        """Record an alarm; the subclass decides where it is published."""
        entry = {"unit": self.unit_id, "alarm": kind, "detail": detail, "round": self.current_round(),
                 **extra}
        self.alarms.append(entry)
        self.alarm_counts[kind] = self.alarm_counts.get(kind, 0) + 1
        self.publish_alarm(entry)
        return entry

    # -- refusing what is malformed or forged -------------------------------------------

    def check_input(self, kind: str, body: Any) -> Input:
        """An input checked before it is handled (and journalled), read once: the
        :class:`Input` ``handle`` takes. Raises :class:`InputRefused` (a ValueError) saying
        what is wrong. Roles add their own checks (who may send what, well-formed bodies)."""
        if not isinstance(body, dict):
            raise InputRefused(f"a {kind} input's body must be a mapping, not {type(body).__name__}")
        try:
            size = len(json.dumps(body, separators=(",", ":")))
        except (TypeError, ValueError) as exc:
            raise InputRefused(f"not JSON: {exc}") from None
        if size > MAX_INPUT_BYTES:
            raise InputRefused(f"{size} bytes: larger than the {MAX_INPUT_BYTES} an input may be")
        if kind == BEHIND:
            behind_from_json(body)
        if kind == LOST:
            lost_from_json(body)
        return self.read_input(kind, body, check=True)

    def read_input(self, kind: str, body: dict[str, Any], check: bool = False) -> Input:
        """An input read once: a bus message decoded, then the role's reading of it
        (:meth:`read`). ``check``: live, so the role first checks who sent the message
        (:meth:`check_message`); a replay reads what was accepted."""
        message = Message.from_dict(body) if kind == "msg" else None
        if check and message is not None:
            self.check_message(message)
        return self.read(Input(kind, body, message))

    def check_message(self, m: Message) -> None:
        """Raise :class:`InputRefused` for a message this unit does not take from its
        sender (before its content is read). Roles say who may send what."""

    def read(self, taken: Input) -> Input:
        """The role's reading of an input (its ``value``); raises ValueError naming what is
        wrong. Default: nothing more to read."""
        return taken

    def reject(self, kind: str, body: Any, problem: str) -> None:
        """Refuse an input without touching the state: log it, count it, keep the newest."""
        self.rejected += 1
        who = body.get("sender") if isinstance(body, dict) else None
        what = f"{kind} from {who}" if who else kind
        if isinstance(body, dict) and "kind" in body:
            what = f"{body.get('kind')!s:.40} {what}"
        self.rejections.append({"input": kind, "sender": who, "problem": problem})
        self.rejected_log("%s: rejected %s: %s", self.unit_id, what, problem)
        self._journal_evidence(kind, who, problem, body)

    def _journal_evidence(self, kind: str, who: Any, problem: str, body: Any) -> None:
        """A bounded record of what was rejected and why, in the journal (rate-limited)."""
        now = time.monotonic()
        self._evidence_tokens = min(float(EVIDENCE_PER_MINUTE),
                                    self._evidence_tokens + (now - self._evidence_at) * EVIDENCE_PER_MINUTE / 60)
        self._evidence_at = now
        if self._evidence_tokens < 1 or self._replaying:
            self.evidence_skipped += 1
            return
        self._evidence_tokens -= 1
        try:
            text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=repr)
        except Exception:  # noqa: BLE001 - evidence of a body that is not even JSON
            text = repr(body)
        evidence = {"input": str(kind)[:64], "sender": who if isinstance(who, str) else None,
                    "problem": str(problem)[:EVIDENCE_BYTES], "excerpt": text[:EVIDENCE_BYTES],
                    "bytes": len(text), "not_journalled_before": self.evidence_skipped}
        if isinstance(evidence["sender"], str):
            evidence["sender"] = evidence["sender"][:128]
        if self.halted:                     # the state partition is full: counted, not written
            self.evidence_skipped += 1
            return
        try:
            self.journal.write_step([Record("in", REJECTED, evidence, round=self.current_round())])
        except StorageError as exc:         # evidence never stops a unit: the step path halts it
            self.evidence_skipped += 1
            log.warning("%s: rejection evidence not journalled: %s", self.unit_id, exc)
            return
        self.evidence_skipped = 0

    # -- checkpoints (journal rotation) -------------------------------------------------

    def profile_of(self, name: str) -> Profile:
        """The profile a checkpointed round or seat was played with (roles say)."""
        raise ValueError(f"{self.role} {self.unit_id}: no profile {name!r} here")

    def state_added(self) -> dict[str, tuple[int, Callable[[], Any]]]:
        """State kept in checkpoints since a later format: name -> (the format that added it,
        its value in an older checkpoint). An older checkpoint lacks exactly those names."""
        # format 3: devices_down (a checkpoint without it had every port up) and behind
        return {"devices_down": (3, dict), "behind": (3, lambda: None)}

    # -- devices -----------------------------------------------------------------------

    def device_event(self, item: HalEvent) -> list[tuple[str, dict[str, Any]]]:
        """A port's link lost / restored as a journalled ``device`` input (else nothing)."""
        kind = self.device_kinds.get(item.device, "device")
        if isinstance(item, ConnectionLost):
            return [("device", {"device": item.device, "kind": kind, "state": "down",
                                "reason": str(item.reason)[:200]})]
        if isinstance(item, ConnectionRestored):
            return [("device", {"device": item.device, "kind": kind, "state": "up"})]
        return []

    def on_device(self, body: dict[str, Any]) -> bool:
        """A port's link state changed: kept, alarmed (to the pit through the role's alarm
        path and the reports) and logged. Always journalled: the HAL reports each change once."""
        d = device_input(body)
        code = DEVICE_CODES.get(d["kind"], "device")
        name = d["device"]
        if d["state"] == "down":
            self.devices_down[name] = {"kind": d["kind"], "reason": d.get("reason", "")}
            self.alarm(f"{code}_down", f"{d['kind']} {name!r} lost: {d.get('reason', '')}", device=name)
        else:
            self.devices_down.pop(name, None)
            self.alarm(f"{code}_restored", f"{d['kind']} {name!r} is back", device=name)
        self.log_change(name, "%s: %s %r %s%s", self.unit_id, d["kind"], name,
                        "LOST" if d["state"] == "down" else "restored",
                        f": {d['reason']}" if d.get("reason") else "")
        return True

    def devices_reopened(self) -> None:
        """At start every port was opened again: a port that was down is up until its HAL
        says otherwise (a serial device silent past its timeout is reported lost again)."""
        for name, d in sorted(self.devices_down.items()):
            if d["kind"] != "broker":         # not a port: the link says when it is back
                self.on_device({"device": name, "kind": d["kind"], "state": "up"})

    def log_change(self, key: str, fmt: str, *args: Any) -> None:
        """A state change at INFO (journald takes stderr), at most one per ``key`` every
        LOG_EVERY seconds; the ones in between are counted in the next line."""
        if self._replaying:
            return
        now = time.monotonic()
        last, skipped = self._logged.get(key, (float("-inf"), 0))
        if now - last < LOG_EVERY:
            self._logged[key] = (last, skipped + 1)
            return
        self._logged[key] = (now, 0)
        log.info(fmt + (f" ({skipped} change(s) not logged before)" if skipped else ""), *args)

    # -- a unit behind what the controller holds for it (issue #11.5) -------------------

    def on_software(self, result: dict[str, Any]) -> bool:
        """This start's verification (a ``software`` input): not verified is an alarm, and
        the role takes no bets while it lasts."""
        now = None if result["verified"] else result["detail"]
        if now == self.not_verified:
            return False
        self.not_verified = now
        if now is not None:
            self.alarm("not_verified", f"software not verified, no bets taken: {now}"[:200])
        return True

    def on_behind(self, body: dict[str, Any], box: int | None = None) -> bool:
        """The link found the controller's confirmed mark past everything this unit's
        outbox ever numbered: the unit was restarted from an older copy of its state. It
        stays so (bets refused) until its newest state is restored; the alarm says how.
        ``box``: the seat whose hello said so (a dealer behind what a seat heard)."""
        behind = behind_from_json(body)
        if behind == self.behind:
            return False
        self.behind = behind
        if "confirmed" in behind:
            n, m = behind["outbox_seq"], behind["confirmed"]
            what = (f"its outbox numbered reports through seq {n}, the jackpot controller has confirmed "
                    f"through seq {m} (reports {n + 1}-{m} are not in this unit's state")
        elif "heard" in behind:
            n, m = behind["unit_seq"], behind["heard"]
            what = (f"its journal holds its messages through seq {n}, the dealer has heard seq {m} from "
                    f"it (messages {n + 1}-{m} are not in this unit's state")
        else:
            n, m = behind["stream_seq"], behind["seat_heard"]
            who = "a seat" if box is None else f"seat {box}"
            what = (f"its journal holds its table stream through seq {n}, {who} has heard stream seq {m} "
                    f"(stream messages {n + 1}-{m} are not in this unit's state")
        self.alarm(BEHIND, f"{self.unit_id} is behind its confirmed mark: {what}: it was restarted from an "
                   "older copy). Bets are refused here. Restore this unit's newest state directory "
                   "(journal.db, with its outbox; an outbox.db of older firmware too) and restart it; if there is none, a supervisor reconciles its "
                   "rounds from the dealer's journal and `betbox jackpot report` and then clears this with "
                   "`betbox pit reconciled`" + ("" if box is None else
                   f". Only seat {box}'s hello says so: if this unit was not restored, that seat's "
                   "credentials are misused (stop it, then reconcile)"),
                   **behind, **({} if box is None else {"box": box}))
        return True

    def on_lost(self, body: dict[str, Any]) -> bool:
        """The jackpot controller went back (restored from an older copy) below reports this
        unit no longer keeps: it sent again those it kept; these a supervisor reconciles."""
        lost = lost_from_json(body)
        self.alarm(LOST, f"the jackpot controller confirms {self.unit_id}'s reports only through seq "
                   f"{lost['controller']} (it had confirmed through {lost['confirmed']}: restored from an older "
                   f"copy); reports {lost['first']}-{lost['last']} are no longer kept here to send again. The "
                   "reports after them were sent again. A supervisor reconciles these from this unit's journal "
                   "(`betbox journal`) and `betbox jackpot report`", **lost)
        return True

    def reconcile(self, by: str) -> str | None:
        """A supervisor reconciled this unit's rounds (the pit's ``reconciled`` command): the
        behind flag is cleared, bets are taken again, the alarm ``reconciled`` names who.
        Returns why not (this unit is not behind), else None. The reports the outbox holds
        under the controller's mark are moved aside, kept (:meth:`Outbox.reconcile`), in
        the step's own transaction: a live step only (a replay finds them moved)."""
        if self.behind is None:
            return f"{self.unit_id} is not behind its confirmed mark: nothing to reconcile"
        was, self.behind = self.behind, None
        outbox = self.outbox
        if outbox is not None and not self._replaying:
            self._in_step.append(lambda: outbox.reconcile(by))
        self.alarm(RECONCILED, f"{self.unit_id}: its rounds were reconciled by {by} (it was behind its "
                   f"confirmed mark: {', '.join(f'{k} {v}' for k, v in sorted(was.items()))}); bets are "
                   "taken again. The reports its outbox held under the controller's mark are set aside "
                   "for the supervisor (betbox diag counts them)", by=by, was=was)
        return None

    def checkpoint(self) -> dict[str, Any]:
        """The unit's state after the last step as plain, versioned JSON: what the next
        journal file starts from. Reading it back never executes anything."""
        state = state_to_json(self)
        return {"format": CHECKPOINT_FORMAT, "firmware": __version__, "role": self.role,
                "unit": self.unit_id, "state": state}

    def restore(self, data: Any, source: str = "checkpoint") -> None:
        """Take the state of a checkpoint; all or nothing. A checkpoint that cannot be read
        raises :class:`CheckpointError` naming ``source`` (the journal file) and what is
        wrong; the unit is left as it was."""
        def bad(what: str) -> CheckpointError:
            return CheckpointError(f"{source}: {what}")
        if not isinstance(data, dict):
            raise bad(f"a checkpoint is a JSON object, not {type(data).__name__}")
        fmt = data.get("format")
        if isinstance(fmt, bool) or fmt not in READS_FORMATS:
            raise bad(f"checkpoint format {_short(fmt)} (written by firmware {_short(data.get('firmware'))}); "
                      f"firmware {__version__} reads format {CHECKPOINT_FORMAT} "
                      f"(and {', '.join(str(f) for f in READS_FORMATS if f != CHECKPOINT_FORMAT)})")
        if data.get("role") != self.role or data.get("unit") != self.unit_id:
            raise bad(f"the checkpoint is of {_short(data.get('role'))} {_short(data.get('unit'))}, "
                      f"not {self.role} {self.unit_id!r}")
        state = data.get("state")
        if not isinstance(state, dict):
            raise bad(f"the checkpoint has no state object (got {_short(state)})")
        names = {f.name for f in fields(self)}
        added = {name: default for name, (since, default) in self.state_added().items()
                 if fmt < since and name not in state}
        missing = sorted(names - set(state) - set(added))
        unknown = sorted(set(state) - names)
        if missing or unknown:
            raise bad(f"checkpoint state: missing {missing}, unknown {unknown}")
        try:
            decoded = state_from_json(self, state, self.profile_of, skip=frozenset(added))
        except ValueError as exc:
            raise bad(str(exc)) from None
        decoded.update({name: default() for name, default in added.items()})
        vars(self).update(decoded)          # only once every value has been read
        self.after_restore()

    def after_restore(self) -> None:
        """Whatever follows from the restored state (derived values)."""

    def at_round_boundary(self) -> bool:
        """May the journal rotate now (no round in play)? Roles say; default never."""
        return False

    def recover(self) -> int:
        """Restore the journal's checkpoint (if it was rotated) and replay the steps after
        it; re-send undelivered messages. Returns the steps replayed."""
        checkpoint = self.journal.checkpoint()
        if checkpoint is not None:
            self.restore(checkpoint, source=f"{self.journal.path} (checkpoint)")
        self._replaying = True
        steps = 0
        try:
            for records in self.journal.steps():
                ins = [r for r in records if r.dir == "in"]
                outs = [r for r in records if r.dir == "out"]
                if len(ins) != 1:
                    raise ReplayDiverged(f"{self.unit_id}: step {records[0].step} has {len(ins)} inputs")
                if ins[0].kind == REJECTED and not outs:
                    steps += 1                  # evidence only: it never changed the state
                    continue
                self._outs = []
                self._replay(ins[0], records[0].step)
                again = [m.to_dict() for m in self._outs]
                if _canon(again) != _canon([r.body for r in outs]):
                    raise ReplayDiverged(f"{self.unit_id}: replaying step {records[0].step} "
                                         f"({ins[0].kind}) does not give the journalled messages")
                steps += 1
        finally:
            self._outs = []
            self._replaying = False
        self.replayed_steps = steps
        for record in self.journal.undelivered():
            assert record.seq is not None           # journal.records(): every record has its seq
            self.bus.publish(Message.from_dict(record.body))
            self.journal.mark_delivered([record.seq])
        self.after_recover()
        self.after_step()
        return steps

    def _replay(self, record: Record, step: int | None) -> None:
        """One journalled input taken again. One the unit cannot take (a record damaged on
        the card, still JSON: SQLite keeps no checksum of what a page holds) refuses the
        start naming the journal and the step, not as a fault in betbox."""
        try:
            self._take(self.read_input(record.kind, dict(record.body)))
        except (ReplayDiverged, StorageError):
            raise
        except Exception as exc:  # noqa: BLE001 - whatever a damaged record makes a handler raise
            raise ReplayDiverged(
                f"{self.journal.path}: step {step} ({record.kind!s:.40}) cannot be replayed "
                f"({type(exc).__name__}: {reprlib.repr(str(exc))}): the journal is damaged (or was written by "
                "other firmware); the unit does not start from it") from None

    # -- for subclasses ----------------------------------------------------------------

    @property
    def replaying(self) -> bool:
        return self._replaying

    def translate(self, item: Any) -> list[tuple[str, dict[str, Any]]]:
        """A queued item (HAL event, bus message) as journal inputs ``(kind, body)``."""
        if isinstance(item, Message):
            return [("msg", item.to_dict())]
        if isinstance(item, tuple) and len(item) == 2:
            return [item]
        raise TypeError(f"{self.unit_id}: cannot handle {item!r}")

    @abstractmethod
    def handle(self, taken: Input) -> bool:
        """Must override: apply one journalled input, read once (:class:`Input`); True when
        it changed the state."""

    def current_round(self) -> int | None:
        return None

    @abstractmethod
    def publish_alarm(self, entry: dict[str, Any]) -> None:
        """Must override: send an alarm where this role sends them."""

    def after_step(self) -> None:
        """Drive lamps / refresh the screen from the state (skipped while replaying)."""

    def after_recover(self) -> None:
        """Whatever a restarted unit does once its journal is replayed."""
