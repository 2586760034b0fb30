"""The Kivy seat display. Layouts are in ``ui/kv/*.kv``; every text comes from the
presenter (``ui.presenter``); widgets only show it. Redrawn on change only: no Clock
interval runs while nothing happens.

Entry points (import this module lazily: headless units never load Kivy):

* :func:`run_demo_window` — ``betbox demo`` without ``--headless``;
* :func:`run_seat_display` — ``betbox run`` on a seat unit (full screen on the Pi).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from firmware.config import DISPLAY_SIZES

SIZES = DISPLAY_SIZES                     # [display] size: one list, in firmware.config


class DisplayUnavailable(RuntimeError):
    """No screen to draw on; the message is one sentence for the unit's log."""


def display_problem(env=None) -> str | None:
    """Why the seat display cannot open a window here, in one sentence; None when it can.
    Checked before Kivy starts (whose own failure is "Couldn't connect to X server" or an
    SDL error, and a hang or exit without saying what to do)."""
    import socket
    env = os.environ if env is None else env
    x = env.get("DISPLAY")
    if x:
        host, _, rest = x.rpartition(":")
        number = rest.split(".")[0]
        if host in ("", "unix") and number.isdigit():
            path = f"/tmp/.X11-unix/X{number}"
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.settimeout(2.0)
                    sock.connect(path)
            except OSError as exc:
                return (f"no display: DISPLAY is {x} but no X server answers at {path} ({exc.strerror or exc}); "
                        f"start the X server (or Xvfb), or unset DISPLAY to draw on the screen directly")
        return None
    wayland = env.get("WAYLAND_DISPLAY")
    if wayland:
        runtime = env.get("XDG_RUNTIME_DIR", "")
        path = wayland if wayland.startswith("/") else os.path.join(runtime, wayland)
        if not os.path.exists(path):
            return f"no display: WAYLAND_DISPLAY is {wayland} but {path} does not exist; start the compositor"
        return None
    cards = sorted(Path("/dev/dri").glob("card*")) if Path("/dev/dri").is_dir() else []
    if not cards:
        return ("no display: DISPLAY is not set and there is no DRM device (/dev/dri/card*) to draw on; "
                "connect the screen (and enable its overlay in config.txt) or set DISPLAY")
    if not any(os.access(c, os.R_OK | os.W_OK) for c in cards):
        return (f"no display: {cards[0]} cannot be opened by this user; add the unit's user to the "
                f"'video' group (usermod -aG video USER)")
    return None


def _kivy_log_to_python() -> None:
    """Kivy's warnings and errors go to the unit's log (Python logging, "kivy" logger);
    its info lines (window provider, GL version ...) only with BETBOX_UI_DEBUG."""
    if os.environ.get("BETBOX_UI_DEBUG"):
        return
    os.environ.setdefault("KIVY_LOG_MODE", "PYTHON")
    import logging
    logging.getLogger("kivy").setLevel(logging.WARNING)


def _prepare_kivy(size: tuple[int, int], fullscreen: bool = False, kivy_home: str | None = None) -> None:
    """Kivy reads its environment and config at import: set them first."""
    os.environ.setdefault("KIVY_NO_ARGS", "1")
    if not os.environ.get("BETBOX_UI_DEBUG"):
        os.environ.setdefault("KIVY_NO_CONSOLELOG", "1")
        os.environ.setdefault("KIVY_NO_FILELOG", "1")
    _kivy_log_to_python()
    if kivy_home:
        os.environ["KIVY_HOME"] = kivy_home
    elif "KIVY_HOME" not in os.environ:
        os.environ["KIVY_HOME"] = str(Path(tempfile.gettempdir()) / "betbox-kivy")
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        # the Pi without a desktop: SDL2 straight on KMS/DRM
        os.environ.setdefault("SDL_VIDEODRIVER", "kmsdrm")
    from kivy.config import Config
    Config.set("graphics", "width", str(size[0]))
    Config.set("graphics", "height", str(size[1]))
    Config.set("graphics", "resizable", "0")
    Config.set("graphics", "fullscreen", "auto" if fullscreen else "0")
    # Kivy's clock: "interrupt" wakes the loop as soon as the seat's thread hands over a
    # snapshot, where the default clock sleeps out its 1/30 s tick first (bench/bench_ui.py,
    # docs/ui.md); the frame cap keeps motion and idle wake-ups modest.
    # BETBOX_UI_CLOCK / BETBOX_UI_MAXFPS choose others for a comparison.
    Config.set("kivy", "kivy_clock", os.environ.get("BETBOX_UI_CLOCK", "interrupt"))
    Config.set("graphics", "maxfps", os.environ.get("BETBOX_UI_MAXFPS", "30"))
    # No multisampling: llvmpipe rasterises every frame 4x with it (bench_ui: swap 53 -> 13
    # ms, idle CPU 7.5 -> 3.7 %); the round shapes smooth their own edges (Smooth*).
    # BETBOX_UI_MSAA sets Kivy's multisamples for a comparison.
    Config.set("graphics", "multisamples", os.environ.get("BETBOX_UI_MSAA", "0"))
    Config.set("input", "mouse", "mouse,disable_multitouch")
    Config.set("kivy", "exit_on_escape", "0")


