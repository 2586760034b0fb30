"""Journal rotation: closed rounds go to segments ``journal-<first>-<last>.db``, the active
file starts from a checkpoint, recovery stays exact, the recall spans segments, and
``keep_segments`` bounds what is kept."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from firmware.commands import journal as journal_cmd
from firmware.engine.profile import load_profile
from firmware.runtime import journal as journal_mod
from firmware.runtime.journal import JOURNAL_NAME, open_readonly, segments
from firmware.sim import chipset
from firmware.sim.driver import TableDriver
from firmware.sim.table import InProcessTable, TableSpec, seat_spots

PROFILE = "rws-blackjack-switch"     # side bets, progressive, two hands: the most state


def driver(state_dir: Path, rotate: int | None = None, keep: int | None = None) -> TableDriver:
    spec = TableSpec("t", load_profile(PROFILE), seed=21, state_dir=state_dir)
    table = InProcessTable(spec, chipset.registry(spec.boxes, len(seat_spots(spec.profile))))
    for unit in table.units:
        unit.journal.rotate_rounds = rotate
        unit.journal.keep_segments = keep
    d = TableDriver(table, spec.seed)
    d.boot()
    return d


def play(d: TableDriver, rounds: int) -> None:
    for _ in range(rounds):
        d.play_round()


def results(state_dir: Path, unit: str, kind: str) -> dict[int, object]:
    j = open_readonly(state_dir / unit / JOURNAL_NAME)
    try:
        return {r.body["body"]["round"]: r.body["body"]["settlement"]
                for r in j.history() if r.dir == "out" and r.kind == kind}
    finally:
        j.close()


def stream(state_dir: Path) -> list[tuple]:
    """The game in the dealer's stream: every round's opening, events and result (a restart
    adds its own ``dealer_boot`` and shifts the numbering, nothing else)."""
    j = open_readonly(state_dir / "dealer" / JOURNAL_NAME)
    try:
        out = []
        for r in j.history():
            if r.dir == "out" and r.body["topic"].endswith("/stream") and r.kind != "dealer_boot":
                body = {k: v for k, v in r.body["body"].items() if k != "stream_seq"}
                out.append((r.kind, json.dumps(body, sort_keys=True)))
        return out
    finally:
        j.close()


@pytest.fixture(scope="module")
def twin(tmp_path_factory) -> Path:
    """The same table never rotated: what every rotated run must match."""
    where = tmp_path_factory.mktemp("twin")
    d = driver(where)
    play(d, 14)
    d.table.close()
    return where


def test_a_rotated_table_plays_and_records_exactly_as_an_unrotated_one(tmp_path, twin):
    d = driver(tmp_path, rotate=3)
    play(d, 14)
    d.table.close()
    assert len(segments(tmp_path / "dealer" / JOURNAL_NAME)) == 4      # rounds 1-3, 4-6, 7-9, 10-12
    assert [p.name for p in segments(tmp_path / "dealer" / JOURNAL_NAME)][0] == "journal-000001-000003.db"
    assert stream(tmp_path) == stream(twin)                  # every stream message, in order
    assert results(tmp_path, "dealer", "round_result") == results(twin, "dealer", "round_result")
    for box in range(1, 8):
        assert results(tmp_path, f"seat-{box}", "result") == results(twin, f"seat-{box}", "result")


def test_recovery_from_a_checkpoint_is_exact(tmp_path, twin):
    d = driver(tmp_path, rotate=3)
    play(d, 8)
    d.table.close()                                          # a power cut between rounds
    active = open_readonly(tmp_path / "dealer" / JOURNAL_NAME)
    assert active.checkpoint() is not None and active.first_round is not None
    active.close()
    again = driver(tmp_path, rotate=3)                       # restores, replays, carries on
    assert 0 < again.table.dealer.replayed_steps
    play(again, 6)
    again.table.close()
    assert stream(tmp_path) == stream(twin)
    for box in range(1, 8):
        assert results(tmp_path, f"seat-{box}", "result") == results(twin, f"seat-{box}", "result")


def test_retention_keeps_the_newest_segments_and_the_active_file_stays_small(tmp_path):
    d = driver(tmp_path, rotate=2, keep=2)
    play(d, 12)
    d.table.close()
    for unit in ("dealer", "seat-1"):
        kept = segments(tmp_path / unit / JOURNAL_NAME)
        assert len(kept) == 2
        j = open_readonly(tmp_path / unit / JOURNAL_NAME)
        rounds = {r.round for r in j.records() if r.round is not None}
        kept_rounds = {r.round for r in j.history() if r.round is not None}
        j.close()
        assert len(rounds) <= 2                              # the active file: bounded
        assert min(kept_rounds) >= 12 - 2 * 2 - 1             # older rounds are gone


def test_recall_and_stats_span_segments(tmp_path, twin, capsys):
    d = driver(tmp_path, rotate=3)
    play(d, 14)
    d.table.close()
    args = journal_cmd.argparse.Namespace(dir=str(tmp_path), round=2)
    assert journal_cmd.run_show(args) == 0                   # round 2 lives in a segment
    shown = capsys.readouterr().out
    assert "round 2 —" in shown and "dealer:" in shown
    args = journal_cmd.argparse.Namespace(dir=str(tmp_path / "dealer"), json=True)
    assert journal_cmd.run_stats(args) == 0
    rotated = json.loads(capsys.readouterr().out)[0]
    twin_journal = open_readonly(twin / "dealer" / JOURNAL_NAME)
    plain = twin_journal.stats()
    twin_journal.close()
    assert rotated["segments"] == 4
    for key in ("emitted", "highest_seq", "undelivered"):
        assert rotated[key] == plain[key], key


@pytest.mark.parametrize("cut_after", [1, 2], ids=["before-the-old-file-moved", "between-the-renames"])
def test_a_cut_during_rotation_loses_nothing(tmp_path, twin, monkeypatch, cut_after):
    d = driver(tmp_path, rotate=3)
    play(d, 2)
    real = os.replace
    calls = {"n": 0}

    def cut(src, dst):
        calls["n"] += 1
        if calls["n"] == cut_after:
            raise KeyboardInterrupt("power cut")            # stands for SIGKILL at this instant
        return real(src, dst)

    monkeypatch.setattr(journal_mod.os, "replace", cut)
    with pytest.raises(KeyboardInterrupt):
        play(d, 1)                                           # round 3 ends: a unit rotates
    monkeypatch.setattr(journal_mod.os, "replace", real)
    for unit in d.table.units:
        unit.journal.close()            # (a power cut would leave the WAL; a close folds it in)
    half_done = [u for u in tmp_path.iterdir() if (u / (JOURNAL_NAME + ".new")).exists()]
    assert len(half_done) == 1                               # the cut left one rotation half-done
    assert (half_done[0] / JOURNAL_NAME).exists() == (cut_after == 1)
    again = driver(tmp_path, rotate=3)
    play(again, 11)
    again.table.close()
    assert stream(tmp_path) == stream(twin)
    assert results(tmp_path, "dealer", "round_result") == results(twin, "dealer", "round_result")
