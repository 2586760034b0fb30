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
import sqlite3
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = 1

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
"""


class OutboxError(RuntimeError):
    pass


@dataclass(frozen=True)
class Pending:
    seq: int
    id: str
    topic: str
    payload: str
    acked: bool


class Outbox:
    def __init__(self, path: str | Path, unit_id: str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_DDL)
        except sqlite3.DatabaseError as exc:
            raise OutboxError(f"{self.path}: cannot open the outbox: {exc}") from None
        meta = dict(self._db.execute("SELECT key, value FROM meta"))
        if not meta:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT INTO meta VALUES (?, ?)",
                                 [("unit", unit_id), ("next_seq", "1"), ("confirmed", "0")])
            self._db.execute("COMMIT")
        elif meta["unit"] != unit_id:
            raise OutboxError(f"{self.path} is the outbox of {meta['unit']!r}, not {unit_id!r}")
        self.unit_id = unit_id

    def _meta(self, key: str) -> int:
        return int(self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0])

    def put(self, topic: str, kind: str, body: dict[str, Any], key: str | None = None,
            extra: dict[str, Any] | None = None) -> int | None:
        """Store a report; its seq, or None when ``key`` was already reported (idempotent)."""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                if key is not None and db.execute("SELECT 1 FROM outbox WHERE key = ?", (key,)).fetchone():
                    db.execute("ROLLBACK")
                    return None
                if key is not None and db.execute("SELECT 1 FROM meta WHERE key = ?", ("k:" + key,)).fetchone():
                    db.execute("ROLLBACK")      # reported and already pruned
                    return None
                seq = self._meta("next_seq")
                rid = str(uuid.uuid4())
                payload = json.dumps({"schema": SCHEMA, "id": rid, "unit": self.unit_id, "seq": seq,
                                      "kind": kind, **(extra or {}), "body": body},
                                     sort_keys=True, separators=(",", ":"))
                db.execute("INSERT INTO outbox (seq, id, key, topic, payload) VALUES (?, ?, ?, ?, ?)",
                           (seq, rid, key, topic, payload))
                db.execute("UPDATE meta SET value = ? WHERE key = 'next_seq'", (str(seq + 1),))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return seq

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
            except BaseException:
                db.execute("ROLLBACK")
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
            except BaseException:
                db.execute("ROLLBACK")
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
                keys = [k for (k,) in db.execute("SELECT key FROM outbox WHERE seq <= ? AND seq > ? "
                                                 "AND key IS NOT NULL", (seq, floor))]
                db.executemany("INSERT OR IGNORE INTO meta VALUES (?, '1')", [("k:" + k,) for k in keys])
                n = db.execute("DELETE FROM outbox WHERE seq <= ? AND seq > ?", (seq, floor)).rowcount
                db.execute("UPDATE meta SET value = ? WHERE key = 'confirmed'", (str(seq),))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return n

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

    @property
    def last_seq(self) -> int:
        with self._lock:
            return self._meta("next_seq") - 1

    def close(self) -> None:
        with self._lock:
            self._db.close()
