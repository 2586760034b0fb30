"""One in-process table for the tests: a dealer and seven seats on mock hardware, booted,
the shoe shuffled. The ``table`` fixture (tests/conftest.py) hands one to a test; a test that
needs its own profile, or a second boot of the same journals, calls :func:`booted_table`."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from firmware.engine.profile import load_profile
from firmware.sim import chipset
from firmware.sim.table import InProcessTable, TableSpec, seat_spots

PROFILE = "rws-blackjack"


def booted_table(state_dir: Path, profile: str = PROFILE) -> InProcessTable:
    """Table ``t`` at ``state_dir`` (recovered from the journals there, if any), booted, with
    a shuffled shoe."""
    p = load_profile(profile)
    t = InProcessTable(TableSpec("t", p, 0, state_dir), chipset.registry(7, len(seat_spots(p))))
    t.boot()
    t.shoe.shuffle()
    t.settle()
    return t


def place_bet(t: InProcessTable, box: int, amount: int | Fraction, spot: str = "main", layer: int = 0) -> None:
    """Chips worth ``amount`` on ``box``'s ``spot``, read in (two reader cycles)."""
    t.readers[box].place_chips(spot, chipset.chips_for(Fraction(amount), box, t.spots.index(spot), layer))
    t.cycle_readers(2, [box])
