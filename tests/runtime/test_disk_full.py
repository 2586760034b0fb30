"""A full state partition (issue #12.7), on a real 2 MB tmpfs: the real cause is named
(SQLITE_FULL, never masked by "cannot rollback"), the pit is alarmed before it happens
(free-space threshold; the seat's screen shows ``storage_low``), a unit halts instead of
failing (it takes no input, no bet), nothing accepted is lost, and WALs stay small."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from firmware.engine.profile import load_profile
from firmware.runtime.journal import JOURNAL_NAME, Journal, JournalFull, Record
from firmware.runtime.seatview import build_seat_view
from firmware.runtime.storage import WAL_AUTOCHECKPOINT, free_bytes
from firmware.sim import chipset
from firmware.sim.driver import TableDriver
from firmware.sim.table import InProcessTable, TableSpec, seat_spots

KIB = 1024


@pytest.fixture
def small_partition(tmp_path):
    mount = tmp_path / "state"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill_to(partition: Path, free: int) -> Path:
    """Leave about ``free`` bytes free on the partition (a filler file takes the rest)."""
    filler = partition / f"filler-{len(list(partition.glob('filler-*')))}"
    with open(filler, "wb") as f:
        chunk = b"\0" * (16 * KIB)
        while free_bytes(partition) - len(chunk) >= free:
            f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        rest = free_bytes(partition) - free
        if rest > 0:
            f.write(b"\0" * rest)
    return filler


def table(state: Path, low: int, reserve: int) -> TableDriver:
    spec = TableSpec("t", load_profile("rws-blackjack"), seed=5, state_dir=state, boxes=2)
    t = InProcessTable(spec, chipset.registry(spec.boxes, len(seat_spots(spec.profile))))
    for unit in t.units:
        unit.storage_low_bytes, unit.storage_reserve_bytes = low, reserve
    d = TableDriver(t, spec.seed)
    d.boot()
    return d


def alarms(unit, code: str) -> list[dict]:
    return [a for a in unit.alarms if a["alarm"] == code]


def test_a_full_partition_is_named_not_masked(small_partition):
    j = Journal(small_partition / JOURNAL_NAME, "t/dealer", "dealer")
    fill_to(small_partition, 0)
    with pytest.raises(JournalFull, match=r"state partition full: \d+ bytes free"):
        for n in range(10_000):                    # until a page more does not fit
            j.write_step([Record("in", "console", {"button": "x" * 1000, "n": n}, round=1)])
    step = j.last_step
    assert [r.step for r in j.records()][-1] == step   # what was written is all there


def test_the_pit_is_alarmed_then_the_unit_halts_and_nothing_is_lost(small_partition):
    low, reserve = 600 * KIB, 96 * KIB
    d = table(small_partition, low, reserve)
    d.play_round()
    assert free_bytes(small_partition) > low
    assert not any(u.alarm_counts.get("storage_low") for u in d.table.units)

    fill_to(small_partition, low - 150 * KIB)    # below the threshold, above the reserve
    d.play_round()                                 # the round plays on ...
    dealer, seat = d.table.dealer, d.table.seats[1]
    assert dealer.phase == "idle" and dealer.round_no == 2
    for unit in d.table.units:                     # ... and every unit told the pit
        assert unit.alarm_counts.get("storage_low") == 1, unit.unit_id
    # the dealer holds the seats' alarms (it reports the table's to the controller)
    assert {a.get("unit") for a in dealer.alarms if a["alarm"] == "storage_low"} >= {"t/seat-1", "t/seat-2"}
    assert "storage_low" in build_seat_view(seat.facts()).conditions

    fill_to(small_partition, reserve // 2)         # now below the reserve
    steps = {u.unit_id: u.journal.last_step for u in d.table.units}
    d.table.console.press("open_bets")
    d.table.settle()
    assert dealer.halted and "state partition full" in dealer.halted
    assert dealer.phase == "idle"                  # no round opened: no bets taken
    reader = d.table.readers[1]
    reader.place_chips("main", chipset.chips_for(5, 1, 0, 0))
    d.table.cycle_readers(2)
    assert seat.halted and not seat.pending.get("main")
    assert "storage_low" in build_seat_view(seat.facts()).conditions
    assert dealer.refused_halted >= 1 and seat.refused_halted >= 1

    for filler in small_partition.glob("filler-*"):
        filler.unlink()                            # the pit frees the partition, restarts the units
    for unit in d.table.units:
        unit.journal.close()
    again = table(small_partition, low, reserve)
    assert again.table.dealer.round_no == 2 and again.table.dealer.phase == "idle"
    for unit in again.table.units:                 # every accepted step came back
        assert unit.journal.last_step >= steps[unit.unit_id]
        assert unit.halted is None
    again.play_round()
    assert again.table.dealer.round_no == 3


def test_wals_stay_small(tmp_path):
    d = table(tmp_path, 0, 0)
    for _ in range(3):
        d.play_round()
    page = 4096
    for unit in d.table.units:
        wal = Path(str(unit.journal.path) + "-wal")
        assert wal.stat().st_size <= (WAL_AUTOCHECKPOINT + 8) * (page + 24) + 32, unit.unit_id


@pytest.mark.parametrize("full", ["journal", "outbox"])
def test_a_step_or_report_that_does_not_fit_halts_the_unit_never_kills_it(small_partition, tmp_path, full):
    """No reserve: SQLite itself hits the full partition, in the journal or in the seat's
    outbox (a report made after the step; here on a partition of its own): the unit halts,
    the dispatch goes on."""
    from firmware.link.outbox import Outbox

    d = table(small_partition, 0, 0)
    seat = d.table.seats[1]
    reports = small_partition
    if full == "outbox":
        reports = tmp_path / "reports"
        reports.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(reports)], check=True)
    try:
        outbox = Outbox(reports / "seat-1" / "outbox.db", "t/seat-1")
        seat.observe(lambda s: outbox.put("betbox/unit/t/seat-1/report", "state", {"pad": "x" * 3000}))
        d.table.console.press("open_bets")
        d.table.settle()
        fill_to(reports, 0)
        for layer in range(40):                    # chips come and go until nothing fits
            d.table.readers[1].place_chips("main", chipset.chips_for(5, 1, 0, layer))
            d.table.cycle_readers(2, [1])
            if seat.halted:
                break
        assert seat.halted and "state partition full" in seat.halted
        assert ("outbox" in seat.halted) == (full == "outbox")
        assert "storage_low" in build_seat_view(seat.facts()).conditions
        outbox.close()
    finally:
        if full == "outbox":
            subprocess.run(["umount", "-l", str(reports)], capture_output=True)


def test_a_rotation_whose_old_file_cannot_be_folded_in_is_named_full_and_leaves_the_journal_whole(small_partition):
    """The new active file fits, but folding the old one's WAL into its file (it grows by
    the pages the WAL holds) does not: the rotation is not done, named as a full partition
    (the unit halts; a bare OperationalError ended its dispatch loop), nothing is lost, and
    the file is still marked open (it is)."""
    path = small_partition / JOURNAL_NAME
    j = Journal(path, "t/dealer", "dealer", rotate_rounds=3)
    for rnd in (1, 2, 3):
        for n in range(60):
            j.write_step([Record("in", "console", {"button": "x" * 3000, "n": n}, round=rnd)])
    steps = j.last_step
    filler = fill_to(small_partition, 40 * KIB)
    with pytest.raises(JournalFull, match=r"state partition full: \d+ bytes free"):
        j.rotate({"format": 2, "state": {}})
    assert not (small_partition / (JOURNAL_NAME + ".new")).exists()   # its space given back
    assert dict(j._db.execute("SELECT key, value FROM meta"))["open"] == "1"
    assert [r.step for r in j.records()][-1] == steps
    filler.unlink()
    j.write_step([Record("in", "console", {"button": "y"}, round=4)])
    assert j.rotate({"format": 2, "state": {}}) is not None            # room again: it rotates
    j.close()
    again = Journal(path, "t/dealer", "dealer")
    assert again.last_step == steps + 1 and again.checkpoint() == {"format": 2, "state": {}}
    again.close()


def test_the_thresholds_are_configured_and_checked(tmp_path):
    from firmware.config import ConfigError, load_config

    def config(journal: str) -> Path:
        path = tmp_path / "dealer.toml"
        path.write_text(f"""[unit]
