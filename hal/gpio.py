"""gpiozero backend: console buttons and lamps on BCM pins from configuration.

gpiozero is imported by this module only, so only when the gpio backend is chosen. The
pin factory is gpiozero's: ``lgpio`` / ``rpigpio`` on the Pi, ``mock`` on a desktop and in
tests (or a factory instance, so a test can drive the very pins: ``pin.drive_low()``).
Button callbacks run in gpiozero's threads and reach the sink from there.
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping

import gpiozero
from gpiozero.exc import GPIOPinInUse, PinInvalidPin

from hal.errors import BadOption, PinInvalid, PinUsedTwice
from hal.events import KEYPAD_KEYS, Button, ButtonPressed, ButtonReleased, TechnicianKey
from hal.ports import DealerConsole, Lamps

FACTORIES = {
    "mock": "gpiozero.pins.mock:MockFactory",
    "lgpio": "gpiozero.pins.lgpio:LGPIOFactory",
    "rpigpio": "gpiozero.pins.rpigpio:RPiGPIOFactory",
    "native": "gpiozero.pins.native:NativeFactory",
}
BCM_PINS = range(0, 28)


def pin_factory(spec: Any) -> Any:
    """``None`` (gpiozero's default, honours GPIOZERO_PIN_FACTORY), a name, or a factory."""
    if spec is None or not isinstance(spec, str):
        return spec
    try:
        module, cls = FACTORIES[spec].split(":")
    except KeyError:
        raise BadOption(f"unknown pin_factory {spec!r} (known: {', '.join(FACTORIES)})") \
            from None
    return getattr(importlib.import_module(module), cls)()


def check_pins(pins: Mapping[str, int]) -> None:
    """Each pin a BCM header pin, no pin twice; errors name both users of a pin."""
    owner: dict[int, str] = {}
    for user, pin in pins.items():
        if isinstance(pin, bool) or not isinstance(pin, int) or pin not in BCM_PINS:
            raise PinInvalid(f"{user}: pin {pin!r} is not a BCM GPIO number 0-27")
        if pin in owner:
            raise PinUsedTwice(f"GPIO{pin} is used twice: by {owner[pin]} and by {user}")
        owner[pin] = user


def _device(cls: type, user: str, pin: int, factory: Any, **kwargs: Any) -> Any:
    try:
        return cls(pin, pin_factory=factory, **kwargs)
    except GPIOPinInUse as exc:
        raise PinUsedTwice(f"GPIO{pin} for {user} is already used by another device "
                           f"({exc})") from exc
    except PinInvalidPin as exc:
        raise PinInvalid(f"{user}: pin {pin} rejected by the pin factory ({exc})") from exc


class GpioConsole(DealerConsole):
    """Buttons wired to ground with the Pi's pull-ups (``pull_up=True``), debounced by
    gpiozero (``bounce_time``)."""

    def __init__(self, name: str, buttons: Mapping[str, int],
                 technician_key: int | None = None, *, pin_factory: Any = None,
                 pull_up: bool = True, bounce_time: float | None = 0.02,
                 keypad: Mapping[str, int] | None = None) -> None:
        fitted = {self.check_button(b): pin for b, pin in buttons.items()}
        keys = {self.check_keypad_key(k): pin for k, pin in (keypad or {}).items()}
        if keys and set(keys) != set(KEYPAD_KEYS):
            missing = [k for k in KEYPAD_KEYS if k not in keys]
            raise BadOption(f"keypad: a card keypad needs every rank and suit key; missing {' '.join(missing)}")
        super().__init__(name, fitted, keypad=bool(keys))
        users = {f"button {b.value}": pin for b, pin in fitted.items()}
        users.update({f"keypad key {k}": pin for k, pin in keys.items()})
        if technician_key is not None:
            users["technician_key"] = technician_key
        check_pins(users)
        self._factory = pin_factory
        self._buttons: dict[Button, Any] = {}
        self._keys: dict[str, Any] = {}
        self._key: Any = None
        try:
            for button, pin in fitted.items():
                dev = _device(gpiozero.Button, f"button {button.value}", pin, pin_factory,
                              pull_up=pull_up, bounce_time=bounce_time)
                self._buttons[button] = dev
            for k, pin in keys.items():
                self._keys[k] = _device(gpiozero.Button, f"keypad key {k}", pin, pin_factory,
                                        pull_up=pull_up, bounce_time=bounce_time)
            if technician_key is not None:
                self._key = _device(gpiozero.Button, "technician_key", technician_key,
                                    pin_factory, pull_up=pull_up, bounce_time=bounce_time)
        except Exception:
            self._close()
            raise

    def _start(self) -> None:
        for button, dev in self._buttons.items():
            dev.when_pressed = lambda _d, b=button: self._emit(
                ButtonPressed(device=self.name, button=b))
            dev.when_released = lambda _d, b=button: self._emit(
                ButtonReleased(device=self.name, button=b))
        for k, dev in self._keys.items():
            dev.when_pressed = lambda _d, key=k: self._keypad_press(key)
        if self._key is not None:
            self._key.when_pressed = lambda _d: self._emit(
                TechnicianKey(device=self.name, on=True))
            self._key.when_released = lambda _d: self._emit(
                TechnicianKey(device=self.name, on=False))

    def _close(self) -> None:
        for dev in [*self._buttons.values(), *self._keys.values(), self._key]:
            if dev is not None:
                dev.close()

    def _is_pressed(self, button: Button) -> bool:
        return bool(self._buttons[button].is_pressed)

    def _key_on(self) -> bool:
        return bool(self._key is not None and self._key.is_pressed)


class GpioLamps(Lamps):
    """Lamps on gpiozero ``LED`` outputs; blinking runs in gpiozero's background thread."""

    def __init__(self, name: str, lamps: Mapping[str, int], *, pin_factory: Any = None,
                 active_high: bool = True) -> None:
        super().__init__(name, lamps)
        check_pins({f"lamp {lamp}": pin for lamp, pin in lamps.items()})
        self._leds: dict[str, Any] = {}
        try:
            for lamp, pin in lamps.items():
                self._leds[lamp] = _device(gpiozero.LED, f"lamp {lamp}", pin, pin_factory,
                                           active_high=active_high)
        except Exception:
            self._close()
            raise

    def led(self, lamp: str) -> Any:
        """The gpiozero device behind a lamp (diagnostics and tests)."""
        self._check(lamp)
        return self._leds[lamp]

    def _on(self, lamp: str) -> None:
        self._leds[lamp].on()

    def _off(self, lamp: str) -> None:
        self._leds[lamp].off()

    def _blink(self, lamp: str, on_time: float, off_time: float, n: int | None) -> None:
        self._leds[lamp].blink(on_time=on_time, off_time=off_time, n=n, background=True)

    def _close(self) -> None:
        for led in self._leds.values():
            led.close()
