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
                PORT: card_shoe, console (dealer); chip_reader, lamps (seat)
    [jackpot]   db, pools.NAME = {seed, rate, maximum, tables}   (role "jackpot")
    [store]     url = "postgresql://...", password_file   (role "jackpot"; absent: SQLite at db)
    [verify]    at_start (default false), tree (the installed release, default /opt/betbox/current),
                keyring (default /etc/rauc/keyring.pem): ``betbox verify`` at start (dealer, seat)

With ``[link]`` the unit's bus is MQTT: its id on the broker (and its username under the
documented ACL) is ``<table>/<id>``; a seat reports to the jackpot controller through a
durable outbox in ``state_dir``. Without it the unit runs on the in-process bus, alone.
The jackpot role needs ``[link]``; its id is the link id in the jackpot topics.
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

ROLES = ("dealer", "seat", "jackpot")
TRANSPORTS = ("inproc",)
PORTS = {"dealer": ("card_shoe", "console"), "seat": ("chip_reader", "lamps")}
ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# the seat display's choices (ui.i18n.LANGUAGES, ui.app.SIZES): repeated here so that
# reading a configuration never imports the UI
DISPLAY_LANGS = ("en", "zh", "ms")
DISPLAY_SIZES = ("800x480", "1024x600", "1280x800")
PIN = re.compile(r"^[0-9]{4,8}$")
#: a technician PIN's salted hash (ui.service.hash_pin: scrypt$N$r$p$salt$hash, hex)
PIN_HASH = re.compile(r"^scrypt\$[0-9]{1,8}\$[0-9]{1,3}\$[0-9]{1,3}\$[0-9a-f]{16,128}\$[0-9a-f]{32,128}$")
CLOSE_WAIT = 5.0                            # firmware.runtime.dealer.CLOSE_WAIT (not imported here)
MAX_CLOSE_WAIT = 600.0
MAX_ROUNDS = 1_000_000
MAX_CONFIG_BYTES = 1_000_000                # a unit's configuration is a few hundred lines


class ConfigError(ValueError):
    """A configuration that must not start a unit; says file, section and key."""


class _Section(Section):
    """A configuration table: strict reading plus identifiers."""

    def __init__(self, data: Any, name: str, source: str, error: type[ValueError] = ConfigError) -> None:
        super().__init__(data, name, source, error)

    def ident(self, key: str) -> str:
        value = self.get(key, str)
        if not ID.match(value):
            raise self.fail(key, f"{value!r}: letters, digits, '_', '.', '-' (at most 64)")
        return value


@dataclass(frozen=True)
class DisplayConfig:
    lang: str = "en"
    size: str = "800x480"
    fullscreen: bool | None = None          # None: full screen when there is no desktop
    pin: str = ""                           # the service PIN's salted hash ([display] pin_hash); "" none


STORAGE_LOW = 64 * 1024 * 1024
STORAGE_RESERVE = 4 * 1024 * 1024


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
    link: Any = None                        # firmware.link.config.LinkConfig, or None: in-process
    jackpot_link: str = "main"              # the jackpot controller's link id (topics)
    display: DisplayConfig | None = None
    jackpot: Any = None                     # firmware.jackpot.config.JackpotConfig (role jackpot)
    verify: VerifyConfig = VerifyConfig()   # betbox verify at start (dealer, seat)
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def bus_id(self) -> str:
        """The unit's id on the broker and its username under the ACL: ``<table>/<id>``."""
        return f"{self.table}/{self.unit_id}"


def _link(top: _Section, source: str, base: Path | None, required: bool) -> tuple[Any, str]:
    """``[link]``: the broker, read by the link's own strict reader (names the key)."""
    from firmware.link import topics
    from firmware.link.config import LinkConfigError, load_link_config

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


def _verify(top: _Section, base: Path | None) -> VerifyConfig:
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


