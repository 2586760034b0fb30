"""Chips: the registry of known RFID tags, debouncing of raw reads, and wagers.

A wager is the sum of the *valid* chips on a spot. Unknown and barred chips are never
counted; they are reported per spot with a reason so the player sees why and the
controller gets a security event (docs/architecture.md, "Security and integrity").

Amounts are :class:`decimal.Decimal` (money is never a float). The debouncer is pure:
inventory cycles are its only time base.
"""

from __future__ import annotations

import csv
import enum
import io
import reprlib
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Iterable, Mapping

from firmware.engine.strict import read_text
from hal.events import normalise_uid


class ChipRegistryError(ValueError):
    """A registry file that cannot be trusted; the message names the line and the UID."""


class ChipStatus(enum.StrEnum):
    VALID = "valid"
    BARRED = "barred"  # withdrawn, stolen, or otherwise not to be played


class Refusal(enum.StrEnum):
    UNKNOWN_CHIP = "unknown_chip"
    BARRED_CHIP = "barred_chip"


@dataclass(frozen=True, slots=True)
class Chip:
    uid: str
    denomination: Decimal
    status: ChipStatus = ChipStatus.VALID


@dataclass(frozen=True, slots=True)
class RefusedChip:
    uid: str
    reason: Refusal
    chip: Chip | None = None  # the registry entry, for a barred chip


@dataclass(frozen=True, slots=True)
class SpotWager:
    """What a spot's chips are worth, and which chips were refused and why."""

    spot: str
    amount: Decimal
    counted: tuple[Chip, ...]
    refused: tuple[RefusedChip, ...]

    @property
    def has_refusals(self) -> bool:
        return bool(self.refused)


MAX_DENOMINATION = Decimal("1000000")
MAX_REGISTRY_BYTES = 50_000_000         # about a million chips
STATUS_ALIASES = {"stolen": "barred"}  # a stolen chip is barred; the file may say which
CSV_COLUMNS = ("uid", "denomination", "status")


def parse_denomination(text: str) -> Decimal:
    """A positive amount with at most two decimals ("25", "2.50"); ValueError otherwise."""
    shown = repr(text) if len(text) <= 32 else repr(text[:16] + "...")    # a 5,000-digit value is named, not printed
    if len(text.strip()) > 32:
        raise ValueError(f"denomination {shown} must be above 0 and at most {MAX_DENOMINATION}")
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise ValueError(f"denomination {shown} is not a number") from None
    if not value.is_finite() or value <= 0 or value > MAX_DENOMINATION:
        raise ValueError(f"denomination {shown} must be above 0 and at most {MAX_DENOMINATION}")
    if value != value.quantize(Decimal("0.01")):
        raise ValueError(f"denomination {shown} has more than two decimals")
    return value.quantize(Decimal("0.01"))


