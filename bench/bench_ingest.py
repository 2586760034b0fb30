"""The jackpot controller's ingest on SQLite and on PostgreSQL (a throwaway cluster, as
the tests start one), three runs each, min/median/max:

- direct: reports/s into :meth:`JackpotController.ingest_batch`, group commit of 512 (what
  the service does), a seat's wager and the dealer's record of its round, each booked;
- through the broker (``--broker``): 4 seats' publishers and a dealer's in another process
  -> mosquitto (2,000 retained messages on it) -> :class:`JackpotService` -> the store. The
  publishers are a minimal MQTT publisher writing pre-built QoS 1 PUBLISH packets and
  counting the PUBACKs (:data:`RAW_PUBLISHERS`), cheap enough not to be the ceiling;
  ``--paho-publishers``: paho clients instead (bench_mqtt's, as before).

``--mix table``: a table's mix beside the wagers-only one, in the same run: 4 seats' reports as
``tests/link/helpers.seat_script`` makes them (wagers in 70% of rounds, fixed-award and meter
hits, envy bonuses, every round's result) and the dealer's ``round_progressive`` and
``round_settlement`` of the same rounds (``dealer_records``), in a table's order: per round
the seats' wagers and hits, the dealer's round_progressive, the seats' results, the dealer's
settlement. Direct, the same 4 seats (the wagers-only mix direct: 1 seat).

``--profile`` prints the controller's biggest costs (cProfile, direct ingest) instead;
with ``--broker``, of its two threads in one run through the broker (paho's network thread,
which queues each report, and the ingest thread, which stores and acknowledges them).

    .venv/bin/python bench/bench_ingest.py [--burst 20000] [--broker] [--profile] [--paho-publishers]
                                           [--mix table]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_mqtt import dealer_payloads, ingest_via_broker, payloads, retain  # noqa: E402

from firmware.jackpot import service as service_module  # noqa: E402
from firmware.jackpot.controller import JackpotController, report  # noqa: E402
from firmware.jackpot.database import open_store  # noqa: E402
from firmware.jackpot.service import JackpotService  # noqa: E402
from firmware.link import topics  # noqa: E402
from firmware.link.config import config_from_url  # noqa: E402
from tests.jackpot.postgres import PgCluster  # noqa: E402
from tests.link.broker import Broker  # noqa: E402
from tests.link.helpers import POOL, dealer_records, seat_script, wait_until  # noqa: E402
from tests.link.helpers import dealer_payloads as table_dealer_payloads  # noqa: E402

BATCH = 512
SEATS = 4           # a table's seats (the broker's wagers-only mix has 4 too)

Plan = list[tuple[int, str, bytes]]     # (publishing connection, topic, payload) in a table's order


def messages(n: int) -> list[tuple[str, bytes]]:
    rounds = n // 2
    return [m for pair in zip(payloads("bench/seat-1", rounds), dealer_payloads("bench", rounds, 1), strict=True)
            for m in pair]


def table_plan(n: int, table: str = "bench") -> tuple[Plan, int]:
    """Whole rounds of a table (``SEATS`` seats, connections 0..SEATS-1, and its dealer,
    connection SEATS) until at least ``n`` reports, in the order a table sends them, and
    how many wagers they book."""
    rounds = n // (SEATS * 2) + 1           # enough: ~1.8 reports a seat and 2 the dealer a round
    scripts = {box: seat_script(f"{table}/seat-{box}", rounds, seed=160 + box, meter_hits=True)[0]
               for box in range(1, SEATS + 1)}
    by_round: dict[int, tuple[Plan, Plan]] = {}     # round -> (up to the dealer's progressive record, the rest)
    for box, script in scripts.items():
        unit = f"{table}/seat-{box}"
        for seq, (kind, body, rnd, _key) in enumerate(script, 1):
            msg = (box - 1, topics.report_topic(unit), json.dumps(
                {"schema": 1, "id": f"{table}-s{box}-{seq:08d}", "unit": unit, "table": table, "box": box,
                 "seq": seq, "kind": kind, "round": rnd, "body": body}).encode())
            by_round.setdefault(rnd, ([], []))[kind == "round_result"].append(msg)
    records = dealer_records(scripts)
    for (topic, payload), (kind, _, rnd, _key) in zip(table_dealer_payloads(table, records), records, strict=True):
        by_round[rnd][kind == "round_settlement"].append((SEATS, topic, payload))
    plan: Plan = []
    for rnd in sorted(by_round):        # whole rounds: every claim has its counterpart
        if len(plan) >= n:
            break
        for part in by_round[rnd]:
            plan += part
    return plan, sum(b'"kind": "progressive_wager"' in p for _, _, p in plan)


def mix_messages(mix: str, n: int) -> tuple[list[tuple[str, bytes]], int]:
    """The direct bench's reports of ``mix`` and how many wagers they book."""
    if mix == "wagers":
        return messages(n), n // 2
    plan, wagers = table_plan(n)
    return [(t, p) for _, t, p in plan], wagers


