"""Power cuts: a table process killed with SIGKILL at many points of a round, restarted,
settles every round exactly as a table that was never interrupted; a torn last write too."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import dealer_results, seat_results

pytestmark = pytest.mark.slow          # kills processes and waits out their restart

ROUNDS = 3
PROFILE = "rws-blackjack"
ROOT = Path(__file__).resolve().parents[2]


def child(state_dir: Path, *extra: object, rounds: int = ROUNDS) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tests.runtime.crashchild", str(state_dir), PROFILE,
                           str(rounds), *map(str, extra)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    where = tmp_path_factory.mktemp("reference")
    done = child(where)
    assert done.returncode == 0, done.stderr
    return {"dealer": dealer_results(where),
            "seats": {b: seat_results(where, b) for b in range(1, 8)}, "dir": where}


def writes_in(where: Path) -> int:
    import sqlite3
    return sum(sqlite3.connect(p).execute("SELECT COUNT(DISTINCT step) FROM record").fetchone()[0]
               for p in where.rglob("journal.db"))


def assert_same(where: Path, reference: dict) -> None:
    assert dealer_results(where) == reference["dealer"]
    for box in range(1, 8):
        assert seat_results(where, box) == reference["seats"][box], box


def test_reference_is_a_real_game(reference):
    assert sorted(reference["dealer"]) == [1, 2, 3]
    assert writes_in(reference["dir"]) > 150


KILL_POINTS = [3, 9, 17, 30, 44, 61, 75, 90, 104, 121, 139, 160]


@pytest.mark.parametrize("mode", ["before", "after"])
@pytest.mark.parametrize("kill_at", KILL_POINTS)
def test_killed_and_restarted_settles_identically(tmp_path, reference, kill_at, mode):
    crashed = child(tmp_path, kill_at, mode)
    assert crashed.returncode == -signal.SIGKILL
    resumed = child(tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert_same(tmp_path, reference)


def test_killed_at_random_instants_from_outside(tmp_path, reference):
    rng = random.Random(3)
    for _ in range(4):
        proc = subprocess.Popen([sys.executable, "-m", "tests.runtime.crashchild", str(tmp_path), PROFILE,
                                 str(ROUNDS)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.3 + rng.random() * 0.6)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    resumed = child(tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert_same(tmp_path, reference)


def test_a_torn_last_write_is_recovered(tmp_path, reference):
    crashed = child(tmp_path, 80, "after")
    assert crashed.returncode == -signal.SIGKILL
    wal = tmp_path / "dealer" / "journal.db-wal"
    size = wal.stat().st_size
    assert size > 4096
    with open(wal, "r+b") as f:          # the last frame only half on the disk
        f.truncate(size - 1000)
    with open(wal, "ab") as f:           # and garbage after it
        f.write(os.urandom(517))
    resumed = child(tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert_same(tmp_path, reference)
