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
import threading
from pathlib import Path
from typing import Any

KV_DIR = Path(__file__).with_name("kv")
SIZES = {"800x480": (800, 480), "1024x600": (1024, 600), "1280x800": (1280, 800)}


def _prepare_kivy(size: tuple[int, int], fullscreen: bool = False, kivy_home: str | None = None) -> None:
    """Kivy reads its environment and config at import: set them first."""
    os.environ.setdefault("KIVY_NO_ARGS", "1")
    if not os.environ.get("BETBOX_UI_DEBUG"):
        os.environ.setdefault("KIVY_NO_CONSOLELOG", "1")
        os.environ.setdefault("KIVY_NO_FILELOG", "1")
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
    Config.set("graphics", "maxfps", "30")
    Config.set("input", "mouse", "mouse,disable_multitouch")
    Config.set("kivy", "exit_on_escape", "0")


def build_app(feed, lang: str = "en", pin: str = "2468", size: tuple[int, int] = (800, 480),
              fullscreen: bool = False, kivy_home: str | None = None, log_lines=None):
    _prepare_kivy(size, fullscreen, kivy_home)
    from . import fonts
    font = fonts.cjk_font()
    from kivy.app import App
    from kivy.clock import Clock, mainthread
    from kivy.core.text import LabelBase
    from kivy.core.window import Window
    from kivy.factory import Factory
    from kivy.lang import Builder
    from kivy.properties import NumericProperty
    from kivy.uix.screenmanager import NoTransition, Screen, ScreenManager

    from .i18n import LANGUAGES, tr
    from .presenter import SeatPresenter
    from .rulesinfo import cached_odds, rules_screen, warm_up
    from .service import check_pin, lamp_restore, lamp_test, service_sections

    LabelBase.register(name="Seat", fn_regular=str(font))

    def make(name: str, **props):
        """A kv dynamic class with its custom properties set (they cannot go to __init__)."""
        widget = getattr(Factory, name)()
        for key, value in props.items():
            setattr(widget, key, value)
        return widget

    def fit_font(label, base: float, least: float) -> None:
        """A one-line heading at ``base`` size, smaller (not below ``least``) when its text
        would not fit its width: long phrases in Malay are shown whole, not cut."""
        from kivy.core.text import Label as CoreLabel
        core = CoreLabel(text=label.text, font_size=base, bold=label.bold, font_name=label.font_name)
        core.refresh()
        wide = core.texture.size[0] if core.texture is not None else 0
        room = label.width - App.get_running_app().u * 8
        label.font_size = base if wide <= room or wide == 0 or room <= 0 else max(least, base * room / wide)

    def keep_fitted(label, base: float, least: float) -> None:
        """Refit ``label`` (sizes in units of ``app.u``) whenever its text or width changes."""
        def refit(*_a):
            u = App.get_running_app().u
            fit_font(label, u * base, u * least)
        label.bind(text=refit, width=refit)

    class SeatScreen(Screen):
        def on_kv_post(self, _base) -> None:
            keep_fitted(self.ids.phase, 36, 22)
            keep_fitted(self.ids.net, 22, 14)

        def show(self, s) -> None:
            ids = self.ids
            ids.title.text = s.title
            ids.limits.text = s.limits
            ids.phase.text = s.phase
            ids.phase.tone = ("bad" if s.phase_key == "phase.void" else
                              "play" if s.phase_key == "phase.your_hand" else "gold")
            ids.seat_button.text = s.seat + (f"\n{s.round}" if s.round else "")
            ids.seat_button.font_size = App.get_running_app().u * (20 if s.round else 24)
            ids.spots.clear_widgets()
            for line in s.spots:
                ids.spots.add_widget(make('SpotRow', label=line.label, amount=line.amount,
                                                     note=line.note, tone=line.tone))
            ids.dealer_label.text = s.dealer_label
            ids.dealer_total.text = s.dealer_total
            ids.dealer_cards.clear_widgets()
            for c in s.dealer_cards:
                ids.dealer_cards.add_widget(make('CardLabel', text=c.text, red=c.red))
            ids.hands.clear_widgets()
            for h in s.hands:
                row = make("HandRow", label=h.label + ("  ▶" if h.in_play and len(s.hands) > 1 else ""), total=h.total,
                                      result=h.result, tone=h.tone)
                for c in h.cards:
                    row.ids.cards.add_widget(make('CardLabel', text=c.text, red=c.red))
                ids.hands.add_widget(row)
            ids.hands.add_widget(Factory.Widget())
            ids.note.text = s.decisions or s.switch_note
            ids.results.clear_widgets()
            for r in s.results:
                ids.results.add_widget(make('ResultLine', text=r.text, tone=r.tone))
            ids.net.text = s.net
            ids.net.tone = s.net_tone
            ids.meter.text = s.meter
            ids.meter.tone = s.meter_tone
            self._controls(s)
            ids.banners.clear_widgets()
            for b in s.banners[:2]:
                colour = {"jackpot": (0.95, 0.70, 0.08, 1), "win": (0.92, 0.68, 0.10, 1),
                          "envy": (0.16, 0.38, 0.68, 1)}.get(b.kind, (0.7, 0.1, 0.1, 1))
                ink = (0.08, 0.04, 0.0, 1) if b.kind in ("jackpot", "win") else (1, 1, 1, 1)
                ids.banners.add_widget(make('BannerBand', title=b.title, text=b.text, colour=colour,
                                            ink=ink, big=b.kind == "jackpot"))
            self._celebrate(any(b.kind == "jackpot" for b in s.banners[:2]))
            lang = s.lang
            ids.b_rules.text = tr(lang, "menu.rules")
            ids.b_history.text = tr(lang, "menu.history")
            ids.b_language.text = {"en": "Language", "zh": "语言", "ms": "Bahasa"}[lang]
            ids.b_help.text = tr(lang, "menu.help")

        def _controls(self, s) -> None:
            """A demo table's dealer controls (deal, no more bets, the player's decisions)."""
            bar = self.ids.dealer_bar
            if getattr(self, "_shown_controls", None) == s.controls:
                return
            self._shown_controls = s.controls
            bar.clear_widgets()
            app = App.get_running_app()
            for control, label in s.controls:
                b = make('DealerButton', text=label)
                b.control = control
                b.bind(on_release=lambda _b, c=control: app.control(c))
                bar.add_widget(b)
            bar.height = app.u * 50 if s.controls else 0

        _glow = None

        def _celebrate(self, on: bool) -> None:
            """A jackpot hit: the banner pulses for a few seconds (then stops: no idle CPU)."""
            from kivy.animation import Animation
            band = self.ids.banners.children[-1] if self.ids.banners.children else None
            if self._glow is not None:
                self._glow.cancel_all(self._glow_target)
                self._glow = None
            if not on or band is None:
                return
            # the band brightens and settles back; its text never fades
            anim = Animation(glow=1.0, duration=0.35) + Animation(glow=0.0, duration=0.35)
            for _ in range(4):
                anim = anim + Animation(glow=1.0, duration=0.35) + Animation(glow=0.0, duration=0.35)
            self._glow, self._glow_target = anim, band
            anim.start(band)

    class InfoScreen(Screen):
        def on_kv_post(self, _base) -> None:
            keep_fitted(self.ids.heading, 26, 16)

        def fill(self, heading: str, lines: list[tuple[str, str]], back: str) -> None:
            self.ids.heading.text = heading
            self.ids.back.text = back
            body = self.ids.body
            body.clear_widgets()
            u = App.get_running_app().u
            for kind, text in lines:
                size = {"h": 22, "s": 15}.get(kind, 18)
                colour = {"h": (1, 0.84, 0.2, 1), "n": (0.55, 1, 0.6, 1), "s": (0.85, 0.88, 0.86, 1)}.get(kind, (1, 1, 1, 1))
                body.add_widget(make('InfoLine', text=text, font_size=u * size, color=colour,
                                             bold=kind == "h"))

    class RulesScreen(InfoScreen):
        pass

    class HistoryScreen(InfoScreen):
        pass

    class HelpScreen(InfoScreen):
        pass

    class ServiceScreen(InfoScreen):
        pass

    class LanguageScreen(InfoScreen):
        pass

    class PinScreen(Screen):
        entered = ""

    for cls in (SeatScreen, InfoScreen, RulesScreen, HistoryScreen, HelpScreen, ServiceScreen,
                LanguageScreen, PinScreen):
        Factory.register(cls.__name__, cls=cls)
    for kv in ("common.kv", "seat.kv", "menus.kv"):
        Builder.load_file(str(KV_DIR / kv))

    class SeatDisplayApp(App):
        u = NumericProperty(1.0)
        title = "betbox seat display"

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.feed = feed
            self.presenter = SeatPresenter(lang)
            self.pin = pin
            self.log_lines = log_lines
            self.frames = 0
            self.first_frame = threading.Event()
            self._pending_snapshot = None

        def build(self):
            self._resize(Window, Window.size)
            Window.bind(size=self._resize, on_key_down=self._on_key)
            Window.clearcolor = (0.05, 0.16, 0.11, 1)
            sm = ScreenManager(transition=NoTransition())
            self.seat_screen = SeatScreen(name="seat")
            sm.add_widget(self.seat_screen)
            for cls in (RulesScreen, HistoryScreen, LanguageScreen, HelpScreen, PinScreen, ServiceScreen):
                sm.add_widget(cls())
            self.sm = sm
            self.presenter.listen(self._show_screen)
            self._build_pin_pad()
            if feed.profile is not None:
                warm_up(feed.profile)
            Window.bind(on_flip=self._on_flip)
            feed.start(self.on_snapshot)
            return sm

        def _on_flip(self, *_a) -> None:
            self.frames += 1
            self.first_frame.set()

        def _resize(self, _w, size) -> None:
            self.u = min(size[0] / 800.0, size[1] / 480.0)

        # -- the feed (any thread) -> the presenter (UI thread) --------------------------

        def on_snapshot(self, snapshot) -> None:
            self._pending_snapshot = snapshot
            self._deliver()

        @mainthread
        def _deliver(self) -> None:
            snap, self._pending_snapshot = self._pending_snapshot, None
            if snap is not None:            # several snapshots in one frame: the last wins
                self.presenter.update(snap)
                if self.sm.current == "history":
                    self.show("history")

        def _show_screen(self, screen) -> None:
            self.seat_screen.show(screen)

        # -- screens -----------------------------------------------------------------

        def show(self, name: str) -> None:
            lang = self.presenter.lang
            back = tr(lang, "menu.back")
            if name == "rules":
                profile = feed.profile
                if profile is not None:
                    meter = feed.controller.state.meter if feed.controller else None
                    r = rules_screen(profile, lang, meter=meter, computed=cached_odds(profile))
                    lines = [("", "   ·   ".join(r.main))]
                    for sec in r.sections:
                        lines.append(("h", sec.heading))
                        lines.append(("", "   ·   ".join(sec.lines)))
                        if sec.note:
                            lines.append(("n", sec.note))
                    lines.append(("s", r.document))
                    self.sm.get_screen("rules").fill(r.title, lines, back)
            elif name == "history":
                rows = self.presenter.recall.lines(lang)
                lines = [("", f"{a}:   {b}   |   {tr(lang, 'dealer')} {c}   |   {d}") for a, b, c, d in rows]
                self.sm.get_screen("history").fill(tr(lang, "history.title", n=len(rows) or 10),
                                                   lines or [("", tr(lang, "history.empty"))], back)
            elif name == "help":
                self.sm.get_screen("help").fill(tr(lang, "help.title"),
                                                [("", line) for line in tr(lang, "help.text").split("\n")], back)
            elif name == "language":
                scr = self.sm.get_screen("language")
                scr.fill(tr(lang, "language.title"), [], back)
                for code, label in LANGUAGES.items():
                    b = make('BigButton', text=label, size_hint_y=None, height=self.u * 80,
                                          font_size=self.u * 30)
                    b.bind(on_release=lambda _b, c=code: self.set_language(c))
                    scr.ids.body.add_widget(b)
            elif name == "service":
                self._fill_service()
            elif name == "pin":
                scr = self.sm.get_screen("pin")
                scr.entered = ""
                scr.ids.heading.text = tr(lang, "service.pin")
                scr.ids.shown.text = ""
                scr.ids.back.text = back
            self.sm.current = name

        def set_language(self, code: str) -> None:
            self.presenter.set_language(code)
            self.show("seat")

        def open_pin(self) -> None:
            self.show("pin")

        def _build_pin_pad(self) -> None:
            scr = self.sm.get_screen("pin")
            for key in ["1", "2", "3", "C", "4", "5", "6", "0", "7", "8", "9", "OK"]:
                b = make('BigButton', text=key, font_size=self.u * 30)
                b.bind(on_release=lambda _b, k=key: self._pin_key(k))
                scr.ids.pad.add_widget(b)

        def _pin_key(self, key: str) -> None:
            scr = self.sm.get_screen("pin")
            if key == "C":
                scr.entered = ""
            elif key == "OK":
                if check_pin(scr.entered, self.pin):
                    self.show("service")
                    return
                scr.entered = ""
                scr.ids.shown.text = tr(self.presenter.lang, "service.pin_wrong")
                return
            else:
                scr.entered += key
            scr.ids.shown.text = "•" * len(scr.entered)

        def _fill_service(self) -> None:
            scr = self.sm.get_screen("service")
            source = getattr(feed, "source", None)
            if source is None:
                scr.fill("Service", [("", "the seat is starting")], "Back")
                return
            # safe on this thread: the sections read the seat's frozen view, copies and the
            # journal through their own connection (see ui.service.service_sections)
            result = service_sections(source.seat, feed.service_table(), feed.controller,
                                      getattr(feed, "config_digest", None) or "not available",
                                      list(self.log_lines.lines) if self.log_lines else [])
            lines = []
            for sec in result:
                lines.append(("h", sec.heading))
                for k, v in sec.rows:
                    lines.append(("s", f"{k}: {v}" if k else v))
            scr.fill("Service — technician", lines, "Back")
            lamp = make('BigButton', text="Lamp test", size_hint_y=None, height=self.u * 56)
            lamp.bind(on_release=lambda _b: self.lamp_test())
            scr.ids.body.add_widget(lamp, index=len(scr.ids.body.children))

        def lamp_test(self) -> None:
            seat = feed.source.seat
            if lamp_test(seat):
                Clock.schedule_once(lambda _dt: lamp_restore(seat), 2.0)

        # -- keys (demo) ---------------------------------------------------------------

        def _on_key(self, _window, key, _scancode, codepoint, modifiers) -> bool:
            if key in (13, 271):            # Enter: deal, like the space bar
                codepoint = " "
            elif codepoint and codepoint.isalpha() and "shift" in (modifiers or ()):
                codepoint = codepoint.upper()   # I / E / R: the second hand (Switch)
            if codepoint and hasattr(feed, "key"):
                if codepoint in ("+", "=", "-"):
                    feed.change_pace(1 if codepoint != "-" else -1)    # now, not after the round
                elif codepoint == "a":
                    feed.set_auto(not feed.auto)
                else:
                    feed.command(lambda t, k=codepoint: t.key(k))
                return True
            return False

        def control(self, name: str) -> None:
            """An on-screen dealer control of the demo table (run in the table's thread)."""
            if name in ("auto", "manual"):
                feed.set_auto(name == "auto")
            elif hasattr(feed, "control"):
                feed.command(lambda t, c=name: t.control(c))

        def on_stop(self) -> None:
            feed.stop()

    return SeatDisplayApp()


