"""Seat display figures (issues 14 and 18): seat state change to the buffer swap of the
frame that shows it, idle CPU with the progressive meter counting up, RSS; each Kivy clock
configuration three runs (min / median / max), beside two baselines measured in the same
run: the display as shipped before issue 18 (Kivy's default clock, 30 fps) and a bare
Kivy window whose one label changes (what this GL can do at all for a change -> swap).

    python3 bench/bench_ui.py [--runs 3] [--clocks interrupt:30,default:30,free_all:30]
    python3 bench/bench_ui.py --quick     # RSS only: the display as shipped and a real seat

Starts its own Xvfb when DISPLAY is unset. Says which GL renderer drew the frames
(llvmpipe is Mesa's software rasteriser: the swap is a CPU copy, not the Pi's GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHANGES = 30            # seat changes timed per run, 0.25 s apart
IDLE_S = 10.0           # idle CPU window; a meter contribution every 2 s


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


SOFT_GL = ("libLLVM", "swrast_dri", "libgallium", "kms_swrast")


def soft_gl_mb() -> float:
    """Resident MB of the software rasteriser's libraries (Mesa llvmpipe: libLLVM and the
    swrast driver), which a Pi drawing with its GPU does not load."""
    total, mapped = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and not head[0].endswith(":"):
            mapped = len(head) > 5 and any(name in head[5] for name in SOFT_GL)
        elif mapped and head[:1] == ["Rss:"]:
            total += int(head[1])
    return total / 1024


def rss_parts(pid: int | str = "self") -> dict[str, float]:
    """Resident MB by kind of mapping (/proc/self/smaps): the software rasteriser's
    libraries, the other libraries, malloc's heap (C code: Mesa, SDL, FreeType, SQLite, and
    Python's larger objects), anonymous maps (Python's object arenas, llvmpipe's and
    malloc's big blocks, thread stacks), X shared memory (the window's image), other files."""
    parts: dict[str, float] = {}
    kind = "anon"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and not head[0].endswith(":"):
            name = head[5] if len(head) > 5 else ""
            kind = ("soft GL libs" if any(n in name for n in SOFT_GL) else
                    "libraries" if ".so" in name else "malloc heap" if name == "[heap]" else
                    "anon" if name in ("", "[stack]") else "X shm" if name.startswith("/SYSV") else "other")
        elif head[:1] == ["Rss:"]:
            parts[kind] = parts.get(kind, 0.0) + int(head[1]) / 1024
    return parts


def font_faces(pid: int | str = "self") -> int:
    """Font faces the process holds open: SDL2_ttf keeps each face's file open, and Kivy
    opens one face per distinct font id (its size as written, bold, ...; up to 64)."""
    n = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            n += os.readlink(fd).endswith((".ttc", ".ttf", ".otf"))
        except OSError:
            pass
    return n


TOUR = ("rules", "history", "help", "language", "service", "seat")


def screens_tour(app: Any, clock: Any, done: Callable[[], None]) -> None:
    """Every screen opened in turn in each language, then the player's screen again (a
    long-running seat's RSS: the screens stay made once opened)."""
    steps = [(lang, name) for lang in ("zh", "ms", "en") for name in TOUR]

    def step(i: int) -> None:
        if i == len(steps):
            clock.schedule_once(lambda _dt: done(), 1.5)
            return
        lang, name = steps[i]
        try:
            if app.presenter.lang != lang:
                app.set_language(lang)
            app.show(name)
        except Exception as exc:  # noqa: BLE001 - a screen that fails is said, the tour goes on
            print(f"bench: the {name} screen ({lang}) failed: {exc!r}", file=sys.stderr)
        clock.schedule_once(lambda _dt: step(i + 1), 0.4)
    step(0)


