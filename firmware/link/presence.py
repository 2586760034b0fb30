"""Whether a seat can take progressive wagers: its own MQTT link is up *and* the jackpot
controller says it is online (retained status, ``offline`` as its will). Also keeps the
last meter the controller broadcast, for the seat's screen.

The seat-side hook: ``ControllerWatch.available`` / ``reason`` feed the seat's
progressive lamp and the refusal of progressive wagers (see the issue #6 report).
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable

from . import topics
from .mqtt import MqttBus

UNAVAILABLE_NO_BROKER = "progressive closed: this seat has lost its link to the jackpot controller"
UNAVAILABLE_CONTROLLER = "progressive closed: the jackpot controller is offline"


class ControllerWatch:
    def __init__(self, bus: MqttBus, link_id: str = "main") -> None:
        self.bus = bus
        self.link_id = topics.check_link_id(link_id)
        self._controller_online = False
        self._lock = threading.Lock()
        self._listeners: list[Callable[[bool, str | None], None]] = []
        self.meter: dict[str, Any] | None = None
        self._last = False                  # unavailable until the controller says online
        bus.subscribe_raw(topics.jackpot_status_topic(link_id), self._on_status)
        bus.subscribe_raw(topics.meter_topic(link_id), self._on_meter)
        bus.add_link_listener(lambda up: self._changed())

    def _on_status(self, topic: str, payload: bytes) -> None:
        try:
            state = json.loads(payload).get("state")
        except (ValueError, AttributeError):
            state = None
        with self._lock:
            self._controller_online = state == "online"
        self._changed()

    def _on_meter(self, topic: str, payload: bytes) -> None:
        try:
            self.meter = json.loads(payload)
        except ValueError:
            pass

    @property
    def available(self) -> bool:
        with self._lock:
            return self.bus.connected and self._controller_online

    @property
    def reason(self) -> str | None:
        """Why progressive wagers are refused now (for the seat's screen); None: they are not."""
        if not self.bus.connected:
            return UNAVAILABLE_NO_BROKER
        with self._lock:
            if not self._controller_online:
                return UNAVAILABLE_CONTROLLER
        return None

    def on_change(self, listener: Callable[[bool, str | None], None]) -> None:
        """``listener(available, reason)`` on every change (paho's thread: only queue)."""
        self._listeners.append(listener)

    def _changed(self) -> None:
        now = self.available
        if now == self._last:
            return
        self._last = now
        for listener in list(self._listeners):
            listener(now, self.reason)
