"""The MQTT link's costs against a real mosquitto on loopback.

    python3 bench/bench_mqtt.py [--n 500] [--burst 5000]

- report → broker PUBACK latency through the durable outbox (SQLite FULL sync, sender
  thread), one report at a time, beside a bare paho-mqtt QoS 1 publish → on_publish round
  trip in the same run;
- outbox throughput: a burst of reports, put rate and put-to-all-acknowledged rate;
- controller ingest: reports per second applied directly (one SQLite transaction each) and
  end to end through the broker from several publishers;
- card to report: a dealer unit and a seat unit, each with its own MQTT client and its own
  dispatch thread (as under ``betbox run``), the jackpot controller on the same broker: from
  a card at the dealer's shoe port to the seat's report that card causes (the progressive
  wager booked by the last card of the initial deal; the round's result when a card ends
  the round) acknowledged by the broker. Beside the bare paho round trip of the same run.
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


def dealer_payloads(table: str, rounds: int, boxes: int) -> list[tuple[str, bytes]]:
    """The dealer's record of each round (every box's 5 progressive wager): what the
    controller books the seats' wagers by."""
    return [(topics.report_topic(f"{table}/dealer"), json.dumps({
        "schema": 1, "id": f"{table}-dealer-{i:08d}", "unit": f"{table}/dealer", "table": table, "seq": i,
        "kind": "round_progressive", "round": i, "body": {"meter": "1000", "boxes": [
            {"box": b, "wager": "5", "hit": None} for b in range(1, boxes + 1)]}}).encode())
        for i in range(1, rounds + 1)]


def ingest_direct(n: int, tmp: Path) -> float:
    """Reports/s: a seat's wager and the dealer's record of its round, each booked."""
    ctl = controller(tmp / "direct.db")
    rounds = n // 2
    msgs = [m for pair in zip(payloads("bench/seat-1", rounds), dealer_payloads("bench", rounds, 1)) for m in pair]
    t0 = time.perf_counter()
    for topic, payload in msgs:
        ctl.ingest(topic, payload)
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
    host, port = url.removeprefix("mqtt://").split(":")
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="betbox-jackpot-main", clean_session=True)
    c.connect(host, int(port))
    c.disconnect()


def ingest_via_broker(url: str, n: int, publishers: int, tmp: Path) -> tuple[float, int]:
    """Reports/s through the broker into a new controller, and the gaps it recorded."""
    host, port = url.removeprefix("mqtt://").split(":")
    fresh_controller_session(url)
    ctl = controller(tmp / "served.db")
    svc = JackpotService(ctl, config_from_url(url)).start()
    clients = []
    per = n // publishers
    batches = []
    # Start the clock only once every publisher's CONNACK is in and the controller's
    # subscription is in place (it subscribes before it says online): the run measures
    # ingest, not connection set-up, and no report can go out before anyone listens.
    online = threading.Event()
    watch = mqtt.Client(CallbackAPIVersion.VERSION2)
    watch.on_message = lambda c, u, m: online.set() if m.payload and json.loads(m.payload).get(
        "state") == "online" else None
    watch.connect(host, int(port))
    watch.subscribe(topics.jackpot_status_topic(svc.link_id), qos=1)
    watch.loop_start()
    for p in range(publishers):
        c = mqtt.Client(CallbackAPIVersion.VERSION2)
        c.max_inflight_messages_set(1000)
        connected = threading.Event()
        c.on_connect = lambda *a, e=connected: e.set()
        c.connect(host, int(port))
        c.loop_start()
        if not connected.wait(10):
            raise RuntimeError(f"publisher {p + 1}: no CONNACK from {url}")
        clients.append(c)
        batches.append(payloads(f"bench/seat-{p + 1}", per))
    clients.append(clients[-1])                 # and the dealer's record of every round
    batches.append(dealer_payloads("bench", per, publishers))
    if not online.wait(10):
        raise RuntimeError("the controller did not come online")
    watch.disconnect()
    watch.loop_stop()
    t0 = time.perf_counter()
    for c, batch in zip(clients, batches):
        for topic, payload in batch:
            c.publish(topic, payload, qos=1)
    total = per * (publishers + 1)
    wait_until(lambda: sum(ctl.marks().values()) >= total, 600, "the controller's ingest", step=0.01)
    dt = time.perf_counter() - t0
    for c in clients[:-1]:
        c.disconnect()
        c.loop_stop()
    svc.stop()
    gaps = sum(u["gaps_recorded"] for u in report(ctl.db)["units"].values())
    ctl.close()
    return total / dt, gaps


