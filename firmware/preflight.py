"""What a unit's start needs beyond a well-formed configuration, checked before anything is
opened for writing: the state directory, the journal and jackpot database, the chip
registry, the TLS files and the hardware ports with their own options.

``betbox run`` calls :func:`check_startable` before it builds the unit, and ``betbox run
--check`` calls the same function and stops there, so ``--check`` refuses exactly what a
start refuses, with the same message (file, section, key). Nothing here writes: a
directory that does not exist yet is judged by the nearest one that does.
"""

from __future__ import annotations

import os
import sqlite3
import ssl
from pathlib import Path
from typing import Any, Callable

from firmware.config import ConfigError, UnitConfig
from firmware.runtime.journal import JOURNAL_NAME


def check_startable(config: UnitConfig, source: str) -> None:
    """Raise :class:`ConfigError` naming file, section and key for anything that would stop
    this unit's start."""
    _state_dir(config.state_dir, source)
    if config.jackpot is not None:                  # role jackpot
        _jackpot_db(Path(config.jackpot.db), source)
    else:
        _sqlite_file(config.state_dir / JOURNAL_NAME, f"{source}: [unit] state_dir", "journal")
        _journal_not_lost(config.state_dir / JOURNAL_NAME, f"{source}: [unit] state_dir")
        _journal_marks(config.state_dir / JOURNAL_NAME, f"{source}: [unit] state_dir")
    if config.link is not None and config.link.tls is not None:
        _tls(config.link.tls, source)
    if config.role == "seat":
        _chips(config, source)
    for port, hw in config.hardware.items():
        _hardware(port, hw, source)


def _writable_dir(path: Path, where: str) -> None:
    """``path`` is a directory this process may write in, or can be made one."""
    probe = path
    while not probe.exists():
        if probe.is_symlink():
            raise ConfigError(f"{where}: {probe} is a dangling symbolic link")
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        if probe == path:
            raise ConfigError(f"{where}: {path} is not a directory")
        raise ConfigError(f"{where}: {path} cannot be created: {probe} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"{where}: {probe} is not writable by this user (uid {os.getuid()})")


def _state_dir(path: Path, source: str) -> None:
    _writable_dir(path, f"{source}: [unit] state_dir")


def _sqlite_file(path: Path, where: str, kind: str) -> None:
    """An existing database file must be a readable SQLite file (never created here)."""
    if not path.exists() and not path.is_symlink():
        return
    if not path.is_file():
        raise ConfigError(f"{where}: the {kind} database {path} is not a file")
    if not os.access(path, os.R_OK | os.W_OK):
        raise ConfigError(f"{where}: the {kind} database {path} is not readable and writable by this user")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise ConfigError(f"{where}: the {kind} database {path} cannot be read: {exc}") from None


def _journal_not_lost(path: Path, where: str) -> None:
    """The start refuses a journal.db missing beside its own segments (and no rotation
    half done that would bring it back): so does the check."""
    from firmware.runtime.journal import NEW_SUFFIX, segments

    new = path.with_name(path.name + NEW_SUFFIX)
    if not path.exists() and not new.exists() and (kept := segments(path)):
        raise ConfigError(f"{where}: {path} is missing but this unit's journal segments are beside it "
                          f"({', '.join(p.name for p in kept)}): the unit does not start empty over its "
                          f"own record; restore {path.name} from a backup")


def _journal_marks(path: Path, where: str) -> None:
    """The start refuses a journal whose step or sequence number is not a number (SQLite
    keeps any type in any column): so does the check, reading it as the start does."""
    from firmware.runtime.journal import JournalError, check_marks

    try:
        check_marks(path)
    except JournalError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _jackpot_db(db: Path, source: str) -> None:
    where = f"{source}: [jackpot] db"
    if db.is_dir():
        raise ConfigError(f"{where}: {db} is a directory, not a database file")
    _writable_dir(db.parent, where)
    _sqlite_file(db, where, "jackpot")


def _no_passphrase() -> bytes:
    # an encrypted key would make OpenSSL ask on the terminal; a unit has nobody to answer
    raise ConfigError("the key is encrypted with a passphrase; a unit needs an unencrypted key (mode 0600)")


def _tls(tls: Any, source: str) -> None:
    """The files paho will load at connect: readable, and what they say they are."""
    where = f"{source}: [link.tls]"
    for key in ("ca", "cert", "key"):
        path = getattr(tls, key)
        if path is None:
            continue
        try:
            with open(path, "rb") as f:
                f.read(1)
        except OSError as exc:
            raise ConfigError(f"{where} {key}: cannot read {path}: {exc.strerror}") from None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(cafile=str(tls.ca))
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"{where} ca: {tls.ca} is not a PEM CA certificate ({exc})") from None
    if tls.cert is not None:
        try:
            context.load_cert_chain(str(tls.cert), str(tls.key), password=_no_passphrase)
        except ConfigError as exc:
            raise ConfigError(f"{where} key: {tls.key}: {exc}") from None
        except (ssl.SSLError, ValueError) as exc:
            raise ConfigError(f"{where} cert: {tls.cert} and key {tls.key} are not a PEM certificate and "
                              f"its private key ({exc})") from None


def _chips(config: UnitConfig, source: str) -> None:
    from firmware.chips import ChipRegistry, ChipRegistryError

    where = f"{source}: [seat] chips"
    path = config.chips
    assert path is not None                         # parse_config: a seat's [seat] chips is required
    try:
        registry = ChipRegistry.load(path)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read the chip registry {path}: {exc.strerror or exc} "
                          "(format: docs/chips.md)") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: {path} is not UTF-8 text (format: docs/chips.md)") from None
    except ChipRegistryError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if len(registry) == 0:
        raise ConfigError(f"{where}: {path} lists no chips: every wager would be refused (format: docs/chips.md)")


def _hardware(port: str, hw: Any, source: str,
              opener: Callable[..., Any] | None = None) -> None:
    """Build the port exactly as the start does (its backend checks its own options: a
    missing serial device, a baud rate, a pin used twice), then close it unstarted."""
    from hal.backends import open_backend
    from hal.errors import HalError

    try:
        device = (opener or open_backend)(port, hw["backend"], hw["options"])
    except (HalError, ValueError, OSError, ImportError) as exc:
        raise ConfigError(f"{source}: [hardware.{port}] {exc}") from None
    except Exception as exc:  # noqa: BLE001 - gpiozero raises its own classes for a pin it cannot have
        raise ConfigError(f"{source}: [hardware.{port}] {type(exc).__name__}: {exc}") from None
    device.close()
