"""The jackpot role's configuration: a unit configuration with ``role = "jackpot"``, read
strictly by :mod:`firmware.config` (unknown keys and bad values are errors naming
file, section and key; ``docs/examples/jackpot.toml``)::

    [unit]
    role = "jackpot"
    id = "main"                   # the link id in the jackpot topics
    state_dir = "/var/lib/betbox/jackpot"
    [link]
    broker = "mqtts://broker.local:8883"
    username = "jackpot/main"
    password = "..."
    [link.tls]
    ca = "ca.pem"
    [jackpot]
    db = "/var/lib/betbox/jackpot/jackpot.db"   # default: state_dir/jackpot.db
    max_held = 2000               # claims one seat may hold waiting for the dealer's record
    [jackpot.pools.main]
    seed = "1000"
    rate = "0.15"                 # of each progressive wager; or "15%"
    maximum = "250000"
    tables = ["*"]                # or ["table-1", "table-2"]
    [store]                       # optional: PostgreSQL instead of the SQLite file (hot standby)
    url = "postgresql://jackpot@db.local:5432/betbox"   # no password here
    password_file = "pg.pass"     # the password, alone in a file (relative: to this file)

This module reads the ``[jackpot]`` section (:func:`read_jackpot_section`, the pools with
:func:`load_pools`); :func:`firmware.config.load_jackpot_config` reads the whole file.
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from firmware.engine.money import parse_amount
from firmware.engine.strict import Section
from firmware.link import topics
from firmware.link.config import LinkConfig, LinkConfigError
from firmware.runtime.wire import MAX_WIRE_AMOUNT

from .pools import PoolSpec

if TYPE_CHECKING:
    from .pg import PgTarget


MAX_HELD = 2000             # claims of one unit that may wait for their counterpart at once
#: The highest ``[jackpot] max_held`` taken.
MAX_HELD_LIMIT = 1_000_000


class JackpotConfigError(LinkConfigError):
    pass


@dataclass(frozen=True)
class JackpotConfig:
    link: LinkConfig
    db: Path
    link_id: str
    pools: tuple[PoolSpec, ...]
    raw: Mapping[str, Any]
    store: PgTarget | None = None   # [store] url (PostgreSQL); None: SQLite at ``db``
    max_held: int = MAX_HELD        # [jackpot] max_held: claims one seat may hold at once


_POOL = {"seed", "rate", "maximum", "tables"}


def _money(where: str, key: str, value: Any) -> Fraction:
    shown = reprlib.repr(value)         # (a 5,000-digit value is named, not printed)
    try:
        a = parse_amount(value)
    except ValueError:
        raise JackpotConfigError(f"[{where}] {key}: {shown} is not an amount") from None
    # at most MAX_WIRE_AMOUNT: a unit refuses a controller's meter above it (wire_amount)
    if a <= 0 or a.denominator not in (1, 2, 4, 5, 10, 20, 25, 50, 100) or a > MAX_WIRE_AMOUNT:
        raise JackpotConfigError(f"[{where}] {key}: {shown} must be a positive amount in whole cents, "
                                 f"at most {MAX_WIRE_AMOUNT}")
    return a


def _rate(where: str, value: Any) -> Fraction:
    text = value.strip() if isinstance(value, str) else value
    try:
        if isinstance(text, str) and text.endswith("%"):
            r = parse_amount(text[:-1]) / 100
        else:
            r = parse_amount(text)
    except ValueError:
        raise JackpotConfigError(f"[{where}] rate: {value!r} is not a rate (\"0.15\" or \"15%\")") from None
    if not 0 < r < 1:
        raise JackpotConfigError(f"[{where}] rate: {value!r} must be more than 0 and less than 1")
    return r


def load_pools(data: Mapping[str, Any], where: str = "jackpot.pools") -> tuple[PoolSpec, ...]:
    if not isinstance(data, Mapping) or not data:
        raise JackpotConfigError(f"[{where}] must hold at least one pool table")
    out = []
    for name, p in data.items():
        w = f"{where}.{name}"
        try:
            topics.check_link_id(name)
        except ValueError as exc:
            raise JackpotConfigError(f"[{w}] {exc}") from None
        if not isinstance(p, Mapping):
            raise JackpotConfigError(f"[{w}] must be a table")
        unknown = sorted(set(p) - _POOL)
        if unknown:
            raise JackpotConfigError(f"[{w}] unknown key {unknown[0]!r} (known: {', '.join(sorted(_POOL))})")
        for key in ("seed", "rate", "maximum"):
            if key not in p:
                raise JackpotConfigError(f"[{w}] {key} is missing")
        seed, maximum = _money(w, "seed", p["seed"]), _money(w, "maximum", p["maximum"])
        if maximum < seed:
            raise JackpotConfigError(f"[{w}] maximum: {p['maximum']!r} is below the seed {p['seed']!r}")
        tables = p.get("tables", ["*"])
        if (not isinstance(tables, list) or not tables
                or not all(isinstance(t, str) and (t == "*" or topics.LINK_ID.match(t)) for t in tables)):
            raise JackpotConfigError(f"[{w}] tables: {tables!r} must be a list of table ids or [\"*\"]")
        out.append(PoolSpec(name, seed, _rate(w, p["rate"]), maximum, tuple(tables)))
    return tuple(out)


def read_store_section(data: Any, base: Path | None, source: str = "<config>") -> PgTarget:
    """``[store]`` url = "postgresql://user@host:port/db" and password_file (relative: to
    ``base``); the URL must not carry the password."""
    from .pg import PgTarget, check_url  # psycopg only where PostgreSQL is configured

    st = Section(data, "store", source, JackpotConfigError)
    url = st.get("url", str)
    try:
        check_url(url)
    except ValueError as exc:
        raise st.fail("url", str(exc)) from None
    password_file = None
    if "password_file" in st.data:
        password_file = Path(st.get("password_file", str))
        if base is not None and not password_file.is_absolute():
            password_file = base / password_file
    st.finish()
    return PgTarget(url, password_file)


def read_jackpot_section(data: Any, unit_id: str, state_dir: Path, link: LinkConfig,
                         base: Path | None, source: str = "<config>",
                         store: PgTarget | None = None) -> JackpotConfig:
    """``[jackpot]`` db (default ``state_dir/jackpot.db``, relative to ``base``), max_held
    (default :data:`MAX_HELD`) and pools."""
    j = Section(data, "jackpot", source, JackpotConfigError)
    db = Path(j.get("db", str, str(state_dir / "jackpot.db")))
    if base is not None and not db.is_absolute():
        db = base / db
    pools = j.get("pools", dict, DEFAULT_POOLS)
    # bounded: at least one claim may wait; at most what a controller's memory and one
    # count query stay small for
    max_held = j.int_in("max_held", 1, MAX_HELD_LIMIT, MAX_HELD)
    j.finish()
    try:
        specs = load_pools(pools)
    except JackpotConfigError as exc:
        raise JackpotConfigError(f"{source}: {exc}") from None
    raw: dict[str, Any] = {"role": "jackpot", "unit": {"id": unit_id}, "jackpot": {"db": str(db), "pools": pools}}
    if "max_held" in j.data:           # only when set: an unchanged file keeps its config hash
        raw["jackpot"]["max_held"] = max_held
    if store is not None:
        raw["store"] = {"url": store.url}
    return JackpotConfig(link, db, unit_id, specs, raw, store, max_held)


DEFAULT_POOLS = {"main": {"seed": "1000", "rate": "0.15", "maximum": "250000", "tables": ["*"]}}
