"""The technician's service menu: what the unit is and how its links and devices are.

Shows only what the runtime provides; where a source does not exist yet it says
``not available`` rather than a made-up figure. Plain Python, no Kivy. Technician texts
are in English (the service manual's language).
"""

from __future__ import annotations

import collections
import hashlib
import hmac
import logging
import os
import sqlite3
import sys
import time
from dataclasses import dataclass
from typing import Any, Iterable

import firmware

NOT_AVAILABLE = "not available"
ANTENNAS = "Chip reader antennas (live, raw reads)"     # the section refreshed while shown


@dataclass(frozen=True)
class ServiceSection:
    heading: str
    rows: tuple[tuple[str, str], ...]


class LogRing(logging.Handler):
    """The last log lines of this process, for the service screen."""

    def __init__(self, size: int = 40) -> None:
        super().__init__(logging.INFO)
        self.lines: collections.deque[str] = collections.deque(maxlen=size)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception:  # noqa: BLE001 - a log line must never break the screen
            pass


#: scrypt's cost for a technician PIN: ~16 MB and a few tens of ms on a Pi per try, so a
#: stolen configuration does not give up a 4-8 digit PIN by brute force in seconds.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2 ** 14, 8, 1


def hash_pin(pin: str, salt: bytes | None = None) -> str:
    """The configuration's form of a technician PIN: ``scrypt$N$r$p$<salt hex>$<hash hex>``
    (a random 16-byte salt; the PIN itself is never stored)."""
    salt = os.urandom(16) if salt is None else salt
    digest = hashlib.scrypt(pin.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${salt.hex()}${digest.hex()}"


def check_pin(entered: str, stored: str) -> bool:
    """Whether ``entered`` is the PIN whose salted hash is ``stored`` (``hash_pin``'s form).
    A stored value that is not such a hash (a plain PIN, empty, garbled) matches nothing."""
    parts = stored.split("$") if stored else []
    if len(parts) != 6 or parts[0] != "scrypt" or not entered:
        return False
    try:
        n, r, p = (int(x) for x in parts[1:4])
        salt, want = bytes.fromhex(parts[4]), bytes.fromhex(parts[5])
        got = hashlib.scrypt(entered.encode(), salt=salt, n=n, r=r, p=p, dklen=len(want))
    except (ValueError, MemoryError):
        return False
    return hmac.compare_digest(got, want)


class PinLock:
    """Wrong PINs lock the service screen: after ``tries`` wrong ones in a row, no PIN is
    taken for ``lockout`` seconds, doubling with each further lockout (reset by a right
    PIN). ``clock``: seconds, monotonic (injected by tests)."""

    def __init__(self, stored: str, tries: int = 3, lockout: float = 60.0, clock=time.monotonic) -> None:
        self.stored = stored
        self.tries = tries
        self.lockout = lockout
        self.clock = clock
        self.failed = 0
        self.lockouts = 0
        self.until = 0.0

    def locked_for(self) -> int:
        """Whole seconds until a PIN is taken again (0: now)."""
        return max(0, int(self.until - self.clock() + 0.999))

    def enter(self, pin: str) -> str:
        """``ok`` | ``wrong`` | ``locked`` (no PIN checked while locked) | ``no_pin``."""
        if not self.stored:
            return "no_pin"
        if self.locked_for():
            return "locked"
        if check_pin(pin, self.stored):
            self.failed = self.lockouts = 0
            return "ok"
        self.failed += 1
        if self.failed >= self.tries:
            self.until = self.clock() + self.lockout * 2 ** self.lockouts
            self.lockouts += 1
            self.failed = 0
            logging.getLogger("betbox.ui").warning("service screen locked after %d wrong PINs", self.tries)
            return "locked"
        return "wrong"


def plain(value: Any) -> str:
    """A value as a technician reads it, never a Python repr: yes/no, 1,234, 25,000.50,
    a lamp's "on" / "off" / "blinking 0.5 s on, 0.5 s off"."""
    from decimal import Decimal
    from fractions import Fraction
    if value is None:
        return NOT_AVAILABLE
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (Fraction, Decimal, float)):
        from .presenter import money
        return money(Fraction(value))
    mode = getattr(value, "mode", None)
    if isinstance(mode, str):                   # hal.ports.LampState
        if mode != "blink":
            return mode
        on, off = getattr(value, "on_time", None), getattr(value, "off_time", None)
        return "blinking" + (f" {on:g} s on, {off:g} s off" if on is not None and off is not None else "")
    if isinstance(value, str):
        try:
            from .presenter import money
            return money(value) if value.replace(".", "", 1).lstrip("-").isdigit() else value
        except ValueError:
            return value
    return str(value)


