"""A floor of tables under load: N table brokers bridged to one floor broker, the jackpot
controller on the floor (docs/floor.md).

    python3 bench/bench_floor.py [--tables 100] [--seats 7] [--workers 4] [--paced 120]
                                 [--full 30] [--store-url sqlite:///PATH | postgresql://...]
                                 [--store-password-file FILE] [--postgres]

Every table runs its own mosquitto with the bridge ``betbox floor bridge-config`` writes
(firmware.link.bridge; plain TCP on loopback, the documented ACLs and per-user passwords on
both sides). Its dealer and seats are *simulated units*, one MQTT client each, spread over
``--workers`` processes: each keeps a real :class:`~firmware.link.outbox.Outbox` (SQLite,
WAL, synchronous=FULL; on tmpfs unless ``--outbox-dir``, so 800 units' fsyncs do not measure
this machine's disk), puts every report in it and publishes the outbox's own payload at
QoS 1, prunes it by the controller's confirmation marks and reads the meter. What they do not
simulate: the engine, the journals, the seats' screens, card and chip traffic on the table
broker (it never leaves the table). A round is what ``tests/link/helpers.seat_script``
reports: per seat a progressive wager in 70% of rounds (some hits), its round result; the
dealer's ``round_progressive`` and ``round_settlement`` (so the controller books each claim
against the dealer's record, as on a floor).

Two phases: *paced*, each table a round every 60 s (60 rounds/hour, staggered) for
``--paced`` seconds; *full speed*, every table as fast as its units can publish for
``--full`` seconds. Printed: reports/s the controller committed; end-to-end latency from
the seat's outbox put to the controller's commit (p50/p99; the controller process records
its commit time for each report: one clock, one machine); meter fan-out (a meter at the
floor broker to each seat, p50/p99, and the share of seats that got it); CPU (% of one core)
and RSS of every process; and from it, how many tables one controller serves at 60
rounds/hour keeping half its core free.

Then the accounting: after a drain (at most ``--drain`` seconds, until every unit's outbox
is confirmed), whether every report every unit put was committed by the controller, and
for each one that was not, where it is: in its unit's outbox never published or not
acknowledged by the table broker, at the table broker (acknowledged, never seen at the
floor broker), or at the floor broker / the controller's inbox; what the controller
refused and its counts (accepted, duplicate: sent again, dropped by its store's
constraints); the units' and the controller's lost connections; each bridge's states
(its notification topic) and connections (the floor broker's log); brokers that died or
logged errors; and the seats that lack the last meter.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import paho.mqtt.client as mqtt  # noqa: E402
from paho.mqtt.enums import CallbackAPIVersion  # noqa: E402

from firmware.link import topics  # noqa: E402
from tests.link.helpers import POOL, dealer_records, seat_script  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
ROUND_SECONDS = 60.0                       # 60 rounds an hour per table
# paho's loop uses select(): no descriptor may be above 1023, and a unit holds ~6 (its
# socket, paho's wake-up pair, its outbox's database, WAL and shared memory)
MAX_UNITS_PER_WORKER = 120


# -- the controller's process ------------------------------------------------------------------


def make_controller(store_url: str, password_file: str | None = None) -> Any:
    """The controller on the store ``store_url`` names: ``sqlite:///PATH`` (the embedded
    default) or ``postgresql://...`` (its password in ``password_file``)."""
    from firmware.jackpot.controller import JackpotController
    from firmware.jackpot.database import open_store
    if store_url.startswith("sqlite:///"):
        return JackpotController(Path(store_url.removeprefix("sqlite://")), [POOL])
    if store_url.startswith(("postgresql://", "postgres://")):
        pw = Path(password_file) if password_file else None
        return JackpotController(open_store("", store_url, pw), [POOL])
    raise SystemExit(f"--store-url {store_url!r}: give sqlite:///PATH or postgresql://...")


