"""Whether a seat can take progressive wagers: its own MQTT link is up *and* the jackpot
controller says it is online (retained status, ``offline`` as its will). Also keeps the
last meter the controller broadcast, for the seat's screen and the dealer's next round.

The runtime hook (the contract with the units): :meth:`ControllerWatch.feed` posts
``("controller", {"link": "up"|"down", "meter": "<amount>"|None, "pending": bool})`` to a
unit's dispatch queue whenever that triple changes, and only then. The seat journals it and
refuses progressive wagers while ``link`` is ``"down"`` (lamp off, reason on its screen);
the dealer takes ``meter`` as the meter of the next round it opens. ``meter`` is the live
amount of the pool that serves this table (``pending`` true while a 100% hit is locked).
"""

from __future__ import annotations

import logging
import re
import threading
from fractions import Fraction
from typing import Any, Callable

from firmware import wirejson
from firmware.runtime.wire import ControllerStatus

from . import topics
from .mqtt import MqttBus

log = logging.getLogger("betbox.link")

UNAVAILABLE_NO_BROKER = "progressive closed: this seat has lost its link to the jackpot controller"
UNAVAILABLE_CONTROLLER = "progressive closed: the jackpot controller is offline"
UNAVAILABLE_FLOOR = "progressive closed: the table has lost its link to the jackpot controller"

CENTS = re.compile(r"^(0|[1-9][0-9]{0,11})(\.[0-9]{1,2})?\Z")     # the controller's meter amounts


def meter_problem(meter: Any, table: str | None, maximum: Fraction | None = None) -> str | None:
    """What is wrong with a meter broadcast for ``table``, or None. Without the ACL anyone
    can publish the retained meter, so the amount a dealer would open its next round with
    is checked: an exact amount of cents, not negative, not above the pool's maximum (the
    one the broadcast states and ``maximum``, the unit's own bound, when it has one)."""
    if not isinstance(meter, dict) or not isinstance(meter.get("pools"), dict):
        return "not a meter broadcast (no pools)"
    pool = pool_for_table(meter, table)
    if pool is None:
        return None
    amount, top = pool.get("amount"), pool.get("maximum")
    if not isinstance(amount, str) or not CENTS.match(amount):
        return f"amount {amount!r:.40} is not an amount of money like \"1234.50\""
    if not isinstance(top, str) or not CENTS.match(top) or Fraction(top) <= 0:
        return f"maximum {top!r:.40} is not an amount of money like \"250000.00\""
    value, stated = Fraction(amount), Fraction(top)
    for bound in (stated, maximum):
        if bound is not None and value > bound:
            return f"amount {amount} is above the pool's maximum {bound}"
    return None


def pool_for_table(meter: dict[str, Any] | None, table: str | None) -> dict[str, Any] | None:
    """The pool of a meter broadcast that serves ``table`` (an explicit listing first, then
    a ``"*"`` pool); None when no pool does."""
    if not isinstance(meter, dict) or not isinstance(meter.get("pools"), dict):
        return None
    pools = [p for p in meter["pools"].values() if isinstance(p, dict)]
    for pool in pools:
        if table is not None and table in (pool.get("tables") or ()):
            return pool
    return next((p for p in pools if "*" in (p.get("tables") or ("*",))), None)


def takes_controller_input(unit: Any) -> bool:
    """Whether the unit takes the ``("controller", ...)`` input (the runtime's side of the
    contract above: ``Unit.accepts_controller``, true on seats and dealers); posting it to a
    unit that does not would stop its dispatch loop, so such a unit runs ungated."""
    return bool(getattr(unit, "accepts_controller", False))


