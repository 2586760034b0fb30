"""Run a simulator for a technician: on a new pty (path printed) or a given port."""

from __future__ import annotations

import threading
from typing import Sequence, TextIO

from hal.sim.device import SimulatedDevice
from hal.sim.rfid import RfidSimulator
from hal.sim.script import ScriptError, check_script, parse_script, run_script
from hal.sim.shoe import ShoeSimulator
from hal.sim.transport import PtyTransport, SerialTransport, Transport

MAX_SCRIPT_BYTES = 1_000_000                # a device script is a few hundred lines


def make_transport(port: str | None, baudrate: int) -> Transport:
    return SerialTransport(port, baudrate) if port else PtyTransport()


def build(device: str, transport: Transport, *, spots: Sequence[str] = ("main",),
          period: float | None = None, heartbeat: float | None = 0.5,
          seed: int = 0) -> SimulatedDevice:
    if device == "shoe":
        return ShoeSimulator(transport, heartbeat=heartbeat, seed=seed)
    if device == "rfid":
        return RfidSimulator(transport, spots, period=period, heartbeat=heartbeat, seed=seed)
    raise ValueError(f"unknown simulated device {device!r} (shoe, rfid)")


def read_script(path: str) -> str:
    """The script's text, read to its bound: /dev/zero has no size, read whole it never ends."""
    with open(path, encoding="utf-8") as f:
        text = f.read(MAX_SCRIPT_BYTES + 1)
    if len(text) > MAX_SCRIPT_BYTES:
        raise ScriptError(f"{path}: larger than {MAX_SCRIPT_BYTES} bytes: not a device script")
    return text


def serve(sim: SimulatedDevice, script: str | None, out: TextIO, *, stay: bool,
          stop: threading.Event | None = None) -> int:
    """Start ``sim``, run the script, then keep serving until ``stop`` (or Ctrl-C)."""
    lines = parse_script(read_script(script), script) if script else []
    check_script(lines, sim.script_commands())  # fail before printing the port
    sim.start()
    print(f"{type(sim).__name__} on {sim.transport.path}", file=out, flush=True)
    try:
        run_script(lines, sim.script_commands())
        if stay:
            (stop or threading.Event()).wait()
    finally:
        sim.close()
    return 0
