"""The unit journal: SQLite in WAL mode with ``synchronous=FULL``.

A unit writes each input it accepts together with every message that input makes it emit
in **one transaction**, before it acts (publishes, drives lamps). After a power cut the
journal holds either the whole step or none of it; SQLite's WAL checksums discard a torn
last write. ``delivered`` marks messages the transport has taken; the rest are sent again
on restart (receivers drop duplicates by sender and sequence number).

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
import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

SCHEMA_VERSION = 1
JOURNAL_NAME = "journal.db"
NEW_SUFFIX = ".new"
SEGMENT = re.compile(r"^journal-(\d+)-(\d+)\.db$")

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
    delivered INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS record_seq ON record(seq) WHERE seq IS NOT NULL;
CREATE INDEX IF NOT EXISTS record_round ON record(round);
"""


class JournalError(RuntimeError):
    """A journal that cannot be opened or belongs to another unit."""


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
        _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if synchronous not in ("FULL", "EXTRA"):
            raise JournalError(f"journal synchronous={synchronous!r}: only FULL or EXTRA keep every step")
        if rotate_rounds is not None and not 1 <= rotate_rounds <= 1_000_000:
            raise JournalError(f"journal rotate_rounds={rotate_rounds!r}: 1 to 1000000 rounds, or None")
        if keep_segments is not None and not 0 <= keep_segments <= 1_000_000:
            raise JournalError(f"journal keep_segments={keep_segments!r}: 0 to 1000000, or None (all)")
        self.synchronous = synchronous
        self.rotate_rounds = rotate_rounds       # rounds per segment (None: never rotate)
        self.keep_segments = keep_segments       # segments kept for recall (None: all)
        _finish_rotation(self.path)
        self._open(unit_id, role)

    def _open(self, unit_id: str, role: str) -> None:
        synchronous = self.synchronous
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            self._db.executescript(_DDL)
        except sqlite3.DatabaseError as exc:
            raise JournalError(f"{self.path}: cannot open the journal: {exc}") from None
        meta = dict(self._db.execute("SELECT key, value FROM meta"))
        if not meta:
            self._tx([("INSERT INTO meta VALUES (?, ?)", ("unit", unit_id)),
                      ("INSERT INTO meta VALUES (?, ?)", ("role", role)),
                      ("INSERT INTO meta VALUES (?, ?)", ("schema", str(SCHEMA_VERSION)))])
        elif meta.get("unit") != unit_id or meta.get("role") != role:
            raise JournalError(f"{self.path} is the journal of {meta.get('role')} {meta.get('unit')!r}, "
                               f"not {role} {unit_id!r}")
        self.unit_id, self.role = unit_id, role
        meta = dict(self._db.execute("SELECT key, value FROM meta"))
        row = self._db.execute("SELECT COALESCE(MAX(step), 0), COALESCE(MAX(seq), 0) FROM record").fetchone()
        self.last_step = max(row[0], int(meta.get("base_step", 0)))
        self.last_seq = max(row[1], int(meta.get("base_seq", 0)))
        # the last round of the previous segment: its late records (seats' results) may
        # still come here, but the rounds this file counts towards rotation start after it
        self.after_round = int(meta.get("after_round", 0))
        self.first_round: int | None = self._db.execute(
            "SELECT MIN(round) FROM record WHERE round > ?", (self.after_round,)).fetchone()[0]
        self.writes = getattr(self, "writes", 0)

    def _tx(self, statements: list[tuple[str, tuple]]) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for sql, params in statements:
                db.execute(sql, params)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def write_step(self, records: list[Record]) -> int:
        """Write one step (an input and what it emits) atomically; returns the step number."""
        step = self.last_step + 1
        self._tx([("INSERT INTO record (step, dir, kind, seq, round, body) VALUES (?, ?, ?, ?, ?, ?)",
                   (step, r.dir, r.kind, r.seq, r.round, json.dumps(r.body, sort_keys=True,
                                                                      separators=(",", ":"))))
                  for r in records])
        self.last_step = step
        for r in records:
            if r.seq is not None:
                self.last_seq = max(self.last_seq, r.seq)
            if r.round is not None and r.round > self.after_round and self.first_round is None:
                self.first_round = r.round
        self.writes += 1
        return step

    def mark_delivered(self, seqs: list[int]) -> None:
        if seqs:
            self._db.execute(f"UPDATE record SET delivered = 1 WHERE seq IN ({','.join('?' * len(seqs))})", seqs)

    def records(self, round_no: int | None = None) -> Iterator[Record]:
        """The active file's records (what recovery replays); :meth:`history` spans segments."""
        return _records(self._db, round_no)

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
        return [r for r in self.records() if r.dir == "out" and not r.delivered]

    # -- rotation ----------------------------------------------------------------------

    def checkpoint(self) -> dict[str, Any] | None:
        """The unit state the active file starts from (None: it starts from nothing), as the
        JSON object the unit wrote (:meth:`Unit.checkpoint`). Only ever parsed as JSON:
        reading a journal cannot execute anything."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'checkpoint'").fetchone()
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
        pending = self._db.execute("SELECT COUNT(*) FROM record WHERE dir = 'out' AND delivered = 0").fetchone()[0]
        first, last = self._db.execute("SELECT MIN(round), MAX(round) FROM record").fetchone()
        if pending or first is None:
            return None
        text = json.dumps(checkpoint, sort_keys=True, separators=(",", ":"), allow_nan=False)
        segment = self.path.with_name(f"journal-{first:06d}-{last:06d}.db")
        if segment.exists():
            raise JournalError(f"{segment} exists already: rounds {first}-{last} were archived before")
        new = self.path.with_name(self.path.name + NEW_SUFFIX)
        for suffix in ("", "-wal", "-shm"):
            Path(str(new) + suffix).unlink(missing_ok=True)
        db = sqlite3.connect(new, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=DELETE")
            db.execute(f"PRAGMA synchronous={self.synchronous}")
            db.executescript(_DDL)
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT INTO meta VALUES (?, ?)", [
                ("unit", self.unit_id), ("role", self.role), ("schema", str(SCHEMA_VERSION)),
                ("base_step", str(self.last_step)), ("base_seq", str(self.last_seq)),
                ("checkpoint", text), ("checkpoint_format", str(checkpoint.get("format"))),
                ("follows", segment.name), ("after_round", str(last))])
            db.execute("COMMIT")
        finally:
            db.close()
        # the old file folded into one (no WAL beside it), then renamed: a cut from here on
        # finds the complete new file (see _finish_rotation)
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._db.execute("PRAGMA journal_mode=DELETE")   # a segment is one self-contained file
        self._db.close()
        _fsync_dir(self.path.parent)
        os.replace(self.path, segment)
        for suffix in ("-wal", "-shm"):
            Path(str(self.path) + suffix).unlink(missing_ok=True)
        os.replace(new, self.path)
        _fsync_dir(self.path.parent)
        self._open(self.unit_id, self.role)
        self._prune()
        return segment

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
                yield from _records(seg, round_no)
            finally:
                seg.close()
        yield from self.records(round_no)

    def stats(self) -> dict[str, Any]:
        """Per unit over every kept segment and the active file."""
        emitted = pending = accepted = 0
        highest = 0
        kept = segments(self.path)
        for db in [*(_open_segment(p) for p in kept), self._db]:
            e, h, u = db.execute("SELECT COUNT(*), COALESCE(MAX(seq), 0), COALESCE(SUM(delivered = 0), 0) "
                                 "FROM record WHERE dir = 'out'").fetchone()
            a = db.execute("SELECT COUNT(*) FROM record WHERE dir = 'in'").fetchone()[0]
            emitted, pending, accepted, highest = emitted + e, pending + u, accepted + a, max(highest, h)
            if db is not self._db:
                db.close()
        return {"unit": self.unit_id, "role": self.role, "emitted": emitted,
                "highest_seq": max(highest, self.last_seq), "undelivered": pending, "accepted": accepted,
                "steps": self.last_step, "segments": len(kept)}

    def close(self) -> None:
        self._db.close()


def _records(db: sqlite3.Connection, round_no: int | None) -> Iterator[Record]:
    sql = "SELECT id, step, dir, kind, seq, round, body, delivered FROM record"
    params: tuple = ()
    if round_no is not None:
        sql += " WHERE round = ?"
        params = (round_no,)
    for id_, step, dir_, kind, seq, rnd, body, delivered in db.execute(sql + " ORDER BY id", params).fetchall():
        yield Record(dir_, kind, json.loads(body), seq, rnd, id_, step, bool(delivered))


def _open_segment(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def open_readonly(path: str | Path) -> Journal:
    """Open an existing journal for recall, whatever unit it belongs to."""
    db = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
    try:
        meta = dict(db.execute("SELECT key, value FROM meta"))
    except sqlite3.DatabaseError as exc:
        raise JournalError(f"{path}: not a betbox journal: {exc}") from None
    finally:
        db.close()
    if "unit" not in meta:
        raise JournalError(f"{path}: not a betbox journal (no unit recorded)")
    return Journal(path, meta["unit"], meta["role"])


def find_journals(directory: str | Path) -> list[Path]:
    return sorted(Path(directory).rglob(JOURNAL_NAME))
