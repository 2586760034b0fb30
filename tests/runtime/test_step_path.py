"""What a step costs on a card's way to its report (issue #17 "Speed"): one transaction per
step on the journal's file, its delivered marks riding with the next step's commit, and the
reports already reported known without asking SQLite again."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import time
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


def test_an_outbox_not_behind_is_read_once_not_at_every_step(tmp_path):
    """The seat's reporter asks at every step whether its outbox is behind: the answer "not
    behind" is read once (this outbox is the only writer of its mark), not once a step."""
    dealer, journal, outbox = open_dealer(tmp_path)
    assert outbox.behind is None                            # read: no mark in the file
    sql = Statements(journal._db, outbox._db)
    for n in range(4):
        assert dealer.step("device", dict(SHOE_DOWN if n % 2 == 0 else SHOE_UP))
        assert outbox.behind is None
    assert not [s for s in sql.seen if "'BEHIND'" in s]
    last = outbox.last_seq
    assert outbox.mark_behind(last + 5) == {"outbox_seq": last, "confirmed": last + 5}
    assert outbox.behind == {"outbox_seq": last, "confirmed": last + 5}     # made here: known at once
    outbox.close()
    journal.close()


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


def test_what_a_unit_made_at_start_up_is_left_out_of_the_collectors_rounds():
    """A full collection walks every object the unit holds (its replayed round, the rules,
    the chip registry, paho, SQLite): 7-11 ms on the card's way, once in a while. What is
    alive once the unit has started stays alive: ``betbox run`` freezes it (gc.freeze)."""
    import gc
    import weakref

    from firmware.commands.run import settle_heap

    class Garbage:
        pass

    held = [[n] for n in range(1000)]               # alive at start-up, kept for the run
    cycle = Garbage()
    cycle.me = cycle                                # type: ignore[attr-defined]
    gone = weakref.ref(cycle)
    del cycle                                       # garbage only a collection frees
    frozen = gc.get_freeze_count()
    gc.disable()                                    # no collection of its own between the counts
    try:
        settle_heap()
        assert gc.get_freeze_count() >= frozen + len(held)
        assert gone() is None                       # garbage was collected first, not frozen
    finally:
        gc.unfreeze()
        gc.enable()


def test_a_steps_message_is_made_json_once_for_the_journal_and_the_wire(tmp_path, monkeypatch):
    """The journal holds the very text the transport sends (the step's message is written,
    then published): it is encoded once, not once for each."""
    import json

    dealer, journal, outbox = open_dealer(tmp_path)
    sent: list[str] = []
    publish = dealer.bus.publish
    dealer.bus.publish = lambda m: (sent.append(m.to_json()), publish(m))[1]
    encoded: list[str] = []
    dumps = json.dumps

    def counted(obj, *args, **kwargs):
        text = dumps(obj, *args, **kwargs)
        if isinstance(obj, dict) and {"topic", "sender", "seq", "body"} <= set(obj):
            encoded.append(text)                    # a whole message
        return text
    monkeypatch.setattr(json, "dumps", counted)
    assert dealer.step("device", dict(SHOE_DOWN))          # one alarm message
    monkeypatch.undo()
    assert len(sent) == 1 and encoded == sent                 # encoded once: what went out
    out = [r for r in list(journal.steps())[-1] if r.dir == "out"]
    assert [json.dumps(r.body, sort_keys=True, separators=(",", ":")) for r in out] == sent
    outbox.close()
    journal.close()