def controller_main(spec: dict[str, Any]) -> None:
    import logging

    from firmware.jackpot.service import JackpotService
    from firmware.link.config import load_link_config
    # its warnings and errors (a rejected report, a gap, a lost store) to a file the summary reads
    logging.basicConfig(filename=spec["out"] + ".log", level=logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    ctl = make_controller(spec["store_url"], spec.get("store_password_file"))
    commits: list[tuple[str, int, float]] = []
    ingest = ctl.ingest_batch

    def timed(items: list[tuple[str, bytes]]) -> Any:
        result = ingest(items)                                   # one transaction, committed
        now = time.time()
        # what the controller holds: accepted now or before (a refused one is counted apart)
        commits.extend((r.unit, r.seq, now) for r in result
                       if r.status != "rejected" and r.unit is not None and r.seq is not None)
        keep_refused(result)
        return result

    refused: list[tuple[str | None, str | None]] = []

    def keep_refused(results: list[Any]) -> None:
        refused.extend((r.unit, r.reason) for r in results if r.status == "rejected")

    ctl.ingest_batch = timed
    overlapped = ctl.ingest_overlapped

    def timed_run(first: Any, take_next: Any, committed: Any) -> None:
        # PostgreSQL (the service overlaps batches): stamped when each batch's COMMIT is confirmed
        def stamped(results: list[Any]) -> None:
            now = time.time()
            commits.extend((r.unit, r.seq, now) for r in results
                           if r.status != "rejected" and r.unit is not None and r.seq is not None)
            keep_refused(results)
            committed(results)
        overlapped(first, take_next, stamped)

    ctl.ingest_overlapped = timed_run  # type: ignore[method-assign]
    svc = JackpotService(ctl, load_link_config(spec["link"])).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    print("ready", flush=True)
    stop.wait()
    # the figures first: stopping may take long behind a full-speed backlog
    Path(spec["out"] + ".tmp").write_text(json.dumps({"commits": list(commits), "batches": svc.batches,
                                                      "counts": dict(ctl.counts), "refused": refused}))
    os.replace(spec["out"] + ".tmp", spec["out"])
    print("written", flush=True)
    svc.stop()
    ctl.close()


# -- the simulated units ------------------------------------------------------------------------


class SimUnit:
    """One unit: its own client on its table's broker, a real outbox, the meter it reads."""

    def __init__(self, unit: str, port: int, password: str, outbox_dir: Path) -> None:
        from firmware.link.outbox import Outbox
        self.unit = unit
        self.outbox = Outbox(outbox_dir / (unit.replace("/", "_") + ".db"), unit)
        self.put_at: dict[int, float] = {}
        self.meters: list[tuple[str, float]] = []
        # each report's PUBLISH (its PUBACK from the table broker shows in is_published) and
        # the connection's story: where a report that never reached the controller stopped
        self.sent: dict[int, mqtt.MQTTMessageInfo] = {}
        self.events: list[tuple[float, str]] = []
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=unit, clean_session=True)
        self.client.username_pw_set(unit, password)
        self.client.max_inflight_messages_set(64)
        self.client.max_queued_messages_set(0)
        self.ready = threading.Event()
        self.client.on_connect = self._on_connect
        self.client.on_message = self._on_message
        self.client.on_disconnect = lambda c, u, flags, rc, props: self.events.append((time.time(), f"lost {rc}"))
        self.client.connect("127.0.0.1", port, keepalive=60)
        self.client.loop_start()

    def _on_connect(self, client, userdata, flags, rc, props) -> None:
        self.events.append((time.time(), "connected" if not rc.is_failure else f"refused {rc}"))
        if rc.is_failure:
            return
        client.subscribe([(topics.meter_topic("main"), 1), (topics.confirmed_topic("main", self.unit), 1)])
        self.ready.set()

    def _on_message(self, client, userdata, msg) -> None:
        try:
            if msg.topic.endswith("/meter"):
                self.meters.append((msg.payload.decode(), time.time()))
            else:
                self.outbox.confirm_through(int(json.loads(msg.payload)["through_seq"]))
        except Exception:                 # noqa: BLE001 - a bench client reads on; a lost mark only keeps rows
            pass

    def report(self, kind: str, body: dict[str, Any], key: str, **extra: Any) -> None:
        seq = self.outbox.put(topics.report_topic(self.unit), kind, body, key=key, extra=extra)
        if seq is None:
            return
        self.put_at[seq] = time.time()
        (p,) = self.outbox.pending(after=seq - 1, limit=1)
        self.sent[seq] = self.client.publish(p.topic, p.payload, qos=1)

    def unconfirmed(self) -> list[int]:
        """The reports the controller has not confirmed yet (still in the outbox)."""
        return [p.seq for p in self.outbox.pending(limit=100000)]

    def account(self) -> dict[str, Any]:
        """Where this unit's unconfirmed reports are: never handed to paho, handed but not
        acknowledged by the table broker, or acknowledged (the table broker has them)."""
        left = self.unconfirmed()
        return {"last_seq": self.outbox.last_seq, "unconfirmed": left,
                "unsent": [q for q in left if q not in self.sent],
                "unacked": [q for q in left if q in self.sent and not self.sent[q].is_published()],
                "events": self.events}

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
        self.outbox.close()


