"""What a step costs on a card's way to its report (issue #17 "Speed"): one transaction per
step on the journal's file, its delivered marks riding with the next step's commit, and the
reports already reported known without asking SQLite again."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path

from firmware.runtime.journal import Journal, Record
from tests.link.commitchild import SHOE_DOWN, open_dealer

SHOE_UP = {"device": "shoe", "kind": "card_shoe", "state": "up"}


class Statements:
    """The SQL a connection runs (its trace), counted by kind."""

    def __init__(self, *dbs: sqlite3.Connection) -> None:
        self.seen: list[str] = []
        for db in dbs:
            db.set_trace_callback(lambda sql: self.seen.append(" ".join(sql.split()).upper()))

    def count(self, prefix: str) -> int:
        return sum(1 for s in self.seen if s.startswith(prefix.upper()))


def delivered(path: Path) -> dict[int, bool]:
    """seq -> delivered, as the file holds it (read-only: never folds a WAL in)."""
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return {seq: bool(d) for seq, d in db.execute("SELECT seq, delivered FROM record WHERE dir = 'out'")}
    finally:
        db.close()


def test_a_step_is_one_transaction_and_its_delivered_mark_rides_with_the_next(tmp_path):
    dealer, journal, outbox = open_dealer(tmp_path)
    sql = Statements(journal._db, outbox._db)
    assert dealer.step("device", dict(SHOE_DOWN))          # an alarm message and its report
    assert sql.count("COMMIT") == 1                         # no second commit for the mark
    first = max(delivered(journal.path))
    assert delivered(journal.path)[first] is False          # handed to the bus, marked later
    assert journal.undelivered() == []                      # ... and known delivered meanwhile
    sql.seen.clear()
    assert dealer.step("device", dict(SHOE_UP))
    assert sql.count("COMMIT") == 1
    assert delivered(journal.path)[first] is True           # in the second step's commit
    journal.close()                                         # a clean close marks the rest
    assert all(delivered(journal.path).values())
    outbox.close()


def test_a_cut_before_the_next_step_only_sends_the_last_messages_again(tmp_path):
    dealer, journal, outbox = open_dealer(tmp_path / "live")
    dealer.step("device", dict(SHOE_DOWN))
    dealer.step("device", dict(SHOE_UP))
    last = max(delivered(journal.path))
    for name in ("journal.db", "journal.db-wal"):           # the power cut: the files as they are
        shutil.copy(tmp_path / "live" / name, tmp_path / name)
    outbox.close()
    journal.close()
    again = Journal(tmp_path / "journal.db", "t/dealer", "dealer")
    try:
        # the second step's messages were not marked yet: they go again (receivers drop
        # them by seq); the first step's mark committed with the second step
        assert [r.seq for r in again.undelivered()] == [last]
    finally:
        again.close()


def test_a_failed_step_keeps_the_marks_it_carried(tmp_path):
    journal = Journal(tmp_path / "journal.db", "t/dealer", "dealer")
    journal.write_step([Record("in", "x", {}), Record("out", "m", {"seq": 1}, seq=1)])
    journal.mark_delivered([1], later=True)

    def broken() -> None:
        raise RuntimeError("no room for the report")
    try:
        journal.write_step([Record("in", "y", {})], within=broken)
    except RuntimeError:
        pass
    journal.close()
    assert delivered(journal.path) == {1: True}


def test_a_step_asks_nothing_about_reports_it_knows_are_reported(tmp_path):
    dealer, journal, outbox = open_dealer(tmp_path)
    dealer.step("device", dict(SHOE_DOWN))                  # alarm/1 reported
    sql = Statements(journal._db, outbox._db)
    assert outbox.put("t", "alarm", {}, key="alarm/1") is None
    assert sql.count("SELECT") == 0                         # known: committed in a step
    outbox.close()
    journal.close()


def test_the_behind_mark_is_read_until_it_is_set_then_known(tmp_path):
    """A seat's reporter asks at every step whether its outbox is behind (a read each step)."""
    dealer, journal, outbox = open_dealer(tmp_path)
    dealer.step("device", dict(SHOE_DOWN))
    assert outbox.behind is None
    assert outbox.mark_behind(outbox.last_seq + 5) == {"outbox_seq": 1, "confirmed": 6}
    sql = Statements(journal._db, outbox._db)
    assert outbox.behind == {"outbox_seq": 1, "confirmed": 6}
    assert outbox.behind == {"outbox_seq": 1, "confirmed": 6}
    assert sql.count("SELECT") == 0
    outbox.close()
    journal.close()
    again_journal = Journal(tmp_path / "journal.db", "t/dealer", "dealer")
    from firmware.link.outbox import Outbox
    again = Outbox(tmp_path / "outbox.db", "t/dealer", journal=again_journal)
    assert again.behind == {"outbox_seq": 1, "confirmed": 6}       # durable, read back
    again.close()
    again_journal.close()


