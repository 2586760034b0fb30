"""The durable outbox: reports wait here (SQLite, WAL, ``synchronous=FULL``) until the
broker has acknowledged them, and stay until the controller says it holds them.

Each report gets a unique id and the unit's next sequence number in the same transaction
that stores it, so a number is never reused, even across power cuts. A report is
*acknowledged* when the broker's PUBACK arrives; it is *confirmed* when the controller's
retained high-water mark (:func:`firmware.link.topics.confirmed_topic`) covers its sequence
number, and only then deleted. After a reconnect everything not yet confirmed is sent again,
because a broker killed between its PUBACK and its next save loses what it acknowledged;
the controller drops the duplicates by (unit, seq).

**In the unit's journal** (``Outbox(path, unit, journal=j)``, what ``betbox run`` uses; issue
#17.5): the outbox's tables live in the journal's file, and a report put while the unit writes
a step (:meth:`firmware.runtime.journal.Journal.write_step`'s ``within``) goes into that step's
transaction: the step, its delivered marks and its reports are one commit, one fsync. A
report put outside a step commits on its own. The broker's PUBACK mark and the controller's
confirmation are safe to lose (the report is sent again, the controller drops the duplicate)
and commit without an fsync of their own, off the step's path. On its first start this way,
an ``outbox.db`` of firmware before (``path``) is moved in: every row, key and number, in one
transaction, then the file is renamed ``outbox.db.migrated``. The journal carries the tables
into its new active file when it rotates.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from firmware.runtime.journal import Journal, fsync_dir
from firmware.runtime.storage import (
    OPEN_MARK,
    WAL_BACKSTOP,
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
#: Confirmed reports kept whole (the newest ``KEEP_CONFIRMED``, about a day of a busy seat's
#: reports): a jackpot controller restored from an older copy of its database confirms only
#: through an older seq, and the unit sends it again what it lost (:meth:`Outbox.reopen_after`).
KEEP_CONFIRMED = 5000
NUMBERED_KEY = re.compile(r"^([a-z_]+)/(\d+)\Z")

#: The outbox's meta table in a file of its own; in a journal's file (whose ``meta`` is the
#: journal's) it is ``outbox_meta``.
META, JOURNAL_META = "meta", "outbox_meta"
#: What an outbox file of firmware before becomes once moved into the journal.
MIGRATED_SUFFIX = ".migrated"
#: Reports just committed kept in memory for the link to hand to paho without reading them.
FRESH = 64

_DDL = """
CREATE TABLE IF NOT EXISTS {meta} (key TEXT PRIMARY KEY, value TEXT NOT NULL);
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
-- reports confirmed and deleted from the outbox, kept whole (the newest KEEP_CONFIRMED) for a
-- controller that goes back to an older copy of itself; their keys are in reported
CREATE TABLE IF NOT EXISTS kept (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL, key TEXT, topic TEXT NOT NULL, payload TEXT NOT NULL
);
-- reports held under the controller's mark when a supervisor reconciled the unit (betbox
-- pit reconciled): the controller holds others under those seqs; never sent, never deleted
CREATE TABLE IF NOT EXISTS set_aside (
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    key TEXT,
    topic TEXT NOT NULL,
    payload TEXT NOT NULL,
    reconciled TEXT NOT NULL           -- the mark it was held under and who reconciled (JSON)
);
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


@dataclass(frozen=True)
class WentBack:
    """The controller's confirmed mark went back from ``confirmed`` to ``through``: the
    kept reports after it (``resent`` of them) are in the outbox again; ``lost``, the seqs
    (first, last) after ``through`` no longer kept here, if any."""
    through: int
    confirmed: int
    resent: int
    lost: tuple[int, int] | None


