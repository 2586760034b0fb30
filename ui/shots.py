"""Scripted screenshots of every screen: ``python -m ui.shots --size 800x480 --out DIR``.

Opens the seat display on a manually driven demo table (``rws-perfect-pairs``, seat 1),
plays one scripted round, opens each screen with simulated touches, writes
``DIR/<size>-<step>.png`` and ``DIR/<size>-texts.json`` (every label's text per step).
Used by ``tests/ui/test_window.py`` under Xvfb; handy for a look by hand too.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from fractions import Fraction
from pathlib import Path


def _antennas_shot(app, shot, touch, then):
    """The service screen scrolled to the reader's antennas (live rows further down), shot
    after the scroll has been drawn; then back to the seat's screen and ``then``."""
    from kivy.clock import Clock
    lines = app._antenna_lines[1]
    if lines:
        app.sm.current_screen.ids.body.parent.scroll_to(lines[-1], animate=False)

    def shoot(_dt=None) -> None:
        shot("service-antennas")
        touch(app.sm.current_screen.ids.back)
        Clock.schedule_once(then, 0.1)
    return lambda _dt=None: Clock.schedule_once(shoot, 0.3)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="800x480")
    ap.add_argument("--out", required=True)
    ap.add_argument("--profile", default="rws-perfect-pairs")
    ap.add_argument("--lang", default="en", choices=("en", "zh", "ms"),
                    help="the language the screens are opened in (a look by hand; the tests use en)")
    ap.add_argument("--scene", choices=("screens", "jackpot"), default="screens",
                    help="screens: every screen (rws-perfect-pairs); jackpot: the progressive meter, "
                         "link down and a jackpot hit (rws-blackjack-switch)")
    ap.add_argument("--all", action="store_true",
                    help="every screen and state at 800x480, 1024x600 and 1280x800 in en, zh and ms: "
                         "the screens and the jackpot scenes, and every layout combination and unit "
                         "condition (python -m ui.layoutcheck --shots), each in its own process")
    args = ap.parse_args(argv)
    if args.all:
        return shoot_all(Path(args.out))
    if args.scene == "jackpot" and args.profile == "rws-perfect-pairs":
        args.profile = "rws-blackjack-switch"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from firmware.engine.profile import load_profile
    from firmware.sim import chipset
    from firmware.sim.table import seat_spots

    from .app import SIZES, build_app
    from .demo import DemoTable

    table = DemoTable(load_profile(args.profile), box=1, pace=0, auto=False)
    app = build_app(table, lang=args.lang, size=SIZES[args.size])
    from .i18n import tr
    lang = args.lang
    language_button = {"en": "Language", "zh": "语言", "ms": "Bahasa"}
    from kivy.clock import Clock
    from kivy.core.window import Window
    from kivy.tests.common import UnitTestTouch

    texts: dict[str, list[str]] = {}
    size = args.size

    def labels(widget) -> list[str]:
        found = []
        for w in widget.walk(restrict=True):
            t = getattr(w, "face", None) or getattr(w, "text", None)     # a card: "10♠"
            if isinstance(t, str) and t.strip():
                found.append(t)
        return found

    def touch(widget) -> None:
        x, y = widget.to_window(*widget.center)
        t = UnitTestTouch(x, y)
        t.touch_down()
        t.touch_up()

    def find(text: str):
        for w in app.sm.current_screen.walk(restrict=True):
            if getattr(w, "text", None) == text and hasattr(w, "on_release"):
                return w
        raise LookupError(f"no button {text!r} on {app.sm.current}")

    def table_then(fn):
        """Run fn once the table's thread has done everything queued and the screen shows it."""
        done = threading.Event()
        table.command(lambda _t: done.set())

        def poll(_dt):
            if done.is_set() and app._pending_snapshot is None:
                Clock.schedule_once(lambda _dt: fn(), 0.15)
            else:
                Clock.schedule_once(poll, 0.05)
        Clock.schedule_once(poll, 0.05)

    def shot(name: str):
        texts[name] = labels(app.sm.current_screen)
        written = Window.screenshot(name=str(out / f"{size}-{name}.png"))
        if written:                     # Kivy numbers the file: give it the step's name
            Path(written).replace(out / f"{size}-{name}.png")

    steps = []

    def step(fn):
        steps.append(fn)
        return fn

    def run_next(*_a):
        if not steps:
            (out / f"{size}-texts.json").write_text(json.dumps(texts, ensure_ascii=False, indent=1))
            app.stop()
            return
        fn = steps.pop(0)
        fn()

    def then_shoot(name):
        def after():
            shot(name)
            Clock.schedule_once(run_next, 0.1)
        Clock.schedule_once(lambda _dt: after(), 0.2)

    @step
    def betting():
        def cmds(t):
            t.open_bets()
            t.bet("main", Fraction(20))
            t.bet("perfect_pairs", Fraction(10))
            t.key("m")                      # an unknown chip on main
        table.command(cmds)
        table_then(lambda: then_shoot("seat-betting"))

    @step
    def hand():
        def cmds(t):
            t.press("no_more_bets")
            for c in ("8H", "9D", "8H"):
                t.table.shoe.deal(c)
                t.table.settle()
        table.command(cmds)
        table_then(lambda: then_shoot("seat-hand"))

    @step
    def results():
        def cmds(t):
            t.press("stand")
            t.table.shoe.deal("TC")
            t.table.settle()
        table.command(cmds)
        table_then(lambda: then_shoot("seat-results"))

    def via(button_text, name, back=True):
        def go():
            touch(find(button_text))
            Clock.schedule_once(lambda _dt: after(), 0.2)

        def after():
            shot(name)
            if back:
                touch(app.sm.current_screen.ids.back)
            Clock.schedule_once(run_next, 0.15)
        return go

    if args.scene == "jackpot":
        steps.clear()
        jackpot_scene(table, step, table_then, then_shoot, shot, Clock, run_next)
        app.first_frame_hook = Clock.schedule_once(lambda _dt: table_then(run_next), 0.5)
        app.run()
        return 1 if table.error is not None or steps else 0

    suffix = "" if lang == "en" else f"-{lang}"
    steps.append(via(tr(lang, "menu.rules"), f"rules{suffix}"))
    steps.append(via(tr(lang, "menu.history"), f"history{suffix}"))
    steps.append(via(tr(lang, "menu.help"), f"help{suffix}"))
    steps.append(via(language_button[lang], f"language{suffix}", back=False))

    @step
    def chinese():
        touch(find("简体中文"))
        then_shoot("seat-zh")

    @step
    def malay():
        touch(find("语言"))
        Clock.schedule_once(lambda _dt: (touch(find("Bahasa Melayu")), then_shoot("seat-ms")), 0.2)

    @step
    def pin():
        # a long press on "Seat N" (a tap does nothing)
        x, y = app.seat_screen.ids.seat_button.to_window(*app.seat_screen.ids.seat_button.center)
        press = UnitTestTouch(x, y)
        press.touch_down()

        def keys(_dt=None):
            if app.sm.current != "pin":
                Clock.schedule_once(keys, 0.1)      # the long press has not opened the pad yet
                return
            if not press.ud.get("up"):
                press.touch_up()                    # let go only once the pad is open
                press.ud["up"] = True
                Clock.schedule_once(keys, 0.3)
                return
            for k in "2468":
                touch(find(k))
            shot("pin")
            touch(find("OK"))

            def service(_dt=None):
                if app.sm.current != "service":
                    Clock.schedule_once(service, 0.1)
                    return
                shot("service")
                Clock.schedule_once(_antennas_shot(app, shot, touch, run_next), 0.3)
            Clock.schedule_once(service, 0.3)
        Clock.schedule_once(keys, app.seat_screen.LONG_PRESS + 0.4)

    def find_control(name: str):
        for w in app.seat_screen.ids.dealer_bar.children:
            if getattr(w, "control", None) == name:
                return w
        return None

    played: list[str] = []

    @step
    def manual_round():
        """A round played only through the on-screen dealer controls."""
        plan = ["open_bets", "bet", "no_more_bets"]

        def next_touch(_dt=None):
            controls = [getattr(w, "control", None) for w in reversed(app.seat_screen.ids.dealer_bar.children)]
            if plan:
                name = plan.pop(0)
            elif "stand" in controls:
                name = "stand"
            elif "deal" in controls:
                name = "deal"
            else:
                texts["manual-controls"] = played
                return then_shoot("seat-manual")
            button = find_control(name)
            if button is None:
                texts["manual-controls"] = played + [f"missing {name}"]
                return then_shoot("seat-manual")
            played.append(name)
            if len(played) == 5:
                shot("seat-manual-decide")
            touch(button)
            table_then(next_touch)
        next_touch()

    @step
    def fault():
        def cmds(t):
            t.open_bets()
            t.bet("main", Fraction(20))
            t.table.shoe.jam()
            t.table.settle()
        table.command(cmds)
        table_then(lambda: then_shoot("seat-fault"))

    @step
    def not_taken():
        """Seat 1's lock never reaches the dealer: after the bounded wait bets close without
        it (bets_not_taken, lock_timeout) and seat 2 plays on."""
        app.set_language(lang)

        def cmds(t):
            t.table.shoe.clear_jam()
            t.table.settle()
            spots = list(seat_spots(t.profile))
            t.table.readers[2].place_chips("main", chipset.chips_for(Fraction(20), 2, spots.index("main"), 0))
            t.table.cycle_readers(2, [2])

            def drop_lock(subscriber, m):
                if subscriber.endswith("dealer") and m.kind in ("lock", "hello") and m.body.get("box") == t.box:
                    return None
                return m
            t.table.bus.tamper = drop_lock
            t.press("no_more_bets")
            for now in (0.0, 60.0):          # the dealer's clock: the wait for locks runs out
                t.table.dealer.post(("tick", {"now": now}))
            t.table.settle()
            t.table.bus.tamper = None
        table.command(cmds)
        table_then(lambda: then_shoot("seat-not-taken"))

    for code in ("zh", "ms"):
        @step
        def not_taken_in(code=code):
            app.set_language(code)
            then_shoot(f"seat-not-taken-{code}")

    app.first_frame_hook = Clock.schedule_once(lambda _dt: table_then(run_next), 0.5)
    app.run()
    if table.error is not None:
        print(f"table error: {table.error!r}", file=sys.stderr)
        return 1
    return 0 if not steps else 1


