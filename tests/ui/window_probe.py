"""Drives the real seat display (Kivy window, under the test's Xvfb) on a demo table and
prints what it saw as JSON. Run by tests/ui/test_window_updates.py in its own process
(Kivy's window is one per process).

    python tests/ui/window_probe.py in_place | technician_key | meter | antennas
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(scenario: str) -> dict[str, Any]:
    if scenario == "late_profile":
        return late_profile()
    from firmware.engine.profile import load_profile
    from ui.app import build_app
    from ui.demo import DemoTable

    # the meter and the off-screen parts: a profile with a progressive
    profile = "rws-blackjack-switch" if scenario in ("meter", "off_screen", "rules_meter", "fit_start") else "rws-perfect-pairs"
    table = DemoTable(load_profile(profile), pace=0, auto=False)
    if scenario == "fit_start":
        fit_sizes(out := {})
    app = build_app(table)
    from kivy.clock import Clock
    out = {} if scenario != "fit_start" else out
    steps: list[tuple[Callable[[], None], float]] = []

    def later(fn: Callable[[], None], wait: float = 1.5) -> None:
        steps.append((fn, wait))

    def run_steps(_dt: float = 0) -> None:
        if not steps:
            app.stop()
            return
        fn, wait = steps.pop(0)
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - say it in the JSON, then stop the window
            out["error"] = repr(exc)
            app.stop()
            return
        Clock.schedule_once(run_steps, wait)

    seat = lambda: app.seat_screen.ids          # noqa: E731

    def widgets() -> dict[str, Any]:
        ids = seat()
        hands = [w for w in reversed(ids.hands.children) if type(w).__name__ == "HandRow"]
        return {"spots": [id(w) for w in reversed(ids.spots.children)],
                "amounts": [w.amount for w in reversed(ids.spots.children)],
                "hands": [id(w) for w in hands],
                "cards": [[id(c) for c in reversed(h.ids.cards.children)] for h in hands],
                "dealer_cards": [id(c) for c in reversed(ids.dealer_cards.children)]}

    def record(name: str) -> Callable[[], None]:
        return lambda: out.__setitem__(name, widgets())

    def bet(amount: int) -> Callable[[], None]:
        return lambda: table.command(lambda t: (t.table.readers[1].remove_chips("main"),
                                                t.bet("main", Fraction(amount))))

    if scenario == "in_place":
        later(lambda: table.command(lambda t: t.open_bets()))
        later(bet(20))
        later(record("bet_20"))
        later(bet(35))
        later(record("bet_35"))
        later(lambda: table.command(lambda t: t.key("n")), 2.0)
        later(lambda: table.command(lambda t: t.deal_next()))
        later(lambda: table.command(lambda t: t.deal_next()))
        later(record("two_cards"))
        later(lambda: table.command(lambda t: t.deal_next()))
        later(record("three_cards"))
    elif scenario == "fit_start":
        later(lambda: None, 2.0)                # the screen up and settled
    elif scenario in ("technician_key", "meter", "antennas", "off_screen", "rules_meter", "freed", "tours"):
        {"technician_key": technician_key_steps, "meter": meter_steps, "antennas": antenna_steps,
         "off_screen": off_screen_steps, "rules_meter": rules_meter_steps,
         "freed": freed_steps, "tours": tours_steps}[scenario](app, table, later, out)
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")
    Clock.schedule_once(run_steps, 1.5)
    app.run()
    return out


def technician_key_steps(app: Any, table: Any, later: Callable[..., None], out: dict[str, Any]) -> None:
    """The console's key turned on and off, the PIN pad and the service screen between."""
    def turn(on: bool) -> Callable[[], None]:
        return lambda: table.command(lambda t: (t.table.console.turn_key(on), t.table.settle()))

    def screen(name: str) -> Callable[[], None]:
        return lambda: out.__setitem__(name, app.sm.current)

    def pin(digits: str) -> Callable[[], None]:
        def press() -> None:
            for k in [*digits, "OK"]:
                app._pin_key(k)
        return press
    later(screen("before"))
    later(turn(True))
    later(screen("key_on"))
    later(pin("2468"))
    later(screen("after_pin"))
    later(turn(False))
    later(screen("key_off"))
    later(turn(True))
    later(screen("key_on_again"))
    later(pin("1111"))
    later(screen("wrong_pin"))
    later(turn(False))
    later(screen("key_off_again"))
    later(lambda: out.__setitem__("dealer_alarms", [a["alarm"] for a in table.table.dealer.alarms]))


