"""The unit journal: SQLite in WAL mode with ``synchronous=FULL``.

A unit writes each input it accepts together with every message that input makes it emit
in **one transaction**, before it acts (publishes, drives lamps). After a power cut the
journal holds either the whole step or none of it; SQLite's WAL checksums discard a torn
last write. ``delivered`` marks messages the transport has taken; the rest are sent again
on restart (receivers drop duplicates by sender and sequence number).

**One durable commit per step** (issue #17.5): the reports a step makes go into the unit's
outbox tables in this same file and the same transaction (:meth:`Journal.write_step`'s
``within``; :class:`firmware.link.outbox.Outbox` with ``journal=``), so a step costs one
fsync whatever it emits. SQLite makes a transaction over several files atomic per file only
(WAL mode), hence one file. Marks that are safe to lose (``delivered`` here, the outbox's
``acked`` and confirmed) commit without an fsync of their own (``synchronous=NORMAL`` on
that commit: consistent after a power cut, durable with the next step's fsync); lost, they
only make a message or report go again, and its receiver drops the duplicate.

Rotation keeps a table that runs for months from growing one file without bound: at a round
boundary, once the active journal holds ``rotate_rounds`` rounds and everything in it is
delivered, the unit hands the journal a **checkpoint** (its state after the last step, as
versioned JSON: :meth:`firmware.runtime.unit.Unit.checkpoint`; never a pickle). A new
active file is written holding only that checkpoint (and where step and sequence numbers
go on), then the old file becomes the segment ``journal-<first>-<last>.db`` (its rounds) and
the new one takes its place. Recovery restores the checkpoint and replays the active file;
segments are the record (``betbox journal show/stats`` read them), ``keep_segments`` of them
are kept. A cut at any instant of a rotation leaves either the old active file or the new
one complete (see :func:`_finish_rotation`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import threading
import time
import weakref
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Protocol

from firmware import __version__
from firmware.runtime.storage import (
    OPEN_MARK,
    PAGE_SIZE,
    WAL_BACKSTOP,
    StorageError,
    StorageFull,
    bound_wal,
    check_integrity,
    check_open_mark,
    clock_sync,
    create_private,
    free_bytes,
    full_error,
    is_full,
    rollback,
    set_open_mark,
)

SCHEMA_VERSION = 2          # 2: each record's time (utc, mono); the unit's starts
JOURNAL_NAME = "journal.db"
NEW_SUFFIX = ".new"
SEGMENT = re.compile(r"^journal-(\d+)-(\d+)\.db\Z")
log = logging.getLogger(__name__)

#: records per INSERT statement (8 values each, well under SQLite's bound on them)
ROWS_PER_INSERT = 500
#: steps between the unit's checkpoints of its journal's WAL (a step writes ~7 pages: about
#: SQLite's checkpoint every WAL_AUTOCHECKPOINT pages, taken off the card's way)
CHECKPOINT_STEPS = 8
#: steps a fold is put off at most while inputs wait (~450 pages: below SQLite's backstop)
CHECKPOINT_PUT_OFF = 64

_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS record (
    id INTEGER PRIMARY KEY,
    step INTEGER NOT NULL,          -- records of one step were written together
    dir TEXT NOT NULL CHECK (dir IN ('in', 'out')),
    kind TEXT NOT NULL,
    seq INTEGER,                    -- out: the unit's own sequence number
    round INTEGER,
    body TEXT NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0,
    utc TEXT,                       -- wall clock when the step was written (ISO 8601, UTC)
    mono REAL                       -- the unit's monotonic clock then (seconds since boot)
);
CREATE UNIQUE INDEX IF NOT EXISTS record_seq ON record(seq) WHERE seq IS NOT NULL;
CREATE INDEX IF NOT EXISTS record_round ON record(round);
-- each start of the unit on this file: when, and whether the clock was synchronized
CREATE TABLE IF NOT EXISTS start (
    id INTEGER PRIMARY KEY,
    utc TEXT NOT NULL,
    mono REAL NOT NULL,
    clock TEXT NOT NULL,            -- synchronized | unsynchronized | unknown
    firmware TEXT NOT NULL,
    after_step INTEGER NOT NULL
);
"""
#: columns a schema-1 journal lacks (its records read with no time)
_ADDED = (("utc", "TEXT"), ("mono", "REAL"))


class JournalError(StorageError):
    """A journal that cannot be opened or belongs to another unit."""


class JournalFull(JournalError, StorageFull):
    """The state partition is full: the step was not written (SQLITE_FULL, named)."""


