"""Ports: the abstract devices the firmware depends on.

The public API lives here, written once; a backend subclasses a port and fills its hooks
(gpiozero style). Each class says which hooks a backend **must** and **may** override.

Event delivery: the firmware calls :meth:`Port.start` with an :data:`EventSink`. Backends
that have reader threads (serial, gpio) call the sink *from those threads*; the mock calls
it synchronously from the thread that drives it. The sink must therefore be thread-safe;
the runtime passes ``queue.SimpleQueue().put`` of its one dispatch queue.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Iterable, Literal, Self

from hal.errors import PortClosed, UnknownButton, UnknownLamp, UnknownSpot
from hal.events import (
    KEYPAD_KEYS,
    RANKS,
    SUITS,
    Button,
    CardKeyed,
    ConnectionLost,
    ConnectionRestored,
    EventSink,
    HalEvent,
)


class Port(ABC):  # noqa: B024 (no abstract method: a Port is made only through its role subclasses)
    """A device with a name, a lifecycle and an event sink.

    Hooks: backends **may** override :meth:`_start` (open hardware, start threads) and
    :meth:`_close` (stop threads, release hardware). ``_close`` is called at most once.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._sink: EventSink | None = None
        self._closed = False
        self._connected = True
        self._lock = threading.Lock()

    # -- public API

    def start(self, sink: EventSink) -> None:
        """Begin delivering events to ``sink`` (see the module docstring on threads)."""
        if self._closed:
            raise PortClosed(f"{self.name}: port is closed")
        self._sink = sink
        self._start()

    def close(self) -> None:
        """Stop delivering events and release the hardware; safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._close()
        self._sink = None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def connected(self) -> bool:
        """False between a :class:`ConnectionLost` and the next :class:`ConnectionRestored`."""
        return self._connected

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}{' closed' if self._closed else ''}>"

    # -- hooks

    def _start(self) -> None:  # noqa: B027 (an optional hook: empty on purpose)
        """May override: open the hardware and start reader threads."""

    def _close(self) -> None:  # noqa: B027 (an optional hook: empty on purpose)
        """May override: stop threads and release the hardware."""

    # -- helpers for backends

    def _emit(self, event: HalEvent) -> None:
        """Deliver an event; silently dropped once closed or before start."""
        sink = self._sink
        if sink is not None and not self._closed:
            sink(event)

    def _link_lost(self, reason: str) -> None:
        """Report a connection loss once (repeated calls while lost are ignored)."""
        if self._connected:
            self._connected = False
            self._emit(ConnectionLost(device=self.name, reason=reason))

    def _link_restored(self) -> None:
        if not self._connected:
            self._connected = True
            self._emit(ConnectionRestored(device=self.name))


class ChipReader(Port):
    """An RFID reader whose antennas sit under the box's betting spots.

    It emits :class:`hal.events.InventoryCycle` for every complete inventory cycle (raw
    reads; debouncing and the chip registry are the firmware's business),
    :class:`hal.events.ReaderFault`, and connection events.

    Spot names are configuration (``main``, ``perfect_pairs``, ``main_2``, ...).
    Hooks: none required beyond :class:`Port`'s; backends call :meth:`_emit_cycle`.
    """

    def __init__(self, name: str, spots: Iterable[str]) -> None:
        super().__init__(name)
        self.spots: tuple[str, ...] = tuple(spots)
        if not self.spots:
            raise ValueError(f"{name}: a chip reader needs at least one spot")
        if len(set(self.spots)) != len(self.spots):
            raise ValueError(f"{name}: spot names must be unique: {self.spots}")

    def check_spot(self, spot: str) -> str:
        if spot not in self.spots:
            raise UnknownSpot(f"{self.name}: unknown spot {spot!r} (configured: "
                              f"{', '.join(self.spots)})")
        return spot


class CardShoe(Port):
    """An electronic card shoe: emits :class:`hal.events.CardDrawn` and
    :class:`hal.events.ShoeSignal` (shuffle, cut card, misread, jam, door, card gap),
    and connection events. Read-only from the firmware's side: no hooks beyond
    :class:`Port`'s.
    """


class DealerConsole(Port):
    """The dealer's buttons, the technician key and (if fitted) the card keypad.

    Emits :class:`ButtonPressed` / :class:`ButtonReleased` / :class:`TechnicianKey`, and
    :class:`CardKeyed` when a rank key and then a suit key are pressed on the keypad.
    Hooks: backends **must** override :meth:`_is_pressed` and :meth:`_key_on`; a backend
    with a keypad calls :meth:`_keypad_press` for each key pressed.
    """

    def __init__(self, name: str, buttons: Iterable[Button | str] | None = None,
                 keypad: bool = False) -> None:
        super().__init__(name)
        self.buttons: tuple[Button, ...] = tuple(
            self.check_button(b) for b in (buttons if buttons is not None else Button))
        self.keypad = keypad
        self._rank: str | None = None     # the rank key pressed, waiting for its suit
        self.stray_keys = 0               # a suit key with no rank before it (counted, ignored)
        self._keypad_lock = threading.Lock()

    @staticmethod
    def check_keypad_key(key: str) -> str:
        k = str(key).upper()
        if k not in KEYPAD_KEYS:
            raise UnknownButton(f"unknown keypad key {key!r} (ranks {RANKS}, suits {SUITS})")
        return k

    def _keypad_press(self, key: str) -> None:
        """One keypad key went down: a rank waits for its suit (a second rank replaces
        it, so a mistyped rank is corrected by typing the right one); a suit completes
        the card. Keys come from gpiozero's threads, hence the lock."""
        with self._keypad_lock:
            if key in RANKS:
                self._rank = key
                return
            rank, self._rank = self._rank, None
            if rank is None:
                self.stray_keys += 1
                return
        self._emit(CardKeyed(device=self.name, rank=rank, suit=key))

    @staticmethod
    def check_button(button: Button | str) -> Button:
        try:
            return Button(button)
        except ValueError:
            raise UnknownButton(
                f"unknown console button {button!r} (known: {', '.join(b.value for b in Button)})"
            ) from None

    def is_pressed(self, button: Button | str) -> bool:
        b = self.check_button(button)
        if b not in self.buttons:
            raise UnknownButton(f"{self.name}: button {b.value!r} is not fitted")
        return self._is_pressed(b)

    @property
    def technician_key(self) -> bool:
        return self._key_on()

    @abstractmethod
    def _is_pressed(self, button: Button) -> bool:
        """Must override: the button's current state."""

    @abstractmethod
    def _key_on(self) -> bool:
        """Must override: the technician key's current state (False if not fitted)."""


@dataclass(frozen=True, slots=True)
class LampState:
    """What a lamp was last told to do."""

    mode: Literal["off", "on", "blink"]
    on_time: float | None = None
    off_time: float | None = None
    n: int | None = None


LAMP_OFF = LampState("off")
LAMP_ON = LampState("on")


class Lamps(Port):
    """A bank of named lamps (``progressive``, ``bets_locked``, ``service``).

    The base class validates names and timings and remembers each lamp's
    :class:`LampState`. Hooks: backends **must** override :meth:`_on`, :meth:`_off` and
    :meth:`_blink`.
    """

    def __init__(self, name: str, lamps: Iterable[str]) -> None:
        super().__init__(name)
        self.lamps: tuple[str, ...] = tuple(lamps)
        if len(set(self.lamps)) != len(self.lamps):
            raise ValueError(f"{name}: lamp names must be unique: {self.lamps}")
        self._states: dict[str, LampState] = {lamp: LAMP_OFF for lamp in self.lamps}

    def on(self, lamp: str) -> None:
        self._check(lamp)
        self._on(lamp)
        self._states[lamp] = LAMP_ON

    def off(self, lamp: str) -> None:
        self._check(lamp)
        self._off(lamp)
        self._states[lamp] = LAMP_OFF

    def blink(self, lamp: str, on_time: float = 0.5, off_time: float = 0.5,
              n: int | None = None) -> None:
        """Blink ``n`` times (forever if None), then stay off."""
        self._check(lamp)
        if not (on_time > 0 and off_time > 0):
            raise ValueError(f"blink times must be positive, got {on_time}, {off_time}")
        if n is not None and n < 1:
            raise ValueError(f"blink count must be at least 1 or None, got {n}")
        self._blink(lamp, float(on_time), float(off_time), n)
        self._states[lamp] = LampState("blink", float(on_time), float(off_time), n)

    def state(self, lamp: str) -> LampState:
        self._check(lamp)
        return self._states[lamp]

    def all_off(self) -> None:
        for lamp in self.lamps:
            self.off(lamp)

    def _check(self, lamp: str) -> None:
        if self._closed:
            raise PortClosed(f"{self.name}: lamps are closed")
        if lamp not in self._states:
            raise UnknownLamp(f"{self.name}: unknown lamp {lamp!r} (configured: "
                              f"{', '.join(self.lamps)})")

    @abstractmethod
    def _on(self, lamp: str) -> None: ...

    @abstractmethod
    def _off(self, lamp: str) -> None: ...

    @abstractmethod
    def _blink(self, lamp: str, on_time: float, off_time: float, n: int | None) -> None: ...
