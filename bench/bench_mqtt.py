"""The MQTT link's costs against a real mosquitto on loopback.

    python3 bench/bench_mqtt.py [--n 500] [--burst 5000]

- report → broker PUBACK latency through the durable outbox (SQLite FULL sync, sender
  thread), one report at a time, beside a bare paho-mqtt QoS 1 publish → on_publish round
  trip in the same run;
- outbox throughput: a burst of reports, put rate and put-to-all-acknowledged rate;
- controller ingest: reports per second applied directly (one SQLite transaction each) and
  end to end through the broker from several publishers.
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

from firmware.jackpot.service import JackpotService  # noqa: E402
from firmware.link import connect_bus, topics  # noqa: E402
from firmware.link.config import config_from_url  # noqa: E402
from tests.link.broker import Broker  # noqa: E402
from tests.link.helpers import controller, wait_until  # noqa: E402


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
    host, port = url.removeprefix("mqtt://").split(":")
    done = threading.Event()
    c = mqtt.Client(CallbackAPIVersion.VERSION2)
    c.on_publish = lambda *a: done.set()
    c.connect(host, int(port))
    c.loop_start()
    out = []
    payload = json.dumps({"schema": 1, "kind": "bench", "body": {"amount": "5"}, "pad": "x" * 150})
    for i in range(n):
        done.clear()
        t0 = time.perf_counter()
        c.publish("betbox/v1/bench/bare", payload, qos=1)
        done.wait(10)
        out.append(time.perf_counter() - t0)
    c.disconnect()
    c.loop_stop()
    return out


def outbox_round_trips(url: str, n: int, tmp: Path) -> list[float]:
    bus = connect_bus(url, "bench/seat-1", outbox_path=tmp / "lat.db")
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
        seq = bus.report("progressive_wager", {"amount": "5"}, table="bench", box=1, round=i + 1)
        while seq not in acked:
            event.wait(10)
            event.clear()
        out.append(acked[seq] - t0)
    bus.close()
    return out


def outbox_burst(url: str, n: int, tmp: Path) -> tuple[float, float]:
    bus = connect_bus(url, "bench/seat-2", outbox_path=tmp / "burst.db")
    t0 = time.perf_counter()
    for i in range(n):
        bus.report("progressive_wager", {"amount": "5"}, table="bench", box=2, round=i + 1)
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


def ingest_direct(n: int, tmp: Path) -> float:
    ctl = controller(tmp / "direct.db")
    msgs = payloads("bench/seat-1", n)
    t0 = time.perf_counter()
    for topic, payload in msgs:
        ctl.ingest(topic, payload)
    dt = time.perf_counter() - t0
    ctl.close()
    return n / dt


def ingest_via_broker(url: str, n: int, publishers: int, tmp: Path) -> float:
    ctl = controller(tmp / "served.db")
    svc = JackpotService(ctl, config_from_url(url)).start()
    host, port = url.removeprefix("mqtt://").split(":")
    clients = []
    per = n // publishers
    batches = []
    for p in range(publishers):
        c = mqtt.Client(CallbackAPIVersion.VERSION2)
        c.max_inflight_messages_set(1000)
        c.connect(host, int(port))
        c.loop_start()
        clients.append(c)
        batches.append(payloads(f"bench/seat-{p + 1}", per))
    t0 = time.perf_counter()
    for c, batch in zip(clients, batches):
        for topic, payload in batch:
            c.publish(topic, payload, qos=1)
    wait_until(lambda: sum(ctl.marks().values()) >= per * publishers, 600, "the controller's ingest", step=0.01)
    dt = time.perf_counter() - t0
    for c in clients:
        c.disconnect()
        c.loop_stop()
    svc.stop()
    ctl.close()
    return per * publishers / dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500, help="sequential round trips (default 500)")
    ap.add_argument("--burst", type=int, default=5000, help="reports in the throughput runs (default 5000)")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="bench-mqtt-") as d:
        tmp = Path(d)
        broker = Broker(tmp / "mosquitto").start()
        try:
            bare_round_trips(broker.url, 50)                          # warm up
            bare = bare_round_trips(broker.url, args.n)
            ours = outbox_round_trips(broker.url, args.n, tmp)
            print(f"publish -> PUBACK, one at a time (n={args.n}):")
            print(f"  bare paho QoS 1        {fmt(bare)}")
            print(f"  report via outbox      {fmt(ours)}")
            put_rate, all_rate = outbox_burst(broker.url, args.burst, tmp)
            print(f"outbox burst of {args.burst}: put {put_rate:8.0f} reports/s, "
                  f"put-to-all-acknowledged {all_rate:8.0f} reports/s")
            print(f"controller ingest, direct (one transaction each): {ingest_direct(args.burst, tmp):8.0f} reports/s")
            print(f"controller ingest via the broker, 4 publishers:    "
                  f"{ingest_via_broker(broker.url, args.burst, 4, tmp):8.0f} reports/s")
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