def by_round(script: list) -> dict[int, list]:
    out: dict[int, list] = {}
    for item in script:
        out.setdefault(item[2], []).append(item)
    return out


def play_round(table: str, units: dict[str, SimUnit], scripts: dict[int, dict[int, list]], rnd: int) -> None:
    """Round ``rnd`` of a table: the seats' reports, then the dealer's record of it."""
    this = {box: s.get(rnd, []) for box, s in scripts.items()}
    for box, script in this.items():
        for kind, body, r, key in script:
            units[f"{table}/seat-{box}"].report(kind, body, key, table=table, box=box, round=r)
    for kind, body, r, key in dealer_records(this):
        units[f"{table}/dealer"].report(kind, body, key, table=table, round=r)


def drain(units: dict[str, SimUnit], until: float) -> float | None:
    """Wait until the controller has confirmed every report of every unit (each outbox
    empty), at most until ``until``. When that was, or None: not by then."""
    waiting = dict(units)
    while True:
        waiting = {n: u for n, u in waiting.items() if u.outbox.pending(limit=1)}
        if not waiting:
            return time.time()
        if time.time() >= until:
            return None
        time.sleep(0.25)


def worker_main(spec: dict[str, Any]) -> None:
    outbox_dir = Path(spec["outbox_dir"])
    tables: dict[str, dict[str, Any]] = spec["tables"]
    units: dict[str, SimUnit] = {}
    scripts: dict[str, dict[int, dict[int, list]]] = {}
    for table, t in tables.items():
        for unit in t["units"]:
            units[unit] = SimUnit(unit, t["port"], t["passwords"][unit], outbox_dir)
        number = int(table.rsplit("-", 1)[1])
        scripts[table] = {box: by_round(seat_script(f"{table}/seat-{box}", spec["rounds"], seed=1000 * number + box)[0])
                          for box in range(1, spec["seats"] + 1)}
    for u in units.values():
        u.ready.wait(30)
    print("ready", flush=True)
    go = json.loads(sys.stdin.readline())
    # paced: each table a round every ROUND_SECONDS from its own offset
    start, offsets = go["paced_start"], {t: random.Random(t).random() * ROUND_SECONDS for t in tables}
    due = sorted((start + off, t) for t, off in offsets.items())
    played = {t: 0 for t in tables}
    while due and due[0][0] < go["paced_end"]:      # (a round due later must not sleep into the next phase)
        at, table = due.pop(0)
        time.sleep(max(0.0, at - time.time()))
        played[table] += 1
        play_round(table, units, scripts[table], played[table])
        due.append((at + ROUND_SECONDS, table))
        due.sort()
    # full speed: every table of this worker round after round, as fast as the units publish
    time.sleep(max(0.0, go["full_start"] - time.time()))
    while time.time() < go["full_end"]:
        left = [t for t in tables if played[t] < spec["rounds"]]
        if not left:
            break
        for table in left:
            played[table] += 1
            play_round(table, units, scripts[table], played[table])
    drained = drain(units, go["drain_end"])
    time.sleep(go["settle"])                    # the meter after the last commit reaches the seats
    Path(spec["out"]).write_text(json.dumps({
        "put": {u: s.put_at for u, s in units.items()}, "drained": drained,
        "accounts": {u: s.account() for u, s in units.items()},
        "meters": {u: s.meters for u, s in units.items() if "/seat-" in u}}))
    for u in units.values():
        u.close()


