"""PostgreSQL, a table's mix (#16, session 7): a hit costs the batch no answer to wait for
(each wait stalls the pipelined batch: with overlapped batches, until the batch before has
committed): the controller numbers the hits itself, as it numbers the events (resumed from
the database's highest at start, after a failed batch and at a takeover; every transaction
fenced by its epoch), and a round's result finds its box's pending meter hit among what the
batch read with the round's claims. The hits' rows, numbers included, are SQLite's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from firmware.jackpot.controller import JackpotController, report
from firmware.jackpot.database import open_store
from firmware.jackpot.pg import Superseded
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


def test_hits_wait_for_no_answer_and_make_sqlites_rows(postgres, tmp_path):
    messages, expected = _payloads("table-9", 4, 120)
    messages = _table_order(messages)
    kinds = [json.loads(p)["body"] for _, p in messages if json.loads(p)["kind"] == "progressive_hit"]
    meter = sum(body["award"] is None for body in kinds)
    fixed = len(kinds) - meter
    envy = sum(json.loads(p)["kind"] == "envy_bonus" for _, p in messages)
    assert meter and fixed > 2 * meter and envy            # the script has all three
    db = Answers(open_store("unused", postgres.url, postgres.password_file))
    ctl = JackpotController(db, [POOL])
    started = len(db.waited)        # (the start reads the pending hits once: the meter it shows)
    for i in range(0, len(messages), 100):
        ctl.ingest_batch(messages[i:i + 100])
    waited = db.waited[started:]
    inserts = [s for s in waited if s.startswith("INSERT INTO hit")]
    # (the highest hit number is read once, at the start, with the highest event number's)
    pending = [s for s in waited if s.startswith("SELECT") and "FROM hit" in s and "MAX(" not in s]
    assert inserts == [] and pending == [], (len(inserts), len(pending), meter, fixed, envy)
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


def test_hit_numbers_unique_and_increasing_across_a_takeover(postgres, tmp_path):
    """Controller a books hits, b takes over (a newer epoch) and books more, a's next batch
    is fenced out (nothing of it stored), and a controller that takes over again goes on
    numbering after b's hits: the numbers are 1..N in booking order, as SQLite's."""
    messages, expected = _payloads("table-8", 4, 90)
    messages = _table_order(messages)
    thirds = [messages[:len(messages) // 3], messages[len(messages) // 3:2 * len(messages) // 3],
              messages[2 * len(messages) // 3:]]
    a = _takes_over(postgres, "a")
    a.ingest_overlapped(thirds[0][:200], _once(thirds[0][200:]), lambda results: None)
    b = _takes_over(postgres, "b")
    for i in range(0, len(thirds[1]), 100):
        b.ingest_batch(thirds[1][i:i + 100])
    with pytest.raises(Superseded):         # a's next batch stores nothing
        a.ingest_batch(thirds[2][:50])
    c = _takes_over(postgres, "c")
    c.ingest_overlapped(thirds[2][:100], _once(thirds[2][100:]), lambda results: None)
    data = report(c.db)
    check_accounting(data, expected)
    numbers = [h for (h,) in c.db.execute("SELECT id FROM hit ORDER BY id").fetchall()]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) > 20
    sqlite = JackpotController(tmp_path / "j.db", [POOL])
    for i in range(0, len(messages), 100):
        sqlite.ingest_batch(messages[i:i + 100])
    assert [tuple(r) for r in c.db.execute(HITS + " ORDER BY id").fetchall()] == \
        [tuple(r) for r in sqlite.db.execute(HITS + " ORDER BY id").fetchall()]
    for ctl in (a, b, c, sqlite):
        ctl.close()


def _once(batch: list[tuple[str, bytes]]) -> Any:
    """``take_next`` handing out ``batch`` once, then nothing."""
    rest = iter([batch])
    return lambda: next(rest, None)


def _takes_over(postgres: Any, holder: str) -> JackpotController:
    """A controller made as the service makes one at a takeover: the epoch raised, then the
    controller (its pools read) on that connection."""
    db = open_store("unused", postgres.url, postgres.password_file)
    epoch = db.become_active("main", holder)
    ctl = JackpotController(db, [POOL])
    ctl.epoch = epoch
    return ctl


def test_a_hit_the_database_numbers_comes_after_the_controllers(postgres):
    """A controller that lets PostgreSQL number its hits (a version before this one, on
    standby during an upgrade) draws a number above every hit this one has numbered."""
    messages, _ = _payloads("table-7", 3, 60)
    messages = _table_order(messages)
    ctl = JackpotController(open_store("unused", postgres.url, postgres.password_file), [POOL])
    ctl.ingest_overlapped(messages[:100], _once(messages[100:]), lambda results: None)
    top = ctl.db.execute("SELECT MAX(id) FROM hit").fetchone()[0]
    assert top > 5
    drawn = ctl.db.execute("INSERT INTO hit (event, unit, table_id, box, round, pool, kind, amount, state) "
                           "VALUES (1, 'table-x/seat-1', 'table-x', 1, 1, 'main', 'fixed', '15', 'paid') "
                           "RETURNING id").fetchone()[0]
    assert drawn > top
    ctl.close()
