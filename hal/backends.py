"""Choose a backend by name from configuration: ``open_backend(kind, name, config)``.

``kind`` is the port (``chip_reader``, ``card_shoe``, ``console``, ``lamps``), ``name`` the
backend (``mock``, ``serial``, ``gpio``). Configuration is strict: unknown keys, missing
keys and wrong types stop start-up with a message naming the key. A backend's hardware
library (pyserial, gpiozero) is imported only when that backend is chosen.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping

from hal.errors import (
    BadOption,
    HalError,
    MissingOption,
    SerialPortMissing,
    UnknownBackend,
    UnknownOption,
    UnsupportedPort,
)
from hal.ports import Port

KINDS = ("chip_reader", "card_shoe", "console", "lamps")


class _Options:
    """Reads a config mapping key by key and insists nothing is left over."""

    def __init__(self, where: str, config: Mapping[str, Any]) -> None:
        if not isinstance(config, Mapping):
            raise BadOption(f"{where}: configuration must be a table, got {type(config).__name__}")
        self.where, self._config = where, config
        self._used: set[str] = set()

    def get(self, key: str, types: type | tuple[type, ...], default: Any = ...) -> Any:
        self._used.add(key)
        if key not in self._config:
            if default is ...:
                raise MissingOption(f"{self.where}: missing option {key!r}")
            return default
        value = self._config[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in
                                            (types if isinstance(types, tuple) else (types,))):
            raise BadOption(f"{self.where}: option {key!r} has the wrong type "
                            f"({type(value).__name__}: {value!r})")
        return value

    def positive(self, key: str, default: float) -> float:
        value = self.get(key, (int, float), default)
        if value <= 0:
            raise BadOption(f"{self.where}: option {key!r} must be positive, got {value}")
        return float(value)

    def done(self) -> None:
        extra = sorted(set(self._config) - self._used)
        if extra:
            raise UnknownOption(f"{self.where}: unknown option(s) {', '.join(map(repr, extra))}")


def _spots(o: _Options) -> list[str]:
    spots = o.get("spots", (list, tuple))
    if not spots or not all(isinstance(s, str) and s for s in spots):
        raise BadOption(f"{o.where}: 'spots' must be a non-empty list of spot names")
    return list(spots)


def _serial_port(o: _Options) -> str:
    port: str = o.get("port", str)
    if not os.path.exists(port):
        raise SerialPortMissing(f"{o.where}: serial port {port!r} does not exist")
    return port


def _mock(kind: str, name: str, o: _Options) -> Port:
    from hal import mock

    if kind == "chip_reader":
        return mock.MockChipReader(name, _spots(o))
    if kind == "card_shoe":
        return mock.MockCardShoe(name)
    if kind == "console":
        buttons = o.get("buttons", (list, tuple), None)
        return mock.MockConsole(name, buttons, keypad=o.get("keypad", bool, True))
    lamps = o.get("lamps", (list, tuple, dict))
    return mock.MockLamps(name, list(lamps))


def _serial(kind: str, name: str, o: _Options) -> Port:
    from hal import serial_ports

    common = dict(baudrate=o.get("baudrate", int, serial_ports.DEFAULT_BAUDRATE),
                  silence_timeout=o.positive("silence_timeout", 3.0),
                  backoff_max=o.positive("backoff_max", 2.0))
    if kind == "chip_reader":
        spots = _spots(o)
        port = _serial_port(o)
        return serial_ports.SerialChipReader(name, spots, port, **common)
    if kind == "card_shoe":
        return serial_ports.SerialCardShoe(name, _serial_port(o), **common)
    raise UnsupportedPort(f"{o.where}: the serial backend has no {kind!r} port "
                          f"(it serves chip_reader and card_shoe)")


def _gpio(kind: str, name: str, o: _Options) -> Port:
    from hal import gpio

    factory = gpio.pin_factory(o.get("pin_factory", object, None))
    if kind == "console":
        buttons = o.get("buttons", Mapping)
        return gpio.GpioConsole(name, buttons, o.get("technician_key", int, None),
                                pin_factory=factory, pull_up=o.get("pull_up", bool, True),
                                bounce_time=o.get("bounce_time", (int, float, type(None)), 0.02),
                                keypad=o.get("keypad", Mapping, None))
    if kind == "lamps":
        return gpio.GpioLamps(name, o.get("lamps", Mapping), pin_factory=factory,
                              active_high=o.get("active_high", bool, True))
    raise UnsupportedPort(f"{o.where}: the gpio backend has no {kind!r} port "
                          f"(it serves console and lamps)")


BACKENDS: dict[str, Callable[[str, str, _Options], Port]] = {
    "mock": _mock, "serial": _serial, "gpio": _gpio}


def open_backend(kind: str, name: str, config: Mapping[str, Any] | None = None,
                 *, device: str | None = None) -> Port:
    """Build the ``kind`` port of backend ``name``; ``device`` names it (default ``kind``).

    The port is not started: call ``port.start(sink)``.
    """
    if kind not in KINDS:
        raise UnsupportedPort(f"unknown port kind {kind!r} (known: {', '.join(KINDS)})")
    if name not in BACKENDS:
        raise UnknownBackend(f"{kind}: unknown backend {name!r} (known: {', '.join(BACKENDS)})")
    where = f"{kind} ({name})"
    o = _Options(where, config or {})
    try:
        port = BACKENDS[name](kind, device or kind, o)
    except HalError:
        raise
    except ValueError as exc:  # e.g. a bad baud rate or spot list from the port itself
        raise BadOption(f"{where}: {exc}") from exc
    try:
        o.done()
    except HalError:
        port.close()
        raise
    return port
