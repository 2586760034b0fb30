"""Progressive pools: pure, exact arithmetic (``fractions.Fraction``), no I/O.

A pool starts at its seed. Each progressive wager contributes ``rate`` × wager; above the
maximum the rest goes to the overflow, which tops up the pool again when it is reseeded.
A hit that wins a share of the meter locks ``share × pool`` rounded down to the cent (the
sub-cent remainder stays in the pool, so nothing is created or lost). A 100% hit leaves the
pool *pending*: the meter shows PENDING and the locked amount until the hit is confirmed;
then the pool is reseeded (seed + overflow, up to the maximum). Contributions made while a
hit is pending are kept and count towards the next meter.

Near-simultaneous hits are taken in the order the controller persists them (one ingest
thread, one transaction each): the first locks the meter; a second meter-share hit that
arrives while the first is still pending is paid from the reseeded pool — the pool is
reseeded at that moment, before the second amount is locked.

A 100% hit is paid at the end of the round (Switch §3.7). If that round is voided instead
(Switch §5.1; a technical interruption with no outcome established, rws-blackjack-v5 §5.4),
its bets are returned and the hit never happened: the hit is *released*, not paid. The
locked amount goes back into the pool (up to the maximum; the rest to the overflow), the
meter is live again (unless another 100% hit is still pending) and nothing is reseeded.
If a second hit had meanwhile reseeded the pool, the released amount comes back on top of it.

Invariant (checked by the tests): ``seeds + contributions == amount + overflow + won``.
Fixed awards and envy bonuses (Switch §4.1.2) are paid by the table, not from the pool;
they are metered only.
"""

from __future__ import annotations

import functools
import reprlib
from dataclasses import asdict, dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from firmware.engine.money import EXACT_TEXT, round_down_to_cent

ZERO = Fraction(0)


