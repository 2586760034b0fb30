"""SQLite's ``PRAGMA quick_check`` reads every page of a journal (bench/bench_journal_open.py:
a 50,000-step journal opens 3x slower warm, 10x slower with its pages not cached). It runs
where damage is likely: a journal its unit did not close cleanly (its WAL beside it, or the
open mark still set; a file of older firmware without the mark). A cleanly closed journal
opens without it; ``betbox diag`` runs ``PRAGMA integrity_check`` on every journal file."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from firmware.runtime import journal as journal_mod
from firmware.runtime.journal import JOURNAL_NAME, Journal, JournalError, Record

UNIT, ROLE = "t1/seat-1", "seat"


@pytest.fixture
def checked(monkeypatch) -> list[Path]:
    """The files the journal ran its integrity check on (the real check runs)."""
    seen: list[Path] = []
    real = journal_mod.check_integrity

    def spy(path: Path, db: sqlite3.Connection, what: str) -> None:
        seen.append(Path(path))
        real(path, db, what)

    monkeypatch.setattr(journal_mod, "check_integrity", spy)
    return seen


def written(path: Path, steps: int = 200) -> Journal:
    j = Journal(path, UNIT, ROLE)
    for n in range(steps):
        j.write_step([Record("in", "console", {"button": "x" * 200, "n": n}, round=1)])
    return j


def test_a_cleanly_closed_journal_opens_without_the_check(tmp_path, checked):
    path = tmp_path / JOURNAL_NAME
    written(path).close()
    checked.clear()
    again = Journal(path, UNIT, ROLE)
    assert again.last_step == 200 and checked == []
    again.close()


def test_a_journal_not_closed_cleanly_is_checked_and_opens(tmp_path, checked):
    j = written(tmp_path / "unit" / JOURNAL_NAME)
    copy = tmp_path / "copy"                      # the files as a power cut leaves them
    copy.mkdir()
    for suffix in ("", "-wal"):
        shutil.copy(tmp_path / "unit" / (JOURNAL_NAME + suffix), copy / (JOURNAL_NAME + suffix))
    j.close()
    checked.clear()
    again = Journal(copy / JOURNAL_NAME, UNIT, ROLE)
    assert again.last_step == 200 and checked == [copy / JOURNAL_NAME]
    again.close()


def test_a_journal_without_the_open_mark_is_checked(tmp_path, checked):
    path = tmp_path / JOURNAL_NAME
    written(path).close()
    db = sqlite3.connect(path)                    # as older firmware left it: no mark
    db.execute("DELETE FROM meta WHERE key = 'open'")
    db.commit()
    db.close()
    checked.clear()
    Journal(path, UNIT, ROLE).close()
    assert checked == [path]


def damage_index(path: Path) -> None:
    """Garbage over a page of the ``record_round`` index (the table's rows stay readable)."""
    db = sqlite3.connect(path)
    pages = [p for (p,) in db.execute("SELECT pageno FROM dbstat WHERE name = 'record_round' AND pagetype = 'leaf'")]
    size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    data = bytearray(path.read_bytes())
    start = (pages[len(pages) // 2] - 1) * size
    data[start:start + size] = b"\xa5" * size
    path.write_bytes(bytes(data))


def test_a_damaged_journal_not_closed_cleanly_is_refused(tmp_path, checked: Any):
    j = written(tmp_path / "unit" / JOURNAL_NAME, 3000)
    j._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")   # the rows in the main file, the mark still set
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(tmp_path / "unit" / JOURNAL_NAME, copy / JOURNAL_NAME)
    (copy / (JOURNAL_NAME + "-wal")).write_bytes(b"")  # an empty WAL beside it, as after the checkpoint
    j.close()
    damage_index(copy / JOURNAL_NAME)
    with pytest.raises(JournalError, match="damaged"):
        Journal(copy / JOURNAL_NAME, UNIT, ROLE)
