"""Journals written by an older firmware still recover (issue #15: "journals written before
the change still recover"). ``fixtures/format3`` is a table's state directory written by the
firmware of checkpoint format 3 (``fixtures/make_format3.py``): each journal holds a rotated
checkpoint (after round 2) and round 3 after it; ``live.json`` is what each unit's state was
when it stopped."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from firmware.engine.profile import load_profile
from firmware.runtime.journal import JOURNAL_NAME
from firmware.sim import chipset
from firmware.sim.driver import TableDriver
from firmware.sim.table import InProcessTable, TableSpec, seat_spots

FIXTURE = Path(__file__).parent / "fixtures" / "format3"


def _table(state: Path) -> InProcessTable:
    spec = TableSpec("t", load_profile("rws-blackjack-switch"), seed=33, state_dir=state, boxes=2)
    return InProcessTable(spec, chipset.registry(spec.boxes, len(seat_spots(spec.profile))))


def _stored_format(state: Path, unit: str) -> int:
    db = sqlite3.connect(state / unit / JOURNAL_NAME)
    try:
        return json.loads(db.execute("SELECT value FROM meta WHERE key = 'checkpoint'").fetchone()[0])["format"]
    finally:
        db.close()


def test_a_table_journalled_by_the_format_3_firmware_recovers_to_the_state_it_had_and_plays_on(tmp_path):
    state = tmp_path / "state"
    shutil.copytree(FIXTURE, state)
    live = json.loads((FIXTURE / "live.json").read_text())
    assert {_stored_format(state, d.name) for d in state.iterdir() if d.is_dir()} == {3}

    table = _table(state)
    twin = _table(tmp_path / "twin")         # the same units, state taken from the live checkpoints
    try:
        for unit, same in zip(table.units, twin.units, strict=True):
            assert unit.recover() > 0        # the checkpoint (format 3), then round 3's steps
            same.restore(live[same.unit_id])
            assert unit.checkpoint() == same.checkpoint(), unit.unit_id
            # format 4 keeps format 3's layout: the state reads back as it was written; format
            # 5 adds the dealer's pit calls (none in force in an older checkpoint); format 6 the
            # pit's reconciled commands (none passed on, none taken)
            added = ({"pit_calls": {}, "reconciling": {}, "stream_claims": {}} if unit.role == "dealer"
                         else {"reconciled_seq": 0})
            assert same.checkpoint()["state"] == live[same.unit_id]["state"] | added, unit.unit_id
            assert unit.round_no == 3
        assert table.dealer.phase == "idle" and {s.phase for s in table.seats.values()} == {"over"}
    finally:
        twin.close()
    driver = TableDriver(table, 33)
    driver.boot()
    driver.play_round()
    assert table.dealer.round_no == 4
    assert not [a for u in table.units for a in u.alarms if a["alarm"] == "integrity"]
    played = [seat for seat in table.seats.values() if str(seat.box) in table.dealer.results[4]["boxes"]]
    assert played and all(seat.own_result == seat.dealer_result is not None for seat in played)
    table.close()
