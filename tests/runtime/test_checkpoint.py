"""Journal checkpoints as versioned JSON (never a pickle): a rotated, restarted unit has
exactly the live unit's state; a checkpoint that cannot be read stops the unit with an error
naming the file and what is wrong. Bounded logs with running counts."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from firmware import __version__
from firmware.engine.profile import load_profile
from firmware.runtime.journal import JOURNAL_NAME, CheckpointError, open_readonly
from firmware.runtime.unit import CHECKPOINT_FORMAT, KEEP_RECENT, Recent
from firmware.sim import chipset
from firmware.sim.driver import TableDriver
from firmware.sim.table import InProcessTable, TableSpec, seat_spots

PROFILE = "rws-blackjack-switch"


def driver(state_dir: Path, rotate: int | None = None, profile: str = PROFILE,
           boot: bool = True) -> TableDriver:
    spec = TableSpec("t", load_profile(profile), seed=33, state_dir=state_dir)
    table = InProcessTable(spec, chipset.registry(spec.boxes, len(seat_spots(spec.profile))))
    for unit in table.units:
        unit.journal.rotate_rounds = rotate
    d = TableDriver(table, spec.seed)
    if boot:
        d.boot()
    return d


def play(d: TableDriver, rounds: int) -> None:
    for _ in range(rounds):
        d.play_round()


def stored_checkpoint(state_dir: Path, unit: str) -> str:
    db = sqlite3.connect(state_dir / unit / JOURNAL_NAME)
    try:
        return db.execute("SELECT value FROM meta WHERE key = 'checkpoint'").fetchone()[0]
    finally:
        db.close()


def set_checkpoint(state_dir: Path, unit: str, text: str) -> None:
    db = sqlite3.connect(state_dir / unit / JOURNAL_NAME)
    try:
        with db:
            db.execute("UPDATE meta SET value = ? WHERE key = 'checkpoint'", (text,))
    finally:
        db.close()


def stream_after(state_dir: Path, round_no: int) -> list[tuple[str, str]]:
    j = open_readonly(state_dir / "dealer" / JOURNAL_NAME)
    try:
        return [(r.kind, json.dumps({k: v for k, v in r.body["body"].items() if k != "stream_seq"},
                                    sort_keys=True))
                for r in j.history() if r.dir == "out" and r.body["topic"].endswith("/stream")
                and r.kind != "dealer_boot" and (r.round or 0) > round_no]
    finally:
        j.close()


@pytest.mark.parametrize("profile", ["rws-blackjack-switch", "rws-perfect-pairs"])
def test_a_restored_unit_is_the_live_unit_and_plays_on_as_a_never_rotated_twin(tmp_path, profile):
    twin = driver(tmp_path / "twin", profile=profile)
    play(twin, 10)
    d = driver(tmp_path / "rot", rotate=3, profile=profile)
    play(d, 7)                                    # rotated after rounds 3 and 6
    live = {u.unit_id: u.checkpoint() for u in d.table.units}
    views = {box: seat.view for box, seat in d.table.seats.items()}
    d.table.close()                                # a power cut between rounds
    assert json.loads(stored_checkpoint(tmp_path / "rot", "dealer"))["format"] == CHECKPOINT_FORMAT

    again = driver(tmp_path / "rot", rotate=3, profile=profile, boot=False)
    for unit in again.table.units:
        assert unit.journal.checkpoint() is not None
        unit.recover()                             # restore the checkpoint, replay round 7
        assert unit.checkpoint() == live[unit.unit_id], unit.unit_id
    for box, seat in again.table.seats.items():
        # the screen shows what it showed (alarm_mark: the view's own bookkeeping)
        assert replace(seat.view, alarm_mark=0) == replace(views[box], alarm_mark=0), box
    again.table.close()
    again = driver(tmp_path / "rot", rotate=3, profile=profile)
    play(again, 3)
    again.table.close()
    twin.table.close()
    assert stream_after(tmp_path / "rot", 7) == stream_after(tmp_path / "twin", 7)
    for box, seat in again.table.seats.items():
        assert replace(seat.view, alarm_mark=0) == replace(twin.table.seats[box].view, alarm_mark=0), box


def test_the_checkpoint_is_plain_versioned_json(tmp_path):
    d = driver(tmp_path, rotate=2)
    play(d, 2)
    d.table.close()
    for unit in ("dealer", "seat-1"):
        data = json.loads(stored_checkpoint(tmp_path, unit))
        assert data["format"] == CHECKPOINT_FORMAT and data["firmware"] == __version__
        assert data["unit"] == f"t/{unit}" and isinstance(data["state"], dict)
    seat = json.loads(stored_checkpoint(tmp_path, "seat-1"))["state"]
    assert seat["round"]["events"][0]["type"] == "bets_closed"   # the round as its events


def _restart_error(tmp_path: Path, unit: str, text: str) -> str:
    set_checkpoint(tmp_path, unit, text)
    with pytest.raises(CheckpointError) as err:
        driver(tmp_path, rotate=2)
    message = str(err.value)
    assert str(tmp_path / unit / JOURNAL_NAME) in message       # names the file
    return message


@pytest.fixture
def rotated(tmp_path) -> Path:
    d = driver(tmp_path, rotate=2)
    play(d, 3)
    d.table.close()
    return tmp_path


def test_a_checkpoint_that_is_not_json_is_a_clear_error(rotated):
    import base64
    import pickle
    old = base64.b64encode(pickle.dumps({"state": {}})).decode()  # what older firmware wrote
    assert "not JSON" in _restart_error(rotated, "dealer", old)


def test_an_unknown_checkpoint_format_is_a_clear_error(rotated):
    data = json.loads(stored_checkpoint(rotated, "seat-2"))
    data["format"], data["firmware"] = 99, "9.9.9"
    message = _restart_error(rotated, "seat-2", json.dumps(data))
    assert "format 99" in message and "9.9.9" in message and f"reads format {CHECKPOINT_FORMAT}" in message


@pytest.mark.parametrize("damage, expected", [
    (lambda s: s.pop("phase"), "missing ['phase']"),
    (lambda s: s.update(extra=1), "unknown ['extra']"),
    (lambda s: s.update(stream_seq="12"), "'stream_seq': expected a whole number"),
    (lambda s: s["round"]["events"].append({"type": "card", "card": "ZZ"}), "'round'"),
    (lambda s: s["round"]["events"].insert(1, {"type": "card", "card": "AS"}), "'round'"),
    (lambda s: s.update(meter=0.5), "'meter': an amount is kept as a string"),
    # Fraction("1e999999999") is exact: a number of a billion digits (the start hung on it)
    (lambda s: s.update(meter="1e999999999"), "'meter': an amount is kept as a string like '15/2', not '1e999999999'"),
    (lambda s: s.update(meter="lots"), "'meter': an amount is kept as a string like '15/2', not 'lots'"),
])
def test_a_damaged_checkpoint_names_what_is_wrong(rotated, damage, expected):
    data = json.loads(stored_checkpoint(rotated, "dealer"))
    damage(data["state"])
    assert expected in _restart_error(rotated, "dealer", json.dumps(data))


def test_restore_is_all_or_nothing(tmp_path):
    d = driver(tmp_path)
    play(d, 2)
    seat = d.table.seats[1]
    before = seat.checkpoint()
    bad = json.loads(json.dumps(before))
    bad["state"]["round_no"] = 99
    bad["state"]["last_stream"] = "x"               # read after round_no: nothing is taken
    with pytest.raises(CheckpointError, match="'last_stream'"):
        seat.restore(bad, source="test")
    assert seat.checkpoint() == before
    other = d.table.seats[2].checkpoint()
    with pytest.raises(CheckpointError, match="not seat 't/seat-1'"):
        seat.restore(other, source="test")
    d.table.close()


# -- bounded logs --------------------------------------------------------------------

def test_recent_keeps_the_newest_and_numbers_them_all():
    log = Recent(3)
    for n in range(5):
        log.append(n)
    assert len(log) == 5 and list(log) == [2, 3, 4] and log.first == 2
    assert log[4] == 4 and log[-1] == 4 and log[2] == 2
    assert log[3:] == [3, 4] and log[0:] == [2, 3, 4] and log[-8:] == [2, 3, 4]
    with pytest.raises(IndexError, match="not kept"):
        log[1]
    assert Recent.from_json(log.to_json(), keep=3) == log
    with pytest.raises(ValueError, match="cannot have recorded"):
        Recent.from_json({"total": 1, "kept": [1, 2]})


def test_a_seat_keeps_its_newest_alarms_with_their_round_and_counts_them_all(tmp_path):
    d = driver(tmp_path)
    play(d, 1)
    t = d.table
    reader, seat = t.readers[4], t.seats[4]
    before = len(seat.alarms)
    extra = KEEP_RECENT + 30
    for n in range(extra):                            # unknown chips, one at a time
        reader.place_chips("main", [f"BAD0{n:04d}"])
        t.cycle_readers(boxes=[4])
        reader.remove_chips("main")
        t.cycle_readers(boxes=[4])
    t.settle()
    assert len(seat.alarms) == before + extra         # the running count
    kept = list(seat.alarms)
    assert len(kept) == KEEP_RECENT and kept[-1]["uid"] == f"BAD0{extra - 1:04d}"
    assert all(a["round"] == seat.round_no == 1 for a in kept)
    assert seat.alarm_counts["unknown_chip"] >= extra
    assert len(json.dumps(seat.checkpoint())) < 200_000      # the checkpoint stays bounded
    assert d.summary().alarms["unknown_chip"] == sum(u.alarm_counts.get("unknown_chip", 0)
                                                      for u in t.units)
    t.close()
