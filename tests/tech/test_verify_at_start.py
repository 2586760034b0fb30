"""A unit whose software is not verified at start: an alarm, no bets, and its screen says so."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

from firmware.runtime.journal import open_readonly
from firmware.sim import chipset
from firmware.sim.table import InProcessTable

from .configs import seat_config, verify_section

SETTLEMENT = "lib/python3.11/site-packages/firmware/engine/settlement.py"
NOT_VERIFIED = {"verified": False, "detail": f"NOT verified: {SETTLEMENT}: changed"}


def bet(t: InProcessTable, box: int, amount: int) -> None:
    t.readers[box].place_chips("main", chipset.chips_for(Fraction(amount), box, t.spots.index("main"), 0))
    t.cycle_readers(2, [box])


def test_a_seat_not_verified_raises_an_alarm_takes_no_bets_and_shows_the_condition(table):
    t = table
    t.console.press("open_bets")
    t.settle()
    bet(t, 1, 20)
    bet(t, 2, 10)
    assert t.dealer.offers[1] == {"main": Fraction(20)}
    t.seats[1].post(("software", NOT_VERIFIED))
    t.settle()
    seat = t.seats[1]
    assert [a["alarm"] for a in seat.alarms] == ["not_verified"]
    assert seat.view.conditions == ("not_verified",)
    assert t.seats[2].view.conditions == ()
    assert t.dealer.offers.get(1, {}) == {}                  # the offer made before is withdrawn
    t.console.press("no_more_bets")
    t.settle()
    assert [b.number for b in t.dealer.round.boxes] == [2]     # box 1 has no bets in this round
    assert t.dealer.round.box(2).stakes == {"main": Fraction(10)}
    assert seat.unwagered == {"main": "not_verified"}
    assert seat.locked == {}


def test_a_verified_start_changes_nothing_and_is_not_journalled(table):
    t = table
    steps = t.seats[1].journal.path.stat().st_size
    t.seats[1].post(("software", {"verified": True, "detail": "verified: digest 00"}))
    t.settle()
    assert [a["alarm"] for a in t.seats[1].alarms] == []
    assert t.seats[1].view.conditions == ()
    assert t.seats[1].journal.path.stat().st_size == steps


def test_a_dealer_not_verified_opens_no_round(table):
    t = table
    t.dealer.post(("software", NOT_VERIFIED))
    t.settle()
    t.console.press("open_bets")
    t.settle()
    assert t.dealer.phase == "idle" and t.dealer.round_no == 0
    assert [a["alarm"] for a in t.dealer.alarms] == ["not_verified"]
    assert "software is not verified" in t.dealer.refusals[-1]["reason"]


def test_a_malformed_software_input_is_refused_by_translate(table):
    t = table
    try:
        t.seats[1].translate(("software", {"verified": "no"}))
    except ValueError as exc:
        assert "software input" in str(exc)
    else:
        raise AssertionError("a malformed software input was taken")


def _seat_config(tmp_path: Path, tree: Path, keyring: Path) -> Path:
    return seat_config(tmp_path, verify=verify_section(tree, keyring))


def _run_until(config: Path, line: str, tmp_path: Path) -> str:
    """A real ``betbox run``: wait for ``line`` on stderr, then stop it with SIGTERM."""
    err = tmp_path / "stderr.txt"
    with open(err, "w") as f:
        proc = subprocess.Popen([sys.executable, "-m", "firmware", "run", "--config", str(config)],
                                stderr=f, stdout=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[2])
    try:
        deadline = time.monotonic() + 60
        while line not in err.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    return err.read_text()


def test_betbox_run_with_a_tampered_release_journals_the_alarm(tmp_path, release, signing):
    (release / SETTLEMENT).write_text("PAYS = {'blackjack': (6, 5)}\n")
    config = _seat_config(tmp_path, release, signing / "ca.pem")
    out = _run_until(config, " running", tmp_path)
    assert f"software NOT verified: {SETTLEMENT}: changed" in out, out
    j = open_readonly(tmp_path / "state" / "journal.db")
    try:
        records = list(j.records())
    finally:
        j.close()
    ins = [r for r in records if r.dir == "in" and r.kind == "software"]
    assert len(ins) == 1 and ins[0].body["verified"] is False
    alarms = [r.body["body"] for r in records if r.dir == "out" and r.kind == "alarm"]
    assert [a["alarm"] for a in alarms] == ["not_verified"]


def test_betbox_run_with_the_signed_release_starts_clean(tmp_path, release, signing):
    config = _seat_config(tmp_path, release, signing / "ca.pem")
    out = _run_until(config, " running", tmp_path)
    assert "software verified: digest" in out, out
    assert os.path.exists(tmp_path / "state" / "journal.db")
