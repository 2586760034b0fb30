"""A simulated table for the windowed demo: one in-process table, its own thread.

The table (dealer, seven seats, mock hardware) lives in one worker thread, the one writer
of its state. It plays by itself (the simulated players of ``firmware.sim``), or a person
drives it from the keyboard / on-screen dealer controls; both only touch the mock
hardware (chips, cards, console buttons), never the engine. The screen gets snapshots of
the chosen seat through ``on_snapshot`` (called in the worker thread: the Kivy side hops to
its own thread with ``@mainthread``). Plain Python, no Kivy.
"""

from __future__ import annotations

import queue
import tempfile
import threading
import time
from fractions import Fraction
from pathlib import Path
from typing import Callable

from firmware.engine.profile import Profile
from firmware.runtime.table import TableSpec, seat_spots
from firmware.sim import chipset
from firmware.sim.driver import LIMITS, TableDriver
from hal.mock_keys import DEFAULT_KEYS, KeyboardDriver, MockDriver

from .model import SeatSnapshot
from .source import ControllerFeed, SeatSource

#: Keys of the demo on top of ``hal.mock_keys.DEFAULT_KEYS`` (console buttons, cards).
DEMO_KEYS = {"a": "auto play on/off", "b": "bet 20 on main", "g": "bet on the side bets",
             "c": "deal the next card", "l": "jackpot link down/up", "m": "unknown chip on main"}
SEED_METER = Fraction(25000)


class DemoTable:
    def __init__(self, profile: Profile, box: int = 1, seed: int = 1, pace: float = 0.8,
                 state_dir: Path | None = None, auto: bool = True) -> None:
        self.profile = profile
        self.box = box
        self.pace = pace
        self.auto = auto
        self._tmp = None
        if state_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="betbox-demo-ui-")
            state_dir = Path(self._tmp.name)
        meter = SEED_METER if profile.progressive is not None else None
        # Simulated jackpot controller: the MQTT controller link is not there yet.
        self.controller = ControllerFeed("up" if meter is not None else None, meter)
        self.spec = TableSpec("demo", profile, seed, state_dir, limits=LIMITS)
        self.driver: TableDriver | None = None
        self.source: SeatSource | None = None
        self.on_snapshot: Callable[[SeatSnapshot], None] | None = None
        self._commands: queue.SimpleQueue = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_view = None
        self.error: BaseException | None = None

    # -- lifecycle (called from the UI thread) -----------------------------------------

    def start(self, on_snapshot: Callable[[SeatSnapshot], None]) -> None:
        self.on_snapshot = on_snapshot
        self._thread = threading.Thread(target=self._run, name="demo-table", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._commands.put(None)
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._tmp is not None and (self._thread is None or not self._thread.is_alive()):
            self._tmp.cleanup()

    def command(self, fn: Callable[["DemoTable"], None]) -> None:
        """Run ``fn(self)`` in the table's thread (in auto play: between rounds)."""
        self._commands.put(fn)

    def set_auto(self, on: bool) -> None:
        """Auto play on/off (from any thread); off takes effect when the round is over."""
        self.auto = on
        self._commands.put(lambda d: None)        # wake a waiting manual loop

    # -- the worker thread -------------------------------------------------------------

    def _run(self) -> None:
        try:
            self.driver = TableDriver.create(self.spec)
            t = self.driver.table
            t.dealer.meter = self.controller.state.meter
            seat = t.seats[self.box]
            self.source = SeatSource(seat, self.controller, bus=t.bus)
            self.keys = KeyboardDriver(MockDriver(t.shoe, t.readers[self.box], t.console), DEFAULT_KEYS)
            seat.observe(self._observed)
            self.controller.listen(lambda _state: self.command(lambda d: None))
            self._push()
            while not self._stop.is_set():
                if self.auto:
                    self._drain()
                    if self.auto and not self._stop.is_set():
                        self.driver.play_round()
                        self._pause(self.pace * 3)
                else:
                    fn = self._commands.get()
                    if fn is None:
                        break
                    fn(self)
                    self._drain()
                    self._push()
        except _Stopped:
            pass
        except BaseException as exc:  # noqa: BLE001 - shown on the screen, not lost
            self.error = exc
            raise
        finally:
            if self.driver is not None:
                self.driver.table.close()

    def _drain(self) -> None:
        while True:
            try:
                fn = self._commands.get_nowait()
            except queue.Empty:
                return
            if fn is None:
                raise _Stopped
            fn(self)

    def _pause(self, seconds: float) -> None:
        if self._stop.wait(seconds):
            raise _Stopped

    def _observed(self, _unit) -> None:
        """After each step of the watched seat: a snapshot; in auto play, a pause when
        something a player sees changed (so a person can follow the round)."""
        view = self._push()
        if self.auto and view is not None and self.pace > 0:
            self._pause(self.pace)

    def _push(self):
        if self.source is None or self.on_snapshot is None:
            return None
        snap = self.source.snapshot()
        changed = snap.view != self._last_view
        self._last_view = snap.view
        self.on_snapshot(snap)
        return snap.view if changed else None

    # -- the person's controls (run in the table thread via command()) ----------------

    @property
    def table(self):
        return self.driver.table

    def press(self, button: str) -> None:
        self.table.console.press(button)
        self.table.settle()

    def key(self, key: str) -> None:
        """A key of ``hal.mock_keys.DEFAULT_KEYS`` or :data:`DEMO_KEYS`."""
        if key == "a":
            self.set_auto(not self.auto)
        elif key == "b":
            self.bet("main", Fraction(20))
        elif key == "g":
            for name in self.profile.side_bets:
                self.bet(name, Fraction(5))
            if self.profile.progressive is not None:
                self.bet("progressive", self.profile.progressive.wager)
        elif key == "c":
            self.deal_next()
        elif key == "l":
            self.controller.set(link="down" if self.controller.state.link == "up" else "up")
        elif key == "m":
            spots = list(seat_spots(self.profile))
            self.table.readers[self.box].place_chips("main", [chipset.unknown_uid(self.box, spots.index("main"))])
            self.table.cycle_readers(2, [self.box])
        else:
            self.keys.key(key)
            self.table.cycle_readers(1, [self.box])
            self.table.settle()

    def open_bets(self) -> None:
        d = self.table.dealer
        if d.phase != "idle":
            return
        self.driver._clear_spots()
        shoe = self.driver._sim_shoe()
        if d.shoe_number == 0 or shoe.cut_card_out:
            self.table.shoe.shuffle()
            self.table.settle()
        self.press("open_bets")

    def bet(self, spot: str, amount: Fraction) -> None:
        spots = list(seat_spots(self.profile))
        reader = self.table.readers[self.box]
        layer = 1 + len(reader.chips_on(spot)) // 8 if reader.chips_on(spot) else 0
        reader.place_chips(spot, chipset.chips_for(amount, self.box, spots.index(spot), min(layer, 7)))
        self.table.cycle_readers(2, [self.box])

    def deal_next(self) -> None:
        shoe = self.driver._sim_shoe()
        if shoe.left:
            self.table.shoe.deal(str(shoe.cards[shoe.pos]))
            self.table.settle()

    def service_table(self):
        return self.driver.table if self.driver is not None else None

    def wait_ready(self, timeout: float = 10.0) -> bool:
        end = time.monotonic() + timeout
        while self.source is None and time.monotonic() < end and self.error is None:
            time.sleep(0.01)
        return self.source is not None


class _Stopped(Exception):
    pass
