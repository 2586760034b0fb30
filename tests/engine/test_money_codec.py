"""The one money codec (firmware/engine/money.py, issue #15): every text form reads back as
the exact amount it was made from; what cannot be paid (not whole cents) is refused, never
rounded."""

from __future__ import annotations

from fractions import Fraction

import pytest

from firmware.engine.events import event_from_dict
from firmware.engine.money import (
    display_text,
    exact_text,
    is_whole_cents,
    parse_amount,
    share_text,
    to_json_number,
    wire_text,
)

AMOUNTS = [Fraction(0), Fraction(5), Fraction(75, 2), Fraction(-1225, 100), Fraction(123456, 100),
           Fraction(1, 100), Fraction(-1, 2)]


@pytest.mark.parametrize("amount", AMOUNTS)
def test_each_text_reads_back_as_the_amount(amount):
    assert parse_amount(wire_text(amount)) == amount
    assert parse_amount(display_text(amount)) == amount
    assert parse_amount(to_json_number(amount)) == amount
    assert Fraction(exact_text(amount)) == amount
    assert is_whole_cents(amount)


def test_wire_text_is_the_shortest_exact_decimal():
    assert [wire_text(a) for a in AMOUNTS] == ["0", "5", "37.5", "-12.25", "1234.56", "0.01", "-0.5"]


@pytest.mark.parametrize("amount", [Fraction(1, 3), Fraction(1, 1000), Fraction(75, 8)])
def test_an_amount_finer_than_a_cent_is_refused_on_the_wire_and_kept_exact_in_a_checkpoint(amount):
    assert not is_whole_cents(amount)
    with pytest.raises(ValueError, match="not a whole number of cents"):
        wire_text(amount)
    assert Fraction(exact_text(amount)) == amount


def test_a_meter_share_has_at_most_four_decimals():
    assert [share_text(s) for s in (Fraction(1), Fraction(1, 10), Fraction(1, 4), Fraction(3, 10000))] == \
        ["1", "0.1", "0.25", "0.0003"]
    with pytest.raises(ValueError, match="more than 4 decimals"):
        share_text(Fraction(1, 3))


@pytest.mark.parametrize("text", ["1e999999999", "1E+999999999", "1e-999999999", "9" * 200, "0." + "0" * 150 + "1"])
def test_an_amount_whose_exponent_would_build_a_number_of_a_billion_digits_is_refused_at_once(text):
    """parse_amount reads round files (``betbox settle``), profiles, scripts and the dealer's
    stream events: Fraction of the Decimal "1e999999999" is exact, and built a number of a
    billion digits (10 s and counting); the exponent is bounded before it is made. The text
    in the message is bounded too."""
    with pytest.raises(ValueError, match="out of range"):
        parse_amount(text)
    with pytest.raises(ValueError, match="out of range"):
        event_from_dict({"type": "bets_closed", "wagers": {"1": {"main": text}}})
    with pytest.raises(ValueError) as err:
        parse_amount("x" * 1_000_000)
    assert len(str(err.value)) < 200
    assert parse_amount("1e3") == 1000 and parse_amount("0." + "0" * 20 + "5") == Fraction(5, 10**21)
