"""The durable outbox: reports wait here (SQLite, WAL, ``synchronous=FULL``) until the
broker has acknowledged them, and stay until the controller says it holds them.

Each report gets a unique id and the unit's next sequence number in the same transaction
that stores it, so a number is never reused, even across power cuts. A report is
*acknowledged* when the broker's PUBACK arrives; it is *confirmed* when the controller's
retained high-water mark (:func:`firmware.link.topics.confirmed_topic`) covers its sequence
number, and only then deleted. After a reconnect everything not yet confirmed is sent again,
because a broker killed between its PUBACK and its next save loses what it acknowledged;
the controller drops the duplicates by (unit, seq).
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from firmware.runtime.storage import (
    StorageError,
    StorageFull,
    bound_wal,
    check_integrity,
    check_open_mark,
    create_private,
    full_error,
    is_full,
    rollback,
    set_open_mark,
)

SCHEMA = 1

#: Idempotency keys of confirmed reports kept: those of the newest ``KEEP_KEYS`` reports
#: (far more than a restarted unit reports again: its round in play and its kept alarms).
#: A running-numbered key (``alarm/17``: a name, a slash, a number) is kept as one mark per
#: name instead, the highest confirmed: its reporter goes through the numbers in order.
KEEP_KEYS = 2000
NUMBERED_KEY = re.compile(r"^([a-z_]+)/(\d+)$")

_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY,           -- the unit's report sequence number, from 1, gap-free
    id TEXT NOT NULL UNIQUE,           -- unique report id (uuid4)
    key TEXT UNIQUE,                   -- caller's idempotency key (e.g. round/kind), optional
    topic TEXT NOT NULL,
    payload TEXT NOT NULL,
    acked INTEGER NOT NULL DEFAULT 0   -- the broker's PUBACK arrived
);
-- keys of reports confirmed and deleted (reported: never again), pruned to KEEP_KEYS
CREATE TABLE IF NOT EXISTS reported (key TEXT PRIMARY KEY, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS reported_seq ON reported(seq);
"""


class OutboxError(StorageError):
    pass


class OutboxFull(OutboxError, StorageFull):
    """The state partition is full: the report was not stored (SQLITE_FULL, named)."""


@dataclass(frozen=True)
class Pending:
    seq: int
    id: str
    topic: str
    payload: str
    acked: bool