# -- the orchestra --------------------------------------------------------------------------


def cpu_rss(pid: int) -> tuple[float, int]:
    """(CPU seconds, RSS KiB) of a process; (0, 0) once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        rss = next(int(x.split()[1]) for x in Path(f"/proc/{pid}/status").read_text().splitlines()
                   if x.startswith("VmRSS:"))
        return (int(fields[11]) + int(fields[12])) / TICK, rss
    except (OSError, StopIteration, IndexError, ValueError):
        return 0.0, 0


def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


class Sampler:
    def __init__(self, procs: dict[str, list[int]]) -> None:
        self.procs = procs
        self.rss: dict[str, int] = {k: 0 for k in procs}

    def cpu(self) -> dict[str, float]:
        out = {}
        for name, pids in self.procs.items():
            total, rss = 0.0, 0
            for pid in pids:
                c, r = cpu_rss(pid)
                total += c
                rss = max(rss, r)
            self.rss[name] = max(self.rss[name], rss)
            out[name] = total
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=100)
    ap.add_argument("--seats", type=int, default=7)
    ap.add_argument("--workers", type=int, default=8,
                    help=f"processes the simulated units run in (at most {MAX_UNITS_PER_WORKER} units each)")
    ap.add_argument("--paced", type=float, default=120.0, help="seconds at 60 rounds/hour/table (0: skip)")
    ap.add_argument("--full", type=float, default=30.0, help="seconds at full speed (0: skip)")
    ap.add_argument("--store-url", default=None, help="the controller's store (default sqlite:/// in a temp dir)")
    ap.add_argument("--postgres", action="store_true", help="the store on a throwaway PostgreSQL cluster")
    ap.add_argument("--store-password-file", default=None, help="the PostgreSQL password, alone in a file")
    ap.add_argument("--drain", type=float, default=60.0,
                    help="seconds at most, after the full-speed phase, for every unit's outbox to be confirmed")
    ap.add_argument("--outbox-dir", default=None, help="where the units' outboxes live (default: tmpfs)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--controller", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker_main(json.loads(Path(args.worker).read_text()))
    if args.controller:
        return controller_main(json.loads(Path(args.controller).read_text()))
    run(args)


def run(args: argparse.Namespace) -> None:
    from tests.floor.floor import CONTROLLER, Floor
    per_worker = -(-args.tables // max(1, args.workers)) * (args.seats + 1)
    if per_worker > MAX_UNITS_PER_WORKER:
        raise SystemExit(f"--workers {args.workers}: {per_worker} units in one process; paho's select() allows "
                         f"about {MAX_UNITS_PER_WORKER} (give --workers {-(-args.tables * (args.seats + 1) // MAX_UNITS_PER_WORKER)})")
    # a SIGTERM (timeout) ends the run through the finally below: no broker left behind
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    tmp = Path(tempfile.mkdtemp(prefix="bench-floor-"))
    shm = Path("/dev/shm")
    outbox_dir = Path(args.outbox_dir) if args.outbox_dir else Path(tempfile.mkdtemp(
        prefix="bench-floor-", dir=shm if shm.is_dir() else None))
    pg = None
    if args.postgres:           # a throwaway cluster, as the tests start one (removed at the end)
        from tests.jackpot.postgres import PgCluster
        pg = PgCluster().start()
        args.store_url, args.store_password_file = pg.url, str(pg.password_file)
    store_url = args.store_url or f"sqlite:///{tmp / 'jackpot.db'}"
    tables = {f"table-{n}": args.seats for n in range(1, args.tables + 1)}
    floor = Floor(tmp, tables)
    procs: list[subprocess.Popen] = []
    try:
        floor.start()
        link = {"broker": floor.floor.url, "username": "jackpot/main", "password": CONTROLLER["jackpot/main"],
                "allow_insecure": True}
        (tmp / "controller.json").write_text(json.dumps({"store_url": store_url, "link": link,
                                                         "store_password_file": args.store_password_file,
                                                         "out": str(tmp / "commits.json")}))
        ctl = subprocess.Popen([sys.executable, __file__, "--controller", str(tmp / "controller.json")],
                               stdout=subprocess.PIPE, text=True)
        procs.append(ctl)
        if ctl.stdout is None or ctl.stdout.readline().strip() != "ready":
            raise SystemExit("the controller did not start")
        from tests.floor.floor import unit_password
        names = sorted(tables, key=lambda t: int(t.rsplit("-", 1)[1]))
        # enough rounds for the paced phase and for the full-speed one (generated up front)
        rounds = int(args.paced / ROUND_SECONDS + 2) + max(60, 20000 // args.tables)
        workers = []
        for w in range(args.workers):
            mine = names[w::args.workers]
            if not mine:
                continue
            spec = {"outbox_dir": str(outbox_dir), "seats": args.seats, "rounds": rounds,
                    "out": str(tmp / f"worker-{w}.json"),
                    "tables": {t: {"port": floor.tables[t].port, "units": floor.units(t),
                                   "passwords": {u: unit_password(u) for u in floor.units(t)}} for t in mine}}
            (tmp / f"worker-{w}.in.json").write_text(json.dumps(spec))
            p = subprocess.Popen([sys.executable, __file__, "--worker", str(tmp / f"worker-{w}.in.json")],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            procs.append(p)
            workers.append(p)
        for p in workers:
            if p.stdout is None or p.stdout.readline().strip() != "ready":
                raise SystemExit("a worker did not start")
        probe = FloorProbe(floor.floor.port)
        sampler = Sampler({"controller": [ctl.pid], "floor broker": [floor.floor.proc.pid],
                           "table brokers": [b.proc.pid for b in floor.tables.values()],
                           "simulated units": [p.pid for p in workers]})
        now = time.time() + 1.0
        go = {"paced_start": now, "paced_end": now + args.paced, "full_start": now + args.paced,
              "full_end": now + args.paced + args.full, "drain_end": now + args.paced + args.full + args.drain,
              "settle": 3.0}
        for p in workers:
            assert p.stdin is not None
            p.stdin.write(json.dumps(go) + "\n")
            p.stdin.flush()
        time.sleep(max(0.0, go["paced_start"] - time.time()))
        c0 = sampler.cpu()
        time.sleep(max(0.0, go["paced_end"] - time.time()))
        c1 = sampler.cpu()
        time.sleep(max(0.0, go["full_end"] - time.time()))
        c2 = sampler.cpu()
        for p in workers:
            p.wait(300 + args.drain)
        ctl.send_signal(signal.SIGTERM)
        assert ctl.stdout is not None
        if ctl.stdout.readline().strip() != "written":
            raise SystemExit("the controller did not write its commit times")
        probe.close()
        done = json.loads((tmp / "commits.json").read_text())
        commits = done["commits"]
        outs = [json.loads((tmp / f"worker-{w}.json").read_text()) for w in range(len(workers))]
        summary(args, go, commits, outs, probe.meters, (c0, c1, c2), sampler.rss, store_url)
        account(floor, tmp, go, done, outs, probe)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        floor.stop()
        if pg is not None:
            pg.remove()


class FloorProbe:
    """What the floor broker passes on: the meter (the reference for the fan-out to the
    seats), every report's (unit, seq) (what the bridges delivered), every bridge's state.
    The harness's ``observer`` user, who may read everything at the floor broker."""

    def __init__(self, port: int) -> None:
        from tests.floor.floor import OBSERVER
        self.meters: dict[str, float] = {}
        self.reports: set[tuple[str, int]] = set()
        self.bridges: dict[str, list[tuple[float, str]]] = {}
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=OBSERVER[0])
        self.client.username_pw_set(*OBSERVER)
        self.client.on_connect = lambda c, *a: c.subscribe(
            [(topics.meter_topic("main"), 1), (f"{topics.ROOT}/unit/+/+/report", 1),
             (topics.bridge_state_topic("+"), 1)])
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()

    def _on_message(self, client, userdata, msg) -> None:
        now = time.time()
        if msg.topic.endswith("/meter"):
            self.meters.setdefault(msg.payload.decode(), now)
        elif msg.topic.endswith("/report"):
            try:
                d = json.loads(msg.payload)
                self.reports.add((d["unit"], int(d["seq"])))
            except (ValueError, KeyError, TypeError):
                pass
        else:
            self.bridges.setdefault(msg.topic.split("/")[-2], []).append((now, msg.payload.decode(errors="replace")))

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def fan_out(outs: list[dict[str, Any]], floor_meters: dict[str, float], t0: float, t1: float) -> None:
    """Each meter the floor broker sent in [t0, t1), at each seat: delay and delivery."""
    fan, got, want = [], 0, 0
    seats = [dict(reversed(m)) for o in outs for m in o["meters"].values()]     # payload -> first time
    sent = {p: at for p, at in floor_meters.items() if t0 <= at < t1}
    for payload, at in sent.items():
        for meters in seats:
            want += 1
            seen = meters.get(payload)
            if seen is not None:
                got += 1
                fan.append(1000 * (seen - at))
    if want:
        print(f"  meter fan-out floor -> every seat: p50 {pct(fan, 50):.1f} ms, p99 {pct(fan, 99):.1f} ms; "
              f"{100 * got / want:.1f}% of (meter, seat) pairs delivered ({len(sent)} meters)")


