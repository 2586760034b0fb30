"""The seat display's Kivy application: the feed (any thread) to the presenter (UI thread),
the screens, the technician's PIN pad and service screen, the demo's keys and controls.
Imported only once Kivy is prepared (``ui.app.build_app``)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from kivy.app import App
from kivy.clock import Clock, mainthread
from kivy.core.window import Window
from kivy.factory import Factory
from kivy.lang import Builder
from kivy.properties import NumericProperty
from kivy.uix.screenmanager import NoTransition, ScreenManager

from . import screens, widgets
from .antennas import AntennaReads
from .i18n import LANGUAGES, tr
from .memory import give_back
from .presenter import SeatPresenter
from .rulesinfo import cached_odds, meter_amount, rules_screen, warm_up
from .seatscreen import SeatScreen
from .service import ANTENNAS, PinLock, lamp_restore, lamp_test, service_sections
from .widgets import make

KV_DIR = Path(__file__).with_name("kv")
_loaded = False


def load_layouts() -> None:
    """Register the display's widgets with Kivy's Factory and load the layouts (once)."""
    global _loaded
    if _loaded:
        return
    for cls in (widgets.Cached, widgets.FramedCached, widgets.ChipStack, widgets.BetSpot, widgets.FitLabel, widgets.WrapFit, widgets.CardLabel,
                widgets.HandRow, SeatScreen, screens.InfoScreen, screens.RulesScreen, screens.HistoryScreen,
                screens.HelpScreen, screens.ServiceScreen, screens.LanguageScreen, screens.PinScreen):
        Factory.register(cls.__name__, cls=cls)
    for kv in ("common.kv", "seat.kv", "menus.kv"):
        Builder.load_file(str(KV_DIR / kv))
    _loaded = True


def _row(key: str, value: str) -> str:
    """A service screen's row as one line."""
    return f"{key}: {value}" if key else value


