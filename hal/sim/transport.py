"""Where a simulator's bytes go: a pseudo-terminal it creates, or a real serial port."""

from __future__ import annotations

import errno
import fcntl
import os
import select
import tty
from typing import Protocol


class Transport(Protocol):
    path: str

    def write(self, data: bytes) -> None: ...
    def read(self, timeout: float) -> bytes: ...
    def close(self) -> None: ...


class PtyTransport:
    """A pseudo-terminal: the unit under test opens :attr:`path` as its serial port.

    The simulator keeps the slave side open too, so the unit may close and reopen the
    port without the pty hanging up. Writes never block forever: like a wire, bytes
    nobody drains are dropped after ``write_timeout`` (and counted).
    """

    def __init__(self, write_timeout: float = 2.0) -> None:
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)
        self.path = os.ttyname(self._slave)
        flags = fcntl.fcntl(self._master, fcntl.F_GETFL)
        fcntl.fcntl(self._master, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        self.write_timeout = write_timeout
        self.dropped_bytes = 0
        self.closed = False

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if self.closed:
                return
            try:
                n = os.write(self._master, view)
                view = view[n:]
            except BlockingIOError:
                _, ready, _ = select.select([], [self._master], [], self.write_timeout)
                if not ready:
                    self.dropped_bytes += len(view)
                    return
            except OSError:
                return

    def read(self, timeout: float) -> bytes:
        if self.closed:
            return b""
        try:
            ready, _, _ = select.select([self._master], [], [], timeout)
            if ready:
                return os.read(self._master, 4096)
        except BlockingIOError:
            pass
        except (OSError, ValueError) as exc:
            if getattr(exc, "errno", None) not in (errno.EIO, errno.EBADF, None):
                raise
        return b""

    def close(self) -> None:
        """Hang up: the unit's port fails (EIO) and the path disappears."""
        if not self.closed:
            self.closed = True
            for fd in (self._master, self._slave):
                try:
                    os.close(fd)
                except OSError:
                    pass


class SerialTransport:
    """A real serial port (a technician's USB adapter wired to the unit)."""

    def __init__(self, port: str, baudrate: int = 115200) -> None:
        from hal.serial_link import open_exclusive

        self._serial = open_exclusive(port, baudrate, timeout=0.05)
        self.path = port

    def write(self, data: bytes) -> None:
        self._serial.write(data)

    def read(self, timeout: float) -> bytes:
        self._serial.timeout = timeout
        data: bytes = self._serial.read(max(1, self._serial.in_waiting))
        return data

    def close(self) -> None:
        self._serial.close()