def config_hash(text: bytes | None) -> str:
    return NOT_AVAILABLE if text is None else hashlib.sha256(text).hexdigest()[:16]


def journal_stats(path) -> dict[str, Any]:
    """The journal's counts through a read-only connection of this thread's own (SQLite WAL:
    readers never block the seat's writes, and the seat's connection is never shared)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
    try:
        emitted, pending = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(delivered = 0), 0) FROM record WHERE dir = 'out'").fetchone()
        accepted, steps = db.execute(
            "SELECT COUNT(*), COALESCE(MAX(step), 0) FROM record WHERE dir = 'in'").fetchone()
    finally:
        db.close()
    return {"emitted": emitted, "undelivered": pending, "accepted": accepted, "steps": steps}


def service_sections(seat, table=None, controller=None, config_digest: str = NOT_AVAILABLE,
                     log_lines: Iterable[str] = (), diag=None, antennas=None) -> tuple[ServiceSection, ...]:
    """``table``: an in-process table when there is one (the demo); ``controller``: a
    :class:`ui.source.ControllerFeed` or None; ``diag``: a :class:`firmware.diag.LiveDiag`
    (a unit's ``betbox run``) whose results make the last section; ``antennas``: the
    seat's :class:`ui.antennas.AntennaReads` (raw reads per antenna, live).

    Safe from the UI thread while the seat steps in its own: it reads the seat's view (a
    frozen value), plain attributes, a copy of the alarm list and the journal through its
    own read-only connection; never the seat's live dictionaries or its SQLite connection."""
    view = seat.view
    profile = seat.profile
    ident = ServiceSection("Unit", (
        ("unit", seat.unit_id), ("role", seat.role), ("table", seat.table), ("box", str(seat.box)),
        ("firmware", firmware.__version__), ("configuration hash", config_digest),
        ("profile", profile.name if profile else NOT_AVAILABLE),
        # this start's betbox verify (when [verify] at_start): the reason it failed, or none
        ("software verification", f"FAILED: {seat.not_verified}" if getattr(seat, "not_verified", None)
         else "no failure at start"),
        ("unit conditions", ", ".join(getattr(view, "conditions", ())) or "none"),
    ))
    bus = type(seat.bus).__name__
    c = view.controller
    if c.link is None and controller is not None:
        c = controller.state
    links = ServiceSection("Links", (
        ("broker", "in-process bus (no broker)" if bus == "InProcessBus" else bus),
        ("jackpot controller", c.link or NOT_AVAILABLE),
        ("meter", plain(c.meter) if c.meter not in (None, "") else NOT_AVAILABLE),
        ("meter pending", "yes" if c.pending else "no"),
        ("stream position", str(seat.last_stream)),
    ))
    reader_rows = []
    for spot in view.spots:
        tags = ", ".join(f"{ch.uid} ({ch.status}{' ' + ch.denomination if ch.denomination else ''})"
                         for ch in spot.chips) or "—"
        reader_rows.append((spot.name, tags))
    reader = ServiceSection("Chip reader (live, debounced)", tuple(reader_rows))
    antenna_rows = antennas.rows() if antennas is not None else (("antennas", NOT_AVAILABLE),)
    raw = ServiceSection(ANTENNAS, antenna_rows)
    if table is not None:
        shoe = table.shoe
        shoe_rows: tuple[tuple[str, str], ...] = (("connected", plain(shoe.connected)), ("cards since shuffle", str(table.dealer.shoe_counter)),
                     ("shoe number", str(table.dealer.shoe_number)))
    else:
        shoe_rows = (("shoe", NOT_AVAILABLE + " (the dealer unit reads the shoe)"),)
    shoe_section = ServiceSection("Card shoe", shoe_rows)
    lamps = seat.lamps
    lamp_rows = tuple((name, plain(lamps.state(name))) for name in lamps.lamps) if lamps else (("lamps", NOT_AVAILABLE),)
    try:
        stats: dict[str, Any] = journal_stats(seat.journal.path)
    except sqlite3.Error as exc:
        stats = {"accepted": f"{NOT_AVAILABLE} ({exc})"}
    outbox = getattr(seat.bus, "outbox", None)
    try:
        depth = outbox.stats()["waiting"] if outbox is not None else None    # the outbox locks itself
    except Exception as exc:  # noqa: BLE001 - the service screen says what it could not read
        depth = f"{NOT_AVAILABLE} ({exc})"
    journal = ServiceSection("Journal and outbox", (
        ("inputs journalled", plain(stats.get("accepted"))), ("messages emitted", plain(stats.get("emitted"))),
        ("undelivered", plain(stats.get("undelivered"))), ("steps", plain(stats.get("steps"))),
        ("MQTT outbox depth", plain(depth) if depth is not None else NOT_AVAILABLE + " (no MQTT link)"),
    ))
    alarms = list(seat.alarms)[-5:]
    recent = [f"alarm {a.get('alarm')}: {a.get('detail')}" for a in alarms]
    recent += list(log_lines)[-8:]
    logs = ServiceSection("Recent log", tuple(("", line) for line in recent) or (("", "—"),))
    sections = (ident, links, reader, raw, shoe_section, ServiceSection("Lamps", lamp_rows), journal, logs)
    return sections + ((diag_section(diag),) if diag is not None else ())


