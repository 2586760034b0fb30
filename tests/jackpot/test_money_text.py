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


def test_a_contribution_that_fits_books_what_the_full_split_books():
    """pools.contribute's short way (the contribution fits under the maximum) leaves the
    same state and split as the full one (_fill), to the last fraction of a cent, near the
    maximum and past it, and the books stay balanced."""
    from firmware.jackpot import pools as P

    rng = random.Random(181)
    spec = P.PoolSpec("main", Fraction(1000), Fraction(15, 1000), Fraction(1100), ("*",))
    s = P.new_pool(spec)
    for _ in range(5000):
        wager = Fraction(rng.randint(1, 100000), rng.choice([1, 2, 4, 10, 100]))
        room = max(P.ZERO, spec.maximum - s.amount)
        c = wager * spec.rate
        into, over = min(c, room), c - min(c, room)
        expect = P._evolve(s, amount=s.amount + into, overflow=s.overflow + over, wagers=s.wagers + 1,
                           wagers_in=s.wagers_in + wager, contributions=s.contributions + c,
                           overflow_in=s.overflow_in + over)
        s, got_into, got_over = P.contribute(spec, s, wager)
        assert (s, got_into, got_over) == (expect, into, over)
        assert P.balanced(s)
        if rng.random() < 0.01:                     # a hit takes the meter now and then
            s, _ = P.lock_hit(spec, s, Fraction(1))
            s = P.confirm_hit(spec, s)
    assert s.overflow > 0 and s.reseeds > 0        # both ways were taken
