"""Exact money: amounts are :class:`fractions.Fraction`, never floats.

3:2 on 25 is 37.5 exactly. Amounts come in as integers, decimal strings or floats written
as decimals (``12.5``) and go out as the shortest exact decimal.

The one money codec (issue #15): :func:`parse_amount` reads; :func:`to_json_number` is a
table message's JSON number; :func:`wire_text` the jackpot report's exact decimal text
(whole cents, or it raises); :func:`share_text` a meter share; :func:`exact_text` a
checkpoint's exact fraction (``"15/2"``); :func:`display_text` (``format_amount``) what a
person reads; :func:`is_whole_cents` the cents check.
"""

from __future__ import annotations

import re
import reprlib
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

#: Pro-rated stakes are rounded down to this unit so settlements stay exact decimals.
CENT = Fraction(1, 100)
#: An amount's decimal exponent, either side of the point: Fraction of a Decimal is exact, so
#: "1e999999999" would build a number of a billion digits (far beyond any bound of a caller).
MAX_EXPONENT = 100


def parse_amount(value: Any) -> Fraction:
    """An amount of money from JSON/TOML; raises ValueError naming what is wrong."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not an amount")
    if isinstance(value, int):
        return whole_amount(value)
    if isinstance(value, Fraction):
        return value
    if isinstance(value, (float, str, Decimal)):
        try:
            d = Decimal(str(value).strip())
        except InvalidOperation:
            raise ValueError(f"{reprlib.repr(value)} is not an amount") from None
        if not d.is_finite():
            raise ValueError(f"{reprlib.repr(value)} is not an amount")
        exponent = d.as_tuple().exponent
        if d.adjusted() > MAX_EXPONENT or (isinstance(exponent, int) and exponent < -MAX_EXPONENT):
            raise ValueError(f"{reprlib.repr(value)} is out of range (at most {MAX_EXPONENT} digits "
                             "either side of the point)")
        return Fraction(d)
    # (reprlib: a text of megabytes is named, not printed whole; made only for a refusal)
    raise ValueError(f"{reprlib.repr(value)} is not an amount")


#: Fractions of whole numbers, shared: a Fraction is immutable, and making one is Python
#: code (~0.5 us; an addition ~2 us). Most wagers, nets and ledger totals are whole units.
_WHOLE: dict[int, Fraction] = {}


#: each shared whole amount's integer, by the amount's identity (``whole_by_id.get(id(a))``:
#: a dict look-up instead of Fraction's Python-level ``numerator``/``denominator``); the
#: table above never lets go of an amount, so an id here is never reused for another object.
#: Read only: written by :func:`whole_amount`.
whole_by_id: dict[int, int] = {}


def whole_amount(n: int) -> Fraction:
    """``Fraction(n)``, from a bounded table of shared values."""
    found = _WHOLE.get(n)
    if found is None:
        found = Fraction(n)
        if len(_WHOLE) < 65536:        # amounts come from outside: keep the table bounded
            _WHOLE[n] = found
            whole_by_id[id(found)] = n
    return found


def parse_odds(value: Any) -> Fraction:
    """Odds to one: ``"3:2"``, ``"3 to 2"``, ``25`` or ``1.5``."""
    if isinstance(value, str) and (":" in value or " to " in value):
        left, _, right = value.replace(" to ", ":").partition(":")
        try:                           # each side an amount: Fraction("1e999999999") is exact, and endless
            num, den = parse_amount(left), parse_amount(right)
        except ValueError as exc:
            raise ValueError(f"cannot read odds {reprlib.repr(value)} (write e.g. \"3:2\"): {exc}") from None
        if den <= 0 or num <= 0:
            raise ValueError(f"odds {value!r} must be positive")
        return num / den
    try:
        odds = parse_amount(value)
    except ValueError:
        raise ValueError(f"cannot read odds {value!r} (write e.g. \"3:2\" or 25)") from None
    if odds <= 0:
        raise ValueError(f"odds {value!r} must be positive")
    return odds


def to_json_number(amount: Fraction) -> int | float | str:
    """The exact decimal for JSON: an int when whole, else a float whose repr is exact.

    Amounts here are sums of cents and halves, so they always have a short exact decimal;
    anything that does not (it cannot arise from settlement) is written as a string
    fraction rather than rounded silently.
    """
    whole = whole_by_id.get(id(amount))
    if whole is not None:              # a shared whole amount: no Fraction property read
        return whole
    if amount.denominator == 1:
        return amount.numerator        # (int(amount) is Python code: this runs per amount)
    d = Decimal(amount.numerator) / Decimal(amount.denominator)
    if Fraction(d) == amount:
        f = float(d)
        if Fraction(repr(f)) == amount:
            return f
        return str(d)
    return f"{amount.numerator}/{amount.denominator}"


def format_amount(amount: Fraction) -> str:
    """For people: ``37.5``, ``-10``, ``1234.56``."""
    value = to_json_number(amount)
    return str(value)


#: What a person reads (the screen words it further: thousands, sign; ui/presenter.py).
display_text = format_amount


def wire_text(amount: Fraction) -> str:
    """An exact amount for a jackpot report: ``"5"``, ``"37.5"``, ``"-12.25"``; an amount
    that is not a whole number of cents raises ValueError (it cannot be paid)."""
    if not is_whole_cents(amount):
        raise ValueError(f"{amount} is not a whole number of cents")
    whole, cents = divmod(abs(amount.numerator * 100 // amount.denominator), 100)
    sign = "-" if amount < 0 else ""
    return f"{sign}{whole}" if cents == 0 else f"{sign}{whole}.{cents:02d}".rstrip("0")


def share_text(share: Fraction) -> str:
    """A meter share for a jackpot report (at most 4 decimals): ``"1"``, ``"0.1"``."""
    if share == 1:
        return "1"
    text = f"{float(share):.4f}".rstrip("0")
    if Fraction(text) != share:
        raise ValueError(f"meter share {share} has more than 4 decimals")
    return text


def exact_text(amount: Fraction) -> str:
    """Exact, whatever the amount: ``"5"``, ``"15/2"`` (a checkpoint's form; never rounded)."""
    return str(Fraction(amount))


#: a stored amount (a checkpoint, the controller's books): :func:`exact_text`'s ``"15/2"`` or a
#: decimal's ``"1234.5"``, never an exponent: Fraction("1e999999999") is exact, a billion digits
EXACT_TEXT = re.compile(r"-?[0-9]{1,60}(?:\.[0-9]{1,60})?(?:/[0-9]{1,60})?\Z")


def is_whole_cents(amount: Fraction) -> bool:
    """Chips and wagers come in cents; anything finer cannot be placed (or journalled)."""
    # a Fraction is kept in lowest terms: whole cents exactly when its denominator divides 100
    # (no division: this runs for every wager of every round)
    return 100 % amount.denominator == 0


def round_down_to_cent(amount: Fraction) -> Fraction:
    return Fraction(int(amount / CENT)) * CENT if amount >= 0 else -round_down_to_cent(-amount)
