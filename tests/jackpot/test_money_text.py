"""The meters' exact decimal text (``pools.money``) is made in integers on the ingest's hot
path; it must say exactly what the Decimal-based one says, for every kind of value."""

from __future__ import annotations

import random
from fractions import Fraction

from firmware.jackpot.pools import _money_decimal, money


def test_money_in_integers_says_what_decimal_says():
    rng = random.Random(16)
    dens = [1, 2, 4, 5, 8, 10, 20, 25, 40, 100, 125, 1000, 3, 6, 7, 12, 2 ** 20, 5 ** 13, 10 ** 27, 10 ** 30]
    values = [Fraction(0), Fraction(1, 20), Fraction(-1, 2), Fraction(375, 10), Fraction(10 ** 28), Fraction(1, 3)]
    values += [Fraction(rng.randint(-10 ** rng.randint(1, 35), 10 ** rng.randint(1, 35)),
                        rng.choice([*dens, rng.randint(1, 10 ** 6)])) for _ in range(20000)]
    for v in values:
        assert money(v) == _money_decimal(v), v
    assert [money(Fraction(x)) for x in ("37.5", "0.05", "-0.5", "12", "1/3")] == ["37.5", "0.05", "-0.5", "12", "1/3"]


def test_a_claims_amount_text_is_what_the_fraction_says():
    """claims._amount normalises a wire decimal as text; it must be money(Fraction(text))
    for every decimal the wire lets through (and any other text the same way as before)."""
    from firmware.jackpot.claims import _amount

    rng = random.Random(18)
    texts = ["0", "-0", "0.00", "-0.00", "0.5", "-0.50", "5", "5.50", "10", "100.00", "1", "1.0000", "0.0001",
             "999999999999.99", "-999999999999.99", "007", "00.10", "1/3", " 5", "5\n", "1e3", "0.1234567890123"]
    for _ in range(20000):
        whole = str(rng.randint(0, 10 ** rng.randint(1, 12)))
        frac = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 4)))
        texts.append(rng.choice(["", "-"]) + whole + (f".{frac}" if frac else ""))
    for text in texts:
        assert _amount(text) == money(Fraction(text)), text
    assert _amount(None) is None
