"""Seat display figures: start-up to the first frame, seat state change to the frame that
shows it, idle CPU with the window open, RSS of a seat unit with and without the UI.

    python3 bench/bench_ui.py            (starts its own Xvfb when DISPLAY is unset)
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child_headless() -> dict:
    """A table with its seat units, no UI: the seat unit's own footprint."""
    import tempfile
    from firmware.engine.profile import load_profile
    from ui.demo import DemoTable
    table = DemoTable(load_profile("rws-perfect-pairs"), pace=0, auto=False)
    table.start(lambda s: None)
    table.wait_ready()
    time.sleep(0.3)
    out = {"rss_mb": rss_mb()}
    table.stop()
    return out


def child_window() -> dict:
    t0 = time.perf_counter()
    from fractions import Fraction
    from firmware.engine.profile import load_profile
    from ui.app import build_app
    from ui.demo import DemoTable
    table = DemoTable(load_profile("rws-perfect-pairs"), pace=0, auto=False)
    app = build_app(table)
    from kivy.clock import Clock
    from kivy.core.window import Window
    res: dict = {}
    lat: list[float] = []
    state = {"t": None}

    orig = app.on_snapshot

    def timed(snap):
        if state["t"] is None:
            state["t"] = time.perf_counter()
        orig(snap)
    app.on_snapshot = timed
    table.on_snapshot = timed

    def on_flip(*_a):
        if "first_frame_s" not in res:
            res["first_frame_s"] = time.perf_counter() - t0
        if state["t"] is not None and app._pending_snapshot is None:
            lat.append(time.perf_counter() - state["t"])
            state["t"] = None
    Window.bind(on_flip=on_flip)

    def changes(n=30):
        def one(i):
            if i >= n:
                Clock.schedule_once(idle, 0.5)
                return
            amount = Fraction(5 * (i % 8 + 1))
            table.command(lambda t: (t.table.readers[1].remove_chips("main"), t.bet("main", amount)))
            Clock.schedule_once(lambda _dt: one(i + 1), 0.25)
        table.command(lambda t: t.open_bets())
        Clock.schedule_once(lambda _dt: one(0), 0.5)

    def idle(_dt):
        c0, w0 = time.process_time(), time.perf_counter()

        def done(_dt):
            res["idle_cpu_percent"] = 100 * (time.process_time() - c0) / (time.perf_counter() - w0)
            res["rss_mb"] = rss_mb()
            lat.sort()
            res["change_to_frame_ms"] = {"median": 1000 * lat[len(lat) // 2], "max": 1000 * lat[-1], "n": len(lat)}
            app.stop()
        Clock.schedule_once(done, 5.0)

    Clock.schedule_once(lambda _dt: changes(), 1.0)
    app.run()
    return res


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child_window() if sys.argv[2] == "window" else child_headless()))
        return 0
    env = dict(os.environ, KIVY_NO_ARGS="1", KIVY_NO_CONSOLELOG="1", KIVY_HOME="/tmp/betbox-bench-kivy")
    xvfb = None
    if not env.get("DISPLAY"):
        n = next(i for i in range(150, 300) if not Path(f"/tmp/.X{i}-lock").exists())
        xvfb = subprocess.Popen([shutil.which("Xvfb") or "Xvfb", f":{n}", "-screen", "0", "1280x800x24",
                                 "-nolisten", "tcp"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
        env["DISPLAY"] = f":{n}"
    try:
        def run(kind):
            out = subprocess.run([sys.executable, __file__, "--child", kind], env=env, capture_output=True,
                                 text=True, timeout=120, cwd=ROOT)
            if out.returncode:
                raise SystemExit(out.stderr[-2000:])
            return json.loads(out.stdout.strip().splitlines()[-1])
        head = run("headless")
        win = run("window")
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait()
    cpu = platform.processor()
    if Path("/proc/cpuinfo").exists():
        cpu = open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].split(":", 1)[1].strip()
    print(f"machine: {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
          f"Python {platform.python_version()}, Xvfb + Mesa llvmpipe (software GL)")
    print(f"start-up to first frame:        {win['first_frame_s']:.2f} s (process start excluded, Kivy import included)")
    lat = win["change_to_frame_ms"]
    print(f"seat change -> frame showing it: median {lat['median']:.1f} ms, max {lat['max']:.1f} ms over {lat['n']} changes")
    print(f"idle CPU, window open:          {win['idle_cpu_percent']:.1f} % of one core (5 s, nothing changing)")
    print(f"RSS seat units without UI:      {head['rss_mb']:.0f} MB")
    print(f"RSS seat units with the UI:     {win['rss_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