def card_to_report(url: str, rounds: int, tmp: Path) -> list[float]:
    """Latencies (s) from shoe.deal(card) to the broker's PUBACK of the report it causes."""
    from fractions import Fraction

    from firmware.commands.run import serve
    from firmware.engine.events import Action, Decision
    from firmware.engine.profile import load_profile
    from firmware.jackpot.service import JackpotService
    from firmware.link.presence import ControllerWatch
    from firmware.link.reporter import SeatReporter
    from firmware.runtime.dealer import DealerUnit
    from firmware.runtime.journal import Journal
    from firmware.runtime.seat import SeatUnit
    from firmware.runtime.spots import seat_spots
    from firmware.sim import chipset
    from firmware.sim.shoe import SimShoe
    from hal.mock import MockCardShoe, MockChipReader, MockConsole, MockLamps
    import random

    profile = load_profile("rws-blackjack-switch")
    spots = list(seat_spots(profile))
    fresh_controller_session(url)
    ctl = controller(tmp / "c2r-jackpot.db")
    svc = JackpotService(ctl, config_from_url(url), tick=0.02).start()
    dbus = connect_bus(url, "c2r/dealer", role="dealer")
    sbus = connect_bus(url, "c2r/seat-1", outbox_path=tmp / "c2r-outbox.db")
    dealer = DealerUnit("c2r/dealer", "c2r", dbus, Journal(tmp / "c2r-dealer.db", "c2r/dealer", "dealer"), profile,
                        decks=6, close_wait=None)
    lamps = MockLamps("lamps", ["progressive", "bets_locked"])
    lamps.start(lambda e: None)
    seat = SeatUnit("c2r/seat-1", "c2r", 1, sbus, Journal(tmp / "c2r-seat.db", "c2r/seat-1", "seat"),
                    chipset.registry(1, len(spots)), spots, lamps)
    shoe, console, reader = MockCardShoe("shoe"), MockConsole("console"), MockChipReader("reader", spots)
    inputs: list[tuple[float, str]] = []            # (time, "card"|"button")
    puts: dict[int, tuple[float, str]] = {}
    acked: dict[int, float] = {}
    put, mark = sbus.outbox.put, sbus.outbox.mark_acked_many

    def put_hook(topic, kind, body, key=None, extra=None):
        seq = put(topic, kind, body, key=key, extra=extra)
        if seq is not None:
            puts[seq] = (time.perf_counter(), kind)
        return seq

    def mark_hook(seqs):
        mark(seqs)
        now = time.perf_counter()
        for q in seqs:
            acked.setdefault(q, now)

    sbus.outbox.put, sbus.outbox.mark_acked_many = put_hook, mark_hook
    SeatReporter(seat, sbus)
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
    wait_until(lambda: seat.controller.get("link") == "up" and 1 in dealer.online, 30, "seat up, controller up")
    sim = SimShoe(6, random.Random(1))
    main_chips = chipset.chips_for(Fraction(10), 1, spots.index("main"), 0)
    prog_chips = chipset.chips_for(profile.progressive.wager, 1, spots.index("progressive"), 0)
    try:
        for r in range(rounds):
            if sim.cut_card_out:
                sim.shuffle()
                shoe.shuffle()
            n0 = dealer.round_no
            console.press("open_bets")
            wait_until(lambda: seat.phase == "open" and seat.round_no == n0 + 1, 10, "bets open", step=0.0005)
            reader.place_chips("main", main_chips)
            reader.place_chips("progressive", prog_chips)
            for _ in range(3):
                reader.cycle(1)
            wait_until(lambda: set(seat.offered or {}) == {"main", "progressive"}, 10, "the offer", step=0.0005)
            console.press("no_more_bets")
            wait_until(lambda: dealer.phase == "play", 10, "bets closed", step=0.0005)
            while dealer.phase == "play":
                state = dealer.round
                n = len(state.history)
                expect = state.expecting()
                if expect.kind == "card":
                    inputs.append((time.perf_counter(), "card"))
                    shoe.deal(str(sim.draw()))
                else:
                    inputs.append((time.perf_counter(), "button"))
                    console.press(next(str(a) for a in (Action.STAND, Action.SWITCH, Action.HIT)
                                       if state.why_not(Decision(expect.box, a, None)) is None))
                wait_until(lambda: len(dealer.round.history) > n or dealer.phase != "play", 10, "the dealer",
                           step=0.0002)
            wait_until(lambda: seat.phase in ("over", "void"), 10, "the seat's result", step=0.0005)
            reader.remove_chips("main")
            reader.remove_chips("progressive")
            for _ in range(4):
                reader.cycle(1)
        wait_until(lambda: all(q in acked for q in puts), 30, "every report acknowledged")
    finally:
        stop.set()
        for t in threads:
            t.join(5)
        for bus in (dbus, sbus):
            bus.close()
        svc.stop()
        ctl.close()
    out = []
    for q, (t_put, kind) in puts.items():
        if kind not in ("progressive_wager", "round_result"):
            continue
        cause = [x for x in inputs if x[0] < t_put]
        if cause and cause[-1][1] == "card":
            if q not in acked:
                print(f"  (report {q} {kind} was put after the run's last wait and not timed)")
                continue
            out.append(acked[q] - cause[-1][0])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500, help="sequential round trips (default 500)")
    ap.add_argument("--burst", type=int, default=5000, help="reports in the throughput runs (default 5000)")
    ap.add_argument("--rounds", type=int, default=150, help="rounds in the card-to-report run (default 150)")
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
            rate, gaps = ingest_via_broker(broker.url, args.burst, 4, tmp)
            print(f"controller ingest via the broker, 4 publishers:    {rate:8.0f} reports/s"
                  + (f" ({gaps} gap(s) recorded: reports out of order)" if gaps else ""))
            c2r = card_to_report(broker.url, args.rounds, tmp)
            base = bare_round_trips(broker.url, args.n)
            print(f"card at the dealer's shoe port -> seat's report acknowledged by the broker "
                  f"({args.rounds} rounds, n={len(c2r)}):")
            print(f"  bare paho QoS 1        {fmt(base)}")
            print(f"  card -> report PUBACK  {fmt(c2r)}")
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
