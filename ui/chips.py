"""Chip colours for the stacks drawn on the bet spots. Plain Python, no Kivy.

The chip registry (``firmware/chips.py``) knows a chip's UID, denomination and status but
no colour, so the screen colours a denomination as casinos conventionally do (1 white,
5 red, 25 green, 100 black, 500 purple, 1,000 yellow, 5,000 brown); a denomination not in
the list takes the colour of the next lower one. A refused chip ("?") is grey with a red
edge: it is drawn, because it is on the spot, but never looks like money.
"""

from __future__ import annotations

from fractions import Fraction

RGB = tuple[float, float, float]

#: (denomination, body colour, edge-spot colour), ascending.
COLOURS: tuple[tuple[Fraction, RGB, RGB], ...] = (
    (Fraction(1), (0.93, 0.93, 0.90), (0.20, 0.35, 0.75)),
    (Fraction(5), (0.80, 0.10, 0.12), (0.97, 0.97, 0.95)),
    (Fraction(25), (0.10, 0.55, 0.25), (0.97, 0.97, 0.95)),
    (Fraction(100), (0.10, 0.10, 0.10), (0.97, 0.97, 0.95)),
    (Fraction(500), (0.45, 0.20, 0.60), (0.97, 0.85, 0.30)),
    (Fraction(1000), (0.95, 0.78, 0.15), (0.15, 0.15, 0.15)),
    (Fraction(5000), (0.50, 0.30, 0.15), (0.97, 0.97, 0.95)),
)
REFUSED: tuple[RGB, RGB] = ((0.55, 0.55, 0.55), (0.85, 0.15, 0.15))


def chip_colours(denomination: str) -> tuple[RGB, RGB]:
    """(body, edge spots) for a chip of ``denomination`` ("25", "2.50"); "?" refused."""
    try:
        value = Fraction(denomination.replace(",", ""))
    except (ValueError, ZeroDivisionError):
        return REFUSED
    body, edge = COLOURS[0][1], COLOURS[0][2]
    for limit, b, e in COLOURS:
        if value >= limit:
            body, edge = b, e
    return body, edge