def test_a_units_link_reads_a_message_in_one_system_call_not_one_a_field(tmp_path, broker):
    """paho reads each incoming packet with three or more ``recv`` calls (its type, its
    length a byte at a time, the rest), each giving up the interpreter lock to the unit's
    busy thread and waiting for it again: a dealer's message on its way into the seat, a
    PUBACK on its way back. A unit's link reads what the kernel holds at once (the
    controller's ChunkedClient), the packets and callbacks paho's own."""
    import json
    from collections import Counter

    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    from firmware.link import connect_bus
    from firmware.runtime.bus import Message
    from tests.link.helpers import wait_until

    seat = connect_bus(broker.url, "t/seat-1", role="seat")
    got: list[Message] = []
    seat.subscribe("betbox/v1/t/stream", got.append, "t/seat-1")
    reads: Counter[int] = Counter()
    recv = mqtt.Client._sock_recv

    def counted(client, bufsize):
        out = recv(client, bufsize)
        reads[id(client)] += 1
        return out
    dealer = mqtt.Client(CallbackAPIVersion.VERSION2)
    host, port = broker.url.removeprefix("mqtt://").split(":")
    dealer.connect(host, int(port))
    dealer.loop_start()
    try:
        first = Message("betbox/v1/t/stream", "event", "t/dealer", 0, {"round": 1, "stream_seq": 0})
        for _ in range(100):                                # until the seat's subscription is in
            dealer.publish(first.topic, first.to_json(), qos=1).wait_for_publish(5)
            if seat.wait_subscribed(0.1) and got:
                break
        wait_until(lambda: got, 10, "the seat subscribed")
        got.clear()
        mqtt.Client._sock_recv = counted                    # type: ignore[method-assign]
        for n in range(1, 21):
            m = Message("betbox/v1/t/stream", "event", "t/dealer", n, {"round": 1, "stream_seq": n})
            dealer.publish(m.topic, m.to_json(), qos=1).wait_for_publish(5)
            wait_until(lambda n=n: any(m.seq == n for m in got), 10, f"message {n} at the seat", step=0.001)
    finally:
        mqtt.Client._sock_recv = recv                       # type: ignore[method-assign]
        dealer.loop_stop()
        dealer.disconnect()
        seat.close()
    got = [m for m in got if m.seq]                         # (a late copy of the first one)
    assert [m.seq for m in got] == list(range(1, 21))
    assert json.loads(got[-1].to_json())["body"] == {"round": 1, "stream_seq": 20}
    assert reads[id(seat._client)] <= 20 + 3, reads         # a read a message (and a spare)


def test_the_wal_is_folded_in_after_a_steps_messages_are_handed_not_in_its_commit(tmp_path, monkeypatch):
    """SQLite checkpoints the WAL inside the COMMIT that crosses its page count: one step in
    ~9 (dealer and seat each) paid a checkpoint (~0.5 ms, an fsync of the main file) before
    its message or report went out. The unit folds it in every few steps once the step's
    messages and reports are handed and its screen is updated; SQLite's own stays only as a
    backstop far above it. The WAL stays as small as before."""
    import os

    from firmware.runtime.storage import WAL_AUTOCHECKPOINT, WAL_SIZE_LIMIT

    dealer, journal, outbox = open_dealer(tmp_path)
    for db in (journal._db, outbox._db):                     # not inside a step's COMMIT
        assert db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] > 10 * WAL_AUTOCHECKPOINT
    from firmware.runtime.journal import CHECKPOINT_STEPS
    order: list[str] = []
    publish = dealer.bus.publish
    dealer.bus.publish = lambda m: (order.append("message"), publish(m))[1]
    outbox.add_listener(lambda: order.append("report"))
    monkeypatch.setattr(os, "sched_yield", lambda: order.append("yield"))
    sql = Statements(journal._db)
    journal._db.set_trace_callback(lambda s: (sql.seen.append(s.upper()),
                                              order.append("checkpoint") if "WAL_CHECKPOINT" in s.upper() else None))
    for n in range(CHECKPOINT_STEPS * 12):
        assert dealer.step("device", dict(SHOE_DOWN if n % 2 == 0 else SHOE_UP))
    folds = [i for i, what in enumerate(order) if what == "checkpoint"]
    assert len(folds) == 12
    assert all(order[i - 1] in ("yield", "report", "message") for i in folds)   # after the hand-over
    assert os.path.getsize(str(journal.path) + "-wal") <= WAL_SIZE_LIMIT + 64 * 4096
    outbox.close()
    journal.close()


