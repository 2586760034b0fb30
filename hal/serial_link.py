"""One serial port owned by one reader thread: exclusive open, bounded reconnect.

Port handling only; the bytes go to a callback that feeds a pure parser. pyserial is
imported here, so only when a serial backend is chosen.
"""

from __future__ import annotations

import errno
import os
import threading
from typing import Callable

import serial

from hal.errors import HalConfigError, SerialPortBusy, SerialPortMissing


def open_exclusive(port: str, baudrate: int, timeout: float) -> serial.Serial:
    """Open ``port`` exclusively; errors name the port and say what is wrong."""
    try:
        return serial.Serial(port, baudrate, timeout=timeout, exclusive=True)
    except serial.SerialException as exc:
        text = str(exc)
        if exc.errno in (errno.ENOENT, errno.ENODEV, errno.ENXIO) or not os.path.exists(port):
            raise SerialPortMissing(f"serial port {port!r} does not exist ({text})") from exc
        if exc.errno in (errno.EAGAIN, errno.EBUSY, errno.EWOULDBLOCK) or "lock" in text:
            raise SerialPortBusy(f"serial port {port!r} is in use by another process "
                                 f"({text})") from exc
        raise HalConfigError(f"cannot open serial port {port!r}: {text}") from exc
    except ValueError as exc:  # pyserial's way of refusing a baud rate
        raise HalConfigError(f"cannot open serial port {port!r}: {exc}") from exc


class SerialLink:
    """Reads ``port`` in a thread and hands bytes to ``on_bytes``.

    ``on_idle`` is called when a read times out with nothing (lets the parser abandon a
    partial frame and the device check for silence). When the port fails, ``on_down`` is
    called and the port is reopened with back-off doubling from ``backoff_min`` up to
    ``backoff_max``; ``on_up`` is called after every successful (re)open.
    """

    def __init__(self, port: str, baudrate: int, *,
                 on_bytes: Callable[[bytes], None],
                 on_idle: Callable[[], None],
                 on_up: Callable[[], None],
                 on_down: Callable[[str], None],
                 read_timeout: float = 0.05,
                 backoff_min: float = 0.05,
                 backoff_max: float = 2.0,
                 thread_name: str = "serial") -> None:
        self.port, self.baudrate = port, baudrate
        self._on_bytes, self._on_idle = on_bytes, on_idle
        self._on_up, self._on_down = on_up, on_down
        self.read_timeout = read_timeout
        self.backoff_min, self.backoff_max = backoff_min, backoff_max
        self._serial: serial.Serial | None = None
        self._stop = threading.Event()
        self._write_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        self.reconnects = 0

    def open(self) -> None:
        """First open, synchronous, so configuration errors stop start-up."""
        self._serial = open_exclusive(self.port, self.baudrate, self.read_timeout)
        self._on_up()
        self._thread.start()

    def write(self, data: bytes) -> bool:
        """Best effort: False if the port is down (the device will get a HELLO later)."""
        with self._write_lock:
            ser = self._serial
            if ser is None:
                return False
            try:
                ser.write(data)
                return True
            except (serial.SerialException, OSError):
                return False

    def close(self) -> None:
        self._stop.set()
        ser = self._serial
        if ser is not None:
            try:
                ser.cancel_read()
            except Exception:  # already failing; the thread will notice the stop flag
                pass
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._drop_port()

    def _run(self) -> None:
        delay = self.backoff_min
        while not self._stop.is_set():
            ser = self._serial
            if ser is None:
                try:
                    ser = serial.Serial(self.port, self.baudrate, timeout=self.read_timeout,
                                        exclusive=True)
                except (serial.SerialException, OSError, ValueError):
                    self._stop.wait(delay)
                    delay = min(delay * 2, self.backoff_max)
                    continue
                with self._write_lock:
                    self._serial = ser
                delay = self.backoff_min
                self.reconnects += 1
                self._on_up()
            try:
                data = ser.read(max(1, ser.in_waiting))
            except (serial.SerialException, OSError, TypeError) as exc:
                if self._stop.is_set():
                    break
                self._drop_port()
                self._on_down(f"serial port {self.port}: {exc}")
                continue
            if data:
                self._on_bytes(data)
            elif not self._stop.is_set():
                self._on_idle()

    def _drop_port(self) -> None:
        with self._write_lock:
            ser, self._serial = self._serial, None
        if ser is not None:
            try:
                ser.close()
            except Exception:
                pass
