"""The seat display under Xvfb: a seat change updates the widgets already on screen (no
clear-and-rebuild of rows, issue 18), and the dealer console's technician key opens the
PIN pad on the seat's screen, then the service screen (issue 14.6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.ui.test_window import XVFB, display  # noqa: F401 - the module's Xvfb fixture

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(XVFB is None, reason="Xvfb is not installed (apt-get install xvfb)")


def probe(display: str, scenario: str, tmp_path: Path) -> dict[str, Any]:  # noqa: F811
    env = dict(os.environ, DISPLAY=display, KIVY_NO_ARGS="1", KIVY_NO_CONSOLELOG="1", KIVY_HOME=str(tmp_path))
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "ui" / "window_probe.py"), scenario],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert "error" not in out, out["error"]
    return out


def test_a_seat_change_updates_the_widgets_in_place(display, tmp_path):  # noqa: F811
    out = probe(display, "in_place", tmp_path)
    before, after = out["bet_20"], out["bet_35"]
    assert before["amounts"] != after["amounts"]            # the change reached the spots
    assert "35" in after["amounts"]
    assert after["spots"] == before["spots"]               # the same BetSpot widgets
    two, three = out["two_cards"], out["three_cards"]
    assert sum(map(len, three["cards"])) + len(three["dealer_cards"]) == \
        sum(map(len, two["cards"])) + len(two["dealer_cards"]) + 1
    assert three["hands"] == two["hands"]                   # the same hand rows
    for old, new in zip(two["cards"], three["cards"], strict=True):
        assert new[:len(old)] == old                       # cards shown stay; the new one is added
    assert three["dealer_cards"][:len(two["dealer_cards"])] == two["dealer_cards"]


def test_the_console_technician_key_opens_the_pin_pad_then_service(display, tmp_path):  # noqa: F811
    out = probe(display, "technician_key", tmp_path)
    assert out["before"] == "seat"
    assert out["key_on"] == "pin"                          # the key asks for the PIN, not more
    assert out["after_pin"] == "service"
    assert out["key_off"] == "seat"                        # key turned back: the player's screen
    assert out["key_on_again"] == "pin"
    assert out["wrong_pin"] == "pin"                        # a wrong PIN opens nothing
    assert out["key_off_again"] == "seat"
    assert "technician_key" in out["dealer_alarms"] and "technician_key_off" in out["dealer_alarms"]


def test_the_meter_draws_only_when_it_moves_and_counts_up_only_a_rise_the_eye_needs(display, tmp_path):  # noqa: F811
    """Idle CPU (issue 14/18): nothing is drawn while the meter stands still; a table's
    trickle of contributions (9.25 on 25,000) is one frame; a big rise (500) counts up
    in its few steps, then the screen is still again."""
    out = probe(display, "meter", tmp_path)
    (f0, m0), (f1, m1) = out["still_0"], out["still_1"]
    assert m0 == m1 == "25,000" and f1 == f0                # still: no frame at all
    f2, m2 = out["trickle"]
    assert m2 == "25,009.25" and f2 - f1 == 1               # the new digits in one frame
    f3, m3 = out["big_rise"]
    assert m3 == "25,509.25" and f3 - f2 >= 3               # counted up in steps
    f4, m4 = out["still_2"]
    assert m4 == m3 and f4 == f3                            # and still again


def test_the_rules_screen_shows_the_progressives_return_at_the_controllers_meter(display, tmp_path):  # noqa: F811
    """The controller's meter is wire text ("25000.00"): the rules screen opened on a
    progressive profile with the odds worked out and the meter known said nothing (its fill
    died on text times a Fraction); it shows the return at that meter."""
    out = probe(display, "rules_meter", tmp_path)
    assert out["odds"] is True
    assert any(line.startswith("Return ") and line.endswith("% at this meter") for line in out["lines"]), out["lines"]


def test_a_seat_that_learns_its_game_after_its_screen_is_up_shows_the_odds(display, tmp_path):  # noqa: F811
    """A real seat knows its profile only from the dealer's state, after the display is
    built: the warm-up at build had nothing to work on and the rules screen said "Working
    out the odds..." for good; the odds are worked out once the profile is known."""
    out = probe(display, "late_profile", tmp_path)
    assert out["profile_at_start"] is False and out["profile_later"] is True
    assert out["odds"] is True
    assert not any("Working out the odds" in line for line in out["lines"]), out["lines"]
    assert any("House edge" in line for line in out["lines"]), out["lines"]
    # a real seat has no demo controls: the demo's module (and its simulator) stays unloaded
    assert out["demo_loaded"] is False


