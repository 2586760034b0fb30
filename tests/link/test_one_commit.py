"""One durable commit per unit per step (issue #17.5): a step's journal record and the
reports it makes are one transaction in the journal's file; the marks that are safe to lose
(delivered, the broker's PUBACK, the controller's confirmation) take no fsync of their own;
a kill inside the merged transaction leaves nothing of the step, a kill after it all of it;
an outbox file of firmware before is moved into the journal without loss or duplicate."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from firmware.link.outbox import Outbox, OutboxError
from firmware.runtime.journal import Journal, Record

from .commitchild import REPORTS, SHOE_DOWN, UNIT, open_dealer

TOPIC = "betbox/unit/t/seat-1/report"


class Commits:
    """Counts the commits a connection makes that are durable (fsynced: synchronous FULL)."""

    def __init__(self, *dbs: sqlite3.Connection) -> None:
        self.durable = self.light = 0
        for db in dbs:
            state = {"sync": db.execute("PRAGMA synchronous").fetchone()[0]}
            db.set_trace_callback(lambda sql, state=state: self._saw(sql, state))

    def _saw(self, sql: str, state: dict[str, int]) -> None:
        text = sql.strip().upper()
        if text.startswith("PRAGMA SYNCHRONOUS="):
            state["sync"] = {"OFF": 0, "NORMAL": 1, "FULL": 2, "EXTRA": 3}[text.split("=")[1]]
        elif text == "COMMIT":
            if state["sync"] >= 2:
                self.durable += 1
            else:
                self.light += 1


def read_only(path: Path) -> sqlite3.Connection:
    """A look at a unit's file that never folds its WAL in (a unit killed left it)."""
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def reports(outbox: Outbox) -> list[tuple[int, str | None]]:
    db = read_only(outbox.path)
    try:
        return db.execute("SELECT seq, key FROM outbox ORDER BY seq").fetchall()
    finally:
        db.close()


def device_steps(journal_path: Path) -> int:
    db = read_only(journal_path)
    try:
        return db.execute("SELECT COUNT(*) FROM record WHERE kind = 'device'").fetchone()[0]
    finally:
        db.close()


def test_a_step_and_its_report_are_one_durable_commit(tmp_path):
    dealer, journal, outbox = open_dealer(tmp_path)
    commits = Commits(journal._db, outbox._db)
    assert dealer.step("device", dict(SHOE_DOWN))
    assert commits.durable == 1                       # the step, its alarm message and its report
    assert [key for _, key in reports(outbox)] == ["alarm/1"]
    assert journal.undelivered() == []                # marked delivered, without an fsync
    commits.durable = commits.light = 0
    outbox.mark_acked_many([1])                       # the broker's PUBACK
    outbox.confirm_through(1)                         # the controller holds it
    assert (commits.durable, commits.light) == (0, 2)
    assert outbox.stats()["confirmed"] == 1 and reports(outbox) == []
    outbox.close()
    journal.close()


def test_a_report_that_fails_takes_its_step_with_it(tmp_path):
    dealer, journal, outbox = open_dealer(tmp_path)
    steps = journal.last_step

    def broken(unit) -> None:
        raise RuntimeError("the report could not be made")
    dealer.observe(broken, in_step=True)
    with pytest.raises(RuntimeError):
        dealer.step("device", dict(SHOE_DOWN))
    assert journal.last_step == steps and device_steps(journal.path) == 0
    assert reports(outbox) == []                      # the alarm's report was rolled back with it
    outbox.close()
    journal.close()


def test_the_sender_is_told_once_the_report_is_committed(tmp_path):
    dealer, journal, outbox = open_dealer(tmp_path)
    seen: list[list[int]] = []
    # what the sender reads on its own connection: the report must be visible by then
    outbox.add_listener(lambda: seen.append([p.seq for p in outbox.pending()]))
    dealer.step("device", dict(SHOE_DOWN))
    assert seen == [[1]]
    outbox.close()
    journal.close()


def child(state_dir: Path, mode: str) -> int:
    return subprocess.run([sys.executable, "-m", "tests.link.commitchild", str(state_dir), mode],
                          cwd=Path(__file__).resolve().parents[2], timeout=120).returncode


@pytest.mark.parametrize(("mode", "kept"), [("inside", 0), ("after", 1), ("none", 1)])
def test_a_kill_inside_the_step_leaves_none_of_it_after_it_all(tmp_path, mode, kept):
    assert child(tmp_path, mode) == (-9 if mode != "none" else 0)
    assert device_steps(tmp_path / "journal.db") == kept
    dealer, journal, outbox = open_dealer(tmp_path)        # restarted: replayed, reports synced
    assert [key for _, key in reports(outbox)] == ["alarm/1"] * kept
    assert dealer.alarm_counts.get("shoe_down", 0) == kept
    dealer.step("device", dict(SHOE_DOWN, state="up"))     # goes on numbering after what it kept
    assert [key for _, key in reports(outbox)] == ["alarm/1"] * kept + [f"alarm/{kept + 1}"]
    assert [seq for seq, _ in reports(outbox)] == list(range(1, kept + 2))
    outbox.close()
    journal.close()