class CheckpointError(JournalError):
    """A journal's checkpoint that cannot be read: the message names the file and what is
    wrong. The unit must not start from a state it cannot read."""


@dataclass(frozen=True)
class Record:
    dir: str                      # "in" | "out"
    kind: str
    body: Mapping[str, Any]
    seq: int | None = None
    round: int | None = None
    id: int | None = None
    step: int | None = None
    delivered: bool = False
    utc: str | None = None        # when the step was written (None: a journal older than times)
    mono: float | None = None
    # the body's JSON when the writer has it already (a message's wire text): not encoded again
    text: str | None = field(default=None, compare=False, repr=False)


class Companion(Protocol):
    """Tables another part of the unit keeps in the journal's file (the outbox): carried
    into the new active file when the journal rotates."""

    def pause(self) -> None:
        """Stop writing and let go of the file (until :meth:`resume`)."""

    def carry(self, old: sqlite3.Connection, new: sqlite3.Connection) -> None:
        """Copy its tables from ``old`` into ``new`` (inside ``new``'s open transaction)."""

    def resume(self) -> None:
        """Open the (new or unchanged) active file again and go on."""


def _finish_rotation(path: Path) -> None:
    """A rotation cut short: the new active file is written completely before the old one
    is renamed to its segment, so a missing active file with a ``.new`` beside it means the
    rename of the new one is what was left to do; an active file with a ``.new`` beside it
    means the rotation never happened (the checkpoint is made again at the next one)."""
    new = path.with_name(path.name + NEW_SUFFIX)
    if not new.exists():
        return
    if path.exists():
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(str(new) + suffix).unlink(missing_ok=True)
    else:
        for suffix in ("-wal", "-shm"):          # the old file's, never to be applied to the new
            Path(str(path) + suffix).unlink(missing_ok=True)
        os.replace(new, path)
        fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make a rename or unlink in ``directory`` durable (the journal's and the outbox's files)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def segments(path: str | Path) -> list[Path]:
    """The archived segments beside an active journal, oldest first."""
    path = Path(path)
    found = [(int(m.group(1)), int(m.group(2)), p) for p in path.parent.glob("journal-*-*.db")
             if (m := SEGMENT.match(p.name))]
    return [p for _, _, p in sorted(found)]


