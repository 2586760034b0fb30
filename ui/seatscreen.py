"""The player's screen (``ui/kv/seat.kv``): shows a presenter's ``SeatScreen`` model,
updating the widgets already on screen in place (issue 18); the meter's count-up, the
unit conditions, the jackpot moment and the technician's long press. Imported only once
Kivy is prepared (``ui.app.build_app``)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kivy.app import App
from kivy.clock import Clock
from kivy.factory import Factory
from kivy.uix.screenmanager import Screen

from .i18n import tr
from .presenter import money
from .widgets import keep_fitted, make


def _amount(text: str | None) -> Fraction | None:
    """A shown amount ("25,000.50") as a Fraction; None when it is not one."""
    try:
        return Fraction(text.replace(",", "")) if text else None
    except (ValueError, ZeroDivisionError):
        return None


class SeatScreen(Screen):
    #: a unit condition's colour and mark (docs/ui.md "Unit conditions")
    CONDITION_LOOK = {
        "recovering": ((0.20, 0.45, 0.85, 1), "…"), "no_dealer": ((0.55, 0.35, 0.85, 1), "!"),
        "broker_down": ((0.85, 0.18, 0.18, 1), "×"), "not_verified": ((0.85, 0.20, 0.60, 1), "!"),
        "reader_down": ((0.95, 0.50, 0.10, 1), "?"), "shoe_down": ((0.85, 0.70, 0.10, 1), "!"),
        "console_down": ((0.10, 0.65, 0.65, 1), "!"), "storage_low": ((0.55, 0.40, 0.20, 1), "i"),
        "behind_confirmed": ((0.30, 0.40, 0.50, 1), "!"), "jackpot_link_down": ((0.50, 0.36, 0.05, 1), "×"),
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
        if not s.controls:              # a real seat: no demo module (nor its simulator) loaded for nothing
            bar.height = 0
            return
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
