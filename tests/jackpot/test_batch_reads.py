"""Group commit on PostgreSQL without a read-back per claim: a batch reads its rounds'
claims once and matches them in memory (the active controller is the one writer), and
the books are the same as SQLite's, which reads them the same way."""

from __future__ import annotations

from typing import Any

from firmware.jackpot.controller import JackpotController, report
from firmware.jackpot.database import open_store
from tests.jackpot.test_postgres_store import _payloads
from tests.link.helpers import POOL, check_accounting


class Counting:
    """The store with every statement it was sent kept (the SQL text)."""

    def __init__(self, db: Any) -> None:
        self.db, self.sent = db, []
        self.dialect = db.dialect

    def execute(self, sql: str, params: Any = ()) -> Any:
        self.sent.append(sql)
        return self.db.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def test_a_batch_reads_its_claims_once_not_once_per_claim(postgres, tmp_path):
    messages, expected = _payloads("table-4", 3, 60)
    db = Counting(open_store("unused", postgres.url, postgres.password_file))
    ctl = JackpotController(db, [POOL])
    for i in range(0, len(messages), 128):
        db.sent.clear()
        ctl.ingest_batch(messages[i:i + 128])
        reads = [s for s in db.sent if s.startswith("SELECT") and "FROM claim" in s and "COUNT(*)" not in s]
        assert len(reads) <= 1, reads[:3]
    data = report(ctl.db)
    check_accounting(data, expected)
    assert data["integrity"]["count"] == 0 and data["held"] == {"seat": 0, "dealer": 0}
    ctl.close()
    sqlite = JackpotController(tmp_path / "j.db", [POOL])
    for i in range(0, len(messages), 128):
        sqlite.ingest_batch(messages[i:i + 128])
    assert report(sqlite.db)["pools"] == data["pools"]
    sqlite.close()
