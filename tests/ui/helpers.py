"""A small in-process table to take seat snapshots from (no Kivy)."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from pathlib import Path

from firmware.chips import Chip, ChipRegistry, ChipStatus
from firmware.engine.profile import load_profile
from firmware.sim import chipset
from firmware.sim.table import InProcessTable, TableSpec, seat_spots
from ui.source import ControllerFeed, SeatSource

LIMITS = {"main": (Fraction(10), Fraction(500))}
BARRED_UID = "BADC0FFEE1"


def registry(boxes: int, spots: int) -> ChipRegistry:
    """The demo's chips plus one barred 25 chip (``BARRED_UID``)."""
    chips = list(chipset.registry(boxes, spots)._chips.values())
    return ChipRegistry([*chips, Chip(BARRED_UID, Decimal(25), ChipStatus.BARRED)])


class Table:
    """One dealer, ``boxes`` seats; chips and cards by hand; seat 1 watched by a source."""

    def __init__(self, tmp: Path, profile: str = "rws-perfect-pairs", boxes: int = 2,
                 limits=LIMITS, controller: ControllerFeed | None = None, meter=None) -> None:
        self.profile = load_profile(profile)
        self.spots = list(seat_spots(self.profile))
        spec = TableSpec("t1", self.profile, 1, tmp, boxes=boxes, limits=limits)
        self.table = InProcessTable(spec, registry(boxes, len(self.spots)))
        if meter is not None:
            self.table.dealer.meter = Fraction(meter)
        self.controller = controller or ControllerFeed()
        self.source = SeatSource(self.table.seats[1], self.controller)
        self.table.boot()
        self._layer = 0

    def snap(self):
        return self.source.snapshot()

    def press(self, button: str) -> None:
        self.table.console.press(button)
        self.table.settle()

    def open(self) -> None:
        for reader in self.table.readers.values():
            for spot in reader.spots:
                reader.remove_chips(spot)
        self.table.cycle_readers(3)
        self.press("open_bets")

    def bet(self, box: int, spot: str, amount, layer: int = 0) -> None:
        uids = chipset.chips_for(Fraction(amount), box, self.spots.index(spot), layer)
        self.table.readers[box].place_chips(spot, uids)
        self.table.cycle_readers(2, [box])

    def unknown_chip(self, box: int, spot: str) -> None:
        self.table.readers[box].place_chips(spot, [chipset.unknown_uid(box, self.spots.index(spot))])
        self.table.cycle_readers(2, [box])

    def barred_chip(self, box: int, spot: str) -> None:
        self.table.readers[box].place_chips(spot, [BARRED_UID])
        self.table.cycle_readers(2, [box])

    def seat(self, box: int = 1):
        return self.table.seats[box]

    def poke(self, box: int = 1) -> None:
        """One step of the seat (a chip read that changes nothing): its view is rebuilt."""
        seat = self.table.seats[box]
        seat.step("chips", {"spot": "main", "uids": sorted(seat.present["main"])})
        self.table.settle()

    def deal(self, *cards: str) -> None:
        for c in cards:
            self.table.shoe.deal(c)
            self.table.settle()

    def close(self) -> None:
        self.table.close()