class Journal:
    def __init__(self, path: str | Path, unit_id: str, role: str, synchronous: str = "FULL",
                 rotate_rounds: int | None = None, keep_segments: int | None = None) -> None:
        self.path = Path(path)
        self.readonly = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if synchronous not in ("FULL", "EXTRA"):
            raise JournalError(f"journal synchronous={synchronous!r}: only FULL or EXTRA keep every step")
        if rotate_rounds is not None and not 1 <= rotate_rounds <= 1_000_000:
            raise JournalError(f"journal rotate_rounds={rotate_rounds!r}: 1 to 1000000 rounds, or None")
        if keep_segments is not None and not 0 <= keep_segments <= 1_000_000:
            raise JournalError(f"journal keep_segments={keep_segments!r}: 0 to 1000000, or None (all)")
        self.synchronous = synchronous
        self.companion: Companion | None = None      # the outbox, when it lives in this file
        self._step_thread: int | None = None         # the thread whose step is being written
        self._after_commit: list[Callable[[], None]] = []
        # seqs handed to the transport, marked delivered inside the next step's commit (safe
        # to lose: a message not marked only goes again); the lock guards the list alone
        self._delivered: list[int] = []
        self._delivered_lock = threading.Lock()
        # every writer of this file in this process takes it (the outbox's connection too):
        # waiting on it wakes at once, where SQLite's busy handler sleeps in steps of ms
        self.write_lock = threading.Lock()
        self._steps_unfolded = 0                 # steps since the last checkpoint_due fold
        self.rotate_rounds = rotate_rounds       # rounds per segment (None: never rotate)
        self.keep_segments = keep_segments       # segments kept for recall (None: all)
        _finish_rotation(self.path)              # only the unit itself ever finishes its rotation
        if not self.path.exists() and (kept := segments(self.path)):
            raise JournalError(
                f"{self.path} is missing but this unit's journal segments are beside it "
                f"({', '.join(p.name for p in kept)}): the unit does not start empty over its own "
                f"record; restore {self.path.name} (or its {self.path.name}{NEW_SUFFIX}) from a backup")
        self._open(unit_id, role)
        self._record_start()

    def _open(self, unit_id: str, role: str) -> None:
        synchronous = self.synchronous
        had_wal = Path(str(self.path) + "-wal").exists()
        db: sqlite3.Connection | None = None
        try:
            create_private(self.path)
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db = db
            if _not_closed_cleanly(db, had_wal):
                check_integrity(self.path, db, "journal")
            db.execute(f"PRAGMA page_size={PAGE_SIZE}")     # a new file's (an existing one keeps its own)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={synchronous}")
            bound_wal(db, WAL_BACKSTOP)             # checkpointed after steps: checkpoint_due
            db.executescript(_DDL)
            _add_columns(db)
            meta = dict(db.execute("SELECT key, value FROM meta"))
            if meta:
                check_open_mark(self.path, db, had_wal, "journal")
                self._check_not_older(meta)
            if not meta:
                self._tx([("INSERT INTO meta VALUES (?, ?)", ("unit", unit_id)),
                          ("INSERT INTO meta VALUES (?, ?)", ("role", role)),
                          ("INSERT INTO meta VALUES (?, ?)", ("schema", str(SCHEMA_VERSION)))])
            elif meta.get("unit") != unit_id or meta.get("role") != role:
                raise JournalError(f"{self.path} is the journal of {meta.get('role')} {meta.get('unit')!r}, "
                                   f"not {role} {unit_id!r}")
            set_open_mark(db, "1")
            self.unit_id, self.role = unit_id, role
            meta = dict(db.execute("SELECT key, value FROM meta"))
            row = db.execute("SELECT COALESCE(MAX(step), 0), COALESCE(MAX(seq), 0) FROM record").fetchone()
            # after_round: the last round of the previous segment: its late records (seats'
            # results) may still come here, but the rounds this file counts start after it
            self.last_step, self.last_seq, self.after_round = _marks(row, meta)
            self.first_round: int | None = db.execute(
                "SELECT MIN(round) FROM record WHERE round > ?", (self.after_round,)).fetchone()[0]
        except (sqlite3.DatabaseError, StorageError, ValueError) as exc:
            if db is not None:
                db.close()
            if isinstance(exc, JournalError):
                raise
            if isinstance(exc, StorageError):
                raise JournalError(str(exc)) from None
            if is_full(exc):
                raise JournalFull(f"{full_error(self.path)}: cannot open the journal") from None
            raise JournalError(f"{self.path}: cannot open the journal: {exc}") from None
        self._closer = weakref.finalize(self, _close_clean, db)
        self.writes = getattr(self, "writes", 0)

    def _check_not_older(self, meta: Mapping[str, str]) -> None:
        """Refuse an active file older than the unit's newest segment: each rotation starts
        the active file after the segment it archived (``after_round``), so a segment ending
        past that was archived from a later file: this one is an older copy (a restore, a
        swapped card), and starting from it would silently take a state rounds behind."""
        kept = segments(self.path)
        if not kept:
            return
        newest = kept[-1]
        found = SEGMENT.match(newest.name)
        assert found is not None
        after = int(meta.get("after_round", 0))
        if int(found.group(2)) > after:
            raise JournalError(
                f"{self.path} is older than this unit's newest journal segment {newest.name}: it follows "
                f"round {after}, the segment ends at round {found.group(2)}; the unit does not start from an "
                f"older copy of its state; restore its newest {self.path.name} (with its -wal, if any)")

    def _record_start(self) -> None:
        """When the unit started on this file, and whether its clock could be trusted."""
        self._tx([("INSERT INTO start (utc, mono, clock, firmware, after_step) VALUES (?, ?, ?, ?, ?)",
                   (_utc_now(), time.monotonic(), clock_sync(), __version__, self.last_step))])

    def _writable(self) -> None:
        if self.readonly:
            raise JournalError(f"{self.path}: opened for recall only; recall never writes")

    def _tx(self, statements: list[tuple[str, tuple]], within: Callable[[], None] | None = None) -> None:
        self._writable()
        with self.write_lock:
            self._tx_locked(statements, within)

    def _tx_locked(self, statements: list[tuple[str, tuple]], within: Callable[[], None] | None) -> None:
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            for sql, params in statements:
                db.execute(sql, params)
            if within is not None:
                self._step_thread = threading.get_ident()
                within()
            db.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            rollback(db)
            self._after_commit.clear()
            if is_full(exc):
                raise JournalFull(f"{full_error(self.path)}: the step was not written") from None
            raise
        except BaseException:
            rollback(db)
            self._after_commit.clear()
            raise
        finally:
            self._step_thread = None

    def write_step(self, records: list[Record], within: Callable[[], None] | None = None,
                   notify: bool = True) -> int:
        """Write one step (an input and what it emits) atomically; returns the step number.
        ``within`` runs inside the step's transaction, after its records: what it writes
        through :meth:`step_db` (the step's reports) commits with the step, or nothing does.
        ``notify=False``: the :meth:`after_commit` callbacks wait for :meth:`notify_committed`
        (the unit first publishes its messages, which are on the table's critical path)."""
        step = self.last_step + 1
        utc, mono = _utc_now(), time.monotonic()
        # one statement for the step's records: each statement inside the transaction lets
        # the process's other threads take the interpreter (paho, the sender)
        rows = [(step, r.dir, r.kind, r.seq, r.round,
                 r.text if r.text is not None else json.dumps(r.body, sort_keys=True, separators=(",", ":")),
                 utc, mono) for r in records]
        statements = [("INSERT INTO record (step, dir, kind, seq, round, body, utc, mono) VALUES "
                       + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * len(part)), tuple(v for row in part for v in row))
                      for part in (rows[i:i + ROWS_PER_INSERT] for i in range(0, len(rows), ROWS_PER_INSERT))]
        marks = self._take_delivered()
        if marks:                           # the steps before's delivered marks ride along
            statements.append(_mark_statement(marks))
        try:
            self._tx(statements, within)
        except BaseException:
            self._give_back(marks)
            raise
        self.last_step = step
        if notify:
            self.notify_committed()
        for r in records:
            if r.seq is not None:
                self.last_seq = max(self.last_seq, r.seq)
            if r.round is not None and r.round > self.after_round and self.first_round is None:
                self.first_round = r.round
        self.writes += 1
        return step

    def checkpoint_due(self, waiting: bool = False) -> None:
        """Fold the WAL into the file every :data:`CHECKPOINT_STEPS` steps, called by the unit
        once a step's messages and reports are handed over: SQLite's own checkpoint ran
        inside the COMMIT of one step in ~9, on that card's way. PASSIVE: it never waits; a
        failure (a full partition) leaves the frames in the WAL, safe, for the next one.
        ``waiting``: an input is queued (the next card): the fold (~1 ms, an fsync) would
        hold it up, so it waits for a step with nothing queued, up to :data:`CHECKPOINT_PUT_OFF`."""
        self._steps_unfolded += 1
        if self._steps_unfolded < (CHECKPOINT_PUT_OFF if waiting else CHECKPOINT_STEPS):
            return
        self._steps_unfolded = 0
        try:
            busy, frames, folded = self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.OperationalError as exc:
            log.warning("%s: WAL checkpoint failed, the frames stay in the WAL: %s", self.path, exc)
            return
        if not busy and frames == folded:
            try:
                self._start_wal_over()
            except (sqlite3.Error, StorageError) as exc:     # (a full partition): the next step's COMMIT does it
                log.warning("%s: the WAL was not started over after its fold: %s", self.path, exc)

    def _start_wal_over(self) -> None:
        """After a complete fold the next writer starts the WAL over and SQLite fsyncs its new
        header before the frames (at any ``synchronous`` but OFF): in the next step's COMMIT
        that was a second fsync on the card's way. A light write now takes it: the delivered
        marks waiting (safe to lose: no fsync of their own), else the step of this fold in
        ``meta`` (a write must change a row: SQLite writes no page for an unchanged one)."""
        seqs = self._take_delivered()
        statement = _mark_statement(seqs) if seqs else (
            "INSERT INTO meta VALUES ('folded_at_step', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (str(self.last_step),))
        self._db.execute("PRAGMA synchronous=NORMAL")
        try:
            self._tx([statement])
        except BaseException:
            self._give_back(seqs)
            raise
        finally:
            self._db.execute(f"PRAGMA synchronous={self.synchronous}")

    def step_db(self) -> sqlite3.Connection | None:
        """The connection whose transaction is the step being written on this thread (inside
        :meth:`write_step`'s ``within``), else None."""
        return self._db if self._step_thread == threading.get_ident() else None

    def notify_committed(self) -> int:
        """Call what waited for the steps written so far (e.g. send their reports: they are
        visible to the outbox's own connection now); how many callbacks that was."""
        done, self._after_commit = self._after_commit, []
        for callback in done:
            callback()
        return len(done)

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the step being written has committed (never if it fails)."""
        self._after_commit.append(callback)

    def mark_delivered(self, seqs: list[int], later: bool = False) -> None:
        """The transport took these messages. Safe to lose (a message not marked goes again
        after a restart; its receivers drop it by sequence number): committed without an
        fsync of its own, the next step's makes it durable. ``later``: no transaction now,
        the mark goes into the next step's (a unit's own steps: a second commit per step
        on the card's way would cost as much as the step's), or the next read of what is
        undelivered, rotation or close."""
        if later:
            with self._delivered_lock:
                self._delivered.extend(seqs)
            return
        seqs = [*self._take_delivered(), *seqs]
        if seqs:
            self._writable()
            self._db.execute("PRAGMA synchronous=NORMAL")
            try:
                self._tx([_mark_statement(seqs)])
            except BaseException:
                self._give_back(seqs)
                raise
            finally:
                self._db.execute(f"PRAGMA synchronous={self.synchronous}")

    def _take_delivered(self) -> list[int]:
        with self._delivered_lock:
            marks, self._delivered = self._delivered, []
        return marks

    def _give_back(self, marks: list[int]) -> None:
        """Marks whose transaction failed wait for the next one."""
        if marks:
            with self._delivered_lock:
                self._delivered[:0] = marks

    def free_bytes(self) -> int:
        """Bytes still free on the partition holding the journal."""
        return free_bytes(self.path.parent)

    def starts(self) -> list[dict[str, Any]]:
        """The unit's starts (utc, mono, clock, firmware, after_step), over the kept segments
        and the active file; none in a journal older than times."""
        found: list[dict[str, Any]] = []
        for path in [*segments(self.path), None]:
            db = self._db if path is None else _open_segment(path)
            try:
                if _has_table(db, "start"):
                    found += [dict(zip(("utc", "mono", "clock", "firmware", "after_step"), row, strict=True)) for row in
                              db.execute("SELECT utc, mono, clock, firmware, after_step FROM start ORDER BY id")]
            except sqlite3.DatabaseError as exc:
                raise JournalError(f"{path or self.path}: its starts cannot be read: {exc}") from None
            finally:
                if path is not None:
                    db.close()
        return found

    def records(self, round_no: int | None = None) -> Iterator[Record]:
        """The active file's records (what recovery replays); :meth:`history` spans segments."""
        return _records(self._db, round_no, getattr(self, "active", self.path))

    def steps(self) -> Iterator[list[Record]]:
        """Records grouped by step, in order."""
        current: list[Record] = []
        for record in self.records():
            if current and record.step != current[0].step:
                yield current
                current = []
            current.append(record)
        if current:
            yield current

    def undelivered(self) -> list[Record]:
        if not self.readonly:
            self.mark_delivered([])         # the marks waiting for the next step first
        return [r for r in self.records() if r.dir == "out" and not r.delivered]

    # -- rotation ----------------------------------------------------------------------

    def checkpoint(self) -> dict[str, Any] | None:
        """The unit state the active file starts from (None: it starts from nothing), as the
        JSON object the unit wrote (:meth:`Unit.checkpoint`). Only ever parsed as JSON:
        reading a journal cannot execute anything."""
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'checkpoint'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise CheckpointError(f"{self.path}: the checkpoint cannot be read: {exc}") from None
        if row is None:
            return None
        try:
            data = json.loads(row[0])
        except (TypeError, ValueError) as exc:
            raise CheckpointError(f"{self.path}: the checkpoint is not JSON ({exc}); a journal "
                                  "rotated by firmware before the JSON checkpoint cannot be resumed "
                                  "from, its segments can still be read") from None
        if not isinstance(data, dict):
            raise CheckpointError(f"{self.path}: the checkpoint is a JSON {type(data).__name__}, not an object")
        return data

    def wants_rotation(self, current_round: int | None) -> bool:
        return (self.rotate_rounds is not None and current_round is not None
                and self.first_round is not None and current_round - self.first_round + 1 >= self.rotate_rounds)

    def rotate(self, checkpoint: Mapping[str, Any]) -> Path | None:
        """Archive the active file as a segment; start a new one from ``checkpoint`` (the
        unit's state after the last step). Not while anything is undelivered (it must be
        re-sent from the active file). Returns the segment written, or None."""
        self._writable()
        self.mark_delivered([])             # the marks waiting for the next step first
        pending = self._db.execute("SELECT COUNT(*) FROM record WHERE dir = 'out' AND delivered = 0").fetchone()[0]
        first, last = self._db.execute("SELECT MIN(round), MAX(round) FROM record").fetchone()
        if pending or first is None:
            return None
        text = json.dumps(checkpoint, sort_keys=True, separators=(",", ":"), allow_nan=False)
        segment = self.path.with_name(f"journal-{first:06d}-{last:06d}.db")
        if segment.exists():
            raise JournalError(f"{segment} exists already: rounds {first}-{last} were archived before")
        companion = self.companion
        if companion is None:
            return self._rotate(text, str(checkpoint.get("format")), segment, last)
        companion.pause()               # its connection closed: the old file can leave WAL mode
        try:
            return self._rotate(text, str(checkpoint.get("format")), segment, last)
        finally:
            companion.resume()          # on the new active file (or the old one, not rotated)

    def _rotate(self, text: str, fmt: str, segment: Path, last: int) -> Path:
        new = self.path.with_name(self.path.name + NEW_SUFFIX)
        for suffix in ("", "-wal", "-shm"):
            Path(str(new) + suffix).unlink(missing_ok=True)
        try:
            create_private(new)
            db = sqlite3.connect(new, isolation_level=None)
            try:
                db.execute(f"PRAGMA page_size={PAGE_SIZE}")
                db.execute("PRAGMA journal_mode=DELETE")
                db.execute(f"PRAGMA synchronous={self.synchronous}")
                db.executescript(_DDL)
                db.execute("BEGIN IMMEDIATE")
                db.executemany("INSERT INTO meta VALUES (?, ?)", [
                    ("unit", self.unit_id), ("role", self.role), ("schema", str(SCHEMA_VERSION)),
                    ("base_step", str(self.last_step)), ("base_seq", str(self.last_seq)),
                    ("checkpoint", text), ("checkpoint_format", fmt),
                    ("follows", segment.name), ("after_round", str(last))])
                if self.companion is not None:      # the outbox's tables go on in the new file
                    self.companion.carry(self._db, db)
                db.execute("COMMIT")
            finally:
                db.close()
        except (sqlite3.OperationalError, OSError) as exc:
            for suffix in ("", "-journal"):
                Path(str(new) + suffix).unlink(missing_ok=True)
            if is_full(exc) or getattr(exc, "errno", None) == 28:   # the active file is untouched
                raise JournalFull(f"{full_error(self.path)}: the journal was not rotated") from None
            raise
        # the old file folded into one (no WAL beside it), then renamed: a cut from here on
        # finds the complete new file (see _finish_rotation)
        try:
            self._fold_for_segment()
        except sqlite3.OperationalError as exc:
            # not rotated: the old file stays the active one; the new one gives its space back
            for suffix in ("", "-journal"):
                Path(str(new) + suffix).unlink(missing_ok=True)
            if is_full(exc):            # the fold grows the old file by the pages its WAL holds
                raise JournalFull(f"{full_error(self.path)}: the journal was not rotated") from None
            raise
        self._closer.detach()
        self._db.close()
        fsync_dir(self.path.parent)
        os.replace(self.path, segment)
        for suffix in ("-wal", "-shm"):
            Path(str(self.path) + suffix).unlink(missing_ok=True)
        os.replace(new, self.path)
        fsync_dir(self.path.parent)
        self._open(self.unit_id, self.role)
        self._prune()
        return segment

    def _fold_for_segment(self) -> None:
        """The old active file made one self-contained file marked closed: its WAL folded in
        first (a fold that fails, e.g. on a full partition, changes nothing), then the mark,
        then out of WAL mode (which folds the mark in). A failure after the mark sets it back:
        the unit goes on writing this file."""
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        set_open_mark(self._db, "0")
        try:
            self._db.execute("PRAGMA journal_mode=DELETE")   # a segment is one self-contained file
        except sqlite3.OperationalError:
            try:
                set_open_mark(self._db, "1")
            except sqlite3.Error:
                pass            # (full): cleared until the next start sets it again
            raise

    def _prune(self) -> None:
        if self.keep_segments is None:
            return
        old = segments(self.path)
        for path in old[:max(len(old) - self.keep_segments, 0)]:
            path.unlink()

    # -- the record across segments ----------------------------------------------------

    def history(self, round_no: int | None = None) -> Iterator[Record]:
        """Every record still kept, archived segments first, then the active file."""
        for path in segments(self.path):
            seg = _open_segment(path)
            try:
                yield from _records(seg, round_no, path)
            finally:
                seg.close()
        yield from self.records(round_no)

    def stats(self) -> dict[str, Any]:
        """Per unit over every kept segment and the active file."""
        if not self.readonly:
            self.mark_delivered([])         # the marks waiting for the next step first
        emitted = pending = accepted = 0
        highest = 0
        kept = segments(self.path)
        for path in [*kept, None]:
            db = self._db if path is None else _open_segment(path)
            try:
                e, h, u = db.execute("SELECT COUNT(*), COALESCE(MAX(seq), 0), COALESCE(SUM(delivered = 0), 0) "
                                     "FROM record WHERE dir = 'out'").fetchone()
                a = db.execute("SELECT COUNT(*) FROM record WHERE dir = 'in'").fetchone()[0]
            except sqlite3.DatabaseError as exc:
                raise JournalError(f"{path or self.path}: its records cannot be read: {exc}") from None
            finally:
                if path is not None:
                    db.close()
            emitted, pending, accepted, highest = emitted + e, pending + u, accepted + a, max(highest, h)
        return {"unit": self.unit_id, "role": self.role, "emitted": emitted,
                "highest_seq": max(highest, self.last_seq), "undelivered": pending, "accepted": accepted,
                "steps": self.last_step, "segments": len(kept)}

    def close(self) -> None:
        """Close cleanly: the file says so (a later start then knows a missing WAL is
        normal: SQLite folds it in and deletes it here)."""
        if self.readonly:
            self._db.close()
        else:
            try:
                self.mark_delivered([])     # the marks waiting for the next step
            except sqlite3.Error:
                pass                        # safe to lose: those messages go again
            self._closer()