class SeatDisplayApp(App):
    u = NumericProperty(1.0)
    title = "betbox seat display"

    def __init__(self, feed: Any, lang: str = "en", pin_hash: str = "", log_lines: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.feed = feed
        self.presenter = SeatPresenter(lang)
        # ``pin_hash``: the PIN's salted hash ("" none: the service screen stays shut)
        self.pin_lock = PinLock(pin_hash)
        self.log_lines = log_lines
        self.frames = 0
        self.first_frame = threading.Event()
        self._pending_snapshot = None
        self._key_on = False
        self._antennas = None
        self._antenna_lines: tuple[Any, list] = (None, [])    # the tap, its lines on the service screen
        self._live: Any = None              # the service screen's 1 s refresh while shown
        self._warmed: str | None = None     # the profile whose odds are being worked out

    def build(self):
        self._resize(Window, Window.size)
        Window.bind(size=self._resize, on_key_down=self._on_key)
        Window.clearcolor = (0.05, 0.16, 0.11, 1)
        sm = ScreenManager(transition=NoTransition())
        self.seat_screen = SeatScreen(name="seat")
        sm.add_widget(self.seat_screen)
        self.sm = sm
        self.presenter.listen(self._show_screen)
        self._warm_up()
        Window.bind(on_flip=self._on_flip)
        self.feed.start(self.on_snapshot)
        return sm

    def _warm_up(self) -> None:
        """The rules screen's odds, worked out in the background once the seat knows its
        game: a real seat learns it from the dealer's state, after its screen is up."""
        profile = self.feed.profile
        if profile is not None and profile.name != self._warmed:
            self._warmed = profile.name
            warm_up(profile)

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
            self._warm_up()
            if self._antennas is None and getattr(self.feed, "source", None) is not None:
                # the reader's raw reads per antenna from now on, for the service screen
                self._antennas = AntennaReads.attach(self.feed.source.seat)
            self.presenter.update(snap)
            if self.sm.current == "history":
                self.show("history")
            self._technician_key(snap)

    def _technician_key(self, snap) -> None:
        """The dealer console's technician key (a lasting table alarm in the seat's
        view): turned on, the PIN pad opens (the PIN still decides); turned back, the
        PIN pad or service screen closes to the player's screen."""
        on = any(a.code == "technician_key" and a.lasting for a in snap.view.table_alarms)
        if on == self._key_on:
            return
        self._key_on = on
        if on and self.sm.current not in ("pin", "service"):
            self.open_pin()
        elif not on and self.sm.current in ("pin", "service"):
            self.show("seat")

    def _show_screen(self, screen) -> None:
        self.seat_screen.show(screen)

    # -- screens -----------------------------------------------------------------

    def show(self, name: str) -> None:
        if name == "seat" and self.sm.current != "seat":
            # the other screen's freed heap back to the system once the player's screen is
            # drawn (and Kivy has released the textures it dropped): docs/ui.md "Memory"
            Clock.schedule_once(lambda _dt: give_back(), 0.5)
        fill = {"rules": self._fill_rules, "history": self._fill_history, "help": self._fill_help,
                "language": self._fill_language, "service": self._fill_service, "pin": self._fill_pin}.get(name)
        if fill is not None:
            fill()
            self._screen(name)
        self.sm.current = name
        if self._live is not None:
            self._live.cancel()
            self._live = None
        if name == "service":           # the antennas' raw reads, live (1 s)
            self._live = Clock.schedule_interval(self._refresh_antennas, 1.0)

    def _fill_rules(self) -> None:
        profile = self.feed.profile
        if profile is None:
            return
        lang = self.presenter.lang
        # the controller's meter is wire text ("25009.25"); the return is worked out on the amount
        text = self.feed.controller.state.meter if self.feed.controller else None
        meter = meter_amount(text)
        r = rules_screen(profile, lang, meter=meter, computed=cached_odds(profile))
        lines = [("", "   ·   ".join(r.main))]
        for sec in r.sections:
            lines.append(("h", sec.heading))
            lines.append(("", "   ·   ".join(sec.lines)))
            if sec.note:
                lines.append(("n", sec.note))
        lines.append(("s", r.document))
        self._screen("rules").fill(r.title, lines, tr(lang, "menu.back"))

    def _fill_history(self) -> None:
        lang = self.presenter.lang
        rows = self.presenter.recall.lines(lang)
        lines = [("", f"{a}:   {b}   |   {tr(lang, 'dealer')} {c}   |   {d}") for a, b, c, d in rows]
        self._screen("history").fill(tr(lang, "history.title", n=len(rows) or 10),
                                     lines or [("", tr(lang, "history.empty"))], tr(lang, "menu.back"))

    def _fill_help(self) -> None:
        lang = self.presenter.lang
        self._screen("help").fill(tr(lang, "help.title"),
                                  [("", line) for line in tr(lang, "help.text").split("\n")], tr(lang, "menu.back"))

    def _fill_language(self) -> None:
        lang = self.presenter.lang
        scr = self._screen("language")
        scr.fill(tr(lang, "language.title"), [], tr(lang, "menu.back"))
        for code, label in LANGUAGES.items():
            b = make('BigButton', text=label, size_hint_y=None, height=self.u * 80, font_size=self.u * 30)
            b.bind(on_release=lambda _b, c=code: self.set_language(c))
            scr.ids.body.add_widget(b)

    def _fill_pin(self) -> None:
        lang = self.presenter.lang
        scr = self._screen("pin")
        scr.entered = ""
        scr.ids.heading.text = tr(lang, "service.pin")
        scr.ids.shown.text = ""
        scr.ids.back.text = tr(lang, "menu.back")

    def set_language(self, code: str) -> None:
        self.presenter.set_language(code)
        self.show("seat")

    def open_pin(self) -> None:
        self.show("pin")

    #: the other screens, made when first shown (a seat mostly shows only its own)
    SCREENS = {"rules": screens.RulesScreen, "history": screens.HistoryScreen, "language": screens.LanguageScreen,
               "help": screens.HelpScreen, "pin": screens.PinScreen, "service": screens.ServiceScreen}

    def _screen(self, name: str):
        if not self.sm.has_screen(name):
            scr = self.SCREENS[name]()
            self.sm.add_widget(scr)
            if name == "pin":
                self._build_pin_pad(scr)
        return self.sm.get_screen(name)

    def _build_pin_pad(self, scr) -> None:
        for key in ["1", "2", "3", "C", "4", "5", "6", "0", "7", "8", "9", "OK"]:
            b = make('BigButton', text=key, font_size=self.u * 30)
            b.bind(on_release=lambda _b, k=key: self._pin_key(k))
            scr.ids.pad.add_widget(b)

    def _pin_key(self, key: str) -> None:
        scr = self._screen("pin")
        if key == "C":
            scr.entered = ""
        elif key == "OK":
            said = self.pin_lock.enter(scr.entered)
            scr.entered = ""
            if said == "ok":
                self.show("service")
                return
            lang = self.presenter.lang
            scr.ids.shown.text = (tr(lang, "service.pin_wrong") if said == "wrong" else
                                  tr(lang, "service.no_pin") if said == "no_pin" else
                                  tr(lang, "service.locked", s=self.pin_lock.locked_for()))
            return
        elif len(scr.entered) < 8:
            scr.entered += key
        scr.ids.shown.text = "•" * len(scr.entered)

    def _fill_service(self) -> None:
        scr = self._screen("service")
        source = getattr(self.feed, "source", None)
        if source is None:
            scr.fill("Service", [("", "the seat is starting")], "Back")
            return
        # safe on this thread: the sections read the seat's frozen view, copies and the
        # journal through their own connection (see ui.service.service_sections)
        diag = getattr(self.feed, "diag", None)
        if diag is not None and diag.results is None:
            self._run_diag()                # the first time the screen opens
        antennas = AntennaReads.attach(source.seat)
        result = service_sections(source.seat, self.feed.service_table(), self.feed.controller,
                                  getattr(self.feed, "config_digest", None) or "not available",
                                  list(self.log_lines.lines) if self.log_lines else [], diag=diag,
                                  antennas=antennas)
        lines: list[tuple[str, str]] = []
        live = (0, 0)
        for sec in result:
            lines.append(("h", sec.heading))
            if sec.heading == ANTENNAS:
                live = (len(lines), len(sec.rows))
            lines.extend(("s", _row(k, v)) for k, v in sec.rows)
        scr.fill("Service — technician", lines, "Back")
        shown = list(reversed(scr.ids.body.children))
        self._antenna_lines = (antennas, shown[live[0]:live[0] + live[1]])
        lamp = make('BigButton', text="Lamp test", size_hint_y=None, height=self.u * 56)
        lamp.bind(on_release=lambda _b: self.lamp_test())
        scr.ids.body.add_widget(lamp, index=len(scr.ids.body.children))
        if diag is not None:
            again = make('BigButton', text="Run diagnostics", size_hint_y=None, height=self.u * 56)
            again.bind(on_release=lambda _b: self._run_diag())
            scr.ids.body.add_widget(again, index=len(scr.ids.body.children))

    def _refresh_antennas(self, _dt: float) -> None:
        """The antennas' rows, live while the service screen is shown: the lines' texts
        set in place (the technician's scroll stays), the screen refilled when their
        number changes."""
        antennas, shown = self._antenna_lines
        if antennas is None or self.sm.current != "service":
            return
        rows = antennas.rows()
        if len(rows) != len(shown):
            self._fill_service()
            return
        for line, (k, v) in zip(shown, rows, strict=True):
            line.text = _row(k, v)

    def _run_diag(self) -> None:
        """betbox diag's checks off the UI thread; the screen is filled again when they end."""
        def done() -> None:
            Clock.schedule_once(lambda _dt: self._fill_service() if self.sm.current == "service" else None)
        if self.feed.diag.start(done):
            Clock.schedule_once(lambda _dt: self._fill_service() if self.sm.current == "service" else None)

    def lamp_test(self) -> None:
        seat = self.feed.source.seat
        if lamp_test(seat):
            Clock.schedule_once(lambda _dt: lamp_restore(seat), 2.0)

    # -- keys (demo) ---------------------------------------------------------------

    def _on_key(self, _window, key, _scancode, codepoint, modifiers) -> bool:
        if key in (13, 271):            # Enter: deal, like the space bar
            codepoint = " "
        elif codepoint and codepoint.isalpha() and "shift" in (modifiers or ()):
            codepoint = codepoint.upper()   # I / E / R: the second hand (Switch)
        if codepoint and hasattr(self.feed, "key"):
            if codepoint in ("+", "=", "-"):
                self.feed.change_pace(1 if codepoint != "-" else -1)    # now, not after the round
            elif codepoint == "a":
                self.feed.set_auto(not self.feed.auto)
            else:
                self.feed.command(lambda t, k=codepoint: t.key(k))
            return True
        return False

    def control(self, name: str) -> None:
        """An on-screen dealer control of the demo table (run in the table's thread)."""
        if name in ("auto", "manual"):
            self.feed.set_auto(name == "auto")
        elif hasattr(self.feed, "control"):
            self.feed.command(lambda t, c=name: t.control(c))

    def on_stop(self) -> None:
        self.feed.stop()