def diag_section(diag) -> ServiceSection:
    """What ``betbox diag`` prints, for the service menu (``diag``: a
    :class:`firmware.diag.LiveDiag`): the verdict, then one row per check."""
    from firmware.diag import verdict
    heading = "Diagnostics (betbox diag)"
    results = diag.results
    if results is None:
        return ServiceSection(heading, (("", "running…" if diag.running else NOT_AVAILABLE),))
    _, summary = verdict(results)
    when = time.strftime("%H:%M:%S", time.localtime(diag.finished_at)) if diag.finished_at else "?"
    rows = [("verdict", f"{summary} (at {when}{', running again…' if diag.running else ''})")]
    rows += [(c.name, f"{c.status.upper()} {c.detail}") for c in results]
    return ServiceSection(heading, tuple(rows))


def lamp_test(seat) -> bool:
    """All lamps on (the caller restores them with :func:`lamp_restore` a moment later)."""
    if seat.lamps is None or seat.lamps.closed:
        return False
    for name in seat.lamps.lamps:
        seat.lamps.on(name)
    return True


def lamp_restore(seat) -> None:
    if seat.lamps is None or seat.lamps.closed:
        return
    for name, on in seat.lamp_wanted().items():
        if name in seat.lamps.lamps:
            (seat.lamps.on if on else seat.lamps.off)(name)


def main(argv: list[str] | None = None) -> int:
    """``python -m ui.service --hash-pin``: read a PIN (4-8 digits) from standard input and
    print the ``pin_hash`` line for a seat's ``[display]`` configuration."""
    import argparse
    import re
    ap = argparse.ArgumentParser(prog="python -m ui.service")
    ap.add_argument("--hash-pin", action="store_true", required=True)
    ap.parse_args(argv)
    pin = sys.stdin.readline().strip()
    if not re.fullmatch(r"[0-9]{4,8}", pin):
        print("ui.service: a technician PIN is 4 to 8 digits", file=sys.stderr)
        return 2
    print(f'pin_hash = "{hash_pin(pin)}"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
