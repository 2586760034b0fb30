"""HAL benchmark: protocol parsing throughput and pty-to-event latency.

    python3 bench/bench_hal.py [--frames N] [--samples N]

Prints frames parsed per second for both protocols (pure parser + decoder + tracker), and
the latency from bytes written to a pseudo-terminal to the event reaching the sink, p50/p99,
with a baseline in the same run: a raw ``os.read`` of the same bytes from the pty.
"""

from __future__ import annotations

import argparse
import os
import queue
import select
import sys
import time
import tty
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hal.events import ShoeSignalKind  # noqa: E402
from hal.protocol import rfid, shoe  # noqa: E402
from hal.protocol.framing import Parser, Sequencer  # noqa: E402


def shoe_stream(n: int) -> bytes:
    seq = Sequencer()
    out = bytearray(seq.frame(*shoe.encode(shoe.Event(ShoeSignalKind.SHUFFLED, 0))))
    for i in range(1, n):
        out += seq.frame(*shoe.encode(shoe.Card(i & 0xFFFF, "AKQJT98765432"[i % 13],
                                                "SHDC"[i % 4])))
    return bytes(out)


def rfid_stream(n: int) -> bytes:
    """TAGS frames of 5 chips each (7-byte UIDs), CYCLE_END every 4 frames."""
    seq = Sequencer()
    out = bytearray()
    cycle = 0
    while n > 0:
        cycle += 1
        for antenna in range(4):
            uids = tuple(bytes.fromhex(f"04{cycle:04X}{antenna:02X}{k:06X}") for k in range(5))
            out += seq.frame(*rfid.encode(rfid.Tags(cycle & 0xFFFF, antenna, uids)))
        out += seq.frame(*rfid.encode(rfid.CycleEnd(cycle & 0xFFFF, 4)))
        n -= 5
    return bytes(out)


def throughput(name: str, stream: bytes, decode, make_handler, chunk: int = 4096) -> None:
    best = 0.0
    for _ in range(3):
        parser, handle, frames, events = Parser(), make_handler(), 0, 0
        t0 = time.perf_counter()
        for i in range(0, len(stream), chunk):
            for frame in parser.feed(stream[i: i + chunk]):
                frames += 1
                events += len(handle(decode(frame)))
        dt = time.perf_counter() - t0
        best = max(best, frames / dt)
    print(f"{name:6s} parse+decode+track: {best:12,.0f} frames/s  "
          f"({len(stream) / frames:.1f} B/frame, {best * len(stream) / frames / 1e6:.1f} MB/s;"
          f" {events} events)")
    # parser alone
    t0 = time.perf_counter()
    parser = Parser()
    n = sum(len(parser.feed(stream[i: i + chunk])) for i in range(0, len(stream), chunk))
    print(f"{name:6s} framing only:       {n / (time.perf_counter() - t0):12,.0f} frames/s")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def raw_pty_latency(samples: int, frame: bytes) -> list[float]:
    master, slave = os.openpty()
    tty.setraw(slave)
    out = []
    try:
        for _ in range(samples):
            t0 = time.perf_counter()
            os.write(master, frame)
            got = b""
            while len(got) < len(frame):
                select.select([slave], [], [], 5)
                got += os.read(slave, 4096)
            out.append(time.perf_counter() - t0)
    finally:
        os.close(master)
        os.close(slave)
    return out


def backend_latency(samples: int) -> tuple[list[float], list[float]]:
    from hal.serial_ports import SerialCardShoe, SerialChipReader
    from hal.sim.rfid import RfidSimulator
    from hal.sim.shoe import ShoeSimulator
    from hal.sim.transport import PtyTransport

    results = []
    sim = ShoeSimulator(PtyTransport(), heartbeat=None).start()
    port = SerialCardShoe("shoe", sim.transport.path, silence_timeout=60)
    q: queue.SimpleQueue = queue.SimpleQueue()
    port.start(q.put)
    sim.wait_for_host(10)
    time.sleep(0.1)
    while not q.empty():
        q.get()
    lat = []
    for _i in range(samples):
        t0 = time.perf_counter()
        sim.deal("AS")
        q.get(timeout=10)
        lat.append(time.perf_counter() - t0)
    results.append(lat)
    port.close()
    sim.close()

    spots = ["main", "perfect_pairs", "twenty_one_plus_three", "progressive"]
    sim = RfidSimulator(PtyTransport(), spots, heartbeat=None).start()
    port = SerialChipReader("rfid", spots, sim.transport.path, silence_timeout=60)
    port.start(q.put)
    sim.wait_for_host(10)
    for k in range(5):
        sim.place("main", f"04000000{k:06X}")
    time.sleep(0.1)
    while not q.empty():
        q.get()
    lat = []
    for _i in range(samples):
        t0 = time.perf_counter()
        sim.cycle()  # 4 TAGS + CYCLE_END written to the pty
        q.get(timeout=10)
        lat.append(time.perf_counter() - t0)
    results.append(lat)
    port.close()
    sim.close()
    return results[0], results[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=200_000)
    ap.add_argument("--samples", type=int, default=2000)
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    throughput("shoe", shoe_stream(args.frames), shoe.decode, lambda: shoe.ShoeTracker("s").handle)
    throughput("rfid", rfid_stream(args.frames), rfid.decode,
               lambda: rfid.InventoryAssembler("r", ["a", "b", "c", "d"]).handle)

    card = Sequencer().frame(*shoe.encode(shoe.Card(1, "A", "S")))
    base = raw_pty_latency(args.samples, card)
    shoe_lat, rfid_lat = backend_latency(args.samples)
    print(f"latency over a pty, {args.samples} samples (ms):       p50      p99")
    for name, lat in [("baseline: os.write -> os.read (12 B)", base),
                      ("shoe: sim.deal -> CardDrawn in sink", shoe_lat),
                      ("rfid: sim.cycle -> InventoryCycle in sink", rfid_lat)]:
        print(f"  {name:42s} {pct(lat, 50) * 1e3:7.3f}  {pct(lat, 99) * 1e3:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