DEMO_PIN = "2468"       # the demo's technician PIN (a real seat's is its configuration's pin_hash)


def build_app(feed, lang: str = "en", pin: str | None = None, size: tuple[int, int] = (800, 480),
              fullscreen: bool = False, kivy_home: str | None = None, log_lines=None):
    """The seat display's Kivy app on ``feed`` (a :class:`ui.demo.DemoTable` or a
    :class:`ui.feed.SeatFeed`); ``pin``: the technician PIN's salted hash (None: the
    demo's PIN). Kivy is prepared first: its modules read the configuration at import."""
    _prepare_kivy(size, fullscreen, kivy_home)
    from . import fonts
    font = fonts.cjk_font()
    from kivy.core.text import LabelBase

    from .display import SeatDisplayApp, load_layouts
    from .service import hash_pin

    LabelBase.register(name="Seat", fn_regular=str(font))
    fonts.share_faces()
    load_layouts()
    return SeatDisplayApp(feed, lang=lang, pin_hash=hash_pin(DEMO_PIN) if pin is None else pin,
                          log_lines=log_lines)


# --- commands ---------------------------------------------------------------------------

def run_demo_window(options: Any) -> int:
    """``betbox demo`` with a window. ``options`` (argparse namespace or any object):
    ``profiles`` (list; the first is used), ``seed``, ``box`` (seat shown, default 1),
    ``lang``, ``size`` ("800x480"…), ``manual`` (start driven by the keyboard), ``state_dir``,
    ``pace`` (auto play's seconds per step a player sees; default ``DEFAULT_PACE``, 0 to 3)."""
    import logging

    from firmware.engine.profile import ProfileError, load_profile, profile_names

    from .demo import DEFAULT_PACE, DemoTable
    from .service import LogRing

    names = getattr(options, "profiles", None) or profile_names()
    try:
        profile = load_profile(names[0])
    except ProfileError as exc:
        print(f"betbox demo: {exc}", file=sys.stderr)
        return 2
    size = SIZES.get(getattr(options, "size", None) or "800x480")
    if size is None:
        print(f"betbox demo: --size must be one of {', '.join(SIZES)}", file=sys.stderr)
        return 2
    state_dir = getattr(options, "state_dir", None)
    pace = getattr(options, "pace", None)
    try:
        table = DemoTable(profile, box=int(getattr(options, "box", None) or 1), seed=int(getattr(options, "seed", 1)),
                          state_dir=Path(state_dir) if state_dir else None,
                          auto=not getattr(options, "manual", False),
                          pace=DEFAULT_PACE if pace is None else float(pace),
                          rounds=getattr(options, "rounds", None))
    except ValueError as exc:
        print(f"betbox demo: {exc}", file=sys.stderr)
        return 2
    problem = display_problem()
    if problem is not None:
        print(f"betbox demo: {problem}", file=sys.stderr)
        return 3
    ring = LogRing()
    logging.getLogger().addHandler(ring)
    try:
        app = build_app(table, lang=getattr(options, "lang", None) or "en", size=size, log_lines=ring)
    except Exception as exc:  # noqa: BLE001 - font missing etc.: say it plainly
        print(f"betbox demo: {exc}", file=sys.stderr)
        return 2
    if table.rounds is not None:        # --rounds: close the window when they are played
        from kivy.clock import Clock
        table.on_done = lambda: Clock.schedule_once(lambda _dt: app.stop(), table.pace * 3)
    app.run()
    return 0


def run_seat_display(seat, controller=None, bus=None, lang: str = "en", pin: str = "",
                     size: str = "800x480", fullscreen: bool | None = None,
                     config_digest: str | None = None, diag=None) -> int:
    """``betbox run`` on a seat unit: show ``seat`` (a running :class:`SeatUnit` whose
    dispatch queue is pumped by the runtime's thread). Blocks in Kivy's loop on the main
    thread. Full screen when there is no desktop (the Pi on KMS/DRM)."""
    from .feed import SeatFeed
    problem = display_problem()
    if problem is not None:
        raise DisplayUnavailable(problem)
    if fullscreen is None:
        fullscreen = not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY")
    feed = SeatFeed(seat, controller, bus, config_digest=config_digest, diag=diag)
    app = build_app(feed, lang=lang, pin=pin, size=SIZES.get(size, (800, 480)), fullscreen=fullscreen)
    app.run()
    return 0
