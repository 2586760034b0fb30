"""The display's memory (issue 14: RSS with the UI <= 150 MB; docs/ui.md "Memory")."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from firmware.engine.profile import load_profile
from ui import rulesinfo

ROOT = Path(__file__).resolve().parents[2]

WARM_UP = """
import json, sys
from firmware.engine.profile import load_profile
from ui import rulesinfo
profile = load_profile("rws-blackjack-switch")
rulesinfo.warm_up(profile).join()
got = rulesinfo.cached_odds(profile)
basic_loaded = "firmware.engine.basic" in sys.modules
from firmware.engine import odds
held = sum(f.cache_info().currsize for f in vars(odds).values() if hasattr(f, "cache_info"))
want, main = rulesinfo.work_out(profile, profile.default_decks)
print(json.dumps({"held": held, "basic_loaded": basic_loaded, "same": got == want,
                  "main": rulesinfo.cached_main_edge(profile) == main, "progressive": got.progressive is not None}))
"""


def test_the_display_works_the_odds_out_in_a_child_process_and_holds_only_the_answer():
    # a fresh interpreter, as the display's: after the warm-up it has the odds the engine
    # gives, and none of the engine's caches (~6 MB of RSS that never went back)
    out = subprocess.run([sys.executable, "-c", WARM_UP], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"held": 0, "basic_loaded": False, "same": True, "main": True, "progressive": True}


def test_a_failing_odds_child_is_logged_and_the_odds_are_worked_out_here(monkeypatch, caplog):
    profile = load_profile("rws-perfect-pairs")
    monkeypatch.setattr(rulesinfo, "child_command", lambda: [sys.executable, "-c", "raise SystemExit('no odds')"])
    with caplog.at_level(logging.WARNING, logger="ui.rulesinfo"):
        got = rulesinfo.odds_for(profile, decks=5, child=True)
    assert got == rulesinfo.work_out(profile, 5)[0]
    assert rulesinfo.cached_main_edge(profile, 5) is not None
    assert "the odds' child process exited with status 1: no odds" in caplog.text


FACES = """
import json, os, sys
from ui.app import _prepare_kivy
_prepare_kivy((800, 480))
from kivy.core.text import Label as CoreLabel
from ui import fonts
if sys.argv[1] == "shared":
    fonts.share_faces()
font = str(fonts.cjk_font())

def open_faces():
    return sum(1 for fd in os.listdir("/proc/self/fd")
               if os.path.realpath(f"/proc/self/fd/{fd}") == os.path.realpath(font))
# the sizes and styles the display asks for: kv's app.u * 18, a fitted heading's 18.32,
# a bold line, a whole-pixel 18 from Python; then another size
for size, bold in ((18.0, False), (18.32085106382979, True), (18.0, True), (18, False), (24.0, False)):
    CoreLabel(text="下注 Bet", font_size=size, bold=bold, font_name=font).get_extents("下注 Bet")
print(json.dumps(open_faces()))
"""


def test_labels_whose_text_is_drawn_alike_share_one_font_face():
    # Kivy's SDL2 text keys its open faces on the size as written and on bold, but opens
    # the face at the whole-pixel size, and bold draws nothing different with a one-file
    # font: 18.0, 18.32 and bold 18 are one face (~0.4 MB each of the CJK font's)
    def faces(mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", FACES, mode], capture_output=True, text=True, timeout=120,
                             cwd=ROOT, env={**os.environ, "KIVY_NO_ARGS": "1", "KIVY_NO_CONSOLELOG": "1"})
        assert out.returncode == 0, out.stderr[-2000:]
        return int(out.stdout.strip().splitlines()[-1])
    assert faces("kivy") == 5                   # what Kivy alone opens (the test can tell)
    assert faces("shared") == 2
