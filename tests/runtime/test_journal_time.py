"""Time in every record (issue #12.5): each step carries UTC wall-clock time and the unit's
monotonic clock, each start the clock's sync state; ``journal show`` prints the time and
filters by time range, box and round; a seat recalls its own rounds; journals older than
times still recover and show."""

from __future__ import annotations

import sqlite3
import time
from datetime import datetime, timedelta, timezone

import pytest

from firmware.cli import main
from firmware.runtime.journal import JOURNAL_NAME, Journal, Record, open_readonly
from tests.runtime.test_rotation import driver, play


def test_each_step_carries_utc_and_monotonic_time_and_each_start_the_clock_state(tmp_path):
    before_utc, before_mono = datetime.now(timezone.utc), time.monotonic()
    j = Journal(tmp_path / JOURNAL_NAME, "t/dealer", "dealer")
    j.write_step([Record("in", "console", {"button": "open_bets"}, round=1),
                  Record("out", "alarm", {"body": {"detail": "x"}}, seq=1, round=1)])
    after_utc, after_mono = datetime.now(timezone.utc), time.monotonic()
    j.close()
    j = Journal(tmp_path / JOURNAL_NAME, "t/dealer", "dealer")      # a second start
    records = list(j.records())
    starts = j.starts()
    j.close()
    assert {r.utc for r in records} == {records[0].utc}              # one step, one time
    assert before_utc <= datetime.fromisoformat(records[0].utc) <= after_utc
    assert before_mono <= records[0].mono <= after_mono
    assert len(starts) == 2 and starts[1]["after_step"] == 1
    assert {s["clock"] for s in starts} <= {"synchronized", "unsynchronized", "unknown"}


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    state = tmp_path_factory.mktemp("table")
    d = driver(state)
    play(d, 3)
    d.table.close()
    return state


def round_times(state) -> dict[int, str]:
    j = open_readonly(state / "dealer" / JOURNAL_NAME)
    try:
        return {r.round: r.utc for r in j.history() if r.dir == "out" and r.kind == "round_open"}
    finally:
        j.close()


def test_show_prints_the_time_and_the_clock_state(played, capsys):
    assert main(["journal", "show", str(played / "dealer")]) == 0
    out = capsys.readouterr().out
    opened = round_times(played)
    for rnd, utc in opened.items():
        assert f"{utc[:23]}Z round {rnd} —" in out
    assert "started (firmware" in out and "clock " in out


def test_show_filters_by_time_range(played, capsys):
    opened = round_times(played)
    since = opened[2]
    until = (datetime.fromisoformat(opened[3]) - timedelta(microseconds=1)).isoformat()
    assert main(["journal", "show", str(played / "dealer"), "--since", since, "--until", until]) == 0
    out = capsys.readouterr().out
    assert "round 2 —" in out
    assert "round 1 —" not in out and "round 3 —" not in out
    with pytest.raises(SystemExit) as exited:
        main(["journal", "show", str(played), "--since", "yesterday"])
    assert exited.value.code == 2 and "--since: 'yesterday' is not a time" in capsys.readouterr().err


def test_show_filters_by_box(played, capsys):
    assert main(["journal", "show", str(played / "dealer"), "--round", "1", "--box", "2"]) == 0
    out = capsys.readouterr().out
    assert "  box 2:" in out
    assert not any(line.startswith(f"  box {b}:") for line in out.splitlines() for b in (1, 3, 4, 5, 6, 7))


def test_a_seat_recalls_its_own_rounds(played, capsys):
    assert main(["journal", "show", str(played / "seat-5"), "--round", "2"]) == 0
    out = capsys.readouterr().out
    assert "== seat t/seat-5" in out
    assert "round 2 —" in out and "card " in out
    assert "seat 5: offer" in out                  # what the seat itself sent
    assert "  box 5:" in out                        # its settlement, its box only
    assert "  box 1:" not in out and "box 1: main" not in out


def test_a_journal_older_than_times_recovers_and_shows(tmp_path, capsys):
    """A schema-1 journal (as firmware before times wrote it): no time columns, no starts."""
    unit_dir = tmp_path / "dealer"
    unit_dir.mkdir()
    db = sqlite3.connect(unit_dir / JOURNAL_NAME)
    db.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE record (id INTEGER PRIMARY KEY, step INTEGER NOT NULL, dir TEXT NOT NULL,
            kind TEXT NOT NULL, seq INTEGER, round INTEGER, body TEXT NOT NULL,
            delivered INTEGER NOT NULL DEFAULT 0);
        INSERT INTO meta VALUES ('unit', 't/dealer'), ('role', 'dealer'), ('schema', '1');
        INSERT INTO record (step, dir, kind, seq, round, body, delivered) VALUES
            (1, 'in', 'console', NULL, 1, '{"button":"open_bets"}', 0),
            (1, 'out', 'round_open', 1, 1,
             '{"body":{"round":1,"profile":"p","decks":6,"stream_seq":1,"shoe_number":1}}', 1);
    """)
    db.commit()
    db.close()
    assert main(["journal", "show", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "(no time)" in out and "round 1 —" in out
    j = Journal(unit_dir / JOURNAL_NAME, "t/dealer", "dealer")       # the unit starts on it
    assert [r.utc for r in j.records()] == [None, None]
    j.write_step([Record("in", "console", {"button": "close_bets"}, round=1)])
    assert [r.utc is not None for r in j.records()] == [False, False, True]
    assert j.last_step == 2
    j.close()
    assert main(["journal", "show", str(tmp_path), "--round", "1"]) == 0
    assert "(no time)" in capsys.readouterr().out
