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
import sqlite3
from dataclasses import dataclass
from typing import Any, Iterable

import firmware

NOT_AVAILABLE = "not available"


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


def check_pin(entered: str, expected: str) -> bool:
    return bool(expected) and hmac.compare_digest(entered.encode(), expected.encode())


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
                     log_lines: Iterable[str] = ()) -> tuple[ServiceSection, ...]:
    """``table``: an in-process table when there is one (the demo); ``controller``: a
    :class:`ui.source.ControllerFeed` or None.

    Safe from the UI thread while the seat steps in its own: it reads the seat's view (a
    frozen value), plain attributes, a copy of the alarm list and the journal through its
    own read-only connection; never the seat's live dictionaries or its SQLite connection."""
    view = seat.view
    profile = seat.profile
    ident = ServiceSection("Unit", (
        ("unit", seat.unit_id), ("role", seat.role), ("table", seat.table), ("box", str(seat.box)),
        ("firmware", firmware.__version__), ("configuration hash", config_digest),
        ("profile", profile.name if profile else NOT_AVAILABLE),
    ))
    bus = type(seat.bus).__name__
    c = view.controller
    if c.link is None and controller is not None:
        c = controller.state
    links = ServiceSection("Links", (
        ("broker", "in-process bus (no broker)" if bus == "InProcessBus" else bus),
        ("jackpot controller", c.link or NOT_AVAILABLE),
        ("meter", str(c.meter) if c.meter is not None else NOT_AVAILABLE),
        ("meter pending", "yes" if c.pending else "no"),
        ("stream position", str(seat.last_stream)),
    ))
    reader_rows = []
    for spot in view.spots:
        tags = ", ".join(f"{ch.uid} ({ch.status}{' ' + ch.denomination if ch.denomination else ''})"
                         for ch in spot.chips) or "—"
        reader_rows.append((spot.name, tags))
    reader = ServiceSection("Chip reader (live, debounced)", tuple(reader_rows))
    if table is not None:
        shoe = table.shoe
        shoe_rows = (("connected", str(shoe.connected)), ("cards since shuffle", str(table.dealer.shoe_counter)),
                     ("shoe number", str(table.dealer.shoe_number)))
    else:
        shoe_rows = (("shoe", NOT_AVAILABLE + " (the dealer unit reads the shoe)"),)
    shoe_section = ServiceSection("Card shoe", shoe_rows)
    lamps = seat.lamps
    lamp_rows = tuple((name, str(lamps.state(name))) for name in lamps.lamps) if lamps else (("lamps", NOT_AVAILABLE),)
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
        ("inputs journalled", str(stats.get("accepted"))), ("messages emitted", str(stats.get("emitted"))),
        ("undelivered", str(stats.get("undelivered"))), ("steps", str(stats.get("steps"))),
        ("MQTT outbox depth", str(depth) if depth is not None else NOT_AVAILABLE + " (no MQTT link)"),
    ))
    alarms = list(seat.alarms)[-5:]
    recent = [f"alarm {a.get('alarm')}: {a.get('detail')}" for a in alarms]
    recent += list(log_lines)[-8:]
    logs = ServiceSection("Recent log", tuple(("", line) for line in recent) or (("", "—"),))
    return (ident, links, reader, shoe_section, ServiceSection("Lamps", lamp_rows), journal, logs)


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
