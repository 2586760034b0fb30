"""issue 17: ``Hand.copy`` and ``Box.copy`` copy slot by slot (not through ``__init__``), so a
field added to either class must be added to its copy too; this test fails when one is not."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from firmware.engine.cards import parse_card
from firmware.engine.round import Box, Hand


def _distinct(obj: object) -> None:
    """Give every field of ``obj`` a value different from its default."""
    for i, f in enumerate(dataclasses.fields(obj)):
        old = getattr(obj, f.name)
        if isinstance(old, bool):
            new: object = not old
        elif isinstance(old, (int, Fraction)) or f.name in ("net", "progressive_award", "progressive_share"):
            new = Fraction(i + 7, 2)
        elif isinstance(old, list):
            new = [parse_card("AS")] if f.name == "cards" else [i]
        elif isinstance(old, (dict, set)):
            new = type(old)([i]) if isinstance(old, set) else {i: Fraction(i)}
        else:
            new = f"value {i}"
        setattr(obj, f.name, new)


def test_hand_copy_carries_every_field_and_owns_its_cards():
    hand = Hand(family=0, stake=Fraction(10))
    _distinct(hand)
    copy = hand.copy()
    assert copy == hand and copy is not hand
    assert all(getattr(copy, f.name) == getattr(hand, f.name) for f in dataclasses.fields(Hand))
    copy.cards.append(parse_card("KD"))
    assert len(hand.cards) == 1        # the copy's card list is its own


def test_box_copy_carries_every_field_and_owns_its_hand_list():
    box = Box(number=1, wagers={}, stakes={})
    _distinct(box)
    box.hands = [Hand(family=0, stake=Fraction(10))]
    copy = box.copy()
    assert copy == box and copy is not box
    assert all(getattr(copy, f.name) == getattr(box, f.name) for f in dataclasses.fields(Box))
    copy.hands.append(Hand(family=0, stake=Fraction(5)))
    assert len(box.hands) == 1         # the copy's hand list is its own