class ChipRegistry:
    """UID -> :class:`Chip`. Loaded from CSV with columns ``uid,denomination,status``."""

    def __init__(self, chips: Iterable[Chip] = ()) -> None:
        self._chips: dict[str, Chip] = {}
        for chip in chips:
            uid = normalise_uid(chip.uid)
            if uid in self._chips:
                raise ChipRegistryError(f"duplicate UID {uid}")
            self._chips[uid] = chip

    def __len__(self) -> int:
        return len(self._chips)

    def get(self, uid: str) -> Chip | None:
        return self._chips.get(uid.upper())

    @classmethod
    def load(cls, path: str | Path) -> "ChipRegistry":
        path = Path(path)
        return cls.from_csv(read_text(path, MAX_REGISTRY_BYTES, "a chip registry"), source=str(path))

    @classmethod
    def from_csv(cls, text: str, source: str = "<chips>") -> "ChipRegistry":
        try:
            return cls._from_csv(text, source)
        except csv.Error as exc:          # e.g. a field beyond csv's size limit: no registry line
            raise ChipRegistryError(f"{source}: not a chip registry: {exc}") from None

    @classmethod
    def _from_csv(cls, text: str, source: str) -> "ChipRegistry":
        rows = csv.reader(io.StringIO(text))
        header = next(rows, None)
        if header is None or tuple(h.strip().lower() for h in header) != CSV_COLUMNS:
            raise ChipRegistryError(f"{source} line 1: header must be "
                                    f"{','.join(CSV_COLUMNS)}, got {reprlib.repr(header)}")
        chips: list[Chip] = []
        first_line: dict[str, int] = {}
        for row in rows:
            line = rows.line_num
            if not row or all(not cell.strip() for cell in row) or row[0].startswith("#"):
                continue
            if len(row) != 3:
                raise ChipRegistryError(f"{source} line {line}: expected 3 fields, got {len(row)}")
            try:
                uid = normalise_uid(row[0])
                denomination = parse_denomination(row[1])
                status = ChipStatus(STATUS_ALIASES.get(row[2].strip().lower(),
                                                       row[2].strip().lower()))
            except ValueError as exc:
                what = str(exc) if "is not a valid ChipStatus" not in str(exc) else (
                    f"status {reprlib.repr(row[2].strip())} must be one of "
                    f"{', '.join(s.value for s in ChipStatus)} or stolen")
                raise ChipRegistryError(f"{source} line {line}: {what}") from None
            if uid in first_line:
                raise ChipRegistryError(f"{source} line {line}: duplicate UID {uid} "
                                        f"(first on line {first_line[uid]})")
            first_line[uid] = line
            chips.append(Chip(uid, denomination, status))
        return cls(chips)

    def assess(self, spot: str, uids: Iterable[str]) -> SpotWager:
        """The wager on ``spot`` given the chips present there (already debounced)."""
        counted: list[Chip] = []
        refused: list[RefusedChip] = []
        for uid in sorted({u.upper() for u in uids}):
            chip = self._chips.get(uid)
            if chip is None:
                refused.append(RefusedChip(uid, Refusal.UNKNOWN_CHIP))
            elif chip.status is not ChipStatus.VALID:
                refused.append(RefusedChip(uid, Refusal.BARRED_CHIP, chip))
            else:
                counted.append(chip)
        amount = sum((c.denomination for c in counted), Decimal("0.00"))
        return SpotWager(spot, amount, tuple(counted), tuple(refused))

    def assess_all(self, present: Mapping[str, Iterable[str]]) -> dict[str, SpotWager]:
        return {spot: self.assess(spot, uids) for spot, uids in present.items()}


@dataclass(frozen=True, slots=True)
class SpotChange:
    """Chips that became present on / left a spot in one cycle (debounced)."""

    spot: str
    arrived: frozenset[str]
    left: frozenset[str]


@dataclass(slots=True)
class _Track:
    present: bool = False
    seen: int = 0  # consecutive cycles seen
    missed: int = 0  # consecutive cycles missed


class ChipDebouncer:
    """A chip counts after ``confirm_cycles`` consecutive sightings and leaves after
    ``release_cycles`` consecutive misses, so a flickering read neither inflates nor drops
    a wager. Each (spot, uid) is tracked on its own.
    """

    def __init__(self, confirm_cycles: int = 2, release_cycles: int = 3) -> None:
        if confirm_cycles < 1 or release_cycles < 1:
            raise ValueError("confirm_cycles and release_cycles must be at least 1")
        self.confirm_cycles, self.release_cycles = confirm_cycles, release_cycles
        self._tracks: dict[str, dict[str, _Track]] = {}

    def update(self, reads: Mapping[str, Iterable[str]]) -> list[SpotChange]:
        """Feed one complete inventory cycle. A spot absent from ``reads`` saw nothing."""
        changes: list[SpotChange] = []
        for spot in sorted(set(self._tracks) | set(reads)):
            seen = {u.upper() for u in reads.get(spot, ())}
            tracks = self._tracks.setdefault(spot, {})
            arrived: set[str] = set()
            left: set[str] = set()
            for uid in seen | set(tracks):
                t = tracks.setdefault(uid, _Track())
                if uid in seen:
                    t.seen, t.missed = t.seen + 1, 0
                    if not t.present and t.seen >= self.confirm_cycles:
                        t.present = True
                        arrived.add(uid)
                else:
                    t.seen, t.missed = 0, t.missed + 1
                    if t.present and t.missed >= self.release_cycles:
                        t.present = False
                        left.add(uid)
                    if not t.present:
                        del tracks[uid]
            if arrived or left:
                changes.append(SpotChange(spot, frozenset(arrived), frozenset(left)))
        return changes

    def present(self, spot: str) -> frozenset[str]:
        return frozenset(uid for uid, t in self._tracks.get(spot, {}).items() if t.present)

    def snapshot(self) -> dict[str, frozenset[str]]:
        return {spot: self.present(spot) for spot in sorted(self._tracks)}

    def clear(self, spot: str | None = None) -> None:
        if spot is None:
            self._tracks.clear()
        else:
            self._tracks.pop(spot, None)


