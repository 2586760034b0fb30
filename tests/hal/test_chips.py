"""Chip registry, debouncing of noisy RFID reads, and the wagers they make."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmware.chips import ChipDebouncer, ChipRegistry, ChipRegistryError, ChipStatus, Refusal, WagerSensor
from hal.mock import MockChipReader

REGISTRY = """uid,denomination,status
04A1B2C3,25,valid
04A1B2C4,25,valid
04A1B2C5,2.50,valid
04D00001,100,barred
04D00002,500,stolen
"""


@pytest.fixture
def registry() -> ChipRegistry:
    return ChipRegistry.from_csv(REGISTRY, "chips.csv")


def test_wager_counts_only_valid_chips(registry: ChipRegistry) -> None:
    wager = registry.assess("main", ["04a1b2c3", "04A1B2C5", "04D00001", "DEADBEEF"])
    assert wager.amount == Decimal("27.50")
    assert [c.uid for c in wager.counted] == ["04A1B2C3", "04A1B2C5"]
    assert {(r.uid, r.reason) for r in wager.refused} == {
        ("04D00001", Refusal.BARRED_CHIP), ("DEADBEEF", Refusal.UNKNOWN_CHIP)}
    assert wager.has_refusals


def test_stolen_chips_are_barred(registry: ChipRegistry) -> None:
    assert registry.get("04D00002").status is ChipStatus.BARRED
    wager = registry.assess("progressive", ["04D00002"])
    assert wager.amount == 0 and wager.refused[0].reason == "barred_chip"
    assert wager.refused[0].chip.denomination == Decimal("500.00")


def test_amounts_are_exact_decimals(registry: ChipRegistry) -> None:
    wager = registry.assess("main", ["04A1B2C5"] * 3)  # one chip seen thrice is one chip
    assert wager.amount == Decimal("2.50")
    assert isinstance(wager.amount, Decimal)


@pytest.mark.parametrize("body, message", [
    ("04A1B2C3,25,valid\n04a1b2c3,5,valid\n", "line 3: duplicate UID 04A1B2C3 (first on line 2)"),
    ("04A1B2C3,twenty,valid\n", "line 2: denomination 'twenty' is not a number"),
    ("04A1B2C3,-5,valid\n", "line 2: denomination '-5' must be above 0"),
    ("04A1B2C3,0.001,valid\n", "line 2: denomination '0.001' has more than two decimals"),
    ("04A1B2C3,NaN,valid\n", "line 2: denomination 'NaN'"),
    ("XYZ,5,valid\n", "line 2: not a tag UID: 'XYZ'"),
    ("04A1B2C3,5,lucky\n", "line 2: status 'lucky' must be one of valid, barred"),
    ("04A1B2C3,5\n", "line 2: expected 3 fields, got 2"),
])
def test_registry_errors_name_line_and_uid(body: str, message: str) -> None:
    with pytest.raises(ChipRegistryError) as err:
        ChipRegistry.from_csv("uid,denomination,status\n" + body, "chips.csv")
    assert f"chips.csv {message}" in str(err.value)


def test_registry_needs_its_header() -> None:
    with pytest.raises(ChipRegistryError, match="line 1: header"):
        ChipRegistry.from_csv("04A1B2C3,25,valid\n")


def test_registry_loads_from_file(tmp_path) -> None:
    path = tmp_path / "chips.csv"
    path.write_text(REGISTRY + "\n# spare chips follow\n04E00001,1000,valid\n")
    registry = ChipRegistry.load(path)
    assert len(registry) == 6
    assert registry.get("04E00001").denomination == Decimal("1000.00")


# ---------------------------------------------------------------- debouncing


def run(debouncer: ChipDebouncer, pattern: str, uid: str = "AA") -> str:
    """Feed a read pattern ('x' seen, '.' missed); return presence per cycle."""
    out = ""
    for c in pattern:
        debouncer.update({"main": [uid] if c == "x" else []})
        out += "P" if uid in debouncer.present("main") else "-"
    return out


@pytest.mark.parametrize("reads, presence", [
    ("xxxxxx", "-PPPPP"),  # counts from the 2nd consecutive sighting
    ("x.x.x.x.", "--------"),  # flicker never inflates a wager
    ("xxx.x..x", "-PPPPPPP"),  # short dropouts never drop it
    ("xxx...xx", "-PPPP--P"),  # gone on the 3rd miss; back: counts again after 2
    ("xx.xx...", "-PPPPPP-"),
])
def test_debounce_scripted(reads: str, presence: str) -> None:
    assert run(ChipDebouncer(confirm_cycles=2, release_cycles=3), reads) == presence


def test_debounce_reports_changes_per_spot() -> None:
    d = ChipDebouncer(confirm_cycles=1, release_cycles=1)
    [change] = d.update({"main": ["AA", "BB"], "perfect_pairs": []})
    assert (change.spot, change.arrived, change.left) == ("main", {"AA", "BB"}, frozenset())
    [change] = d.update({"main": ["AA"]})
    assert change.left == {"BB"}
    assert d.snapshot() == {"main": {"AA"}, "perfect_pairs": frozenset()}


def test_debounce_rejects_zero_cycles() -> None:
    with pytest.raises(ValueError):
        ChipDebouncer(0, 1)


@given(st.integers(1, 5), st.integers(1, 5), st.lists(st.booleans(), max_size=80))
def test_debounce_matches_its_definition(confirm: int, release: int, reads: list[bool]) -> None:
    """Present iff (absent and the last `confirm` reads were all sightings) or
    (present and not the last `release` reads all misses) — checked against a model."""
    d = ChipDebouncer(confirm, release)
    present, seen, missed = False, 0, 0
    for r in reads:
        d.update({"main": ["AA"] if r else []})
        seen, missed = (seen + 1, 0) if r else (0, missed + 1)
        if not present and seen >= confirm:
            present = True
        elif present and missed >= release:
            present = False
        assert ("AA" in d.present("main")) == present


@given(st.integers(2, 5), st.integers(1, 5), st.lists(st.integers(1, 4), max_size=30))
def test_flicker_shorter_than_confirm_never_counts(confirm: int, release: int,
                                                  bursts: list[int]) -> None:
    d = ChipDebouncer(confirm, release)
    for burst in bursts:
        for _ in range(min(burst, confirm - 1)):
            d.update({"main": ["AA"]})
            assert d.present("main") == frozenset()
        d.update({"main": []})


@given(st.integers(1, 4), st.integers(2, 5), st.lists(st.integers(0, 6), max_size=30))
def test_dropouts_shorter_than_release_never_drop(confirm: int, release: int,
                                                 gaps: list[int]) -> None:
    d = ChipDebouncer(confirm, release)
    for _ in range(confirm):
        d.update({"main": ["AA"]})
    for gap in gaps:
        for _ in range(min(gap, release - 1)):
            d.update({"main": []})
            assert d.present("main") == {"AA"}
        d.update({"main": ["AA"]})
        assert d.present("main") == {"AA"}


def test_wager_sensor_on_a_noisy_mock_reader(registry: ChipRegistry) -> None:
    """Mock reader with dropped reads and a phantom tag -> the stable wager."""
    cycles = []
    reader = MockChipReader("rfid", ["main", "perfect_pairs"])
    reader.start(cycles.append)
    sensor = WagerSensor(registry, ChipDebouncer(2, 3), reader.spots)
    reader.place_chips("main", ["04A1B2C3", "04A1B2C4", "04D00001"])
    reader.cycle(2)
    reader.drop_reads(2, ["04A1B2C4"])  # flicker
    reader.phantom("perfect_pairs", "DEADBEEF", 1)  # garbage read
    reader.cycle(4)
    changes = [sensor.update(c.as_mapping()) for c in cycles]
    assert sensor.wagers["main"].amount == Decimal("50.00")
    assert [r.reason for r in sensor.wagers["main"].refused] == ["barred_chip"]
    assert sensor.wagers["perfect_pairs"].refused == ()
    assert sum(bool(c) for c in changes) == 1  # one change: the chips arrived