def _mark_statement(seqs: list[int]) -> tuple[str, tuple]:
    return (f"UPDATE record SET delivered = 1 WHERE seq IN ({','.join('?' * len(seqs))})", tuple(seqs))


def _utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _close_clean(db: sqlite3.Connection) -> None:
    """Mark the file closed cleanly, then close it (also when a journal is dropped unclosed)."""
    try:
        set_open_mark(db, "0")
    except sqlite3.Error:
        pass          # (a full partition): the WAL stays beside the file if SQLite cannot fold it in
    try:
        db.close()
    except sqlite3.Error:
        pass


def _not_closed_cleanly(db: sqlite3.Connection, had_wal: bool) -> bool:
    """Whether the file needs ``quick_check`` (it reads every page: bench/bench_journal_open.py)
    before the unit starts on it: its WAL beside it or its open mark set (the unit did not
    stop cleanly), or no mark at all (older firmware). A new, empty file needs none; a file
    too damaged to read its meta is refused by the caller."""
    if had_wal:
        return True
    if not _has_table(db, "meta"):
        return _has_table(db, "record")
    row = db.execute("SELECT value FROM meta WHERE key = ?", (OPEN_MARK,)).fetchone()
    return row is None or row[0] != "0"


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def _add_columns(db: sqlite3.Connection) -> None:
    """A schema-1 journal gets the time columns (its old records keep none)."""
    have = {row[1] for row in db.execute("PRAGMA table_info(record)")}
    for name, sql_type in _ADDED:
        if name not in have:
            db.execute(f"ALTER TABLE record ADD COLUMN {name} {sql_type}")


