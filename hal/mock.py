"""In-memory backend: every port, driven from tests and the desktop demo.

Each mock is a subclass of its port plus a driving API (``place_chips``, ``deal``,
``press``) and fault injection (dropped reads, phantom tags, disconnect, jam, stuck
button). Events are delivered synchronously, in the thread that drives the mock.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from hal.errors import DeviceStateError, UnknownButton
from hal.events import (
    Button,
    ButtonPressed,
    ButtonReleased,
    CardDrawn,
    InventoryCycle,
    ReaderFault,
    ShoeSignal,
    ShoeSignalKind,
    TechnicianKey,
    normalise_uid,
    parse_card,
)
from hal.ports import CardShoe, ChipReader, DealerConsole, Lamps, LampState


class MockChipReader(ChipReader):
    """Chips are placed on spots; each :meth:`cycle` reports what the antennas 'see'."""

    def __init__(self, name: str, spots: Iterable[str]) -> None:
        super().__init__(name, spots)
        self._chips: dict[str, set[str]] = {spot: set() for spot in self.spots}
        self._cycle = 0
        self._dropouts: list[tuple[int, frozenset[str] | None]] = []  # (cycles left, uids)
        self._phantoms: list[tuple[int, str, str]] = []  # (cycles left, spot, uid)

    # -- driving API

    def place_chips(self, spot: str, uids: Iterable[str]) -> None:
        self._chips[self.check_spot(spot)].update(normalise_uid(u) for u in uids)

    def remove_chips(self, spot: str, uids: Iterable[str] | None = None) -> None:
        """Take the given chips (all if None) off the spot."""
        chips = self._chips[self.check_spot(spot)]
        if uids is None:
            chips.clear()
        else:
            chips.difference_update(normalise_uid(u) for u in uids)

    def chips_on(self, spot: str) -> frozenset[str]:
        return frozenset(self._chips[self.check_spot(spot)])

    def cycle(self, n: int = 1) -> None:
        """Run ``n`` inventory cycles (no cycle is reported while disconnected)."""
        for _ in range(n):
            self._cycle += 1
            if not self._connected:
                continue
            seen = {spot: set(chips) for spot, chips in self._chips.items()}
            for _left, uids in self._dropouts:
                for chips in seen.values():
                    if uids is None:
                        chips.clear()
                    else:
                        chips.difference_update(uids)
            for _left, spot, uid in self._phantoms:
                seen[spot].add(uid)
            self._dropouts = [(left - 1, u) for left, u in self._dropouts if left > 1]
            self._phantoms = [(left - 1, s, u) for left, s, u in self._phantoms if left > 1]
            self._emit(InventoryCycle.build(self.name, self._cycle, self.spots, seen))

    # -- faults

    def drop_reads(self, cycles: int = 1, uids: Iterable[str] | None = None) -> None:
        """The next ``cycles`` cycles miss the given tags (every tag if None)."""
        self._dropouts.append((cycles, None if uids is None
                               else frozenset(normalise_uid(u) for u in uids)))

    def phantom(self, spot: str, uid: str, cycles: int = 1) -> None:
        """Garbage read: a tag that is not there shows up for ``cycles`` cycles."""
        self._phantoms.append((cycles, self.check_spot(spot), normalise_uid(uid)))

    def fault(self, code: str, spot: str | None = None) -> None:
        self._emit(ReaderFault(device=self.name,
                               spot=None if spot is None else self.check_spot(spot), code=code))

    def disconnect(self, reason: str = "mock disconnect") -> None:
        self._link_lost(reason)

    def reconnect(self) -> None:
        self._link_restored()


class MockCardShoe(CardShoe):
    """Cards are dealt by name; the mock keeps the shoe's counter, door and jam state.

    The counter is the shoe's own: like a real shoe's it goes on across a restart of the
    host (or of the shoe, :meth:`restart`) and starts again only at a shuffle. ``counter``
    is the count it had reached, so a mock made after a restart does not look like a gap.
    """

    def __init__(self, name: str, counter: int = 0) -> None:
        super().__init__(name)
        self.counter = 0
        self.continue_from(counter)
        self.jammed = False
        self.door_open = False

    def deal(self, card: str) -> None:
        if not self._connected:
            raise DeviceStateError(f"{self.name}: shoe is disconnected")
        if self.jammed:
            raise DeviceStateError(f"{self.name}: shoe is jammed")
        rank, suit = parse_card(card)
        self.counter += 1
        self._emit(CardDrawn(device=self.name, rank=rank, suit=suit, counter=self.counter))

    def continue_from(self, counter: int) -> None:
        """The count the shoe had reached (e.g. what the host's journal last saw)."""
        if isinstance(counter, bool) or not isinstance(counter, int) or counter < 0:
            raise ValueError(f"{self.name}: a shoe counter is a whole number of at least 0, not {counter!r}")
        self.counter = counter

    def restart(self) -> None:
        """The shoe powers off and on: connection lost and back, its counter kept."""
        self.disconnect("restart")
        self.reconnect()

    def deal_many(self, cards: Iterable[str] | str) -> None:
        for card in (cards.split() if isinstance(cards, str) else cards):
            self.deal(card)

    def shuffle(self) -> None:
        self.counter = 0
        self._signal(ShoeSignalKind.SHUFFLED)

    def cut_card(self) -> None:
        self._signal(ShoeSignalKind.CUT_CARD)

    def misread(self) -> None:
        """A card goes out unread: the shoe counts it but cannot say what it was."""
        self.counter += 1
        self._signal(ShoeSignalKind.MISREAD)

    def skip(self, n: int = 1) -> None:
        """Fault: ``n`` cards leave unseen by the host; it learns of the gap afterwards."""
        self.counter += n
        self._signal(ShoeSignalKind.CARD_GAP)

    def jam(self) -> None:
        self.jammed = True
        self._signal(ShoeSignalKind.JAM)

    def clear_jam(self) -> None:
        self.jammed = False
        self._signal(ShoeSignalKind.JAM_CLEARED)

    def open_door(self) -> None:
        self.door_open = True
        self._signal(ShoeSignalKind.DOOR_OPENED)

    def close_door(self) -> None:
        self.door_open = False
        self._signal(ShoeSignalKind.DOOR_CLOSED)

    def disconnect(self, reason: str = "mock disconnect") -> None:
        self._link_lost(reason)

    def reconnect(self) -> None:
        self._link_restored()

    def _signal(self, kind: ShoeSignalKind) -> None:
        self._emit(ShoeSignal(device=self.name, kind=kind, counter=self.counter))


class MockConsole(DealerConsole):
    """Buttons are pressed by name; a stuck button stays down whatever happens."""

    def __init__(self, name: str, buttons: Iterable[Button | str] | None = None,
                 keypad: bool = True) -> None:
        super().__init__(name, buttons, keypad)
        self._down: set[Button] = set()
        self._stuck: set[Button] = set()
        self._key = False

    def press(self, button: Button | str) -> None:
        """Press and release (a dealer's tap)."""
        self.hold(button)
        self.release(button)

    def hold(self, button: Button | str) -> None:
        b = self._fitted(button)
        if b not in self._down:
            self._down.add(b)
            self._emit(ButtonPressed(device=self.name, button=b))

    def release(self, button: Button | str) -> None:
        b = self._fitted(button)
        if b in self._down and b not in self._stuck:
            self._down.discard(b)
            self._emit(ButtonReleased(device=self.name, button=b))

    def stick(self, button: Button | str) -> None:
        """Fault: the button goes down and stays down until :meth:`unstick`."""
        b = self._fitted(button)
        self.hold(b)
        self._stuck.add(b)

    def unstick(self, button: Button | str) -> None:
        b = self._fitted(button)
        self._stuck.discard(b)
        self.release(b)

    def keypad_press(self, *keys: str) -> None:
        """Press keypad keys in order (``"7", "C"`` keys in the seven of clubs)."""
        if not self.keypad:
            raise UnknownButton(f"{self.name}: no keypad is fitted")
        for key in keys:
            self._keypad_press(self.check_keypad_key(key))

    def key_card(self, card: str) -> None:
        """Key in a card on the keypad: its rank key, then its suit key."""
        rank, suit = parse_card(card)
        self.keypad_press(rank, suit)

    def disconnect(self, reason: str = "mock disconnect") -> None:
        """Fault: the console's link is lost (a backend that can tell, e.g. a USB keypad)."""
        self._link_lost(reason)

    def reconnect(self) -> None:
        self._link_restored()

    def turn_key(self, on: bool) -> None:
        if on != self._key:
            self._key = on
            self._emit(TechnicianKey(device=self.name, on=on))

    def _fitted(self, button: Button | str) -> Button:
        self.is_pressed(button)  # validates name and fitting
        return Button(button)

    def _is_pressed(self, button: Button) -> bool:
        return button in self._down

    def _key_on(self) -> bool:
        return self._key


class MockLamps(Lamps):
    """Lamps that remember every command, like gpiozero's ``MockPin.states``."""

    def __init__(self, name: str, lamps: Iterable[str]) -> None:
        super().__init__(name, lamps)
        self.history: dict[str, list[LampState]] = defaultdict(list)

    def assert_states(self, lamp: str, expected: Iterable[LampState]) -> None:
        actual = self.history[lamp]
        expected = list(expected)
        assert actual == expected, f"lamp {lamp!r}: {actual} != {expected}"

    def _on(self, lamp: str) -> None:
        self.history[lamp].append(LampState("on"))

    def _off(self, lamp: str) -> None:
        self.history[lamp].append(LampState("off"))

    def _blink(self, lamp: str, on_time: float, off_time: float, n: int | None) -> None:
        self.history[lamp].append(LampState("blink", on_time, off_time, n))
