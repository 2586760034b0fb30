"""The systemd unit files: ``systemd-analyze verify`` clean, and hardened (exposure score)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNITS = sorted((Path(__file__).resolve().parents[2] / "systemd").glob("*.service"))
ANALYZE = shutil.which("systemd-analyze")
pytestmark = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed (Debian: systemd)")
MAX_EXPOSURE = 2.0          # systemd-analyze security: 0 (locked down) .. 10 (exposed)


def installed_copy(unit: Path, tmp_path: Path) -> Path:
    """The unit as on the image, with ``betbox`` where this checkout has it (verify checks
    that every command exists and is executable)."""
    betbox = Path(sys.executable).with_name("betbox")
    copy = tmp_path / unit.name
    copy.write_text(unit.read_text().replace("/usr/local/bin/betbox", str(betbox)))
    return copy


def test_there_is_a_unit_per_role_and_the_provisioning_unit():
    assert [u.name for u in UNITS] == ["betbox-dealer.service", "betbox-jackpot.service",
                                       "betbox-provision.service", "betbox-seat.service"]


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_systemd_analyze_verify_is_clean(unit, tmp_path):
    done = subprocess.run([ANALYZE, "verify", str(installed_copy(unit, tmp_path))], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr


@pytest.mark.parametrize("role", ["dealer", "seat"])
def test_units_with_a_dispatch_loop_are_notify_with_a_watchdog(role):
    text = (UNITS[0].parent / f"betbox-{role}.service").read_text()
    assert "\nType=notify\n" in text and re.search(r"\nWatchdogSec=\d+\n", text)


@pytest.mark.parametrize("unit", [u for u in UNITS if u.name != "betbox-provision.service"], ids=lambda u: u.name)
def test_exposure_score(unit, tmp_path):
    done = subprocess.run([ANALYZE, "security", "--offline=yes", str(installed_copy(unit, tmp_path))],
                          capture_output=True, text=True, timeout=120)
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d)", done.stdout)
    assert found, done.stdout[-500:] + done.stderr
    assert float(found.group(1)) <= MAX_EXPOSURE, done.stdout


IMAGE_UNITS = Path(__file__).resolve().parents[2] / "image" / "systemd"


def test_the_images_slot_and_health_units_verify_clean(tmp_path):
    """betbox-appslot (mount the booted RAUC slot) and betbox-health (mark it good or bad), as
    customize.sh installs them for a seat; the state partition's mount as fstab makes it."""
    (tmp_path / "var-lib-betbox.mount").write_text("[Mount]\nWhat=LABEL=state\nWhere=/var/lib/betbox\nType=ext4\n")
    slot = (IMAGE_UNITS / "betbox-appslot.service").read_text()
    (tmp_path / "betbox-appslot.service").write_text(
        slot.replace("/usr/lib/betbox/appslot-mount", str(IMAGE_UNITS.parent / "rauc/appslot-mount")))
    (tmp_path / "betbox-health.service").write_text(
        (IMAGE_UNITS / "betbox-health.service").read_text().replace("@ROLE@", "seat")
        .replace("/usr/lib/betbox/health-check", str(IMAGE_UNITS.parent / "rauc/health-check")))
    done = subprocess.run([ANALYZE, "verify", str(tmp_path / "betbox-appslot.service"),
                           str(tmp_path / "betbox-health.service")], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr
