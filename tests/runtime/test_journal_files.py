"""The journal's files: recall never writes (issue #12.3), a journal that cannot be opened
is refused naming the file (#11.5), and journals are private (#12.9)."""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import stat
import subprocess

import pytest

from firmware.commands import journal as journal_cmd
from firmware.runtime import journal as journal_mod
from firmware.runtime.journal import JOURNAL_NAME, NEW_SUFFIX, Journal, JournalError, Record, open_readonly, segments

UNIT, ROLE = "t1/dealer", "dealer"


def play_rounds(j: Journal, first: int, last: int) -> None:
    """Steps the way the dealer journals them: an input and the round's messages."""
    for rnd in range(first, last + 1):
        for kind, body in (("round_open", {"round": rnd, "profile": "p", "decks": 6, "stream_seq": 1,
                                           "shoe_number": 1}),
                           ("round_result", {"settlement": {"dealer": {"cards": [], "total": 0,
                                                                       "blackjack": False},
                                                            "boxes": {}}})):
            seq = j.last_seq + 1
            records = [Record("in", "console", {"button": kind}, round=rnd),
                       Record("out", kind, {"kind": kind, "body": body}, seq=seq, round=rnd)]
            j.write_step(records)
            j.mark_delivered([seq])


def files(directory) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def cut_rotation(tmp_path, monkeypatch, cut_after: int) -> Journal:
    """A rotation cut short at its first (1) or second (2) rename, the unit still alive."""
    j = Journal(tmp_path / JOURNAL_NAME, UNIT, ROLE)
    play_rounds(j, 1, 3)
    real = os.replace
    calls = {"n": 0}

    def replace(src, dst):
        calls["n"] += 1
        if calls["n"] == cut_after:
            raise KeyboardInterrupt("cut")
        return real(src, dst)

    monkeypatch.setattr(journal_mod.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        j.rotate({"format": 2, "state": {}})
    monkeypatch.setattr(journal_mod.os, "replace", real)
    return j


@pytest.mark.parametrize("cut_after", [1, 2], ids=["new-file-written", "between-the-renames"])
def test_recall_during_a_rotation_writes_nothing(tmp_path, monkeypatch, capsys, cut_after):
    cut_rotation(tmp_path, monkeypatch, cut_after)
    assert (tmp_path / (JOURNAL_NAME + NEW_SUFFIX)).exists()
    before = files(tmp_path)
    assert journal_cmd.run_stats(argparse.Namespace(dir=str(tmp_path), json=True)) == 0
    assert journal_cmd.run_show(argparse.Namespace(dir=str(tmp_path), round=None, since=None, until=None,
                                                   box=None)) == 0
    shown = capsys.readouterr().out
    assert files(tmp_path) == before              # the unit's new active file is still there
    assert "round 1 —" in shown and "round 3 —" in shown


def test_a_unit_whose_journal_is_missing_beside_its_segments_does_not_start(tmp_path):
    j = Journal(tmp_path / JOURNAL_NAME, UNIT, ROLE)
    play_rounds(j, 1, 3)
    segment = j.rotate({"format": 2, "state": {}})
    play_rounds(j, 4, 4)
    j.close()
    for p in tmp_path.glob(JOURNAL_NAME + "*"):
        p.unlink()                                 # the active file lost
    with pytest.raises(JournalError, match=segment.name) as err:
        Journal(tmp_path / JOURNAL_NAME, UNIT, ROLE)
    assert "does not start empty" in str(err.value)
    assert not (tmp_path / JOURNAL_NAME).exists()  # nothing created in its place
    assert segments(tmp_path / JOURNAL_NAME) == [segment]


@pytest.mark.parametrize("copied_after", [0, 3], ids=["never-rotated", "rotated-once"])
def test_a_journal_older_than_its_newest_segment_is_refused(tmp_path, copied_after):
    """An older copy of journal.db put back beside the segments its unit archived since
    (a restore, a card swapped): the unit would start from a state rounds behind, silently
    (and fail at its next rotation: that segment exists). The newest segment names it."""
    j = Journal(tmp_path / JOURNAL_NAME, UNIT, ROLE)
    if copied_after:
        play_rounds(j, 1, copied_after)
        j.rotate({"format": 2, "state": {}})
    play_rounds(j, copied_after + 1, copied_after + 1)
    j.close()
    old = tmp_path / "old"
    old.mkdir()
    shutil.copy2(tmp_path / JOURNAL_NAME, old / JOURNAL_NAME)
    j = Journal(tmp_path / JOURNAL_NAME, UNIT, ROLE)
    play_rounds(j, copied_after + 2, copied_after + 3)
    newest = j.rotate({"format": 2, "state": {}})
    play_rounds(j, copied_after + 4, copied_after + 4)
    j.close()
    shutil.copy2(old / JOURNAL_NAME, tmp_path / JOURNAL_NAME)
    with pytest.raises(JournalError, match=newest.name) as err:
        Journal(tmp_path / JOURNAL_NAME, UNIT, ROLE)
    assert "older" in str(err.value)
    assert (old / JOURNAL_NAME).read_bytes() == (tmp_path / JOURNAL_NAME).read_bytes()   # nothing written
    j = Journal(tmp_path / "fresh" / JOURNAL_NAME, UNIT, ROLE)   # a unit's own newest file starts
    play_rounds(j, 1, 2)
    j.rotate({"format": 2, "state": {}})
    j.close()
    Journal(tmp_path / "fresh" / JOURNAL_NAME, UNIT, ROLE).close()


def test_recall_reads_a_journal_on_read_only_media(tmp_path, capsys):
    unit_dir = tmp_path / "dealer"
    j = Journal(unit_dir / JOURNAL_NAME, UNIT, ROLE)
    play_rounds(j, 1, 2)
    j.close()
    media = tmp_path / "media"
    media.mkdir()
    try:
        subprocess.run(["mount", "--bind", str(unit_dir), str(media)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"no bind mount here: {exc}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(media)], check=True, capture_output=True)
        with pytest.raises(OSError):
            (media / "probe").write_text("x")      # the medium is read-only indeed
        j = open_readonly(media / JOURNAL_NAME)
        assert [r.round for r in j.history() if r.kind == "round_open"] == [1, 2]
        j.close()
        assert journal_cmd.run_show(argparse.Namespace(dir=str(media), round=2, since=None, until=None,
                                                       box=None)) == 0
        assert "round 2 —" in capsys.readouterr().out
    finally:
        subprocess.run(["umount", "-l", str(media)], check=False, capture_output=True)


def test_a_journal_whose_wal_was_lost_is_refused(tmp_path):
    j = Journal(tmp_path / "unit" / JOURNAL_NAME, UNIT, ROLE)
    play_rounds(j, 1, 2)
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(tmp_path / "unit" / JOURNAL_NAME, copy / JOURNAL_NAME)   # the file without its WAL
    with pytest.raises(JournalError, match="write-ahead log journal.db-wal is missing") as err:
        Journal(copy / JOURNAL_NAME, UNIT, ROLE)
    assert str(copy / JOURNAL_NAME) in str(err.value)
    j.close()                                      # closed cleanly: the WAL is folded in, gone
    assert not (tmp_path / "unit" / (JOURNAL_NAME + "-wal")).exists()
    again = Journal(tmp_path / "unit" / JOURNAL_NAME, UNIT, ROLE)
    assert again.last_step == 4
    again.close()


def test_a_journal_dropped_unclosed_reopens(tmp_path):
    j = Journal(tmp_path / JOURNAL_NAME, UNIT, ROLE)
    play_rounds(j, 1, 1)
    del j                                          # (its connection closed by the collector)
    again = Journal(tmp_path / JOURNAL_NAME, UNIT, ROLE)
    assert again.last_step == 2
    again.close()


@pytest.mark.parametrize("damage", ["truncated", "garbled"])
def test_a_damaged_journal_is_refused_naming_the_file(tmp_path, damage):
    path = tmp_path / JOURNAL_NAME
    j = Journal(path, UNIT, ROLE)
    for n in range(200):                           # a few pages of records
        j.write_step([Record("in", "console", {"button": "x" * 200, "n": n}, round=1)])
    j.close()
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        data = data[:len(data) // 2]
    else:
        page = 4096
        data[2 * page:3 * page] = b"\xa5" * page   # a page of garbage
    path.write_bytes(bytes(data))
    with pytest.raises(JournalError, match=str(path)):
        Journal(path, UNIT, ROLE)


@pytest.mark.parametrize("sql", ["UPDATE record SET seq = 'x' WHERE seq = 2", "UPDATE record SET step = 'x' WHERE step = 1",
                                 "INSERT OR REPLACE INTO meta VALUES ('base_seq', '1e5')"])
def test_a_journal_whose_numbers_are_texts_is_refused_naming_the_file(tmp_path, sql):
    """SQLite keeps any type in any column: a text where a step or sequence number belongs
    ended betbox run as a fault in betbox (exit 3, TypeError comparing int and str)."""
    path = tmp_path / JOURNAL_NAME
    j = Journal(path, UNIT, ROLE)
    play_rounds(j, 1, 2)
    j.close()
    db = sqlite3.connect(path)
    db.execute(sql)
    db.commit()
    db.close()
    with pytest.raises(JournalError, match=str(path)):
        Journal(path, UNIT, ROLE)
    with pytest.raises(JournalError, match=str(path)):
        open_readonly(path)


@pytest.mark.parametrize("sql", ["UPDATE record SET seq = 'x' WHERE seq = 2", "UPDATE record SET step = 'x' WHERE step = 1",
                                 "INSERT OR REPLACE INTO meta VALUES ('base_seq', '1e5')", None])
def test_run_check_refuses_the_journal_the_start_refuses_naming_it(tmp_path, capsys, sql):
    """``betbox run --check`` (systemd's ExecStartPre, a technician's check) said
    "configuration OK" over a journal whose step or sequence number is a text, and the start
    then refused it: the check reads the journal's marks as the start does, writing nothing."""
    from firmware.cli import main

    config = dealer_config(tmp_path)
    path = tmp_path / "dealer" / JOURNAL_NAME
    j = Journal(path, UNIT, ROLE)
    play_rounds(j, 1, 2)
    j.close()
    if sql is not None:
        db = sqlite3.connect(path)
        db.execute(sql)
        db.commit()
        db.close()
    before = path.read_bytes()
    code = main(["run", "--config", str(config), "--check"])
    out, err = capsys.readouterr()
    assert path.read_bytes() == before                                # --check never writes
    if sql is None:
        assert code == 0 and "configuration OK" in out, err
        return
    assert code == 2 and err.startswith("betbox run: ") and str(path) in err and "Traceback" not in err, err
    with pytest.raises(JournalError, match=str(path)):                # what the start says
        Journal(path, UNIT, ROLE)


def test_run_check_passes_a_journal_the_start_makes_new(tmp_path, capsys):
    """An empty file (or none) is a journal the start makes its tables in: not refused."""
    from firmware.cli import main

    config = dealer_config(tmp_path)
    (tmp_path / "dealer").mkdir()
    sqlite3.connect(tmp_path / "dealer" / JOURNAL_NAME).close()
    assert main(["run", "--config", str(config), "--check"]) == 0, capsys.readouterr().err


def test_journal_files_are_private(tmp_path):
    old = os.umask(0o022)
    try:
        j = Journal(tmp_path / JOURNAL_NAME, UNIT, ROLE)
        play_rounds(j, 1, 3)
        segment = j.rotate({"format": 2, "state": {}})
        play_rounds(j, 4, 4)
        for p in [tmp_path / JOURNAL_NAME, tmp_path / (JOURNAL_NAME + "-wal"), segment]:
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
        j.close()
    finally:
        os.umask(old)


def test_a_world_readable_journal_of_older_firmware_is_made_private(tmp_path):
    path = tmp_path / JOURNAL_NAME
    sqlite3.connect(path).close()
    path.chmod(0o644)
    Journal(path, UNIT, ROLE).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def dealer_config(tmp_path) -> "os.PathLike":
    config = tmp_path / "dealer.toml"
    config.write_text(f"""[unit]
role = "dealer"
id = "dealer"
table = "t1"
state_dir = "{tmp_path / 'dealer'}"

[game]
profile = "rws-blackjack"

[hardware.card_shoe]
backend = "mock"

[hardware.console]
backend = "mock"
""")
    return config


@pytest.mark.parametrize("fault", ["damaged", "segments-only"])
def test_betbox_run_refuses_a_journal_it_cannot_start_from_naming_it(tmp_path, fault):
    """A real ``betbox run``: a message naming the file, exit 2, no traceback, nothing made."""
    import sys
    from pathlib import Path

    state = tmp_path / "dealer"
    j = Journal(state / JOURNAL_NAME, "t1/dealer", "dealer")
    for n in range(200):
        j.write_step([Record("in", "console", {"button": "x" * 200, "n": n}, round=1)])
    if fault == "segments-only":
        j.rotate({"format": 2, "state": {}})
    j.close()
    path = state / JOURNAL_NAME
    if fault == "damaged":
        data = bytearray(path.read_bytes())
        size = int.from_bytes(data[16:18], "big")          # the file's page size (its header)
        data[2 * size:3 * size] = b"\xa5" * size          # its third page
        path.write_bytes(bytes(data))
    else:
        path.unlink()
    before = files(state)
    done = subprocess.run([sys.executable, "-m", "firmware", "run", "--config", str(dealer_config(tmp_path))],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert str(path) in done.stderr and done.stderr.startswith("betbox run: ")
    assert files(state) == before


def test_betbox_run_refuses_a_journal_whose_record_was_damaged_naming_the_step(tmp_path):
    """One bit flipped in a record's text on the card (SQLite keeps no checksum of a page's
    content: quick_check cannot see it): still JSON, a key renamed. The replay cannot read
    that step: a real ``betbox run`` refuses naming the file and the step (exit 2), never a
    traceback."""
    import sys
    from pathlib import Path

    from firmware.engine.profile import load_profile
    from firmware.sim import chipset
    from firmware.sim.driver import TableDriver
    from firmware.sim.table import InProcessTable, TableSpec, seat_spots

    spec = TableSpec("t1", load_profile("rws-blackjack"), seed=5, state_dir=tmp_path, boxes=1)
    d = TableDriver(InProcessTable(spec, chipset.registry(1, len(seat_spots(spec.profile)))), spec.seed)
    d.boot()
    d.play_round()
    d.table.close()
    path = tmp_path / "dealer" / JOURNAL_NAME
    db = sqlite3.connect(path)
    step, body = db.execute("SELECT step, body FROM record WHERE kind = 'shoe' ORDER BY id LIMIT 1").fetchone()
    db.close()
    data = path.read_bytes()
    at = data.index(body.encode()) + body.index('"signal"') + 2
    path.write_bytes(data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:])      # "signal" -> "shgnal"
    done = subprocess.run([sys.executable, "-m", "firmware", "run", "--config", str(dealer_config(tmp_path))],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("betbox run: ") and str(path) in done.stderr and f"step {step} " in done.stderr
