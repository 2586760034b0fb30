"""The contract every backend of a port must meet, parametrized over the backends.

chip reader and card shoe: mock, and serial through a pty against the simulators;
console and lamps: mock, and gpio on gpiozero's MockFactory.
"""

from __future__ import annotations

import time
from typing import Any, Iterator

import pytest

from hal.errors import PortClosed, UnknownButton, UnknownLamp, UnknownSpot
from hal.events import (
    Button,
    ButtonPressed,
    ButtonReleased,
    CardDrawn,
    CardKeyed,
    ConnectionLost,
    ConnectionRestored,
    InventoryCycle,
    ReaderFault,
    ShoeSignal,
    ShoeSignalKind,
    TechnicianKey,
)
from hal.ports import LampState
from tests.hal.conftest import Events

SPOTS = ["main", "perfect_pairs", "twenty_one_plus_three", "progressive", "main_2"]


# ---------------------------------------------------------------- rigs


class MockReaderRig:
    def __init__(self, events: Events) -> None:
        from hal import open_backend

        self.port = open_backend("chip_reader", "mock", {"spots": SPOTS})
        self.port.start(events.put)

    def place(self, spot: str, *uids: str) -> None:
        self.port.place_chips(spot, uids)

    def remove(self, spot: str, *uids: str) -> None:
        self.port.remove_chips(spot, uids or None)

    def cycle(self) -> None:
        self.port.cycle()

    def fault(self, spot: str, code: str) -> None:
        self.port.fault(code, spot)

    def disconnect(self) -> None:
        self.port.disconnect()

    def reconnect(self) -> None:
        self.port.reconnect()

    def close(self) -> None:
        self.port.close()


class SerialReaderRig:
    def __init__(self, events: Events) -> None:
        from hal import open_backend
        from hal.sim.rfid import RfidSimulator
        from hal.sim.transport import PtyTransport

        self.sim = RfidSimulator(PtyTransport(), SPOTS, heartbeat=0.1).start()
        self.port = open_backend("chip_reader", "serial", {
            "spots": SPOTS, "port": self.sim.transport.path, "silence_timeout": 0.8})
        self.port.start(events.put)
        assert self.sim.wait_for_host(10)

    def place(self, spot: str, *uids: str) -> None:
        self.sim.place(spot, *uids)

    def remove(self, spot: str, *uids: str) -> None:
        self.sim.remove(spot, *uids)

    def cycle(self) -> None:
        self.sim.cycle()

    def fault(self, spot: str, code: str) -> None:
        self.sim.fault(spot, code)

    def disconnect(self) -> None:
        self.sim.silence(3600)

    def reconnect(self) -> None:
        self.sim.silence(0)

    def close(self) -> None:
        self.port.close()
        self.sim.close()


class MockShoeRig:
    def __init__(self, events: Events) -> None:
        from hal import open_backend

        self.port = open_backend("card_shoe", "mock", {})
        self.port.start(events.put)
        self.drv = self.port

    def deal(self, *cards: str) -> None:
        self.port.deal_many(cards)

    def signal(self, name: str) -> None:
        {"shuffle": self.port.shuffle, "cut": self.port.cut_card,
         "misread": self.port.misread, "jam": self.port.jam, "unjam": self.port.clear_jam,
         "door open": self.port.open_door, "door close": self.port.close_door,
         "skip": self.port.skip}[name]()

    def disconnect(self) -> None:
        self.port.disconnect()

    def reconnect(self) -> None:
        self.port.reconnect()

    def close(self) -> None:
        self.port.close()


class SerialShoeRig(MockShoeRig):
    def __init__(self, events: Events) -> None:
        from hal import open_backend
        from hal.sim.shoe import ShoeSimulator
        from hal.sim.transport import PtyTransport

        self.sim = ShoeSimulator(PtyTransport(), heartbeat=0.1).start()
        self.port = open_backend("card_shoe", "serial", {
            "port": self.sim.transport.path, "silence_timeout": 0.8})
        self.port.start(events.put)
        assert self.sim.wait_for_host(10)

    def deal(self, *cards: str) -> None:
        self.sim.deal(*cards)

    def signal(self, name: str) -> None:
        s = self.sim
        {"shuffle": s.shuffle, "cut": s.cut_card, "misread": s.misread, "jam": s.jam,
         "unjam": s.unjam, "door open": lambda: s.door("open"),
         "door close": lambda: s.door("close"), "skip": s.skip}[name]()

    def disconnect(self) -> None:
        self.sim.silence(3600)

    def reconnect(self) -> None:
        self.sim.silence(0)

    def close(self) -> None:
        self.port.close()
        self.sim.close()