def gl_renderer() -> str:
    from kivy.graphics.opengl import GL_RENDERER, glGetString
    raw = glGetString(GL_RENDERER)
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def child_headless(boxes: int = 7) -> dict[str, Any]:
    """A demo table with ``boxes`` seat units and its dealer unit, no UI: the units'
    footprint in the bench's process (the Pi's seat process holds one seat unit)."""
    import dataclasses

    from firmware.engine.profile import load_profile
    from ui.demo import DemoTable
    table = DemoTable(load_profile("rws-blackjack-switch"), pace=0, auto=False)
    table.spec = dataclasses.replace(table.spec, boxes=boxes)
    before = rss_mb()                   # the interpreter and the modules
    table.start(lambda s: None)
    table.wait_ready()
    time.sleep(0.3)
    out = {"rss_mb": rss_mb(), "modules_mb": before}
    table.stop()
    return out


class SwapTimer:
    """Times change -> swap done. ``arrived()`` (the seat's thread) stamps each snapshot;
    ``delivering()`` (UI thread) takes the snapshots the screen is about to be given (several
    arriving within one frame are shown as one: the clock starts at the first of them);
    ``shown()`` marks that they changed the screen; the wrapped ``Window.flip`` stops the
    clock when the swap that follows has returned. Snapshots that change nothing on
    screen are not counted."""

    def __init__(self, window: Any) -> None:
        self.lat: list[float] = []
        self.flips: list[float] = []
        self.first_frame: float | None = None
        self._arrivals: list[float] = []
        self._candidate: float | None = None
        self._start: float | None = None
        swap = window.flip

        def flip_done() -> None:
            f0 = time.perf_counter()
            swap()
            now = time.perf_counter()
            self.flips.append(now - f0)
            if self.first_frame is None:
                self.first_frame = now
            if self._start is not None:
                self.lat.append(now - self._start)
                self._start = None
        window.flip = flip_done

    def arrived(self) -> None:
        self._arrivals.append(time.perf_counter())

    def delivering(self) -> None:
        n = len(self._arrivals)
        self._candidate = self._arrivals[0] if n else None
        del self._arrivals[:n]

    def shown(self) -> None:
        if self._start is None:
            self._start = self._candidate


def raster_threads_s() -> float:
    """CPU seconds of llvmpipe's rasteriser threads (named ``llvmpipe-N``): work a GPU does
    on the Pi. (The main thread's share of software GL -- vertex setup, the copy to X --
    stays in the rest, so "the rest" overstates what hardware GL would cost.)"""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            if not (task / "comm").read_text().startswith("llvmpipe"):
                continue
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue                    # a thread gone meanwhile
        total += int(fields[11]) + int(fields[12])      # utime, stime
    return total / tick


def idle_cpu(clock: Any, every: Callable[[], None], done: Callable[[float, float], None]) -> None:
    """CPU share of this process for IDLE_S while ``every`` runs each 2 s, and the share
    of that in llvmpipe's rasteriser threads."""
    every()
    tick = clock.schedule_interval(lambda _dt: every(), 2.0)

    def start(_dt: float) -> None:
        c0, w0, r0 = time.process_time(), time.perf_counter(), raster_threads_s()

        def stop(_dt: float) -> None:
            tick.cancel()
            wall = time.perf_counter() - w0
            done(100 * (time.process_time() - c0) / wall, 100 * (raster_threads_s() - r0) / wall)
        clock.schedule_once(stop, IDLE_S)
    clock.schedule_once(start, 1.0)


def summary(timer: SwapTimer) -> dict[str, Any]:
    lat = sorted(timer.lat) or [float("nan")]
    f = sorted(timer.flips) or [float("nan")]
    return {"change_ms": 1000 * statistics.median(lat), "change_max_ms": 1000 * lat[-1], "n": len(timer.lat),
            "swap_ms": 1000 * statistics.median(f)}


