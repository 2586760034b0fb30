"""Errors raised by the hardware abstraction layer.

Every error subclasses :class:`HalError` *and* the builtin a caller would naturally catch
(gpiozero style), so ``except ValueError`` around configuration keeps working while
``except HalError`` catches everything hardware-related.
"""

from __future__ import annotations


class HalError(Exception):
    """Base of every error raised by ``hal``."""


class HalConfigError(HalError):
    """The configuration of a device is wrong; start-up must stop with this message."""


class UnknownBackend(HalConfigError, ValueError):
    """A backend name that no adapter answers to."""


class UnsupportedPort(HalConfigError, ValueError):
    """A backend asked for a port (e.g. a gpio card shoe) it does not implement."""


class UnknownOption(HalConfigError, ValueError):
    """A configuration key the backend does not know (typos must not pass silently)."""


class MissingOption(HalConfigError, ValueError):
    """A required configuration key is absent."""


class BadOption(HalConfigError, ValueError):
    """A configuration value of the wrong type or out of range."""


class PinUsedTwice(HalConfigError, ValueError):
    """Two buttons or lamps were given the same GPIO pin."""


class PinInvalid(HalConfigError, ValueError):
    """A GPIO pin number that is not a BCM pin of the header."""


class SerialPortMissing(HalConfigError, FileNotFoundError):
    """The configured serial port does not exist (adapter unplugged, wrong path)."""


class SerialPortBusy(HalConfigError, PermissionError):
    """The serial port is already opened exclusively by another process or device."""


class UnknownSpot(HalError, KeyError):
    """A betting spot name that the chip reader was not configured with."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else ""


class UnknownLamp(HalError, KeyError):
    """A lamp name that the lamp bank was not configured with."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownButton(HalError, ValueError):
    """A console button name that is not one of :class:`hal.events.Button`."""


class DeviceStateError(HalError, RuntimeError):
    """The (mock or simulated) device cannot do that now, e.g. deal while jammed."""


class PortClosed(HalError, RuntimeError):
    """The port was used after :meth:`close` or before :meth:`start`."""
