"""The seat display's own Kivy widgets (registered with Kivy's Factory for the layouts in
``ui/kv``): labels that fit their text, the chip stack, the bet spot, cards and hand rows.
Imported only once Kivy is prepared (``ui.app.build_app``)."""

from __future__ import annotations

import os

from kivy.app import App
from kivy.clock import Clock
from kivy.factory import Factory
from kivy.properties import ListProperty, NumericProperty
from kivy.uix.boxlayout import BoxLayout
from kivy.uix.label import Label
from kivy.uix.widget import Widget


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

def layout_pending(widget) -> bool:
    """A layout above ``widget`` is still to run before this frame: its width (a row's
    share of a parent not yet sized, a spot's scale) is on its way. Fitted to it, the label
    would be drawn for nothing at a size no settled screen shows, and SDL2_ttf keeps a face
    of the CJK font open for each size (~0.4 MB): four such faces on a seat's start."""
    w = widget.parent
    while w is not None and w is not w.parent:
        pending = getattr(w, "_trigger_layout", None)
        if pending is not None and pending.is_triggered:
            return True
        w = w.parent
    return False

def keep_fitted(label, base: float, least: float) -> None:
    """Refit ``label`` (sizes in units of ``app.u``) whenever its text or width changes,
    once the layouts above it have run (still before the frame)."""
    def refit(*_a):
        if layout_pending(label):
            later()
            return
        u = App.get_running_app().u
        fit_font(label, u * base, u * least)
    later = Clock.create_trigger(refit, -1)
    label.bind(text=refit, width=refit)

FELT = (0.03, 0.30, 0.17, 1)        # the felt panel under the spots (``<Felt>`` in kv/common.kv)
BG = (0.05, 0.16, 0.11, 1)          # the window's clear colour (``SeatDisplayApp.build``)


class OffScreen(Widget):
    """A widget that draws its children into an off-screen buffer (Kivy ``Fbo``) and each
    frame only that buffer's texture: Kivy redraws the whole window for any change, and
    software GL (llvmpipe) pays for every shape and label every frame, while an Fbo
    re-renders only when an instruction inside it changed (docs/ui.md "Drawing cost").
    The buffer is cleared to ``UNDER`` (opaque: what the window shows behind the widget),
    so the children's translucent fills blend as they would on the window. Mixed in
    before a Kivy layout class (``BetSpot``); the widget's own ``canvas.before`` stays on the window."""

    UNDER = BG
    MARGIN = 1
    #: a stencil buffer (4 bytes a pixel, kept in RAM by llvmpipe) only where a part draws
    #: through one: a translucent thick ``Line`` (the meter's gold frame, ``FramedCached``)
    STENCIL = False
    #: BETBOX_UI_OFFSCREEN=0 draws these parts directly, for a comparison (bench_ui, tests)
    ENABLED = os.environ.get("BETBOX_UI_OFFSCREEN", "1") != "0"
    _fbo = None

    def __init__(self, **kw) -> None:
        if not self.ENABLED:
            super().__init__(**kw)
            self.bind(pos=self._place, size=self._place)
            return
        from kivy.graphics import (
            Canvas,
            ClearBuffers,
            ClearColor,
            Color,
            Fbo,
            PopMatrix,
            PushMatrix,
            Rectangle,
            Translate,
        )
        self.canvas = Canvas()
        with self.canvas:
            self._fbo = Fbo(size=(1, 1), with_stencilbuffer=self.STENCIL)
            Color(1, 1, 1, 1)
            self._blit = Rectangle(size=(1, 1), texture=self._fbo.texture)
        with self._fbo.before:
            ClearColor(*self.UNDER)
            ClearBuffers()
            PushMatrix()
            self._shift = Translate(0, 0)       # the children draw in window coordinates
        with self._fbo.after:
            PopMatrix()
        super().__init__(**kw)
        self.bind(pos=self._place, size=self._place)

    def add_widget(self, widget, *args, **kw):
        outer = self.canvas
        if self._fbo is not None:
            self.canvas = self._fbo                     # the child's canvas goes into the Fbo
        try:
            super().add_widget(widget, *args, **kw)
        finally:
            self.canvas = outer
        self._place()

    def remove_widget(self, widget, *args, **kw):
        if self._fbo is None:
            return super().remove_widget(widget, *args, **kw)
        outer, self.canvas = self.canvas, self._fbo
        try:
            super().remove_widget(widget, *args, **kw)
        finally:
            self.canvas = outer

    def _place(self, *_a) -> None:
        if self._fbo is None:
            return
        # whole pixels: the texture is drawn 1:1, not resampled; a pixel's margin round
        # the widget for the smoothed shapes' soft edge, which falls just outside them
        # (x + width, not ``right``: that alias may not be updated yet when size changes)
        m = self.MARGIN
        x, y = round(self.x) - m, round(self.y) - m
        w, h = max(1, round(self.x + self.width) + m - x), max(1, round(self.y + self.height) + m - y)
        if tuple(self._fbo.size) != (w, h):
            self._fbo.size = (w, h)
            self._blit.texture = self._fbo.texture
        self._blit.pos, self._blit.size = (x, y), (w, h)
        self._shift.xy = (-x, -y)


class Cached(OffScreen):
    """Its one child (filling it) drawn off-screen over the window's background."""

    def _place(self, *_a) -> None:
        super()._place()
        for child in self.children:
            child.pos, child.size = self.pos, self.size


class FramedCached(Cached):
    """A ``Cached`` part with a stencil: the meter, whose translucent gold frame (a thick
    ``Line``) draws through one (without it the frame filled the band)."""

    STENCIL = True


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
            # the ring as a disc in the ring's colour (white at 55 % over the felt) under a
            # disc of felt: two smoothed fills, where a thick Line's default (180 segments,
            # a fan of triangles at each joint) cost llvmpipe ~5 ms a frame per ring and one
            # with cheap joints shows a notch where its ends meet
            ring = max(2.0, d * 0.05)           # as thick as the Line of width d * 0.025 was
            Color(0.56, 0.69, 0.63, 1)
            SmoothEllipse(pos=(cx - d / 2, cy - d / 2), size=(d, d), segments=72)
            Color(*FELT)
            SmoothEllipse(pos=(cx - d / 2 + ring, cy - d / 2 + ring), size=(d - 2 * ring, d - 2 * ring), segments=72)
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
                Ellipse(pos=(cx - w / 2, y - h * 0.12), size=(w, h), segments=32)      # its shadow
                Color(*body, 1)
                SmoothEllipse(pos=(cx - w / 2, y), size=(w, h), segments=48)
                Color(*edge, 1)
                Line(ellipse=(cx - w * 0.36, y + h * 0.14, w * 0.72, h * 0.72, 0, 380, 38),
                     width=max(1.0, h * 0.06), joint="none", cap="none")
                y += step

class BetSpot(OffScreen, BoxLayout):
    """One bet spot, drawn off-screen over the felt: a bet changes its own spot's buffer,
    the other spots are drawn from theirs."""

    UNDER = FELT

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
        self._later = Clock.create_trigger(self._refit, -1)
        self.bind(text=self._refit, width=self._refit, base=self._refit)
        self._refit()

    def _refit(self, *_a) -> None:
        if layout_pending(self):        # as ``keep_fitted``: once the layouts above have run
            self._later()
            return
        fit_font(self, self.base, self.least)

class CardLabel(Label):
    card_h = NumericProperty(66.0)

class HandRow(BoxLayout):
    card_h = NumericProperty(66.0)
    n = NumericProperty(1)              # cards in the hand: they shrink to fit the row
