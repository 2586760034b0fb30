"""Folding a unit's WAL into its main file off the step's thread (issue #17 "Speed").

SQLite's automatic checkpoint runs inside the COMMIT that crosses ``wal_autocheckpoint``
pages: with a step writing ~7 pages, every ~9th step's commit also wrote the main file and
fsynced it, on a card's way to its report. The journal's connections turn it off
(``wal_autocheckpoint=0``) and this thread runs a PASSIVE checkpoint on a connection of its
own once the WAL holds :data:`WAL_AUTOCHECKPOINT` pages. PASSIVE never takes the write lock:
steps go on while it folds. Durability is untouched (a checkpoint only copies committed
pages; a cut in the middle of one is what SQLite recovers from anyway). Should the thread
lag (the WAL past twice that), the step's thread checkpoints itself, as SQLite would have,
so the WAL stays bounded on a small state partition.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Iterator

from .storage import WAL_AUTOCHECKPOINT

log = logging.getLogger(__name__)

#: bytes of a WAL frame (a 4 KiB page and its header): the WAL's size in pages
FRAME = 4096 + 24


class Checkpointer:
    """One thread per journal file. ``poke()`` after each commit (a stat of the WAL);
    ``held()`` keeps it off the file (rotation, close, tests)."""

    def __init__(self, path: Path, pages: int = WAL_AUTOCHECKPOINT) -> None:
        self.path = path
        self.wal = Path(str(path) + "-wal")
        self.at = pages * FRAME                  # fold from this WAL size on
        self.inline_at = 2 * pages * FRAME       # the thread lags: the step's thread folds
        self.folds = 0
        self._lock = threading.Lock()            # held while it folds or while it is held
        self._wake = threading.Event()
        self._stop = False
        self._db: sqlite3.Connection | None = None
        self._thread: threading.Thread | None = None

    def poke(self, db: sqlite3.Connection) -> None:
        """After a commit on ``db`` (the step's connection): fold the WAL if it is long."""
        try:
            size = self.wal.stat().st_size
        except OSError:
            return
        if size >= self.inline_at:
            # the thread lags (steps come faster than it folds: a WAL restarts only once
            # folded to its end): fold here, between this thread's steps, as SQLite would
            with self._lock:
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        elif size >= self.at:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"checkpoint:{self.path.name}",
                                                daemon=True)
                self._thread.start()
            self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                if self._stop:
                    return
                try:
                    if self._db is None:
                        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                        self._db.execute("PRAGMA wal_autocheckpoint=0")
                    self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                    self.folds += 1
                except sqlite3.Error as exc:     # the next poke tries again; the WAL holds it all
                    log.warning("%s: WAL checkpoint failed: %s", self.path, exc)
                    self._let_go()

    def _let_go(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """No fold while inside, and the thread's connection closed (a rotation renames the
        file; a clean close must be the file's last connection, so SQLite removes the WAL)."""
        with self._lock:
            self._let_go()
            yield

    def stop(self) -> None:
        """End the thread (the journal closes)."""
        with self._lock:
            self._stop = True
            self._let_go()
        self._wake.set()

