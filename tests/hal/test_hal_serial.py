"""The serial backend against the simulators through real pseudo-terminals."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hal import open_backend
from hal.errors import HalConfigError, SerialPortBusy
from hal.events import CardDrawn, ConnectionLost, ConnectionRestored, InventoryCycle
from hal.sim.rfid import RfidSimulator
from hal.sim.shoe import ShoeSimulator
from hal.sim.transport import PtyTransport
from tests.hal.conftest import Events

REPO = Path(__file__).resolve().parents[2]


def wait_for(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def shoe_sim():
    sim = ShoeSimulator(PtyTransport(), heartbeat=0.1, seed=7).start()
    yield sim
    sim.close()


def test_port_is_opened_exclusively(shoe_sim: ShoeSimulator, events: Events) -> None:
    first = open_backend("card_shoe", "serial", {"port": shoe_sim.transport.path})
    first.start(events.put)
    try:
        second = open_backend("card_shoe", "serial", {"port": shoe_sim.transport.path},
                              device="shoe2")
        with pytest.raises(SerialPortBusy, match=shoe_sim.transport.path):
            second.start(events.put)
        with pytest.raises(PermissionError):  # a HalConfigError and a builtin
            open_backend("card_shoe", "serial", {"port": shoe_sim.transport.path}).start(
                events.put)
    finally:
        first.close()


def test_corrupted_and_garbage_traffic_is_counted_not_delivered(
        shoe_sim: ShoeSimulator, events: Events) -> None:
    shoe = open_backend("card_shoe", "serial", {"port": shoe_sim.transport.path})
    shoe.start(events.put)
    try:
        assert shoe_sim.wait_for_host()
        shoe_sim.shuffle()
        shoe_sim.garbage(200)
        shoe_sim.deal("AS")
        shoe_sim.corrupt(1)
        shoe_sim.deal("KS")  # corrupted on the wire: rejected; its count shows as a gap
        shoe_sim.garbage(50)
        shoe_sim.deal("QS")
        seen = []
        while len(seen) < 2:
            seen.append(events.next(CardDrawn).card)
        assert seen == ["AS", "QS"]
        assert wait_for(lambda: shoe.stats["bad_crc"] + shoe.stats["bad_header"] >= 1)
        assert shoe.stats["skipped_bytes"] >= 200
        assert shoe.stats["lost_frames"] >= 1
    finally:
        shoe.close()


def test_dropped_card_frame_shows_as_a_gap(shoe_sim: ShoeSimulator, events: Events) -> None:
    from hal.events import ShoeSignal, ShoeSignalKind

    shoe = open_backend("card_shoe", "serial", {"port": shoe_sim.transport.path})
    shoe.start(events.put)
    try:
        assert shoe_sim.wait_for_host()
        shoe_sim.shuffle()
        shoe_sim.deal("2H")
        shoe_sim.drop(1)
        shoe_sim.deal("3H")
        shoe_sim.deal("4H")
        gap = events.next(ShoeSignal, where=lambda e: e.kind is ShoeSignalKind.CARD_GAP)
        assert gap.counter == 2
        assert events.next(CardDrawn).card == "4H"
        assert wait_for(lambda: shoe.stats["lost_frames"] == 1)
    finally:
        shoe.close()


def test_reconnects_when_the_port_comes_back(tmp_path: Path, events: Events) -> None:
    """A udev-style symlink re-pointed at a new pty: lost, then restored, with back-off."""
    link = tmp_path / "ttyBETBOX-shoe"
    sim = ShoeSimulator(PtyTransport(), heartbeat=0.1).start()
    link.symlink_to(sim.transport.path)
    shoe = open_backend("card_shoe", "serial", {"port": str(link), "backoff_max": 0.2})
    shoe.start(events.put)
    sim2 = None
    try:
        assert sim.wait_for_host()
        sim.deal("5C")
        assert events.next(CardDrawn).card == "5C"
        sim.close()  # unplugged
        assert "serial port" in events.next(ConnectionLost).reason
        time.sleep(0.3)  # a few failed reopen attempts
        sim2 = ShoeSimulator(PtyTransport(), heartbeat=0.1).start()
        sim2.counter = sim.counter  # the same shoe back: its count goes on (a lower one is a duplicate)
        link.unlink()
        link.symlink_to(sim2.transport.path)
        events.next(ConnectionRestored)
        assert sim2.wait_for_host()  # the unit said HELLO again on reopening
        sim2.deal("6C")
        assert events.next(CardDrawn).card == "6C"
        assert shoe.stats["reconnects"] >= 1
    finally:
        shoe.close()
        if sim2:
            sim2.close()


def test_reader_drops_a_cycle_with_a_lost_frame(events: Events) -> None:
    sim = RfidSimulator(PtyTransport(), ["main", "perfect_pairs"], heartbeat=0.1).start()
    reader = open_backend("chip_reader", "serial",
                          {"port": sim.transport.path, "spots": ["main", "perfect_pairs"]})
    reader.start(events.put)
    try:
        assert sim.wait_for_host()
        sim.place("main", "04A1B2C3")
        sim.drop(1)  # first TAGS frame of the next cycle
        sim.cycle(2)
        cycle = events.next(InventoryCycle)
        assert cycle.cycle == 2 and cycle.uids("main") == {"04A1B2C3"}
        assert reader.stats["incomplete_cycles"] == 1
    finally:
        reader.close()
        sim.close()


def test_auto_cycling_reader(events: Events) -> None:
    sim = RfidSimulator(PtyTransport(), ["main"], period=0.02, heartbeat=None).start()
    reader = open_backend("chip_reader", "serial", {"port": sim.transport.path,
                                                    "spots": ["main"]})
    reader.start(events.put)
    try:
        sim.place("main", "AB01")
        first = events.next(InventoryCycle, where=lambda e: e.uids("main"))
        second = events.next(InventoryCycle)
        assert second.cycle > first.cycle
    finally:
        reader.close()
        sim.close()


def test_bad_serial_configuration_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="ttyNOPE"):
        open_backend("card_shoe", "serial", {"port": str(tmp_path / "ttyNOPE")})
    t = PtyTransport()
    try:
        with pytest.raises(HalConfigError, match="baud"):
            open_backend("card_shoe", "serial", {"port": t.path, "baudrate": 1234})
    finally:
        t.close()


def run_cli(*args: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-m", "firmware", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def test_cli_shoe_simulator_end_to_end(tmp_path: Path, events: Events) -> None:
    script = tmp_path / "round.txt"
    script.write_text("wait_host 20\nshuffle\ndeal AS 10H\ngarbage 30  # noise\ndeal KD\n"
                      "sleep 1\n")
    proc = run_cli("device", "shoe", "--script", str(script), "--exit", "--seed", "3")
    try:
        line = proc.stdout.readline()
        path = line.split(" on ")[1].strip()
        shoe = open_backend("card_shoe", "serial", {"port": path})
        shoe.start(events.put)
        try:
            cards = [events.next(CardDrawn).card for _ in range(3)]
            assert cards == ["AS", "TH", "KD"]
        finally:
            shoe.close()
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()
        proc.communicate()


def test_cli_rfid_simulator_end_to_end(tmp_path: Path, events: Events) -> None:
    script = tmp_path / "bets.txt"
    script.write_text("wait_host 20\nplace main_2 04A1B2C3\ncycle\nsleep 1\n")
    proc = run_cli("device", "rfid", "--spots", "main,main_2", "--script", str(script),
                   "--exit")
    try:
        path = proc.stdout.readline().split(" on ")[1].strip()
        reader = open_backend("chip_reader", "serial",
                              {"port": path, "spots": ["main", "main_2"]})
        reader.start(events.put)
        try:
            assert events.next(InventoryCycle).uids("main_2") == {"04A1B2C3"}
        finally:
            reader.close()
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()
        proc.communicate()


def test_cli_rejects_a_bad_script_naming_the_line(tmp_path: Path) -> None:
    script = tmp_path / "bad.txt"
    script.write_text("shuffle\n\ndael AS\n")
    proc = run_cli("device", "shoe", "--script", str(script), "--exit")
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 2
    assert "line 3: unknown command 'dael'" in err
    assert out == ""  # nothing served
