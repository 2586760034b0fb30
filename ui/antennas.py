"""The chip reader's raw reads per antenna, live, for the technician's service screen
(issue 14.6): what each antenna saw in the reader's last inventory cycle, before the seat's
debouncer, how many of the recent cycles saw anything there, and the antenna's last fault.

Plain Python, no Kivy. :meth:`AntennaReads.attach` taps the seat's translation of its
inputs (the seat's own thread, where every HAL event of the seat passes once); the screen
reads :meth:`AntennaReads.rows` from the UI thread: one frozen tuple, replaced whole.
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from hal.events import InventoryCycle, ReaderFault

RECENT = 20                 # cycles behind "seen in n of the last RECENT cycles"
SHOWN_UIDS = 4              # UIDs written out per antenna; more are counted


@dataclass(frozen=True)
class AntennaRead:
    antenna: int | None
    spot: str
    uids: frozenset[str]
    seen: int               # of the last ``cycles`` cycles, how many saw a tag here
    cycles: int
    fault: str | None       # the antenna's last fault code since the screen's tap


class AntennaReads:
    """Per antenna: the last cycle's tags, the recent sightings, the last fault."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.cycle: int | None = None       # the last cycle's number
        self.at: float | None = None        # when it was read (``clock``)
        self.reads: tuple[AntennaRead, ...] = ()
        self.reader_fault: str | None = None
        self._history: dict[str, collections.deque[bool]] = {}
        self._faults: dict[str, str] = {}
        self._last: tuple[Any, ...] = ()        # the last cycle's hal.events.SpotRead
        self._lock = threading.Lock()

    @classmethod
    def attach(cls, seat: Any) -> "AntennaReads":
        """Tap ``seat``'s inputs (once: a second call returns the first tap)."""
        tap = getattr(seat, "_antenna_reads", None)
        if isinstance(tap, cls):
            return tap
        tap = cls()
        translate = seat.translate

        def seen(item: Any) -> Any:
            try:
                tap.record(item)
            except Exception:  # noqa: BLE001 - the technician's view never stops the seat's input
                pass
            return translate(item)
        seat.translate = seen
        seat._antenna_reads = tap
        return tap

    def record(self, item: Any) -> None:
        if isinstance(item, ReaderFault):
            with self._lock:
                if item.spot is None:
                    self.reader_fault = str(item.code)
                else:
                    self._faults[item.spot] = str(item.code)
                self._rebuild()
            return
        if not isinstance(item, InventoryCycle):
            return
        with self._lock:
            for read in item.reads:
                self._history.setdefault(read.spot, collections.deque(maxlen=RECENT)).append(bool(read.uids))
            self.cycle, self.at = item.cycle, self.clock()
            self._last = item.reads
            self._rebuild()

    def _rebuild(self) -> None:
        self.reads = tuple(AntennaRead(r.antenna, r.spot, r.uids, sum(self._history.get(r.spot, ())),
                                       len(self._history.get(r.spot, ())), self._faults.get(r.spot))
                           for r in self._last)

    def rows(self) -> tuple[tuple[str, str], ...]:
        """The service screen's rows: one per antenna, then the reader's own fault."""
        reads, cycle, at = self.reads, self.cycle, self.at
        if cycle is None or at is None:
            return (("antennas", "no inventory cycle read yet"),)
        out = [("last cycle", f"{cycle:,} ({self.clock() - at:.1f} s ago)")]
        for r in reads:
            name = f"antenna {r.antenna}" if r.antenna is not None else "antenna ?"
            tags = sorted(r.uids)
            listed = ", ".join(tags[:SHOWN_UIDS]) + (f" +{len(tags) - SHOWN_UIDS} more" if len(tags) > SHOWN_UIDS else "")
            text = (f"{len(tags)} tag{'s' if len(tags) != 1 else ''}" + (f": {listed}" if tags else "")
                    + f" · tags in {r.seen} of the last {r.cycles} cycles"
                    + (f" · last fault {r.fault}" if r.fault else ""))
            out.append((f"{name} ({r.spot})", text))
        if self.reader_fault:
            out.append(("reader", f"last fault {self.reader_fault}"))
        return tuple(out)