# --- commands ---------------------------------------------------------------------------

def run_demo_window(options: Any) -> int:
    """``betbox demo`` with a window. ``options`` (argparse namespace or any object):
    ``profiles`` (list; the first is used), ``seed``, ``box`` (seat shown, default 1),
    ``lang``, ``size`` ("800x480"…), ``manual`` (start driven by the keyboard), ``state_dir``,
    ``pace`` (auto play's seconds per step a player sees; default ``DEFAULT_PACE``, 0 to 3)."""
    from firmware.engine.profile import ProfileError, load_profile, profile_names
    from .demo import DEFAULT_PACE, DemoTable
    from .service import LogRing
    import logging

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
                          pace=DEFAULT_PACE if pace is None else float(pace))
    except ValueError as exc:
        print(f"betbox demo: {exc}", file=sys.stderr)
        return 2
    ring = LogRing()
    logging.getLogger().addHandler(ring)
    try:
        app = build_app(table, lang=getattr(options, "lang", None) or "en", size=size, log_lines=ring)
    except Exception as exc:  # noqa: BLE001 - font missing etc.: say it plainly
        print(f"betbox demo: {exc}", file=sys.stderr)
        return 2
    app.run()
    return 0


def run_seat_display(seat, controller=None, bus=None, lang: str = "en", pin: str = "2468",
                     size: str = "800x480", fullscreen: bool | None = None,
                     config_digest: str | None = None) -> int:
    """``betbox run`` on a seat unit: show ``seat`` (a running :class:`SeatUnit` whose
    dispatch queue is pumped by the runtime's thread). Blocks in Kivy's loop on the main
    thread. Full screen when there is no desktop (the Pi on KMS/DRM)."""
    from .feed import SeatFeed
    if fullscreen is None:
        fullscreen = not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY")
    feed = SeatFeed(seat, controller, bus, config_digest=config_digest)
    app = build_app(feed, lang=lang, pin=pin, size=SIZES.get(size, (800, 480)), fullscreen=fullscreen)
    app.run()
    return 0
