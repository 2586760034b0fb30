"""PostgreSQL: the next batch worked out while the last one commits (#16 item 4,
:meth:`JackpotController.ingest_overlapped`). The books are the ones batch-by-batch ingest
makes; a batch is acknowledged only once its COMMIT is confirmed; a COMMIT that fails (or
a connection lost) while the next batch is being worked out loses and acknowledges neither,
and a retry stores each report once."""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Callable, Iterator

import psycopg
import pytest

from firmware.jackpot import service as S
from firmware.jackpot.controller import Ingested, JackpotController, report
from firmware.jackpot.pools import PoolState
from firmware.jackpot.store import StoreUnavailable
from tests.jackpot.postgres import PASSWORD
from tests.jackpot.test_batch_writes import _rows, _service, _store
from tests.jackpot.test_postgres_store import _payloads
from tests.link.helpers import POOL, check_accounting

Messages = list[tuple[str, bytes]]
SIZE = 37           # small batches: a round's seat reports and its dealer record in consecutive ones


def _batches() -> tuple[list[Messages], Any]:
    """Three seats and their dealer in round order (a round's claims in consecutive batches),
    and each batch carrying a resend of the batch before's first five reports."""
    messages, expected = _payloads("table-6", 3, 40)
    messages.sort(key=lambda m: json.loads(m[1])["round"] or 0)
    chunks = [messages[i:i + SIZE] for i in range(0, len(messages), SIZE)]
    return [chunk + (chunks[i - 1][:5] if i else []) for i, chunk in enumerate(chunks)], expected


def _reference(batches: list[Messages], tmp_path: Any) -> dict[str, list[tuple]]:
    """The rows batch-by-batch ingest leaves (SQLite: no pipelining there)."""
    ctl = JackpotController(_store("sqlite", None, tmp_path, "reference"), [POOL])
    for batch in batches:
        ctl.ingest_batch(batch)
    rows = _rows(ctl.db)
    ctl.close()
    return rows