def _close_wait(game: _Section) -> float | None:
    """``[game] close_wait``: seconds (above 0, at most 600), or ``false``: no bound."""
    value = game.get("close_wait", (int, float, bool), CLOSE_WAIT)
    if value is False:
        return None
    if value is True or not 0 < value <= MAX_CLOSE_WAIT or value != value:
        raise game.fail("close_wait", f"{value!r}: seconds above 0 and at most {MAX_CLOSE_WAIT:g}, "
                                      "or false to wait for every seat")
    return float(value)


def _display(top: _Section) -> DisplayConfig | None:
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
    out = DisplayConfig(lang=d.choice("lang", DISPLAY_LANGS, "en"), size=d.choice("size", DISPLAY_SIZES, "800x480"),
                        fullscreen=d.get("fullscreen", bool, None), pin=pin)
    d.finish()
    return out


def _jackpot(top: _Section, unit_id: str, state_dir: Path, link: Any, source: str,
             base: Path | None) -> Any:
    """``role = "jackpot"``: ``[jackpot]`` db (default ``state_dir/jackpot.db``) and pools."""
    from firmware.jackpot.config import DEFAULT_POOLS, JackpotConfig, JackpotConfigError, load_pools

    j = top.section("jackpot", {})
    db = Path(j.get("db", str, str(state_dir / "jackpot.db")))
    if base is not None and not db.is_absolute():
        db = base / db
    pools = j.get("pools", dict, DEFAULT_POOLS)
    j.finish()
    try:
        specs = load_pools(pools)
    except JackpotConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    raw: dict[str, Any] = {"role": "jackpot", "unit": {"id": unit_id}, "jackpot": {"db": str(db), "pools": pools}}
    store = _store(top, base)
    if store is not None:
        raw["store"] = {"url": store.url}
    return JackpotConfig(link, db, unit_id, specs, raw, store)


def _store(top: _Section, base: Path | None) -> Any:
    """``[store]`` (role jackpot): url = "postgresql://user@host:port/db" and password_file;
    absent: the SQLite file of ``[jackpot] db``."""
    if "store" not in top.data:
        top.used.add("store")
        return None
    from firmware.jackpot.pg import PgTarget, check_url

    st = top.section("store")
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


def parse_config(data: Mapping[str, Any], source: str = "<config>", base: Path | None = None) -> UnitConfig:
    """``base``: the directory relative file names (TLS files, the jackpot database) are in."""
    top = _Section(dict(data), "", source)
    unit = _Section(top.get("unit", dict), "unit", source)
    role = unit.choice("role", ROLES)
    unit_id = unit.ident("id")
    table = unit.ident("table") if role != "jackpot" else ""
    state_dir = Path(unit.get("state_dir", str))
    unit.finish()
    link, jackpot_link = _link(top, source, base, required=role == "jackpot")
    if role == "jackpot":
        from firmware.link import topics
        try:
            topics.check_link_id(unit_id)
        except ValueError as exc:
            raise unit.fail("id", str(exc)) from None
        jackpot = _jackpot(top, unit_id, state_dir, link, source, base)
        top.finish()
        return UnitConfig(role=role, unit_id=unit_id, table=table, state_dir=state_dir, link=link,
                          jackpot_link=unit_id, jackpot=jackpot, raw=dict(data))
    bus = _Section(top.get("bus", dict, {}), "bus", source)
    transport = bus.choice("transport", TRANSPORTS, "inproc")
    bus.finish()
    display = _display(top) if role == "seat" else None
    verify = _verify(top, base)
    journal = _Section(top.get("journal", dict, {}), "journal", source)
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
    kw: dict[str, Any] = {"rotate_rounds": rotate_rounds, "keep_segments": keep_segments,
                          "storage_low": storage_low, "storage_reserve": storage_reserve}
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
        kw["close_wait"] = _close_wait(game)
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
                      synchronous=synchronous, hardware=hardware, link=link, jackpot_link=jackpot_link,
                      display=display, verify=verify, raw=dict(data), **kw)


def load_config(path: str | Path) -> UnitConfig:
    path = Path(path)
    try:
        if path.is_dir():
            raise ConfigError(f"cannot read {path}: it is a directory")
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes: not a unit configuration")
        text = path.read_text(encoding="utf-8")
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