def test_a_report_wakes_the_sender_neither_inside_the_step_nor_when_it_was_reported(tmp_path, broker):
    """A reporter asks at every step for its round's reports; ``report`` woke the outbox's
    sender thread each time, inside the step's transaction, even for a key reported long
    ago (nothing to send) and for a new report not yet committed (the sender cannot see it
    yet): a thread hand-off on the card's way. A committed report is handed over by the
    outbox's listener (once committed) and the PUBACK wakes the sender."""
    from firmware.engine.profile import load_profile
    from firmware.link import connect_bus
    from firmware.link.outbox import Outbox
    from firmware.runtime.dealer import DealerUnit
    from tests.link.helpers import wait_until

    journal = Journal(tmp_path / "journal.db", "t/dealer", "dealer")
    outbox = Outbox(tmp_path / "outbox.db", "t/dealer", journal=journal)
    bus = connect_bus(broker.url, "t/dealer", role="dealer", outbox=outbox)
    dealer = DealerUnit("t/dealer", "t", bus, journal, load_profile("rws-blackjack"), close_wait=None)
    dealer.recover()
    stepping = [False]
    woken_by_steps: list[bool] = []
    wake = bus._wake.set

    def counted() -> None:
        if stepping[0] and threading.current_thread() is threading.main_thread():
            woken_by_steps.append(journal.step_db() is not None)
        wake()
    bus._wake.set = counted                         # type: ignore[method-assign]
    keys: set[str] = set()

    def report(unit) -> None:
        keys.add(f"k/{unit.journal.last_step // 3}")
        bus.report("alarm", {"alarm": "x", "detail": ""}, key=f"k/{unit.journal.last_step // 3}")
    dealer.observe(report, in_step=True)
    try:
        for n in range(9):                          # a new key every third step, else known
            stepping[0] = True
            assert dealer.step("device", dict(SHOE_DOWN if n % 2 == 0 else SHOE_UP))
            stepping[0] = False
        assert outbox.last_seq == len(keys) >= 3
        assert not any(woken_by_steps), "the sender was woken inside a step's transaction"
        wait_until(lambda: outbox.stats()["waiting"] == 0, 10, "every report acknowledged", step=0.001)
    finally:
        bus.close()
        outbox.close()
        journal.close()


def test_a_reporter_makes_no_report_body_for_a_key_already_reported(tmp_path, monkeypatch):
    """The reporters look at every step whether their round's reports were made, and built
    each report's body (the dealer's progressive record, a seat's settlement) before the
    outbox said "reported already": CPU inside the step's transaction, every step."""
    from firmware.link import reporter
    from firmware.runtime.dealer import DealerUnit

    made: list[str] = []
    record = reporter.progressive_record
    monkeypatch.setattr(reporter, "progressive_record", lambda state: (made.append("progressive"), record(state))[1])
    dealer, journal, outbox = open_dealer(tmp_path)
    assert isinstance(dealer, DealerUnit)
    reported = outbox.put                       # the dealer's round record, once made
    keys: list[str | None] = []
    outbox.put = lambda *a, **k: (keys.append(k.get("key")), reported(*a, **k))[1]    # type: ignore[method-assign]
    made.clear()
    for n in range(6):                          # steps with no round: nothing to build
        assert dealer.step("device", dict(SHOE_DOWN if n % 2 == 0 else SHOE_UP))
    assert made == []
    from firmware.link.reporter import DealerReporter

    class Round:                                # a round whose record was made: known
        is_over = False
    dealer.round, dealer.round_no = Round(), 7  # type: ignore[assignment]
    outbox._know("7/round_progressive")
    DealerReporter(dealer, type("L", (), {"outbox": outbox, "report": lambda self, *a, **k: None})())._round_record(dealer)
    assert made == []                           # known: its body is not built again
    outbox.close()
    journal.close()


def test_the_wal_is_not_folded_in_while_an_input_waits(tmp_path):
    """The fold (a checkpoint: the WAL's pages written into the file and fsynced, ~1 ms) ran
    at the end of every eighth step even with the next input already queued (the next card
    at the shoe): it waited behind it. It waits for a step that ends with nothing queued,
    and is never put off for long (a backstop in steps)."""
    from firmware.runtime.journal import CHECKPOINT_STEPS

    dealer, journal, outbox = open_dealer(tmp_path)
    folds: list[int] = []
    journal._db.set_trace_callback(lambda s: folds.append(journal.last_step) if "WAL_CHECKPOINT" in s.upper() else None)
    dealer.inbox.put(("device", dict(SHOE_UP)))          # an input waits behind each step
    for n in range(CHECKPOINT_STEPS * 2):
        assert dealer.step("device", dict(SHOE_DOWN if n % 2 == 0 else SHOE_UP))
    assert folds == []
    dealer.inbox.get()                                   # nothing waits now: folded at once
    assert dealer.step("device", dict(SHOE_DOWN))
    assert len(folds) == 1
    dealer.inbox.put(("device", dict(SHOE_UP)))
    for n in range(CHECKPOINT_STEPS * 8):                # busy for long: folded anyway
        assert dealer.step("device", dict(SHOE_DOWN if n % 2 == 0 else SHOE_UP))
    assert len(folds) >= 2
    dealer.inbox.get()
    outbox.close()
    journal.close()


