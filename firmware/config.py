"""Unit configuration: TOML, read strictly. An unknown key or an out-of-range value stops
start-up with a message naming the section and the key.

::

    [unit]      role = "dealer" | "seat" | "jackpot", id, table (not for jackpot), state_dir
    [bus]       transport = "inproc"            (alone, in one process; see [link])
    [link]      broker = "mqtt://HOST:PORT" | "mqtts://HOST:PORT", username, password,
                keepalive, reconnect_max, max_payload (bytes; larger incoming messages are
                dropped unread), jackpot (the controller's link id, default "main")
    [link.tls]  ca, cert, key                   (files; relative to the configuration file)
    [journal]   synchronous = "FULL" | "EXTRA", rotate_rounds (1..1000000; default: never rotate),
                keep_segments (0..1000000; default: keep all; needs rotate_rounds),
                storage_low (bytes free on the state partition below which the pit is alarmed;
                default 64 MiB), storage_reserve (bytes below which the unit halts; default 4 MiB)
    [game]      profile, decks, close_wait      (dealer; close_wait: seconds a seat has to lock its
                bets after "no more bets", above 0 and at most 600, default 5; false: wait for all)
    [limits]    BET = [minimum, maximum]        (dealer)
    [seat]      box, spots, chips (CSV registry), confirm_cycles, release_cycles
    [display]   lang, size, fullscreen, pin_hash    (seat: run the seat display in a window)
    [hardware.PORT]  backend = "mock" | "serial" | "gpio", then the backend's own options
                PORT: card_shoe, console, lamps (optional: pit_call, round_open,
                no_more_bets) (dealer); chip_reader, lamps (seat)
    [jackpot]   db, max_held, pools.NAME = {seed, rate, maximum, tables}   (role "jackpot")
    [store]     url = "postgresql://...", password_file   (role "jackpot"; absent: SQLite at db)
    [verify]    at_start (default false), tree (the installed release, default /opt/betbox/current),
                keyring (default /etc/rauc/keyring.pem): ``betbox verify`` at start (dealer, seat)

With ``[link]`` the unit's bus is MQTT: its id on the broker (and its username under the
documented ACL) is ``<table>/<id>``; a seat reports to the jackpot controller through a
durable outbox in ``state_dir``. Without it the unit runs on the in-process bus, alone.
The jackpot role needs ``[link]``; its id is the link id in the jackpot topics.

This module assembles a unit's configuration; each package reads only its own section:
:mod:`firmware.runtime.config` the runtime's ([journal], [game], [limits], [seat],
[hardware]), :mod:`firmware.link.config` [link], :mod:`firmware.jackpot.config` [jackpot].
[unit], [bus], [display] and [verify] are read here.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from firmware.engine.strict import read_text
from firmware.jackpot.config import JackpotConfig, JackpotConfigError, read_jackpot_section, read_store_section
from firmware.link import topics
from firmware.link.config import LinkConfig, LinkConfigError, load_link_config
from firmware.runtime.config import (
    ID,
    STORAGE_LOW,
    STORAGE_RESERVE,
    ConfigError,
    UnitSection,
    read_dealer,
    read_hardware,
    read_journal,
    read_seat,
)
from firmware.runtime.dealer import CLOSE_WAIT

__all__ = ["ID", "ConfigError", "DisplayConfig", "UnitConfig", "VerifyConfig", "load_config",
           "load_jackpot_config", "parse_config"]

ROLES = ("dealer", "seat", "jackpot")
TRANSPORTS = ("inproc",)
#: the seat display's languages (ui.i18n reads these) and screen sizes in pixels (ui.app)
DISPLAY_LANGUAGES: dict[str, str] = {"en": "English", "zh": "简体中文", "ms": "Bahasa Melayu"}
DISPLAY_SIZES: dict[str, tuple[int, int]] = {"800x480": (800, 480), "1024x600": (1024, 600),
                                             "1280x800": (1280, 800)}
#: a technician PIN's salted hash (ui.service.hash_pin: scrypt$N$r$p$salt$hash, hex)
PIN_HASH = re.compile(r"^scrypt\$[0-9]{1,8}\$[0-9]{1,3}\$[0-9]{1,3}\$[0-9a-f]{16,128}\$[0-9a-f]{32,128}\Z")
MAX_CONFIG_BYTES = 1_000_000                # a unit's configuration is a few hundred lines


@dataclass(frozen=True)
class DisplayConfig:
    lang: str = "en"
    size: str = "800x480"
    fullscreen: bool | None = None          # None: full screen when there is no desktop
    pin: str = ""                           # the service PIN's salted hash ([display] pin_hash); "" none


@dataclass(frozen=True)
class VerifyConfig:
    """``[verify]``: check the installed software at start (firmware.verify)."""
    at_start: bool = False
    tree: Path = Path("/opt/betbox/current")
    keyring: Path = Path("/etc/rauc/keyring.pem")


@dataclass(frozen=True)
class UnitConfig:
    role: str
    unit_id: str
    table: str
    state_dir: Path
    transport: str = "inproc"
    synchronous: str = "FULL"
    rotate_rounds: int | None = None        # rounds per journal segment (None: never rotate)
    keep_segments: int | None = None        # segments kept (None: all)
    storage_low: int = STORAGE_LOW          # bytes free: below, the pit is alarmed
    storage_reserve: int = STORAGE_RESERVE  # bytes free: below, the unit halts (takes no input)
    close_wait: float | None = CLOSE_WAIT   # dealer: seconds to lock after no more bets (None: no bound)
    profile: str | None = None
    decks: int | None = None
    limits: Mapping[str, tuple[Fraction, Fraction]] = field(default_factory=dict)
    box: int | None = None
    spots: tuple[str, ...] = ()
    chips: Path | None = None
    confirm_cycles: int = 2
    release_cycles: int = 3
    hardware: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    link: LinkConfig | None = None          # None: alone, on the in-process bus
    jackpot_link: str = "main"              # the jackpot controller's link id (topics)
    display: DisplayConfig | None = None
    jackpot: JackpotConfig | None = None    # role jackpot
    verify: VerifyConfig = VerifyConfig()   # betbox verify at start (dealer, seat)
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def bus_id(self) -> str:
        """The unit's id on the broker and its username under the ACL: ``<table>/<id>``."""
        return f"{self.table}/{self.unit_id}"


