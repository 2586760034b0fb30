"""The MQTT link's costs against a real mosquitto on loopback.

    python3 bench/bench_mqtt.py [--runs 3] [--n 300] [--burst 5000] [--rounds 60] [--retained 2000]
                                [--only c2r] [--split | --one-process] [--tls] [--pace MS]

The broker is configured as shipped (tests/link/broker.py: persistence on a time basis, as
docs/mqtt/mosquitto.conf) and holds ``--retained`` retained messages (what a link of ~125
tables keeps: statuses, marks, meters). Every figure is taken ``--runs`` times and printed
as min / median / max, beside its baseline from the same runs:

- report → broker PUBACK through the durable outbox (SQLite FULL sync, sender thread), one at
  a time, beside a bare paho QoS 1 publish → PUBACK to a topic a persistent-session
  subscriber reads (so the broker's queueing for a subscriber is in the baseline);
- outbox throughput: a burst of reports, put rate and put-to-all-acknowledged rate;
- controller ingest: reports/s applied directly (one report per call, and group-committed
  batches) and end to end through the broker from several publishers, beside a bare paho
  subscriber on the same broker (what the broker alone delivers);
- card to report: a dealer unit and a seat unit, each with its own MQTT client and dispatch
  thread (as under ``betbox run``), the jackpot controller on the same broker: from a card at
  the dealer's shoe port to the broker's PUBACK of the seat's report it causes. The next card
  is dealt only once the dealer's step for the previous one is in its journal (durable), as a
  dealer waits for the table to show the card before dealing the next (the bench waits on a
  condition, not a poll); ``--pace MS`` deals them at least MS ms apart instead, so the units
  and their processors idle between cards as at a table (a dealer deals about a card a
  second; on a virtual machine a processor woken from idle runs the same step slower). Each
  unit's outbox is in its journal, both with their reporters, as ``betbox run`` wires them.
  Printed beside a bare paho round trip and a bare fsynced commit of the same run, with a
  stage-by-stage trace (:data:`TRACE`) and the process's CPU time per unit step. As on a
  table (every unit its own computer) the dealer, the seat and the controller each run in a
  process of their own: the dealer in the bench's (its shoe and console are the bench's), the
  seat and the controller in children. Each run then takes the same figure with every unit in
  the bench's process, printed after it as a secondary figure (one interpreter lock for all
  units and their paho threads: not a table's layout).
  ``--only c2r``: only this. ``--split``: only the table's layout; ``--one-process``: only
  the all-in-one (its stages traced then).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import paho.mqtt  # noqa: E402
import paho.mqtt.client as mqtt  # noqa: E402
from paho.mqtt.enums import CallbackAPIVersion  # noqa: E402

from firmware.jackpot.controller import report  # noqa: E402
from firmware.jackpot.service import JackpotService  # noqa: E402
from firmware.link import connect_bus, topics  # noqa: E402
from firmware.link.config import config_from_url  # noqa: E402
from tests.link.broker import Broker  # noqa: E402
from tests.link.helpers import controller, make_pki, wait_until  # noqa: E402

#: ``--tls``: the TLS listener's files and the plain listener's url, for the bench's children too
TLS_ENV = "BENCH_MQTT_TLS"


def tls_files() -> dict[str, str] | None:
    """The client's CA, certificate and key when the bench runs over ``mqtts://`` (``--tls``)."""
    given = os.environ.get(TLS_ENV)
    return {k: v for k, v in json.loads(given).items() if k in ("ca", "cert", "key")} if given else None


def plain_url(url: str) -> str:
    """The broker's plain listener (set-up helpers: retained messages, the old session)."""
    given = os.environ.get(TLS_ENV)
    return json.loads(given)["plain"] if given and url.startswith("mqtts://") else url


def _host_port(url: str) -> tuple[str, int]:
    host, port = url.split("://", 1)[1].split(":")
    return host, int(port)


def machine() -> str:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mosq = subprocess.run(["mosquitto", "-h"], capture_output=True, text=True).stdout.splitlines()
    fs = subprocess.run(["df", "-T", tempfile.gettempdir()], capture_output=True, text=True).stdout.splitlines()
    return (f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, paho-mqtt {paho.mqtt.__version__}, "
            f"{mosq[0] if mosq else 'mosquitto ?'}, tmp on {fs[-1].split()[1] if len(fs) > 1 else '?'}")


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def fmt(xs: list[float]) -> str:
    ms = [x * 1000 for x in xs]
    return f"p50 {pct(ms, 50):7.3f} ms   p99 {pct(ms, 99):7.3f} ms   mean {statistics.mean(ms):7.3f} ms"


def bare_round_trips(url: str, n: int) -> list[float]:
    """Bare paho QoS 1 publish → PUBACK, to a topic a persistent-session subscriber reads
    (over TLS with the units' certificate for an ``mqtts://`` url)."""
    host, port = _host_port(url)
    tls = tls_files() if url.startswith("mqtts://") else None
    sub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="bench-bare-subscriber", clean_session=False)
    if tls:
        sub.tls_set(ca_certs=tls["ca"], certfile=tls["cert"], keyfile=tls["key"])
    subscribed = threading.Event()
    sub.on_subscribe = lambda *a: subscribed.set()
    sub.connect(host, int(port))
    sub.subscribe("betbox/v1/bench/bare", qos=1)
    sub.loop_start()
    if not subscribed.wait(10):
        raise RuntimeError("the baseline's subscriber did not subscribe")
    done = threading.Event()
    c = mqtt.Client(CallbackAPIVersion.VERSION2)
    if tls:
        c.tls_set(ca_certs=tls["ca"], certfile=tls["cert"], keyfile=tls["key"])
    c.on_publish = lambda *a: done.set()
    c.connect(host, int(port))
    c.loop_start()
    out = []
    payload = json.dumps({"schema": 1, "kind": "bench", "body": {"amount": "5"}, "pad": "x" * 150})
    for _i in range(n):
        done.clear()
        t0 = time.perf_counter()
        c.publish("betbox/v1/bench/bare", payload, qos=1)
        done.wait(10)
        out.append(time.perf_counter() - t0)
    c.disconnect()
    c.loop_stop()
    sub.disconnect()
    sub.loop_stop()
    return out


def retain(url: str, n: int) -> None:
    """``n`` retained messages on the broker (kept across the runs)."""
    host, port = url.removeprefix("mqtt://").split(":")
    c = mqtt.Client(CallbackAPIVersion.VERSION2)
    c.connect(host, int(port))
    c.loop_start()
    infos = [c.publish(f"betbox/v1/bench/retained/table-{i // 16}/unit-{i % 16}",
                       json.dumps({"schema": 1, "state": "online", "pad": "x" * 120}), qos=1, retain=True)
             for i in range(n)]
    for info in infos:
        info.wait_for_publish(30)
    c.disconnect()
    c.loop_stop()