def capacity(cpu_per_report: float, sustained: float, per_table: float) -> None:
    """Tables one controller serves at 60 rounds/hour, keeping half its core (and half the
    ingest rate measured) free."""
    by_cpu = 0.5 / (cpu_per_report * per_table)
    by_rate = 0.5 * sustained / per_table
    print(f"  controller CPU per report: {1000 * cpu_per_report:.2f} ms; at 60 rounds/h a table sends "
          f"{per_table:.3f} reports/s")
    print(f"  tables one controller serves with 50% headroom: ~{min(by_cpu, by_rate):.0f} "
          f"(by its CPU ~{by_cpu:.0f}, by the ingest rate sustained here ~{by_rate:.0f})")


def summary(args, go, commits, outs, floor_meters, cpu, rss, store_url) -> None:
    put: dict[tuple[str, int], float] = {}
    for o in outs:
        for unit, seqs in o["put"].items():
            for seq, at in seqs.items():
                put[(unit, int(seq))] = at
    first: dict[tuple[str, int], float] = {}
    for unit, seq, at in commits:
        first.setdefault((unit, seq), at)
    print(f"bench_floor: {args.tables} tables x (dealer + {args.seats} seats) = "
          f"{args.tables * (args.seats + 1)} simulated units in {args.workers} processes, "
          f"{args.tables} table brokers bridged to 1 floor broker, controller on {store_url.split(':')[0]}; "
          f"{os.cpu_count()} CPUs")
    phases = [("paced (60 rounds/h/table)", go["paced_start"], go["paced_end"], 0),
              ("full speed", go["full_start"], go["full_end"], 1)]
    for name, t0, t1, i in phases:
        if t1 <= t0:
            continue
        keys = [k for k, at in put.items() if t0 <= at < t1]
        done = [k for k in keys if k in first]
        lat = [1000 * (first[k] - put[k]) for k in done]
        in_window = sum(1 for at in first.values() if t0 <= at < t1)
        wall = t1 - t0
        print(f"\n{name}: {wall:.0f} s; reports put {len(keys)}, committed {len(done)} "
              f"({len(keys) - len(done)} not by the end)")
        print(f"  controller committed {in_window / wall:8.1f} reports/s in the window "
              f"(units put {len(keys) / wall:.1f}/s)")
        # a batch's reports share its commit time: the group commit's grouping
        batches = len({at for at in first.values() if t0 <= at < t1})
        if batches:
            print(f"  in {batches} transactions, {in_window / batches:.1f} reports each on average")
        if done:
            last = max(first[k] for k in done)
            print(f"  all {len(done)} committed by {last - t0:.1f} s after the phase began: "
                  f"{len(done) / max(1e-9, last - t0):.1f} reports/s sustained including the backlog")
        print(f"  outbox put -> controller commit: p50 {pct(lat, 50):.1f} ms, p99 {pct(lat, 99):.1f} ms, "
              f"max {max(lat, default=float('nan')):.1f} ms")
        a, b = cpu[i], cpu[i + 1]
        for proc in a:
            print(f"  CPU {proc:16s} {100 * (b[proc] - a[proc]) / wall:6.1f} % of a core")
        fan_out(outs, floor_meters, t0, t1)
        if i == 1 and in_window and args.paced:
            sustained = len(done) / max(1e-9, max(first[k] for k in done) - t0)
            paced = [k for k in put if go["paced_start"] <= put[k] < go["paced_end"]]
            capacity((b["controller"] - a["controller"]) / in_window, sustained,
                     len(paced) / (go["paced_end"] - go["paced_start"]) / args.tables)
    print("\nRSS (max KiB of one process): " + ", ".join(f"{k} {v}" for k, v in rss.items()))