def _link(top: UnitSection, source: str, base: Path | None, required: bool) -> tuple[LinkConfig | None, str]:
    """``[link]``: the broker, read by the link's own strict reader (names the key)."""
    if "link" not in top.data:
        top.used.add("link")
        if required:
            raise ConfigError(f"{source}: [link] is missing: this role talks to the units through a "
                              "broker (broker = \"mqtt://HOST:PORT\")")
        return None, "main"
    section = top.section("link")
    data = dict(section.data)
    jackpot = data.pop("jackpot", "main")
    if not isinstance(jackpot, str):
        raise section.fail("jackpot", f"expected a string, got {jackpot!r}")
    try:
        topics.check_link_id(jackpot)
        link = load_link_config(data, "link", base, source)
    except LinkConfigError as exc:
        raise ConfigError(str(exc)) from None
    except ValueError as exc:
        raise section.fail("jackpot", str(exc)) from None
    return link, jackpot


def _verify(top: UnitSection, base: Path | None) -> VerifyConfig:
    """``[verify]``: at_start, tree, keyring (paths relative to the configuration file)."""
    if "verify" not in top.data:
        top.used.add("verify")
        return VerifyConfig()
    v = top.section("verify")
    paths = {}
    for key in ("tree", "keyring"):
        value = v.get(key, str, str(getattr(VerifyConfig, key)))
        if not value:
            raise v.fail(key, "must be a path")
        path = Path(value)
        paths[key] = base / path if base is not None and not path.is_absolute() else path
    out = VerifyConfig(at_start=v.get("at_start", bool, False), **paths)
    v.finish()
    return out