class Outbox:
    def __init__(self, path: str | Path, unit_id: str, keep_keys: int = KEEP_KEYS, *,
                 journal: Journal | None = None, keep_confirmed: int = KEEP_CONFIRMED) -> None:
        """An outbox in a file of its own at ``path``; or, with ``journal``, in the journal's
        file (``path``: this unit's outbox file of firmware before, moved in if it is there)."""
        self.path = Path(path) if journal is None else journal.path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.keep_keys = keep_keys
        self.keep_confirmed = keep_confirmed
        self.unit_id = unit_id
        self.journal = journal
        self._m = META if journal is None else JOURNAL_META
        self._listeners: list[Callable[[], None]] = []
        # idempotency keys known stored (committed), the newest keep_keys: a reporter looks
        # at every step whether its round's reports were made; asked here, not SQLite
        self._known: dict[str, None] = {}
        self._behind: dict[str, int] | None = None     # the behind mark, once read or made
        self._behind_read = False           # the file's mark was read (a seat asks at every step)
        # the reports the puts of this process committed, newest last (FRESH at most), for
        # the link to hand to paho as written (:meth:`committed`), and the highest seq
        # committed (a sender with nothing past it has nothing to read)
        self._fresh: list[Pending] = []
        self._fresh_lock = threading.Lock()
        self.put_through = 0
        if journal is not None:
            self._db = self._connect_journal()
            try:
                self._take_in(Path(path))
            except BaseException:
                self._db.close()
                raise
            self._closer = weakref.finalize(self, _close_quietly, self._db)
            journal.companion = self
            self.put_through = self._meta("next_seq") - 1
            return
        had_wal = Path(str(self.path) + "-wal").exists()
        db: sqlite3.Connection | None = None
        try:
            create_private(self.path)
            db = self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            check_integrity(self.path, db, "outbox")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            bound_wal(db)
            db.executescript(_DDL.format(meta=META))
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
            raise self._open_error(exc) from None
        self._closer = weakref.finalize(self, _close_clean, db)
        self.put_through = self._meta("next_seq") - 1

    def _open_error(self, exc: BaseException) -> BaseException:
        if isinstance(exc, OutboxError):
            return exc
        if is_full(exc):
            return OutboxFull(f"{full_error(self.path)}: cannot open the outbox")
        if isinstance(exc, StorageError):
            return OutboxError(str(exc))
        return OutboxError(f"{self.path}: cannot open the outbox: {exc}")

    # -- in the journal's file -------------------------------------------------------------

    def _connect_journal(self) -> sqlite3.Connection:
        """This outbox's own connection to the journal's file (the journal opened and checked
        it): the sender's reads and marks, and reports put outside a step."""
        db: sqlite3.Connection | None = None
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA synchronous=FULL")
            bound_wal(db, WAL_BACKSTOP)         # the unit checkpoints the file after its steps
            db.executescript(_DDL.format(meta=JOURNAL_META))
        except sqlite3.DatabaseError as exc:
            if db is not None:
                db.close()
            raise self._open_error(exc) from None
        return db

    def _take_in(self, old: Path) -> None:
        """Start the outbox tables in the journal's file, moving this unit's outbox file of
        firmware before in (every report not yet confirmed, the keys reported, the numbers):
        one transaction, so a cut leaves it moved or not at all; then the old file is renamed.
        A file already moved (a cut before the rename) is only renamed."""
        db = self._db
        meta = dict(db.execute(f"SELECT key, value FROM {JOURNAL_META}"))
        if meta and meta.get("unit") != self.unit_id:
            raise OutboxError(f"{self.path} holds the outbox of {meta.get('unit')!r}, not {self.unit_id!r}")
        if not old.exists():
            if not meta:
                self._write(lambda d: d.executemany(f"INSERT INTO {JOURNAL_META} VALUES (?, ?)", [
                    ("unit", self.unit_id), ("next_seq", "1"), ("confirmed", "0")]))
            return
        if meta and meta.get("migrated_from") != old.name:
            raise OutboxError(f"{old} is an outbox file beside {self.path}, whose outbox was not moved from it: "
                              f"its reports may be unsent; set it aside only once the jackpot controller "
                              f"has confirmed them (betbox jackpot report)")
        if not meta:
            source = Outbox(old, self.unit_id, self.keep_keys)      # checks it, moves its oldest keys
            try:
                rows = source._db.execute("SELECT seq, id, key, topic, payload, acked FROM outbox").fetchall()
                keys = source._db.execute("SELECT key, seq FROM reported").fetchall()
                kept = source._db.execute("SELECT seq, id, key, topic, payload FROM kept").fetchall()
                aside = source._db.execute("SELECT * FROM set_aside").fetchall()
                marks = [(k, v) for k, v in source._db.execute("SELECT key, value FROM meta")
                         if k not in (OPEN_MARK, "unit")]
            finally:
                source.close()

            def move(d: sqlite3.Connection) -> None:
                d.executemany("INSERT INTO outbox VALUES (?, ?, ?, ?, ?, ?)", rows)
                d.executemany("INSERT INTO reported VALUES (?, ?)", keys)
                d.executemany("INSERT INTO kept VALUES (?, ?, ?, ?, ?)", kept)
                d.executemany("INSERT INTO set_aside VALUES (?, ?, ?, ?, ?, ?)", aside)
                d.executemany(f"INSERT INTO {JOURNAL_META} VALUES (?, ?)",
                              [("unit", self.unit_id), *marks, ("migrated_from", old.name)])
            self._write(move)
        for suffix in ("-wal", "-shm", ""):       # (closed cleanly above: no WAL left beside it)
            if Path(str(old) + suffix).exists():
                os.replace(str(old) + suffix, str(old) + MIGRATED_SUFFIX + suffix)
        fsync_dir(old.parent)

    def pause(self) -> None:
        """The journal rotates: hold every write, let go of the file (see :meth:`resume`)."""
        self._lock.acquire()
        self._closer.detach()
        self._db.close()

    def carry(self, old: sqlite3.Connection, new: sqlite3.Connection) -> None:
        """The outbox's tables, as committed in the old active file, into the new one."""
        for statement in _statements(_DDL.format(meta=JOURNAL_META)):    # inside its transaction
            new.execute(statement)
        for table in ("outbox", JOURNAL_META, "reported", "kept", "set_aside"):
            rows = old.execute(f"SELECT * FROM {table}").fetchall()
            if rows:
                marks = ", ".join("?" * len(rows[0]))
                new.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)

    def resume(self) -> None:
        """Open the journal's (new) active file again; writes go on."""
        try:
            assert self.journal is not None
            self.path = self.journal.path
            self._db = self._connect_journal()
            self._closer = weakref.finalize(self, _close_quietly, self._db)
        finally:
            self._lock.release()

    def add_listener(self, listener: Callable[[], None]) -> None:
        """``listener()`` whenever reports were committed (the sender may send them)."""
        self._listeners.append(listener)

    def _committed(self, row: Pending | None = None) -> None:
        if row is not None:
            with self._fresh_lock:
                self._fresh.append(row)
                del self._fresh[:-FRESH]
                self.put_through = max(self.put_through, row.seq)
        for listener in self._listeners:
            listener()

    def committed(self, after: int, limit: int = 8) -> list[Pending]:
        """The reports after seq ``after``, in order: as this process's puts committed them
        (no read: a step's reports go to paho on the card's way), else read from the file."""
        with self._fresh_lock:
            fresh = [p for p in self._fresh if p.seq > after][:limit]
        if fresh and fresh[0].seq == after + 1 and all(b.seq == a.seq + 1 for a, b in zip(fresh, fresh[1:], strict=False)):
            return fresh
        return self.pending(after=after, limit=limit)

    # -- a file of its own ---------------------------------------------------------------------

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

    def _write(self, work: Callable[[sqlite3.Connection], Any], durable: bool = True) -> Any:
        """One transaction on this outbox's connection (the caller holds the lock); SQLITE_FULL
        named, never masked by the rollback. ``durable=False``: a mark that is safe to lose,
        committed without an fsync of its own (WAL, ``synchronous=NORMAL``)."""
        if self.journal is None:
            return self._write_locked(work, durable)
        with self.journal.write_lock:            # the journal's steps write the same file
            return self._write_locked(work, durable)

    def _write_locked(self, work: Callable[[sqlite3.Connection], Any], durable: bool) -> Any:
        db = self._db
        if not durable:
            db.execute("PRAGMA synchronous=NORMAL")
        try:
            db.execute("BEGIN IMMEDIATE")
            result = work(db)
            if db.in_transaction:
                db.execute("COMMIT")
            return result
        except BaseException as exc:
            self._failed(exc)
            raise
        finally:
            if not durable:
                db.execute("PRAGMA synchronous=FULL")

    def _read(self, query: Callable[[sqlite3.Connection], Any]) -> Any:
        """A read: inside the journal's step on this thread through the step's transaction
        (it sees the step's reports; and never waits for the lock, which a writer may hold
        while it waits for this very transaction), else on this outbox's connection."""
        step = self.journal.step_db() if self.journal is not None else None
        if step is not None:
            return query(step)
        with self._lock:
            return query(self._db)

    def _mark(self, db: sqlite3.Connection, key: str) -> dict[str, Any] | None:
        """A mark kept as JSON in the meta table (``behind``, ``went_back``), or None."""
        row = db.execute(f"SELECT value FROM {self._m} WHERE key = ?", (key,)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def _meta(self, key: str, db: sqlite3.Connection | None = None) -> int:
        row = (db or self._db).execute(f"SELECT value FROM {self._m} WHERE key = ?", (key,)).fetchone()
        return int(row[0])

    def put(self, topic: str, kind: str, body: dict[str, Any], key: str | None = None,
            extra: dict[str, Any] | None = None) -> int | None:
        """Store a report; its seq, or None when ``key`` was already reported (idempotent).
        Inside the journal's step (on its thread) it is part of the step's transaction."""
        if key is not None and key in self._known:
            return None
        written: list[Pending] = []

        def store(db: sqlite3.Connection) -> int | None:
            reported, seq = self._look(db, key)
            if reported:
                return None
            rid = str(uuid.uuid4())
            payload = json.dumps({"schema": SCHEMA, "id": rid, "unit": self.unit_id, "seq": seq,
                                  "kind": kind, **(extra or {}), "body": body},
                                 sort_keys=True, separators=(",", ":"))
            db.execute("INSERT INTO outbox (seq, id, key, topic, payload) VALUES (?, ?, ?, ?, ?)",
                       (seq, rid, key, topic, payload))
            db.execute(f"UPDATE {self._m} SET value = ? WHERE key = 'next_seq'", (str(seq + 1),))
            written.append(Pending(seq, rid, topic, payload, False))
            return seq

        step = self.journal.step_db() if self.journal is not None else None
        if step is not None:
            # the step's own transaction (no lock: the sender may be waiting for this very
            # transaction to end while holding it); visible, and sent, once the step commits
            try:
                seq = store(step)
            except sqlite3.OperationalError as exc:
                if is_full(exc):
                    raise OutboxFull(f"{full_error(self.path)}: the report was not stored") from None
                raise
            assert self.journal is not None
            if key is not None:                 # known once the step holding it commits
                self.journal.after_commit(lambda: self._know(key))
            if seq is not None:
                self.journal.after_commit(lambda: self._committed(written[0]))
            return seq
        with self._lock:
            seq = self._write(store)
        if key is not None:
            self._know(key)
        if seq is not None:
            self._committed(written[0])
        return seq

    def known(self, key: str) -> bool:
        """``key`` is known reported (committed, among the newest kept): a reporter need not
        make its body again. False says nothing: :meth:`put` judges."""
        return key in self._known

    def _know(self, key: str) -> None:
        self._known[key] = None
        if len(self._known) > self.keep_keys:
            del self._known[next(iter(self._known))]

    def _look(self, db: sqlite3.Connection, key: str | None) -> tuple[bool, int]:
        """Was ``key`` reported (waiting here, confirmed and kept, or under its name's mark),
        and the next seq: one statement (each lets the process's other threads in)."""
        numbered = NUMBERED_KEY.match(key) if key is not None else None
        waiting, mark, seq = db.execute(
            "SELECT EXISTS(SELECT 1 FROM outbox WHERE key = :k) OR EXISTS(SELECT 1 FROM reported WHERE key = :k), "
            f"(SELECT value FROM {self._m} WHERE key = :n), (SELECT value FROM {self._m} WHERE key = 'next_seq')",
            {"k": key, "n": "n:" + numbered.group(1) if numbered else None}).fetchone()
        reported = bool(waiting) or (numbered is not None and mark is not None
                                     and int(numbered.group(2)) <= int(mark))
        return reported, int(seq)

    def mark_acked(self, seq: int) -> None:
        self.mark_acked_many([seq])

    def mark_acked_many(self, seqs: list[int]) -> None:
        """The broker acknowledged these reports (one transaction for the batch). Safe to
        lose (the report goes again, the controller drops it): no fsync of its own."""
        with self._lock:
            self._write(lambda db: db.executemany("UPDATE outbox SET acked = 1 WHERE seq = ?",
                                                  [(s,) for s in seqs]), durable=False)

    @property
    def behind(self) -> dict[str, int] | None:
        """Set once the controller confirmed seqs this outbox never numbered (the unit was
        restarted from an older copy): ``{"outbox_seq": n, "confirmed": m}``."""
        # set once, never cleared, and only by this outbox (mark_behind): read once, then known
        if self._behind is None and not self._behind_read:
            self._behind = self._read(lambda db: self._mark(db, "behind"))
            self._behind_read = True
        return None if self._behind is None else dict(self._behind)

    @property
    def numbered(self) -> bool:
        """Has this outbox ever numbered a report (not a new unit's)?"""
        return bool(self._read(lambda db: self._meta("next_seq", db) > 1 or self._meta("confirmed", db) > 0))

    def mark_behind(self, through: int) -> dict[str, int] | None:
        """The controller confirmed through ``through``, past everything numbered here: keep
        every report held (the reports up to ``outbox_seq`` are never deleted as confirmed:
        the controller's reports under those seqs may be others) and number the next report
        after ``through``, so no seq is reused. Returns the mark (the first one stands)."""
        def mark(db: sqlite3.Connection) -> dict[str, int] | None:
            last = self._meta("next_seq") - 1
            was = self._mark(db, "behind")
            if through <= last:
                return was
            behind = was if was is not None else {"outbox_seq": last, "confirmed": through}
            behind["confirmed"] = max(behind["confirmed"], through)
            db.execute(f"INSERT OR REPLACE INTO {self._m} VALUES ('behind', ?)", (json.dumps(behind),))
            db.execute(f"UPDATE {self._m} SET value = ? WHERE key = 'next_seq'", (str(through + 1),))
            return behind

        with self._lock:                # durable: the numbers after it must never be reused
            result: dict[str, int] | None = self._write(mark)
            if result is not None:
                self._behind = dict(result)
            return result

    def reconcile(self, by: str) -> int | None:
        """A supervisor reconciled this unit's rounds (``betbox pit reconciled``): the behind
        mark goes, and the reports held under it (up to ``outbox_seq``: the controller holds
        others under those seqs, so they were never deleted as confirmed) move to the ``set_aside``
        table, with the mark and who reconciled: never sent again, never deleted, counted
        (:attr:`set_aside`, ``betbox diag``); their keys stay reported (never made again). Inside
        the unit's step (on its thread) it is part of the step's transaction. Returns how many
        moved, or None when the outbox was not behind."""
        def move(db: sqlite3.Connection) -> int | None:
            behind = self._mark(db, "behind")
            if behind is None:
                return None
            note = json.dumps({**behind, "by": by}, sort_keys=True)
            floor = behind["outbox_seq"]
            self._keep_keys(db, floor)
            n: int = db.execute("INSERT INTO set_aside (seq, id, key, topic, payload, reconciled) SELECT seq, id, key, "
                                "topic, payload, ? FROM outbox WHERE seq <= ?", (note, floor)).rowcount
            db.execute("DELETE FROM outbox WHERE seq <= ?", (floor,))
            db.execute(f"DELETE FROM {self._m} WHERE key = 'behind'")
            db.execute(f"INSERT OR REPLACE INTO {self._m} VALUES ('reconciled', ?)",
                       (json.dumps({**behind, "by": by, "kept": n}, sort_keys=True),))
            return n

        def forget() -> None:
            self._behind, self._behind_read = None, True

        step = self.journal.step_db() if self.journal is not None else None
        if step is not None:
            result = move(step)
            assert self.journal is not None
            if result is not None:
                self.journal.after_commit(forget)
            return result
        with self._lock:                # durable: the mark must not come back
            result = self._write(move)
        if result is not None:
            forget()
        return result

    @property
    def set_aside(self) -> int:
        """How many reports were set aside at a reconciliation (:meth:`reconcile`)."""
        result: int = self._read(lambda db: db.execute("SELECT COUNT(*) FROM set_aside").fetchone()[0])
        return result

    def start_after(self, through: int) -> bool:
        """A new outbox (it never numbered a report) told that the controller holds its unit
        id's reports through ``through`` (a unit started anew under its id): number the next
        report after it, or the controller refuses each one as a seq reused. Nothing is held
        here below it, so nothing is behind. False: a report was numbered meanwhile."""
        def start(db: sqlite3.Connection) -> bool:
            if self._meta("next_seq") != 1 or self._meta("confirmed") != 0:
                return False
            db.execute(f"UPDATE {self._m} SET value = ? WHERE key = 'next_seq'", (str(through + 1),))
            db.execute(f"UPDATE {self._m} SET value = ? WHERE key = 'confirmed'", (str(through),))
            return True

        with self._lock:                # durable: the numbers up to it must never be used here
            done: bool = self._write(start)
            return done

    def confirm_through(self, seq: int) -> int:
        """The controller holds every report up to ``seq``: delete them. Returns how many.
        (Not those of an outbox that was behind, up to where it was: see ``mark_behind``.)
        Safe to lose (the reports stay, go again, and are dropped as duplicates; their keys
        stay with them): no fsync of its own."""
        def confirm(db: sqlite3.Connection) -> int:
            if seq <= self._meta("confirmed"):
                return 0
            behind = self._mark(db, "behind")
            floor = behind["outbox_seq"] if behind is not None else 0
            self._keep_keys(db, seq, floor)
            db.execute("INSERT OR REPLACE INTO kept SELECT seq, id, key, topic, payload FROM outbox "
                       "WHERE seq <= ? AND seq > ?", (seq, floor))
            db.execute("DELETE FROM kept WHERE seq <= ?", (seq - self.keep_confirmed,))
            n: int = db.execute("DELETE FROM outbox WHERE seq <= ? AND seq > ?", (seq, floor)).rowcount
            db.execute(f"UPDATE {self._m} SET value = ? WHERE key = 'confirmed'", (str(seq),))
            went = self._mark(db, "went_back")
            if went is not None and went["last"] <= seq:
                db.execute(f"DELETE FROM {self._m} WHERE key = 'went_back'")     # held after all
            return n

        with self._lock:
            result: int = self._write(confirm, durable=False)
            return result

    @property
    def confirmed(self) -> int:
        """The controller's mark this outbox took last: every report up to it is confirmed."""
        result: int = self._read(lambda db: self._meta("confirmed", db))
        return result

    def reopen_after(self, through: int) -> WentBack | None:
        """The controller confirms only through ``through``, below what it had confirmed (it
        was restored from an older copy, or an older retained mark came back): the kept
        reports after ``through`` go back into the outbox to be sent again, and the mark
        goes back with the controller's. None if it is not below the mark. Seqs no longer
        kept are recorded (``went_back``, until a mark covers them) for the link to alarm."""
        def reopen(db: sqlite3.Connection) -> WentBack | None:
            confirmed = self._meta("confirmed", db)
            if through >= confirmed:
                return None
            behind = self._mark(db, "behind")
            if behind is not None and through < behind["outbox_seq"]:
                return None     # below a behind unit's floor the controller's seqs are others'
            resent = db.execute("INSERT INTO outbox (seq, id, key, topic, payload) SELECT seq, id, key, topic, "
                                "payload FROM kept WHERE seq > ? AND seq <= ?", (through, confirmed)).rowcount
            first_kept = db.execute("SELECT MIN(seq) FROM kept WHERE seq > ?", (through,)).fetchone()[0]
            db.execute("DELETE FROM kept WHERE seq > ?", (through,))
            db.execute(f"UPDATE {self._m} SET value = ? WHERE key = 'confirmed'", (str(through),))
            # every report up to the mark it had was sent (and confirmed): a mark up to it is not
            # beyond what this outbox sent (:meth:`sent_through`), whatever it now holds again
            db.execute(f"INSERT INTO {self._m} VALUES ('confirmed_high', ?) ON CONFLICT(key) DO UPDATE SET value = "
                       "MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))", (str(confirmed),))
            last_lost = (first_kept if first_kept is not None else confirmed + 1) - 1
            lost = (through + 1, last_lost) if last_lost > through else None
            if lost is not None:
                # a range recorded before (the mark went back before, and no mark covered it
                # since) is still not held: the record spans both
                before = self._mark(db, "went_back")
                first, last, top = lost[0], lost[1], confirmed
                if before is not None:
                    first, last = max(min(first, before["first"]), through + 1), max(last, before["last"])
                    top = max(top, before["confirmed"])
                db.execute(f"INSERT OR REPLACE INTO {self._m} VALUES ('went_back', ?)", (json.dumps(
                    {"controller": through, "confirmed": top, "first": first, "last": last}),))
            return WentBack(through, confirmed, resent, lost)

        with self._lock:        # durable: a lost range recorded must outlive a power cut
            result: WentBack | None = self._write(reopen)
            return result

    def kept(self) -> int:
        """How many confirmed reports are kept whole (for a controller that goes back)."""
        result: int = self._read(lambda db: db.execute("SELECT COUNT(*) FROM kept").fetchone()[0])
        return result

    @property
    def went_back(self) -> dict[str, int] | None:
        """The reports a controller that went back no longer holds and this outbox no longer
        keeps: ``{"controller", "confirmed", "first", "last"}``, until a mark covers them."""
        result: dict[str, int] | None = self._read(lambda db: self._mark(db, "went_back"))
        return result

    def _keep_keys(self, db: sqlite3.Connection, seq: int, floor: int = 0) -> None:
        """The keys of the reports up to ``seq`` (about to be deleted) are remembered, so a
        report is never stored twice, and pruned to the newest ``keep_keys``; a
        running-numbered key leaves its name's mark instead."""
        for key, at in db.execute("SELECT key, seq FROM outbox WHERE seq <= ? AND seq > ? AND key IS NOT NULL",
                                  (seq, floor)).fetchall():
            numbered = NUMBERED_KEY.match(key)
            if numbered:
                db.execute(f"INSERT INTO {self._m} VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = "
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
        rows = self._read(lambda db: db.execute("SELECT seq, id, topic, payload, acked FROM outbox WHERE seq > ? "
                                                "ORDER BY seq LIMIT ?", (after, limit)).fetchall())
        return [Pending(s, i, t, p, bool(a)) for s, i, t, p, a in rows]

    def stats(self) -> dict[str, int]:
        def read(db: sqlite3.Connection) -> dict[str, int]:
            total, acked = db.execute("SELECT COUNT(*), COALESCE(SUM(acked), 0) FROM outbox").fetchone()
            return {"waiting": total - acked, "acked_unconfirmed": acked,
                    "next_seq": self._meta("next_seq", db), "confirmed": self._meta("confirmed", db)}
        result: dict[str, int] = self._read(read)
        return result

    def sent_through(self) -> int:
        """The highest sequence number the broker acknowledged (or already confirmed, also
        before a controller's mark went back): a controller's mark beyond it covers reports
        the controller cannot hold."""
        def read(db: sqlite3.Connection) -> int:
            acked = db.execute("SELECT MAX(seq) FROM outbox WHERE acked = 1").fetchone()[0]
            high = db.execute(f"SELECT value FROM {self._m} WHERE key = 'confirmed_high'").fetchone()
            return max(acked or 0, self._meta("confirmed", db), int(high[0]) if high is not None else 0)
        result: int = self._read(read)
        return result

    @property
    def last_seq(self) -> int:
        result: int = self._read(lambda db: self._meta("next_seq", db) - 1)
        return result

    def close(self) -> None:
        """Close cleanly: the file says so (see :func:`check_open_mark`); in the journal's
        file the journal keeps that mark, and this outbox leaves it."""
        with self._lock:
            self._closer()
            if self.journal is not None and self.journal.companion is self:
                self.journal.companion = None


def _statements(script: str) -> list[str]:
    """A DDL script's statements (no comments), to run one by one inside a transaction."""
    text = "\n".join(line.split("--", 1)[0] for line in script.splitlines())
    return [part.strip() for part in text.split(";") if part.strip()]


def _close_quietly(db: sqlite3.Connection) -> None:
    try:
        db.close()
    except sqlite3.Error:
        pass


def _close_clean(db: sqlite3.Connection) -> None:
    try:
        set_open_mark(db, "0")
    except sqlite3.Error:
        pass
    try:
        db.close()
    except sqlite3.Error:
        pass
