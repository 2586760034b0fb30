"""The service screen's chip reader rows per antenna (issue 14.6): the raw reads of each
antenna as the HAL's reader reports them (antenna number and the spot above it), before the
seat's debouncer, live; a real seat unit on an in-process table with the HAL's mock reader."""

from __future__ import annotations

from hal.events import InventoryCycle
from hal.protocol.rfid import CycleEnd, InventoryAssembler, Tags
from ui.antennas import AntennaReads
from ui.service import service_sections

from .helpers import Table


def rows(tap: AntennaReads) -> dict[str, str]:
    return dict(tap.rows())


def test_the_serial_readers_cycle_names_each_spots_antenna():
    spots = ["main", "perfect_pairs"]
    asm = InventoryAssembler("reader-1", spots)
    asm.handle(Tags(7, 1, (bytes.fromhex("04A1B2C3"),)))
    [cycle] = asm.handle(CycleEnd(7, 1))
    assert isinstance(cycle, InventoryCycle)
    assert [(r.antenna, r.spot, sorted(r.uids)) for r in cycle.reads] == [
        (0, "main", []), (1, "perfect_pairs", ["04A1B2C3"])]


def test_raw_reads_per_antenna_are_shown_live_before_the_debouncer(tmp_path):
    t = Table(tmp_path)
    try:
        seat = t.seat(1)
        tap = AntennaReads.attach(seat)
        assert AntennaReads.attach(seat) is tap             # one tap per seat
        assert rows(tap) == {"antennas": "no inventory cycle read yet"}
        t.open()
        t.bet(1, "perfect_pairs", 5)
        uids = sorted(t.table.readers[1].chips_on("perfect_pairs"))
        r = rows(tap)
        assert r["antenna 0 (main)"].startswith("0 tags")
        pp = f"antenna {t.spots.index('perfect_pairs')} (perfect_pairs)"     # the reader's antenna 2
        assert r[pp] == f"1 tag: {uids[0]} · tags in 2 of the last 5 cycles"
        # a phantom tag read once: the antenna shows it, the debounced seat does not take it
        t.table.readers[1].phantom("main", "04FFFFFFFFFFFF")
        t.table.cycle_readers(1, [1])
        assert "04FFFFFFFFFFFF" in rows(tap)["antenna 0 (main)"]
        assert "04FFFFFFFFFFFF" not in seat.present["main"]
        t.table.cycle_readers(1, [1])
        assert rows(tap)["antenna 0 (main)"].startswith("0 tags")
        assert "tags in 1 of the last" in rows(tap)["antenna 0 (main)"]
        # a fault on an antenna and on the reader itself
        t.table.readers[1].fault("antenna_open", "perfect_pairs")
        t.table.readers[1].fault("rf_error")
        t.table.settle()
        r = rows(tap)
        assert r[pp].endswith("last fault antenna_open")
        assert r["reader"] == "last fault rf_error"
        # and the service screen carries them in their own section
        sections = {s.heading: dict(s.rows) for s in service_sections(seat, antennas=tap)}
        live = sections["Chip reader antennas (live, raw reads)"]
        assert live[pp] == r[pp]
    finally:
        t.close()


def test_a_seat_without_a_tap_says_so_on_the_service_screen(tmp_path):
    t = Table(tmp_path)
    try:
        sections = {s.heading: dict(s.rows) for s in service_sections(t.seat(1))}
        assert sections["Chip reader antennas (live, raw reads)"] == {"antennas": "not available"}
    finally:
        t.close()
