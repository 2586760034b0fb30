"""The runtime's own sections of a unit configuration, read strictly: ``[journal]``,
``[game]`` and ``[limits]`` (dealer), ``[seat]`` and ``[hardware.PORT]``. Each reader takes its
table and returns the :class:`firmware.config.UnitConfig` fields it fills; :mod:`firmware.config`
assembles the unit's configuration from these and the other packages' sections.
"""

from __future__ import annotations

import re
import reprlib
from fractions import Fraction
from pathlib import Path
from typing import Any

from firmware.engine.money import parse_amount
from firmware.engine.profile import ProfileError, load_profile
from firmware.engine.strict import Section

from .dealer import CLOSE_WAIT, DEALER_LAMPS
from .wire import MAX_WIRE_AMOUNT  # a table's amounts (README; betbox settle's own bound)

ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
MAX_BOX = 14                                # a table's boxes: [seat] box 1..14
PORTS = {"dealer": ("card_shoe", "console"), "seat": ("chip_reader", "lamps")}
#: Ports a role may have fitted or not: the dealer console's lamps (issue #14.4)
OPTIONAL_PORTS = {"dealer": ("lamps",), "seat": ()}
MAX_CLOSE_WAIT = 600.0
MAX_ROUNDS = 1_000_000
STORAGE_LOW = 64 * 1024 * 1024
STORAGE_RESERVE = 4 * 1024 * 1024


class ConfigError(ValueError):
    """A configuration that must not start a unit; says file, section and key."""


class UnitSection(Section):
    """A configuration table: strict reading plus identifiers."""

    def __init__(self, data: Any, name: str, source: str, error: type[ValueError] = ConfigError) -> None:
        super().__init__(data, name, source, error)

    def path(self, key: str) -> Path:
        """A file or directory: never empty (that is the working directory, wherever the unit
        was started) and without a NUL (no file has one: the start would fail on it)."""
        value = self.get(key, str)
        if not value or "\0" in value:
            raise self.fail(key, f"{reprlib.repr(value)} is not a path")
        return Path(value)

    def ident(self, key: str) -> str:
        value = self.get(key, str)
        if not ID.match(value):
            raise self.fail(key, f"{value!r}: letters, digits, '_', '.', '-' (at most 64)")
        return value


def read_journal(journal: UnitSection) -> dict[str, Any]:
    """``[journal]``: synchronous, rotate_rounds, keep_segments, storage_low, storage_reserve."""
    synchronous = journal.choice("synchronous", ("FULL", "EXTRA"), "FULL")
    rotate_rounds = journal.int_in("rotate_rounds", 1, MAX_ROUNDS, None) if "rotate_rounds" in journal.data else None
    keep_segments = journal.int_in("keep_segments", 0, MAX_ROUNDS, None) if "keep_segments" in journal.data else None
    if keep_segments is not None and rotate_rounds is None:
        raise journal.fail("keep_segments", "needs rotate_rounds: a journal that never rotates has no segments")
    storage_low = journal.int_in("storage_low", 0, 2**50, STORAGE_LOW)
    storage_reserve = journal.int_in("storage_reserve", 0, 2**50, STORAGE_RESERVE)
    if storage_reserve > storage_low:
        raise journal.fail("storage_reserve", f"{storage_reserve} is above storage_low ({storage_low}): "
                                              "the pit is alarmed before the unit halts")
    journal.finish()
    return {"synchronous": synchronous, "rotate_rounds": rotate_rounds, "keep_segments": keep_segments,
            "storage_low": storage_low, "storage_reserve": storage_reserve}


def _close_wait(game: UnitSection) -> float | None:
    """``[game] close_wait``: seconds (above 0, at most 600), or ``false``: no bound."""
    value = game.get("close_wait", (int, float, bool), CLOSE_WAIT)
    if value is False:
        return None
    if value is True or not 0 < value <= MAX_CLOSE_WAIT or value != value:
        raise game.fail("close_wait", f"{value!r}: seconds above 0 and at most {MAX_CLOSE_WAIT:g}, "
                                      "or false to wait for every seat")
    return float(value)


def read_dealer(game: UnitSection, limits_s: UnitSection) -> dict[str, Any]:
    """``[game]`` profile, decks, close_wait and ``[limits]`` BET = [minimum, maximum]."""
    name = game.get("profile", str)
    try:
        profile = load_profile(name)
    except ProfileError as exc:
        raise game.fail("profile", str(exc)) from None
    lo, hi = profile.decks
    out: dict[str, Any] = {"profile": name, "decks": game.int_in("decks", lo, hi, profile.default_decks),
                           "close_wait": _close_wait(game)}
    game.finish()
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
        if len(pair) != 2 or a < 0 or b <= 0 or a > b or b > MAX_WIRE_AMOUNT:
            raise limits_s.fail(bet, f"{reprlib.repr(pair)} is not a valid [minimum, maximum] "
                                     f"(0 <= minimum <= maximum, at most {MAX_WIRE_AMOUNT})")
        limits[bet] = (a, b)
    limits_s.finish()
    out["limits"] = limits
    return out


def read_seat(seat: UnitSection) -> dict[str, Any]:
    """``[seat]`` box, spots, chips, confirm_cycles, release_cycles."""
    out: dict[str, Any] = {"box": seat.int_in("box", 1, MAX_BOX)}
    spots = seat.get("spots", list)
    if not spots or not all(isinstance(s, str) and ID.match(s) for s in spots) or len(set(spots)) != len(spots):
        raise seat.fail("spots", f"{spots!r}: a list of distinct spot names")
    if "main" not in spots:
        raise seat.fail("spots", "a seat needs a 'main' spot")
    out["spots"] = tuple(spots)
    out["chips"] = seat.path("chips")
    out["confirm_cycles"] = seat.int_in("confirm_cycles", 1, 20, 2)
    out["release_cycles"] = seat.int_in("release_cycles", 1, 50, 3)
    seat.finish()
    return out


def read_hardware(hw: UnitSection, role: str, source: str) -> dict[str, dict[str, Any]]:
    """``[hardware.PORT]`` backend = "mock" | "serial" | "gpio" for each of the role's ports;
    the backend's own options are checked by hal when the port opens."""
    hardware: dict[str, dict[str, Any]] = {}
    for port in PORTS[role] + OPTIONAL_PORTS[role]:
        if port in OPTIONAL_PORTS[role] and port not in hw.data:
            continue
        section = UnitSection(hw.get(port, dict), f"hardware.{port}", source)
        options = dict(section.data)
        section.choice("backend", ("mock", "serial", "gpio"))
        options.pop("backend")
        hardware[port] = {"backend": section.data["backend"], "options": options}
    if role == "dealer" and "lamps" in hardware:
        _dealer_lamps(UnitSection(hw.data["lamps"], "hardware.lamps", source))
    hw.finish()
    return hardware


def _dealer_lamps(section: UnitSection) -> None:
    """The dealer console's lamps are the ones it drives: a misspelt one would never light."""
    section.used.add("lamps")
    lamps = section.data.get("lamps")
    if not isinstance(lamps, (list, dict)) or not lamps:
        raise section.fail("lamps", f"the dealer's lamps, some of {', '.join(DEALER_LAMPS)} "
                                    "(a list for the mock backend, lamp = pin for gpio)")
    unknown = [str(lamp) for lamp in lamps if lamp not in DEALER_LAMPS]
    if unknown:
        raise section.fail("lamps", f"{', '.join(map(repr, unknown))}: the dealer drives only "
                                    f"{', '.join(DEALER_LAMPS)}")
