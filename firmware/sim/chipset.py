"""The demo's chips: a registry and a deterministic choice of chips for an amount.

A chip's UID says where the simulated player keeps it: box, spot, layer (0 the initial
wager, 1.. additions), denomination, index. Placing the same wager twice places the same
chips, so a driver that repeats a step after a unit restarts changes nothing.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from firmware.chips import Chip, ChipRegistry

DENOMINATIONS = (Decimal(100), Decimal(25), Decimal(5), Decimal(1))
MAX_PER_DENOMINATION = 8
LATE_LAYER = 0xEE
UNKNOWN_PREFIX = "FF"


def uid(box: int, spot: int, layer: int, denom: int, k: int) -> str:
    return f"{box:02X}{spot:02X}{layer:02X}{denom:02X}{k:02X}"


def registry(boxes: int, spots: int, layers: int = 8) -> ChipRegistry:
    chips = []
    for box in range(1, boxes + 1):
        for spot in range(spots):
            for layer in [*range(layers), LATE_LAYER]:
                for d, value in enumerate(DENOMINATIONS):
                    for k in range(MAX_PER_DENOMINATION):
                        chips.append(Chip(uid(box, spot, layer, d, k), value))
    return ChipRegistry(chips)


def chips_for(amount: Fraction, box: int, spot: int, layer: int) -> list[str]:
    """Greedy change for ``amount`` in the demo's denominations."""
    left = Decimal(amount.numerator) / Decimal(amount.denominator)
    out: list[str] = []
    for d, value in enumerate(DENOMINATIONS):
        n = int(left // value)
        if n > MAX_PER_DENOMINATION:
            raise ValueError(f"{amount} needs more than {MAX_PER_DENOMINATION} chips of {value}")
        out.extend(uid(box, spot, layer, d, k) for k in range(n))
        left -= n * value
    if left:
        raise ValueError(f"{amount} cannot be made of {', '.join(map(str, DENOMINATIONS))} chips")
    return out


def unknown_uid(box: int, spot: int) -> str:
    return f"{UNKNOWN_PREFIX}{box:02X}{spot:02X}0000"
