"""The seat display in a real Kivy window under Xvfb: every screen at 800x480, 1024x600
and 1280x800, touches opening each screen, a round played through the on-screen dealer
controls, screenshots in artifacts/ui/ to look at."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "ui"
XVFB = shutil.which("Xvfb")

pytestmark = pytest.mark.skipif(XVFB is None, reason="Xvfb is not installed (apt-get install xvfb)")



def unkeyed(texts) -> set[str]:
    """The demo's dealer buttons carry their keyboard key: 'No more bets (n)' reads 'No more bets'."""
    return {re.sub(r" \((?:space|.)\)$", "", t) for t in texts}

def _free_display() -> int:
    for n in range(140, 400):
        if not Path(f"/tmp/.X{n}-lock").exists() and not Path(f"/tmp/.X11-unix/X{n}").exists():
            return n
    raise RuntimeError("no free X display number")


@pytest.fixture(scope="module")
def display():
    for _ in range(5):
        n = _free_display()
        proc = subprocess.Popen([XVFB, f":{n}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if Path(f"/tmp/.X11-unix/X{n}").exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        if proc.poll() is None:
            break
    else:
        pytest.fail("Xvfb did not start")
    yield f":{n}"
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module", params=["800x480", "1024x600", "1280x800"])
def shots(request, display, tmp_path_factory):
    size = request.param
    env = dict(os.environ, DISPLAY=display, KIVY_NO_ARGS="1", KIVY_NO_CONSOLELOG="1",
               KIVY_HOME=str(tmp_path_factory.mktemp("kivy")))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    run = subprocess.run([sys.executable, "-m", "ui.shots", "--size", size, "--out", str(ARTIFACTS)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return size, json.loads((ARTIFACTS / f"{size}-texts.json").read_text())


def test_every_screen_is_rendered_and_saved(shots):
    size, texts = shots
    for step in ("seat-betting", "seat-hand", "seat-results", "rules", "history", "help", "language",
                 "seat-zh", "seat-ms", "pin", "service", "seat-manual", "seat-fault", "seat-not-taken"):
        assert step in texts, step
        png = ARTIFACTS / f"{size}-{step}.png"
        assert png.stat().st_size > 5000, png


def test_betting_screen_texts(shots):
    _, t = shots
    s = t["seat-betting"]
    assert "Place your bets" in s and "Blackjack Perfect Pairs" in s and "Limits 10–500" in s
    assert "1 chip not accepted" in s and "Seat 1\nRound 1" in s
    assert not any(w in x for x in s for w in ("Counted", "counted", "Settling"))
    assert {"Bet 20", "No more bets", "Side bets"} <= unkeyed(s)      # the demo's dealer controls
    assert "No more bets (n)" in s                                    # each with its keyboard key


def test_hand_and_results_texts(shots):
    _, t = shots
    assert "Your hand" in t["seat-hand"] and "8♥" in t["seat-hand"] and "16" in t["seat-hand"]
    r = t["seat-results"]
    assert "+250\nPerfect Pair 25:1" in r and "Round net +230" in r and "Lose  −20" in r and "19" in r
    assert "−20\nLose" in r                                 # each result on its own spot


def test_touches_open_rules_history_language_help_and_service(shots):
    _, t = shots
    assert "Blackjack Perfect Pairs — rules and pay tables" in t["rules"]
    assert "House edge 6.11%" in t["rules"]
    assert any(line.startswith("Round 1:") and "+230" in line for line in t["history"])
    assert {"English", "简体中文", "Bahasa Melayu"} <= set(t["language"])
    assert "Play responsibly" in t["help"]
    assert "本局结束" in t["seat-zh"] and "完美对子二十一点" in t["seat-zh"] and "本局净额 +230" in t["seat-zh"]
    assert "Pusingan tamat" in t["seat-ms"] and "Blackjack Pasangan Sempurna" in t["seat-ms"]
    assert "••••" in t["pin"]
    service = t["service"]
    assert "unit: demo/seat-1" in service and any(x.startswith("MQTT outbox depth: not available") for x in service)


def test_fault_is_said_plainly(shots):
    _, t = shots
    assert "Kerosakan kasut kad. Sila tunggu peniaga." in t["seat-fault"]


def test_a_round_played_through_the_on_screen_dealer_controls(shots):
    _, t = shots
    played = t["manual-controls"]
    assert played[:4] == ["open_bets", "bet", "no_more_bets", "deal"], played
    assert not any(p.startswith("missing") for p in played), played
    end = t["seat-manual"]
    assert "Pusingan tamat" in end                                   # settled (the screen is in Malay by then)
    assert any(x.startswith("Bersih pusingan") for x in end)
    assert "Buka pertaruhan" in unkeyed(end)                               # the next round can be opened


@pytest.fixture(scope="module")
def jackpot(display, tmp_path_factory):
    env = dict(os.environ, DISPLAY=display, KIVY_NO_ARGS="1", KIVY_NO_CONSOLELOG="1",
               KIVY_HOME=str(tmp_path_factory.mktemp("kivy")))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTIFACTS / "jackpot"
    run = subprocess.run([sys.executable, "-m", "ui.shots", "--scene", "jackpot", "--size", "800x480",
                          "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads((out / "800x480-texts.json").read_text())


def test_live_meter_link_down_and_jackpot_celebration(jackpot):
    t = jackpot
    assert {"PROGRESSIVE JACKPOT", "25,000"} <= set(t["jackpot-meter"])     # the title once, the amount
    down = t["jackpot-link-down"]
    assert "Progressive unavailable — jackpot link down" in down
    assert "Unavailable: jackpot link down" in down
    hit = t["jackpot-hit"]
    assert {"JACKPOT", "Suited Four of a Kind", "Award pending: an attendant is on the way"} <= set(hit)
    assert "Jackpot PENDING" in hit
    award = t["jackpot-award"]
    assert "+24,995\nSuited Four of a Kind" in award and "25,000" in award
    assert {"Paid: 25,000", "Award 25,000 · your progressive bet 5 · net +24,995"} <= set(award)
    insure = t["switch-insurance"]                     # an ace up: insurance on either hand
    assert {"Insurance\n(hand 1)", "Insurance\n(hand 2)"} <= unkeyed(insure)


def test_bets_not_taken_is_said_on_the_spot_and_in_a_banner(shots):
    _, t = shots
    s = t["seat-not-taken"]
    assert "Not in this round" in s and "Not taken: not in play this round" in s
    assert any(x.startswith("Your bets were not confirmed in time") for x in s)
    assert "本局未参与" in t["seat-not-taken-zh"] and "Tidak bermain pusingan ini" in t["seat-not-taken-ms"]


# --- layout that cannot overflow, and unit conditions on screen (issue 14) -------------------

@pytest.fixture(scope="module", params=["800x480", "1024x600", "1280x800"])
def layout(request, display, tmp_path_factory):
    """``python -m ui.layoutcheck``: every combination of spots, notes, hands, pay lines,
    banners and unit conditions, said by the presenter in en/zh/ms, in the real window."""
    size = request.param
    env = dict(os.environ, DISPLAY=display, KIVY_NO_ARGS="1", KIVY_NO_CONSOLELOG="1",
               KIVY_HOME=str(tmp_path_factory.mktemp("kivy")))
    out = ARTIFACTS / "layout"
    run = subprocess.run([sys.executable, "-m", "ui.layoutcheck", "--size", size, "--out", str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return size, json.loads((out / f"{size}-layout.json").read_text())


def test_no_widget_leaves_its_parent_overlaps_a_sibling_or_is_cut(layout):
    size, report = layout
    from ui.layoutcheck import LANGS, combinations
    assert report["checked"] == len(list(combinations())) * len(LANGS)
    assert report["problems"] == {}, json.dumps(report["problems"], ensure_ascii=False, indent=1)[:4000]


def test_no_unit_condition_looks_like_a_healthy_idle_seat(layout):
    """Pixels of the seat under each condition against the same seat healthy and idle: a
    condition that stops bets covers the felt (most of the screen changes); one under which
    play goes on adds its band (a visible share still)."""
    from firmware.runtime.seatview import CONDITIONS
    from ui.presenter import BLOCKING
    _, report = layout
    assert set(report["conditions"]) == set(CONDITIONS)
    for code, per_lang in report["conditions"].items():
        assert set(per_lang) == {"en", "zh", "ms"}, code
        least = 0.3 if code in BLOCKING else 0.03
        assert min(per_lang.values()) >= least, (code, per_lang)
