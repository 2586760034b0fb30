"""Issue #13.7: the seat's service menu shows what ``betbox diag`` prints: the same checks,
statuses and verdict, in a real Kivy window under Xvfb, next to a real mosquitto; a tampered
release shows as a failed verification there too."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from firmware.config import load_config
from firmware.diag import FAIL, SKIP, LiveDiag, check_ports, live_checks, run_checks
from tests.link.broker import Broker
from tests.tech.configs import seat_config, verify_section

ROOT = Path(__file__).resolve().parents[2]
XVFB = shutil.which("xvfb-run")


def config(tmp_path: Path, release: Path, keyring: Path, broker: Broker) -> Path:
    return seat_config(tmp_path, link=f'[link]\nbroker = "{broker.url}"', state=tmp_path / "state/seat-1",
                       verify=verify_section(release, keyring))


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path / "mosquitto").start()
    yield b
    b.stop()


def test_live_checks_are_diags_checks_without_opening_the_ports(tmp_path, release, signing, broker):
    cfg = load_config(config(tmp_path, release, signing / "ca.pem", broker))
    full = [(c.name, c.status) for c in run_checks(cfg, wait=0.5)]
    live = [(c.name, c.status) for c in live_checks(cfg, wait=0.5)]
    ports = list(check_ports(cfg, 0.5))
    assert ports and ("ports", SKIP) in live
    assert [c for c in live if c[0] != "ports"] == [c for c in full if c not in [(p.name, p.status) for p in ports]]
    assert ("verify", "ok") in live and ("broker", "ok") in live


def test_a_run_that_raises_is_a_failed_check_on_the_screen():
    def broken():
        raise OSError("state partition gone")
    diag = LiveDiag(broken)
    done = []
    assert diag.start(lambda: done.append(1))
    while not done:
        time.sleep(0.01)
    assert [(c.name, c.status) for c in diag.results] == [("diagnostics", FAIL)]
    assert "state partition gone" in diag.results[0].detail


@pytest.mark.skipif(XVFB is None, reason="xvfb-run is installed by scripts/setup test")
@pytest.mark.parametrize("tampered", [False, True])
def test_the_service_screen_shows_diags_lines(tmp_path, release, signing, broker, tampered):
    if tampered:
        settlement = release / "lib/python3.11/site-packages/firmware/engine/settlement.py"
        settlement.write_text("PAYS = {'blackjack': (2, 1)}\n")
    path = config(tmp_path, release, signing / "ca.pem", broker)
    out = tmp_path / "service.json"
    env = dict(os.environ, KIVY_NO_ARGS="1", KIVY_NO_CONSOLELOG="1", KIVY_HOME=str(tmp_path / "kivy"))
    run = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1024x768x24", sys.executable, "-m",
                          "tests.tech.service_window", str(path), str(out)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    screen = json.loads(out.read_text())
    shown = screen[screen.index("Diagnostics (betbox diag)") + 1:]       # the section's rows
    # what betbox diag prints for the same unit, check by check (the ports aside: the unit holds them)
    diag = subprocess.run([sys.executable, "-m", "firmware", "diag", "--config", str(path), "--json", "--wait", "0.5"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    printed = json.loads(diag.stdout)
    for c in printed["checks"]:
        if c["name"] in ("broker", "controller", "clock", "storage", "verify", "journal", "outbox", "firmware"):
            row = next((x for x in shown if x.startswith(f"{c['name']}: ")), None)
            assert row is not None and row.startswith(f"{c['name']}: {c['status'].upper()} "), (c, shown)
    verify_row = next(x for x in shown if x.startswith("verify: "))
    if tampered:
        assert "FAIL" in verify_row and "settlement.py: changed" in verify_row
        assert any(x.startswith("verdict: FAIL") and "verify" in x for x in shown), shown
    else:
        assert verify_row.startswith("verify: OK")