def meter_steps(app: Any, table: Any, later: Callable[..., None], out: dict[str, Any]) -> None:
    """Frames drawn (Window.on_flip, counted by the app) while the meter is still, on a
    contribution of a table's trickle, on a big rise, and still again afterwards."""
    meter = [Fraction(25000)]

    def rise(by: Fraction) -> Callable[[], None]:
        def go() -> None:
            meter[0] += by
            table.controller.set(link="up", meter=meter[0])
        return go

    def frames(name: str) -> Callable[[], None]:
        return lambda: out.__setitem__(name, (app.frames, app.seat_screen.ids.meter.text))
    later(rise(Fraction(0)), 3.0)
    later(frames("still_0"))
    later(frames("still_1"))
    later(rise(Fraction(37, 4)))
    later(frames("trickle"))
    later(rise(Fraction(500)))
    later(frames("big_rise"))
    later(frames("still_2"))


def antenna_steps(app: Any, table: Any, later: Callable[..., None], out: dict[str, Any]) -> None:
    """The service screen's antenna rows while chips are placed: the same line widgets,
    their texts following the reader's raw reads (live, without reopening the screen)."""
    def lines(name: str) -> Callable[[], None]:
        def look() -> None:
            shown = app._antenna_lines[1]
            out[name] = {"screen": app.sm.current, "ids": [id(w) for w in shown], "texts": [w.text for w in shown]}
        return look

    def chips() -> None:
        def place(t: Any) -> None:
            t.table.readers[1].place_chips("perfect_pairs", ["04A1B2C3D4E5F6"])
            t.table.cycle_readers(1, [1])
        table.command(place)
    later(lambda: None, 2.0)                    # the table's first snapshot: the tap is on
    later(lambda: table.command(lambda t: t.table.cycle_readers(1, [1])))
    later(lambda: app.show("service"))
    later(lambda: table.command(lambda t: t.table.cycle_readers(1, [1])), 2.0)
    later(lines("before"), 2.0)
    later(chips, 2.0)
    later(lines("after"))


def off_screen_steps(app: Any, table: Any, later: Callable[..., None], out: dict[str, Any]) -> None:
    """The window's pixels before and after a bet, a meter rise and a new phase (header,
    meter, menu and bet spots are drawn from off-screen buffers, ``ui.widgets.OffScreen``,
    unless BETBOX_UI_OFFSCREEN=0), and how many parts were drawn off-screen."""
    from kivy.core.window import Window
    from kivy.graphics.opengl import GL_RGB, GL_UNSIGNED_BYTE, glReadPixels

    from ui.widgets import OffScreen

    def shot(name: str) -> Callable[[], None]:
        def take() -> None:
            Window.dispatch("on_draw")      # draws into the back buffer, read before the swap
            w, h = Window.size
            out[name] = glReadPixels(0, 0, w, h, GL_RGB, GL_UNSIGNED_BYTE).hex()
            Window.flip()
            found, todo = 0, [app.seat_screen]
            while todo:
                widget = todo.pop()
                found += isinstance(widget, OffScreen) and widget._fbo is not None
                todo += widget.children
            out["off_screen"] = found
        return take

    meter = [Fraction(25000)]

    def rise() -> None:
        meter[0] += Fraction(37, 4)
        table.controller.set(link="up", meter=meter[0])
    later(lambda: table.command(lambda t: t.open_bets()))
    later(lambda: table.command(lambda t: t.bet("main", Fraction(20))))
    later(shot("before"))
    later(lambda: table.command(lambda t: (t.table.readers[1].remove_chips("main"), t.bet("main", Fraction(35)))))
    later(rise)
    later(lambda: table.command(lambda t: t.key("n")), 2.0)      # the phase (header) changes
    later(shot("after"))


def rules_meter_steps(app: Any, table: Any, later: Callable[..., None], out: dict[str, Any]) -> None:
    """The rules screen on a progressive profile once the odds are worked out and the
    controller's meter is known (wire text): its return at that meter."""
    from ui.rulesinfo import cached_odds, odds_for

    def meter() -> None:
        odds_for(table.profile)                 # the warm-up's answer (or worked out here)
        table.controller.set(link="up", meter=Fraction(25000))

    def rules() -> None:
        app.show("rules")
        out["odds"] = cached_odds(table.profile) is not None
        out["lines"] = [w.text for w in reversed(app.sm.current_screen.ids.body.children)]
    later(meter)
    later(rules)