class Outbox:
    def __init__(self, path: str | Path, unit_id: str, keep_keys: int = KEEP_KEYS) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.keep_keys = keep_keys
        had_wal = Path(str(self.path) + "-wal").exists()
        db: sqlite3.Connection | None = None
        try:
            create_private(self.path)
            db = self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            check_integrity(self.path, db, "outbox")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            bound_wal(db)
            db.executescript(_DDL)
            meta = dict(db.execute("SELECT key, value FROM meta"))
            if meta:
                check_open_mark(self.path, db, had_wal, "outbox")
            if not meta:
                db.execute("BEGIN IMMEDIATE")
                db.executemany("INSERT INTO meta VALUES (?, ?)",
                               [("unit", unit_id), ("next_seq", "1"), ("confirmed", "0")])
                db.execute("COMMIT")
            elif meta.get("unit") != unit_id:
                raise OutboxError(f"{self.path} is the outbox of {meta.get('unit')!r}, not {unit_id!r}")
            self._move_old_keys(db)
            set_open_mark(db, "1")
        except (sqlite3.DatabaseError, StorageError) as exc:
            if db is not None:
                db.close()
            if isinstance(exc, OutboxError):
                raise
            if is_full(exc):
                raise OutboxFull(f"{full_error(self.path)}: cannot open the outbox") from None
            if isinstance(exc, StorageError):
                raise OutboxError(str(exc)) from None
            raise OutboxError(f"{self.path}: cannot open the outbox: {exc}") from None
        self._closer = weakref.finalize(self, _close_clean, db)
        self.unit_id = unit_id

    @staticmethod
    def _move_old_keys(db: sqlite3.Connection) -> None:
        """Firmware before the ``reported`` table kept a confirmed key as a ``k:<key>`` meta row
        forever: they move over (and are pruned from then on)."""
        if db.execute("SELECT 1 FROM meta WHERE key LIKE 'k:%' LIMIT 1").fetchone() is None:
            return
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT OR IGNORE INTO reported SELECT substr(key, 3), "
                   "(SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'confirmed') FROM meta WHERE key LIKE 'k:%'")
        db.execute("DELETE FROM meta WHERE key LIKE 'k:%'")
        db.execute("COMMIT")

    def _write(self, work) -> Any:
        """One transaction (under the lock); SQLITE_FULL named, never masked by the rollback."""
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            result = work(db)
            if db.in_transaction:
                db.execute("COMMIT")
            return result
        except BaseException as exc:
            self._failed(exc)
            raise

    def _meta(self, key: str) -> int:
        return int(self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0])

    def put(self, topic: str, kind: str, body: dict[str, Any], key: str | None = None,
            extra: dict[str, Any] | None = None) -> int | None:
        """Store a report; its seq, or None when ``key`` was already reported (idempotent)."""
        def store(db: sqlite3.Connection) -> int | None:
            if key is not None and self._reported(db, key):
                db.execute("ROLLBACK")
                return None
            seq = self._meta("next_seq")
            rid = str(uuid.uuid4())
            payload = json.dumps({"schema": SCHEMA, "id": rid, "unit": self.unit_id, "seq": seq,
                                  "kind": kind, **(extra or {}), "body": body},
                                 sort_keys=True, separators=(",", ":"))
            db.execute("INSERT INTO outbox (seq, id, key, topic, payload) VALUES (?, ?, ?, ?, ?)",
                       (seq, rid, key, topic, payload))
            db.execute("UPDATE meta SET value = ? WHERE key = 'next_seq'", (str(seq + 1),))
            return seq

        with self._lock:
            return self._write(store)

    @staticmethod
    def _reported(db: sqlite3.Connection, key: str) -> bool:
        """Was ``key`` reported: waiting here, confirmed and kept, or under its name's mark."""
        if db.execute("SELECT 1 FROM outbox WHERE key = ?", (key,)).fetchone():
            return True
        if db.execute("SELECT 1 FROM reported WHERE key = ?", (key,)).fetchone():
            return True
        numbered = NUMBERED_KEY.match(key)
        if numbered:
            row = db.execute("SELECT value FROM meta WHERE key = ?", ("n:" + numbered.group(1),)).fetchone()
            return row is not None and int(numbered.group(2)) <= int(row[0])
        return False

    def mark_acked(self, seq: int) -> None:
        self.mark_acked_many([seq])

    def mark_acked_many(self, seqs: list[int]) -> None:
        """The broker acknowledged these reports (one transaction for the batch)."""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany("UPDATE outbox SET acked = 1 WHERE seq = ?", [(s,) for s in seqs])
                db.execute("COMMIT")
            except BaseException as exc:
                self._failed(exc)
                raise

    @property
    def behind(self) -> dict[str, int] | None:
        """Set once the controller confirmed seqs this outbox never numbered (the unit was
        restarted from an older copy): ``{"outbox_seq": n, "confirmed": m}``."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'behind'").fetchone()
        return None if row is None else json.loads(row[0])

    @property
    def numbered(self) -> bool:
        """Has this outbox ever numbered a report (not a new unit's)?"""
        with self._lock:
            return self._meta("next_seq") > 1 or self._meta("confirmed") > 0

    def mark_behind(self, through: int) -> dict[str, int] | None:
        """The controller confirmed through ``through``, past everything numbered here: keep
        every report held (the reports up to ``outbox_seq`` are never deleted as confirmed:
        the controller's reports under those seqs may be others) and number the next report
        after ``through``, so no seq is reused. Returns the mark (the first one stands)."""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                last = self._meta("next_seq") - 1
                row = db.execute("SELECT value FROM meta WHERE key = 'behind'").fetchone()
                if through <= last:
                    db.execute("ROLLBACK")
                    return None if row is None else json.loads(row[0])
                behind = json.loads(row[0]) if row is not None else {"outbox_seq": last, "confirmed": through}
                behind["confirmed"] = max(behind["confirmed"], through)
                db.execute("INSERT OR REPLACE INTO meta VALUES ('behind', ?)", (json.dumps(behind),))
                db.execute("UPDATE meta SET value = ? WHERE key = 'next_seq'", (str(through + 1),))
                db.execute("COMMIT")
            except BaseException as exc:
                self._failed(exc)
                raise
            return behind

    def confirm_through(self, seq: int) -> int:
        """The controller holds every report up to ``seq``: delete them. Returns how many.
        (Not those of an outbox that was behind, up to where it was: see ``mark_behind``.)"""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                if seq <= self._meta("confirmed"):
                    db.execute("ROLLBACK")
                    return 0
                row = db.execute("SELECT value FROM meta WHERE key = 'behind'").fetchone()
                floor = json.loads(row[0])["outbox_seq"] if row is not None else 0
                self._keep_keys(db, seq, floor)
                n = db.execute("DELETE FROM outbox WHERE seq <= ? AND seq > ?", (seq, floor)).rowcount
                db.execute("UPDATE meta SET value = ? WHERE key = 'confirmed'", (str(seq),))
                db.execute("COMMIT")
            except BaseException as exc:
                self._failed(exc)
                raise
            return n

    def _keep_keys(self, db: sqlite3.Connection, seq: int, floor: int = 0) -> None:
        """The keys of the reports up to ``seq`` (about to be deleted) are remembered, so a
        report is never stored twice, and pruned to the newest ``keep_keys``; a
        running-numbered key leaves its name's mark instead."""
        for key, at in db.execute("SELECT key, seq FROM outbox WHERE seq <= ? AND seq > ? AND key IS NOT NULL",
                                  (seq, floor)).fetchall():
            numbered = NUMBERED_KEY.match(key)
            if numbered:
                db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = "
                           "MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
                           ("n:" + numbered.group(1), numbered.group(2)))
            else:
                db.execute("INSERT OR IGNORE INTO reported VALUES (?, ?)", (key, at))
        db.execute("DELETE FROM reported WHERE seq <= (SELECT seq FROM reported ORDER BY seq DESC "
                   "LIMIT 1 OFFSET ?)", (self.keep_keys,))

    def _failed(self, exc: BaseException) -> None:
        """After a failed write: roll back what SQLite left open (on SQLITE_FULL it ended the
        transaction itself: a second ROLLBACK would mask the cause); name a full partition."""
        rollback(self._db)
        if is_full(exc):
            raise OutboxFull(f"{full_error(self.path)}: the outbox was not written") from None

    def pending(self, after: int = 0, limit: int = 500) -> list[Pending]:
        """Reports not yet confirmed, in sequence order, with seq > ``after``."""
        with self._lock:
            rows = self._db.execute("SELECT seq, id, topic, payload, acked FROM outbox WHERE seq > ? "
                                    "ORDER BY seq LIMIT ?", (after, limit)).fetchall()
        return [Pending(s, i, t, p, bool(a)) for s, i, t, p, a in rows]

    def stats(self) -> dict[str, int]:
        with self._lock:
            total, acked = self._db.execute("SELECT COUNT(*), COALESCE(SUM(acked), 0) FROM outbox").fetchone()
            return {"waiting": total - acked, "acked_unconfirmed": acked,
                    "next_seq": self._meta("next_seq"), "confirmed": self._meta("confirmed")}

    def sent_through(self) -> int:
        """The highest sequence number the broker acknowledged (or already confirmed): a
        controller's mark beyond it covers reports the controller cannot hold."""
        with self._lock:
            acked = self._db.execute("SELECT MAX(seq) FROM outbox WHERE acked = 1").fetchone()[0]
            return max(acked or 0, self._meta("confirmed"))

    @property
    def last_seq(self) -> int:
        with self._lock:
            return self._meta("next_seq") - 1

    def close(self) -> None:
        """Close cleanly: the file says so (see :func:`check_open_mark`)."""
        with self._lock:
            self._closer()


def _close_clean(db: sqlite3.Connection) -> None:
    try:
        set_open_mark(db, "0")
    except sqlite3.Error:
        pass
    try:
        db.close()
    except sqlite3.Error:
        pass
