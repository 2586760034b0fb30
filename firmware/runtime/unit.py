"""What every unit shares: one dispatch queue, one writer of state, journal-then-act.

A step is one accepted input and every message it makes the unit emit. The handler
(:meth:`Unit.handle`) is deterministic: no clock, no randomness, only the unit's state and
the input. The step is written to the journal in one transaction, and only then are the
messages published and the lamps and screen updated. A restarted unit runs its journalled
inputs through the same handler (emitting nothing), checks that it would have emitted
exactly what the journal holds, re-sends what was never delivered, and carries on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import json
import pickle
import queue
from typing import Any, Callable

from .bus import Bus, Message
from .journal import Journal, Record


class ReplayDiverged(RuntimeError):
    """The journal says the unit emitted something its handlers would not emit now:
    a different firmware or a corrupted journal. The unit must not go on."""


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class Unit(ABC):
    role = "unit"
    #: Attributes that are wiring or configuration, not state: a checkpoint leaves them
    #: out, so a restart takes them from the configuration as a full replay would.
    TRANSIENT = frozenset({"unit_id", "table", "bus", "journal", "inbox", "_outs", "_replaying",
                           "_observers", "replayed_steps"})

    def __init__(self, unit_id: str, table: str, bus: Bus, journal: Journal) -> None:
        self.unit_id = unit_id
        self.table = table
        self.bus = bus
        self.journal = journal
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.seq = 0
        self.alarms: list[dict[str, Any]] = []
        self._outs: list[Message] = []
        self._replaying = False
        self._observers: list[Callable[["Unit"], None]] = []
        self.replayed_steps = 0

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

    def observe(self, callback: Callable[["Unit"], None]) -> None:
        self._observers.append(callback)

    # -- the step ----------------------------------------------------------------------

    def step(self, kind: str, body: dict[str, Any]) -> bool:
        """Handle one input; journal it with its messages; then act. False: not accepted."""
        self._outs = []
        accepted = self.handle(kind, body)
        if not accepted:
            if self._outs:
                raise RuntimeError(f"{self.unit_id}: a refused input emitted messages")
            return False
        records = [Record("in", kind, body, round=self.current_round())]
        records += [Record("out", m.kind, m.to_dict(), seq=m.seq, round=self.current_round())
                    for m in self._outs]
        self.journal.write_step(records)          # journal first ...
        outs, self._outs = self._outs, []
        for message in outs:                     # ... then act
            self.bus.publish(message)
        self.journal.mark_delivered([m.seq for m in outs])
        if self.at_round_boundary() and self.journal.wants_rotation(self.current_round()):
            self.journal.rotate(self.snapshot())
        self.after_step()
        for callback in self._observers:
            callback(self)
        return True

    def emit(self, topic: str, kind: str, body: dict[str, Any]) -> Message:
        self.seq += 1
        message = Message(topic=topic, kind=kind, sender=self.unit_id, seq=self.seq, body=body)
        self._outs.append(message)
        return message

    def alarm(self, kind: str, detail: str, **extra: Any) -> dict[str, Any]:
        """Record an alarm; the subclass decides where it is published."""
        entry = {"unit": self.unit_id, "alarm": kind, "detail": detail, **extra}
        self.alarms.append(entry)
        self.publish_alarm(entry)
        return entry

    # -- recovery ----------------------------------------------------------------------

    # -- checkpoints (journal rotation) -------------------------------------------------

    def snapshot(self) -> bytes:
        """The unit's state after the last step, for the next journal file to start from."""
        state = {k: v for k, v in vars(self).items() if k not in self.TRANSIENT}
        return pickle.dumps({"role": self.role, "unit": self.unit_id, "state": state},
                            protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, checkpoint: bytes) -> None:
        data = pickle.loads(checkpoint)
        if data.get("role") != self.role or data.get("unit") != self.unit_id:
            raise ReplayDiverged(f"{self.unit_id}: the journal's checkpoint is of {data.get('role')} "
                                 f"{data.get('unit')!r}")
        vars(self).update(data["state"])

    def at_round_boundary(self) -> bool:
        """May the journal rotate now (no round in play)? Roles say; default never."""
        return False

    def recover(self) -> int:
        """Restore the journal's checkpoint (if it was rotated) and replay the steps after
        it; re-send undelivered messages. Returns the steps replayed."""
        checkpoint = self.journal.checkpoint()
        if checkpoint is not None:
            self.restore(checkpoint)
        self._replaying = True
        steps = 0
        try:
            for records in self.journal.steps():
                ins = [r for r in records if r.dir == "in"]
                outs = [r for r in records if r.dir == "out"]
                if len(ins) != 1:
                    raise ReplayDiverged(f"{self.unit_id}: step {records[0].step} has {len(ins)} inputs")
                self._outs = []
                self.handle(ins[0].kind, dict(ins[0].body))
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
            self.bus.publish(Message.from_dict(record.body))
            self.journal.mark_delivered([record.seq])
        self.after_recover()
        self.after_step()
        return steps

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
    def handle(self, kind: str, body: dict[str, Any]) -> bool:
        """Must override: apply one journalled input; True when it changed the state."""

    def current_round(self) -> int | None:
        return None

    @abstractmethod
    def publish_alarm(self, entry: dict[str, Any]) -> None:
        """Must override: send an alarm where this role sends them."""

    def after_step(self) -> None:
        """Drive lamps / refresh the screen from the state (skipped while replaying)."""

    def after_recover(self) -> None:
        """Whatever a restarted unit does once its journal is replayed."""