BUTTON_PINS = {b.value: pin for b, pin in zip(Button, range(4, 16), strict=True)}
KEY_PIN = 16
LAMP_PINS = {"progressive": 20, "bets_locked": 21, "service": 22}


class MockConsoleRig:
    def __init__(self, events: Events, factory: Any) -> None:
        from hal import open_backend

        self.port = open_backend("console", "mock", {})
        self.port.start(events.put)

    def down(self, button: str) -> None:
        self.port.hold(button)

    def up(self, button: str) -> None:
        self.port.release(button)

    def key(self, on: bool) -> None:
        self.port.turn_key(on)


class GpioConsoleRig:
    def __init__(self, events: Events, factory: Any) -> None:
        from hal import open_backend

        self.factory = factory
        self.port = open_backend("console", "gpio", {
            "pin_factory": factory, "buttons": BUTTON_PINS, "technician_key": KEY_PIN,
            "bounce_time": None})
        self.port.start(events.put)

    def down(self, button: str) -> None:
        self.factory.pin(BUTTON_PINS[button]).drive_low()  # wired to ground, pull-up

    def up(self, button: str) -> None:
        self.factory.pin(BUTTON_PINS[button]).drive_high()

    def key(self, on: bool) -> None:
        pin = self.factory.pin(KEY_PIN)
        pin.drive_low() if on else pin.drive_high()


@pytest.fixture(params=["mock", "serial"])
def reader(request: pytest.FixtureRequest, events: Events) -> Iterator[Any]:
    rig = (MockReaderRig if request.param == "mock" else SerialReaderRig)(events)
    yield rig
    rig.close()


@pytest.fixture(params=["mock", "serial"])
def shoe(request: pytest.FixtureRequest, events: Events) -> Iterator[Any]:
    rig = (MockShoeRig if request.param == "mock" else SerialShoeRig)(events)
    yield rig
    rig.close()


@pytest.fixture(params=["mock", "gpio"])
def console(request: pytest.FixtureRequest, events: Events, mock_factory: Any) -> Iterator[Any]:
    rig = (MockConsoleRig if request.param == "mock" else GpioConsoleRig)(events, mock_factory)
    yield rig
    rig.port.close()


@pytest.fixture(params=["mock", "gpio"])
def lamps(request: pytest.FixtureRequest, mock_factory: Any) -> Iterator[Any]:
    from hal import open_backend

    if request.param == "mock":
        port = open_backend("lamps", "mock", {"lamps": list(LAMP_PINS)})
    else:
        port = open_backend("lamps", "gpio", {"pin_factory": mock_factory, "lamps": LAMP_PINS})
    yield port
    port.close()


# ---------------------------------------------------------------- chip reader


def test_reader_reports_every_spot_each_cycle(reader: Any, events: Events) -> None:
    reader.place("main", "04A1B2C3", "04a1b2c4")
    reader.place("main_2", "0102030405060708")
    reader.cycle()
    cycle = events.next(InventoryCycle)
    assert [r.spot for r in cycle.reads] == SPOTS
    assert cycle.uids("main") == {"04A1B2C3", "04A1B2C4"}
    assert cycle.uids("main_2") == {"0102030405060708"}
    assert cycle.uids("perfect_pairs") == frozenset()
    assert cycle.device == "chip_reader"


def test_reader_cycles_are_numbered_and_follow_removals(reader: Any, events: Events) -> None:
    reader.place("perfect_pairs", "AA01", "AA02")
    reader.cycle()
    first = events.next(InventoryCycle)
    reader.remove("perfect_pairs", "AA01")
    reader.cycle()
    second = events.next(InventoryCycle)
    assert second.cycle == first.cycle + 1
    assert second.uids("perfect_pairs") == {"AA02"}
    reader.remove("perfect_pairs")
    reader.cycle()
    assert events.next(InventoryCycle).uids("perfect_pairs") == frozenset()


def test_reader_many_chips_on_one_spot(reader: Any, events: Events) -> None:
    uids = [f"04{i:012X}" for i in range(60)]  # more than one frame's worth on the wire
    reader.place("main", *uids)
    reader.cycle()
    assert events.next(InventoryCycle).uids("main") == set(uids)


def test_reader_fault_names_the_spot(reader: Any, events: Events) -> None:
    reader.fault("progressive", "antenna_open")
    fault = events.next(ReaderFault)
    assert (fault.spot, fault.code) == ("progressive", "antenna_open")


def test_reader_connection_lost_and_restored(reader: Any, events: Events) -> None:
    reader.disconnect()
    assert isinstance(events.next((ConnectionLost,)), ConnectionLost)
    assert not reader.port.connected
    reader.reconnect()
    events.next(ConnectionRestored)
    assert reader.port.connected
    reader.place("main", "CAFE")
    reader.cycle()
    assert events.next(InventoryCycle).uids("main") == {"CAFE"}


