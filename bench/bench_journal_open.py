"""How long a unit's journal takes to open with and without SQLite's ``PRAGMA quick_check``
(run at every open of a unit's journal): a journal of N steps (an input and two outputs
each, bodies the size of a seat's), opened with its pages in the page cache (warm) and
evicted from it (cold: ``posix_fadvise(DONTNEED)``, the nearest to a Pi's first read of its
SD card here).

    python3 bench/bench_journal_open.py [--steps 50000] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from firmware.runtime import journal as journal_module  # noqa: E402
from firmware.runtime.journal import JOURNAL_NAME, Journal  # noqa: E402

UNIT, ROLE = "t/seat-1", "seat"


def build(path: Path, steps: int) -> None:
    """A journal of ``steps`` steps, written in bulk (the journal's own schema and meta)."""
    Journal(path, UNIT, ROLE).close()
    db = sqlite3.connect(path)
    body_in = {"kind": "reader", "body": {"cycle": 0, "tags": [f"E0040{n:08X}" for n in range(6)]}}
    body_out = {"topic": "betbox/v1/table/t/box/1/up", "kind": "offer",
                "body": {"box": 1, "round": 0, "bets": {"main": "25", "pair": "5"}}}
    rows = []
    for step in range(1, steps + 1):
        rnd = step // 20 + 1
        rows.append((step, "in", "reader", None, rnd, json.dumps(body_in), "2026-01-01T00:00:00Z", 0.0))
        for k in range(2):
            rows.append((step, "out", "offer", 2 * step + k, rnd, json.dumps(body_out), "2026-01-01T00:00:00Z", 0.0))
    db.executemany("INSERT INTO record (step, dir, kind, seq, round, body, utc, mono) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   rows)
    db.commit()
    db.close()


def evict(path: Path) -> None:
    for p in (path, Path(str(path) + "-wal")):
        if p.exists():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def open_time(path: Path, cold: bool, check: bool) -> float:
    real = journal_module.check_integrity
    if not check:
        journal_module.check_integrity = lambda *a: None   # type: ignore[assignment]
    try:
        if cold:
            evict(path)
        t0 = time.perf_counter()
        Journal(path, UNIT, ROLE).close()
        return time.perf_counter() - t0
    finally:
        journal_module.check_integrity = real


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        path = Path(d) / JOURNAL_NAME
        build(path, a.steps)
        print(f"journal: {a.steps} steps, {path.stat().st_size / 1e6:.1f} MB")
        for cold in (False, True):
            for check in (False, True):
                times = [open_time(path, cold, check) for _ in range(a.repeat)]
                print(f"open {'cold' if cold else 'warm'} {'with' if check else 'without'} quick_check: "
                      f"median {statistics.median(times) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