def test_a_report_of_a_step_rolled_back_is_not_known_reported(tmp_path):
    dealer, journal, outbox = open_dealer(tmp_path)

    def broken(unit) -> None:
        raise RuntimeError("the step fails after its report was written")
    dealer.observe(broken, in_step=True)
    try:
        dealer.step("device", dict(SHOE_DOWN))
    except RuntimeError:
        pass
    assert outbox.put("t", "alarm", {}, key="alarm/1") == 1  # never stored: stored now
    outbox.close()
    journal.close()



def test_a_committed_report_goes_to_paho_without_being_read_back(tmp_path, broker):
    """The step's thread hands its committed reports to paho as it wrote them (no read of
    the outbox, no wait for the sender's lock); the sender is not woken to look for reports
    that were handed already (each PUBACK used to make it read the outbox)."""
    from firmware.engine.profile import load_profile
    from firmware.link import connect_bus
    from firmware.link.outbox import Outbox
    from firmware.link.reporter import DealerReporter
    from firmware.runtime.dealer import DealerUnit
    from tests.link.helpers import wait_until

    journal = Journal(tmp_path / "journal.db", "t/dealer", "dealer")
    outbox = Outbox(tmp_path / "outbox.db", "t/dealer", journal=journal)
    bus = connect_bus(broker.url, "t/dealer", role="dealer", outbox=outbox)
    dealer = DealerUnit("t/dealer", "t", bus, journal, load_profile("rws-blackjack"), close_wait=None)
    dealer.recover()
    DealerReporter(dealer, bus)
    reads: list[str] = []
    stepping = [False]

    def saw(sql: str) -> None:
        if sql.lstrip().upper().startswith("SELECT SEQ, ID, TOPIC, PAYLOAD"):
            reads.append("step" if stepping[0] else threading.current_thread().name)
    outbox._db.set_trace_callback(saw)
    try:
        for n in range(20):
            stepping[0] = True
            assert dealer.step("device", dict(SHOE_DOWN if n % 2 == 0 else SHOE_UP))
            stepping[0] = False
            wait_until(lambda: outbox.stats()["waiting"] == 0, 10, "the report acknowledged", step=0.001)
        assert outbox.last_seq == 20
        assert reads.count("step") == 0
        # the sender reads only on its periodic look (every 0.5 s), not once or twice a report
        assert reads.count("outbox:t/dealer") < 10, reads
    finally:
        outbox._db.set_trace_callback(None)
        bus.close()
        outbox.close()
        journal.close()


def test_a_steps_records_are_one_statement(tmp_path):
    """Each statement inside the step's transaction lets the other threads of the unit's
    process take the interpreter (and hold it up to a switch interval): the step's input
    and messages go in one INSERT."""
    dealer, journal, outbox = open_dealer(tmp_path)
    sql = Statements(journal._db, outbox._db)
    assert dealer.step("device", dict(SHOE_DOWN))             # its input and its alarm message
    inserts = [s for s in sql.seen if s.startswith("INSERT INTO RECORD")]
    assert len(inserts) == 1
    steps = list(journal.steps())
    assert [r.dir for r in steps[-1]] == ["in", "out"]          # in order, one step
    outbox.close()
    journal.close()


def test_a_step_yields_to_the_link_once_its_messages_are_handed(tmp_path, monkeypatch):
    """paho writes from its network thread, woken to do so; the step's thread yields right
    after handing its messages and reports over, before the rest of its work (its marks, the
    lamps and screen), instead of keeping the interpreter up to a switch interval."""
    import os

    dealer, journal, outbox = open_dealer(tmp_path)
    order: list[str] = []
    publish, after_step = dealer.bus.publish, dealer.after_step
    dealer.bus.publish = lambda m: (order.append("message"), publish(m))[1]
    outbox.add_listener(lambda: order.append("report"))
    dealer.after_step = lambda: (order.append("after_step"), after_step())[1]
    monkeypatch.setattr(os, "sched_yield", lambda: order.append("yield"))
    assert dealer.step("device", dict(SHOE_DOWN))
    assert order == ["message", "report", "yield", "after_step"]
    outbox.close()
    journal.close()
