"""A whole table in one process: a dealer unit and seven seat units on mock hardware,
talking over the in-process bus, each with its own journal under ``state_dir``."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Callable, Mapping

from firmware.chips import ChipRegistry
from firmware.engine.profile import Profile
from hal.mock import MockCardShoe, MockChipReader, MockConsole, MockLamps

from .bus import InProcessBus
from .dealer import DealerUnit
from .journal import JOURNAL_NAME, Journal
from .seat import SeatUnit
from .spots import seat_spots

LAMPS = ("progressive", "bets_locked")


@dataclass(frozen=True)
class TableSpec:
    table_id: str
    profile: Profile
    seed: int
    state_dir: Path
    boxes: int = 7
    decks: int | None = None
    limits: Mapping[str, tuple[Fraction, Fraction]] = field(default_factory=dict)
    synchronous: str = "FULL"


class InProcessTable:
    def __init__(self, spec: TableSpec, registry: ChipRegistry) -> None:
        self.spec = spec
        self.registry = registry
        self.bus = InProcessBus()
        self.shoe = MockCardShoe("shoe")
        self.console = MockConsole("console")
        self.spots = seat_spots(spec.profile)
        self.dealer = self._make_dealer()
        self.readers: dict[int, MockChipReader] = {}
        self.lamps: dict[int, MockLamps] = {}
        self.seats: dict[int, SeatUnit] = {}
        for box in range(1, spec.boxes + 1):
            self.readers[box] = MockChipReader(f"reader-{box}", self.spots)
            self.lamps[box] = MockLamps(f"lamps-{box}", LAMPS)
            self.lamps[box].start(lambda e: None)
            self.seats[box] = self._make_seat(box)
        self.shoe.start(self.dealer.post)
        self.console.start(self.dealer.post)

    def _journal(self, unit: str, role: str) -> Journal:
        return Journal(self.spec.state_dir / unit / JOURNAL_NAME, f"{self.spec.table_id}/{unit}", role,
                       self.spec.synchronous)

    def _make_dealer(self) -> DealerUnit:
        return DealerUnit(f"{self.spec.table_id}/dealer", self.spec.table_id, self.bus,
                          self._journal("dealer", "dealer"), self.spec.profile, decks=self.spec.decks,
                          limits=self.spec.limits)

    def _make_seat(self, box: int) -> SeatUnit:
        seat = SeatUnit(f"{self.spec.table_id}/seat-{box}", self.spec.table_id, box, self.bus,
                        self._journal(f"seat-{box}", "seat"), self.registry, self.spots, self.lamps[box])
        return seat

    @property
    def units(self) -> list:
        return [self.dealer, *self.seats.values()]

    def boot(self, seats: list[int] | None = None) -> None:
        """Recover every unit from its journal, then start them (presence, catch-up)."""
        self.dealer.recover()
        for box, seat in self.seats.items():
            if seats is None or box in seats:
                seat.recover()
                self.readers[box].start(seat.post)
        self.dealer.start()
        self.settle()
        for box, seat in self.seats.items():
            if seats is None or box in seats:
                seat.start()
        self.settle()

    def settle(self) -> int:
        """Run every unit's dispatch queue until the table is quiet."""
        total = 0
        while True:
            n = sum(u.pump() for u in self.units)
            if not n:
                return total
            total += n

    def cycle_readers(self, n: int = 2, boxes: list[int] | None = None) -> None:
        for box, reader in self.readers.items():
            if boxes is None or box in boxes:
                reader.cycle(n)
        self.settle()

    # -- a seat going down and coming back ---------------------------------------------

    def stop_seat(self, box: int) -> None:
        """Power off a seat: it hears nothing more; its journal stays."""
        seat = self.seats.pop(box)
        self.bus.unsubscribe(seat.unit_id)
        self.readers[box].close()
        seat.journal.close()
        self._stopped = getattr(self, "_stopped", set()) | {box}

    def restart_seat(self, box: int, fresh: bool = False) -> SeatUnit:
        """Power a seat back on (``fresh``: a new unit with an empty journal, a late seat)."""
        if box in self.seats:
            self.stop_seat(box)
        if fresh:
            for suffix in ("", "-wal", "-shm"):
                path = self.spec.state_dir / f"seat-{box}" / (JOURNAL_NAME + suffix)
                if path.exists():
                    path.unlink()
        old = self.readers[box]
        reader = MockChipReader(f"reader-{box}", self.spots)
        for spot in self.spots:
            reader.place_chips(spot, old.chips_on(spot))
        self.readers[box] = reader
        seat = self._make_seat(box)
        self.seats[box] = seat
        seat.recover()
        reader.start(seat.post)
        seat.start()
        self.settle()
        return seat

    def close(self) -> None:
        for unit in self.units:
            unit.journal.close()


def run_demo_table(spec: TableSpec, rounds: int, progress: Callable[[int], None] | None = None):
    """Play ``rounds`` rounds of simulated players; the table's summary."""
    from firmware.sim.driver import TableDriver

    driver = TableDriver.create(spec)
    try:
        for i in range(rounds):
            driver.play_round()
            if progress:
                progress(i + 1)
        return driver.summary()
    finally:
        driver.table.close()
