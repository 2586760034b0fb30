"""Reads what the seat display needs from a seat unit: its view.

The runtime's :class:`~firmware.runtime.view.SeatView` carries everything the screen shows
(built by :func:`firmware.runtime.seatview.build_seat_view` after every step), as codes and
amounts, the table's faults included: the seat unit takes the dealer's alarms (shoe jam,
shoe door, misread, ...) as journalled inputs and its view lists those in force
(``view.table_alarms``). This module does not listen to the bus.

One thing a seat may not know is added here: a simulated jackpot controller
(``ControllerFeed``) for a demo table whose seats have no controller link, used only while
the view says no controller is known.

Plain Python, no Kivy. :meth:`SeatSource.snapshot` reads one attribute (``seat.view``, a
frozen value replaced after each step), so it may be called from any thread.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from fractions import Fraction
from typing import Any, Callable

from firmware.engine.money import format_amount
from firmware.runtime.wire import ControllerStatus

from .model import SeatSnapshot


class ControllerFeed:
    """A simulated jackpot controller link (meter, PENDING, link state) for a demo table
    whose seats have none. A seat that knows its controller puts it in its view."""

    def __init__(self, link: str | None = None, meter: Fraction | None = None) -> None:
        self._lock = threading.Lock()
        self._state = ControllerStatus(link, _meter_text(meter), False)
        self._listeners: list[Callable[[ControllerStatus], None]] = []

    @property
    def state(self) -> ControllerStatus:
        with self._lock:
            return self._state

    def listen(self, callback: Callable[[ControllerStatus], None]) -> None:
        self._listeners.append(callback)

    def set(self, **changes: Any) -> None:
        with self._lock:
            if "meter" in changes:
                changes["meter"] = _meter_text(changes["meter"])
            self._state = replace(self._state, **changes)
            state = self._state
        for callback in self._listeners:
            callback(state)


def _meter_text(meter: Fraction | str | None) -> str | None:
    """A meter as the controller status carries it: wire text ("25009.25")."""
    return meter if meter is None or isinstance(meter, str) else format_amount(Fraction(meter))


def _conditions_now(seat) -> tuple[str, ...] | None:
    """The seat's unit conditions as of now (some, like its bus link, change between
    steps); None for a seat that is not a seat unit."""
    from firmware.runtime.seat import unit_conditions
    try:
        return unit_conditions(seat)
    except AttributeError:
        return None


class SeatSource:
    """Snapshots of one seat unit for its screen: its view, and the demo's controller
    while the view knows none."""

    def __init__(self, seat, controller: ControllerFeed | None = None, title: str | None = None) -> None:
        self.seat = seat
        self.controller = controller or ControllerFeed()
        self.title = title

    def controller_state(self, view) -> ControllerStatus:
        c = view.controller
        if c.link is not None:
            return c
        return self.controller.state

    def snapshot(self) -> SeatSnapshot:
        view = self.seat.view
        now = _conditions_now(self.seat)
        if now is not None and now != view.conditions:
            view = replace(view, conditions=now)   # the bus link changed since the last step
        return SeatSnapshot(view=view, title=self.title or "", controller=self.controller_state(view))
