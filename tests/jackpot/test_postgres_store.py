"""The controller's store on a real PostgreSQL (a throwaway cluster): the same books as on
SQLite for the same reports, exactly-once by the database's constraints, versioned
migrations, and ``[store]`` read strictly with the password kept out of the configuration."""

from __future__ import annotations

import logging
from fractions import Fraction
from pathlib import Path

import pytest

from firmware.config import load_jackpot_config
from firmware.jackpot.config import JackpotConfigError
from firmware.jackpot.controller import JackpotController, report
from firmware.jackpot.database import open_store
from firmware.jackpot.pg import MIGRATIONS, PgDatabase, PgTarget
from firmware.jackpot.store import StoreError, StoreUnavailable
from tests.link.helpers import (
    POOL,
    Expected,
    check_accounting,
    dealer_payloads,
    dealer_records,
    seat_script,
)


def _payloads(table: str, seats: int, rounds: int) -> tuple[list[tuple[str, bytes]], Expected]:
    import json

    expected = Expected()
    scripts = {}
    out: list[tuple[str, bytes]] = []
    for box in range(1, seats + 1):
        unit = f"{table}/seat-{box}"
        script, exp = seat_script(unit, rounds, seed=70 + box, meter_hits=True)
        expected.add(exp)
        scripts[box] = script
        for seq, (kind, body, rnd, _key) in enumerate(script, 1):
            out.append((f"betbox/v1/unit/{unit}/report", json.dumps(
                {"schema": 1, "id": f"{table}-s{box}-{seq:06d}", "unit": unit, "table": table, "box": box,
                 "seq": seq, "kind": kind, "round": rnd, "body": body}).encode()))
    records = dealer_records(scripts)
    out += dealer_payloads(table, records)
    expected.events[f"{table}/dealer"] = len(records)
    return out, expected


def _pg(postgres) -> PgDatabase:
    return open_store("unused", postgres.url, postgres.password_file)


def test_the_same_reports_make_the_same_books_on_postgresql_as_on_sqlite_and_a_resend_counts_once(postgres,
                                                                                                   tmp_path):
    messages, expected = _payloads("table-1", 3, 80)
    books = {}
    for name, store in (("sqlite", tmp_path / "j.db"), ("postgresql", _pg(postgres))):
        ctl = JackpotController(store, [POOL])
        for i in range(0, len(messages), 97):              # batches of uneven size
            ctl.ingest_batch(messages[i:i + 97])
        again = ctl.ingest_batch(messages[::7])            # a resend: every one a duplicate
        assert {r.status for r in again} == {"duplicate"}
        data = report(ctl.db)
        check_accounting(data, expected)
        books[name] = (data["pools"], {u: {k: v for k, v in d.items()} for u, d in data["units"].items()},
                       [{k: v for k, v in h.items() if k != "hit"} for h in data["last_hits"]],
                       data["held"], data["integrity"]["count"])
        ctl.close()
    assert books["postgresql"] == books["sqlite"]
    # the meter hits of the script were confirmed by their rounds' results: exact to the cent
    pool = books["postgresql"][0]["main"]
    assert pool["balanced"] and pool["meters"]["pending"] == 0


def test_a_report_id_reused_under_another_seq_is_rejected_by_the_databases_constraint(postgres):
    ctl = JackpotController(_pg(postgres), [POOL])
    messages, _ = _payloads("table-2", 1, 2)
    topic, payload = messages[0]
    assert ctl.ingest(topic, payload).status == "accepted"
    forged = payload.replace(b'"seq": 1', b'"seq": 2')
    assert ctl.ingest(topic, forged).reason == "id_reused"
    assert ctl.ingest(*messages[1]).status == "accepted"      # the transaction goes on
    assert report(ctl.db)["rejected"]["by_reason"] == {"id_reused": 1}
    ctl.close()


def test_migrations_are_versioned_and_a_newer_schema_is_refused(postgres, tmp_path):
    db = _pg(postgres)
    db.close()
    db = _pg(postgres)          # a second open applies nothing
    assert db.execute("SELECT version FROM schema_version ORDER BY version").fetchall() == [
        (v,) for v in range(1, len(MIGRATIONS) + 1)]
    db.execute("INSERT INTO schema_version VALUES (?, 0)", (len(MIGRATIONS) + 1,))
    db.close()
    with pytest.raises(StoreError, match="newer controller"):
        _pg(postgres)
    # SQLite: the same versions table, also on a database from before it
    from firmware.jackpot import store

    lite = store.connect(tmp_path / "j.db")
    assert lite.execute("SELECT version FROM schema_version").fetchall() == [(1,)]
    lite.execute("DROP TABLE schema_version")
    lite.close()
    lite = store.connect(tmp_path / "j.db")
    assert lite.execute("SELECT version FROM schema_version").fetchall() == [(1,)]
    lite.close()