def shoot_all(out: Path) -> int:
    """One command for every screenshot (``--all``): DIR/<size>/<lang>/… and DIR/<size>/layout/…"""
    import subprocess
    failed = []
    for size in ("800x480", "1024x600", "1280x800"):
        runs = [["--size", size, "--lang", lang, "--scene", scene,
                 "--out", str(out / size / lang)] for lang in ("en", "zh", "ms") for scene in ("screens", "jackpot")]
        for argv in runs:
            done = subprocess.run([sys.executable, "-m", "ui.shots", *argv], capture_output=True, text=True,
                                  timeout=300)
            print(f"ui.shots {' '.join(argv)}: {'ok' if done.returncode == 0 else 'FAILED'}", flush=True)
            if done.returncode:
                failed.append((argv, done.stderr[-1500:]))
        argv = ["--size", size, "--out", str(out / size / "layout"), "--shots"]
        done = subprocess.run([sys.executable, "-m", "ui.layoutcheck", *argv], capture_output=True, text=True,
                              timeout=600)
        print(f"ui.layoutcheck {' '.join(argv)}: {'ok' if done.returncode == 0 else 'FAILED'}", flush=True)
        if done.returncode:
            failed.append((argv, done.stderr[-1500:]))
    for argv, err in failed:
        print(f"{' '.join(argv)}:\n{err}", file=sys.stderr)
    return 1 if failed else 0


