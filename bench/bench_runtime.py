"""Runtime figures: whole-table rounds per second and CPU per round (the whole in-process
table: dealer, seats, their journals and views), card-to-every-seat latency (p50/p99),
journal steps per second beside a bare SQLite commit, RSS of a seat unit.

    python3 bench/bench_runtime.py [--rounds N] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from firmware.engine.profile import load_profile  # noqa: E402
from firmware.runtime import seatview  # noqa: E402
from firmware.runtime.journal import Journal, Record  # noqa: E402
from firmware.sim.driver import TableDriver  # noqa: E402
from firmware.sim.table import TableSpec  # noqa: E402


def table_rounds(where: Path, rounds: int) -> tuple[float, list[float], float, float]:
    driver = TableDriver.create(TableSpec("b", load_profile("rws-blackjack"), seed=1, state_dir=where))
    t = driver.table
    latencies: list[float] = []
    deal = t.shoe.deal

    def timed_deal(card: str) -> None:
        start = time.perf_counter()
        deal(card)
        t.settle()          # the dealer journals and publishes; every seat journals and updates its view
        latencies.append(time.perf_counter() - start)

    t.shoe.deal = timed_deal
    start, cpu, builds = time.perf_counter(), time.process_time(), seatview.builds
    for _ in range(rounds):
        driver.play_round()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    builds = seatview.builds - builds
    t.close()
    return rounds / elapsed, latencies, cpu / rounds, builds / rounds


def journal_rate(where: Path, n: int = 2000) -> tuple[float, float]:
    j = Journal(where / "j" / "journal.db", "bench", "seat")
    body = {"kind": "event", "body": {"round": 1, "stream_seq": 1, "event": {"type": "card", "card": "AS"}}}
    start = time.perf_counter()
    for i in range(n):
        j.write_step([Record("in", "msg", body, round=1), Record("out", "result", body, seq=i + 1, round=1)])
    steps = n / (time.perf_counter() - start)
    j.close()
    db = sqlite3.connect(where / "bare.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE t (x TEXT)")
    start = time.perf_counter()
    for _ in range(n):
        db.execute("BEGIN")
        db.execute("INSERT INTO t VALUES (?)", ("x",))
        db.execute("COMMIT")
    bare = n / (time.perf_counter() - start)
    db.close()
    return steps, bare


def seat_rss(where: Path) -> float:
    """Peak RSS (MiB) of a process holding one seat unit that has played rounds."""
    import subprocess
    code = f"""
import resource, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from pathlib import Path
from firmware.engine.profile import load_profile
from firmware.chips import ChipRegistry
from firmware.runtime.bus import InProcessBus
from firmware.runtime.journal import Journal
from firmware.runtime.seat import SeatUnit
from hal.mock import MockChipReader, MockLamps
from firmware.sim import chipset
reg = chipset.registry(1, 5)
lamps = MockLamps("l", ["progressive", "bets_locked"]); lamps.start(lambda e: None)
seat = SeatUnit("s", "t", 1, InProcessBus(), Journal(Path({str(where)!r}) / "seat-rss" / "journal.db", "s", "seat"),
                reg, ["main", "insurance", "player_pair", "under_13", "over_13"], lamps)
seat.recover(); seat.start()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--dir", help="where journals go (default: a temporary directory on /tmp)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        where = Path(tmp)
        rps, lat, cpu, builds = table_rounds(where / "table", args.rounds)
        steps, bare = journal_rate(where)
        rss = seat_rss(where)
    q = statistics.quantiles(lat, n=100)
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, journals in {args.dir or tempfile.gettempdir()}")
    print(f"whole table (dealer + 7 seats, rws-blackjack): {rps:.1f} rounds/s over {args.rounds} rounds, "
          f"CPU {cpu * 1e3:.1f} ms a round (all threads; load average {os.getloadavg()[0]:.2f})")
    # issue #18: the seat view is built when read (screen, reporter); before, after every
    # step of every seat: 237 builds a round here (commit 43c8f64)
    print(f"seat views built a round with no screen reading them: {builds:.1f}")
    print(f"card at the shoe port -> every seat updated: p50 {q[49] * 1e3:.2f} ms, p99 {q[98] * 1e3:.2f} ms "
          f"({len(lat)} cards)")
    print(f"journal steps (in + out, one transaction, FULL): {steps:.0f}/s; bare SQLite commit: {bare:.0f}/s")
    print(f"seat unit process peak RSS: {rss:.1f} MiB")


if __name__ == "__main__":
    main()