def _records(db: sqlite3.Connection, round_no: int | None, source: Path | None = None) -> Iterator[Record]:
    have = {row[1] for row in db.execute("PRAGMA table_info(record)")}
    times = ", ".join(name if name in have else "NULL" for name, _ in _ADDED)
    sql = f"SELECT id, step, dir, kind, seq, round, body, delivered, {times} FROM record"
    params: tuple = ()
    if round_no is not None:
        sql += " WHERE round = ?"
        params = (round_no,)
    try:
        rows = db.execute(sql + " ORDER BY id", params).fetchall()
    except sqlite3.DatabaseError as exc:
        raise JournalError(f"{source or 'journal'}: its records cannot be read: {exc}") from None
    for id_, step, dir_, kind, seq, rnd, body, delivered, utc, mono in rows:
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise JournalError(f"{source or 'journal'}: record {id_} (step {step}) is not JSON: {exc}") from None
        yield Record(dir_, kind, data, seq, rnd, id_, step, bool(delivered), utc, mono)


def _marks(row: tuple[Any, Any], meta: Mapping[str, str]) -> tuple[int, int, int]:
    """(last step, last seq, after_round) from the records' highest and the meta's bases;
    ValueError for a damaged file: SQLite keeps any type in any column (a step may be a text)."""
    if not all(type(n) is int for n in row):
        raise ValueError(f"its highest step and sequence number are {row[0]!r:.40} and {row[1]!r:.40}")
    return (max(row[0], int(meta.get("base_step", 0))), max(row[1], int(meta.get("base_seq", 0))),
            int(meta.get("after_round", 0)))


