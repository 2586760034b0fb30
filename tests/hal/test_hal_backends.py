"""Backend selection, strict configuration, mock fault injection and drivers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hal import HalConfigError, HalError, open_backend
from hal.errors import (
    BadOption,
    DeviceStateError,
    MissingOption,
    PinInvalid,
    PinUsedTwice,
    UnknownBackend,
    UnknownOption,
    UnsupportedPort,
)
from hal.events import Button, ButtonPressed, ButtonReleased, CardDrawn, ShoeSignal
from hal.mock import MockCardShoe, MockChipReader, MockConsole
from hal.mock_keys import KeyboardDriver, MockDriver
from hal.sim.script import ScriptError

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kind, name, config, error, words", [
    ("card_shoe", "telepathy", {}, UnknownBackend, "unknown backend 'telepathy'"),
    ("toaster", "mock", {}, UnsupportedPort, "unknown port kind 'toaster'"),
    ("console", "serial", {}, UnsupportedPort, "no 'console' port"),
    ("card_shoe", "gpio", {}, UnsupportedPort, "no 'card_shoe' port"),
    ("card_shoe", "serial", {}, MissingOption, "missing option 'port'"),
    ("chip_reader", "mock", {"spots": ["main"], "spotz": 1}, UnknownOption, "'spotz'"),
    ("chip_reader", "mock", {"spots": "main"}, BadOption, "'spots' has the wrong type"),
    ("chip_reader", "mock", {"spots": ["main", "main"]}, BadOption, "unique"),
    ("card_shoe", "serial", {"port": "/dev/null", "silence_timeout": -1}, BadOption,
     "'silence_timeout' must be positive"),
    ("lamps", "gpio", {"pin_factory": "mock", "lamps": {"service": 4, "progressive": 4}},
     PinUsedTwice, "GPIO4 is used twice: by lamp service and by lamp progressive"),
    ("console", "gpio", {"pin_factory": "mock", "buttons": {"hit": 5}, "technician_key": 5},
     PinUsedTwice, "GPIO5 is used twice: by button hit and by technician_key"),
    ("console", "gpio", {"pin_factory": "mock", "buttons": {"hit": 99}}, PinInvalid, "99"),
    ("console", "gpio", {"pin_factory": "mock", "buttons": {"hitt": 5}}, ValueError, "'hitt'"),
    ("lamps", "gpio", {"pin_factory": "quantum", "lamps": {}}, BadOption, "'quantum'"),
])
def test_bad_configuration_names_what_is_wrong(kind, name, config, error, words) -> None:
    with pytest.raises(error) as err:
        open_backend(kind, name, config)
    assert words in str(err.value)
    assert isinstance(err.value, (HalError, ValueError))


def test_config_errors_are_hal_and_builtin_errors() -> None:
    with pytest.raises(HalConfigError):
        open_backend("card_shoe", "nope", {})
    with pytest.raises(ValueError):
        open_backend("card_shoe", "nope", {})


def test_pin_taken_by_another_port(mock_factory) -> None:
    lamps = open_backend("lamps", "gpio", {"pin_factory": mock_factory, "lamps": {"service": 9}})
    try:
        with pytest.raises(PinUsedTwice, match="GPIO9"):
            open_backend("console", "gpio", {"pin_factory": mock_factory,
                                             "buttons": {"stand": 8, "hit": 9}})
        # the half-built console released GPIO8 again
        console = open_backend("console", "gpio", {"pin_factory": mock_factory,
                                                   "buttons": {"stand": 8}})
        console.close()
    finally:
        lamps.close()


def test_hal_does_not_import_firmware_or_gpiozero_early() -> None:
    code = ("import sys, hal, hal.mock, hal.ports, hal.events; "
            "hal.open_backend('card_shoe', 'mock'); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('firmware', 'gpiozero', 'serial')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_module_of_hal_imports_firmware() -> None:
    for path in (REPO / "hal").rglob("*.py"):
        text = path.read_text()
        assert "import firmware" not in text and "from firmware" not in text, path


# ---------------------------------------------------------------- mock faults and drivers


def test_mock_shoe_refuses_to_deal_when_jammed_or_disconnected() -> None:
    got = []
    shoe = MockCardShoe("shoe")
    shoe.start(got.append)
    shoe.jam()
    with pytest.raises(DeviceStateError, match="jammed"):
        shoe.deal("AS")
    shoe.clear_jam()
    shoe.disconnect()
    with pytest.raises(RuntimeError, match="disconnected"):
        shoe.deal("AS")
    shoe.reconnect()
    shoe.deal("AS")
    assert isinstance(got[-1], CardDrawn) and got[-1].counter == 1
    with pytest.raises(ValueError):
        shoe.deal("1S")


def test_mock_stuck_button_never_releases() -> None:
    got = []
    console = MockConsole("console")
    console.start(got.append)
    console.stick("no_more_bets")
    console.release("no_more_bets")
    console.press("no_more_bets")
    assert got == [ButtonPressed(device="console", button=Button.NO_MORE_BETS)]
    assert console.is_pressed("no_more_bets")
    console.unstick("no_more_bets")
    assert got[-1] == ButtonReleased(device="console", button=Button.NO_MORE_BETS)


def test_mock_console_with_few_buttons() -> None:
    console = MockConsole("console", ["hit", "stand"])
    with pytest.raises(ValueError, match="not fitted"):
        console.press("split")


def test_mock_reader_disconnected_reports_no_cycles() -> None:
    got = []
    reader = MockChipReader("rfid", ["main"])
    reader.start(got.append)
    reader.disconnect()
    reader.cycle(3)
    reader.reconnect()
    reader.cycle()
    assert [type(e).__name__ for e in got] == ["ConnectionLost", "ConnectionRestored",
                                              "InventoryCycle"]
    assert got[-1].cycle == 4  # the reader kept counting while we did not hear it


def test_script_and_keyboard_drive_the_mocks() -> None:
    got = []
    shoe, reader, console = MockCardShoe("shoe"), MockChipReader("rfid", ["main"]), \
        MockConsole("console")
    for port in (shoe, reader, console):
        port.start(got.append)
    driver = MockDriver(shoe, reader, console)
    driver.run("shuffle\ndeal AS 10D  # two cards\nplace main 04A1B2C3\ncycle 2\n"
               "press no_more_bets\nkey on\n")
    assert [e.card for e in got if isinstance(e, CardDrawn)] == ["AS", "TD"]
    assert console.technician_key
    keys = KeyboardDriver(driver)
    assert keys.key("n") == "press no_more_bets"
    assert keys.key("k") == "key toggle" and not console.technician_key
    assert keys.key("?") is None
    assert isinstance(got[0], ShoeSignal)
    with pytest.raises(ScriptError, match="line 2: unknown command 'dael'"):
        driver.run("shuffle\ndael AS\n")
    with pytest.raises(ScriptError, match="line 1: deal: not a card"):
        driver.run("deal ZZ\n")
