"""Set-based writes for a batch (group commit): the rows of one table in ONE statement.

On PostgreSQL a statement is ``INSERT ... SELECT ... FROM json_array_elements(rows)`` or
``UPDATE ... FROM`` the same: one round trip and one parse for the lot, where psycopg's
per-statement cost (~130 µs of client CPU each in pipeline mode) was most of the
controller's time. On SQLite, ``executemany`` (in process). The database's UNIQUE
constraints still decide: a row that breaks one fails the whole batch, which the service
then retries report by report."""

from __future__ import annotations

import json
from typing import Any, Sequence

# PostgreSQL's type of each column written here (the arrays are cast to them)
PG_TYPES = {
    "n": "bigint", "unit": "text", "seq": "bigint", "id": "text", "kind": "text", "table_id": "text",
    "box": "integer", "round": "bigint", "pool": "text", "body": "text", "effect": "text", "key": "text",
    "source": "text", "event": "bigint", "value": "text", "state": "text", "held_at": "double precision",
    "seat_event": "bigint", "dealer_event": "bigint", "stage": "text", "events": "bigint",
    "highest": "bigint", "contiguous": "bigint", "duplicates": "bigint",
}


def _rows_of(cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> tuple[str, str]:
    """PostgreSQL: ``rows`` as one JSON parameter (its text made by the json module's C
    encoder; psycopg's Python array dumper escaping every text value cost more than the
    statements it saved) and the subquery that turns it back into typed columns."""
    picks = ", ".join(f"x->>{i} AS {c}" if PG_TYPES[c] == "text" else f"(x->>{i})::{PG_TYPES[c]} AS {c}"
                      for i, c in enumerate(cols))
    return f"(SELECT {picks} FROM json_array_elements(?::json) AS x) AS v", json.dumps(rows)


def insert_rows(db: Any, dialect: str, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]],
                on_conflict: str = "") -> None:
    """INSERT ``rows`` (tuples in ``cols``' order) into ``table``; ``on_conflict`` e.g.
    ``" ON CONFLICT DO NOTHING"``."""
    if not rows:
        return
    names = ", ".join(cols)
    if dialect == "postgresql":
        source, param = _rows_of(cols, rows)
        db.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM {source}{on_conflict}", (param,))
    else:
        db.executemany(f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(cols))}){on_conflict}", rows)


def update_rows(db: Any, dialect: str, table: str, sets: Sequence[str], keys: Sequence[str],
                rows: Sequence[Sequence[Any]], add: Sequence[str] = ()) -> None:
    """UPDATE ``table`` row by row: each of ``rows`` is (*values of ``sets``, *values of
    ``keys``); the columns in ``add`` are increased by the value instead of set to it."""
    if not rows:
        return
    if dialect == "postgresql":
        source, param = _rows_of([*sets, *keys], rows)
        assign = ", ".join(f"{c} = {table}.{c} + v.{c}" if c in add else f"{c} = v.{c}" for c in sets)
        match = " AND ".join(f"{table}.{k} = v.{k}" for k in keys)
        db.execute(f"UPDATE {table} SET {assign} FROM {source} WHERE {match}", (param,))
    else:
        assign = ", ".join(f"{c} = {c} + ?" if c in add else f"{c} = ?" for c in sets)
        match = " AND ".join(f"{k} = ?" for k in keys)
        db.executemany(f"UPDATE {table} SET {assign} WHERE {match}", rows)
