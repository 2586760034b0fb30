"""Layout that cannot overflow: ``python -m ui.layoutcheck --size 800x480 --out DIR``.

Opens the real seat display (Kivy window; Xvfb in the tests), shows it every combination
that stretches the seat screen — per profile: every spot with chips and the longest notes,
the split maximum of hands (Blackjack Switch's two hands and their splits) with many cards,
every pay line with results, two fault banners, every unit condition, the jackpot moment —
each built as a ``SeatView`` and said by the presenter in en / zh / ms, and checks after
layout that no widget's box leaves its parent's, no two siblings in a layout overlap and no
label's text texture is larger than the label (cut). Writes ``DIR/<size>-layout.json``:
the problems found (none expected) and, per unit condition, the share of the screen's
pixels that differ from the healthy idle seat (the state test); with ``--shots`` a PNG per
combination too.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from firmware.engine.profile import load_profile, profile_names
from firmware.runtime.seatview import CONDITIONS
from firmware.runtime.spots import seat_spots
from firmware.runtime.view import (
    AlarmView,
    ChipView,
    HandView,
    ProgressiveView,
    ResultView,
    SeatView,
    SpotIssue,
    SpotView,
)
from firmware.runtime.wire import ControllerStatus

from .model import SeatSnapshot

LANGS = ("en", "zh", "ms")
EPS = 1.5               # px: rounding of Kivy's float layout


class StaticFeed:
    """No table: the check shows the screens it builds itself."""

    profile = None
    controller = None
    auto = False

    def start(self, _on_snapshot) -> None:
        pass

    def stop(self) -> None:
        pass


def _chips(n: int) -> tuple[ChipView, ...]:
    denoms = ("100", "25", "25", "5", "5", "5", "1", "1", "1", "1")
    return tuple(ChipView(f"U{i}", "valid", denoms[i % len(denoms)]) for i in range(n))


def _spots(profile, notes: bool) -> tuple[SpotView, ...]:
    out = []
    for name in seat_spots(profile):
        issues: tuple[SpotIssue, ...] = ()
        if notes:   # the longest words a spot says: refused chips beside an amount, a limit
            issues = (SpotIssue("unknown_chip", count=3), SpotIssue("requires", requires="main"))
        chips = _chips(12) + (ChipView("X1", "unknown"),)
        out.append(SpotView(name, "12345.50", "open", ("X1",), issues, chips))
    return tuple(out)


def _hands(profile, settled: bool) -> tuple[HandView, ...]:
    n = max(profile.rules.max_hands or 1, profile.hands_per_box)
    cards = ("AS", "2H", "TD", "3C", "2D", "AH")
    return tuple(HandView(cards, 19, False, "stand", "win" if settled else None,
                          "12345.50" if settled else None, in_play=(i == 0 and not settled))
                 for i in range(n))


def _pay_lines(profile) -> tuple[ResultView, ...]:
    lines = []
    for name in seat_spots(profile):
        if name in profile.side_bets:
            lines.append(ResultView(name, "123456", "suited_three_of_a_kind", "100:1"))
        elif name == "progressive":
            lines.append(ResultView(name, "24995", "suited_four_of_a_kind"))
        else:
            lines.append(ResultView(name, "-12345.50"))
    return tuple(lines)


LIMITS = (("main", "10", "500"),)
FAULTS = (AlarmView("bets_not_taken", (("reason", "lock_timeout"),)), AlarmView("integrity"))


def combinations() -> Iterator[tuple[str, SeatSnapshot]]:
    """(name, snapshot): the combinations that stretch the seat screen."""
    for name in profile_names():
        p = load_profile(name)
        base = SeatView(box=7, round=123456, phase="open", spots=_spots(p, True), profile=name,
                        title=p.title, limits=LIMITS)
        progressive = "progressive" in seat_spots(p)
        ctl = ControllerStatus("up", "1234567.89", False) if progressive else ControllerStatus()
        yield f"{name}-betting", SeatSnapshot(base, controller=ctl)
        yield f"{name}-warnings", SeatSnapshot(
            replace(base, table_alarms=FAULTS, conditions=("jackpot_link_down", "storage_low")
                    if progressive else ("storage_low", "behind_confirmed")), controller=ctl)
        play = replace(base, phase="play", spots=_spots(p, False), hands=_hands(p, False),
                       dealer_cards=("AS", "2H", "TD", "3C", "2D", "AH"), dealer_total=19, turn="mine",
                       decisions=("hit", "stand", "double", "split", "surrender", "switch"))
        yield f"{name}-hands", SeatSnapshot(play, controller=ctl)
        over = replace(play, phase="over", turn=None, decisions=(), hands=_hands(p, True),
                       pay_lines=_pay_lines(p), table_alarms=FAULTS,
                       envy=((3, "1000"),) if progressive else (),
                       progressive=ProgressiveView("suited_four_of_a_kind", "1234567.89") if progressive else None)
        yield f"{name}-results", SeatSnapshot(over, controller=ctl)
        if progressive:
            yield f"{name}-jackpot-pending", SeatSnapshot(
                replace(over, phase="play", pay_lines=(), progressive=ProgressiveView(
                    "suited_four_of_a_kind", None, True, True)), controller=replace(ctl, pending=True))
    p = load_profile("uk-4-deck")
    idle = SeatView(box=1, round=12, phase="idle", spots=tuple(SpotView(s, "0", "empty") for s in seat_spots(p)),
                    profile="uk-4-deck", title=p.title, limits=LIMITS)
    yield "idle", SeatSnapshot(idle)
    for code in CONDITIONS:
        yield f"condition-{code}", SeatSnapshot(replace(idle, conditions=(code,)))


def problems(root) -> list[str]:
    """Every widget under ``root`` that leaves its parent, overlaps a sibling or is cut."""
    from kivy.uix.boxlayout import BoxLayout
    from kivy.uix.gridlayout import GridLayout
    from kivy.uix.label import Label
    from kivy.uix.stacklayout import StackLayout

    def shown(w) -> bool:
        while w is not None and w is not root:
            if w.opacity == 0 or w.width <= 0 or w.height <= 0:
                return False
            w = w.parent
        return True

    def box(w):
        x, y = w.to_window(w.x, w.y)
        return x, y, x + w.width, y + w.height

    def name(w) -> str:
        t = getattr(w, "text", "")
        return f"{type(w).__name__}{'(' + repr(t[:30]) + ')' if isinstance(t, str) and t else ''}"

    found = []
    for w in root.walk(restrict=True):
        if w is root or not shown(w):
            continue
        if isinstance(w, Label) and w.text and w.texture_size[0] > w.width + EPS:
            found.append(f"{name(w)} cut: text {w.texture_size[0]:.0f} wide in {w.width:.0f}")
        if isinstance(w, Label) and w.text and w.texture_size[1] > w.height + EPS:
            found.append(f"{name(w)} cut: text {w.texture_size[1]:.0f} high in {w.height:.0f}")
        if not isinstance(w, (BoxLayout, GridLayout, StackLayout)):
            continue
        kids = [k for k in w.children if shown(k)]
        px0, py0, px1, py1 = box(w)
        for k in kids:
            x0, y0, x1, y1 = box(k)
            if x0 < px0 - EPS or y0 < py0 - EPS or x1 > px1 + EPS or y1 > py1 + EPS:
                found.append(f"{name(k)} leaves {name(w)}: {[round(v) for v in (x0, y0, x1, y1)]} "
                             f"in {[round(v) for v in (px0, py0, px1, py1)]}")
        for i, a in enumerate(kids):
            for b in kids[i + 1:]:
                ax0, ay0, ax1, ay1 = box(a)
                bx0, by0, bx1, by1 = box(b)
                if min(ax1, bx1) - max(ax0, bx0) > EPS and min(ay1, by1) - max(ay0, by0) > EPS:
                    found.append(f"{name(a)} overlaps {name(b)} in {name(w)}")
    return found


def _pixels() -> bytes:
    from kivy.core.window import Window
    from kivy.graphics.opengl import GL_RGBA, GL_UNSIGNED_BYTE, glReadPixels
    w, h = Window.size
    return glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE)


def differing(a: bytes, b: bytes, every: int = 7) -> float:
    """The share of pixels that differ between two RGBA frames of one size, sampled on
    every ``every``-th pixel (quick; a screen's worth of difference shows all the same)."""
    idx = range(0, len(a) - 3, 4 * every)
    diff = sum(1 for i in idx if a[i:i + 3] != b[i:i + 3])
    return diff / len(idx) if idx else 0.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="800x480")
    ap.add_argument("--out", required=True)
    ap.add_argument("--shots", action="store_true", help="a PNG of every combination too")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from .app import SIZES, build_app
    from .presenter import present
    app = build_app(StaticFeed(), size=SIZES[args.size])
    from kivy.clock import Clock
    from kivy.core.window import Window

    todo = [(f"{n}-{lang}", snap, lang) for n, snap in combinations() for lang in LANGS]
    report: dict[str, Any] = {"checked": 0, "problems": {}, "conditions": {}}
    frames: dict[str, bytes] = {}

    def show_next(_dt=None) -> None:
        if not todo:
            (out / f"{args.size}-layout.json").write_text(json.dumps(report, ensure_ascii=False, indent=1))
            app.stop()
            return
        key, snap, lang = todo[0]
        app.seat_screen.show(present(snap, lang))
        Clock.schedule_once(check, 0.12)     # layout settles over a few frames (fitted fonts)

    def check(_dt) -> None:
        key, snap, lang = todo.pop(0)
        found = problems(app.seat_screen)
        report["checked"] = int(report["checked"]) + 1
        if found:
            report["problems"][key] = found      # type: ignore[index]
        if key.startswith(("idle-", "condition-")):
            frames[key] = _pixels()
            if key.startswith("condition-"):
                code, healthy = key[len("condition-"):].rsplit("-", 1)[0], frames[f"idle-{lang}"]
                report["conditions"].setdefault(code, {})[lang] = differing(frames[key], healthy)  # type: ignore[union-attr]
        if args.shots or key.startswith(("idle-", "condition-")) or key.endswith("-results-en"):
            written = Window.screenshot(name=str(out / f"{args.size}-{key}.png"))
            if written:                 # Kivy numbers the file: give it the combination's name
                Path(written).replace(out / f"{args.size}-{key}.png")
        Clock.schedule_once(show_next, 0)

    Clock.schedule_once(show_next, 0.5)
    app.run()
    return 0 if not todo else 1


if __name__ == "__main__":
    sys.exit(main())