def bare_commits(n: int, tmp: Path) -> list[float]:
    """A bare SQLite commit as the journal makes one (WAL, synchronous=FULL: one fsync), one
    row of a step's size: what one durable commit costs on this disk."""
    import sqlite3

    db = sqlite3.connect(tmp / "bare-commit.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body TEXT)")
    body = "x" * 300
    out = []
    for _i in range(n):
        t0 = time.perf_counter()
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO t (body) VALUES (?)", (body,))
        db.execute("COMMIT")
        out.append(time.perf_counter() - t0)
    db.close()
    return out


def outbox_round_trips(url: str, n: int, tmp: Path) -> list[float]:
    bus = connect_bus(url, "outbox-bench/seat-1", outbox_path=tmp / "lat.db")   # not a unit the ingest runs use
    acked: dict[int, float] = {}
    event = threading.Event()
    original = bus.outbox.mark_acked_many

    def hook(seqs):
        original(seqs)
        now = time.perf_counter()
        for s in seqs:
            acked[s] = now
        event.set()

    bus.outbox.mark_acked_many = hook
    out = []
    for i in range(n):
        event.clear()
        t0 = time.perf_counter()
        seq = bus.report("progressive_wager", {"amount": "5"}, table="outbox-bench", box=1, round=i + 1)
        while seq not in acked:
            event.wait(10)
            event.clear()
        out.append(acked[seq] - t0)
    bus.close()
    return out


def outbox_burst(url: str, n: int, tmp: Path) -> tuple[float, float]:
    bus = connect_bus(url, "outbox-bench/seat-2", outbox_path=tmp / "burst.db")
    t0 = time.perf_counter()
    for i in range(n):
        bus.report("progressive_wager", {"amount": "5"}, table="outbox-bench", box=2, round=i + 1)
    t_put = time.perf_counter() - t0
    wait_until(bus.drained, 300, "the burst acknowledged", step=0.005)
    t_all = time.perf_counter() - t0
    bus.close()
    return n / t_put, n / t_all


def payloads(unit: str, n: int) -> list[tuple[str, bytes]]:
    table, box = unit.split("/")[0], int(unit.rsplit("-", 1)[1])
    return [(topics.report_topic(unit), json.dumps({
        "schema": 1, "id": f"{unit.replace('/', '-')}-{i:08d}", "unit": unit, "table": table, "box": box,
        "seq": i, "kind": "progressive_wager", "round": i, "body": {"amount": "5"}}).encode())
        for i in range(1, n + 1)]


def dealer_payloads(table: str, rounds: int, boxes: int) -> list[tuple[str, bytes]]:
    """The dealer's record of each round (every box's 5 progressive wager): what the
    controller books the seats' wagers by."""
    return [(topics.report_topic(f"{table}/dealer"), json.dumps({
        "schema": 1, "id": f"{table}-dealer-{i:08d}", "unit": f"{table}/dealer", "table": table, "seq": i,
        "kind": "round_progressive", "round": i, "body": {"meter": "1000", "boxes": [
            {"box": b, "wager": "5", "hit": None} for b in range(1, boxes + 1)]}}).encode())
        for i in range(1, rounds + 1)]


def ingest_direct(n: int, tmp: Path, batch: int = 1) -> float:
    """Reports/s: a seat's wager and the dealer's record of its round, each booked; one
    transaction per ``batch`` reports."""
    ctl = controller(tmp / f"direct-{batch}-{time.monotonic_ns()}.db")
    rounds = n // 2
    msgs = [m for pair in zip(payloads("bench/seat-1", rounds), dealer_payloads("bench", rounds, 1), strict=True) for m in pair]
    t0 = time.perf_counter()
    for i in range(0, len(msgs), batch):
        ctl.ingest_batch(msgs[i:i + batch])
    dt = time.perf_counter() - t0
    assert report(ctl.db)["pools"]["main"]["meters"]["wagers"] == rounds
    ctl.close()
    return len(msgs) / dt


def fresh_controller_session(url: str) -> None:
    """Discard the jackpot controller's persistent session (fixed client id). Each run here
    starts a controller with a new, empty database: a session left by the previous run
    still holds reports queued for that controller (the broker hands them to whoever
    resumes it), and the new controller would take them as the first reports of those
    units and log reports 1..N as missing (gap). In service the controller keeps its
    database, and such reports are duplicates it drops."""
    host, port = _host_port(plain_url(url))
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="betbox-jackpot-main", clean_session=True)
    c.connect(host, int(port))
    c.loop_start()
    # and the marks the last controller left retained: the new units' outboxes are empty
    for unit in ("c2r/dealer", "c2r/seat-1"):
        c.publish(topics.confirmed_topic("main", unit), b"", qos=1, retain=True).wait_for_publish(10)
    c.disconnect()
    c.loop_stop()


PUBLISHERS = """
import json, sys, threading
import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
host, port, n, plan = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
clients = []
for p in range(n):
    c = mqtt.Client(CallbackAPIVersion.VERSION2)
    c.max_inflight_messages_set(1000)
    up = threading.Event()
    c.on_connect = lambda *a, e=up: e.set()
    c.connect(host, port)
    c.loop_start()
    if not up.wait(10):
        sys.exit(f"publisher {p + 1}: no CONNACK")
    clients.append(c)
messages = json.load(open(plan))
print("ready", flush=True)
sys.stdin.readline()
infos = [clients[k].publish(t, m, qos=1) for k, t, m in messages]
for info in infos:
    info.wait_for_publish(300)
for c in clients:
    c.disconnect()
    c.loop_stop()
"""