def store(kind: str, tmp: Path, pg: PgCluster | None):
    if kind == "sqlite":
        return open_store(tmp / f"direct-{time.monotonic_ns()}.db")
    assert pg is not None
    pg.reset()
    return open_store("unused", pg.url, pg.password_file)


CPU: dict[str, list[float]] = {}      # the controller's CPU per report (µs) of each direct run
SERVER_CPU: dict[str, list[float]] = {}     # the PostgreSQL server's (µs) of each direct run


def pg_ticks(pg: PgCluster) -> int:
    """CPU clock ticks (user + system) of the PostgreSQL server: its postmaster and every
    process it has started (the controller's backend, the WAL writer, the checkpointer...)."""
    postmaster = int((pg.data / "postmaster.pid").read_text().split()[0])
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:                 # gone meanwhile
            continue
        if int(fields[1]) == postmaster or stat.parent.name == str(postmaster):
            total += int(fields[11]) + int(fields[12])
    return total


def ingest_direct(kind: str, n: int, tmp: Path, pg: PgCluster | None, profile: bool = False,
                  mix: str = "wagers") -> float:
    """``kind``: sqlite, postgresql (a batch at a time: ingest_batch) or postgresql-overlapped
    (the next batch worked out while the last one commits: ingest_overlapped, as the service)."""
    overlapped = kind == "postgresql-overlapped"
    ctl = JackpotController(store("postgresql" if overlapped else kind, tmp, pg), [POOL])
    msgs, wagers = mix_messages(mix, n)
    kind_mix = kind if mix == "wagers" else f"{kind} [{mix}]"
    batches = [msgs[i:i + BATCH] for i in range(0, len(msgs), BATCH)]
    prof = cProfile.Profile() if profile else None
    on_pg = kind.startswith("postgresql")
    server0 = pg_ticks(pg) if pg is not None and on_pg else 0
    sched0 = schedstat()
    c0 = time.process_time()
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    if overlapped:
        rest = iter(batches[1:])
        ctl.ingest_overlapped(batches[0], lambda: next(rest, None), lambda results: None)
    else:
        for batch in batches:
            ctl.ingest_batch(batch)
    if prof:
        prof.disable()
    dt = time.perf_counter() - t0
    CPU.setdefault(kind_mix, []).append((time.process_time() - c0) / len(msgs) * 1e6)
    ran, queued = (b - a for a, b in zip(sched0, schedstat(), strict=True))
    WAITS.setdefault(f"{kind_mix}: for a core", []).append(queued / 1e3 / len(msgs))
    WAITS.setdefault(f"{kind_mix}: for the server", []).append((dt * 1e9 - ran - queued) / 1e3 / len(msgs))
    if pg is not None and on_pg:
        ticks = pg_ticks(pg) - server0
        SERVER_CPU.setdefault(kind_mix, []).append(ticks / os.sysconf("SC_CLK_TCK") / len(msgs) * 1e6)
    booked = report(ctl.db)
    assert booked["pools"]["main"]["meters"]["wagers"] == wagers
    assert booked["integrity"]["count"] == 0 and booked["held"] == {"seat": 0, "dealer": 0}, booked["held"]
    ctl.close()
    if prof:
        print(f"== {kind_mix}: {len(msgs) / dt:.0f} reports/s under the profiler")
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    return len(msgs) / dt


WAITS: dict[str, list[float]] = {}    # the ingest thread's wall time not on a core, per report (µs)