def freed_steps(app: Any, table: Any, later: Callable[..., None], out: dict[str, Any]) -> None:
    """Every screen opened in turn in each language, then the player's screen again: how much freed heap the
    process still holds then (what one more ``malloc_trim`` gives back, in MB)."""
    import ctypes

    def rss_mb() -> float:
        return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 / 2**20

    for lang in ("zh", "ms", "en"):
        later(lambda lang=lang: app.set_language(lang), 0.5)
        for name in ("rules", "history", "help", "language", "service", "seat"):
            later(lambda name=name: app.show(name), 0.5)

    def held() -> None:
        before = rss_mb()
        ctypes.CDLL(None).malloc_trim(0)
        out["freed_held_mb"] = before - rss_mb()
        out["screen"] = app.sm.current
    later(held)


def tours_steps(app: Any, table: Any, later: Callable[..., None], out: dict[str, Any]) -> None:
    """Every screen in each language, back on the player's screen, three times over: after
    each, once the display has had its moment to give memory back, the objects a garbage
    collection still finds unreachable (the other screens' widgets, labels and textures
    left in reference cycles) and malloc's heap in use (glibc's ``mallinfo2``, MB)."""
    import ctypes
    import gc

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                    "fsmblks", "uordblks", "fordblks", "keepcost")]
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    out["garbage"], out["heap_mb"] = [], []

    def settled() -> None:
        out["garbage"].append(gc.collect())
        out["heap_mb"].append(libc.mallinfo2().uordblks / 2**20)
        out["screen"] = app.sm.current
    for _ in range(3):
        for lang in ("zh", "ms", "en"):
            later(lambda lang=lang: app.set_language(lang), 0.4)
            for name in ("rules", "history", "help", "language", "service", "seat"):
                later(lambda name=name: app.show(name), 0.4)
        later(lambda: None, 0.6)                # the display's own moment (0.5 s after the seat screen)
        later(settled, 0.5)
    later(lambda: None, 1.5)


def fit_sizes(out: dict[str, Any]) -> None:
    """Every font size a fitted label (``keep_fitted``, ``FitLabel``) is given from the
    display's start, by the label's text: ``out["sizes"]``."""
    from ui import widgets
    fit = widgets.fit_font
    sizes: dict[str, list[float]] = out.setdefault("sizes", {})

    def recorded(label: Any, base: float, least: float) -> None:
        fit(label, base, least)
        sizes.setdefault(label.text, []).append(label.font_size)
    widgets.fit_font = recorded


def late_profile() -> dict[str, Any]:
    """A seat that learns its game only from the dealer, after its screen is up (a real
    seat's: ``seat.profile`` comes with the dealer's state): the rules screen's odds are
    worked out once it knows it, and the rules screen shows them."""
    import tempfile

    from firmware.engine.profile import load_profile
    from firmware.sim.table import InProcessTable, TableSpec, seat_spots
    from tests.ui.helpers import LIMITS, registry
    from ui.app import build_app
    from ui.feed import SeatFeed
    from ui.rulesinfo import cached_odds
    profile = load_profile("uk-4-deck")
    table = InProcessTable(TableSpec("t1", profile, 1, Path(tempfile.mkdtemp()), boxes=1, limits=LIMITS),
                           registry(1, len(seat_spots(profile))))
    seat = table.seats[1]
    out: dict[str, Any] = {"profile_at_start": seat.profile is not None}
    app = build_app(SeatFeed(seat, table=table))
    from kivy.clock import Clock

    def boot(_dt: float) -> None:
        table.boot()
        table.console.press("open_bets")
        table.settle()
        out["profile_later"] = seat.profile is not None
        Clock.schedule_once(rules, 6.0)

    def rules(_dt: float) -> None:
        out["odds"] = cached_odds(profile) is not None
        app.show("rules")
        out["lines"] = [w.text for w in reversed(app.sm.current_screen.ids.body.children)]
        out["demo_loaded"] = "ui.demo" in sys.modules
        app.stop()
    Clock.schedule_once(boot, 1.0)
    app.run()
    table.close()
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