def test_a_step_that_hands_nothing_over_does_not_yield(tmp_path, monkeypatch):
    """The step yields so that paho's network thread writes what it was handed; a step that
    handed nothing (a seat taking the dealer's card, most of its steps) gave the interpreter
    away for nothing and waited to get it back before its next input."""
    import os

    from tests.tables import booted_table, place_bet

    t = booted_table(tmp_path)
    yields: list[int] = []
    monkeypatch.setattr(os, "sched_yield", lambda: yields.append(1))
    units = [t.dealer, *t.seats.values()]

    def handing_steps() -> int:                  # steps of every unit that emitted a message
        return sum(len({r.step for r in u.journal.records() if r.dir == "out"}) for u in units)
    before, steps = handing_steps(), sum(u.journal.last_step for u in units)
    t.console.press("open_bets")
    t.settle()
    place_bet(t, 1, 10)
    t.console.press("no_more_bets")
    t.settle()
    for card in "9H 5C TD 7S".split():
        t.shoe.deal(card)
        t.settle()
    assert sum(u.journal.last_step for u in units) - steps > handing_steps() - before   # some handed nothing
    assert len(yields) == handing_steps() - before


def test_a_new_report_is_asked_of_sqlite_in_one_statement_inside_the_step(tmp_path):
    """A new report cost the step five or six statements (whether its key waits in the
    outbox, whether it was reported and confirmed, its name's running mark, the next seq,
    the INSERT, the UPDATE), each one letting the process's other threads take the
    interpreter: the three questions are one SELECT now; the answers are the file's (the
    database still judges a duplicate, across restarts), nothing is kept in memory for it."""
    dealer, journal, outbox = open_dealer(tmp_path)
    sql = Statements(journal._db, outbox._db)
    assert dealer.step("device", dict(SHOE_DOWN))             # an alarm: a new report
    assert outbox.last_seq == 1
    inside = sql.seen[sql.seen.index("BEGIN IMMEDIATE"):sql.seen.index("COMMIT")]
    assert len([s for s in inside if "OUTBOX" in s or "REPORTED" in s]) == 3, inside   # SELECT, INSERT, UPDATE
    # still the file's answers: a key waiting, a key confirmed (gone from the outbox), a mark
    assert outbox.put("t", "alarm", {}, key="alarm/1") is None
    outbox.close()
    journal.close()
    from firmware.link.outbox import Outbox
    journal = Journal(tmp_path / "journal.db", "t/dealer", "dealer")
    outbox = Outbox(tmp_path / "outbox.db", "t/dealer", journal=journal)
    assert outbox.put("t", "alarm", {}, key="alarm/1") is None     # waiting: refused after a restart
    outbox.confirm_through(1)
    assert outbox.stats()["waiting"] == 0
    outbox.close()
    journal.close()
    journal = Journal(tmp_path / "journal.db", "t/dealer", "dealer")
    outbox = Outbox(tmp_path / "outbox.db", "t/dealer", journal=journal)
    assert outbox.put("t", "alarm", {}, key="alarm/1") is None     # confirmed: refused after a restart
    assert outbox.put("t", "x", {}, key="other/1") == 2
    assert outbox.put("t", "x", {}) == 3                           # no key: always a new report
    outbox.close()
    journal.close()