def ingest_via_broker(url: str, n: int, publishers: int, tmp: Path, bare: bool = False) -> tuple[float, int]:
    """Reports/s through the broker into a new controller, and the gaps it recorded; with
    ``bare``, into a plain paho subscriber on the controller's persistent session instead
    (the broker's own rate: nothing stored, each message acknowledged as it comes)."""
    host, port = url.removeprefix("mqtt://").split(":")
    fresh_controller_session(url)
    if bare:
        svc = BareSubscriber(url)
        ctl = svc
    else:
        ctl = controller(tmp / f"served-{time.monotonic_ns()}.db")
        svc = JackpotService(ctl, config_from_url(url)).start()
    per = n // publishers
    batches = [payloads(f"bench/seat-{p + 1}", per) for p in range(publishers)]
    batches.append(dealer_payloads("bench", per, publishers))   # the dealer's record of every round
    # round by round: each seat's wager, then the dealer's record of that round (a table's
    # order; all of one seat first would hold every claim waiting for the dealer's record)
    plan = tmp / f"plan-{time.monotonic_ns()}.json"
    plan.write_text(json.dumps([[k, t, p.decode()] for i in range(per)
                                for k, batch in enumerate(batches) for t, p in [batch[i]]]))
    # The publishers run in a process of their own (as seats do): in this one they would
    # take the controller's CPU (one interpreter lock). Start the clock only once every
    # publisher's CONNACK is in and the controller's subscription is in place (it
    # subscribes before it says online): the run measures ingest, not connection set-up.
    online = threading.Event()
    watch = mqtt.Client(CallbackAPIVersion.VERSION2)
    watch.on_message = lambda c, u, m: online.set() if m.payload and json.loads(m.payload).get(
        "state") == "online" else None
    watch.connect(host, int(port))
    watch.subscribe(topics.jackpot_status_topic(svc.link_id), qos=1)
    watch.loop_start()
    pub = subprocess.Popen([sys.executable, "-c", PUBLISHERS, host, port, str(publishers + 1), str(plan)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if pub.stdout.readline().strip() != "ready":
            raise RuntimeError("the publishers did not connect")
        if not online.wait(10):
            raise RuntimeError("the controller did not come online")
        watch.disconnect()
        watch.loop_stop()
        t0 = time.perf_counter()
        pub.stdin.write("go\n")
        pub.stdin.flush()
        total = per * (publishers + 1)
        wait_until(lambda: sum(ctl.marks().values()) >= total, 600, "the controller's ingest", step=0.01)
        dt = time.perf_counter() - t0
    finally:
        pub.stdin.close()
        pub.wait(30)
    svc.stop()
    if bare:
        return total / dt, 0
    gaps = sum(u["gaps_recorded"] for u in report(ctl.db)["units"].values())
    ctl.close()
    print(f"    (controller: {total} reports in {svc.batches} transactions)", flush=True)
    return total / dt, gaps


class BareSubscriber:
    """A paho client as the controller's session (same client id, persistent) that only
    counts: ``marks()`` as the controller's, ``link_id``, ``stop()``."""

    link_id = "main"

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("mqtt://").split(":")
        self.count = 0
        self.c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="betbox-jackpot-main", clean_session=False)
        self.c.on_message = self._on_message
        self.c.on_connect = lambda c, *a: (c.subscribe(topics.REPORT_PATTERN, qos=1),
                                           c.publish(topics.jackpot_status_topic("main"),
                                                     json.dumps({"state": "online"}), qos=1, retain=True))
        self.c.connect(host, int(port))
        self.c.loop_start()

    def _on_message(self, client, userdata, msg) -> None:
        self.count += 1

    def marks(self) -> dict[str, int]:
        return {"all": self.count}

    def stop(self) -> None:
        self.c.publish(topics.jackpot_status_topic("main"), json.dumps({"state": "offline"}), qos=1, retain=True)
        self.c.disconnect()
        self.c.loop_stop()


#: the stages of the card-to-report trace, in order (each the first mark after the one
#: before): ``d_``/``s_`` the dealer's / the seat's; ``step`` its step starts, ``handled`` the
#: input checked and applied (the engine), ``reported`` its records and reports written in
#: the open transaction, ``committed`` COMMIT returned (the fsync), ``published`` its messages
#: handed to paho, ``wire`` paho's network thread wrote a packet, ``s_in`` the seat's paho
#: thread queued the dealer's message, ``report`` the seat's report handed to paho
STAGES = ("d_step", "d_handled", "d_reported", "d_committed", "d_published", "d_wire", "s_in",
          "s_step", "s_handled", "s_reported", "s_committed", "s_published", "report", "s_wire")
TRACE = ("card at the shoe port -> dealer step starts", "dealer: input checked, engine applies",
         "dealer: records + reports written (in tx)", "dealer: COMMIT (one fsync)",
         "dealer: its messages handed to paho", "-> dealer's packet written (paho's thread)",
         "-> broker -> seat's paho thread queues it", "seat: queue -> its step starts",
         "seat: input checked, engine applies", "seat: records + reports (settlement) in tx",
         "seat: COMMIT (one fsync)", "seat: its messages handed to paho",
         "seat: its report handed to paho", "-> seat's packet written (paho's thread)",
         "-> broker's PUBACK arrives")


class _Inbox:
    """A unit's inbox whose ``put`` is timed (the seat's input queued)."""

    def __init__(self, put, inner) -> None:
        self.put, self._inner = put, inner

    def __getattr__(self, name):
        return getattr(self._inner, name)


class _Timing:
    """The bench's hooks (on the instances, the firmware untouched): reports put and
    acknowledged, each stage of :data:`STAGES`, the dealer's steps in its journal."""

    def __init__(self, dealer=None, seat=None, dbus=None, sbus=None) -> None:
        """Either unit may be in another process (``--split``): its own _Timing there."""
        self.puts: dict[int, tuple[float, str]] = {}
        self.acked: dict[int, float] = {}
        self.marks: dict[str, list[float]] = {k: [] for k in STAGES}
        self.steps = [0]                            # dealer steps in its journal (committed)
        self.durable = threading.Condition()        # told at each: the bench waits without polling
        self._mids: dict[int, int] = {}
        self.sent: dict[int, float] = {}            # report seq -> first handed to paho
        self._puback_at: dict[int, float] = {}
        for tag, unit, bus in (("d", dealer, dbus), ("s", seat, sbus)):
            if unit is None:
                continue
            self._around(unit, "step", f"{tag}_step", None)
            self._around(unit, "handle", None, f"{tag}_handled")
            self._around(unit, "_report", None, f"{tag}_reported")
            self._around(unit.journal, "_tx_locked", None, f"{tag}_committed")
            self._around(unit.journal, "notify_committed", f"{tag}_published", None)
            self._wire(bus._client, f"{tag}_wire")
        # what caused what: a report -> the dealer's message the seat's step took -> the card
        # whose dealer step emitted it (``inputs``: the bench's (time, "card"|"button"))
        self.inputs: list[tuple[float, str]] = []
        self.cause: dict[int, int] = {}             # report seq -> dealer message seq
        self.card_of: dict[int, float] = {}         # dealer message seq -> its card's time
        self._taking: dict[str, list] = {"d": [None], "s": [None]}     # what each unit's step took
        if dealer is not None:
            self._counted(dealer.journal)
            self._taken(dealer, "d", lambda kind, body: self.inputs[-1][0] if kind == "card" and self.inputs else None)
        if seat is not None:
            self._seat(seat, sbus)
            self._taken(seat, "s", lambda kind, body: body.get("seq") if kind == "msg" and str(
                body.get("sender", "")).endswith("/dealer") else None)

    def _taken(self, unit, tag: str, read) -> None:
        """Note what the step under way took (the card's time, the dealer message's seq)."""
        inner, taking = unit.step, self._taking[tag]

        def step(kind, body):
            taking[0] = read(kind, body)
            return inner(kind, body)
        unit.step = step

    def _seat(self, seat, sbus) -> None:
        self._put, self._mark = sbus.outbox.put, sbus.outbox.mark_acked_many
        sbus.outbox.put, sbus.outbox.mark_acked_many = self.put, self.mark
        self._post = seat.inbox.put
        seat.inbox = _Inbox(self.seat_in, seat.inbox)
        self._publish, self._reports = sbus._client.publish, topics.report_topic(seat.unit_id)
        self._on_publish = sbus._client.on_publish
        sbus._client.publish, sbus._client.on_publish = self.publish, self.on_publish

    def _around(self, obj, name: str, before: str | None, after: str | None) -> None:
        """Mark ``before`` as ``obj.name`` is called and ``after`` as it returns."""
        inner = getattr(obj, name)
        xs, ys = self.marks[before] if before else None, self.marks[after] if after else None

        def timed(*args, **kwargs):
            if xs is not None:
                xs.append(time.perf_counter())
            try:
                return inner(*args, **kwargs)
            finally:
                if ys is not None:
                    ys.append(time.perf_counter())
        setattr(obj, name, timed)

    def _wire(self, client, stage: str) -> None:
        """Mark each time paho's network thread starts writing queued packets out, and (in
        ``<stage>_direct``) each time a publishing thread wrote its own packet (firmware since
        session 10: ChunkedClient._write_head, inside the hand-over to paho)."""
        inner, xs = client._packet_write, self.marks[stage]

        def packet_write():
            if client._out_packet:              # it starts writing what was queued
                xs.append(time.perf_counter())
            return inner()
        client._packet_write = packet_write
        head = getattr(client, "_write_head", None)
        if head is None:
            return
        ds = self.marks.setdefault(f"{stage}_direct", [])

        def write_head():
            before = len(client._out_packet)
            out = head()
            if len(client._out_packet) < before:    # it wrote a packet out itself
                ds.append(time.perf_counter())
            return out
        client._write_head = write_head

    def publish(self, topic, payload=None, *args, **kwargs):
        info = self._publish(topic, payload, *args, **kwargs)
        if topic == self._reports:
            now = time.perf_counter()
            self.marks["report"].append(now)
            seq = json.loads(payload)["seq"]
            self._mids[info.mid] = seq
            self.sent.setdefault(seq, now)
        return info

    def on_publish(self, client, userdata, mid, *args) -> None:
        self._puback_at.setdefault(mid, time.perf_counter())
        self._on_publish(client, userdata, mid, *args)

    def pubacks(self) -> dict[int, float]:
        """seq -> when the broker's PUBACK of that report arrived."""
        return {seq: self._puback_at[mid] for mid, seq in self._mids.items() if mid in self._puback_at}

    def put(self, topic, kind, body, key=None, extra=None):
        seq = self._put(topic, kind, body, key=key, extra=extra)
        if seq is not None:
            self.puts[seq] = (time.perf_counter(), kind)
            if self._taking["s"][0] is not None:
                self.cause[seq] = self._taking["s"][0]
        return seq

    def mark(self, seqs):
        self._mark(seqs)
        now = time.perf_counter()
        for q in seqs:
            self.acked.setdefault(q, now)

    def seat_in(self, item) -> None:
        self.marks["s_in"].append(time.perf_counter())
        self._post(item)

    def _counted(self, journal) -> None:
        """The dealer's steps once in its journal: the bench deals the next card then."""
        write_step = journal.write_step

        def step_hook(records, *args, **kwargs):
            out = write_step(records, *args, **kwargs)
            if self._taking["d"][0] is not None:
                for r in records:
                    if r.dir == "out" and r.seq is not None:
                        self.card_of[r.seq] = self._taking["d"][0]
            with self.durable:
                self.steps[0] += 1
                self.durable.notify_all()
            return out
        journal.write_step = step_hook


def unit_bus(url: str, tmp: Path, unit_id: str, journal, role: str):
    """A unit's bus with its outbox as ``betbox run`` makes it: in its journal's file
    (firmware before #17.5: a file of its own beside it)."""
    from firmware.link.outbox import Outbox

    old = tmp / f"{unit_id.replace('/', '-')}-outbox.db"
    tls = tls_files() if url.startswith("mqtts://") else None
    try:
        outbox = Outbox(old, unit_id, journal=journal)
    except TypeError:
        return connect_bus(url, unit_id, role=role, outbox_path=old, tls=tls)
    return connect_bus(url, unit_id, role=role, outbox=outbox, tls=tls)


def trace(card: float, marks: dict[str, list[float]], sent: float, acked: float) -> list[float] | None:
    """The stage durations (s) of one card's path: the dealer's stages forward from the card
    (each the first mark after the one before), the seat's backward from its report handed
    to paho at ``sent`` (each the last mark before the one after: the seat may take a
    message of the dealer's step before the one that makes the report), then the PUBACK."""
    import bisect

    def direct(stage: str, lo: float, hi: float) -> bool:
        """The publishing thread wrote its packet itself between ``lo`` and ``hi``."""
        ds = marks.get(f"{stage}_direct", [])
        i = bisect.bisect_left(ds, lo)
        return i < len(ds) and ds[i] <= hi

    split = STAGES.index("s_in")
    at, before, out = card, card, []
    for stage in STAGES[:split]:
        if stage == "d_wire" and direct(stage, before, at):    # written inside the hand-over
            out.append(0.0)
            continue
        xs = marks[stage]
        i = bisect.bisect_left(xs, at)
        if i == len(xs):
            return None
        out.append(xs[i] - at)
        before, at = at, xs[i]
    back, later, handed = [], sent, sent
    for stage in reversed(STAGES[split:-2]):
        xs = marks[stage]
        i = bisect.bisect_right(xs, later) - 1
        if i < 0 or xs[i] < at:
            return None
        back.append(later - xs[i])
        later = xs[i]
        if stage == "s_published":
            handed = later
    out.append(later - at)
    wire = marks["s_wire"]
    i = bisect.bisect_left(wire, sent)
    if direct("s_wire", handed, sent):          # the step wrote its report itself
        written = sent
    else:
        written = wire[i] if i < len(wire) and wire[i] <= acked else sent   # else a write under way took it
    return out + back[::-1] + [written - sent, acked - written]


def _deal_round(dealer, shoe, console, sim, inputs: list[tuple[float, str]], timing: "_Timing",
                pace: float = 0.0) -> None:
    """Deal the round in play as a dealer: the next card (or button) once the dealer's step
    for the one before is durable (in its journal), and with ``pace`` (s) not sooner than
    that after the one before (a dealer's rhythm; 0: at once); ``inputs`` gets (time,
    "card"|"button")."""
    from firmware.engine.events import Action, Decision

    steps = timing.steps
    while dealer.phase == "play":
        state = dealer.round
        n, written = len(state.history), steps[0]
        expect = state.expecting()
        if expect.kind == "nothing":        # the round is over; the dealer's phase follows
            wait_until(lambda: dealer.phase != "play", 10, "the round's end", step=0.0002)
            continue
        if pace and inputs and expect.kind in ("card", "decision"):   # the units idle, as at a table
            time.sleep(max(0.0, inputs[-1][0] + pace - time.perf_counter()))
        if expect.kind == "card":
            inputs.append((time.perf_counter(), "card"))
            shoe.deal(str(sim.draw()))
        elif expect.kind == "decision":
            legal = [a for a in (Action.STAND, Action.SWITCH, Action.HIT, *Action)
                     if state.why_not(Decision(expect.box, a, None)) is None]
            if not legal:
                raise RuntimeError(f"no action to press for {expect}")
            inputs.append((time.perf_counter(), "button"))
            console.press(str(legal[0]))
        else:                               # the dealer's own step (bets closing) comes first
            wait_until(lambda n=n: len(dealer.round.history) > n or dealer.phase != "play", 10,
                       f"the dealer's {expect.kind}", step=0.0005)
            continue
        # as a dealer: the next card once this one's step is durable (journalled)
        with timing.durable:
            if not timing.durable.wait_for(lambda n=n, written=written: steps[0] > written and (
                    len(dealer.round.history) > n or dealer.phase != "play"), 10):
                raise RuntimeError("the dealer's step was not in its journal within 10 s")


def _latencies(puts: dict[int, tuple[float, str]], cause: dict[int, float], acked: dict[int, float],
               pubacked: dict[int, float], sent: dict[int, float], marks: dict[str, list[float]],
               traces: list[list[float]] | None) -> tuple[list[float], list[float]]:
    """Each report a card caused (the wager booked at the deal, the result; ``cause``: report
    seq -> its card's time): card -> its PUBACK, card -> marked acknowledged; ``traces``
    gets its stages."""
    out: tuple[list[float], list[float]] = ([], [])
    for q, (_t, kind) in puts.items():
        card = cause.get(q)
        if kind not in ("progressive_wager", "round_result") or card is None:
            continue
        if q not in acked or q not in pubacked:
            print(f"  (report {q} {kind} was put after the run's last wait and not timed)")
            continue
        out[0].append(pubacked[q] - card)
        out[1].append(acked[q] - card)
        staged = trace(card, marks, sent[q], pubacked[q])
        if traces is not None and staged is not None:
            traces.append(staged)
    return out


def _card_causes(report_msg: dict[int, int], card_of: dict[int, float]) -> dict[int, float]:
    """report seq -> the time of the card whose dealer step emitted the message it came of."""
    return {q: card_of[m] for q, m in report_msg.items() if m in card_of}


def card_to_report(url: str, rounds: int, tmp: Path, traces: list[list[float]] | None = None,
                   cpu: list | None = None, pace: float = 0.0) -> tuple[list[float], list[float]]:
    """Latencies (s) from shoe.deal(card) to the broker's PUBACK of the report it causes
    arriving at the seat, and to the seat's outbox marking it acknowledged (bookkeeping
    after the PUBACK); ``traces`` gets each one's stage durations (:data:`TRACE`)."""
    import random
    from fractions import Fraction

    from firmware.commands.run import serve
    from firmware.engine.profile import load_profile
    from firmware.jackpot.service import JackpotService
    from firmware.link.presence import ControllerWatch
    from firmware.link.reporter import DealerReporter, SeatReporter
    from firmware.runtime.dealer import DealerUnit
    from firmware.runtime.journal import Journal
    from firmware.runtime.seat import SeatUnit
    from firmware.runtime.spots import seat_spots
    from firmware.sim import chipset
    from firmware.sim.shoe import SimShoe
    from hal.mock import MockCardShoe, MockChipReader, MockConsole, MockLamps

    profile = load_profile("rws-blackjack-switch")
    spots = list(seat_spots(profile))
    switch = sys.getswitchinterval()
    try:                                            # as a unit's process under betbox run
        from firmware.commands.run import quick_handoffs
        quick_handoffs()
    except ImportError:                             # firmware before #17.5: Python's default
        pass
    fresh_controller_session(url)
    ctl = controller(tmp / "c2r-jackpot.db")
    svc = JackpotService(ctl, config_from_url(url, tls=tls_files() if url.startswith("mqtts://") else None),
                         tick=0.02).start()
    djournal = Journal(tmp / "c2r-dealer.db", "c2r/dealer", "dealer")
    sjournal = Journal(tmp / "c2r-seat.db", "c2r/seat-1", "seat")
    dbus = unit_bus(url, tmp, "c2r/dealer", djournal, "dealer")
    sbus = unit_bus(url, tmp, "c2r/seat-1", sjournal, "seat")
    dealer = DealerUnit("c2r/dealer", "c2r", dbus, djournal, profile, decks=6, close_wait=None)
    lamps = MockLamps("lamps", ["progressive", "bets_locked"])
    lamps.start(lambda e: None)
    seat = SeatUnit("c2r/seat-1", "c2r", 1, sbus, sjournal, chipset.registry(1, len(spots)), spots, lamps)
    shoe, console, reader = MockCardShoe("shoe"), MockConsole("console"), MockChipReader("reader", spots)
    timing = _Timing(dealer, seat, dbus, sbus)
    inputs = timing.inputs                          # (time, "card"|"button")
    puts, acked, marks = timing.puts, timing.acked, timing.marks
    SeatReporter(seat, sbus)
    DealerReporter(dealer, dbus)                    # as under betbox run: the dealer reports too
    for unit, bus in ((dealer, dbus), (seat, sbus)):
        ControllerWatch(bus, "main", "c2r").feed(unit)
    shoe.start(dealer.post)
    console.start(dealer.post)
    reader.start(seat.post)
    dealer.recover()
    seat.recover()
    dealer.start()
    seat.start()
    stop = threading.Event()
    threads = [threading.Thread(target=serve, args=(u, stop.is_set), daemon=True) for u in (dealer, seat)]
    for t in threads:
        t.start()
    wait_until(lambda: seat.controller.link == "up" and 1 in dealer.online, 30, "seat up, controller up")
    _settle()
    cpu0, steps0 = time.process_time(), dealer.journal.last_step + seat.journal.last_step
    sim = SimShoe(6, random.Random(1))
    main_chips = chipset.chips_for(Fraction(10), 1, spots.index("main"), 0)
    prog_chips = chipset.chips_for(profile.progressive.wager, 1, spots.index("progressive"), 0)
    try:
        for _r in range(rounds):
            if sim.cut_card_out:
                sim.shuffle()
                shoe.shuffle()
            n0 = dealer.round_no
            console.press("open_bets")
            wait_until(lambda n0=n0: seat.phase == "open" and seat.round_no == n0 + 1, 10, "bets open", step=0.0005)
            reader.place_chips("main", main_chips)
            reader.place_chips("progressive", prog_chips)
            for _ in range(3):
                reader.cycle(1)
            wait_until(lambda: set(seat.offered or {}) == {"main", "progressive"}, 10, "the offer", step=0.0005)
            console.press("no_more_bets")
            wait_until(lambda: dealer.phase == "play", 10, "bets closed", step=0.0005)
            _deal_round(dealer, shoe, console, sim, inputs, timing, pace)
            wait_until(lambda: seat.phase in ("over", "void"), 10, "the seat's result", step=0.0005)
            reader.remove_chips("main")
            reader.remove_chips("progressive")
            for _ in range(4):
                reader.cycle(1)
        wait_until(lambda: all(q in acked for q in puts), 30, "every report acknowledged")
        if cpu is not None:
            cpu[:] = [time.process_time() - cpu0, dealer.journal.last_step + seat.journal.last_step - steps0]
    finally:
        stop.set()
        for t in threads:
            t.join(5)
        for bus in (dbus, sbus):
            bus.close()
        svc.stop()
        ctl.close()
        sys.setswitchinterval(switch)
        _unsettle()
    return _latencies(puts, _card_causes(timing.cause, timing.card_of), acked, timing.pubacks(), timing.sent,
                      marks, traces)


# -- --split: the seat and the controller each in a process of their own -------------------

SEAT = "c2r/seat-1"


def _seat_unit(url: str, tmp: Path):
    """The seat as ``betbox run`` wires it: journal, outbox in it, reporter, controller watch."""
    from firmware.engine.profile import load_profile
    from firmware.link.presence import ControllerWatch
    from firmware.link.reporter import SeatReporter
    from firmware.runtime.journal import Journal
    from firmware.runtime.seat import SeatUnit
    from firmware.runtime.spots import seat_spots
    from firmware.sim import chipset
    from hal.mock import MockChipReader, MockLamps

    spots = list(seat_spots(load_profile("rws-blackjack-switch")))
    sjournal = Journal(tmp / "c2r-seat.db", SEAT, "seat")
    sbus = unit_bus(url, tmp, SEAT, sjournal, "seat")
    lamps = MockLamps("lamps", ["progressive", "bets_locked"])
    lamps.start(lambda e: None)
    seat = SeatUnit(SEAT, "c2r", 1, sbus, sjournal, chipset.registry(1, len(spots)), spots, lamps)
    reader = MockChipReader("reader", spots)
    timing = _Timing(seat=seat, sbus=sbus)
    SeatReporter(seat, sbus)
    ControllerWatch(sbus, "main", "c2r").feed(seat)
    reader.start(seat.post)
    seat.recover()
    seat.start()
    return seat, sbus, reader, spots, timing


class _Steps:
    """Waits for a unit's state on a condition its steps notify (an observer after each
    step): a poll of the bench's own, every 0.5 ms, takes the interpreter from the unit's
    threads in its process while they carry a card's message to its report."""

    def __init__(self, unit) -> None:
        self.changed = threading.Condition()
        unit.observe(self._stepped)

    def _stepped(self, unit) -> None:
        with self.changed:
            self.changed.notify_all()

    def wait(self, predicate, timeout: float, what: str) -> None:
        with self.changed:
            if not self.changed.wait_for(predicate, timeout):
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


def seat_child(url: str, tmp: Path) -> None:
    """``--seat-child URL DIR``: the seat in its own process, told by lines on stdin
    (``bet N``: place its chips once round N is open, answer ``offered``; ``clear``: take
    them off once the round is over; ``stop``: print its marks as one JSON line)."""
    from fractions import Fraction

    from firmware.commands.run import quick_handoffs, serve
    from firmware.engine.profile import load_profile
    from firmware.sim import chipset

    quick_handoffs()
    seat, sbus, reader, spots, timing = _seat_unit(url, tmp)
    stop = threading.Event()
    thread = threading.Thread(target=serve, args=(seat, stop.is_set), daemon=True)
    thread.start()
    wait_until(lambda: seat.controller.link == "up", 30, "the controller up")
    steps = _Steps(seat)
    wager = load_profile("rws-blackjack-switch").progressive.wager
    chips = {"main": chipset.chips_for(Fraction(10), 1, spots.index("main"), 0),
             "progressive": chipset.chips_for(wager, 1, spots.index("progressive"), 0)}
    _settle()
    print("ready", flush=True)
    cpu0, steps0 = time.process_time(), seat.journal.last_step
    for line in sys.stdin:
        word, *args = line.split()
        if word == "bet":
            steps.wait(lambda n=int(args[0]): seat.phase == "open" and seat.round_no == n, 10, "bets open")
            for spot, on in chips.items():
                reader.place_chips(spot, on)
            for _ in range(3):
                reader.cycle(1)
            steps.wait(lambda: set(seat.offered or {}) == set(chips), 10, "the offer")
            print("offered", flush=True)
        elif word == "clear":
            steps.wait(lambda: seat.phase in ("over", "void"), 10, "the seat's result")
            for spot in chips:
                reader.remove_chips(spot)
            for _ in range(4):
                reader.cycle(1)
            print("cleared", flush=True)
        elif word == "stop":
            break
    wait_until(lambda: all(q in timing.acked for q in timing.puts), 30, "every report acknowledged")
    cpu, steps = time.process_time() - cpu0, seat.journal.last_step - steps0
    stop.set()
    thread.join(5)
    sbus.close()
    print(json.dumps({"marks": {k: v for k, v in timing.marks.items() if k.startswith("s_") or k == "report"},
                      "puts": timing.puts, "acked": timing.acked, "sent": timing.sent, "cause": timing.cause,
                      "pubacks": timing.pubacks(), "cpu": cpu, "steps": steps}), flush=True)


def controller_child(url: str, db: Path) -> None:
    """``--controller-child URL DB``: the jackpot controller in its own process, until
    stdin closes."""
    tls = tls_files() if url.startswith("mqtts://") else None
    svc = JackpotService(controller(db), config_from_url(url, tls=tls), tick=0.02).start()
    print("up", flush=True)
    sys.stdin.read()
    svc.stop()


def _settle() -> None:
    """As ``betbox run`` once its unit has started: what is alive stays out of the
    collector's rounds (firmware before session 7: nothing)."""
    try:
        from firmware.commands.run import settle_heap
    except ImportError:
        return
    settle_heap()


def _unsettle() -> None:
    """The bench's process goes on to other runs: what was frozen may be collected again."""
    import gc

    gc.unfreeze()


class _Child:
    """A child process of this bench, talked to by lines."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def ask(self, line: str | None, answer: str) -> str:
        if line is not None:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        got = self.proc.stdout.readline()
        if not got.startswith(answer):
            raise RuntimeError(f"{self.proc.args[2]}: {answer!r} expected, got {got!r}")
        return got

    def end(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def card_to_report_split(url: str, rounds: int, tmp: Path, traces: list[list[float]] | None = None,
                         cpu: list | None = None, pace: float = 0.0) -> tuple[list[float], list[float]]:
    """:func:`card_to_report` with the seat and the controller each in a process of their
    own, as on a table (a seat's computer, the dealer's, the controller elsewhere): the
    units do not share an interpreter lock. Every mark is time.perf_counter, one clock
    (CLOCK_MONOTONIC) across the processes."""
    import random

    from firmware.commands.run import quick_handoffs, serve
    from firmware.engine.profile import load_profile
    from firmware.link.presence import ControllerWatch
    from firmware.link.reporter import DealerReporter
    from firmware.runtime.dealer import DealerUnit
    from firmware.runtime.journal import Journal
    from firmware.sim.shoe import SimShoe
    from hal.mock import MockCardShoe, MockConsole

    switch = sys.getswitchinterval()
    quick_handoffs()
    fresh_controller_session(url)
    ctl = _Child("--controller-child", url, str(tmp / "c2r-jackpot.db"))
    ctl.ask(None, "up")
    djournal = Journal(tmp / "c2r-dealer.db", "c2r/dealer", "dealer")
    dbus = unit_bus(url, tmp, "c2r/dealer", djournal, "dealer")
    dealer = DealerUnit("c2r/dealer", "c2r", dbus, djournal, load_profile("rws-blackjack-switch"), decks=6,
                        close_wait=None)
    shoe, console = MockCardShoe("shoe"), MockConsole("console")
    timing = _Timing(dealer=dealer, dbus=dbus)
    DealerReporter(dealer, dbus)
    ControllerWatch(dbus, "main", "c2r").feed(dealer)
    shoe.start(dealer.post)
    console.start(dealer.post)
    dealer.recover()
    dealer.start()
    stop = threading.Event()
    thread = threading.Thread(target=serve, args=(dealer, stop.is_set), daemon=True)
    thread.start()
    seat = _Child("--seat-child", url, str(tmp))
    inputs = timing.inputs
    try:
        seat.ask(None, "ready")
        wait_until(lambda: 1 in dealer.online, 30, "the seat online at the dealer")
        _settle()
        cpu0, steps0 = time.process_time(), djournal.last_step
        sim = SimShoe(6, random.Random(1))
        for _r in range(rounds):
            if sim.cut_card_out:
                sim.shuffle()
                shoe.shuffle()
            n = dealer.round_no + 1         # read before the press: its step may be taken at once
            console.press("open_bets")
            seat.ask(f"bet {n}", "offered")
            wait_until(lambda: set(dealer.offers.get(1, {})) == {"main", "progressive"}, 10, "the offer at the dealer",
                       step=0.0005)
            console.press("no_more_bets")
            wait_until(lambda: dealer.phase == "play", 10, "bets closed", step=0.0005)
            _deal_round(dealer, shoe, console, sim, inputs, timing, pace)
            seat.ask("clear", "cleared")
        got = json.loads(seat.ask("stop", "{"))
        if cpu is not None:
            cpu[:] = [time.process_time() - cpu0 + got["cpu"], djournal.last_step - steps0 + got["steps"]]
    finally:
        stop.set()
        thread.join(5)
        dbus.close()
        seat.end()
        ctl.end()
        sys.setswitchinterval(switch)
        _unsettle()
    marks = {**timing.marks, **got["marks"]}
    puts = {int(q): (t, kind) for q, (t, kind) in got["puts"].items()}
    ints = {name: {int(q): t for q, t in got[name].items()} for name in ("acked", "sent", "pubacks", "cause")}
    causes = _card_causes(ints["cause"], timing.card_of)
    return _latencies(puts, causes, ints["acked"], ints["pubacks"], ints["sent"], marks, traces)


def spread(xs: list[float], unit: str, scale: float = 1.0, width: int = 8, digits: int = 0) -> str:
    """min / median / max of the runs."""
    v = [x * scale for x in xs]
    return " / ".join(f"{x:{width}.{digits}f}" for x in (min(v), statistics.median(v), max(v))) + f" {unit}"


def _pace(text: str) -> float:
    """``--pace``: milliseconds, 0 or more."""
    pace = float(text)
    if not pace >= 0 or pace == float("inf"):
        raise argparse.ArgumentTypeError(f"{text}: a pace is 0 ms or more")
    return pace


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3, help="runs of every figure (default 3)")
    ap.add_argument("--n", type=int, default=300, help="sequential round trips per run (default 300)")
    ap.add_argument("--burst", type=int, default=5000, help="reports in the throughput runs (default 5000)")
    ap.add_argument("--rounds", type=int, default=60, help="rounds in the card-to-report run (default 60)")
    ap.add_argument("--retained", type=int, default=2000, help="retained messages on the broker (default 2000)")
    ap.add_argument("--only", choices=("all", "c2r"), default="all",
                    help="c2r: only the card-to-report figures and their baselines (default all)")
    layout = ap.add_mutually_exclusive_group()
    layout.add_argument("--split", action="store_true",
                        help="card to report only as on a table: dealer, seat, controller each in a process "
                             "of its own (the default figure; without this flag the all-in-one follows it)")
    layout.add_argument("--one-process", action="store_true",
                        help="card to report only with every unit in the bench's process (one interpreter lock)")
    ap.add_argument("--tls", action="store_true",
                    help="card to report over mqtts:// as tables run (TLS, client certificates from a "
                         "throwaway CA), its bare paho round trip over TLS too")
    ap.add_argument("--pace", type=_pace, default=0.0, metavar="MS",
                    help="card to report with the dealer's inputs at least MS ms apart (the units idle "
                         "between them, as at a table, where a dealer deals about a card a second); "
                         "default 0: each one as soon as the step before is durable")
    ap.add_argument("--seat-child", nargs=2, metavar=("URL", "DIR"), help=argparse.SUPPRESS)
    ap.add_argument("--controller-child", nargs=2, metavar=("URL", "DB"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.seat_child:
        return seat_child(args.seat_child[0], Path(args.seat_child[1]))
    if args.controller_child:
        return controller_child(args.controller_child[0], Path(args.controller_child[1]))
    everything = args.only == "all"
    traces: list[list[float]] = []
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.2f} at the start")
    fig: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        fig.setdefault(name, []).append(value)

    with tempfile.TemporaryDirectory(prefix="bench-mqtt-") as d:
        tmp = Path(d)
        extra, c2r_url = "", ""
        if args.tls:                    # a second listener, as a table's broker has it (docs/technician.md)
            from tests.link.broker import free_port
            made, tls_port = make_pki(tmp / "pki", {"unit": "c2r:unit"}), free_port()
            pki = {"ca": str(made["ca.pem"]), "cert": str(made["unit.pem"]), "key": str(made["unit.key"])}
            extra = (f"listener {tls_port} 127.0.0.1\ncafile {made['ca.pem']}\ncertfile {made['broker.pem']}\n"
                     f"keyfile {made['broker.key']}\nrequire_certificate true\n")
            c2r_url = f"mqtts://127.0.0.1:{tls_port}"
        broker = Broker(tmp / "mosquitto", extra=extra).start()
        c2r_url = c2r_url or broker.url
        if args.tls:
            os.environ[TLS_ENV] = json.dumps({**pki, "plain": broker.url})
        # the persistence shipped before #18 (the whole database rewritten and fsynced on
        # every change), for the same ingest beside it
        old = Broker(tmp / "mosquitto-per-change")
        old.conf.write_text(old.conf.read_text().replace("autosave_interval 30",
                                                         "autosave_on_changes true\nautosave_interval 1"))
        old.start()
        try:
            retain(broker.url, args.retained)
            retain(old.url, args.retained)
            bare_round_trips(broker.url, 50)                          # warm up
            for run in range(args.runs):
                for sub in ("split", "one"):
                    (tmp / f"r{run}" / sub).mkdir(parents=True)
                if everything:
                    add("bare_p50", pct(bare_round_trips(broker.url, args.n), 50))
                    add("outbox_p50", pct(outbox_round_trips(broker.url, args.n, tmp / f"r{run}"), 50))
                    put_rate, all_rate = outbox_burst(broker.url, args.burst, tmp / f"r{run}")
                    add("put", put_rate)
                    add("put_acked", all_rate)
                    add("direct_1", ingest_direct(args.burst, tmp, 1))
                    add("direct_64", ingest_direct(args.burst, tmp, 64))
                    add("broker_bare", ingest_via_broker(broker.url, args.burst, 4, tmp, bare=True)[0])
                    rate, gaps = ingest_via_broker(broker.url, args.burst, 4, tmp)
                    add("broker_ctl", rate)
                    add("gaps", gaps)
                    add("old_broker_ctl", ingest_via_broker(old.url, min(args.burst, 2000), 4, tmp)[0])
                if not args.one_process:        # as on a table: each unit a process of its own
                    cpu = [0.0, 0]
                    c2r, c2r_marked = card_to_report_split(c2r_url, args.rounds, tmp / f"r{run}" / "split",
                                                           traces, cpu, args.pace / 1000)
                    add("cpu_step", cpu[0] / max(cpu[1], 1))
                    add("c2r_p50", pct(c2r, 50))
                    add("c2r_p99", pct(c2r, 99))
                    add("c2r_mark_p50", pct(c2r_marked, 50))
                    add("c2r_mark_p99", pct(c2r_marked, 99))
                if not args.split:              # all in the bench's process: a secondary figure
                    cpu = [0.0, 0]
                    c2r, _ = card_to_report(c2r_url, args.rounds, tmp / f"r{run}" / "one",
                                            traces if args.one_process else None, cpu, args.pace / 1000)
                    add("one_cpu_step", cpu[0] / max(cpu[1], 1))
                    add("one_p50", pct(c2r, 50))
                    add("one_p99", pct(c2r, 99))
                add("c2r_bare_p50", pct(bare_round_trips(c2r_url, args.n), 50))
                add("commit_p50", pct(bare_commits(args.n, tmp / f"r{run}"), 50))
                print(f"  run {run + 1} done (load average {os.getloadavg()[0]:.2f})", flush=True)
        finally:
            broker.stop()
            old.stop()
    print(f"{args.runs} runs, min / median / max; broker as shipped (persistence every 30 s), "
          f"{args.retained} retained messages; load average {os.getloadavg()[0]:.2f} at the end")
    if everything:
        print(f"publish -> PUBACK, one at a time, p50 (n={args.n} per run):")
        print(f"  bare paho QoS 1, a subscriber    {spread(fig['bare_p50'], 'ms', 1000, 7, 3)}")
        print(f"  report via outbox                {spread(fig['outbox_p50'], 'ms', 1000, 7, 3)}")
        print(f"outbox burst of {args.burst}: put {spread(fig['put'], 'reports/s')}")
        print(f"                     put-to-all-acknowledged {spread(fig['put_acked'], 'reports/s')}")
        print("controller ingest, direct:")
        print(f"  one transaction per report       {spread(fig['direct_1'], 'reports/s')}")
        print(f"  group commit, 64 per transaction {spread(fig['direct_64'], 'reports/s')}")
        print(f"ingest through the broker, 4 seats' publishers + a dealer's in another process, "
              f"{args.burst // 4 * 5} reports:")
        print(f"  bare paho subscriber (broker)    {spread(fig['broker_bare'], 'reports/s')}")
        print(f"  jackpot controller               {spread(fig['broker_ctl'], 'reports/s')}"
              + (f"  ({int(sum(fig['gaps']))} gap(s) recorded: out of order)" if sum(fig["gaps"]) else ""))
        print(f"  the same, broker saving per change (before #18; {min(args.burst, 2000) // 4 * 5} reports) "
              f"{spread(fig['old_broker_ctl'], 'reports/s')}")
    print(f"card at the dealer's shoe -> seat's report acknowledged ({args.rounds} rounds per run; "
          + (f"the dealer's inputs at least {args.pace:g} ms apart; " if args.pace else
             "each input as soon as the dealer's step before is durable (see --pace); ")
          + ("over mqtts://, TLS with client certificates, as tables run):" if args.tls else
             "over plain mqtt://; tables run mqtts://, see --tls):"))
    print(f"  bare paho QoS 1 p50, a subscriber {spread(fig['c2r_bare_p50'], 'ms', 1000, 7, 3)}")
    print(f"  bare fsynced commit p50 (WAL, FULL) {spread(fig['commit_p50'], 'ms', 1000, 7, 3)}")
    if "c2r_p50" in fig:
        print("  as on a table: the dealer (in the bench's process, its shoe and console driven by it), "
              "the seat and the controller each in a process of its own")
        print(f"  card -> report PUBACK p50        {spread(fig['c2r_p50'], 'ms', 1000, 7, 3)}")
        print(f"  card -> report PUBACK p99        {spread(fig['c2r_p99'], 'ms', 1000, 7, 3)}")
        print(f"  card -> PUBACK marked in the outbox p50 {spread(fig['c2r_mark_p50'], 'ms', 1000, 7, 3)}")
        print(f"  card -> PUBACK marked in the outbox p99 {spread(fig['c2r_mark_p99'], 'ms', 1000, 7, 3)}")
        print(f"  CPU time per unit step (dealer's and seat's processes, every thread) "
              f"{spread(fig['cpu_step'], 'ms', 1000, 7, 3)}")
    if "one_p50" in fig:
        print("  ALL IN ONE PROCESS (not a table's layout: dealer, seat, controller and their paho threads "
              "share one interpreter lock)")
        print(f"  card -> report PUBACK p50        {spread(fig['one_p50'], 'ms', 1000, 7, 3)}")
        print(f"  card -> report PUBACK p99        {spread(fig['one_p99'], 'ms', 1000, 7, 3)}")
        print(f"  CPU time of the process per unit step (every thread: units, paho, controller) "
              f"{spread(fig['one_cpu_step'], 'ms', 1000, 7, 3)}")
    layout = "all in one process" if args.one_process else "as on a table"
    # the slowest twentieth of the cards: which stages their time went to (the p99's makings)
    slow = sorted(traces, key=sum)[-max(1, len(traces) // 20):] if traces else []
    print(f"  stage by stage over every timed report of the runs ({layout}; n={len(traces)}), p50 / p90, "
          f"and the mean over the slowest 5% (n={len(slow)}, each card's total {min(map(sum, slow), default=0) * 1000:.2f} ms "
          f"or more):")
    for i, name in enumerate(TRACE):
        xs = sorted(t[i] for t in traces)
        tail = sum(t[i] for t in slow) / max(len(slow), 1)
        print(f"    {name:44s} {pct(xs, 50) * 1000:7.3f} / {pct(xs, 90) * 1000:7.3f} ms   slowest 5%: {tail * 1000:7.3f} ms")
    print(f"    {'sum of the stage medians':44s} {sum(pct([t[i] for t in traces], 50) for i in range(len(TRACE))) * 1000:7.3f} ms")


if __name__ == "__main__":
    main()
