"""Issue #19: the windowed demo says what it does and, with --rounds, closes by itself (under
xvfb-run it used to print nothing and never end)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="xvfb-run is installed by scripts/setup test")
def test_the_window_demo_says_what_it_does_and_stops_after_its_rounds():
    run = subprocess.run(["xvfb-run", "-a", sys.executable, "-m", "firmware", "demo", "--rounds", "2", "--pace", "0",
                          "--profile", "uk-4-deck"], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "box 1's seat display in a window (800x480, en)" in run.stderr
    assert "closes after 2 round(s)" in run.stderr
    assert "demo: round 2 played" in run.stderr and "round 3 played" not in run.stderr
