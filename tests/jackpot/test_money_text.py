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
