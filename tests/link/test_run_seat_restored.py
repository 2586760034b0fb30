"""A seat restarted from an older copy of its state directory (an SD card that lied about
a flush, a restore), as `betbox run` processes on a real mosquitto: it finds the jackpot
controller's confirmed mark past everything its outbox numbered, raises an alarm naming
itself, the seqs and what to do, refuses bets, and loses no report (issue #11.5: it reused
seqs, the controller rejected them as ``seq_reused`` and the mark then made the outbox
delete them as confirmed). Then the pit's ``betbox pit reconciled`` clears it: the outbox's
mark goes (a restart does not flag it again) and it plays again. (Its older copy here held
no report under the mark: every one was confirmed before the copy; the move of held reports
to ``set_aside`` is tests/runtime/test_reconciled_outbox.py's.)"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import subprocess
import sys

import pytest

from firmware.engine.profile import load_profile
from firmware.jackpot.store import connect
from firmware.link.topics import confirmed_topic
from firmware.runtime.spots import seat_spots
from firmware.sim.shoe import SimShoe

from .helpers import Sniffer, unit_outbox, wait_until
from .test_run_seat_missed_round import finish_round
from .test_run_units import TABLE, status
from .units import ROOT, Devices, TableWatch, UnitProcess, dealer_config, jackpot_config, play_round, seat_config

pytestmark = pytest.mark.slow          # kills processes and waits out their restart

UNIT = f"{TABLE}/seat-1"


def booked_ids(db_path) -> set[str]:
    db = connect(db_path, readonly=True)
    try:
        return {i for (i,) in db.execute("SELECT id FROM event WHERE unit = ?", (UNIT,))}
    finally:
        db.close()


def outbox_rows(state_dir) -> tuple[set[str], dict | None]:
    path, meta = unit_outbox(state_dir)
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        ids = {i for (i,) in db.execute("SELECT id FROM outbox")}
        row = db.execute(f"SELECT value FROM {meta} WHERE key = 'behind'").fetchone()
        return ids, None if row is None else json.loads(row[0])
    finally:
        db.close()


def kept_rows(state_dir) -> dict[str, dict]:
    """The reports a reconciliation kept aside (the outbox's ``set_aside`` table), by id."""
    path, _ = unit_outbox(state_dir)
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {i: json.loads(p) for i, p in db.execute("SELECT id, payload FROM set_aside")}
    finally:
        db.close()


def test_a_seat_restored_from_an_older_copy_alarms_refuses_bets_and_loses_no_report(broker, tmp_path):
    profile = load_profile("rws-blackjack-switch")
    link_id = "run-restored"
    devices = Devices(seat_spots(profile))
    sniffer = Sniffer(broker.url)
    seat_status = f"betbox/v1/unit/{UNIT}/status"
    mark_topic = confirmed_topic(link_id, UNIT)
    db_path = tmp_path / "jackpot" / "jackpot.db"
    state = tmp_path / "seat-1"
    procs: list[UnitProcess] = []

    def mark() -> int:
        marks = [json.loads(p)["through_seq"] for t, p, _ in list(sniffer.messages) if t == mark_topic and p]
        return marks[-1] if marks else 0

    def seat_up(name: str) -> UnitProcess:
        p = UnitProcess(name, seat_toml, tmp_path)
        procs.append(p)
        wait_until(lambda: status(sniffer, seat_status) == "online" or p.proc.poll() is not None, 60,
                   f"{name} online")
        assert p.proc.poll() is None, p.output()
        return p

    try:
        jackpot = UnitProcess("jackpot", jackpot_config(tmp_path, broker.url, link_id), tmp_path)
        dealer = UnitProcess("dealer", dealer_config(tmp_path, broker.url, TABLE, profile,
                                                     devices.shoe.transport.path, link_id),
                             tmp_path, drive=tmp_path / "console.fifo")
        procs = [jackpot, dealer]
        seat_toml = seat_config(tmp_path, broker.url, TABLE, 1, profile, devices.reader.transport.path, link_id)
        seat = seat_up("seat-1")
        watch = TableWatch(sniffer, TABLE, {profile.name: profile})
        cards = iter(SimShoe(6, random.Random(23)).cards)
        bets = {"main": ["0A01", "0A02"], "progressive": ["0B01"]}
        play_round(watch, dealer, devices, cards, bets, box=1)
        wait_until(lambda: mark() >= 2, 30, "the controller's mark for round 1's reports")
        assert seat.terminate() == 0
        old = tmp_path / "seat-1.old"
        shutil.copytree(state, old)                          # the copy that will come back
        old_mark = mark()

        seat = seat_up("seat-1-b")
        for _ in range(2):
            play_round(watch, dealer, devices, cards, bets, box=1)
        wait_until(lambda: mark() >= old_mark + 4, 30, "the controller's mark for rounds 2 and 3")
        assert seat.terminate() == 0
        confirmed = mark()
        before = booked_ids(db_path)

        shutil.rmtree(state)
        shutil.copytree(old, state)                          # restarted from the older copy
        seat = seat_up("seat-1-restored")

        def alarm():
            found = [r for r in sniffer.json("/report") if r["unit"] == UNIT and r["kind"] == "alarm"
                     and r["body"]["alarm"] == "behind_confirmed" and "controller" in r["body"]["detail"]]
            return found[0] if found else None

        report = wait_until(alarm, 30, "the seat's behind_confirmed alarm")
        detail = report["body"]["detail"]
        assert UNIT in detail and f"seq {confirmed}" in detail and "Restore" in detail, detail
        assert report["seq"] > confirmed                     # numbered after the mark: not reused
        wait_until(lambda: report["id"] in booked_ids(db_path), 30, "the alarm booked by the controller")

        # bets refused: the seat offers nothing, whatever is on its spots
        watch.update()
        rnd = watch.round_no + 1
        dealer.send("press open_bets")
        wait_until(lambda: watch.update() is not None and watch.round_no == rnd, 30, "the next round opened")

        def offers() -> list:
            devices.reader.cycle(1)
            return [m["body"]["bets"] for m in watch.messages("/seat/1/up")
                    if m["kind"] == "offer" and m["body"]["round"] == rnd]
        wait_until(offers, 30, "the restored seat's offer", step=0.1)
        for _ in range(5):
            assert all(not b for b in offers())
        dealer.send("press no_more_bets")
        watch.wait_event(0, "bets closed")
        assert 1 not in {b.number for b in watch.round.boxes}
        finish_round(watch, dealer, devices, cards, rnd)

        # no report lost: what the controller held is still held, and every report the
        # restored seat sent is booked or still in its outbox
        sent = {r["id"] for r in sniffer.json("/report") if r["unit"] == UNIT}
        assert seat.terminate() == 0
        booked = booked_ids(db_path)
        kept, behind = outbox_rows(state)
        assert before <= booked
        assert sent <= booked | kept, sent - booked - kept
        assert behind is not None and behind["confirmed"] == confirmed

        # the pit, once a supervisor has reconciled it (docs/technician.md §10), clears it:
        # the outbox's mark goes, what it held under the mark is kept aside, bets are taken
        def behind_alarms() -> int:
            return len([r for r in sniffer.json("/report") if r["unit"] == UNIT and r["kind"] == "alarm"
                        and r["body"]["alarm"] == "behind_confirmed"])
        raised = behind_alarms()          # (the dealer's heard and the controller's mark: each its own)
        seat = seat_up("seat-1-reconciled")
        cleared = subprocess.run([sys.executable, "-m", "firmware", "pit", "reconciled", "--box", "1", "--by", "Ann",
                                  "--broker", broker.url, "--table", TABLE, "--password-file", "-",
                                  "--timeout", "10", "--allow-insecure"],
                                 input="pw\n", cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert cleared.returncode == 0 and f"{UNIT}: reconciled" in cleared.stdout, cleared
        wait_until(lambda: [r for r in sniffer.json("/report") if r["unit"] == UNIT and r["kind"] == "alarm"
                            and r["body"]["alarm"] == "reconciled" and "Ann" in r["body"]["detail"]],
                   30, "the seat's reconciled alarm at the controller")
        settled = play_round(watch, dealer, devices, cards, bets, box=1)
        assert "1" in settled["boxes"], settled                       # its wagers taken again
        assert seat.terminate() == 0
        waiting, behind = outbox_rows(state)
        assert behind is None
        aside = kept_rows(state)
        assert kept <= waiting | set(aside)                           # nothing it held is lost
        assert all(r["seq"] <= confirmed for r in aside.values())     # those under the mark, aside
        # started again (its journal replayed, its outbox read): not behind, it plays
        seat = seat_up("seat-1-after")
        play_round(watch, dealer, devices, cards, bets, box=1)
        assert seat.terminate() == 0
        assert behind_alarms() == raised
        assert [p.terminate() for p in (dealer, jackpot)] == [0, 0]
    finally:
        for p in procs:
            p.kill()
        sniffer.close()
        devices.close()
