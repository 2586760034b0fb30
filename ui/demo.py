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
import sys
import tempfile
import threading
import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Callable

from firmware.engine.money import format_amount
from firmware.engine.profile import Profile
from firmware.runtime.phases import DealerPhase, SeatPhase
from firmware.runtime.spots import insurance_spot
from firmware.sim import chipset
from firmware.sim.driver import LIMITS, TableDriver
from firmware.sim.table import TableSpec, seat_spots
from hal.mock_keys import DEFAULT_KEYS, KeyboardDriver, MockDriver

from .model import SeatSnapshot
from .source import ControllerFeed, SeatSource

#: Keys of the demo on top of ``hal.mock_keys.DEFAULT_KEYS`` (console buttons, cards).
DEMO_KEYS = {"a": "auto play on/off", "b": "bet 20 on main", "g": "bet on the side bets",
             "c": "deal the next card", " ": "deal (until the round waits for a decision)",
             "l": "jackpot link down/up", "m": "unknown chip on main",
             "+": "auto play: more time per step", "-": "auto play: less time per step"}
#: Auto play's pause (seconds) after each step a player sees (a card, a decision, a
#: result): slow enough to follow from the seat. ``pace=0``: as fast as it goes (tests).
DEFAULT_PACE = 0.8
PACE_STEP, MAX_PACE = 0.2, 3.0
PACE_KEYS = {"+": 1, "=": 1, "-": -1}
#: Keys for the player's decisions: the demo does what player and dealer do for them
#: (chips for a double, split or insurance; the request on the screen for surrender).
DECISION_KEYS = {"h": "hit", "s": "stand", "d": "double", "p": "split", "r": "surrender",
                 "i": "insurance", "e": "even_money", "w": "switch"}
#: Decisions asked per initial hand (Blackjack Switch: either hand, §3.9.1). The on-screen
#: control is ``<action>_<hand>`` there; the key for the second hand is the capital letter.
HAND_OFFERS = ("insurance", "even_money", "surrender")
HAND_KEYS = {"I": ("insurance", 2), "E": ("even_money", 2), "R": ("surrender", 2)}
#: The order of the player's decisions on the dealer bar.
DECISION_ORDER = ("hit", "stand", "double", "split", "switch", "surrender", "insurance", "even_money")
#: Dealer controls (on-screen buttons) -> keys.
CONTROL_KEYS = {"auto": "a", "manual": "a", "open_bets": "o", "bet": "b", "side_bets": "g",
                "no_more_bets": "n", "deal": " ", **{v: k for k, v in DECISION_KEYS.items()},
                **{f"{a}_1": k for k, a in DECISION_KEYS.items() if a in HAND_OFFERS},
                **{f"{a}_{n}": k for k, (a, n) in HAND_KEYS.items()}}
SEED_METER = Fraction(25000)
DEMO_BET = Fraction(20)