# -- the accounting: every report every unit put, committed once, or where it stopped -------------


def where(unit: str, seq: int, acc: dict[str, Any], floor_saw: set[tuple[str, int]]) -> str:
    """Where a report the controller has not committed is."""
    if seq not in acc["unconfirmed"]:
        return "LOST: confirmed to its unit, never committed"
    if seq in acc["unsent"]:
        return "in the unit's outbox, never published"
    if seq in acc["unacked"]:
        return "in the unit's outbox, published, the table broker never acknowledged it"
    if (unit, seq) not in floor_saw:
        return "at the table broker (acknowledged there, never at the floor broker)"
    return "at the floor broker or the controller's inbox (the floor broker passed it on)"


def bridge_story(floor: Any, probe: FloorProbe, t0: float) -> dict[str, str]:
    """Per table whose bridge did not stay up: its notification states (seconds into the run)
    and what the floor broker's log says about its connections."""
    floor_log = floor.floor.log()
    out = {}
    for table in floor.tables:
        states = probe.bridges.get(table, [])
        connects = floor_log.count(f" as {table}/bridge ")
        drops = [line for line in floor_log.splitlines()
                 if f"{table}/bridge" in line and ("disconnect" in line or "timeout" in line or "closed" in line)]
        if connects != 1 or drops or any(v != "1" for _, v in states) or not states:
            out[table] = (f"states {[(round(at - t0, 1), v) for at, v in states]}; the floor broker: "
                          f"{connects} connections, {len(drops)} drops {[d[:120] for d in drops[:3]]}")
    return out


