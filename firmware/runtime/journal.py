"""The unit journal: SQLite in WAL mode with ``synchronous=FULL``.

A unit writes each input it accepts together with every message that input makes it emit
in **one transaction**, before it acts (publishes, drives lamps). After a power cut the
journal holds either the whole step or none of it; SQLite's WAL checksums discard a torn
last write. ``delivered`` marks messages the transport has taken; the rest are sent again
on restart (receivers drop duplicates by sender and sequence number).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

SCHEMA_VERSION = 1
JOURNAL_NAME = "journal.db"

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


class Journal:
    def __init__(self, path: str | Path, unit_id: str, role: str, synchronous: str = "FULL") -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if synchronous not in ("FULL", "EXTRA"):
            raise JournalError(f"journal synchronous={synchronous!r}: only FULL or EXTRA keep every step")
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
        row = self._db.execute("SELECT COALESCE(MAX(step), 0), COALESCE(MAX(seq), 0) FROM record").fetchone()
        self.last_step, self.last_seq = row
        self.writes = 0

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
        self.writes += 1
        return step

    def mark_delivered(self, seqs: list[int]) -> None:
        if seqs:
            self._db.execute(f"UPDATE record SET delivered = 1 WHERE seq IN ({','.join('?' * len(seqs))})", seqs)

    def records(self, round_no: int | None = None) -> Iterator[Record]:
        sql = "SELECT id, step, dir, kind, seq, round, body, delivered FROM record"
        params: tuple = ()
        if round_no is not None:
            sql += " WHERE round = ?"
            params = (round_no,)
        for id_, step, dir_, kind, seq, rnd, body, delivered in self._db.execute(sql + " ORDER BY id", params):
            yield Record(dir_, kind, json.loads(body), seq, rnd, id_, step, bool(delivered))

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

    def stats(self) -> dict[str, Any]:
        emitted, highest, pending = self._db.execute(
            "SELECT COUNT(*), COALESCE(MAX(seq), 0), COALESCE(SUM(delivered = 0), 0) "
            "FROM record WHERE dir = 'out'").fetchone()
        accepted = self._db.execute("SELECT COUNT(*) FROM record WHERE dir = 'in'").fetchone()[0]
        return {"unit": self.unit_id, "role": self.role, "emitted": emitted, "highest_seq": highest,
                "undelivered": pending, "accepted": accepted, "steps": self.last_step}

    def close(self) -> None:
        self._db.close()


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
