"""Seat display figures: start-up to the first frame, seat state change to the buffer swap
of the frame that shows it (issue 18: not before the swap), idle CPU with the progressive
meter counting up, RSS of a seat unit with and without the UI.

    python3 bench/bench_ui.py            (starts its own Xvfb when DISPLAY is unset)
"""

from __future__ import annotations

import json
import os
import platform
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
    """Change -> pixels: the clock starts when the seat's state changes (the snapshot the
    seat hands the screen) and stops when the buffer swap of the frame that shows it is
    done (``Window.flip`` returned); a snapshot that changes nothing on screen is not
    counted. Then idle CPU with the progressive meter counting up every 2 s (Blackjack
    Switch: a contribution arrives, the meter animates for a second), and RSS."""
    t0 = time.perf_counter()
    from fractions import Fraction

    from firmware.engine.profile import load_profile
    from ui.app import build_app
    from ui.demo import DemoTable
    table = DemoTable(load_profile("rws-blackjack-switch"), pace=0, auto=False)
    app = build_app(table)
    from kivy.clock import Clock
    from kivy.core.window import Window
    res: dict = {"clock": f"{os.environ.get('BETBOX_UI_CLOCK', 'default')}, "
                        f"maxfps {os.environ.get('BETBOX_UI_MAXFPS', '30')}"}
    lat: list[float] = []
    flips: list[float] = []
    state = {"t": None, "shown": False}

    orig = app.on_snapshot

    def timed(snap):
        if state["t"] is None:
            state["t"] = time.perf_counter()
        orig(snap)
    app.on_snapshot = timed
    table.on_snapshot = timed

    show = app._show_screen

    def shown(screen):
        state["shown"] = True
        show(screen)
    app._show_screen = shown            # before run(): the presenter is bound to it in build()

    swap = Window.flip

    def flip_done():
        f0 = time.perf_counter()
        swap()
        now = time.perf_counter()
        flips.append(now - f0)
        if "first_frame_s" not in res:
            res["first_frame_s"] = now - t0
        if state["t"] is not None and app._pending_snapshot is None:
            if state["shown"]:
                lat.append(now - state["t"])
            state["t"], state["shown"] = None, False
    Window.flip = flip_done

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
        meter = [Fraction(25000)]

        def contribute(_dt):
            meter[0] += Fraction(37, 4)
            table.controller.set(link="up", meter=meter[0])
        contribute(0)
        tick = Clock.schedule_interval(contribute, 2.0)

        def start(_dt):
            c0, w0 = time.process_time(), time.perf_counter()
            flips.clear()

            def done(_dt):
                tick.cancel()
                res["idle_cpu_percent"] = 100 * (time.process_time() - c0) / (time.perf_counter() - w0)
                res["rss_mb"] = rss_mb()
                lat.sort()
                res["change_to_frame_ms"] = {"median": 1000 * lat[len(lat) // 2], "max": 1000 * lat[-1],
                                             "n": len(lat)}
                f = sorted(flips) or [0.0]
                res["swap_ms"] = {"median": 1000 * f[len(f) // 2], "frames": len(f)}
                app.stop()
            Clock.schedule_once(done, 10.0)
        Clock.schedule_once(start, 1.0)

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
    print(f"seat change -> swap done:       median {lat['median']:.1f} ms, max {lat['max']:.1f} ms over {lat['n']} changes"
          f" (Kivy clock: {win.get('clock') or 'default'}; the swap itself: median {win['swap_ms']['median']:.1f} ms,"
          f" software-rendered by llvmpipe here)")
    print(f"idle CPU, meter counting up:    {win['idle_cpu_percent']:.1f} % of one core (10 s, a contribution every 2 s,"
          f" {win['swap_ms']['frames']} frames drawn)")
    print(f"RSS seat units without UI:      {head['rss_mb']:.0f} MB")
    print(f"RSS seat units with the UI:     {win['rss_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
