"""The jackpot controller's ingest on SQLite and on PostgreSQL (a throwaway cluster, as
the tests start one), three runs each, min/median/max:

- direct: reports/s into :meth:`JackpotController.ingest_batch`, group commit of 512 (what
  the service does), a seat's wager and the dealer's record of its round, each booked;
- through the broker (``--broker``): 4 seats' publishers and a dealer's in another process
  -> mosquitto (2,000 retained messages on it) -> :class:`JackpotService` -> the store.

``--profile`` prints the controller's biggest costs (cProfile, direct ingest) instead;
with ``--broker``, of its two threads in one run through the broker (paho's network thread,
which queues each report, and the ingest thread, which stores and acknowledges them).

    .venv/bin/python bench/bench_ingest.py [--burst 20000] [--broker] [--profile]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_mqtt import dealer_payloads, ingest_via_broker, payloads, retain  # noqa: E402

from firmware.jackpot.controller import JackpotController, report  # noqa: E402
from firmware.jackpot.database import open_store  # noqa: E402
from tests.jackpot.postgres import PgCluster  # noqa: E402
from tests.link.broker import Broker  # noqa: E402
from tests.link.helpers import POOL  # noqa: E402

BATCH = 512


def messages(n: int) -> list[tuple[str, bytes]]:
    rounds = n // 2
    return [m for pair in zip(payloads("bench/seat-1", rounds), dealer_payloads("bench", rounds, 1), strict=True)
            for m in pair]


def store(kind: str, tmp: Path, pg: PgCluster | None):
    if kind == "sqlite":
        return open_store(tmp / f"direct-{time.monotonic_ns()}.db")
    assert pg is not None
    pg.reset()
    return open_store("unused", pg.url, pg.password_file)


CPU: dict[str, list[float]] = {}      # the controller's CPU per report (µs) of each direct run


def ingest_direct(kind: str, n: int, tmp: Path, pg: PgCluster | None, profile: bool = False) -> float:
    ctl = JackpotController(store(kind, tmp, pg), [POOL])
    msgs = messages(n)
    prof = cProfile.Profile() if profile else None
    c0 = time.process_time()
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    for i in range(0, len(msgs), BATCH):
        ctl.ingest_batch(msgs[i:i + BATCH])
    if prof:
        prof.disable()
    dt = time.perf_counter() - t0
    CPU.setdefault(kind, []).append((time.process_time() - c0) / len(msgs) * 1e6)
    assert report(ctl.db)["pools"]["main"]["meters"]["wagers"] == n // 2
    ctl.close()
    if prof:
        print(f"== {kind}: {len(msgs) / dt:.0f} reports/s under the profiler")
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    return len(msgs) / dt


def spread(xs: list[float]) -> str:
    return f"{min(xs):8.0f} {statistics.median(xs):8.0f} {max(xs):8.0f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--burst", type=int, default=20000, help="reports per run (default 20000)")
    ap.add_argument("--broker", action="store_true", help="also through mosquitto (2,000 retained)")
    ap.add_argument("--profile", action="store_true", help="profile the direct ingest instead")
    ap.add_argument("--only", choices=("sqlite", "postgresql"), help="one store only")
    args = ap.parse_args()
    kinds = [args.only] if args.only else ["sqlite", "postgresql"]
    pg = PgCluster().start() if "postgresql" in kinds else None
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            if args.profile and args.broker:
                profile_via_broker(kinds, args.burst, tmp, pg)
                return
            if args.profile:
                for kind in kinds:
                    ingest_direct(kind, args.burst, tmp, pg, profile=True)
                return
            figures: dict[str, list[float]] = {}
            for _ in range(args.runs):
                for kind in kinds:
                    figures.setdefault(f"direct {kind}", []).append(ingest_direct(kind, args.burst, tmp, pg))
            if args.broker:
                broker = Broker(tmp / "mosquitto").start()
                try:
                    retain(broker.url, 2000)
                    for _ in range(args.runs):
                        # the baseline: what the publishers and the broker allow, into a
                        # subscriber on the controller's session that only counts
                        with broker_cpu(broker, "bare", args.burst):
                            figures.setdefault("broker bare", []).append(
                                ingest_via_broker(broker.url, args.burst, 4, tmp, bare=True)[0])
                        for kind in kinds:
                            with broker_cpu(broker, kind, args.burst):
                                figures.setdefault(f"broker {kind}", []).append(
                                    ingest_via_broker_on(kind, broker.url, args.burst, tmp, pg))
                finally:
                    broker.stop()
    finally:
        if pg is not None:
            pg.remove()
    print(f"reports/s ({args.burst} a run, group commit {BATCH}; min median max of {args.runs}):")
    for name, xs in figures.items():
        print(f"  {name:20s} {spread(xs)}")
    print("the controller's CPU per report (µs; its process, not the database server's nor the broker's):")
    for kind, xs in CPU.items():
        print(f"  {kind:20s} {spread(xs)}")
    if BROKER_CPU:
        print("mosquitto's CPU per report (µs; the publishers' PUBLISH in, the PUBLISH out and its PUBACK):")
        for kind, xs in BROKER_CPU.items():
            print(f"  {kind:20s} {spread(xs)}")


BROKER_CPU: dict[str, list[float]] = {}


@contextlib.contextmanager
def broker_cpu(broker: Broker, kind: str, n: int) -> Iterator[None]:
    """mosquitto's CPU (user + system, from /proc) over one run, per report."""
    def ticks() -> int:
        fields = Path(f"/proc/{broker.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    t0 = ticks()
    yield
    BROKER_CPU.setdefault(kind, []).append((ticks() - t0) / os.sysconf("SC_CLK_TCK") / (n // 4 * 5) * 1e6)


def ingest_via_broker_on(kind: str, url: str, n: int, tmp: Path, pg: PgCluster | None) -> float:
    """bench_mqtt's run through the broker, with the controller on ``kind``."""
    import bench_mqtt

    made = store(kind, tmp, pg)
    saved = bench_mqtt.controller
    bench_mqtt.controller = lambda _path: JackpotController(made, [POOL])
    c0 = time.process_time()
    try:
        rate = ingest_via_broker(url, n, 4, tmp)[0]
    finally:
        bench_mqtt.controller = saved
    # this process is the controller (paho's thread and the ingest thread; the publishers
    # are another process): its CPU per report, start and stop included
    CPU.setdefault(f"{kind} via the broker", []).append((time.process_time() - c0) / (n // 4 * 5) * 1e6)
    return rate


PROFILED = ("paho-mqtt-client-betbox-jackpot", "jackpot-ingest")   # the controller's threads


def profile_via_broker(kinds: list[str], n: int, tmp: Path, pg: PgCluster | None) -> None:
    """One run through the broker per store with the controller's paho and ingest threads
    under cProfile (one profile each: cProfile follows the thread it runs in)."""
    profiles: dict[str, cProfile.Profile] = {}
    plain = threading.Thread.run

    def run(self: threading.Thread) -> None:
        if not self.name.startswith(PROFILED):
            return plain(self)
        prof = profiles[self.name.split("-")[0]] = cProfile.Profile()
        prof.runcall(plain, self)

    broker = Broker(tmp / "mosquitto").start()
    threading.Thread.run = run                  # type: ignore[method-assign]
    try:
        retain(broker.url, 2000)
        for kind in kinds:
            profiles.clear()
            rate = ingest_via_broker_on(kind, broker.url, n, tmp, pg)
            for name, prof in profiles.items():
                print(f"== {kind} through the broker, {rate:.0f} reports/s under the profiler: thread {name}")
                pstats.Stats(prof).sort_stats("tottime").print_stats(14)
    finally:
        threading.Thread.run = plain            # type: ignore[method-assign]
        broker.stop()


if __name__ == "__main__":
    main()
