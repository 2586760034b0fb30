"""The controller's state: one SQLite database (WAL, ``synchronous=FULL``). Every accepted
report is applied in one transaction together with the meters it moves, so after a crash
the controller holds each report either wholly or not at all, and a resent report is
recognised by (unit, seq) and dropped.

Money is booked from claims (:mod:`firmware.jackpot.claims`): the seat's and the dealer's
for one (table, round, box, kind, key) each at most once (UNIQUE), and at most one booking
of it, whatever sequence number a report carries; at most one progressive hit per box and
round (``hit_once``). A claim waits (``held``) for its counterpart, then is ``booked`` or
``disputed`` (an ``integrity`` row names both)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from firmware.runtime.storage import StorageError, check_open_mark, set_open_mark

SCHEMA_VERSION = 1

DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pool (name TEXT PRIMARY KEY, spec TEXT NOT NULL, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS unit (
    unit TEXT PRIMARY KEY,
    events INTEGER NOT NULL DEFAULT 0,      -- distinct reports received
    highest INTEGER NOT NULL DEFAULT 0,     -- highest sequence number seen
    contiguous INTEGER NOT NULL DEFAULT 0,  -- every report up to this seq is held
    duplicates INTEGER NOT NULL DEFAULT 0,
    rejected INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS event (
    n INTEGER PRIMARY KEY,                  -- ingest order
    unit TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL, table_id TEXT NOT NULL, box INTEGER NOT NULL, round INTEGER,
    pool TEXT, body TEXT NOT NULL, effect TEXT,
    UNIQUE (unit, seq)
);
CREATE INDEX IF NOT EXISTS event_round ON event(unit, round, kind);
CREATE TABLE IF NOT EXISTS gap (
    id INTEGER PRIMARY KEY, unit TEXT NOT NULL, first INTEGER NOT NULL, last INTEGER NOT NULL,
    detected_at INTEGER NOT NULL            -- the event (ingest order) that revealed it
);
CREATE TABLE IF NOT EXISTS hit (
    id INTEGER PRIMARY KEY,                 -- the controller's hit number: its order
    event INTEGER NOT NULL, unit TEXT NOT NULL, table_id TEXT NOT NULL, box INTEGER NOT NULL,
    round INTEGER, pool TEXT NOT NULL, kind TEXT NOT NULL,   -- meter | fixed | envy
    category TEXT, share TEXT, amount TEXT NOT NULL,
    state TEXT NOT NULL,                    -- pending | confirmed | paid
    confirmed_by TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS hit_once ON hit(table_id, round, box) WHERE kind IN ('meter', 'fixed');
CREATE UNIQUE INDEX IF NOT EXISTS envy_once ON hit(table_id, round, box, category) WHERE kind = 'envy';
CREATE TABLE IF NOT EXISTS claim (
    id INTEGER PRIMARY KEY,
    table_id TEXT NOT NULL, round INTEGER NOT NULL, box INTEGER NOT NULL,
    kind TEXT NOT NULL, key TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('seat', 'dealer')),
    event INTEGER NOT NULL,                 -- the report that made it (ingest order)
    value TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'held' CHECK (state IN ('held', 'booked', 'disputed')),
    held_at REAL NOT NULL,                  -- wall clock: a held claim is warned about after a while
    warned INTEGER NOT NULL DEFAULT 0,
    UNIQUE (table_id, round, box, kind, key, source)
);
CREATE INDEX IF NOT EXISTS claim_held ON claim(state, held_at);
CREATE TABLE IF NOT EXISTS dealer_round (
    table_id TEXT NOT NULL, round INTEGER NOT NULL,
    stage TEXT NOT NULL,                    -- progressive | settlement
    event INTEGER NOT NULL,
    UNIQUE (table_id, round, stage)
);
CREATE TABLE IF NOT EXISTS booking (
    id INTEGER PRIMARY KEY,
    table_id TEXT NOT NULL, round INTEGER NOT NULL, box INTEGER NOT NULL,
    kind TEXT NOT NULL, key TEXT NOT NULL,
    seat_event INTEGER NOT NULL, dealer_event INTEGER NOT NULL, effect TEXT,
    UNIQUE (table_id, round, box, kind, key)
);
CREATE TABLE IF NOT EXISTS integrity (
    id INTEGER PRIMARY KEY,
    table_id TEXT NOT NULL, round INTEGER, box INTEGER, kind TEXT, key TEXT,
    reason TEXT NOT NULL,
    seat_event INTEGER, dealer_event INTEGER, seat_value TEXT, dealer_value TEXT,
    detail TEXT NOT NULL, at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS rejected (       -- the newest KEEP_REJECTED only
    id INTEGER PRIMARY KEY, topic TEXT NOT NULL, unit TEXT, reason TEXT NOT NULL,
    detail TEXT NOT NULL, excerpt TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS rejected_count (  -- every rejection ever, per reason
    reason TEXT PRIMARY KEY, n INTEGER NOT NULL
);
"""

KEEP_REJECTED = 1000        # rejected messages kept for inspection; all of them are counted


class StoreError(RuntimeError):
    pass


class StoreUnavailable(StoreError):
    """The database cannot be reached now (PostgreSQL restarted, the network down): nothing
    of the transaction is held; the caller must not acknowledge and should try again later."""


