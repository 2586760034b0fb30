"""The outbox's storage: idempotency keys pruned with their reports (issue #12.9), private
files (#12.9), an outbox that cannot be opened refused naming the file (#11.5)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat

import pytest

from firmware.link.outbox import Outbox, OutboxError

UNIT = "table-1/seat-1"
TOPIC = "betbox/unit/table-1/seat-1/report"


def rows(path) -> int:
    db = sqlite3.connect(path)
    try:
        return sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                   for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    finally:
        db.close()


def test_confirmed_keys_are_pruned_and_a_report_is_still_never_stored_twice(tmp_path):
    ob = Outbox(tmp_path / "outbox.db", UNIT, keep_keys=50, keep_confirmed=20)
    for rnd in range(1, 201):                     # 200 rounds, a result and an alarm each
        assert ob.put(TOPIC, "round_result", {"net": "0"}, key=f"{rnd}/round_result") is not None
        assert ob.put(TOPIC, "alarm", {"alarm": "x"}, key=f"alarm/{rnd}") is not None
        if rnd % 10 == 0:
            ob.confirm_through(ob.last_seq)
    assert ob.stats()["waiting"] == 0
    # bounded: 50 keys, one mark for the alarms, the 20 newest confirmed reports kept whole
    # (for a controller that goes back), the meta rows; not one row per report
    assert rows(tmp_path / "outbox.db") <= 50 + 20 + 10 and ob.kept() == 20
    assert ob.put(TOPIC, "round_result", {"net": "0"}, key="200/round_result") is None   # kept
    assert ob.put(TOPIC, "alarm", {"alarm": "x"}, key="alarm/3") is None                  # under the mark
    assert ob.put(TOPIC, "alarm", {"alarm": "x"}, key="alarm/201") is not None
    ob.close()
    again = Outbox(tmp_path / "outbox.db", UNIT, keep_keys=50)
    assert again.put(TOPIC, "round_result", {"net": "0"}, key="199/round_result") is None
    assert again.put(TOPIC, "alarm", {"alarm": "x"}, key="alarm/200") is None
    again.close()


def test_keys_kept_by_older_firmware_move_to_the_pruned_table(tmp_path):
    path = tmp_path / "outbox.db"
    Outbox(path, UNIT).close()
    db = sqlite3.connect(path)
    db.executemany("INSERT INTO meta VALUES (?, '1')", [(f"k:{n}/round_result",) for n in range(1, 101)])
    db.execute("UPDATE meta SET value = '300' WHERE key = 'confirmed'")
    db.execute("UPDATE meta SET value = '301' WHERE key = 'next_seq'")
    db.commit()
    db.close()
    ob = Outbox(path, UNIT, keep_keys=20)
    assert ob.put(TOPIC, "round_result", {}, key="7/round_result") is None
    ob.put(TOPIC, "round_result", {}, key="101/round_result")
    ob.confirm_through(ob.last_seq)
    assert rows(path) <= 20 + 10
    ob.close()


def test_outbox_files_are_private(tmp_path):
    old = os.umask(0o022)
    try:
        ob = Outbox(tmp_path / "outbox.db", UNIT)
        ob.put(TOPIC, "alarm", {})
        for name in ("outbox.db", "outbox.db-wal"):
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, name
        ob.close()
    finally:
        os.umask(old)


def test_an_outbox_whose_wal_was_lost_is_refused(tmp_path):
    ob = Outbox(tmp_path / "outbox.db", UNIT)
    ob.put(TOPIC, "round_result", {"net": "5"}, key="1/round_result")
    (tmp_path / "copy").mkdir()
    shutil.copy(tmp_path / "outbox.db", tmp_path / "copy" / "outbox.db")
    with pytest.raises(OutboxError, match="write-ahead log outbox.db-wal is missing") as err:
        Outbox(tmp_path / "copy" / "outbox.db", UNIT)
    assert str(tmp_path / "copy" / "outbox.db") in str(err.value)
    ob.close()
    assert Outbox(tmp_path / "outbox.db", UNIT).last_seq == 1


def test_a_damaged_outbox_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "outbox.db"
    ob = Outbox(path, UNIT)
    for n in range(300):
        ob.put(TOPIC, "alarm", {"detail": "x" * 300, "n": n})
    ob.close()
    data = bytearray(path.read_bytes())
    data[3 * 4096:4 * 4096] = b"\x5a" * 4096
    path.write_bytes(bytes(data))
    with pytest.raises(OutboxError, match=str(path)):
        Outbox(path, UNIT)


def test_the_journals_check_on_an_unclean_open_covers_the_outbox_tables_in_its_file(tmp_path):
    """``betbox run`` keeps the outbox's tables in the unit's journal.db: the journal's
    ``PRAGMA quick_check`` (run when the file was not closed cleanly) reads every page of
    the file, theirs too: a damaged outbox index stops the unit, the file named."""
    from firmware.runtime.journal import JOURNAL_NAME, Journal, JournalError

    unit = tmp_path / "unit"
    journal = Journal(unit / JOURNAL_NAME, UNIT, "seat")
    ob = Outbox(unit / "outbox.db", UNIT, journal=journal)
    for n in range(400):
        ob.put(TOPIC, "alarm", {"detail": "x" * 200, "n": n}, key=f"alarm/{n}")
    journal._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")    # the rows in the main file, the mark still set
    copy = tmp_path / "copy"                                    # the file as a power cut leaves it
    copy.mkdir()
    shutil.copy(unit / JOURNAL_NAME, copy / JOURNAL_NAME)
    ob.close()
    journal.close()
    db = sqlite3.connect(copy / JOURNAL_NAME)
    pages = [p for (p,) in db.execute("SELECT pageno FROM dbstat WHERE name = 'sqlite_autoindex_outbox_2' "
                                      "AND pagetype = 'leaf'")]
    size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    data = bytearray((copy / JOURNAL_NAME).read_bytes())
    data[(pages[0] - 1) * size:pages[0] * size] = b"\xa5" * size
    (copy / JOURNAL_NAME).write_bytes(bytes(data))
    with pytest.raises(JournalError, match="damaged") as err:
        Journal(copy / JOURNAL_NAME, UNIT, "seat")
    assert str(copy / JOURNAL_NAME) in str(err.value)