def test_an_unreachable_database_is_store_unavailable_and_names_no_password(postgres, caplog):
    caplog.set_level(logging.DEBUG)
    wrong = PgTarget(f"postgresql://betbox@127.0.0.1:{postgres.port + 1}/betbox", postgres.password_file)
    with pytest.raises(StoreUnavailable) as exc:
        PgDatabase(wrong)
    secret = postgres.password_file.read_text().strip()
    assert secret not in str(exc.value) and secret not in caplog.text


def _config(**store) -> dict:
    return {"unit": {"role": "jackpot", "id": "main", "state_dir": "/tmp/x"},
            "link": {"broker": "mqtt://127.0.0.1:1883"}, "store": store}


@pytest.mark.parametrize("store, error", [
    ({"url": "mysql://h/db"}, "not a postgresql:// URL"),
    ({"url": "postgresql://betbox:secret@127.0.0.1/betbox"}, "password_file"),
    ({"url": "postgresql://betbox@127.0.0.1:5432/"}, "names no database"),
    ({"url": "postgresql://betbox@127.0.0.1/b", "pasword_file": "x"}, "unknown key"),
    ({}, "url: missing"),
])
def test_store_configuration_is_read_strictly(store, error):
    with pytest.raises(JackpotConfigError, match=error) as exc:
        load_jackpot_config(_config(**store))
    assert "secret" not in str(exc.value)


@pytest.mark.parametrize("content, error", [(None, "larger than"), (b"\xff\xfe\n", "not UTF-8 text")])
def test_a_password_file_is_read_to_its_bound(tmp_path, content, error):
    """[store] password_file = "/dev/zero" was read until memory ran out at connect; a file
    that is not text ended in UnicodeDecodeError, naming neither file nor key."""
    path = Path("/dev/zero") if content is None else tmp_path / "pg.pass"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(StoreError, match=rf"\[store\] password_file: {path}: .*{error}"):
        PgTarget("postgresql://betbox@127.0.0.1/betbox", path).password()


def test_store_configuration_resolves_the_password_file_and_keeps_sqlite_without_it(tmp_path):
    cfg = load_jackpot_config(_config(url="postgresql://betbox@127.0.0.1:5432/betbox", password_file="pg.pass"),
                              base=tmp_path)
    assert cfg.store.password_file == tmp_path / "pg.pass" and cfg.store.url.endswith("/betbox")
    plain = _config()
    del plain["store"]
    assert load_jackpot_config(plain).store is None
    assert Fraction(load_jackpot_config(plain).pools[0].seed) == 1000


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_within_one_batch_a_repeat_is_a_duplicate_and_a_reused_seq_or_id_is_rejected(kind, postgres, tmp_path):
    ctl = JackpotController(tmp_path / "j.db" if kind == "sqlite" else _pg(postgres), [POOL])
    (t1, p1), (t2, p2) = _payloads("table-6", 1, 2)[0][:2]
    seq_reused = p2.replace(b'"seq": 2', b'"seq": 1')
    id_reused = p2.replace(b'"id": "table-6-s1-000002"', b'"id": "table-6-s1-000001"')
    results = ctl.ingest_batch([(t1, p1), (t1, p1), (t2, seq_reused), (t2, id_reused), (t2, p2), (t2, p2)])
    assert [(r.status, r.reason) for r in results] == [
        ("accepted", None), ("duplicate", None), ("rejected", "seq_reused"), ("rejected", "id_reused"),
        ("accepted", None), ("duplicate", None)]
    # and in the next batch, against what the database holds
    assert [r.status for r in ctl.ingest_batch([(t2, p2), (t1, p1)])] == ["duplicate", "duplicate"]
    u = report(ctl.db)["units"]["table-6/seat-1"]
    assert (u["events"], u["contiguous"], u["duplicates"]) == (2, 2, 4)
    ctl.close()


def test_a_controller_superseded_by_another_commits_nothing_more(postgres):
    """The fence behind the advisory lock: a controller that lost the lock without
    noticing (a partition) cannot commit once another became active."""
    from firmware.jackpot.pg import Superseded

    old_db, new_db = _pg(postgres), _pg(postgres)
    old = JackpotController(old_db, [POOL])
    old.epoch = old_db.become_active("main", "old:1")
    (t1, p1), (t2, p2) = _payloads("table-7", 1, 2)[0][:2]
    assert old.ingest(t1, p1).status == "accepted"
    epoch = new_db.become_active("main", "new:2")
    new = JackpotController(new_db, [POOL])
    new.epoch = epoch
    with pytest.raises(Superseded):
        old.ingest(t2, p2)
    assert new.ingest(t2, p2).status == "accepted"          # nothing of the old one's try is held
    assert report(new.db)["units"]["table-7/seat-1"]["events"] == 2
    old.close()
    new.close()