def child_window() -> dict[str, Any]:
    """The seat display on a demo Blackjack Switch table: bets changed on the main spot 30
    times (each a seat snapshot that changes the screen), then the meter counting up."""
    t0 = time.perf_counter()
    from fractions import Fraction

    from firmware.engine.profile import load_profile
    from ui.app import build_app
    from ui.demo import DemoTable
    table = DemoTable(load_profile("rws-blackjack-switch"), pace=0, auto=False)
    app = build_app(table)
    from kivy.clock import Clock
    from kivy.core.window import Window
    timer = SwapTimer(Window)
    res: dict[str, Any] = {}
    orig = app.on_snapshot

    def timed(snap: Any) -> None:
        timer.arrived()
        orig(snap)
    app.on_snapshot = timed
    table.on_snapshot = timed
    update = app.presenter.update

    def delivered(snap: Any) -> None:
        timer.delivering()
        update(snap)
    app.presenter.update = delivered
    show = app._show_screen

    def shown(screen: Any) -> None:
        timer.shown()
        show(screen)
    app._show_screen = shown            # before run(): the presenter is bound to it in build()

    def one(i: int) -> None:
        if i >= CHANGES:
            res.update(summary(timer))
            res["renderer"] = gl_renderer()
            meter = [Fraction(25000)]

            def contribute() -> None:
                meter[0] += Fraction(37, 4)
                table.controller.set(link="up", meter=meter[0])

            def toured() -> None:
                res["rss_toured_mb"] = rss_mb()
                res["faces_toured"] = font_faces()
                res["parts_toured"] = rss_parts()
                app.stop()

            def done(cpu: float, raster: float) -> None:
                res["idle_cpu"], res["raster_cpu"] = cpu, raster
                res["rss_mb"] = rss_mb()
                res["soft_gl_mb"] = soft_gl_mb()
                res["parts"] = rss_parts()
                res["faces"] = font_faces()
                screens_tour(app, Clock, toured)
            Clock.schedule_once(lambda _dt: idle_cpu(Clock, contribute, done), 0.5)
            return
        amount = Fraction(5 * (i % 8 + 1))
        table.command(lambda t: (t.table.readers[1].remove_chips("main"), t.bet("main", amount)))
        Clock.schedule_once(lambda _dt: one(i + 1), 0.25)

    def begin(_dt: float) -> None:
        table.command(lambda t: t.open_bets())
        Clock.schedule_once(lambda _dt: one(0), 0.5)
    Clock.schedule_once(begin, 1.0)
    app.run()
    res["first_frame_s"] = (timer.first_frame or t0) - t0
    return res


def child_bare() -> dict[str, Any]:
    """The floor: a bare Kivy window, one label whose text a thread changes (as the seat's
    thread hands the screen a snapshot), same clock and window size, no betbox."""
    from ui.app import _prepare_kivy
    _prepare_kivy((800, 480))
    import threading

    from kivy.app import App
    from kivy.clock import Clock, mainthread
    from kivy.core.window import Window
    from kivy.uix.label import Label
    res: dict[str, Any] = {}
    timer = SwapTimer(Window)

    class Bare(App):
        def build(self) -> Label:
            self.label = Label(text="0", font_size=48)
            return self.label

    app = Bare()

    @mainthread
    def put(text: str) -> None:
        timer.delivering()
        app.label.text = text
        timer.shown()

    def one(i: int) -> None:
        if i >= CHANGES:
            res.update(summary(timer))
            res["renderer"] = gl_renderer()
            n = [0]

            def every() -> None:
                n[0] += 1
                put(f"{n[0]:,}")

            def done(cpu: float, raster: float) -> None:
                res["idle_cpu"], res["raster_cpu"] = cpu, raster
                res["rss_mb"] = rss_mb()
                res["soft_gl_mb"] = soft_gl_mb()
                res["parts"] = rss_parts()
                app.stop()
            Clock.schedule_once(lambda _dt: idle_cpu(Clock, every, done), 0.5)
            return

        def from_thread() -> None:
            timer.arrived()
            put(str(i))
        threading.Thread(target=from_thread).start()
        Clock.schedule_once(lambda _dt: one(i + 1), 0.25)
    Clock.schedule_once(lambda _dt: one(0), 1.0)
    app.run()
    return res


