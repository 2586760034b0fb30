"""The display's memory (issue 14: RSS with the UI <= 150 MB; docs/ui.md "Memory")."""

from __future__ import annotations

import json
import logging
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