class DemoTable:
    def __init__(self, profile: Profile, box: int = 1, seed: int = 1, pace: float = DEFAULT_PACE,
                 state_dir: Path | None = None, auto: bool = True, rounds: int | None = None,
                 on_done: Callable[[], None] | None = None) -> None:
        self.profile = profile
        self.box = box
        # auto play stops after this many rounds and calls on_done (None: until closed)
        self.rounds, self.on_done, self.played = rounds, on_done, 0
        if not 0 <= pace <= MAX_PACE:
            raise ValueError(f"the demo's pace is 0 to {MAX_PACE} seconds a step, not {pace}")
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

    def change_pace(self, step: int) -> float:
        """More (+1) or less (-1) time per step of auto play, from any thread: it applies
        from the next step on (a float is swapped whole)."""
        self.pace = round(min(MAX_PACE, max(0.0, self.pace + step * PACE_STEP)), 2)
        return self.pace

    def set_auto(self, on: bool) -> None:
        """Auto play on/off (from any thread); off takes effect when the round is over."""
        self.auto = on
        self._commands.put(lambda d: None)        # wake a waiting manual loop

    # -- the worker thread -------------------------------------------------------------

    def _run(self) -> None:
        try:
            self.driver = TableDriver.create(self.spec)
            t = self.driver.table
            meter = self.controller.state.meter
            t.dealer.meter = None if meter is None else Fraction(meter)
            seat = t.seats[self.box]
            self.source = SeatSource(seat, self.controller)
            self.keys = KeyboardDriver(MockDriver(t.shoe, t.readers[self.box], t.console), DEFAULT_KEYS)
            seat.observe(self._observed)
            self.controller.listen(lambda _state: self.command(lambda d: d._post_controller()))
            self._post_controller()
            self._push()
            while not self._stop.is_set():
                if self.auto:
                    self._drain()
                    if self.auto and not self._stop.is_set():
                        self.driver.play_round()
                        self.played += 1
                        print(f"demo: round {self.played} played", file=sys.stderr, flush=True)
                        if self.rounds is not None and self.played >= self.rounds:
                            if self.on_done is not None:
                                self.on_done()
                            break
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

    def _observed(self, unit) -> None:
        """After each step of the watched seat: a snapshot; in auto play, a pause when
        something a player sees changed (so a person can follow the round)."""
        self._simulate_controller(unit.view)
        view = self._push()
        if self.auto and view is not None and self.pace > 0:
            self._pause(self.pace)

    def _simulate_controller(self, view) -> None:
        """The simulated controller locks a 100% hit (meter PENDING) until the round is
        settled, then reseeds: what the jackpot controller does on a real link."""
        c = self.controller.state
        if c.link != "up" or view.progressive is None or not view.progressive.share:
            return
        if view.phase == SeatPhase.PLAY and not c.pending:
            self.controller.set(pending=True)
        elif view.phase in (SeatPhase.OVER, SeatPhase.VOID) and c.pending:
            self.controller.set(pending=False, meter=SEED_METER)

    def _post_controller(self) -> None:
        """The simulated controller's status as the seats' and the dealer's input, the way
        the controller link delivers it on a real table."""
        c = self.controller.state
        if c.link is None:
            return
        # an amount as the wire writes it ("25009.25"): str() of a Fraction ("100037/4") is refused
        status = {"link": c.link, "meter": None if c.meter is None else format_amount(Fraction(c.meter)),
                  "pending": c.pending}
        t = self.table
        for unit in [t.dealer, *t.seats.values()]:
            if hasattr(unit, "progressive_refusal") or unit is t.dealer:
                unit.post(("controller", status))
        t.settle()

    def controls(self) -> tuple[str, ...]:
        """The dealer controls that do something now (read in the table's thread). The
        player's decisions are the ones the engine offers this box now."""
        if self.driver is None:
            return ()
        if self.auto:
            return ("manual",)
        d = self.table.dealer
        if d.phase == DealerPhase.IDLE:
            return ("auto", "open_bets")
        if d.phase == DealerPhase.OPEN:
            return ("auto", "bet", *(("side_bets",) if self.profile.side_bets or self.profile.progressive
                                     else ()), "no_more_bets")
        if d.phase == DealerPhase.CLOSING:
            return ("no_more_bets",)
        state = d.round
        if state is None or state.is_over:
            return ("auto", "open_bets")
        expect = state.expecting()
        view = self.table.seats[self.box].view
        if expect.kind == "card":
            return ("deal", *self._offer_controls(view))
        if expect.kind == "decision":
            if expect.box != self.box:
                return ("stand",)
            turn = tuple(a for a in DECISION_ORDER if a in view.decisions and a not in HAND_OFFERS)
            return (*turn, *self._offer_controls(view))
        return ()

    def _offer_controls(self, view) -> tuple[str, ...]:
        """Insurance, even money and surrender as the seat's view offers them, per hand
        (the engine's ``legal_decisions(box, hand=n)``): ``insurance`` on a one-hand game,
        ``insurance_1`` / ``insurance_2`` in Blackjack Switch."""
        two = self.profile.hands_per_box > 1
        return tuple(f"{a}_{n}" if two else a
                     for action in HAND_OFFERS for a, n in view.offers if a == action)

    def _push(self):
        if self.source is None or self.on_snapshot is None:
            return None
        snap = replace(self.source.snapshot(), controls=self.controls())
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
        """A key of :data:`DEMO_KEYS`, :data:`DECISION_KEYS` or ``hal.mock_keys.DEFAULT_KEYS``."""
        if key == "a":
            self.set_auto(not self.auto)
        elif key in PACE_KEYS:
            self.change_pace(PACE_KEYS[key])
        elif key == "o":
            self.open_bets()
        elif key in HAND_KEYS:
            self.decide(*HAND_KEYS[key])
        elif key in DECISION_KEYS:
            self.decide(DECISION_KEYS[key])
        elif key == " ":
            self.deal()
        elif key == "b":
            self.bet("main", DEMO_BET)
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
        if d.phase != DealerPhase.IDLE:
            return
        assert self.driver is not None          # the worker made it before any command runs
        self.driver.clear_spots()
        shoe = self.driver.sim_shoe()
        if d.shoe_number == 0 or shoe.cut_card_out:
            self.table.shoe.shuffle()
            self.table.settle()
        self.press("open_bets")

    def bet(self, spot: str, amount: Fraction) -> None:
        spots = list(seat_spots(self.profile))
        self.table.readers[self.box].place_chips(
            spot, chipset.chips_for(amount, self.box, spots.index(spot), self._next_layer(spot)))
        self.table.cycle_readers(2, [self.box])

    def control(self, name: str) -> None:
        """An on-screen dealer control (see :meth:`controls`)."""
        self.key(CONTROL_KEYS[name])

    def deal(self) -> None:
        """Deal what the round asks for until it waits for a decision (or is over)."""
        d = self.table.dealer
        for _ in range(40):
            state = d.round
            if d.phase != DealerPhase.PLAY or state is None or state.is_over or state.expecting().kind != "card":
                return
            before = d.shoe_counter
            self.deal_next()
            if d.shoe_counter == before:
                return

    def decide(self, action: str, hand: int = 1) -> None:
        """The player's decision for this box, done as player and dealer do it at the
        table: chips on the spot for a double, split or insurance (``insurance_2`` for the
        second hand of Blackjack Switch), the request on the screen for surrender or even
        money on ``hand``, then the dealer's console button. The engine judges it; a
        refused decision is the dealer's refusal, shown by the seat."""
        t = self.table
        state = t.dealer.round
        if t.dealer.phase != DealerPhase.PLAY or state is None:
            return
        two = self.profile.hands_per_box > 1
        cur = state.hand_in_play()
        if action in ("double", "split") and cur is not None and cur[0].number == self.box:
            self._add_chips("main", cur[1].stake)
        elif action == "insurance":
            # the player's chips: half the initial bet of that hand (the largest insurance)
            box = next((b for b in state.boxes if b.number == self.box), None)
            initial = [h for h in box.hands if h.family == hand - 1] if box is not None else []
            if initial:
                self._add_chips(insurance_spot(hand), initial[0].stake / 2)
        elif action in ("surrender", "even_money"):
            t.seats[self.box].request(action, hand if two else None)
            t.settle()
        self.press(action)

    def _add_chips(self, spot: str, amount: Fraction) -> None:
        spots = list(seat_spots(self.profile))
        layer = max(1, self._next_layer(spot))
        self.table.readers[self.box].place_chips(spot, chipset.chips_for(amount, self.box, spots.index(spot), layer))
        self.table.cycle_readers(2, [self.box])

    def _next_layer(self, spot: str) -> int:
        """A fresh layer of the demo's chips for this spot (chips of one layer are distinct)."""
        used = {int(u[4:6], 16) for u in self.table.readers[self.box].chips_on(spot)
                if not u.startswith(chipset.UNKNOWN_PREFIX)}
        return min(max((u for u in used if u < 8), default=-1) + 1, 7)

    def deal_next(self) -> None:
        assert self.driver is not None
        shoe = self.driver.sim_shoe()
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