class WagerSensor:
    """Debounced inventory -> per-spot wagers, recomputed only when chips change."""

    def __init__(self, registry: ChipRegistry, debouncer: ChipDebouncer,
                 spots: Iterable[str]) -> None:
        self.registry, self.debouncer = registry, debouncer
        self.spots = tuple(spots)
        self.wagers: dict[str, SpotWager] = {s: registry.assess(s, ()) for s in self.spots}

    def update(self, reads: Mapping[str, Iterable[str]]) -> dict[str, SpotWager]:
        """Feed a cycle; returns the wagers of the spots whose chips changed."""
        changed = {}
        for change in self.debouncer.update(reads):
            wager = self.registry.assess(change.spot, self.debouncer.present(change.spot))
            self.wagers[change.spot] = wager
            changed[change.spot] = wager
        return changed


# -- editing a registry file (``betbox chips``) -------------------------------------------
# Edits are made on the text, line by line, so the file's comments and order stay as the
# casino wrote them; every result is read back with :meth:`ChipRegistry.from_csv` (the same
# checks a seat makes at start) before it may replace the file.

def enrol_text(text: str, uid: str, denomination: str, status: str = "valid", source: str = "<chips>") -> str:
    """``text`` with one chip added at the end; ChipRegistryError if it is already there or
    the UID, denomination or status is not one the registry takes."""
    registry = ChipRegistry.from_csv(text, source)
    try:
        u = normalise_uid(uid)
        d = parse_denomination(denomination)
        ChipStatus(STATUS_ALIASES.get(status.strip().lower(), status.strip().lower()))   # a status it knows
    except ValueError as exc:
        what = str(exc) if "ChipStatus" not in str(exc) else (
            f"status {status!r} must be one of {', '.join(c.value for c in ChipStatus)} or stolen")
        raise ChipRegistryError(f"{source}: {what}") from None
    enrolled = registry.get(u)
    if enrolled is not None:
        raise ChipRegistryError(f"{source}: UID {u} is already enrolled ({enrolled.denomination}, "
                                f"{enrolled.status}); bar it instead of enrolling it again")
    line = f"{u},{d},{status.strip().lower()}\n"
    new = text + ("" if text.endswith("\n") or not text else "\n") + line
    ChipRegistry.from_csv(new, source)
    return new


def set_status_text(text: str, uid: str, status: str, source: str = "<chips>") -> str:
    """``text`` with the status of chip ``uid`` changed (``barred``, ``stolen``, ``valid``)."""
    ChipRegistry.from_csv(text, source)
    try:
        u = normalise_uid(uid)
    except ValueError as exc:
        raise ChipRegistryError(f"{source}: {exc}") from None
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines[1:], start=1):
        cells = next(csv.reader([line]), [])
        if len(cells) == 3 and not cells[0].startswith("#") and cells[0].strip().upper() == u:
            out = io.StringIO()
            csv.writer(out, lineterminator="\n").writerow([cells[0].strip(), cells[1].strip(), status.strip().lower()])
            lines[i] = out.getvalue()
            new = "".join(lines)
            ChipRegistry.from_csv(new, source)
            return new
    raise ChipRegistryError(f"{source}: UID {u} is not enrolled")


def chips(registry: ChipRegistry) -> list[Chip]:
    """The registry's chips, in UID order."""
    return [registry._chips[u] for u in sorted(registry._chips)]
