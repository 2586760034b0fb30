"""Golden scripted rounds, one or more per profile (tests/golden/PROFILE/*.json).

Each file holds a script, the clauses it exercises and the settlement worked out by hand
(see each file's description). The engine must reproduce it exactly, through the script
runner, through `betbox settle`, and by replaying the round's event record.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from firmware.engine.profile import load_profile, profile_names
from firmware.engine.round import replay
from firmware.engine.settlement import settlement
from firmware.script import play_script, run_script

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
FILES = sorted(GOLDEN.glob("*/*.json"))


def test_every_profile_has_a_golden_round():
    assert {f.parent.name for f in FILES} == set(profile_names())


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_round_settles_as_worked_out(path):
    golden = json.loads(path.read_text())
    assert golden["script"]["profile"] == path.parent.name
    assert run_script(golden["script"]) == golden["expected"]


@pytest.mark.parametrize("path", FILES[:2], ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_round_through_the_command_line(path):
    golden = json.loads(path.read_text())
    proc = subprocess.run([sys.executable, "-m", "firmware", "settle", "-", "--json"], input=json.dumps(golden["script"]),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == golden["expected"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_round_replays_from_its_event_record(path):
    """Play the script, keep only the engine's event record, replay it: same settlement."""
    golden = json.loads(path.read_text())
    state = play_script(golden["script"])
    again, _ = replay(load_profile(path.parent.name), state.history, decks=state.decks,
                      limits={k: [lo, hi] for k, (lo, hi) in state.limits.items()}, meter=state.meter)
    assert settlement(again) == golden["expected"]
