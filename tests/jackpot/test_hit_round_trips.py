"""PostgreSQL, a table's mix (#16, session 7): a fixed-award hit or an envy bonus costs the
batch no answer to wait for (its row's number is not read back: nothing names it), nor does
the round result of a box whose hit was a fixed award (no meter hit can be pending there);
each wait stalls the pipelined batch. A meter hit still reads its number back (its booking
and the attendant name it). The hits' rows, numbers included, are the ones SQLite makes."""

from __future__ import annotations

import json
from typing import Any

from firmware.jackpot.controller import JackpotController, report
from firmware.jackpot.database import open_store
from tests.jackpot.test_postgres_store import _payloads
from tests.link.helpers import POOL, check_accounting

HITS = "SELECT id, event, unit, table_id, box, round, kind, category, share, amount, state, confirmed_by FROM hit"


class Answers:
    """The store with the statements whose answers the controller waited for (fetched)."""

    def __init__(self, db: Any) -> None:
        self.db, self.waited = db, []
        self.dialect = db.dialect

    def execute(self, sql: str, params: Any = ()) -> Any:
        return _Cursor(self.db.execute(sql, params), sql, self.waited)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


class _Cursor:
    def __init__(self, cur: Any, sql: str, waited: list[str]) -> None:
        self.cur, self.sql, self.waited = cur, sql, waited

    def fetchone(self) -> Any:
        self.waited.append(self.sql)
        return self.cur.fetchone()

    def fetchall(self) -> Any:
        self.waited.append(self.sql)
        return self.cur.fetchall()

    def __iter__(self) -> Any:
        self.waited.append(self.sql)
        return iter(self.cur)


def _table_order(messages: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """A table's order: per round the seats' wagers and hits, the dealer's round_progressive,
    the seats' results, the dealer's settlement."""
    stage = {"round_progressive": 1, "round_result": 2, "round_settlement": 3}
    return sorted(messages, key=lambda m: (json.loads(m[1])["round"], stage.get(json.loads(m[1])["kind"], 0)))


def test_fixed_hits_and_envy_wait_for_no_answer_and_make_sqlites_rows(postgres, tmp_path):
    messages, expected = _payloads("table-9", 4, 120)
    messages = _table_order(messages)
    kinds = [json.loads(p)["body"] for _, p in messages if json.loads(p)["kind"] == "progressive_hit"]
    meter = sum(body["award"] is None for body in kinds)
    fixed = len(kinds) - meter
    envy = sum(json.loads(p)["kind"] == "envy_bonus" for _, p in messages)
    assert meter and fixed > 2 * meter and envy            # the script has all three
    db = Answers(open_store("unused", postgres.url, postgres.password_file))
    ctl = JackpotController(db, [POOL])
    for i in range(0, len(messages), 100):
        ctl.ingest_batch(messages[i:i + 100])
    inserts = [s for s in db.waited if s.startswith("INSERT INTO hit")]
    pending = [s for s in db.waited if s.startswith("SELECT") and "FROM hit" in s]
    assert len(inserts) == meter, (len(inserts), meter, fixed, envy)
    assert len(pending) == meter, (len(pending), meter, fixed)
    data = report(ctl.db)
    check_accounting(data, expected)
    assert data["integrity"]["count"] == 0 and data["held"] == {"seat": 0, "dealer": 0}
    rows = ctl.db.execute(HITS + " ORDER BY id").fetchall()
    assert len(rows) == meter + fixed + envy
    assert all(state in ("paid", "confirmed") for *_, state, _by in rows)
    ctl.close()
    sqlite = JackpotController(tmp_path / "j.db", [POOL])
    for i in range(0, len(messages), 100):
        sqlite.ingest_batch(messages[i:i + 100])
    assert [tuple(r) for r in rows] == [tuple(r) for r in sqlite.db.execute(HITS + " ORDER BY id").fetchall()]
    assert report(sqlite.db)["pools"] == data["pools"]
    sqlite.close()
