"""The image's first-boot health check (image/rauc/health-check): a healthy unit marks its
slot good; an unhealthy one marks it bad only on its one try after an update, never the
slot that was good before (on a freshly flashed card the other slot is empty)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_check(tmp_path: Path, healthy: bool, state: str) -> tuple[int, str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "betbox").write_text(f"#!/bin/sh\nexit {0 if healthy else 1}\n")
    (bin_dir / "rauc").write_text(f"#!/bin/sh\necho \"$*\" >> {tmp_path / 'rauc.log'}\n")
    for tool in ("betbox", "rauc"):
        (bin_dir / tool).chmod(0o755)
    (tmp_path / "appslot.env").write_text(f"primary=B\nstate_A=good\nstate_B={state}\n")
    (tmp_path / "booted.env").write_text("BETBOX_SLOT=B\n")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", BETBOX=str(bin_dir / "betbox"),
               BETBOX_BOOTENV=str(tmp_path / "appslot.env"), BETBOX_BOOTED=str(tmp_path / "booted.env"))
    done = subprocess.run([str(ROOT / "image/rauc/health-check"), "seat"], env=env, capture_output=True, text=True,
                          timeout=30)
    log = tmp_path / "rauc.log"
    return done.returncode, log.read_text().strip() if log.exists() else "", done.stderr


@pytest.mark.parametrize("state", ["trying", "good"])
def test_a_healthy_unit_marks_its_slot_good(tmp_path, state):
    assert run_check(tmp_path, True, state)[:2] == (0, "status mark-good")


def test_an_unhealthy_first_try_is_marked_bad(tmp_path):
    rc, rauc, said = run_check(tmp_path, False, "trying")
    assert (rc, rauc) == (1, "status mark-bad") and "next boot runs the other slot" in said


def test_an_unhealthy_slot_that_was_good_is_not_marked_bad(tmp_path):
    rc, rauc, said = run_check(tmp_path, False, "good")
    assert (rc, rauc) == (1, "") and "stays" in said