def schedstat() -> tuple[int, int]:
    """This thread's time on a core and waiting in the run queue for one (ns, the kernel's
    schedstat): the wall time left over is time it was blocked (here: on the server)."""
    run, wait, _ = Path("/proc/thread-self/schedstat").read_text().split()
    return int(run), int(wait)


def spread(xs: list[float]) -> str:
    return f"{min(xs):8.0f} {statistics.median(xs):8.0f} {max(xs):8.0f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--burst", type=int, default=20000, help="reports per run (default 20000)")
    ap.add_argument("--broker", action="store_true", help="also through mosquitto (2,000 retained)")
    ap.add_argument("--profile", action="store_true", help="profile the direct ingest instead")
    ap.add_argument("--only", choices=("sqlite", "postgresql"), help="one store only")
    ap.add_argument("--paho-publishers", action="store_true",
                    help="through the broker, load from paho clients (bench_mqtt's) instead of raw MQTT")
    ap.add_argument("--postgres", action="store_true", help="PostgreSQL only (= --only postgresql)")
    ap.add_argument("--mix", choices=("wagers", "table"), default="wagers",
                    help="table: a table's mix (results, hits, envy, settlements) beside the wagers-only one")
    args = ap.parse_args()
    if args.mix == "table" and args.paho_publishers:
        ap.error("--paho-publishers sends the wagers-only mix")
    mixes = ["wagers"] if args.mix == "wagers" else ["wagers", "table"]
    if args.postgres:
        args.only = "postgresql"
    kinds = [args.only] if args.only else ["sqlite", "postgresql"]
    pg = PgCluster().start() if "postgresql" in kinds else None
    # direct on PostgreSQL: a batch at a time and overlapped, in turn in every run
    direct = [k for kind in kinds for k in ([kind, "postgresql-overlapped"] if kind == "postgresql" else [kind])]
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            if args.profile and args.broker:
                profile_via_broker(kinds, args.burst, tmp, pg)
                return
            if args.profile:
                for kind in direct:
                    for mix in mixes:
                        ingest_direct(kind, args.burst, tmp, pg, profile=True, mix=mix)
                return
            figures: dict[str, list[float]] = {}
            for _ in range(args.runs):
                for kind in direct:
                    for mix in mixes:
                        figures.setdefault(f"direct {kind}{label(mix)}", []).append(
                            ingest_direct(kind, args.burst, tmp, pg, mix=mix))
            if args.broker:
                runs_via_broker(args, direct, mixes, tmp, pg, figures)
    finally:
        if pg is not None:
            pg.remove()
    print(f"reports/s ({args.burst} a run, group commit {BATCH}; min median max of {args.runs}):")
    for title, table in (("", figures),
                         ("the controller's CPU per report (µs; its process, not the database server's nor the "
                          "broker's):", CPU),
                         ("the PostgreSQL server's CPU per report, direct (µs; the postmaster and its processes; "
                          "clock ticks of 10 ms, so coarse):", SERVER_CPU),
                         ("the ingest thread's wall time per report off a core, direct (µs): waiting for a core "
                          "(the run queue), blocked (for the server's answers):", WAITS),
                         ("the publishers' CPU per report (µs; their process, connecting included):", PUBLISHER_CPU),
                         ("mosquitto's CPU per report (µs; the publishers' PUBLISH in, the PUBLISH out and its "
                          "PUBACK):", BROKER_CPU)):
        if table and title:
            print(title)
        for name, xs in table.items():
            print(f"  {name:46s} {spread(xs)}")


