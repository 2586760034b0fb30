"""Which store holds the controller's books: SQLite (:mod:`firmware.jackpot.store`, the
default) or PostgreSQL (:mod:`firmware.jackpot.pg`, ``[store] url``). Here, not in
``store``, so the SQLite module never depends on the PostgreSQL one that builds on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .store import connect


def open_store(db: str | Path, url: str | None = None, password_file: Path | None = None) -> Any:
    """The controller's database: SQLite at ``db`` (the default), or PostgreSQL at ``url``
    (migrated to the newest schema on open)."""
    if url is None:
        return connect(db)
    from .pg import PgDatabase, PgTarget  # psycopg only where PostgreSQL is configured
    return PgDatabase(PgTarget(url, password_file))