def _numbered(rows: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
    """The rows with the hits' numbers taken out of the effects: a hit's number is its row's
    identity, and PostgreSQL does not give back the numbers a rolled-back batch drew."""
    hit = re.compile(r'"(hit|confirmed|released)":(\d+|\[[\d,]*\])')
    return {table: [tuple(hit.sub(r'"\1":#', v) if isinstance(v, str) else v for v in row) for row in table_rows]
            for table, table_rows in rows.items()}


def _feed(batches: list[Messages]) -> tuple[Callable[[], Messages | None], Iterator[int]]:
    rest = iter(batches[1:])
    return lambda: next(rest, None), rest


def _stored_ids(postgres: Any) -> set[str]:
    """The report ids PostgreSQL holds, seen from another session (committed only)."""
    with psycopg.connect(postgres.url, password=PASSWORD, autocommit=True) as other:
        return {i for (i,) in other.execute("SELECT id FROM event").fetchall()}


def _memory_is_the_database(ctl: JackpotController) -> None:
    """The books in memory are what the database holds (nothing of a lost batch left)."""
    for name, state in ctl.db.execute("SELECT name, state FROM pool").fetchall():
        assert PoolState.from_json(json.loads(state)) == ctl.states[name]


def test_overlapped_batches_leave_the_rows_batch_by_batch_ingest_leaves(postgres, tmp_path):
    batches, expected = _batches()
    want = _reference(batches, tmp_path)
    ctl = JackpotController(_store("postgresql", postgres, tmp_path, "overlapped"), [POOL])
    take_next, _ = _feed(batches)
    done: list[list[Ingested]] = []
    ctl.ingest_overlapped(batches[0], take_next, done.append)
    # every batch confirmed once, in order, with a result per report
    assert [len(r) for r in done] == [len(b) for b in batches]
    assert sum(r.status == "duplicate" for d in done for r in d) == 5 * (len(batches) - 1)
    assert _rows(ctl.db) == want
    data = report(ctl.db)
    check_accounting(data, expected)
    assert data["integrity"]["count"] == 0 and data["held"] == {"seat": 0, "dealer": 0}
    _memory_is_the_database(ctl)
    # and a run after it (nothing carried from the last one) takes every resend as one
    again: list[list[Ingested]] = []
    ctl.ingest_overlapped(batches[0], _feed(batches)[0], again.append)
    assert {r.status for d in again for r in d} == {"duplicate"}
    assert [r[:4] for r in _rows(ctl.db)["unit"]] == [r[:4] for r in want["unit"]]
    ctl.close()


def _refuse_at_commit(db: Any, report_id: str) -> None:
    """A constraint checked only at COMMIT (deferred) that refuses one report."""
    db.execute("CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
               f"IF NEW.id = '{report_id}' THEN RAISE EXCEPTION 'refused at commit'; END IF; RETURN NEW; END $$")
    db.execute("CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON event DEFERRABLE INITIALLY DEFERRED "
               "FOR EACH ROW EXECUTE FUNCTION refuse()")


def _report_id(message: tuple[str, bytes]) -> str:
    return str(json.loads(message[1])["id"])


def test_a_commit_refused_while_the_next_batch_is_worked_out_acknowledges_neither_and_a_retry_stores_each_once(
        postgres, tmp_path):
    batches, expected = _batches()
    want = _reference(batches, tmp_path)
    db = _store("postgresql", postgres, tmp_path, "refused")
    bad = _report_id(batches[1][7])
    _refuse_at_commit(db, bad)
    ctl = JackpotController(db, [POOL])
    take_next, _ = _feed(batches)
    done: list[list[Ingested]] = []
    with pytest.raises(psycopg.Error, match="refused at commit"):
        ctl.ingest_overlapped(batches[0], take_next, done.append)
    # batch 1's COMMIT failed while batch 2 was worked out (its answer came with batch 3's
    # reads): only batch 0 was confirmed; nothing of 1 or 2 is stored or kept in memory
    assert len(done) == 1
    assert _stored_ids(postgres) == {_report_id(m) for m in batches[0]}
    _memory_is_the_database(ctl)
    assert ctl.db.execute("SELECT SUM(events) FROM unit").fetchone()[0] == len(batches[0])
    # the retry (the constraint gone): each report stored once, the books batch-by-batch's
    db.execute("DROP TRIGGER refuse ON event")
    rest = batches[1:]
    again: list[list[Ingested]] = []
    ctl.ingest_overlapped(rest[0], _feed(rest)[0], again.append)
    assert len(again) == len(rest)
    assert _numbered(_rows(ctl.db)) == _numbered(want)
    check_accounting(report(ctl.db), expected)
    _memory_is_the_database(ctl)
    ctl.close()


def _fill(svc: Any, batches: list[Messages], acked: list[str], stored_then: list[bool], postgres: Any) -> list:
    """The reports queued at the service; each one's PUBACK records whether the database
    held it at that moment (from another session)."""
    def ack(rid: str) -> Callable[[], None]:
        def puback() -> None:
            acked.append(rid)
            stored_then.append(rid in _stored_ids(postgres))
        return puback

    arrived = [(t, p, ack(_report_id((t, p)))) for batch in batches for t, p in batch]
    for item in arrived[S.MAX_BATCH:]:
        svc._inbox.put(item)
    return arrived[:S.MAX_BATCH]


def test_the_service_acknowledges_only_what_is_stored_when_a_commit_fails_under_the_next_batch(
        postgres, tmp_path, monkeypatch, caplog):
    """Through the service: batches of :data:`SIZE`, one report refused at its batch's COMMIT.
    Every PUBACK goes out with its report stored (the refused one excepted: logged and
    dropped, its unit's outbox still holds it), and every other report is stored once."""
    monkeypatch.setattr(S, "MAX_BATCH", SIZE)
    batches, _ = _batches()
    flat = [m for batch in batches for m in batch]
    db = _store("postgresql", postgres, tmp_path, "service")
    bad = _report_id(batches[1][7])
    _refuse_at_commit(db, bad)
    ctl = JackpotController(db, [POOL])
    svc = _service(ctl)
    acked: list[str] = []
    stored_then: list[bool] = []
    first = _fill(svc, batches, acked, stored_then, postgres)
    with caplog.at_level(logging.ERROR, logger="betbox.jackpot"):
        while first:                # as the ingest thread: a run, then what is still queued
            assert svc._ingest_overlapped(first, stop=False) is False
            first, _ = S._until_stop(svc._inbox.take_waiting(S.MAX_BATCH))
    assert svc.failed == 1 and "refused at commit" in caplog.text
    assert sorted(set(acked)) == sorted({_report_id(m) for m in flat}) and len(acked) == len(flat)
    assert all(stored for rid, stored in zip(acked, stored_then, strict=True) if rid != bad)
    ids = [i for (i,) in ctl.db.execute("SELECT id FROM event").fetchall()]
    assert len(ids) == len(set(ids)) == len({_report_id(m) for m in flat}) - 1 and bad not in ids
    svc.bus.close()
    ctl.close()


def test_the_connection_lost_between_two_batches_acknowledges_nothing_unconfirmed_and_nothing_is_stored_twice(
        postgres, tmp_path):
    """The controller's session ended (pg_terminate_backend) after a batch's COMMIT was sent
    and while the next one is worked out: StoreUnavailable; the batches confirmed before are
    the only ones acknowledged (whether the last COMMIT made it is the database's to say),
    and a controller on a new connection given every unacknowledged report again stores
    each once: the books batch-by-batch ingest makes."""
    batches, expected = _batches()
    want = _reference(batches, tmp_path)
    ctl = JackpotController(_store("postgresql", postgres, tmp_path, "lost"), [POOL])
    pid = ctl.db.conn.info.backend_pid
    rest = iter(batches[1:])
    done: list[list[Ingested]] = []
    calls = 0

    def take_next() -> Messages | None:
        nonlocal calls
        calls += 1
        if calls == 3:      # batch 2 worked out; batch 1's COMMIT sent, not yet confirmed
            with psycopg.connect(postgres.url, password=PASSWORD, autocommit=True) as other:
                assert other.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
        return next(rest, None)

    with pytest.raises(StoreUnavailable):
        ctl.ingest_overlapped(batches[0], take_next, done.append)
    assert len(done) == 1           # batch 0 only: batch 1's COMMIT was never confirmed
    stored = _stored_ids(postgres)
    assert {_report_id(m) for m in batches[0]} <= stored
    assert not stored & {_report_id(m) for b in batches[2:] for m in b} - {_report_id(m) for m in batches[1]}
    ctl = JackpotController(_store_again(postgres), [POOL])
    again: list[list[Ingested]] = []
    ctl.ingest_overlapped(batches[1], _feed(batches[1:])[0], again.append)
    got = _numbered(_rows(ctl.db))
    # batch 1 whole or not at all; if its lost COMMIT made it, each of its reports came
    # again: counted as a duplicate each time
    first_of_1 = {_report_id(m) for m in batches[1]} - {_report_id(m) for m in batches[0]}
    assert stored & first_of_1 in (set(), first_of_1)
    extra = len(batches[1]) if stored & first_of_1 else 0
    assert sum(r[4] for r in got.pop("unit")) == sum(r[4] for r in want["unit"]) + extra
    assert [r[:4] for r in _rows(ctl.db)["unit"]] == [r[:4] for r in want.pop("unit")]
    assert got == _numbered(want)
    check_accounting(report(ctl.db), expected)
    _memory_is_the_database(ctl)
    ctl.close()


def _store_again(postgres: Any) -> Any:
    """The same database on a new connection (no reset)."""
    from firmware.jackpot.database import open_store

    return open_store("unused", postgres.url, postgres.password_file)


def test_a_takeover_during_a_run_ends_it_and_the_old_controller_commits_nothing_after(postgres, tmp_path):
    """Another controller becomes active (raises the epoch) while batches are worked out:
    the run raises Superseded at the next fence; what it stored is whole batches, none
    after the takeover, and every batch it reported committed is stored."""
    import threading

    from firmware.jackpot.pg import Superseded

    batches, _ = _batches()
    db = _store("postgresql", postgres, tmp_path, "superseded")
    ctl = JackpotController(db, [POOL])
    ctl.epoch = db.become_active("main", "old")
    rest = iter(batches[1:])
    done: list[list[Ingested]] = []
    taken: list[int] = []
    took_over = threading.Event()

    def take_over() -> None:
        other = _store_again(postgres)
        other.become_active("main", "new")         # waits for the fenced transaction's COMMIT
        other.close()
        took_over.set()

    def take_next() -> Messages | None:
        taken.append(1)
        if len(taken) == 2:
            threading.Thread(target=take_over, daemon=True).start()
        return next(rest, None)

    with pytest.raises(Superseded):
        ctl.ingest_overlapped(batches[0], take_next, done.append)
    assert took_over.wait(30)
    assert len(taken) < len(batches)            # the run stopped, not finished
    stored = _stored_ids(postgres)
    whole = [{_report_id(m) for m in batch} for batch in batches]
    confirmed = set().union(*whole[:len(done)])
    assert confirmed <= stored
    # at most one batch more (its COMMIT went through before the takeover, unconfirmed)
    assert stored in (confirmed, confirmed | whole[len(done)])
    ctl.close()


def test_the_last_commit_of_a_run_refused_leaves_every_batch_before_it_and_nothing_of_it(postgres, tmp_path):
    """The last batch's COMMIT (answered only when the run leaves pipeline mode) refused:
    every batch before it confirmed and stored, nothing of it stored or kept in memory."""
    batches, _ = _batches()
    db = _store("postgresql", postgres, tmp_path, "last")
    _refuse_at_commit(db, _report_id(batches[-1][0]))
    ctl = JackpotController(db, [POOL])
    done: list[list[Ingested]] = []
    with pytest.raises(psycopg.Error, match="refused at commit"):
        ctl.ingest_overlapped(batches[0], _feed(batches)[0], done.append)
    assert len(done) == len(batches) - 1
    assert _stored_ids(postgres) == {_report_id(m) for b in batches[:-1] for m in b}
    _memory_is_the_database(ctl)
    db.execute("DROP TRIGGER refuse ON event")
    again: list[list[Ingested]] = []
    ctl.ingest_overlapped(batches[-1], lambda: None, again.append)
    assert [r.status for r in again[0]][:1] == ["accepted"]
    assert _stored_ids(postgres) == {_report_id(m) for b in batches for m in b}
    ctl.close()