def seat_run_rss(display: str) -> dict[str, float]:
    """RSS of a real seat process with its display (``betbox run``, as on a seat's Pi):
    mosquitto, the jackpot controller and the dealer unit in their own processes, the shoe
    and the seat's RFID reader simulated on ptys; the first frame, bets opened, the main
    bet changed 10 times by the reader, then 5 s. The process's RSS and its soft GL share."""
    import tempfile

    from firmware.engine.profile import load_profile
    from firmware.runtime.spots import seat_spots
    from tests.link.broker import Broker
    from tests.link.helpers import wait_until
    from tests.link.units import CHIPS, Devices, UnitProcess, dealer_config, jackpot_config, write_toml
    profile = load_profile("rws-blackjack-switch")
    spots = list(seat_spots(profile))
    with tempfile.TemporaryDirectory(prefix="bench-ui-seat-") as name:
        tmp = Path(name)
        broker = Broker(tmp / "mosquitto").start()
        devices = Devices(spots)
        units: list[Any] = []
        try:
            units.append(UnitProcess("jackpot", jackpot_config(tmp, broker.url, "main"), tmp))
            dealer = UnitProcess("dealer", dealer_config(tmp, broker.url, "bench", profile, devices.shoe.transport.path),
                                 tmp, drive=tmp / "dealer.drive")
            units.append(dealer)
            chips = tmp / "chips.csv"
            chips.write_text("uid,denomination,status\n" + "".join(f"{u},{d},valid\n" for u, d in CHIPS.items()))
            config = write_toml(tmp / "seat-1.toml", {
                "unit": {"role": "seat", "id": "seat-1", "table": "bench", "state_dir": str(tmp / "seat-1")},
                "link": {"broker": broker.url, "jackpot": "main"},
                "display": {"lang": "en", "size": "800x480", "fullscreen": False},
                "seat": {"box": 1, "spots": spots, "chips": str(chips)},
                "hardware.chip_reader": {"backend": "serial", "port": devices.reader.transport.path, "spots": spots},
                "hardware.lamps": {"backend": "mock", "lamps": ["progressive", "bets_locked"]}})
            os.environ.update(DISPLAY=display, KIVY_NO_ARGS="1", KIVY_NO_CONSOLELOG="1")
            seat = UnitProcess("seat-1", config, tmp)
            units.append(seat)
            wait_until(lambda: "display showing (first frame)" in seat.output(), 120, "the seat's first frame")
            dealer.send("press open_bets")
            time.sleep(2)
            uids = list(CHIPS)
            for i in range(10):
                devices.reader.remove("main")
                devices.reader.place("main", *uids[: 1 + i % len(uids)])
                time.sleep(0.5)
            time.sleep(5)
            status = Path(f"/proc/{seat.proc.pid}/status").read_text()
            rss = int(next(ln for ln in status.splitlines() if ln.startswith("VmRSS:")).split()[1]) / 1024
            soft, mapped = 0, False
            for line in Path(f"/proc/{seat.proc.pid}/smaps").read_text().splitlines():
                head = line.split()
                if head and "-" in head[0] and not head[0].endswith(":"):
                    mapped = len(head) > 5 and any(n in head[5] for n in SOFT_GL)
                elif mapped and head[:1] == ["Rss:"]:
                    soft += int(head[1])
            if os.environ.get("BENCH_UI_SMAPS"):     # a copy to look into (docs/ui.md "Memory")
                Path(os.environ["BENCH_UI_SMAPS"]).write_text(Path(f"/proc/{seat.proc.pid}/smaps").read_text())
            return {"rss_mb": rss, "soft_gl_mb": soft / 1024, "parts": rss_parts(seat.proc.pid),
                    "faces": font_faces(seat.proc.pid)}
        finally:
            for unit in reversed(units):
                unit.terminate()
            devices.close()
            broker.stop()


def spread(values: list[float]) -> str:
    v = sorted(values)
    return f"{v[0]:6.1f} /{statistics.median(v):6.1f} /{v[-1]:6.1f}"