def test_reader_unknown_spot_is_refused(reader: Any) -> None:
    with pytest.raises(UnknownSpot, match="no_such_spot"):
        reader.port.check_spot("no_such_spot")
    with pytest.raises(KeyError):  # gpiozero style: a HalError and a builtin
        reader.port.check_spot("no_such_spot")
    assert reader.port.check_spot("main_2") == "main_2"


def test_reader_close_is_idempotent_and_final(reader: Any, events: Events) -> None:
    reader.port.close()
    reader.port.close()
    assert reader.port.closed
    with pytest.raises(PortClosed):
        reader.port.start(events.put)


# ---------------------------------------------------------------- card shoe


def test_shoe_deals_cards_with_its_counter(shoe: Any, events: Events) -> None:
    shoe.signal("shuffle")
    assert events.next(ShoeSignal).kind is ShoeSignalKind.SHUFFLED
    shoe.deal("AS", "10h", "KD")
    cards = [events.next(CardDrawn) for _ in range(3)]
    assert [(c.card, c.counter) for c in cards] == [("AS", 1), ("TH", 2), ("KD", 3)]


@pytest.mark.parametrize("action, kind", [
    ("cut", ShoeSignalKind.CUT_CARD), ("jam", ShoeSignalKind.JAM),
    ("door open", ShoeSignalKind.DOOR_OPENED), ("door close", ShoeSignalKind.DOOR_CLOSED),
])
def test_shoe_signals(shoe: Any, events: Events, action: str, kind: ShoeSignalKind) -> None:
    shoe.signal(action)
    assert events.next(ShoeSignal).kind is kind


def test_shoe_misread_counts_a_card(shoe: Any, events: Events) -> None:
    shoe.signal("shuffle")
    shoe.deal("2C")
    shoe.signal("misread")
    shoe.deal("3C")
    signal = events.next(ShoeSignal, where=lambda e: e.kind is ShoeSignalKind.MISREAD)
    assert signal.counter == 2
    assert events.next(CardDrawn, where=lambda e: e.card == "3C").counter == 3


def test_shoe_reports_cards_gone_unseen(shoe: Any, events: Events) -> None:
    shoe.signal("shuffle")
    shoe.deal("9S")
    shoe.signal("skip")
    shoe.deal("8S")
    gap = events.next(ShoeSignal, where=lambda e: e.kind is ShoeSignalKind.CARD_GAP)
    assert gap.counter == 2
    assert events.next(CardDrawn, where=lambda e: e.card == "8S").counter == 3


def test_shoe_shuffle_restarts_counter(shoe: Any, events: Events) -> None:
    shoe.signal("shuffle")
    shoe.deal("AS", "AH")
    shoe.signal("shuffle")
    shoe.deal("AD")
    card = events.next(CardDrawn, where=lambda e: e.card == "AD")
    assert card.counter == 1


def test_shoe_connection_lost_and_restored(shoe: Any, events: Events) -> None:
    shoe.disconnect()
    events.next(ConnectionLost)
    assert not shoe.port.connected
    shoe.reconnect()
    events.next(ConnectionRestored)
    shoe.deal("QS")
    assert events.next(CardDrawn).card == "QS"


# ---------------------------------------------------------------- console


@pytest.mark.parametrize("button", [b.value for b in Button])
def test_console_press_and_release(console: Any, events: Events, button: str) -> None:
    console.down(button)
    assert events.next(ButtonPressed).button == Button(button)
    assert console.port.is_pressed(button)
    console.up(button)
    assert events.next(ButtonReleased).button == Button(button)
    assert not console.port.is_pressed(button)


def test_console_technician_key(console: Any, events: Events) -> None:
    assert console.port.technician_key is False
    console.key(True)
    assert events.next(TechnicianKey).on is True
    assert console.port.technician_key is True
    console.key(False)
    assert events.next(TechnicianKey).on is False


def test_console_unknown_button(console: Any) -> None:
    with pytest.raises(UnknownButton):
        console.port.is_pressed("deal_faster")
    with pytest.raises(ValueError):  # gpiozero style: a HalError and a builtin
        console.port.is_pressed("deal_faster")


def test_console_close_stops_events(console: Any, events: Events) -> None:
    console.port.close()
    events.drain()
    try:
        console.down("hit")
    except Exception:
        pass  # a closed gpio device may refuse to be driven; either way no event
    assert events.drain(settle=0.05) == []


KEYPAD_PINS = {key: pin for key, pin in zip("A23456789TJQKSHDC", range(5, 22), strict=True)}


