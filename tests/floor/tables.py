"""Whole tables on a floor (tests/floor/floor.py): each table's dealer and seat units, on
mock hardware played by simulated players (firmware/sim), each unit its own MQTT client on
its table's own broker, the table broker bridged to the floor broker; every outbox audited
(tests/tables.py) so a test can sum every report the units ever stored."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterator

from firmware.link.mqtt import MqttBus
from firmware.sim.driver import TableDriver
from tests.link.helpers import wait_until
from tests.tables import Books, audited_outbox, journal_books, linked_table, outbox_reports

from .floor import Floor


class FloorTables:
    """A table of simulated players for every table of ``floor`` (started), with the
    boxes the floor gives it."""

    def __init__(self, floor: Floor, root: Path, seed: int = 1) -> None:
        self.floor = floor
        self.root = root
        self.buses: list[MqttBus] = []
        self.outbox_paths: dict[str, Path] = {}
        self.drivers: dict[str, TableDriver] = {}
        self._player: threading.Thread | None = None
        self._played: set[str] = set()          # the tables the player thread drives
        self._failed: list[BaseException] = []
        for n, (table, boxes) in enumerate(sorted(floor.boxes.items())):
            self.drivers[table] = linked_table(table, root / table, self._bus_factory(), boxes=boxes,
                                               seed=seed * 100 + n)

    def _bus_factory(self) -> Any:
        def make(unit: str, role: str) -> MqttBus:
            outbox = None
            if role in ("seat", "dealer"):
                outbox = self.outbox_paths[unit] = audited_outbox(
                    self.root / "outboxes" / (unit.replace("/", "-") + ".db"), unit)
            bus = self.floor.bus(unit, outbox)
            self.buses.append(bus)
            return bus
        return make

    # -- playing -------------------------------------------------------------------------

    def play(self, rounds: int, tables: list[str] | None = None) -> None:
        """``rounds`` rounds at every table of ``tables`` (default: all), in turn."""
        for _ in range(rounds):
            for table, driver in self.drivers.items():
                if tables is None or table in tables:
                    driver.play_round()

    @contextmanager
    def playing(self, pace: float = 0.2, tables: list[str] | None = None) -> Iterator["FloorTables"]:
        """The tables (``tables``, default all) play on in a thread of their own, a round at
        each in turn then ``pace`` seconds, while the test breaks the floor; a player's
        failure fails the test."""
        stop = threading.Event()

        def play() -> None:
            try:
                while not stop.is_set():
                    self.play(1, tables)
                    stop.wait(pace)
            except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
                self._failed.append(exc)

        self._played = set(self.drivers) if tables is None else set(tables)
        self._player = threading.Thread(target=play, name="players", daemon=True)
        self._player.start()
        try:
            yield self
        finally:
            stop.set()
            self._player.join(60)
        self._check()
        assert not self._player.is_alive(), "the players did not stop"
        self._player = None
        self._played = set()
        self.settle()

    def _check(self) -> None:
        if self._failed:
            raise AssertionError("a table's players failed") from self._failed[0]

    def settle(self) -> None:
        """Run the units' inputs of every table the player thread does not drive."""
        for table, d in self.drivers.items():
            if table not in self._played:
                d.table.settle()

    # -- what the tables see -------------------------------------------------------------

    def round_nos(self) -> dict[str, int]:
        """Per table, the dealer's round number (the round in play, or the last one)."""
        self._check()
        return {t: d.table.dealer.round_no for t, d in self.drivers.items()}

    def rounds(self) -> int:
        return sum(self.round_nos().values())

    def played_since(self, before: dict[str, int], rounds: int) -> bool:
        """Every table of ``before`` started ``rounds`` more rounds since, and finished all
        but the last one."""
        now = self.round_nos()
        return all(now[t] >= n + rounds + 1 for t, n in before.items())

    def links(self, tables: list[str] | None = None) -> set[str | None]:
        """The controller's link as the seats of ``tables`` (default: all) see it now."""
        self._check()
        self.settle()               # the tables nobody plays take their inputs here
        return {s.controller.link for t, d in self.drivers.items() if tables is None or t in tables
                for s in d.table.seats.values()}

    def wait_links(self, state: str, timeout: float, tables: list[str] | None = None) -> None:
        """Wait until every seat of ``tables`` sees the controller's link ``state``."""
        wait_until(lambda: self.links(tables) == {state}, timeout, f"every seat's controller link {state}",
                   step=0.1)

    def shown_meters(self) -> set[Fraction | None]:
        """The meter every dealer and seat holds now (the controller's broadcast)."""
        self.settle()
        out: set[Fraction | None] = set()
        for d in self.drivers.values():
            out.add(d.table.dealer.meter)
            out |= {None if s.controller.meter is None else Fraction(s.controller.meter)
                    for s in d.table.seats.values()}
        return out

    def wait_meters(self, data: dict[str, Any], pool: str = "main") -> None:
        """Every table shows the controller's meter of ``data`` (its ``report()``)."""
        meter = Fraction(data["pools"][pool]["meter"])
        wait_until(lambda: self.shown_meters() == {meter}, 30, f"the meter {meter} at every dealer and seat",
                   step=0.1)

    # -- what they stored ----------------------------------------------------------------

    def last_seqs(self) -> dict[str, int]:
        return {b.unit_id: b.outbox.last_seq for b in self.buses if b.outbox is not None}

    def confirmed(self, marks: dict[str, int]) -> bool:
        """Every report of every unit held by the controller (its marks: unit -> contiguous)."""
        return all(marks.get(u, 0) == n for u, n in self.last_seqs().items())

    def drained(self) -> bool:
        """The table brokers acknowledged every report (PUBACK)."""
        return all(b.drained() for b in self.buses)

    def outboxes(self) -> dict[str, list[dict[str, Any]]]:
        return {unit: outbox_reports(path) for unit, path in self.outbox_paths.items()}

    def wagers_in_rounds(self, table: str, first: int, last: int) -> int:
        """Progressive wagers table's seats reported for rounds ``first``..``last``."""
        return sum(1 for unit, reports in self.outboxes().items() if unit.startswith(table + "/seat-")
                   for r in reports if r["kind"] == "progressive_wager" and first <= r["round"] <= last)

    def journals(self) -> Books:
        total = Books()
        for table, driver in self.drivers.items():
            total.add(journal_books(self.root / table, driver.table.seats))
        return total

    def close(self) -> None:
        for d in self.drivers.values():
            d.table.close()
        for b in self.buses:
            b.close()
