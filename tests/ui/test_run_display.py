"""`betbox run` on a seat with a [display] section, as its own process under Xvfb and on a
real mosquitto: the seat comes online, the display draws its first frame (and writes it with
--screenshot), SIGTERM stops it with exit status 0, the seat says offline and its journal is
closed cleanly (no write-ahead log left, integrity ok)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from firmware.engine.profile import load_profile
from firmware.link import topics
from firmware.runtime.spots import seat_spots
from tests.link.broker import Broker
from tests.link.helpers import wait_until
from tests.link.units import CHIPS, write_toml

ROOT = Path(__file__).resolve().parents[2]
XVFB = shutil.which("Xvfb")

pytestmark = pytest.mark.skipif(XVFB is None, reason="Xvfb is not installed (apt-get install xvfb)")


@pytest.fixture
def display():
    for n in range(170, 400):
        if not Path(f"/tmp/.X{n}-lock").exists() and not Path(f"/tmp/.X11-unix/X{n}").exists():
            break
    proc = subprocess.Popen([XVFB, f":{n}", "-screen", "0", "1024x600x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: Path(f"/tmp/.X11-unix/X{n}").exists() or proc.poll() is not None, 20, "Xvfb")
        assert proc.poll() is None, "Xvfb did not start"
        yield f":{n}"
    finally:
        proc.terminate()
        proc.wait(10)


def png(path: Path) -> tuple[int, int, bytes]:
    """Width, height and the decompressed scanlines of a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat, at = b"", 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IDAT":
            idat += data[at + 8:at + 8 + length]
        at += 12 + length
    return width, height, zlib.decompress(idat)


def test_a_seat_with_a_display_runs_draws_and_stops_cleanly(display, tmp_path):
    broker = Broker(tmp_path / "mosquitto").start()
    profile = load_profile("rws-blackjack")
    spots = list(seat_spots(profile))
    chips = tmp_path / "chips.csv"
    chips.write_text("uid,denomination,status\n" + "".join(f"{u},{d},valid\n" for u, d in CHIPS.items()))
    state = tmp_path / "seat-4"
    config = write_toml(tmp_path / "seat.toml", {
        "unit": {"role": "seat", "id": "seat-4", "table": "disp-1", "state_dir": str(state)},
        "link": {"broker": f"mqtt://127.0.0.1:{broker.port}"},
        "display": {"lang": "en", "size": "800x480", "fullscreen": False},
        "seat": {"box": 4, "spots": spots, "chips": str(chips)},
        "hardware.chip_reader": {"backend": "mock", "spots": spots},
        "hardware.lamps": {"backend": "mock", "lamps": ["progressive", "bets_locked"]}})
    statuses: list[str] = []
    watcher = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="display-test")
    watcher.on_message = lambda c, u, m: statuses.append(json.loads(m.payload)["state"]) if m.payload else None
    watcher.connect("127.0.0.1", broker.port)
    watcher.subscribe(topics.status_topic("disp-1/seat-4"), qos=1)
    watcher.loop_start()
    env = dict(os.environ, DISPLAY=display, KIVY_NO_ARGS="1", KIVY_NO_CONSOLELOG="1",
               KIVY_HOME=str(tmp_path / "kivy"))
    log = tmp_path / "seat.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "firmware", "run", "--config", str(config),
                                 "--screenshot", str(tmp_path / "shot.png")],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        def said(text: str) -> bool:
            assert proc.poll() is None, log.read_text()[-3000:]
            return text in log.read_text()

        wait_until(lambda: statuses[-1:] == ["online"], 60, "the seat's presence online")
        wait_until(lambda: said("disp-1/seat-4 display showing (first frame)"), 90, "the first frame")
        wait_until(lambda: said("betbox: screenshot "), 30, "the screenshot")
        shot = Path(log.read_text().split("betbox: screenshot ")[1].split()[0])
        width, height, pixels = png(shot)
        assert (width, height) == (800, 480)
        # the seat screen drawn, not just the clear colour: many distinct byte values
        assert len(set(pixels)) > 40, "the screenshot is (nearly) blank"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        broker.stop()
    watcher.loop_stop()
    assert statuses[-1] == "offline"
    assert not (state / "journal.db-wal").exists(), "the journal was not closed (write-ahead log left)"
    with sqlite3.connect(state / "journal.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT count(*) FROM record").fetchone()[0] >= 1


def test_no_display_is_one_clear_sentence_and_a_non_zero_exit(tmp_path):
    """`betbox run` of a seat with a [display] where no X server answers: the unit says so in
    one sentence (not only Kivy's "Couldn't connect to X server") and exits non-zero."""
    broker = Broker(tmp_path / "mosquitto").start()
    profile = load_profile("rws-blackjack")
    spots = list(seat_spots(profile))
    chips = tmp_path / "chips.csv"
    chips.write_text("uid,denomination,status\n" + "".join(f"{u},{d},valid\n" for u, d in CHIPS.items()))
    config = write_toml(tmp_path / "seat.toml", {
        "unit": {"role": "seat", "id": "seat-4", "table": "disp-2", "state_dir": str(tmp_path / "seat-4")},
        "link": {"broker": f"mqtt://127.0.0.1:{broker.port}"},
        "display": {"lang": "en", "size": "800x480", "fullscreen": False},
        "seat": {"box": 4, "spots": spots, "chips": str(chips)},
        "hardware.chip_reader": {"backend": "mock", "spots": spots},
        "hardware.lamps": {"backend": "mock", "lamps": ["progressive", "bets_locked"]}})
    n = next(n for n in range(399, 150, -1) if not Path(f"/tmp/.X11-unix/X{n}").exists())
    env = dict(os.environ, DISPLAY=f":{n}", KIVY_NO_ARGS="1", KIVY_HOME=str(tmp_path / "kivy"))
    try:
        run = subprocess.run([sys.executable, "-m", "firmware", "run", "--config", str(config)], cwd=ROOT,
                             env=env, capture_output=True, text=True, timeout=120)
    finally:
        broker.stop()
    assert run.returncode != 0
    assert (f"no display: DISPLAY is :{n} but no X server answers at /tmp/.X11-unix/X{n}"
            in run.stderr), run.stderr[-2000:]
    assert "Traceback" not in run.stderr, run.stderr[-2000:]


def test_display_problem_names_what_is_missing(tmp_path):
    from ui.app import display_problem
    assert "no X server answers at /tmp/.X11-unix/X398" in display_problem({"DISPLAY": ":398"})
    assert "does not exist; start the compositor" in display_problem(
        {"WAYLAND_DISPLAY": "wayland-9", "XDG_RUNTIME_DIR": str(tmp_path)})
    if not Path("/dev/dri").is_dir():      # this machine: no DRM device
        assert "no DRM device (/dev/dri/card*)" in display_problem({})
