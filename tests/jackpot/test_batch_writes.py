"""Group commit with set-based writes (#16 item 4, #18): a batch sends each table's rows
in one statement (PostgreSQL: one ``INSERT ... SELECT`` or ``UPDATE ... FROM`` the rows
as one JSON parameter; SQLite: one ``executemany``), not one statement a report, and
the rows it leaves are the same as ingesting the reports one at a time."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from firmware.jackpot.controller import JackpotController, report
from firmware.jackpot.database import open_store
from firmware.jackpot.store import pipeline
from firmware.link.config import LinkConfig
from tests.jackpot.test_postgres_store import _payloads
from tests.link.helpers import POOL, check_accounting

BATCH = 128
ROWS = {  # what a batch writes, in an order that does not depend on ids or ingest numbers
    "event": "SELECT unit, seq, id, kind, effect FROM event ORDER BY unit, seq",
    "claim": "SELECT table_id, round, box, kind, key, source, value, state FROM claim "
             "ORDER BY table_id, round, box, kind, key, source",
    "booking": "SELECT table_id, round, box, kind, key, effect FROM booking ORDER BY table_id, round, box, kind, key",
    "dealer_round": "SELECT table_id, round, stage FROM dealer_round ORDER BY table_id, round, stage",
    "hit": "SELECT unit, round, kind, amount, state FROM hit ORDER BY unit, round, kind",
    "unit": "SELECT unit, events, highest, contiguous, duplicates FROM unit ORDER BY unit",
}


class Counting:
    """The store with every statement it was sent counted (``execute`` and ``executemany``)."""

    def __init__(self, db: Any) -> None:
        self.db, self.sent = db, []
        self.dialect = getattr(db, "dialect", "sqlite")

    def execute(self, sql: str, params: Any = ()) -> Any:
        self.sent.append(sql)
        return self.db.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> Any:
        self.sent.append(sql)
        return self.db.executemany(sql, rows)

    def pipeline(self) -> Any:
        return pipeline(self.db)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def _store(kind: str, postgres: Any, tmp_path: Any, name: str) -> Any:
    if kind == "sqlite":
        return open_store(tmp_path / f"{name}.db")
    postgres.reset()
    return open_store("unused", postgres.url, postgres.password_file)


def _rows(db: Any) -> dict[str, list[tuple]]:
    return {table: [tuple(r) for r in db.execute(sql).fetchall()] for table, sql in ROWS.items()}


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_batch_writes_each_table_once_and_leaves_the_rows_one_at_a_time_would(kind, postgres, tmp_path):
    messages, expected = _payloads("table-4", 3, 60)
    # the reference: every report in a transaction of its own (SQLite: what the service's
    # one-by-one fallback does)
    alone = JackpotController(open_store(tmp_path / "alone.db"), [POOL])
    for m in messages:
        alone.ingest_batch([m])
    want = _rows(alone.db)
    alone.close()

    db = Counting(_store(kind, postgres, tmp_path, "batched"))
    ctl = JackpotController(db, [POOL])
    # every report twice (a resend after a reconnect), the second copies in later batches
    sent = messages + messages[: len(messages) // 2]
    most = 0
    for i in range(0, len(sent), BATCH):
        db.sent.clear()
        ctl.ingest_batch(sent[i:i + BATCH])
        # a progressive hit is still written (and looked up) on its own: its number is the
        # hit row's id, and it is rare in play (this script has one every few rounds)
        most = max(most, len([s for s in db.sent if " hit " not in s.replace("\n", " ")]))
    # a table's rows in one statement each (plus the batch's reads, the fence, the pool
    # patch, a unit seen for the first time), not one or more statements per report
    assert most <= 30, f"{most} statements for a batch of {BATCH}"
    data = report(ctl.db)
    check_accounting(data, expected)
    assert data["integrity"]["count"] == 0 and data["held"] == {"seat": 0, "dealer": 0}
    got = _rows(ctl.db)
    assert sum(r[4] for r in got["unit"]) == len(messages) // 2      # the resends: counted, not booked
    got["unit"] = [r[:4] for r in got["unit"]]
    want["unit"] = [r[:4] for r in want["unit"]]
    assert got == want
    ctl.close()


def _service(ctl: JackpotController) -> Any:
    from firmware.jackpot.service import JackpotService

    return JackpotService(ctl, LinkConfig(host="127.0.0.1", port=1))


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_report_the_database_refuses_in_a_batch_loses_none_of_the_others(kind, postgres, tmp_path, caplog):
    """One report of a batch that the database itself refuses at the batch's write (here a
    trigger standing for any constraint the checks before it missed): the batch is rolled
    back, each report is tried alone, the good ones are stored and acknowledged, the bad one
    is refused, logged and acknowledged (its unit's outbox still holds it)."""
    messages, _ = _payloads("table-5", 2, 10)
    bad_id = "table-5-s1-000003"
    db = _store(kind, postgres, tmp_path, "refuse")
    if kind == "sqlite":
        db.execute("CREATE TRIGGER refuse BEFORE INSERT ON event WHEN NEW.id = 'table-5-s1-000003' "
                   "BEGIN SELECT RAISE(ABORT, 'refused by the database'); END")
    else:
        db.execute("CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                   "IF NEW.id = 'table-5-s1-000003' THEN RAISE EXCEPTION 'refused by the database'; END IF; "
                   "RETURN NEW; END $$")
        db.execute("CREATE TRIGGER refuse BEFORE INSERT ON event FOR EACH ROW EXECUTE FUNCTION refuse()")
    ctl = JackpotController(db, [POOL])
    svc = _service(ctl)
    acked: list[int] = []
    batch = [(t, p, (lambda i=i: acked.append(i))) for i, (t, p) in enumerate(messages)]
    with caplog.at_level(logging.ERROR, logger="betbox.jackpot"):
        svc._ingest(batch)
    assert sorted(acked) == list(range(len(messages)))
    assert svc.failed == 1 and "refused by the database" in caplog.text
    ids = {r[0] for r in ctl.db.execute("SELECT id FROM event").fetchall()}
    assert bad_id not in ids and len(ids) == len(messages) - 1
    svc.bus.close()
    ctl.close()