def _display(top: UnitSection) -> DisplayConfig | None:
    if "display" not in top.data:
        top.used.add("display")
        return None
    d = top.section("display")
    if "pin" in d.data:
        raise d.fail("pin", "a PIN is never kept in plain text: write its salted hash instead, "
                            "pin_hash = \"scrypt$...\" (echo 2468 | python -m ui.service --hash-pin)")
    pin = d.get("pin_hash", str, "")
    if pin and not PIN_HASH.match(pin):
        raise d.fail("pin_hash", "not a PIN hash of `python -m ui.service --hash-pin` (scrypt$N$r$p$salt$hash)")
    out = DisplayConfig(lang=d.choice("lang", tuple(DISPLAY_LANGUAGES), "en"),
                        size=d.choice("size", tuple(DISPLAY_SIZES), "800x480"),
                        fullscreen=d.get("fullscreen", bool, None), pin=pin)
    d.finish()
    return out


def _jackpot(top: UnitSection, unit_id: str, state_dir: Path, link: LinkConfig, source: str,
             base: Path | None) -> JackpotConfig:
    """``role = "jackpot"``: ``[jackpot]`` and ``[store]``, read by the jackpot package's own readers."""
    top.used.update(("jackpot", "store"))
    try:
        store = read_store_section(top.data["store"], base, source) if "store" in top.data else None
        return read_jackpot_section(top.data.get("jackpot", {}), unit_id, state_dir, link, base, source, store)
    except JackpotConfigError as exc:
        raise ConfigError(str(exc)) from None


def parse_config(data: Mapping[str, Any], source: str = "<config>", base: Path | None = None) -> UnitConfig:
    """``base``: the directory relative file names (TLS files, the jackpot database) are in."""
    top = UnitSection(dict(data), "", source)
    unit = UnitSection(top.get("unit", dict), "unit", source)
    role = unit.choice("role", ROLES)
    unit_id = unit.ident("id")
    table = unit.ident("table") if role != "jackpot" else ""
    state_dir = unit.path("state_dir")
    unit.finish()
    link, jackpot_link = _link(top, source, base, required=role == "jackpot")
    if role == "jackpot":
        assert link is not None                 # _link: required for this role
        try:
            topics.check_link_id(unit_id)
        except ValueError as exc:
            raise unit.fail("id", str(exc)) from None
        jackpot = _jackpot(top, unit_id, state_dir, link, source, base)
        top.finish()
        return UnitConfig(role=role, unit_id=unit_id, table=table, state_dir=state_dir, link=link,
                          jackpot_link=unit_id, jackpot=jackpot, raw=dict(data))
    bus = UnitSection(top.get("bus", dict, {}), "bus", source)
    transport = bus.choice("transport", TRANSPORTS, "inproc")
    bus.finish()
    display = _display(top) if role == "seat" else None
    verify = _verify(top, base)
    kw = read_journal(UnitSection(top.get("journal", dict, {}), "journal", source))
    if role == "dealer":
        kw.update(read_dealer(UnitSection(top.get("game", dict), "game", source),
                              UnitSection(top.get("limits", dict, {}), "limits", source)))
    else:
        kw.update(read_seat(UnitSection(top.get("seat", dict), "seat", source)))
    hardware = read_hardware(UnitSection(top.get("hardware", dict), "hardware", source), role, source)
    top.finish()
    return UnitConfig(role=role, unit_id=unit_id, table=table, state_dir=state_dir, transport=transport,
                      hardware=hardware, link=link, jackpot_link=jackpot_link, display=display, verify=verify,
                      raw=dict(data), **kw)


def load_jackpot_config(data: Mapping[str, Any], base: Path | None = None,
                        source: str = "<config>") -> JackpotConfig:
    """The controller's configuration from a unit configuration of ``role = "jackpot"`` (the
    one format: ``docs/examples/jackpot.toml``)."""
    try:
        config = parse_config(data, source, base)
    except ConfigError as exc:
        raise JackpotConfigError(str(exc)) from None
    if config.jackpot is None:
        raise JackpotConfigError(f"{source}: [unit] role: {config.role!r} is not \"jackpot\"")
    return config.jackpot


def load_config(path: str | Path) -> UnitConfig:
    path = Path(path)
    try:
        if path.is_dir():
            raise ConfigError(f"cannot read {path}: it is a directory")
        text = read_text(path, MAX_CONFIG_BYTES, "a unit configuration")     # (/dev/zero has no size)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not a unit configuration: nested too deeply") from None
    return parse_config(data, str(path), path.resolve().parent)