def jackpot_scene(table, step, table_then, then_shoot, shot, Clock, run_next) -> None:
    """Blackjack Switch, seat 1 alone: the live meter, the link down, a suited four of a
    kind (the 100% jackpot: celebration while PENDING), then the award."""

    @step
    def meter():
        def cmds(t):
            t.open_bets()
            t.bet("main", Fraction(20))
            t.bet("progressive", Fraction(5))
        table.command(cmds)
        table_then(lambda: then_shoot("jackpot-meter"))

    @step
    def link_down():
        table.controller.set(link="down")
        table_then(lambda: then_shoot("jackpot-link-down"))

    @step
    def hit():
        table.controller.set(link="up")

        def cmds(t):
            t.press("no_more_bets")
            for c in ("7S", "7S", "TD", "7S", "7S"):
                t.table.shoe.deal(c)
                t.table.settle()
        table_then(lambda: (table.command(cmds), table_then(lambda: then_shoot("jackpot-hit"))))

    @step
    def award():
        def cmds(t):
            for _ in range(2):
                t.press("stand")
            t.table.shoe.deal("TC")
            t.table.settle()
        table.command(cmds)
        table_then(lambda: then_shoot("jackpot-award"))

    @step
    def insurance_per_hand():
        """The next round with an ace up: insurance offered on each of the two hands."""
        def cmds(t):
            t.open_bets()
            t.bet("main", Fraction(20))
            t.press("no_more_bets")
            for c in ("9H", "TC", "AS", "7S", "8D"):
                t.table.shoe.deal(c)
                t.table.settle()
        table.command(cmds)
        table_then(lambda: then_shoot("switch-insurance"))


if __name__ == "__main__":
    sys.exit(main())