class ControllerWatch:
    def __init__(self, bus: MqttBus, link_id: str = "main", table: str | None = None,
                 maximum: Fraction | None = None) -> None:
        self.bus = bus
        self.maximum = maximum              # the unit's own bound on the meter (None: the broadcast's)
        self.refused = 0                    # status and meter messages refused (counted, logged rate-limited)
        self._refused_log = wirejson.RateLimitedLog(log)
        self.link_id = topics.check_link_id(link_id)
        self.table = table if table is not None else bus.unit_id.split("/")[0]
        self._controller_online = False
        # the table broker's bridge to the floor (docs/floor.md); True with no bridge state
        # seen: the unit is on the controller's own broker
        self._floor_up = True
        self._lock = threading.RLock()
        self._listeners: list[Callable[[bool, str | None], None]] = []
        self._input_listeners: list[Callable[[ControllerStatus], None]] = []
        self.meter: dict[str, Any] | None = None
        self._last = False                  # unavailable until the controller says online
        self._last_input: ControllerStatus | None = None
        bus.subscribe_raw(topics.jackpot_status_topic(link_id), self._on_status)
        bus.subscribe_raw(topics.meter_topic(link_id), self._on_meter)
        bus.subscribe_raw(topics.bridge_state_topic(self.table), self._on_bridge)
        bus.add_link_listener(lambda up: self._changed())

    def _refuse(self, what: str, payload: bytes, problem: str) -> None:
        self.refused += 1
        self._refused_log("%s: refused a %s %.100r: %s", self.bus.unit_id, what, payload[:100], problem)

    def _on_status(self, topic: str, payload: bytes) -> None:
        try:
            state = wirejson.loads(payload).get("state")
            if state not in ("online", "offline"):
                raise ValueError(f"state {state!r:.40} is neither online nor offline")
        except (ValueError, AttributeError) as exc:
            # junk says nothing about the controller: the last status it sent stays in force
            # (taking it as offline would let any message close every progressive spot)
            self._refuse("jackpot status", payload, str(exc) or "not an object")
            return
        with self._lock:
            self._controller_online = state == "online"
        self._changed()

    def _on_bridge(self, topic: str, payload: bytes) -> None:
        """mosquitto's bridge notification on the table broker: ``1`` connected, ``0`` not."""
        state = bytes(payload).strip()
        if state not in (b"0", b"1"):
            self._refuse("bridge state", payload, "neither 1 nor 0")
            return
        with self._lock:
            self._floor_up = state == b"1"
            if not self._floor_up:
                # the controller's last status came over the bridge and says nothing now: the
                # gate stays closed until the controller's status comes again (the bridge
                # subscribes afresh on reconnecting and gets the retained one)
                self._controller_online = False
        self._changed()

    def _on_meter(self, topic: str, payload: bytes) -> None:
        try:
            meter = wirejson.loads(payload)
        except ValueError as exc:
            self._refuse("meter broadcast", payload, str(exc))
            return
        problem = meter_problem(meter, self.table, self.maximum)
        if problem is not None:               # the last good meter stays in force
            self._refuse("meter broadcast", payload, problem)
            return
        self.meter = meter
        self._changed()

    @property
    def available(self) -> bool:
        with self._lock:
            return self.bus.connected and self._floor_up and self._controller_online

    @property
    def reason(self) -> str | None:
        """Why progressive wagers are refused now (for the seat's screen); None: they are not."""
        if not self.bus.connected:
            return UNAVAILABLE_NO_BROKER
        with self._lock:
            if not self._floor_up:
                return UNAVAILABLE_FLOOR
            if not self._controller_online:
                return UNAVAILABLE_CONTROLLER
        return None

    def state(self) -> ControllerStatus:
        """The unit input now: link, the meter of this table's pool, pending."""
        pool = pool_for_table(self.meter, self.table)
        amount = pool.get("amount") if pool else None
        return ControllerStatus("up" if self.available else "down",
                                amount if isinstance(amount, str) else None,
                                bool(pool and pool.get("state") == "pending"))

    def on_change(self, listener: Callable[[bool, str | None], None]) -> None:
        """``listener(available, reason)`` on every change (paho's thread: only queue)."""
        self._listeners.append(listener)

    def on_state(self, listener: Callable[[ControllerStatus], None]) -> None:
        """``listener(state())`` now and whenever it changes (paho's thread: only queue)."""
        with self._lock:
            self._input_listeners.append(listener)
            now = self._last_input = self.state()
        listener(now)

    def feed(self, unit: Any) -> None:
        """Post ``("controller", state)`` to ``unit`` now and on every change."""
        self.on_state(lambda state: unit.post(("controller", state)))

    def _changed(self) -> None:
        with self._lock:
            now = self.available
            flip = now != self._last
            self._last = now
            state = self.state()
            moved = state != self._last_input and bool(self._input_listeners)
            if moved:
                self._last_input = state
            inputs = list(self._input_listeners) if moved else []
        if flip:
            for listener in list(self._listeners):
                listener(now, self.reason)
        for feed in inputs:
            feed(state)