# Versioned migrations of the SQLite store (``schema_version`` says which are in); the first
# is the schema as it was before versions, written to be applied over it. Append; never edit
# one that has shipped. PostgreSQL's are in :mod:`firmware.jackpot.pg`.
MIGRATIONS: tuple[str, ...] = (DDL,)


def _migrate(db: sqlite3.Connection) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)")
    have = db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0]
    if have > len(MIGRATIONS):
        raise StoreError(f"the jackpot database is at schema {have}; this controller knows up to {len(MIGRATIONS)}")
    for version in range(have + 1, len(MIGRATIONS) + 1):
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in MIGRATIONS[version - 1].split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute("INSERT INTO schema_version VALUES (?, ?)", (version, time.time()))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


def connect(path: str | Path, readonly: bool = False) -> sqlite3.Connection:
    path = Path(path)
    if readonly:
        if not path.exists():
            raise StoreError(f"{path}: no jackpot database there")
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        try:
            meta = dict(db.execute("SELECT key, value FROM meta"))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path}: not a jackpot database: {exc}") from None
        if meta.get("kind") != "betbox-jackpot":
            raise StoreError(f"{path}: not a jackpot database")
        return db
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        _migrate(db)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: cannot open the jackpot database: {exc}") from None
    meta = dict(db.execute("SELECT key, value FROM meta"))
    if not meta:
        db.execute("BEGIN IMMEDIATE")
        db.executemany("INSERT INTO meta VALUES (?, ?)",
                       [("kind", "betbox-jackpot"), ("schema", str(SCHEMA_VERSION))])
        db.execute("COMMIT")
    elif meta.get("kind") != "betbox-jackpot":
        raise StoreError(f"{path}: not a jackpot database")
    if db.execute("SELECT 1 FROM rejected_count LIMIT 1").fetchone() is None:
        # a database from before the counts: count the rows it kept
        db.execute("INSERT INTO rejected_count SELECT reason, COUNT(*) FROM rejected GROUP BY reason")
    return db


def open_held(path: str | Path) -> sqlite3.Connection:
    """The controller's own file (:func:`connect`), held open: a controller killed leaves its
    WAL beside the file, holding the newest books, so the file marked open with no WAL beside
    it is an older state (the units deleted the reports it lacks: issue #11.5) and is refused.
    The mark is set here and cleared by :func:`close`."""
    path = Path(path)
    had_wal = Path(str(path) + "-wal").exists()
    db = connect(path)
    try:
        check_open_mark(path, db, had_wal, "jackpot database")
        set_open_mark(db, "1")
    except (sqlite3.DatabaseError, StorageError) as exc:
        db.close()
        raise StoreError(str(exc) if isinstance(exc, StorageError) else
                         f"{path}: cannot open the jackpot database: {exc}") from None
    return db


def close(db: Any) -> None:
    """Close the store; a SQLite file says it was closed cleanly (SQLite then folds its WAL in
    and deletes it: a later start knows a missing WAL is normal)."""
    if isinstance(db, sqlite3.Connection):
        try:
            set_open_mark(db, "0")
        except sqlite3.Error:
            pass        # (read-only, or a full partition): the WAL stays if SQLite cannot fold it in
    db.close()


def pipeline(db: Any) -> Any:
    """PostgreSQL's pipeline mode for a batch (statements sent without waiting for each
    answer until one is read); nothing to do on SQLite."""
    return contextlib.nullcontext() if isinstance(db, sqlite3.Connection) else db.pipeline()


def dialect(db: Any) -> str:
    return "sqlite" if isinstance(db, sqlite3.Connection) else str(db.dialect)


def keep_rejected(db: sqlite3.Connection, topic: str, unit: str | None, reason: str, detail: str,
                  excerpt: str, transaction: bool = True) -> None:
    """Count a rejected message and keep it among the newest :data:`KEEP_REJECTED` (a flood
    of junk must not grow the database without bound). One transaction, or (``transaction``
    False) part of the caller's: the controller's batch."""
    if not transaction:
        _keep_rejected(db, topic, unit, reason, detail, excerpt)
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        _keep_rejected(db, topic, unit, reason, detail, excerpt)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _keep_rejected(db: sqlite3.Connection, topic: str, unit: str | None, reason: str, detail: str,
                   excerpt: str) -> None:
    db.execute("INSERT INTO rejected (topic, unit, reason, detail, excerpt) VALUES (?, ?, ?, ?, ?)",
               (topic, unit, reason, detail, excerpt))
    db.execute("INSERT INTO rejected_count VALUES (?, 1) ON CONFLICT (reason) DO UPDATE SET n = rejected_count.n + 1",
               (reason,))
    db.execute("DELETE FROM rejected WHERE id <= (SELECT MAX(id) FROM rejected) - ?", (KEEP_REJECTED,))


def rejected_counts(db: sqlite3.Connection) -> dict[str, int]:
    """Every rejection ever, per reason (a database from before the counts: the rows kept)."""
    try:
        return dict(db.execute("SELECT reason, n FROM rejected_count ORDER BY reason"))
    except sqlite3.OperationalError:
        return dict(db.execute("SELECT reason, COUNT(*) FROM rejected GROUP BY reason ORDER BY reason"))


# one encoder for every row (json.dumps with options builds a new one each call: the
# ingest writes three a report)
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def dumps(value: Any) -> str:
    return _ENCODER.encode(value)
