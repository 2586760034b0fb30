"""Engine values on the wire: wagers, shoe compositions, limits (plain JSON)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping

from firmware.engine.cards import ShoeComposition
from firmware.engine.money import parse_amount, to_json_number


def bets_to_json(bets: Mapping[str, Fraction]) -> dict[str, Any]:
    return {name: to_json_number(Fraction(a)) for name, a in sorted(bets.items()) if a}


def bets_from_json(data: Mapping[str, Any]) -> dict[str, Fraction]:
    return {str(name): parse_amount(a) for name, a in data.items()}


def limits_to_json(limits: Mapping[str, tuple[Fraction, Fraction]]) -> dict[str, list]:
    return {name: [to_json_number(lo), to_json_number(hi)] for name, (lo, hi) in sorted(limits.items())}


def shoe_to_json(shoe: ShoeComposition) -> list[int]:
    return list(shoe.counts)


def shoe_from_json(counts: list[int]) -> ShoeComposition:
    if len(counts) != 52 or not all(isinstance(c, int) and c >= 0 for c in counts):
        raise ValueError("a shoe composition is 52 non-negative counts")
    return ShoeComposition(tuple(counts))