def runs_via_broker(args: argparse.Namespace, direct: list[str], mixes: list[str], tmp: Path,
                    pg: PgCluster | None, figures: dict[str, list[float]]) -> None:
    broker = Broker(tmp / "mosquitto").start()
    try:
        retain(broker.url, 2000)
        for _ in range(args.runs):
            # the baseline: what the publishers and the broker allow, into a
            # subscriber on the controller's session that only counts
            with broker_cpu(broker, "bare", args.burst // 4 * 5):
                figures.setdefault("broker bare", []).append(
                    via_broker(broker.url, args.burst, tmp, None, args.paho_publishers))
            for kind in direct:
                for mix in mixes:
                    with broker_cpu(broker, f"{kind}{label(mix)}", len(broker_plan(mix, args.burst))):
                        figures.setdefault(f"broker {kind}{label(mix)}", []).append(
                            ingest_via_broker_on(kind, broker.url, args.burst, tmp, pg, args.paho_publishers, mix))
    finally:
        broker.stop()


BROKER_CPU: dict[str, list[float]] = {}


@contextlib.contextmanager
def broker_cpu(broker: Broker, kind: str, reports: int) -> Iterator[None]:
    """mosquitto's CPU (user + system, from /proc) over one run of ``reports``, per report."""
    def ticks() -> int:
        fields = Path(f"/proc/{broker.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    t0 = ticks()
    yield
    BROKER_CPU.setdefault(kind, []).append((ticks() - t0) / os.sysconf("SC_CLK_TCK") / reports * 1e6)


# The load generator: a minimal MQTT 3.1.1 publisher, one connection per unit (4 seats and
# the dealer), every QoS 1 PUBLISH built before the clock starts and written in runs of up
# to 64 a connection, at most WINDOW unacknowledged a connection, the PUBACKs counted (their
# packet type checked, their ids not: a load generator, not a client). paho's publishers
# (bench_mqtt, ``--paho-publishers``) spend ~200 µs of CPU a report in their own process,
# which on 2 cores held a subscriber that only counts to ~4,200 reports/s: the bench's
# ceiling, not the controller's.
RAW_PUBLISHERS = r"""
import json, select, socket, sys
host, port, plan, window = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
def packet(kind, body):
    n, length = len(body), b""
    while True:
        n, digit = n >> 7, n & 0x7F
        length += bytes([digit | (0x80 if n else 0)])
        if not n:
            return bytes([kind]) + length + body
def text(s):
    b = s.encode()
    return len(b).to_bytes(2, "big") + b
messages = json.load(open(plan))            # [connection, topic, payload] in publishing order
conns = sorted({k for k, _, _ in messages})
built = {k: [] for k in conns}
for k, t, p in messages:                    # QoS 1 PUBLISH (0x32), packet ids 1..65535 in turn
    built[k].append(packet(0x32, text(t) + (len(built[k]) % 65535 + 1).to_bytes(2, "big") + p.encode()))
socks = {}
for k in conns:
    s = socket.create_connection((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(packet(0x10, text("MQTT") + bytes([4, 2, 0, 0]) + text(f"bench-raw-{k}")))   # clean, no keepalive
    if s.recv(4) != bytes([0x20, 2, 0, 0]):
        sys.exit(f"publisher {k}: no CONNACK")
    socks[k] = s
print("ready", flush=True)
sys.stdin.readline()
sent, acked, partial = {k: 0 for k in conns}, {k: 0 for k in conns}, {k: b"" for k in conns}
while any(acked[k] < len(built[k]) for k in conns):
    for k in conns:
        room = min(64, window - (sent[k] - acked[k]), len(built[k]) - sent[k])
        if room > 0:
            socks[k].sendall(b"".join(built[k][sent[k]:sent[k] + room]))
            sent[k] += room
    waiting = [socks[k] for k in conns if sent[k] > acked[k]]
    more = any(sent[k] < len(built[k]) and sent[k] - acked[k] < window for k in conns)
    for s in select.select(waiting, [], [], 0 if more else 30)[0]:
        k = next(c for c in conns if socks[c] is s)
        data = partial[k] + s.recv(65536)
        if not data:
            sys.exit(f"publisher {k}: the broker closed the connection")
        whole = len(data) // 4 * 4
        if any(data[i] != 0x40 for i in range(0, whole, 4)):
            sys.exit(f"publisher {k}: a packet that is not a PUBACK")
        acked[k] += whole // 4
        partial[k] = data[whole:]
for s in socks.values():
    s.sendall(bytes([0xE0, 0]))
    s.close()
"""
WINDOW = 1000               # unacknowledged PUBLISHes a connection (paho's publishers: max_inflight 1000)
PUBLISHER_CPU: dict[str, list[float]] = {}     # the load generator's CPU per report (µs), each run


def label(mix: str) -> str:
    return "" if mix == "wagers" else f" [{mix}]"


def broker_plan(mix: str, n: int) -> Plan:
    """What the publishers send through the broker: the wagers-only mix, round by round each
    seat's wager then the dealer's record of that round; or a table's (:func:`table_plan`)."""
    if mix == "table":
        return table_plan(n)[0]
    per = n // 4
    units = [payloads(f"bench/seat-{p + 1}", per) for p in range(4)] + [dealer_payloads("bench", per, 4)]
    return [(k, t, p) for i in range(per) for k, unit in enumerate(units) for t, p in [unit[i]]]


def via_broker(url: str, n: int, tmp: Path, make: Callable[[], JackpotController] | None,
               paho: bool = False, mix: str = "wagers") -> float:
    """Reports/s through the broker: 4 seats and their dealer publishing from another
    process into a controller made by ``make`` (None: a subscriber on the controller's
    session that only counts: the ceiling of the publishers and the broker)."""
    import bench_mqtt

    if paho:
        saved = bench_mqtt.controller
        if make is not None:
            bench_mqtt.controller = lambda path: make()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            return ingest_via_broker(url, n, 4, tmp, bare=make is None)[0]
        finally:
            bench_mqtt.controller = saved
            _publisher_cpu("paho", before, n // 4 * 5)
    host, port = url.removeprefix("mqtt://").split(":")
    bench_mqtt.fresh_controller_session(url)
    ctl: Any = bench_mqtt.BareSubscriber(url) if make is None else make()
    svc = ctl if make is None else JackpotService(ctl, config_from_url(url)).start()
    sent = broker_plan(mix, n)
    plan = tmp / f"plan-{time.monotonic_ns()}.json"
    plan.write_text(json.dumps([[k, t, p.decode()] for k, t, p in sent]))
    if make is None:                        # (the controller's start waits for its SUBACK)
        wait_until(lambda: ctl.c.is_connected(), 10, "the counting subscriber's connection")
        time.sleep(0.2)                     # its subscription in place before the burst
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    pub = subprocess.Popen([sys.executable, "-c", RAW_PUBLISHERS, host, port, str(plan), str(WINDOW)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert pub.stdin is not None and pub.stdout is not None
    try:
        if pub.stdout.readline().strip() != "ready":
            raise RuntimeError("the publishers did not connect")
        t0 = time.perf_counter()
        pub.stdin.write("go\n")
        pub.stdin.flush()
        total = len(sent)
        wait_until(lambda: sum(ctl.marks().values()) >= total, 600, "the controller's ingest", step=0.005)
        dt = time.perf_counter() - t0
    finally:
        pub.stdin.close()
        if pub.wait(60) != 0:
            raise RuntimeError(f"the publishers failed ({pub.returncode})")
    _publisher_cpu("raw MQTT", before, total)
    svc.stop()
    if make is not None:
        print(f"    (controller: {total} reports in {svc.batches} transactions)", flush=True)
        ctl.close()
    return total / dt


def _publisher_cpu(kind: str, before: resource.struct_rusage, reports: int) -> None:
    """The publishers' process's CPU (it has ended) per report."""
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    PUBLISHER_CPU.setdefault(kind, []).append(cpu / reports * 1e6)


def ingest_via_broker_on(kind: str, url: str, n: int, tmp: Path, pg: PgCluster | None,
                         paho: bool = False, mix: str = "wagers") -> float:
    """A run through the broker with the controller on ``kind`` (postgresql: a batch at a
    time; postgresql-overlapped: the service's default on PostgreSQL)."""
    made = store("postgresql" if kind == "postgresql-overlapped" else kind, tmp, pg)
    service_module.OVERLAP = kind == "postgresql-overlapped"
    c0 = time.process_time()
    rate = via_broker(url, n, tmp, lambda: JackpotController(made, [POOL]), paho, mix)
    # this process is the controller (paho's thread and the ingest thread; the publishers
    # are another process): its CPU per report, start and stop included
    CPU.setdefault(f"{kind}{label(mix)} via the broker", []).append(
        (time.process_time() - c0) / len(broker_plan(mix, n)) * 1e6)
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
                pstats.Stats(prof).sort_stats(os.environ.get("BENCH_SORT", "tottime")).print_stats(int(os.environ.get("BENCH_LINES", "14")))
    finally:
        threading.Thread.run = plain            # type: ignore[method-assign]
        broker.stop()


if __name__ == "__main__":
    main()
