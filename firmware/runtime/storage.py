"""What a unit's SQLite files (journal, outbox) need from the state partition: private
files, bounded write-ahead logs, the real cause when the partition is full, a write-ahead
log that went missing noticed, and the clock's state for the record.

Shared by :mod:`firmware.runtime.journal` and :mod:`firmware.link.outbox` (plain stdlib:
the engine stays pure, this is runtime).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sqlite3
from pathlib import Path

#: The WAL is checkpointed every this many pages (SQLite's default is 1000: ~4 MB a file)
#: and truncated to at most ``WAL_SIZE_LIMIT`` bytes after each checkpoint.
WAL_AUTOCHECKPOINT = 64
WAL_SIZE_LIMIT = 256 * 1024
#: A journal's file is checkpointed by its unit after a step's messages are handed over
#: (``Journal.checkpoint_due``), not inside a COMMIT on the card's way; SQLite's own
#: checkpoint stays as a backstop at this many pages (~4 MB: SQLite's default).
WAL_BACKSTOP = 1000
#: The page size of a new journal file (SQLite's default is 4096). A COMMIT writes every page
#: the step touched to the WAL and fsyncs it: a step with its report touches ~7 pages (the
#: record, two indexes, the outbox row, its two unique indexes, the next seq), and on the
#: state partition the fsync costs by the bytes it flushes (docs/runtime.md, session 9).
#: A file keeps the page size it was made with (WAL mode cannot change it).
PAGE_SIZE = 1024

SQLITE_FULL = 13

#: meta key: "1" while a writer has the file open; "0" once it closed it cleanly.
OPEN_MARK = "open"


class StorageError(RuntimeError):
    """A unit's database that cannot be used: the message names the file and why."""


class StorageFull(StorageError):
    """The state partition is full: what SQLite calls SQLITE_FULL, with the bytes free."""


def free_bytes(path: str | Path) -> int:
    """Bytes an unprivileged writer may still use on the partition holding ``path``."""
    path = Path(path)
    directory = path if path.is_dir() else path.parent
    st = os.statvfs(directory)
    return st.f_bavail * st.f_frsize


def is_full(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and (
        getattr(exc, "sqlite_errorcode", None) == SQLITE_FULL or "database or disk is full" in str(exc))


def full_error(path: str | Path) -> StorageFull:
    try:
        free = f"{free_bytes(path)} bytes free"
    except OSError:
        free = "free space unknown"
    return StorageFull(f"state partition full: {free} ({path})")


def rollback(db: sqlite3.Connection) -> None:
    """Roll back what is still open. SQLite ends the transaction itself on some errors
    (SQLITE_FULL among them): a second ROLLBACK would mask the cause with "cannot rollback
    - no transaction is active"."""
    if db.in_transaction:
        db.execute("ROLLBACK")


def create_private(path: Path) -> None:
    """The file exists, readable and writable by its owner only (0600). SQLite creates
    the ``-wal`` and ``-shm`` files with the database file's permissions."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)        # a file made world-readable by older firmware
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm"):
        side = Path(str(path) + suffix)
        if side.exists() and side.stat().st_mode & 0o077:
            side.chmod(0o600)


def bound_wal(db: sqlite3.Connection, pages: int = WAL_AUTOCHECKPOINT) -> None:
    db.execute(f"PRAGMA wal_autocheckpoint={pages}")
    db.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")


def check_open_mark(path: Path, db: sqlite3.Connection, had_wal: bool, what: str) -> None:
    """Refuse a file whose last writer never closed it and whose write-ahead log is gone.

    A writer marks the file open and checkpoints the mark into the main file; it clears the
    mark when it closes cleanly (SQLite then folds the WAL in and deletes it). A crash leaves
    the WAL beside the file. So the mark set with no WAL beside the file means the WAL was
    lost (a copy of the file alone, a card that dropped it): what it held - the newest
    steps - is gone, and starting would silently take an older state."""
    row = db.execute("SELECT value FROM meta WHERE key = ?", (OPEN_MARK,)).fetchone()
    if row is not None and row[0] == "1" and not had_wal:
        raise StorageError(
            f"{path}: its write-ahead log {path.name}-wal is missing although the unit did not close "
            f"the {what} cleanly: the newest records are lost and this file holds an older state; "
            f"restore the file together with its -wal, or set it aside and start the unit anew "
            f"with the pit's agreement")


def set_open_mark(db: sqlite3.Connection, value: str) -> None:
    db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
               (OPEN_MARK, value))
    if value == "1":
        db.execute("PRAGMA wal_checkpoint(FULL)")       # the mark is in the main file now


def check_integrity(path: Path, db: sqlite3.Connection, what: str) -> None:
    rows = [r[0] for r in db.execute("PRAGMA quick_check(5)")]
    if rows != ["ok"]:
        raise StorageError(f"{path}: the {what} is damaged ({'; '.join(rows)}); "
                           f"the unit does not start from it")


class _Timex(ctypes.Structure):
    # struct timex begins with "unsigned int modes"; the rest is reserved room (glibc: 208
    # bytes on 64-bit); adjtimex(2) with modes = 0 only reads
    _fields_ = [("modes", ctypes.c_uint), ("rest", ctypes.c_byte * 508)]


TIME_ERROR = 5


def clock_sync() -> str:
    """The system clock's state as the kernel knows it: "synchronized", "unsynchronized"
    (adjtimex says TIME_ERROR: no NTP/PTP discipline), or "unknown"."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        state = libc.adjtimex(ctypes.byref(_Timex()))
    except (OSError, AttributeError):
        return "unknown"
    if state < 0:
        return "unknown"
    return "unsynchronized" if state == TIME_ERROR else "synchronized"