def test_a_seats_reporter_settles_a_round_reported_once_not_at_every_step(tmp_path, monkeypatch):
    """Once a round is over, a seat's reporter valued its box's settlement (and each side
    bet's body) again at every later step (the chips taken off, the next round's bets) to be
    told "reported already": its ``round_result``, put last, is known, so nothing is made."""
    from firmware.link import reporter
    from firmware.link.outbox import Outbox
    from firmware.link.reporter import SeatReporter
    from tests.link.commitchild import Link
    from tests.tables import booted_table, deal_initial, finish_round, open_round

    t = booted_table(tmp_path / "t")
    seat = t.seats[1]
    outbox = Outbox(tmp_path / "ob.db", seat.unit_id)
    SeatReporter(seat, Link(outbox))
    settled: list[int] = []
    real = reporter.box_settlement
    monkeypatch.setattr(reporter, "box_settlement", lambda state, box: (settled.append(box), real(state, box))[1])
    open_round(t, {1: {"main": 10}})
    deal_initial(t, {1: ["9H", "8D"]})
    finish_round(t)
    kinds = [json.loads(p.payload)["kind"] for p in outbox.pending()]
    assert kinds.count("round_result") == 1
    once = len(settled)
    assert once >= 1
    steps = seat.journal.last_step
    t.readers[1].remove_chips("main")                   # the player takes the chips back
    t.cycle_readers(3, [1])
    t.settle()
    assert seat.journal.last_step > steps               # the seat stepped on ...
    assert len(settled) == once                         # ... and valued nothing again
    assert [json.loads(p.payload)["kind"] for p in outbox.pending()] == kinds
    outbox.close()


