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

from firmware.config import DISPLAY_SIZES

KV_DIR = Path(__file__).with_name("kv")
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


def _amount(text: str | None):
    """A shown amount ("25,000.50") as a Fraction; None when it is not one."""
    from fractions import Fraction
    try:
        return Fraction(text.replace(",", "")) if text else None
    except (ValueError, ZeroDivisionError):
        return None


def _row(key: str, value: str) -> str:
    """A service screen's row as one line."""
    return f"{key}: {value}" if key else value


DEMO_PIN = "2468"       # the demo's technician PIN (a real seat's is its configuration's pin_hash)


def build_app(feed, lang: str = "en", pin: str | None = None, size: tuple[int, int] = (800, 480),
              fullscreen: bool = False, kivy_home: str | None = None, log_lines=None):
    _prepare_kivy(size, fullscreen, kivy_home)
    from . import fonts
    font = fonts.cjk_font()
    from fractions import Fraction

    from kivy.app import App
    from kivy.clock import Clock, mainthread
    from kivy.core.text import LabelBase
    from kivy.core.window import Window
    from kivy.factory import Factory
    from kivy.lang import Builder
    from kivy.properties import ListProperty, NumericProperty
    from kivy.uix.boxlayout import BoxLayout
    from kivy.uix.label import Label
    from kivy.uix.screenmanager import NoTransition, Screen, ScreenManager
    from kivy.uix.widget import Widget

    from .antennas import AntennaReads
    from .i18n import LANGUAGES, tr
    from .presenter import SeatPresenter, money
    from .rulesinfo import cached_odds, rules_screen, warm_up
    from .service import ANTENNAS, PinLock, hash_pin, lamp_restore, lamp_test, service_sections

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

    class ChipStack(Widget):
        """The chips on a spot drawn as a stack on the spot's ring (Kivy canvas, no image
        files): bottom first, each in its denomination's colours (``ui.chips``); more
        than ``SHOWN`` chips draw as ``SHOWN`` with the count beside them."""

        SHOWN = 10
        chips = ListProperty([])

        def __init__(self, **kw) -> None:
            super().__init__(**kw)
            self.bind(pos=self._draw, size=self._draw, chips=self._draw)

        def _draw(self, *_a) -> None:
            from kivy.graphics import Color, Ellipse, Line, SmoothEllipse

            from .chips import chip_colours
            c = self.canvas
            c.clear()
            d = min(self.width * 0.9, self.height * 0.92)      # the spot's ring
            if d <= 4:
                return
            cx, cy = self.center
            with c:
                Color(1, 1, 1, 0.55)
                # few segments and no round joints: a thick Line's default (180 segments, a
                # fan of triangles at each joint) cost llvmpipe ~5 ms a frame per ring
                Line(ellipse=(cx - d / 2, cy - d / 2, d, d, 0, 360, 72), width=max(1.0, d * 0.025),
                     joint="none", cap="none")
                chips = list(self.chips)[: self.SHOWN]
                if not chips:
                    return
                w = d * 0.62
                h = w * 0.32                                 # a chip seen from above the table
                step = min(h * 0.42, (d * 0.8 - h) / max(1, len(chips)))
                y = cy - d * 0.4
                for denom in chips:
                    body, edge = chip_colours(denom)
                    Color(0, 0, 0, 0.45)
                    Ellipse(pos=(cx - w / 2, y - h * 0.12), size=(w, h))      # its shadow
                    Color(*body, 1)
                    SmoothEllipse(pos=(cx - w / 2, y), size=(w, h))
                    Color(*edge, 1)
                    Line(ellipse=(cx - w * 0.36, y + h * 0.14, w * 0.72, h * 0.72, 0, 360, 36),
                         width=max(1.0, h * 0.06), joint="none", cap="none")
                    y += step

    class BetSpot(BoxLayout):
        #: the spot's type and heights scale down (k < 1) in a short grid cell: many spots,
        #: banners and notices at 800x480 leave each spot less room
        k = NumericProperty(1.0)

    class WrapFit(Label):
        """A wrapping label (``text_size`` width set) that shrinks its font, not below
        ``least``, until its lines fit its height: a long note is shown whole."""
        base = NumericProperty(14.0)
        least = NumericProperty(8.0)

        def on_kv_post(self, _base) -> None:
            self.bind(text=self._fit, base=self._fit, width=self._fit, height=self._fit)
            self._fit()

        def _fit(self, *_a) -> None:
            from kivy.core.text import Label as CoreLabel
            size = self.base
            while self.text and self.width > 0 and size > self.least:
                core = CoreLabel(text=self.text, font_size=size, bold=self.bold, font_name=self.font_name,
                                 text_size=(self.width, None), halign=self.halign)
                core.refresh()
                if core.texture is None or core.texture.size[1] <= self.height:
                    break
                size = max(self.least, size * 0.88)
            self.font_size = size

    class FitLabel(Label):
        """A one-line label at ``base`` size that shrinks (not below ``least``) to show its
        whole text in its width: no word is cut, in any language."""
        base = NumericProperty(18.0)
        least = NumericProperty(10.0)

        def on_kv_post(self, _base) -> None:
            self.bind(text=self._refit, width=self._refit, base=self._refit)
            self._refit()

        def _refit(self, *_a) -> None:
            fit_font(self, self.base, self.least)

    class CardLabel(Label):
        card_h = NumericProperty(66.0)

    class HandRow(BoxLayout):
        card_h = NumericProperty(66.0)
        n = NumericProperty(1)              # cards in the hand: they shrink to fit the row

    class SeatScreen(Screen):
        #: a unit condition's colour and mark (docs/ui.md "Unit conditions")
        CONDITION_LOOK = {
            "recovering": ((0.20, 0.45, 0.85, 1), "…"), "no_dealer": ((0.55, 0.35, 0.85, 1), "!"),
            "broker_down": ((0.85, 0.18, 0.18, 1), "×"), "not_verified": ((0.85, 0.20, 0.60, 1), "!"),
            "reader_down": ((0.95, 0.50, 0.10, 1), "?"), "shoe_down": ((0.85, 0.70, 0.10, 1), "!"),
            "console_down": ((0.10, 0.65, 0.65, 1), "!"), "storage_low": ((0.55, 0.40, 0.20, 1), "i"),
            "behind_confirmed": ((0.30, 0.40, 0.50, 1), "…"), "jackpot_link_down": ((0.50, 0.36, 0.05, 1), "×"),
        }

        def on_kv_post(self, _base) -> None:
            keep_fitted(self.ids.phase, 32, 18)
            keep_fitted(self.ids.meter.ids.amount, 38, 14)
            keep_fitted(self.ids.net, 30, 16)
            for b in (self.ids.b_rules, self.ids.b_history, self.ids.b_language, self.ids.b_help):
                keep_fitted(b, 18, 11)
            self._shown: dict[str, Any] = {}
            self._meter_anim = None
            self._press = None
            self.ids.jackpot.bind(on_touch_down=self._jackpot_touch)
            self._jackpot_seen: tuple[Any, Any, Any] | None = None

        def _changed(self, part: str, value) -> bool:
            """Whether ``part`` of the screen shows something new (rows are rebuilt only then)."""
            if self._shown.get(part, object()) == value:
                return False
            self._shown[part] = value
            return True

        def show(self, s) -> None:
            ids = self.ids
            ids.title.text = s.title
            ids.limits.text = s.limits
            ids.phase.text = s.phase
            ids.phase.tone = ("bad" if s.phase_key in ("phase.void", "phase.condition") else
                              "play" if s.phase_key == "phase.your_hand" else "gold")
            ids.seat_button.text = s.seat + (f"\n{s.round}" if s.round else "")
            if self._changed("spots", s.spots):
                self._spots(s.spots)
            ids.dealer_label.text = s.dealer_label
            ids.dealer_total.text = s.dealer_total
            if self._changed("dealer", s.dealer_cards):
                self._cards(ids.dealer_cards, s.dealer_cards, self._shown.get("dealer_n", 0))
                self._shown["dealer_n"] = len(s.dealer_cards)
            if self._changed("hands", s.hands):
                self._hands(s.hands)
            ids.note.text = s.decisions or s.switch_note
            ids.net.tone = s.net_tone
            self._count_net(s.net)
            ids.meter.title = s.meter_title if s.meter else ""
            ids.meter.tone = s.meter_tone
            live = s.meter_title and s.meter_tone == "gold" and s.meter_amount and s.meter_amount in s.meter
            # beside its title the band shows the amount alone ("Jackpot" said once)
            self._count_meter(s.meter_amount if live else s.meter, s.meter_amount, s.lang)
            self._controls(s)
            if self._changed("banners", (s.banners[:2], s.lang)):
                self._banners(s)
            self._conditions(s)
            self._jackpot(s)
            lang = s.lang
            ids.b_rules.text = tr(lang, "menu.rules")
            ids.b_history.text = tr(lang, "menu.history")
            ids.b_language.text = {"en": "Language", "zh": "语言", "ms": "Bahasa"}[lang]
            ids.b_help.text = tr(lang, "menu.help")

        # -- rows updated in place (issue 18): a change sets the properties of the widgets
        # already there; widgets are added or removed only when the count changes

        @staticmethod
        def _resize_rows(box, n: int, new) -> list:
            """``box``'s children in order, made ``n`` long: extra ones removed (the newest
            first), missing ones added by ``new()``."""
            rows = list(reversed(box.children))
            for extra in rows[n:]:
                box.remove_widget(extra)
            for _ in range(len(rows), n):
                rows.append(new())
                box.add_widget(rows[-1])
            return rows[:n]

        def _spots(self, lines) -> None:
            box = self.ids.spots
            n = len(lines)
            box.cols = 1 if n <= 1 else 2 if n <= 4 else 3
            for spot, line in zip(self._resize_rows(box, n, lambda: make('BetSpot')), lines, strict=True):
                spot.label, spot.amount, spot.note, spot.tone = line.label, line.amount, line.note, line.tone
                spot.result, spot.result_note, spot.result_tone = line.result, line.result_note, line.result_tone
                spot.ids.stack.chips = list(line.chips)

        def _hands(self, hands) -> None:
            box = self.ids.hands
            app = App.get_running_app()
            before = self._shown.get("hand_cards", ())
            filler = self._shown.get("hand_filler")
            if filler is not None and filler in box.children:     # (ids are weak proxies: no "is")
                box.remove_widget(filler)
            rows = self._resize_rows(box, len(hands), lambda: make("HandRow"))
            for i, (row, h) in enumerate(zip(rows, hands, strict=True)):
                row.label = h.label + ("  ▶" if h.in_play and len(hands) > 1 else "")
                row.total, row.result, row.tone = h.total, h.result, h.tone
                row.size_hint_y = None if len(hands) == 1 else 1
                row.height = app.u * 84
                self._cards(row.ids.cards, h.cards, before[i] if i < len(before) else 0, row)
            if len(hands) <= 1:                 # one hand sits at the top, not stretched
                filler = filler or Factory.Widget()
                self._shown["hand_filler"] = filler
                box.add_widget(filler)
            self._shown["hand_cards"] = tuple(len(h.cards) for h in hands)

        def _banners(self, s) -> None:
            shown = [b for b in s.banners[:2]
                     if not (b.kind in ("jackpot", "win") and s.jackpot is not None)]  # the moment says it
            for band, b in zip(self._resize_rows(self.ids.banners, len(shown), lambda: make('BannerBand')), shown, strict=True):
                band.colour = {"jackpot": (0.95, 0.70, 0.08, 1), "win": (0.92, 0.68, 0.10, 1),
                               "envy": (0.16, 0.38, 0.68, 1)}.get(b.kind, (0.42, 0.30, 0.10, 1))
                band.ink = (0.08, 0.04, 0.0, 1) if b.kind in ("jackpot", "win") else (1, 1, 1, 1)
                band.title, band.text, band.big = b.title, b.text, b.kind == "jackpot"

        def _cards(self, box, cards, known: int, row=None) -> None:
            """Card faces, kept in place; a card that has just arrived fades in (a few
            frames, then nothing)."""
            from kivy.animation import Animation
            u = App.get_running_app().u
            if row is not None:
                row.n = len(cards)
            have = len(box.children)
            faces = self._resize_rows(box, len(cards), lambda: make('CardLabel'))
            for i, (card, c) in enumerate(zip(faces, cards, strict=True)):
                card.face, card.red = c.text, c.red
                if i < have:
                    card.opacity = 1
                    continue
                if row is not None:             # a new face: sized by its row
                    row.bind(card_h=card.setter("card_h"))
                    card.card_h = row.card_h
                if i >= known:
                    card.opacity = 0
                    Animation(opacity=1, duration=0.25).start(card)
            if row is None:                     # the dealer's: as many as come fit the row's width
                def fit(*_a) -> None:
                    n = max(1, len(box.children))
                    h = max(u * 20, min(u * 66, (box.width - n * u * 5) / n / 0.72))
                    for card in box.children:
                        card.card_h = h
                if not self._shown.get("dealer_fit"):
                    self._shown["dealer_fit"] = True
                    box.bind(width=fit)
                fit()

        def _count_net(self, text: str) -> None:
            """The round's net appears counting up from zero (a win, gently); then still."""
            net = self.ids.net
            if text == self._shown.get("net"):
                return
            self._shown["net"] = text
            net.text = text

        #: the meter's count-up: a few steps, not every frame (each frame is a full-screen
        #: redraw; software GL pays ~10 ms of CPU for one, bench/bench_ui.py)
        METER_STEPS = 3
        METER_STEP_S = 0.25
        #: a rise smaller than this share of the meter (a table's steady trickle of
        #: contributions: 9.25 on 25,000) is shown in one frame, its new digits are the
        #: motion; a rise the eye would miss as a jump (a big wager, a burst) counts up
        METER_ROLL_SHARE = Fraction(1, 1000)

        def _count_meter(self, text: str, amount: str, lang: str) -> None:
            """The meter counts up to a new amount in a few steps as contributions arrive."""
            meter = self.ids.meter
            if self._meter_anim is not None:
                self._meter_anim.cancel()
                self._meter_anim = None
                meter.glow = 0.0
            old = self._shown.get("meter_amount")
            self._shown["meter_amount"] = amount
            to = _amount(amount)
            frm = _amount(old)
            if (not amount or frm is None or to is None or to <= frm or amount not in text
                    or to - frm < frm * self.METER_ROLL_SHARE):
                meter.text = text
                return
            prefix, suffix = text.split(amount, 1)
            steps = iter(range(1, self.METER_STEPS + 1))

            def step(_dt) -> bool:
                n = next(steps, None)
                meter.glow = 1.0            # the band brightens while it counts (no extra frame)
                if n is None or n == self.METER_STEPS:
                    meter.text = text
                    meter.glow = 0.0
                    self._meter_anim = None
                    return False
                v = frm + (to - frm) * n / self.METER_STEPS
                meter.text = f"{prefix}{money(Fraction(round(v * 100), 100))}{suffix}"
                return True
            step(0)
            self._meter_anim = Clock.schedule_interval(step, self.METER_STEP_S)


        def _conditions(self, s) -> None:
            ids = self.ids
            blocking = next((c for c in s.conditions if c.blocking), None)
            card = ids.condition
            if blocking is None:
                card.code = card.title = card.text = ""
            else:
                colour, mark = self.CONDITION_LOOK.get(blocking.code, ((0.6, 0.6, 0.6, 1), "!"))
                card.colour, card.mark = colour, mark
                card.title, card.text, card.code = blocking.title, blocking.text, blocking.code
            notices = tuple((c.code, c.title, c.text) for c in s.conditions if not c.blocking)
            if self._changed("notices", notices):
                ids.notices.clear_widgets()
                for code, title, text in notices:
                    colour = self.CONDITION_LOOK.get(code, ((0.4, 0.4, 0.4, 1), ""))[0]
                    ids.notices.add_widget(make("NoticeBand", title=title, text=text,
                                                colour=tuple(0.75 * x for x in colour[:3]) + (1,)))

        def _jackpot(self, s) -> None:
            """The full-screen moment of a progressive hit here: shown while it lasts (a
            touch puts it aside until its state changes: pending -> paid)."""
            j = s.jackpot
            w = self.ids.jackpot
            key = None if j is None else (j.state, j.award, j.status)
            if j is None or key == self._jackpot_seen:
                if j is None:
                    self._jackpot_seen = None
                if w.title:
                    self._hide_jackpot(w)
                return
            if w.title and (w.state, w.award, w.status) == key:
                return
            w.title, w.category, w.award, w.status, w.net, w.state = (j.title, j.category, j.award,
                                                                      j.status, j.net, j.state)
            self._celebrate(True)

        def _hide_jackpot(self, w) -> None:
            w.title = w.category = w.award = w.status = w.net = w.state = ""
            self._celebrate(False)

        def _jackpot_touch(self, widget, touch) -> bool:
            if not widget.title or not widget.collide_point(*touch.pos):
                return False
            self._jackpot_seen = (widget.state, widget.award, widget.status)
            self._hide_jackpot(widget)
            return True

        # -- the technician's long press on "Seat N" (docs/ui.md "Service screen") --------

        LONG_PRESS = 3.0

        def on_touch_down(self, touch) -> bool:
            label = self.ids.seat_button
            if label.collide_point(*touch.pos) and not self.ids.jackpot.title:
                self._press = Clock.schedule_once(lambda _dt: App.get_running_app().open_pin(), self.LONG_PRESS)
                return True
            return super().on_touch_down(touch)

        def on_touch_up(self, touch) -> bool:
            if self._press is not None:
                self._press.cancel()
                self._press = None
            return super().on_touch_up(touch)

        def _controls(self, s) -> None:
            """A demo table's dealer controls (deal, no more bets, the player's decisions)."""
            bar = self.ids.dealer_bar
            if getattr(self, "_shown_controls", None) == s.controls:
                return
            self._shown_controls = s.controls
            bar.clear_widgets()
            app = App.get_running_app()
            from .demo import CONTROL_KEYS
            for control, label in s.controls:
                key = CONTROL_KEYS.get(control)     # the keyboard's key, on the button: no hidden knob
                b = make('DealerButton', text=label if key is None else f"{label} ({'space' if key == ' ' else key})")
                b.control = control
                b.bind(on_release=lambda _b, c=control: app.control(c))
                bar.add_widget(b)
            bar.height = app.u * 50 if s.controls else 0

        _glow = None

        def _celebrate(self, on: bool) -> None:
            """A jackpot hit: the moment's gold glows a few times (then stops: no idle CPU)."""
            from kivy.animation import Animation
            band = self.ids.jackpot
            if self._glow is not None:
                self._glow.cancel(band)
                self._glow = None
                band.glow = 0.0
            if not on:
                return
            anim = Animation(glow=1.0, duration=0.4) + Animation(glow=0.0, duration=0.4)
            for _ in range(3):
                anim = anim + Animation(glow=1.0, duration=0.4) + Animation(glow=0.0, duration=0.4)
            self._glow = anim
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

    for cls in (ChipStack, BetSpot, FitLabel, WrapFit, CardLabel, HandRow, SeatScreen, InfoScreen, RulesScreen, HistoryScreen, HelpScreen, ServiceScreen,
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
            # ``pin``: the PIN's salted hash ("" none: the service screen stays shut)
            self.pin_lock = PinLock(hash_pin(DEMO_PIN) if pin is None else pin)
            self.log_lines = log_lines
            self.frames = 0
            self.first_frame = threading.Event()
            self._pending_snapshot = None
            self._key_on = False
            self._antennas = None
            self._antenna_lines: tuple[Any, list] = (None, [])    # the tap, its lines on the service screen
            self._live: Any = None              # the service screen's 1 s refresh while shown

        def build(self):
            self._resize(Window, Window.size)
            Window.bind(size=self._resize, on_key_down=self._on_key)
            Window.clearcolor = (0.05, 0.16, 0.11, 1)
            sm = ScreenManager(transition=NoTransition())
            self.seat_screen = SeatScreen(name="seat")
            sm.add_widget(self.seat_screen)
            self.sm = sm
            self.presenter.listen(self._show_screen)
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
                if self._antennas is None and getattr(feed, "source", None) is not None:
                    # the reader's raw reads per antenna from now on, for the service screen
                    self._antennas = AntennaReads.attach(feed.source.seat)
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
                    self._screen("rules").fill(r.title, lines, back)
            elif name == "history":
                rows = self.presenter.recall.lines(lang)
                lines = [("", f"{a}:   {b}   |   {tr(lang, 'dealer')} {c}   |   {d}") for a, b, c, d in rows]
                self._screen("history").fill(tr(lang, "history.title", n=len(rows) or 10),
                                                   lines or [("", tr(lang, "history.empty"))], back)
            elif name == "help":
                self._screen("help").fill(tr(lang, "help.title"),
                                                [("", line) for line in tr(lang, "help.text").split("\n")], back)
            elif name == "language":
                scr = self._screen("language")
                scr.fill(tr(lang, "language.title"), [], back)
                for code, label in LANGUAGES.items():
                    b = make('BigButton', text=label, size_hint_y=None, height=self.u * 80,
                                          font_size=self.u * 30)
                    b.bind(on_release=lambda _b, c=code: self.set_language(c))
                    scr.ids.body.add_widget(b)
            elif name == "service":
                self._fill_service()
            elif name == "pin":
                scr = self._screen("pin")
                scr.entered = ""
                scr.ids.heading.text = tr(lang, "service.pin")
                scr.ids.shown.text = ""
                scr.ids.back.text = back
            if name != "seat":
                self._screen(name)
            self.sm.current = name
            if self._live is not None:
                self._live.cancel()
                self._live = None
            if name == "service":           # the antennas' raw reads, live (1 s)
                self._live = Clock.schedule_interval(self._refresh_antennas, 1.0)

        def set_language(self, code: str) -> None:
            self.presenter.set_language(code)
            self.show("seat")

        def open_pin(self) -> None:
            self.show("pin")

        #: the other screens, made when first shown (a seat mostly shows only its own)
        SCREENS = {"rules": RulesScreen, "history": HistoryScreen, "language": LanguageScreen,
                   "help": HelpScreen, "pin": PinScreen, "service": ServiceScreen}

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
            source = getattr(feed, "source", None)
            if source is None:
                scr.fill("Service", [("", "the seat is starting")], "Back")
                return
            # safe on this thread: the sections read the seat's frozen view, copies and the
            # journal through their own connection (see ui.service.service_sections)
            diag = getattr(feed, "diag", None)
            if diag is not None and diag.results is None:
                self._run_diag()                # the first time the screen opens
            antennas = AntennaReads.attach(source.seat)
            result = service_sections(source.seat, feed.service_table(), feed.controller,
                                      getattr(feed, "config_digest", None) or "not available",
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
            if feed.diag.start(done):
                Clock.schedule_once(lambda _dt: self._fill_service() if self.sm.current == "service" else None)

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