def check_marks(path: str | Path) -> None:
    """What a start reads of an existing journal's marks (:func:`_marks`), read only, for
    ``betbox run --check``: JournalError naming the file, as the start says it. The file the
    start opens (``journal.db``, or a rotation's new file it would finish); none, or one with
    no records table yet (the start makes its tables), passes."""
    path = Path(path)
    new = path.with_name(path.name + NEW_SUFFIX)
    source = path if path.exists() else new if new.exists() else None
    if source is None:
        return
    db = _connect_readonly(source)
    try:
        if _has_table(db, "record"):
            meta = dict(db.execute("SELECT key, value FROM meta")) if _has_table(db, "meta") else {}
            _marks(db.execute("SELECT COALESCE(MAX(step), 0), COALESCE(MAX(seq), 0) FROM record").fetchone(), meta)
    except (sqlite3.DatabaseError, ValueError) as exc:
        raise JournalError(f"{source}: cannot open the journal: {exc}") from None
    finally:
        db.close()


def _open_segment(path: Path) -> sqlite3.Connection:
    return _connect_readonly(path)


def _connect_readonly(path: Path) -> sqlite3.Connection:
    """Open a journal file for reading only: ``mode=ro`` (it sees a live unit's WAL and
    never writes), or ``immutable=1`` where the medium is read-only and no WAL is beside the
    file (nothing newer to see). Never finishes a rotation, never creates a file."""
    uri = path.resolve().as_uri()
    try:
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True)
        db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.DatabaseError as exc:
        first = exc
    wal = Path(str(path) + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise JournalError(f"{path}: cannot be read ({first}); its write-ahead log {wal.name} holds the "
                           f"newest records and needs a writable directory to be read: copy the unit's "
                           f"directory to writable storage and recall from the copy")
    try:
        db = sqlite3.connect(f"{uri}?immutable=1", uri=True)
        db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.DatabaseError as exc:
        raise JournalError(f"{path}: not a journal that can be read: {exc}") from None


def _read_meta(path: Path) -> dict[str, str]:
    db = _connect_readonly(path)
    try:
        return dict(db.execute("SELECT key, value FROM meta"))
    except sqlite3.DatabaseError as exc:
        raise JournalError(f"{path}: not a betbox journal: {exc}") from None
    finally:
        db.close()


def open_readonly(path: str | Path) -> Journal:
    """Open a unit's journal for recall, whatever unit it belongs to: ``path`` is its
    ``journal.db`` (which may be missing while its segments or a rotation's new file are
    there). Nothing is written, nothing finished: a rotation cut short is the unit's to
    finish (:func:`_finish_rotation`), and read-only media are fine."""
    path = Path(path)
    new = path.with_name(path.name + NEW_SUFFIX)
    kept = segments(path)
    # a rotation cut short: with the active file there the new one is unfinished (ignored);
    # without it, the new file is the active one (the old is a segment already)
    active = path if path.exists() else new if new.exists() else None
    source = active if active is not None else (kept[-1] if kept else None)
    if source is None:
        raise JournalError(f"{path}: no journal there")
    meta = _read_meta(source)
    if "unit" not in meta or "role" not in meta:
        raise JournalError(f"{source}: not a betbox journal (no unit recorded)")
    j = Journal.__new__(Journal)
    j.path, j.readonly, j.synchronous = path, True, "FULL"
    j.rotate_rounds = j.keep_segments = None
    j.unit_id, j.role = meta["unit"], meta["role"]
    if active is not None:
        j._db = _connect_readonly(active)
    else:
        j._db = sqlite3.connect(":memory:")      # only segments: an empty active file
        j._db.executescript(_DDL)
    try:
        row = j._db.execute("SELECT COALESCE(MAX(step), 0), COALESCE(MAX(seq), 0) FROM record").fetchone()
    except sqlite3.DatabaseError as exc:
        j._db.close()
        raise JournalError(f"{active}: its records cannot be read: {exc}") from None
    am = meta if active is not None else {}
    try:
        j.last_step, j.last_seq, j.after_round = _marks(row, am)
    except ValueError as exc:
        j._db.close()
        raise JournalError(f"{source}: not a journal this firmware reads: {exc}") from None
    j.first_round = j._db.execute("SELECT MIN(round) FROM record WHERE round > ?", (j.after_round,)).fetchone()[0]
    j.writes = 0
    return j


def find_journals(directory: str | Path) -> list[Path]:
    """Each unit's journal (its ``journal.db`` path) under ``directory``, also where only
    its segments or a rotation's new file are left."""
    found: set[Path] = set()
    for pattern in (JOURNAL_NAME, JOURNAL_NAME + NEW_SUFFIX, "journal-*-*.db"):
        for p in Path(directory).rglob(pattern):
            if p.name == JOURNAL_NAME or p.name == JOURNAL_NAME + NEW_SUFFIX or SEGMENT.match(p.name):
                found.add(p.with_name(JOURNAL_NAME))
    return sorted(found)
