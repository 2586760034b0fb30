"""systemd's readiness and watchdog protocol (sd_notify) for ``betbox run``.

The service manager gives the unit a datagram socket in ``NOTIFY_SOCKET`` (a path, or an
abstract name written ``@name``) and, with ``WatchdogSec=``, ``WATCHDOG_USEC``. The unit
sends ``READY=1`` once it has recovered its journal (a seat with a display: once the first
frame is drawn), ``WATCHDOG=1`` from its own dispatch loop (so a stuck loop stops petting
and systemd restarts the unit), ``STATUS=...`` lines for ``systemctl status`` and
``STOPPING=1``. Without ``NOTIFY_SOCKET`` (a unit run by hand, tests) every call does nothing.

The protocol is one datagram per message (sd_notify(3)); written here rather than pulling
in a C extension (python3-systemd) for it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Callable

log = logging.getLogger("betbox.notify")


class Notifier:
    def __init__(self, environ: dict[str, str] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        env = os.environ if environ is None else environ
        path = env.get("NOTIFY_SOCKET", "")
        self.address: str | bytes | None = None
        if path.startswith("@"):
            self.address = "\0" + path[1:]
        elif path.startswith("/"):
            self.address = path
        # WATCHDOG_PID, when set, names the process the watchdog is for
        pid = env.get("WATCHDOG_PID")
        usec = env.get("WATCHDOG_USEC", "")
        mine = pid is None or pid == str(os.getpid())
        self.watchdog_interval = int(usec) / 1e6 if usec.isdigit() and int(usec) > 0 and mine else None
        self._clock = clock
        self._last_pet = float("-inf")
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, *lines: str) -> bool:
        """One datagram; False (logged once per failure) when the manager is not there."""
        if self.address is None:
            return False
        with self._lock:
            try:
                if self._sock is None:
                    self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
                self._sock.sendto("\n".join(lines).encode(), self.address)
                return True
            except OSError as exc:
                log.warning("sd_notify to %r failed: %s", self.address, exc)
                return False

    def ready(self, status: str) -> None:
        self.send("READY=1", f"STATUS={status}")

    def status(self, status: str) -> None:
        self.send(f"STATUS={status}")

    def stopping(self) -> None:
        self.send("STOPPING=1", "STATUS=stopping")

    def pet(self) -> None:
        """``WATCHDOG=1``, at most twice per watchdog interval (called from the loop)."""
        if self.watchdog_interval is None:
            return
        now = self._clock()
        if now - self._last_pet >= self.watchdog_interval / 2:
            self._last_pet = now
            self.send("WATCHDOG=1")

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None