def broker_trouble(floor: Any) -> dict[str, str]:
    """Brokers that are not running, or whose log names an error."""
    out = {}
    for name, b in [("floor", floor.floor), *floor.tables.items()]:
        errors = [line for line in b.log().splitlines() if "Error" in line]
        if b.proc is None or b.proc.poll() is not None:
            out[name] = f"NOT RUNNING (exit code {None if b.proc is None else b.proc.poll()}); {errors[:3]}"
        elif errors:        # e.g. its port taken before it started: the floor started it on another
            out[name] = f"running on port {b.port}; its log: {errors[:3]}"
    return out


def account(floor: Any, tmp: Path, go: dict[str, Any], done: dict[str, Any], outs: list[dict[str, Any]],
            probe: FloorProbe) -> None:
    """Whether every report every unit put was committed by the controller (once: its
    store's constraints), and if not where each one is; bridges, brokers, the last meter."""
    committed = {(u, s) for u, s, _ in done["commits"]}
    accounts = {u: a for o in outs for u, a in o["accounts"].items()}
    put = [(u, int(s)) for o in outs for u, seqs in o["put"].items() for s in seqs]
    drained = [o["drained"] for o in outs]
    print(f"\naccounting (after a drain of at most {go['drain_end'] - go['full_end']:.0f} s):")
    if all(d is not None for d in drained):
        print(f"  every unit's outbox confirmed {max(drained) - go['full_end']:.1f} s after the full-speed phase")
    else:
        print("  NOT every unit's outbox confirmed within the drain")
    missing = [(u, s) for u, s in put if (u, s) not in committed]
    counts = done.get("counts", {})
    print(f"  reports put {len(put)}, committed {len(put) - len(missing)}; the controller's counts {counts}")
    if done.get("refused"):
        print(f"  refused by the controller: {len(done['refused'])}, e.g. {done['refused'][:3]}")
    by_place: dict[tuple[str, str], int] = {}
    for u, s in missing:
        k = (u, where(u, s, accounts[u], probe.reports))
        by_place[k] = by_place.get(k, 0) + 1
    print("  every report committed" if not missing else f"  NOT COMMITTED: {len(missing)}")
    for (u, place), n in sorted(by_place.items()):
        print(f"    {u}: {n} {place}")
    for u, a in sorted(accounts.items()):
        if [e for _, e in a["events"]] != ["connected"]:
            print(f"  {u}'s connection: {[(round(at - go['paced_start'], 1), e) for at, e in a['events']][:6]}")
    # (its own goodbye at the end is the last "disconnected")
    ctl_log = [line[:120] for line in floor.floor.log().splitlines() if " jackpot/main" in line]
    drops = [line for line in ctl_log[:-1] if "timeout" in line or "disconnect" in line or "closed" in line]
    if drops:       # its persistent session: what it had not acknowledged comes again (duplicates)
        print(f"  the controller's link to the floor broker dropped {len(drops)} times: {drops[:3]}")
    bridges = bridge_story(floor, probe, go["paced_start"])
    print("  every bridge up throughout (one connection each)" if not bridges else "  bridges that went down:")
    for table, story in sorted(bridges.items()):
        print(f"    {table}: {story}")
    for name, trouble in sorted(broker_trouble(floor).items()):
        print(f"  broker {name}: {trouble}")
    last = max(probe.meters.items(), key=lambda kv: kv[1])[0] if probe.meters else None
    seats = {u: m for o in outs for u, m in o["meters"].items()}
    stale = sorted(u for u, m in seats.items() if not m or m[-1][0] != last)
    print(f"  the last meter reached every seat ({len(seats)})" if not stale else
          f"  seats without the last meter: {len(stale)} of {len(seats)}: {stale[:8]}")
    log = tmp / "commits.json.log"
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    if lines:
        print(f"  the controller's log: {len(lines)} warnings/errors, e.g. {[x[:160] for x in lines[:3]]}")


if __name__ == "__main__":
    main()