def money(value: Fraction) -> str:
    """Exact decimal text (``"37.5"``), or ``"n/d"`` when the value has no finite decimal.
    In integers (the ingest's hot path: every amount of every report); Decimal's 28 digits
    decide beyond them, as before."""
    n, d = value.numerator, value.denominator
    if d == 1:
        return str(n) if len(str(abs(n))) <= 28 else _money_decimal(value)
    twos = (d & -d).bit_length() - 1            # d = 2**twos * 5**fives when it has a finite decimal
    rest, fives = d >> twos, 0
    while rest % 5 == 0:
        rest, fives = rest // 5, fives + 1
    if rest != 1:
        return f"{n}/{d}"
    places = max(twos, fives)
    digits = str(abs(n) * 10 ** places // d)
    if len(digits) > 28:
        return _money_decimal(value)
    digits = digits.rjust(places + 1, "0")
    return f"{'-' if n < 0 else ''}{digits[:-places]}.{digits[-places:]}"


def _money_decimal(value: Fraction) -> str:
    d = Decimal(value.numerator) / Decimal(value.denominator)
    if Fraction(d) == value:
        return format(d.normalize(), "f") if d != d.to_integral() else str(int(d))
    return f"{value.numerator}/{value.denominator}"


@functools.lru_cache(maxsize=4096)
def parse_money(text: str) -> Fraction:
    """A wire amount's Fraction; remembered (bets repeat the same few amounts; a Fraction
    is immutable, so one may be shared). Only :data:`EXACT_TEXT`'s forms (what :func:`money`
    writes): ``Fraction("1e999999999")`` would build a number of a billion digits."""
    if not EXACT_TEXT.match(text):
        raise ValueError(f"{reprlib.repr(text)} is not an amount")
    return Fraction(text)


class DamagedRow(ValueError):
    """An amount read back from the controller's database is not one it writes (a damaged or
    hostile file): the message names the row and the field."""


def stored_money(value: Any, where: str) -> Fraction:
    """An amount the controller stored (a claim's value, a booking's effect, a hit row), read
    strictly; DamagedRow naming ``where`` and the value, never an endless number."""
    if isinstance(value, str):
        try:
            return parse_money(value)
        except (ValueError, ZeroDivisionError):
            pass
    raise DamagedRow(f"{where}: {reprlib.repr(value)} is not an amount")


def cents(value: Fraction) -> str:
    """For meters: rounded down to the cent, two decimals (``"1234.50"``)."""
    v = round_down_to_cent(value)
    return f"{Decimal(v.numerator) / Decimal(v.denominator):.2f}"


@dataclass(frozen=True)
class PoolSpec:
    name: str
    seed: Fraction
    rate: Fraction           # contribution per unit wagered, 0 < rate < 1
    maximum: Fraction        # the meter never shows more; the rest goes to the overflow
    tables: tuple[str, ...]  # tables feeding this pool; ("*",) for every table

    def serves(self, table: str) -> bool:
        return "*" in self.tables or table in self.tables


@dataclass(frozen=True)
class PoolState:
    amount: Fraction
    overflow: Fraction = ZERO
    needs_seed: bool = False        # a 100% hit took the meter; reseed at confirmation
    pending: int = 0                # hits locked and not yet confirmed
    wagers: int = 0
    wagers_in: Fraction = ZERO
    contributions: Fraction = ZERO
    seeds: Fraction = ZERO          # seed money put in (initial + every reseed)
    hits: int = 0                   # meter-share hits
    won: Fraction = ZERO            # amounts locked for meter-share hits
    overflow_in: Fraction = ZERO    # contributions that went to the overflow
    fixed_hits: int = 0
    fixed_won: Fraction = ZERO
    envy: int = 0
    envy_won: Fraction = ZERO
    voided: int = 0
    reseeds: int = 0
    released: int = 0               # locked hits released because their round was voided
    shortfall: Fraction = ZERO      # seed money put in to pay a hit the pool held less than

    def to_json(self) -> dict[str, Any]:
        return {k: (money(v) if isinstance(v, Fraction) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: Any) -> "PoolState":
        """A pool's state as stored (the controller's database); ValueError naming the field
        a damaged or hostile database has wrong, never an endless number."""
        kinds = {k: type(v) for k, v in asdict(cls(ZERO)).items()}
        if not isinstance(data, dict):
            raise ValueError(f"a pool's state is {type(data).__name__}, not a table of its meters")
        fields: dict[str, Any] = {}
        for k, v in data.items():
            kind = kinds.get(k)
            if kind is Fraction and isinstance(v, str) and EXACT_TEXT.match(v):   # (never an exponent)
                fields[k] = Fraction(v)
            elif kind in (int, bool) and type(v) is kind:
                fields[k] = v
            else:
                raise ValueError(f"a pool's state {reprlib.repr(k)}: {reprlib.repr(v)} is not "
                                 f"{'a meter field' if kind is None else 'an amount' if kind is Fraction else kind.__name__}")
        return cls(**fields)


def _evolve(s: PoolState, **changes: Any) -> PoolState:
    """``dataclasses.replace`` without its walk over the fields on every call (one a report
    on the ingest's hot path): PoolState has no ``__post_init__`` and no init-only field."""
    new = object.__new__(PoolState)
    new.__dict__.update(s.__dict__, **changes)
    return new


def new_pool(spec: PoolSpec) -> PoolState:
    return PoolState(amount=spec.seed, seeds=spec.seed)


def _fill(spec: PoolSpec, amount: Fraction, add: Fraction) -> tuple[Fraction, Fraction]:
    """How much of ``add`` fits under the maximum, and what overflows."""
    room = max(ZERO, spec.maximum - amount)
    into = min(add, room)
    return into, add - into


def contribute(spec: PoolSpec, s: PoolState, wager: Fraction) -> tuple[PoolState, Fraction, Fraction]:
    """A progressive wager: the new state, and the contribution's split (pool, overflow)."""
    c = wager * spec.rate
    if c <= spec.maximum - s.amount:            # all of it fits (the usual case): fewer Fraction steps
        return (_evolve(s, amount=s.amount + c, wagers=s.wagers + 1, wagers_in=s.wagers_in + wager,
                        contributions=s.contributions + c), c, ZERO)
    into, over = _fill(spec, s.amount, c)
    return (_evolve(s, amount=s.amount + into, overflow=s.overflow + over, wagers=s.wagers + 1,
                    wagers_in=s.wagers_in + wager, contributions=s.contributions + c,
                    overflow_in=s.overflow_in + over), into, over)


def void_wager(s: PoolState, wager: Fraction, into: Fraction, over: Fraction) -> PoolState:
    """A wager returned because its round was voided: its contribution comes back out."""
    take_over = min(over, s.overflow)
    take_pool = into + (over - take_over)
    return _evolve(s, amount=s.amount - take_pool, overflow=s.overflow - take_over, wagers=s.wagers - 1,
                   wagers_in=s.wagers_in - wager, contributions=s.contributions - into - over,
                   overflow_in=s.overflow_in - over, voided=s.voided + 1)


def reseed(spec: PoolSpec, s: PoolState) -> PoolState:
    """Seed money in, then the overflow up to the maximum."""
    amount = s.amount + spec.seed
    into, _ = _fill(spec, amount, s.overflow)
    return _evolve(s, amount=amount + into, overflow=s.overflow - into, seeds=s.seeds + spec.seed,
                   needs_seed=False, reseeds=s.reseeds + 1)


def lock_hit(spec: PoolSpec, s: PoolState, share: Fraction) -> tuple[PoolState, Fraction]:
    """A meter-share hit: the new state and the amount locked for it."""
    if not ZERO < share <= 1:
        raise ValueError(f"a meter share must be in (0, 1], not {share}")
    if s.needs_seed:
        s = reseed(spec, s)
    locked = round_down_to_cent(share * s.amount)
    return _evolve(s, amount=s.amount - locked, won=s.won + locked, hits=s.hits + 1,
                   pending=s.pending + 1, needs_seed=s.needs_seed or share == 1), locked


def lock_amount(spec: PoolSpec, s: PoolState, share: Fraction, locked: Fraction) -> PoolState:
    """A meter-share hit for the amount the table pays: ``share`` × the meter its round
    opened with (rounded down to the cent), agreed by the seat's and the dealer's records.
    The round's own contributions, and any since that meter was broadcast, stay in the pool.
    Should the pool hold less (another hit took the meter after the round opened), the
    difference is seed money (counted in ``shortfall``): the table's number is paid."""
    if not ZERO < share <= 1:
        raise ValueError(f"a meter share must be in (0, 1], not {share}")
    if locked <= 0 or (locked * 100).denominator != 1:
        raise ValueError(f"a locked amount is a positive whole number of cents, not {locked}")
    if s.needs_seed:
        s = reseed(spec, s)
    short = max(ZERO, locked - s.amount)
    return _evolve(s, amount=s.amount + short - locked, won=s.won + locked, hits=s.hits + 1,
                   seeds=s.seeds + short, shortfall=s.shortfall + short, pending=s.pending + 1,
                   needs_seed=s.needs_seed or share == 1)


def confirm_hit(spec: PoolSpec, s: PoolState) -> PoolState:
    """A locked hit was paid: when none is left pending, a taken meter is reseeded."""
    s = _evolve(s, pending=max(0, s.pending - 1))
    if s.pending == 0 and s.needs_seed:
        s = reseed(spec, s)
    return s


def release_hit(spec: PoolSpec, s: PoolState, locked: Fraction, full: bool, other_full_pending: bool) -> PoolState:
    """A locked meter hit whose round was voided: the amount returns to the pool, not paid.
    ``full``: it was a 100% hit; ``other_full_pending``: another 100% hit is still locked."""
    into, over = _fill(spec, s.amount, locked)
    return _evolve(s, amount=s.amount + into, overflow=s.overflow + over, won=s.won - locked,
                   hits=s.hits - 1, pending=max(0, s.pending - 1),
                   needs_seed=s.needs_seed and (not full or other_full_pending),
                   released=s.released + 1)


def fixed_award(s: PoolState, amount: Fraction) -> PoolState:
    return _evolve(s, fixed_hits=s.fixed_hits + 1, fixed_won=s.fixed_won + amount)


def envy_bonus(s: PoolState, amount: Fraction) -> PoolState:
    return _evolve(s, envy=s.envy + 1, envy_won=s.envy_won + amount)


def balanced(s: PoolState) -> bool:
    return s.seeds + s.contributions == s.amount + s.overflow + s.won


def meter_view(spec: PoolSpec, s: PoolState, pending_hits: list[dict[str, Any]]) -> dict[str, Any]:
    """What the seats show: the live meter, or PENDING with the locked amount."""
    return {"state": "pending" if s.pending else "live",
            "amount": cents(s.amount if not s.needs_seed else s.amount + spec.seed),
            "pending": pending_hits,
            "seed": cents(spec.seed), "maximum": cents(spec.maximum)}



