"""A whole table in one process: a dealer unit and seven seat units on mock hardware, each
with its own journal under ``state_dir``, talking over the in-process bus or, with a
``bus_factory``, each over its own bus (an :class:`~firmware.link.mqtt.MqttBus` on a broker).

:meth:`InProcessTable.settle` runs every unit's dispatch queue until the table is quiet. On
the in-process bus delivery is synchronous, so an empty set of queues is quiet. On a broker
it is not: a bus that can ``wait_published`` and ``send_marker`` (MqttBus) is asked to
confirm that the broker took everything its unit published and then to send a marker
through the broker to itself; when every marker is back, every message published before is
in the queues, and the queues are run again. Each wait is bounded (``quiet_timeout``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Mapping

from firmware.chips import ChipRegistry
from firmware.engine.profile import Profile
from firmware.runtime.bus import Bus, InProcessBus
from firmware.runtime.dealer import CLOSE_WAIT, DealerUnit
from firmware.runtime.journal import JOURNAL_NAME, Journal
from firmware.runtime.seat import SeatUnit
from firmware.runtime.spots import seat_spots
from hal.mock import MockCardShoe, MockChipReader, MockConsole, MockLamps

LAMPS = ("progressive", "bets_locked")

BusFactory = Callable[[str, str], Bus]           # (unit id, role) -> the unit's bus


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
    rotate_rounds: int | None = None              # every unit's journal (Journal(rotate_rounds=...))
    keep_segments: int | None = None
    close_wait: float | None = CLOSE_WAIT         # the dealer's bounded wait for locks


class InProcessTable:
    def __init__(self, spec: TableSpec, registry: ChipRegistry, bus_factory: BusFactory | None = None,
                 on_unit: Callable[[Any, Bus], None] | None = None, quiet_timeout: float = 10.0) -> None:
        """``bus_factory(unit_id, role)``: each unit's own bus (default: one shared
        in-process bus). ``on_unit(unit, bus)``: called for every unit made (a seat made
        again after a restart too), e.g. to attach a reporter."""
        self.spec = spec
        self.registry = registry
        self.bus = InProcessBus()
        self.bus_factory = bus_factory
        self.on_unit = on_unit
        self.quiet_timeout = quiet_timeout
        self.buses: dict[str, Bus] = {}
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
                       self.spec.synchronous, rotate_rounds=self.spec.rotate_rounds,
                       keep_segments=self.spec.keep_segments)

    def _bus(self, unit_id: str, role: str) -> Bus:
        if self.bus_factory is None:
            return self.bus
        bus = self.buses.get(unit_id)
        if bus is None:
            bus = self.buses[unit_id] = self.bus_factory(unit_id, role)
        return bus

    def _made(self, unit, bus: Bus):
        # which port is which: the dealer's shoe and console, a seat's chip reader
        unit.device_kinds = ({"shoe": "card_shoe", "console": "console"} if unit.role == "dealer"
                             else {f"reader-{unit.box}": "chip_reader"})
        if self.on_unit is not None:
            self.on_unit(unit, bus)
        return unit

    def _make_dealer(self) -> DealerUnit:
        unit_id = f"{self.spec.table_id}/dealer"
        bus = self._bus(unit_id, "dealer")
        return self._made(DealerUnit(unit_id, self.spec.table_id, bus, self._journal("dealer", "dealer"),
                                     self.spec.profile, decks=self.spec.decks, limits=self.spec.limits,
                                     close_wait=self.spec.close_wait), bus)

    def _make_seat(self, box: int) -> SeatUnit:
        unit_id = f"{self.spec.table_id}/seat-{box}"
        bus = self._bus(unit_id, "seat")
        return self._made(SeatUnit(unit_id, self.spec.table_id, box, bus, self._journal(f"seat-{box}", "seat"),
                                   self.registry, self.spots, self.lamps[box]), bus)

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
            if n:
                total += n
                continue
            if not self.buses or not self._quiet():
                return total
            n = sum(u.pump() for u in self.units)
            if not n:
                return total
            total += n

    def _quiet(self) -> bool:
        """Wait (bounded) until everything published so far has reached its subscribers'
        queues. False when there is nothing to wait for or the wait timed out."""
        import time

        # a bus on a broker (MqttBus) confirms what it published and sends a marker through it
        buses: list[Any] = [b for b in self.buses.values() if hasattr(b, "send_marker")]
        if not buses:
            return False
        deadline = time.monotonic() + self.quiet_timeout
        for bus in buses:
            if not bus.wait_published(max(0.0, deadline - time.monotonic())):
                return False
        markers = [bus.send_marker() for bus in buses]
        return all(m.wait(max(0.0, deadline - time.monotonic())) for m in markers)

    def cycle_readers(self, n: int = 2, boxes: list[int] | None = None) -> None:
        for box, reader in self.readers.items():
            if boxes is None or box in boxes:
                reader.cycle(n)
        self.settle()

    # -- a seat going down and coming back ---------------------------------------------

    def stop_seat(self, box: int) -> None:
        """Power off a seat: it hears nothing more; its journal stays."""
        seat = self.seats.pop(box)
        self._bus(seat.unit_id, "seat").unsubscribe(seat.unit_id)
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