def wal_bytes(path: Path) -> int:
    wal = Path(str(path) + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_a_step_and_its_report_write_small_pages_to_the_wal(tmp_path):
    """The COMMIT's fsync costs by the bytes it flushes (~30 us a 4 KiB page here): a new
    journal (and each new active file a rotation starts) is made of 1 KiB pages, so a step
    with its record, its message and its report flushes a quarter of what 4 KiB pages did."""
    dealer, journal, outbox = open_dealer(tmp_path)
    assert journal._db.execute("PRAGMA page_size").fetchone()[0] == 1024
    dealer.step("device", dict(SHOE_UP))
    journal.checkpoint_due()
    journal._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")   # an empty WAL: the next step's frames alone
    before = wal_bytes(journal.path)
    assert dealer.step("device", dict(SHOE_DOWN))            # its record, its alarm message and report
    assert len(outbox.pending()) >= 1
    assert 0 < wal_bytes(journal.path) - before <= 12 * 1024  # 4 KiB pages: 6-8 frames, 24-32 KiB
    outbox.close()
    journal.close()


def test_a_journal_of_4k_pages_opens_as_it_is_and_its_next_active_file_has_small_pages(tmp_path):
    """Older journals keep their page size (it cannot change in WAL mode without rewriting
    the file); a rotation's new active file is written with the small pages."""
    path = tmp_path / "journal.db"
    db = sqlite3.connect(path)
    db.execute("PRAGMA page_size=4096")
    db.execute("PRAGMA journal_mode=WAL")
    db.close()
    journal = Journal(path, "t/dealer", "dealer", rotate_rounds=1)
    assert journal._db.execute("PRAGMA page_size").fetchone()[0] == 4096
    journal.write_step([Record("in", "tick", {"now": 1}, round=1),
                        Record("out", "m", {"n": 1}, seq=1, round=1)])
    journal.mark_delivered([1])
    assert journal.rotate({"format": 5, "state": {}}) is not None
    assert journal._db.execute("PRAGMA page_size").fetchone()[0] == 1024
    assert journal.checkpoint() == {"format": 5, "state": {}}
    journal.close()


def wal_restarts(path: Path) -> int:
    """The WAL header's checkpoint sequence number: SQLite adds one each time a writer starts
    the log over (and writes and fsyncs its new header first)."""
    return int.from_bytes(Path(str(path) + "-wal").read_bytes()[12:16], "big")


def test_the_wal_is_started_over_with_its_fold_not_in_the_next_steps_commit(tmp_path):
    """The first writer after a fold starts the WAL over, and SQLite fsyncs the new header
    before the frames: in the next step's COMMIT that was a second fsync on the card's way,
    one step in CHECKPOINT_STEPS, in each unit. The fold starts it over with a light write of
    its own (the delivered marks waiting, safe to lose), off the card's way."""
    from firmware.runtime.journal import CHECKPOINT_STEPS

    journal = Journal(tmp_path / "journal.db", "t/dealer", "dealer")
    seq = 0
    for with_message in (True, False):            # marks waiting, or none (a seat's card steps)
        for _ in range(CHECKPOINT_STEPS - 1):
            seq += 1
            records = [Record("in", "tick", {"now": seq}, round=1)]
            if with_message:
                records.append(Record("out", "m", {"n": seq}, seq=seq, round=1))
            journal.write_step(records)
            journal.mark_delivered([seq] if with_message else [], later=True)
            journal.checkpoint_due()
        started = wal_restarts(journal.path)
        journal.write_step([Record("in", "tick", {"now": 0}, round=1)])
        journal.checkpoint_due()                                  # the fold
        assert wal_restarts(journal.path) == started + 1          # started over already
        journal.write_step([Record("in", "tick", {"now": 0}, round=1)])
        assert wal_restarts(journal.path) == started + 1          # the step wrote into it
    assert [r.body for r in journal.records()][-1] == {"now": 0}
    assert journal.undelivered() == []
    journal.close()


def test_a_wal_not_started_over_for_a_full_partition_loses_no_mark_and_stops_nothing(tmp_path, monkeypatch):
    """The light write after a fold may find the partition full: logged; the fold stands, the
    delivered marks wait for the next step's transaction, and the unit goes on."""
    from firmware.runtime.journal import CHECKPOINT_STEPS, JournalFull

    journal = Journal(tmp_path / "journal.db", "t/dealer", "dealer")
    for seq in range(1, CHECKPOINT_STEPS):
        journal.write_step([Record("in", "tick", {"now": seq}, round=1), Record("out", "m", {"n": seq}, seq=seq, round=1)])
        journal.mark_delivered([seq], later=True)
        journal.checkpoint_due()
    journal.write_step([Record("in", "tick", {"now": 0}, round=1),
                        Record("out", "m", {"n": CHECKPOINT_STEPS}, seq=CHECKPOINT_STEPS, round=1)])
    journal.mark_delivered([CHECKPOINT_STEPS], later=True)

    def full(statements, within=None):
        raise JournalFull("state partition full (test)")
    monkeypatch.setattr(journal, "_tx", full)
    journal.checkpoint_due()                                    # the fold, then the write refused
    monkeypatch.undo()
    assert delivered(journal.path)[CHECKPOINT_STEPS] is False   # not written ...
    journal.write_step([Record("in", "tick", {"now": 1}, round=1)])
    assert delivered(journal.path)[CHECKPOINT_STEPS] is True    # ... it rode with the next step
    journal.close()


def test_a_units_message_is_written_to_the_broker_by_the_step_not_handed_to_pahos_thread(tmp_path, broker):
    """paho (loop_start) queues a publish and wakes its network thread through a socketpair;
    that thread then waits for the interpreter lock (the unit's step holds it) before it
    writes: a hand-off on the dealer's card message and on the seat's report. On a plain
    link the publishing thread writes the packet itself, under the lock paho's thread takes
    to write; the packets, their order and the broker's PUBACKs are paho's own."""
    import paho.mqtt.client as mqtt

    from firmware.link import connect_bus
    from firmware.runtime.bus import Message
    from tests.link.helpers import STREAM, stream_message, until_subscribed, wait_until, writers_of

    seat = connect_bus(broker.url, "t/seat-1", role="seat")
    got: list[Message] = []
    seat.subscribe(STREAM, got.append, "t/seat-1")
    dealer = connect_bus(broker.url, "t/dealer", role="dealer")
    try:
        until_subscribed(dealer, seat, got)
        with writers_of(dealer._client, mqtt.PUBLISH) as writers:
            for n in range(1, 21):
                dealer.publish(stream_message(n))
            assert dealer.wait_published(10)                # every one PUBACKed by the broker
            wait_until(lambda: sum(1 for m in got if m.seq) >= 20, 10, "the messages at the seat", step=0.001)
    finally:
        dealer.close()
        seat.close()
    assert [m.seq for m in got if m.seq] == list(range(1, 21))      # all, once, in order
    assert writers == [threading.current_thread().name] * 20, writers


def test_a_message_published_while_another_thread_writes_goes_out_by_pahos_thread_in_order(tmp_path, broker):
    """The publishing thread writes only if no one else is writing (it never waits for the
    socket): while another holds the write lock, its messages are left to paho's thread,
    woken as paho wakes it, and arrive in order with those written directly."""
    import paho.mqtt.client as mqtt

    from firmware.link import connect_bus
    from firmware.runtime.bus import Message
    from tests.link.helpers import STREAM, stream_message, until_subscribed, wait_until, writers_of

    seat = connect_bus(broker.url, "t/seat-1", role="seat")
    got: list[Message] = []
    seat.subscribe(STREAM, got.append, "t/seat-1")
    dealer = connect_bus(broker.url, "t/dealer", role="dealer")
    try:
        until_subscribed(dealer, seat, got)
        with writers_of(dealer._client, mqtt.PUBLISH) as writers:
            held, release = threading.Event(), threading.Event()

            def writing() -> None:                          # another writer, mid-write
                with dealer._client._write_lock:
                    held.set()
                    release.wait(10)
            other = threading.Thread(target=writing, name="other-writer")
            other.start()
            assert held.wait(5)
            for n in range(1, 6):                           # left to paho's thread
                dealer.publish(stream_message(n))
            release.set()
            other.join(5)
            wait_until(lambda: len(writers) >= 5, 10, "paho's thread wrote them", step=0.001)
            assert dealer.wait_published(10)
            # paho's thread may still take the write lock for the wakes the five left (a pass
            # with nothing to write): a publish that finds the lock taken is paho's to write, rightly
            time.sleep(0.3)
            for n in range(6, 11):                          # written by this thread again
                dealer.publish(stream_message(n))
                assert dealer.wait_published(10)            # (no wake left for paho's thread)
            wait_until(lambda: sum(1 for m in got if m.seq) >= 10, 10, "the messages at the seat", step=0.001)
    finally:
        dealer.close()
        seat.close()
    assert [m.seq for m in got if m.seq] == list(range(1, 11))
    me = threading.current_thread().name
    assert me not in writers[:5] and writers[5:] == [me] * 5, writers


def test_the_puback_for_a_message_read_goes_out_in_the_pass_that_read_it(tmp_path, broker):
    """paho queues the PUBACK of a QoS 1 message it read and wakes itself through its
    socketpair: a send, another select, a recv of the wake, then the write, each giving
    the interpreter lock to the unit's step the message just started (the seat taking the
    dealer's card). A unit's link writes it in the pass that read the message."""
    import paho.mqtt.client as mqtt

    from firmware.link import connect_bus
    from firmware.runtime.bus import Message
    from tests.link.helpers import STREAM, spy_writes, stream_message, until_subscribed, wait_until

    seat = connect_bus(broker.url, "t/seat-1", role="seat")
    got: list[Message] = []
    seat.subscribe(STREAM, got.append, "t/seat-1")
    dealer = connect_bus(broker.url, "t/dealer", role="dealer")
    client = seat._client
    reading = [False]
    acks: list[bool] = []                       # each PUBACK the seat wrote: inside the read?
    read = client.loop_read

    def loop_read(*args, **kwargs):
        reading[0] = True
        try:
            return read(*args, **kwargs)
        finally:
            reading[0] = False
    try:
        until_subscribed(dealer, seat, got)
        time.sleep(0.2)                                     # (the first one's PUBACK out)
        client.loop_read = loop_read                        # type: ignore[method-assign]
        with spy_writes(client, mqtt.PUBACK, lambda buf: acks.extend([reading[0]] * (len(buf) // 4))):
            for n in range(1, 21):
                dealer.publish(stream_message(n))
                wait_until(lambda n=n: any(m.seq == n for m in got), 10, f"message {n} at the seat", step=0.001)
            wait_until(lambda: len(acks) >= 20, 10, "the seat's PUBACKs", step=0.001)
    finally:
        dealer.close()
        seat.close()
    assert [m.seq for m in got if m.seq] == list(range(1, 21))
    assert len(acks) == 20 and all(acks), acks