def old_layout(state: Path) -> list[tuple]:
    """A journal and an outbox file as the firmware before #17.5 left them: reports
    confirmed (their keys kept), acknowledged, waiting; a name's running mark."""
    state.mkdir()
    journal = Journal(state / "journal.db", "t/seat-1", "seat")
    journal.write_step([Record("in", "console", {"n": 1}, round=1)])
    journal.close()
    old = Outbox(state / "outbox.db", "t/seat-1")
    for rnd in range(1, 6):
        old.put(TOPIC, "round_result", {"net": str(rnd)}, key=f"{rnd}/round_result")
        old.put(TOPIC, "alarm", {"alarm": "x"}, key=f"alarm/{rnd}")
    old.mark_acked_many([1, 2, 3, 4, 5, 6])
    old.confirm_through(4)
    rows = [(p.seq, p.id, p.topic, p.payload, p.acked) for p in old.pending()]
    old.close()
    return rows


def open_new(state: Path) -> tuple[Journal, Outbox]:
    journal = Journal(state / "journal.db", "t/seat-1", "seat")
    return journal, Outbox(state / "outbox.db", "t/seat-1", journal=journal)


def test_an_outbox_file_of_firmware_before_is_moved_in_without_loss_or_duplicate(tmp_path):
    state = tmp_path / "state"
    before = old_layout(state)
    assert [r[0] for r in before] == [5, 6, 7, 8, 9, 10]
    journal, outbox = open_new(state)
    assert [(p.seq, p.id, p.topic, p.payload, p.acked) for p in outbox.pending()] == before
    assert not (state / "outbox.db").exists() and (state / "outbox.db.migrated").exists()
    assert outbox.stats() == {"waiting": 4, "acked_unconfirmed": 2, "next_seq": 11, "confirmed": 4}
    # keys reported before are still reported: confirmed, waiting, under a running mark
    assert outbox.put(TOPIC, "round_result", {}, key="1/round_result") is None
    assert outbox.put(TOPIC, "round_result", {}, key="5/round_result") is None
    assert outbox.put(TOPIC, "alarm", {}, key="alarm/2") is None
    assert outbox.put(TOPIC, "alarm", {}, key="alarm/6") == 11
    outbox.close()
    journal.close()
    # a cut between the move and the rename: the file is back beside the journal; it is
    # only renamed, nothing moved twice
    shutil.copy(state / "outbox.db.migrated", state / "outbox.db")
    journal, outbox = open_new(state)
    assert [p.seq for p in outbox.pending()] == [5, 6, 7, 8, 9, 10, 11]
    assert not (state / "outbox.db").exists()
    outbox.close()
    journal.close()


def test_an_outbox_file_that_was_never_moved_in_is_refused_naming_it(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    journal, outbox = open_new(state)                 # a unit that started with the new layout
    outbox.close()
    journal.close()
    old = Outbox(state / "outbox.db", "t/seat-1")     # and then an old outbox file beside it
    old.put(TOPIC, "round_result", {}, key="1/round_result")
    old.close()
    with pytest.raises(OutboxError, match="outbox.db is an outbox file beside"):
        open_new(state)
    assert (state / "outbox.db").exists()             # nothing lost: left where it is


def test_rotation_carries_the_outbox_into_the_new_file(tmp_path):
    journal = Journal(tmp_path / "journal.db", UNIT, "dealer", rotate_rounds=1)
    outbox = Outbox(tmp_path / "outbox.db", UNIT, journal=journal)
    for rnd in (1, 2):
        outbox.put(REPORTS, "round_settlement", {"n": rnd}, key=f"{rnd}/round_settlement")
    outbox.confirm_through(1)
    journal.write_step([Record("in", "console", {"n": 1}, round=1)])
    before = outbox.pending()
    assert journal.rotate({"format": 4, "state": {}}) is not None
    assert outbox.pending() == before                  # the sender's connection is on the new file
    assert outbox.put(REPORTS, "round_settlement", {}, key="1/round_settlement") is None
    assert outbox.put(REPORTS, "round_settlement", {"n": 3}, key="3/round_settlement") == 3
    outbox.close()
    journal.close()
    journal = Journal(tmp_path / "journal.db", UNIT, "dealer", rotate_rounds=1)
    outbox = Outbox(tmp_path / "outbox.db", UNIT, journal=journal)
    assert [p.seq for p in outbox.pending()] == [2, 3] and journal.checkpoint() == {"format": 4, "state": {}}
    outbox.close()
    journal.close()
