"""A running seat unit as the screen's feed (``betbox run``): the same interface as
:class:`ui.demo.DemoTable` — ``start(on_snapshot)``, ``stop()``, ``source``, ``profile``,
``controller`` — for a seat pumped by the runtime's own thread. Plain Python, no Kivy."""

from __future__ import annotations

from typing import Any, Callable

from .model import SeatSnapshot
from .source import ControllerFeed, SeatSource


class SeatFeed:
    auto = False

    def __init__(self, seat, controller: ControllerFeed | None = None, bus=None, table=None,
                 config_digest: str | None = None, diag=None) -> None:
        self.seat = seat
        self.controller = controller or ControllerFeed()
        # ``bus`` is not listened to: the seat takes the table's alarms itself (its view)
        self.source = SeatSource(seat, self.controller)
        self._table = table
        self.config_digest = config_digest
        self.diag = diag                    # firmware.diag.LiveDiag: the service menu's diagnostics
        self.on_snapshot: Callable[[SeatSnapshot], None] | None = None

    @property
    def profile(self):
        return self.seat.profile

    def start(self, on_snapshot: Callable[[SeatSnapshot], None]) -> None:
        """Observe the seat: ``on_snapshot`` runs in the seat's thread after each step."""
        self.on_snapshot = on_snapshot
        self.seat.observe(lambda _unit: on_snapshot(self.source.snapshot()))
        # the broker link changes between the seat's steps: show it when it does
        listen = getattr(getattr(self.seat, "bus", None), "add_link_listener", None)
        if callable(listen):
            def link_changed(*_a: Any) -> None:
                feed = self.on_snapshot             # None once stopped
                if feed is not None:
                    feed(self.source.snapshot())
            listen(link_changed)
        on_snapshot(self.source.snapshot())

    def stop(self) -> None:
        self.on_snapshot = None

    def command(self, fn) -> None:          # nothing to drive on a real table
        return None

    def service_table(self):
        return self._table
