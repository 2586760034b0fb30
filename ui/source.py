"""Reads what the seat display needs from a seat unit: its view.

The runtime's :class:`~firmware.runtime.view.SeatView` carries everything the screen shows
(built by :func:`firmware.runtime.seatview.build_seat_view` after every step), as codes and
amounts. Two things a seat cannot know itself are added here:

* the table's alarms (shoe jam, door open, ...), published by the dealer unit on the
  table's alarm topic, which the seat unit does not subscribe to;
* a simulated jackpot controller (``ControllerFeed``) for a demo table whose seats have no
  controller link: used only while the view says no controller is known.

Plain Python, no Kivy. :meth:`SeatSource.snapshot` reads one attribute (``seat.view``, a
frozen value replaced after each step), so it may be called from any thread.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from fractions import Fraction
from typing import Any, Callable

from firmware.runtime.bus import Message, alarm_topic
from firmware.runtime.view import AlarmView

from .model import ControllerState, SeatSnapshot

#: Table conditions that last until their counterpart arrives (not just this round).
LASTING = {"shoe_jam": "shoe_jam_cleared", "shoe_door_opened": "shoe_door_closed"}


def alarm_view(body: dict[str, Any]) -> AlarmView:
    params = tuple(sorted((k, str(v)) for k, v in body.items()
                          if k not in ("unit", "alarm", "detail") and isinstance(v, (str, int, float))))
    return AlarmView(str(body.get("alarm", "")), params)


class ControllerFeed:
    """A simulated jackpot controller link (meter, PENDING, link state) for a demo table
    whose seats have none. A seat that knows its controller puts it in its view."""

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
        self._table_alarms: list[tuple[int | None, AlarmView]] = []
        self._lasting: dict[str, AlarmView] = {}
        if bus is not None:
            bus.subscribe(alarm_topic(seat.table), self._on_alarm, f"{seat.unit_id}/screen")

    def _on_alarm(self, m: Message) -> None:
        body = dict(m.body)
        if body.get("unit") == self.seat.unit_id:
            return                      # the seat's own alarm: already in its view
        code = str(body.get("alarm", ""))
        with self._lock:
            for start, end in LASTING.items():
                if code == end:
                    self._lasting.pop(start, None)
            if code in LASTING:
                self._lasting[code] = alarm_view(body)
            elif code not in LASTING.values():
                self._table_alarms.append((body.get("round"), alarm_view(body)))
                del self._table_alarms[:-16]

    def controller_state(self, view) -> ControllerState:
        c = view.controller
        if c.link is not None:
            return ControllerState(c.link, c.meter, c.pending)
        return self.controller.state

    def snapshot(self) -> SeatSnapshot:
        view = self.seat.view
        with self._lock:
            table = (*self._lasting.values(),
                     *(a for r, a in self._table_alarms if r == view.round and view.round))
        return SeatSnapshot(view=view, title=self.title or "", controller=self.controller_state(view),
                            table_alarms=tuple(table))