def print_parts(rows: list[tuple[str, list[dict[str, Any]]]]) -> None:
    """The RSS by kind of mapping, median of each configuration's runs (``rss_parts``)."""
    kinds = ("soft GL libs", "libraries", "malloc heap", "anon", "X shm", "other")
    print("RSS by kind of mapping, MB (median of the runs):" + "".join(f" {k:>13}" for k in kinds))
    for name, runs in rows:
        for label, key in (("", "parts"), (" after every screen", "parts_toured")):
            have = [r[key] for r in runs if key in r]
            if have:
                print(f"  {name + label:52}" + "".join(f" {statistics.median(p.get(k, 0.0) for p in have):13.1f}"
                                                     for k in kinds))


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        kind = sys.argv[2]
        out = (child_window() if kind == "window" else child_bare() if kind == "bare" else
               seat_run_rss(os.environ["DISPLAY"]) if kind == "seat_run" else child_headless(int(kind.split(":")[1])))
        print(json.dumps(out))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seat-runs", type=int, default=3,
                    help="runs of a real `betbox run` seat with its display (RSS as on a seat's Pi)")
    ap.add_argument("--clocks", default="interrupt:30,free_all:30,interrupt:60",
                    help="Kivy clock:maxfps pairs to measure beside the default:30 baseline"
                         " (the display as shipped before issue 18)")
    ap.add_argument("--quick", action="store_true",
                    help="only the seat display as shipped (interrupt:30) and the real seat, --runs each:"
                         " its RSS, after every screen, by kind of mapping (and its change -> swap, idle CPU)")
    args = ap.parse_args()
    if args.quick:
        args.seat_runs, args.clocks = args.runs, "interrupt:30"
    env = dict(os.environ, KIVY_NO_ARGS="1", KIVY_NO_CONSOLELOG="1", KIVY_HOME="/tmp/betbox-bench-kivy")
    xvfb = None
    if not env.get("DISPLAY"):
        n = next(i for i in range(150, 300) if not Path(f"/tmp/.X{i}-lock").exists())
        xvfb = subprocess.Popen([shutil.which("Xvfb") or "Xvfb", f":{n}", "-screen", "0", "1280x800x24",
                                 "-nolisten", "tcp"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
        env["DISPLAY"] = f":{n}"

    def run(kind: str, clock: str = "default:30") -> dict[str, Any]:
        name, fps = clock.split(":")
        out = subprocess.run([sys.executable, __file__, "--child", kind], capture_output=True, text=True,
                             env=dict(env, BETBOX_UI_CLOCK=name, BETBOX_UI_MAXFPS=fps), timeout=180, cwd=ROOT)
        if out.returncode:
            raise SystemExit(out.stderr[-2000:])
        return json.loads(out.stdout.strip().splitlines()[-1])

    def seat_run() -> dict[str, Any]:
        out = subprocess.run([sys.executable, __file__, "--child", "seat_run"], capture_output=True, text=True,
                             env=env, timeout=300, cwd=ROOT)
        if out.returncode:
            raise SystemExit(out.stderr[-2000:])
        return json.loads(out.stdout.strip().splitlines()[-1])

    rows: list[tuple[str, list[dict[str, Any]]]] = []
    try:
        head, one = ({"rss_mb": 0.0, "modules_mb": 0.0},) * 2 if args.quick else (run("headless:7"), run("headless:1"))
        configs = ["default:30"] + [c for c in args.clocks.split(",") if c and c != "default:30"]
        for clock in args.clocks.split(",") if args.quick else configs:
            if not args.quick:
                rows.append((f"bare Kivy label, {clock}", [run("bare", clock) for _ in range(args.runs)]))
            rows.append((f"seat display,    {clock}", [run("window", clock) for _ in range(args.runs)]))
        seat_runs = [seat_run() for _ in range(args.seat_runs)]
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait()
    report(args, rows, seat_runs, head, one)
    return 0


def report(args: Any, rows: list[tuple[str, list[dict[str, Any]]]], seat_runs: list[dict[str, Any]],
           head: dict[str, float], one: dict[str, float]) -> None:
    """The figures: each configuration's runs, the RSS by kind of mapping, the real seat's."""
    extra = head["rss_mb"] - one["rss_mb"]
    cpu = platform.processor()
    if Path("/proc/cpuinfo").exists():
        cpu = Path("/proc/cpuinfo").read_text().split("model name")[1].split("\n")[0].split(":", 1)[1].strip()
    renderer = rows[0][1][0].get("renderer", "?")
    soft = any(w in renderer.lower() for w in ("llvmpipe", "softpipe", "swrast"))
    print(f"machine: {cpu}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, Python {platform.python_version()}")
    print(f"GL renderer: {renderer}" + ("  -- SOFTWARE rendering: every swap is a CPU copy; the Pi's GPU"
                                        " is not measured here" if soft else ""))
    print(f"{args.runs} runs each, min / median / max of each run's median; {CHANGES} changes a run;"
          f" idle: {IDLE_S:.0f} s, the meter (label) changing every 2 s")
    print(f"{'':34} {'change -> swap done ms':>24} {'swap alone ms':>22} {'idle CPU %':>22} {'RSS MB':>22}"
          f" {'RSS less soft GL MB':>22} {'idle CPU less raster %':>24}")
    for name, runs in rows:
        print(f"{name:34} {spread([r['change_ms'] for r in runs]):>24} {spread([r['swap_ms'] for r in runs]):>22}"
              f" {spread([r['idle_cpu'] for r in runs]):>22} {spread([r['rss_mb'] for r in runs]):>22}"
              f" {spread([r['rss_mb'] - r['soft_gl_mb'] for r in runs]):>22}"
              f" {spread([r['idle_cpu'] - r['raster_cpu'] for r in runs]):>24}")
    seat = [r for name, runs in rows if name.startswith("seat") for r in runs]
    if seat:
        print(f"changes that reached a swap per run: {sorted({r['n'] for r in seat})} of {CHANGES};"
              f" first frame after import: {statistics.median(r['first_frame_s'] for r in seat):.2f} s")
    # What the RSS figures count: the display AND the demo table in one process, a dealer
    # unit and 7 seat units with their journals. A seat's Pi runs the display with its
    # own seat unit only (``betbox run``; the dealer is another unit).
    if not args.quick:
        print(f"RSS counts the display and the whole demo table (dealer + 7 seat units): the units take"
              f" {head['rss_mb'] - head['modules_mb']:.0f} MB over the interpreter and modules"
              f" ({head['rss_mb']:.0f} MB without a UI); 6 of those seat units ({extra:.0f} MB) are not on a"
              f" seat's Pi (1 seat unit: {one['rss_mb']:.0f} MB without a UI)")
    print_parts(rows + [("a real seat (betbox run)", seat_runs)])
    if seat_runs:
        print(f"font faces open: seat display {spread([r['faces'] for r in seat])}, after every screen"
              f" {spread([r['faces_toured'] for r in seat])}; real seat {spread([r['faces'] for r in seat_runs])}")
        print(f"a real seat process with its display (betbox run; mosquitto, the jackpot controller and the dealer"
              f" in their own processes), {len(seat_runs)} runs: RSS {spread([r['rss_mb'] for r in seat_runs])} MB;"
              f" less soft GL {spread([r['rss_mb'] - r['soft_gl_mb'] for r in seat_runs])} MB")
    if seat:
        toured = [r["rss_toured_mb"] - extra for r in seat]
        print(f"after every screen in zh, ms and en, back on the player's screen: RSS"
              f" {spread([r['rss_toured_mb'] for r in seat])} MB; as on a seat's Pi {spread(toured)} MB;"
              f" also less soft GL: {spread([v - r['parts_toured'].get('soft GL libs', 0.0) for v, r in zip(toured, seat, strict=True)])} MB")
    if seat and not args.quick:
        less = [r["rss_mb"] - extra for r in seat]
        print(f"seat display's RSS as on a seat's Pi (one seat unit; the dealer's share still counted):"
              f" {spread(less)} MB; also less soft GL: {spread([v - r['soft_gl_mb'] for v, r in zip(less, seat, strict=True)])} MB")

if __name__ == "__main__":
    sys.exit(main())