def test_back_on_the_players_screen_the_display_gives_freed_heap_back(display, tmp_path):  # noqa: F811
    """Issue 14 (RSS): the other screens' labels, textures and the odds' fill leave freed
    heap that glibc keeps (~5-10 MB after every screen, llvmpipe); back on the player's
    screen the display hands it back (``ui.memory.give_back``): one more malloc_trim
    then finds almost nothing left to return."""
    out = probe(display, "freed", tmp_path)
    assert out["screen"] == "seat"
    assert out["freed_held_mb"] < 1.5, out


def test_screens_and_languages_visited_again_and_again_leave_no_garbage_and_no_growing_heap(display, tmp_path):  # noqa: F811
    """Issue 14 (RSS): a language switch makes the screens' widgets anew; the old ones sit
    in reference cycles (Kivy's widgets and their bound callbacks) that only a full garbage
    collection frees, with their label textures (~17 MB of heap after every screen in three
    languages, llvmpipe). Back on the player's screen the display collects them before it
    hands the heap back, and three rounds of every screen in every language hold the heap
    in use within a bound of the first round's (no leak per visit)."""
    out = probe(display, "tours", tmp_path)
    assert out["screen"] == "seat"
    assert max(out["garbage"]) < 10_000, out            # before: 22,652, 57,565 and 67,261
    first, *later = out["heap_mb"]
    assert max(later) < first + 3.0, out


def test_fitted_labels_are_sized_only_for_their_settled_width(display, tmp_path):  # noqa: F811
    """Issue 14 (RSS): a fitted label (``keep_fitted``, ``FitLabel``) refitted while the
    layouts above it had yet to run was sized for a width or scale on its way (the spots'
    names fitted to 10 px, then 15) and drawn so: SDL2_ttf opened the CJK font at that size
    and kept it (~0.4 MB a face; four such faces on a real seat's start). Now each is
    sized once the layouts above it have run: every fitted label of the settled start
    screen was given one size only."""
    out = probe(display, "fit_start", tmp_path)
    sizes = {text: set(given) for text, given in out["sizes"].items() if text}
    assert {"Main bet", "Progressive", "Rules", "PROGRESSIVE JACKPOT"} <= set(sizes), sizes
    assert all(len(given) == 1 for given in sizes.values()), sizes      # before: Main bet {10, 15}


def test_the_service_screen_shows_each_antennas_raw_reads_live(display, tmp_path):  # noqa: F811
    """Issue 14.6: the service screen's antenna rows follow the reader while it is open
    (set in place: the same line widgets), a tag under antenna 2 shown without reopening."""
    out = probe(display, "antennas", tmp_path)
    before, after = out["before"], out["after"]
    assert before["screen"] == after["screen"] == "service"
    assert before["ids"] == after["ids"] and len(before["ids"]) == 4      # last cycle + 3 antennas
    assert before["texts"][3].startswith("antenna 2 (perfect_pairs): 0 tags")
    assert after["texts"][3].startswith("antenna 2 (perfect_pairs): 1 tag: 04A1B2C3D4E5F6")
    assert after["texts"][0] != before["texts"][0]                          # a later cycle


def _differing(a: str, b: str) -> int:
    """Pixels (RGB) that differ by more than a rounding step between two screens."""
    x, y = bytes.fromhex(a), bytes.fromhex(b)
    return sum(1 for i in range(0, len(x), 3) if max(abs(x[i + k] - y[i + k]) for k in range(3)) > 2)


def test_parts_drawn_off_screen_show_each_change_as_a_direct_draw_would(display, tmp_path, monkeypatch):  # noqa: F811
    """Drawing cost: the header, the meter, the menu and each bet spot are drawn from
    off-screen buffers re-rendered only when they change. After a bet, a meter rise and a
    new phase, the window's pixels equal those of the same demo drawn directly
    (BETBOX_UI_OFFSCREEN=0): a stale buffer, or a shape that needs what a buffer lacks
    (the meter's translucent frame needs a stencil), would differ; and the change shows."""
    cached = probe(display, "off_screen", tmp_path / "cached")
    monkeypatch.setenv("BETBOX_UI_OFFSCREEN", "0")
    direct = probe(display, "off_screen", tmp_path / "direct")
    assert cached["off_screen"] >= 5 and direct["off_screen"] == 0     # header, meter, menu, spots
    assert _differing(direct["before"], direct["after"]) > 500          # the bet, the meter, the phase
    assert _differing(cached["before"], direct["before"]) <= 20         # (antialiased edges may round apart)
    assert _differing(cached["after"], direct["after"]) <= 20
