"""Engine values on the wire: wagers, shoe compositions, limits, the jackpot controller's
status (plain JSON)."""

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


LINK_STATES = ("up", "down")


def controller_input(body: Any) -> dict[str, Any]:
    """The controller status as a journal input, checked: ``link`` "up" | "down", ``meter``
    an amount string or None, ``pending`` a bool. Raises ValueError naming what is wrong."""
    if not isinstance(body, dict):
        raise ValueError(f"controller status must be a mapping, not {body!r}")
    unknown = set(body) - {"link", "meter", "pending"}
    if unknown:
        raise ValueError(f"controller status: unknown key(s) {sorted(unknown)}")
    link = body.get("link")
    if link not in LINK_STATES:
        raise ValueError(f"controller status: link must be 'up' or 'down', not {link!r}")
    meter = body.get("meter")
    if meter is not None:
        if not isinstance(meter, str):
            raise ValueError(f"controller status: meter must be an amount string or null, not {meter!r}")
        try:
            value = parse_amount(meter)
        except ValueError:
            raise ValueError(f"controller status: meter {meter!r} is not an amount") from None
        if value < 0:
            raise ValueError(f"controller status: meter {meter!r} is negative")
    pending = body.get("pending", False)
    if not isinstance(pending, bool):
        raise ValueError(f"controller status: pending must be true or false, not {pending!r}")
    return {"link": link, "meter": meter, "pending": pending}