@pytest.fixture(params=["mock", "gpio"])
def keypad_console(request: pytest.FixtureRequest, events: Events, mock_factory: Any) -> Iterator[Any]:
    """A console with the card keypad (issue #12.2): ``key_press(key)`` drives one keypad key."""
    from hal import open_backend

    if request.param == "mock":
        port = open_backend("console", "mock", {"buttons": ["open_bets"]})
        press = port.keypad_press
    else:
        port = open_backend("console", "gpio", {"pin_factory": mock_factory, "buttons": {"open_bets": 4},
                                                "keypad": KEYPAD_PINS, "bounce_time": None})

        def press(key: str) -> None:
            pin = mock_factory.pin(KEYPAD_PINS[key])
            pin.drive_low()
            pin.drive_high()
    port.start(events.put)
    port.key_press = press
    yield port
    port.close()


def test_console_keypad_keys_in_a_card(keypad_console: Any, events: Events) -> None:
    assert keypad_console.keypad is True
    for key in ("7", "C"):
        keypad_console.key_press(key)
    keyed = events.next(CardKeyed)
    assert keyed.card == "7C" and keyed.device == keypad_console.name
    for key in ("K", "Q", "H"):          # a mistyped rank is corrected by typing the right one
        keypad_console.key_press(key)
    assert events.next(CardKeyed).card == "QH"
    keypad_console.key_press("S")            # a suit with no rank before it: counted, no card
    keypad_console.key_press("T")
    keypad_console.key_press("D")
    assert events.next(CardKeyed).card == "TD"
    assert keypad_console.stray_keys == 1


def test_console_keypad_is_checked_whole(mock_factory: Any) -> None:
    from hal import open_backend

    with pytest.raises(ValueError, match="missing .*C"):
        open_backend("console", "gpio", {"pin_factory": mock_factory, "buttons": {},
                                         "keypad": {k: p for k, p in KEYPAD_PINS.items() if k != "C"}})
    with pytest.raises(ValueError, match="unknown keypad key 'X'"):
        open_backend("console", "gpio", {"pin_factory": mock_factory, "buttons": {},
                                         "keypad": {**KEYPAD_PINS, "X": 27}})
    with pytest.raises(ValueError, match="GPIO5 is used twice"):
        open_backend("console", "gpio", {"pin_factory": mock_factory, "buttons": {"hit": 5},
                                         "keypad": KEYPAD_PINS})


# ---------------------------------------------------------------- lamps


def test_lamps_start_off_and_follow_commands(lamps: Any) -> None:
    assert all(lamps.state(name) == LampState("off") for name in LAMP_PINS)
    lamps.on("bets_locked")
    assert lamps.state("bets_locked") == LampState("on")
    lamps.blink("progressive", 0.2, 0.1)
    assert lamps.state("progressive") == LampState("blink", 0.2, 0.1, None)
    lamps.off("bets_locked")
    assert lamps.state("bets_locked") == LampState("off")


def test_lamps_unknown_name_and_bad_timing(lamps: Any) -> None:
    with pytest.raises(UnknownLamp):
        lamps.on("disco")
    with pytest.raises(ValueError):
        lamps.blink("service", 0, 0.5)
    with pytest.raises(ValueError):
        lamps.blink("service", 0.5, 0.5, n=0)
    assert lamps.state("service") == LampState("off")


def test_lamps_refuse_after_close(lamps: Any) -> None:
    lamps.close()
    with pytest.raises(PortClosed):
        lamps.on("service")


# ---------------------------------------------------------------- backend-specific witnesses


def test_gpio_lamp_drives_its_pin(mock_factory: Any) -> None:
    from hal import open_backend

    lamps = open_backend("lamps", "gpio", {"pin_factory": mock_factory, "lamps": LAMP_PINS})
    try:
        lamps.on("service")
        assert mock_factory.pin(22).state is True
        lamps.off("service")
        assert mock_factory.pin(22).state is False
        lamps.blink("progressive", 0.01, 0.01, n=2)
        pin = mock_factory.pin(20)
        deadline = time.monotonic() + 10
        while len(pin.states) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [s.state for s in pin.states] == [False, True, False, True, False]
    finally:
        lamps.close()


def test_mock_lamps_record_history() -> None:
    from hal.mock import MockLamps

    lamps = MockLamps("lamps", ["service"])
    lamps.on("service")
    lamps.blink("service", 0.5, 0.5, n=3)
    lamps.assert_states("service", [LampState("on"), LampState("blink", 0.5, 0.5, 3)])
    with pytest.raises(AssertionError):
        lamps.assert_states("service", [LampState("on")])
