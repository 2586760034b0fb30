"""Unit configuration: TOML, read strictly. An unknown key or an out-of-range value stops
start-up with a message naming the section and the key.

::

    [unit]      role = "dealer" | "seat", id, table, state_dir
    [bus]       transport = "inproc"            (the MQTT transport is the next issue)
    [journal]   synchronous = "FULL" | "EXTRA"
    [game]      profile, decks                  (dealer)
    [limits]    BET = [minimum, maximum]        (dealer)
    [seat]      box, spots, chips (CSV registry), confirm_cycles, release_cycles
    [hardware.PORT]  backend = "mock" | "serial" | "gpio", then the backend's own options
                PORT: card_shoe, console (dealer); chip_reader, lamps (seat)
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from firmware.engine.money import parse_amount
from firmware.engine.profile import ProfileError, load_profile
from firmware.strict import Section

ROLES = ("dealer", "seat")
TRANSPORTS = ("inproc",)
PORTS = {"dealer": ("card_shoe", "console"), "seat": ("chip_reader", "lamps")}
ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class ConfigError(ValueError):
    """A configuration that must not start a unit; says file, section and key."""


class _Section(Section):
    """A configuration table: strict reading plus identifiers."""

    def __init__(self, data: Any, name: str, source: str) -> None:
        super().__init__(data, name, source, ConfigError)

    def ident(self, key: str) -> str:
        value = self.get(key, str)
        if not ID.match(value):
            raise self.fail(key, f"{value!r}: letters, digits, '_', '.', '-' (at most 64)")
        return value


@dataclass(frozen=True)
class UnitConfig:
    role: str
    unit_id: str
    table: str
    state_dir: Path
    transport: str = "inproc"
    synchronous: str = "FULL"
    profile: str | None = None
    decks: int | None = None
    limits: Mapping[str, tuple[Fraction, Fraction]] = field(default_factory=dict)
    box: int | None = None
    spots: tuple[str, ...] = ()
    chips: Path | None = None
    confirm_cycles: int = 2
    release_cycles: int = 3
    hardware: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def parse_config(data: Mapping[str, Any], source: str = "<config>") -> UnitConfig:
    top = _Section(dict(data), "", source)
    unit = _Section(top.get("unit", dict), "unit", source)
    role = unit.choice("role", ROLES)
    unit_id = unit.ident("id")
    table = unit.ident("table")
    state_dir = Path(unit.get("state_dir", str))
    unit.finish()
    bus = _Section(top.get("bus", dict, {}), "bus", source)
    transport = bus.choice("transport", TRANSPORTS, "inproc")
    bus.finish()
    journal = _Section(top.get("journal", dict, {}), "journal", source)
    synchronous = journal.choice("synchronous", ("FULL", "EXTRA"), "FULL")
    journal.finish()
    kw: dict[str, Any] = {}
    if role == "dealer":
        game = _Section(top.get("game", dict), "game", source)
        name = game.get("profile", str)
        try:
            profile = load_profile(name)
        except ProfileError as exc:
            raise game.fail("profile", str(exc)) from None
        lo, hi = profile.decks
        kw["profile"] = name
        kw["decks"] = game.int_in("decks", lo, hi, profile.default_decks)
        game.finish()
        limits_s = _Section(top.get("limits", dict, {}), "limits", source)
        limits: dict[str, tuple[Fraction, Fraction]] = {}
        for bet in list(limits_s.data):
            if bet not in profile.bet_names():
                limits_s.used.add(bet)
                raise limits_s.fail(bet, f"not a bet at {profile.name} (bets: {', '.join(profile.bet_names())})")
            pair = limits_s.get(bet, list)
            try:
                a, b = (parse_amount(v) for v in pair)
            except (ValueError, TypeError):
                raise limits_s.fail(bet, f"expected [minimum, maximum], got {pair!r}") from None
            if len(pair) != 2 or a < 0 or b <= 0 or a > b:
                raise limits_s.fail(bet, f"{pair!r} is not a valid [minimum, maximum]")
            limits[bet] = (a, b)
        limits_s.finish()
        kw["limits"] = limits
    else:
        seat = _Section(top.get("seat", dict), "seat", source)
        kw["box"] = seat.int_in("box", 1, 14)
        spots = seat.get("spots", list)
        if not spots or not all(isinstance(s, str) and ID.match(s) for s in spots) or len(set(spots)) != len(spots):
            raise seat.fail("spots", f"{spots!r}: a list of distinct spot names")
        if "main" not in spots:
            raise seat.fail("spots", "a seat needs a 'main' spot")
        kw["spots"] = tuple(spots)
        kw["chips"] = Path(seat.get("chips", str))
        kw["confirm_cycles"] = seat.int_in("confirm_cycles", 1, 20, 2)
        kw["release_cycles"] = seat.int_in("release_cycles", 1, 50, 3)
        seat.finish()
    hw = _Section(top.get("hardware", dict), "hardware", source)
    hardware: dict[str, dict[str, Any]] = {}
    for port in PORTS[role]:
        section = _Section(hw.get(port, dict), f"hardware.{port}", source)
        options = dict(section.data)
        section.choice("backend", ("mock", "serial", "gpio"))
        options.pop("backend")
        hardware[port] = {"backend": section.data["backend"], "options": options}
    hw.finish()
    top.finish()
    return UnitConfig(role=role, unit_id=unit_id, table=table, state_dir=state_dir, transport=transport,
                      synchronous=synchronous, hardware=hardware, **kw)


def load_config(path: str | Path) -> UnitConfig:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return parse_config(data, str(path))