role = "dealer"
id = "dealer"
table = "t1"
state_dir = "{tmp_path / 'dealer'}"
[game]
profile = "rws-blackjack"
[hardware.card_shoe]
backend = "mock"
[hardware.console]
backend = "mock"
[journal]
{journal}
""")
        return path

    c = load_config(config("storage_low = 2000000\nstorage_reserve = 100000"))
    assert (c.storage_low, c.storage_reserve) == (2_000_000, 100_000)
    with pytest.raises(ConfigError, match=r"\[journal\] storage_reserve: 200 is above storage_low"):
        load_config(config("storage_low = 100\nstorage_reserve = 200"))


def test_a_betbox_run_dealer_on_a_full_partition_alarms_halts_and_stays_up(small_partition, tmp_path):
    """A real ``betbox run`` dealer with its state on the 2 MB tmpfs: the threshold alarm
    is journalled, below the reserve it halts (logs why, takes no button) and stays up; once
    space is freed a restart replays everything it had taken."""
    import time

    from firmware.runtime.journal import open_readonly
    from tests.link.helpers import wait_until
    from tests.link.units import UnitProcess, write_toml

    state = small_partition / "dealer"
    config = write_toml(tmp_path / "dealer.toml", {
        "unit": {"role": "dealer", "id": "dealer", "table": "t1", "state_dir": str(state)},
        "game": {"profile": "rws-blackjack"},
        "hardware.card_shoe": {"backend": "mock"}, "hardware.console": {"backend": "mock"},
        "journal": {"storage_low": 900 * KIB, "storage_reserve": 300 * KIB}})

    def journal(kind: str) -> list[Record]:
        j = open_readonly(state / JOURNAL_NAME)
        try:
            return [r for r in j.records() if r.kind == kind]
        finally:
            j.close()

    unit = UnitProcess("dealer", config, tmp_path, drive=tmp_path / "console.fifo")
    try:
        wait_until(lambda: "running" in unit.output() or unit.proc.poll() is not None, 60, "the dealer's start")
        unit.send("shuffle")
        unit.send("press open_bets")
        wait_until(lambda: journal("round_open"), 30, "round 1 opened")
        fill_to(small_partition, 600 * KIB)             # below the threshold
        unit.send("press no_more_bets")
        wait_until(lambda: [r for r in journal("alarm") if "storage_low" in str(r.body)], 30, "storage_low")
        fill_to(small_partition, 100 * KIB)             # below the reserve
        unit.send("press void_round")
        wait_until(lambda: "halted" in unit.output(), 30, "the halt")
        time.sleep(1)
        assert unit.proc.poll() is None                 # up: no exit, no restart loop
        assert "state partition full" in unit.output() and "Traceback" not in unit.output()
        taken = len(list(open_readonly(state / JOURNAL_NAME).records()))
        assert unit.terminate() == 0
    finally:
        unit.kill()
    for filler in small_partition.glob("filler-*"):
        filler.unlink()
    again = UnitProcess("dealer-again", config, tmp_path, drive=tmp_path / "console2.fifo")
    try:
        wait_until(lambda: "running" in again.output() or again.proc.poll() is not None, 60, "the restart")
        assert again.proc.poll() is None, again.output()
        j = open_readonly(state / JOURNAL_NAME)
        assert len(list(j.records())) >= taken          # nothing it had taken is lost
        j.close()
    finally:
        again.terminate()
