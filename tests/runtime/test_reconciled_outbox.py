"""The outbox of a unit the pit reconciled (``betbox pit reconciled``): its durable behind
mark goes (or the link would flag the unit again at its next start, and its reporter would
hold back money reports for ever), and the reports it held under the controller's mark
(never deleted as confirmed: the controller holds others under those seqs) are moved aside
into the ``set_aside`` table, in the reconciling step's own transaction: counted, shown by
``betbox diag``, never sent again and never deleted."""

from __future__ import annotations

import json
import sqlite3
from types import SimpleNamespace

from firmware.diag import check_outbox
from firmware.link.outbox import Outbox
from firmware.runtime.bus import Message, pit_command_topic
from firmware.runtime.journal import Journal
from firmware.runtime.unit import BEHIND
from tests.link.commitchild import SHOE_DOWN, UNIT, open_dealer

SHOE_UP = {"device": "shoe", "kind": "card_shoe", "state": "up"}


def rows(path, table: str) -> list[tuple]:
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return db.execute(f"SELECT seq, key FROM {table} ORDER BY seq").fetchall()
    finally:
        db.close()


def command(seq: int, by: str = "Ann") -> dict:
    return Message(pit_command_topic("t"), "reconciled", "pit", seq, {"tx": f"tx{seq}", "by": by, "box": None}).to_dict()


def test_a_reconciled_dealer_keeps_its_held_reports_aside_and_is_not_behind_again(tmp_path):
    dealer, journal, outbox = open_dealer(tmp_path)
    dealer.outbox = outbox                                  # as betbox run wires it
    dealer.step("device", dict(SHOE_DOWN))
    dealer.step("device", dict(SHOE_UP))
    held = outbox.last_seq
    assert held >= 2
    behind = outbox.mark_behind(held + 5)                   # restarted from an older copy
    assert dealer.step(BEHIND, behind)
    assert dealer.step("msg", command(1))
    assert dealer.behind is None
    assert outbox.behind is None                            # the durable mark went with the step
    # nothing held under the mark is sent again (only what was reported after it) ...
    assert all(seq > held + 5 for seq, _ in rows(journal.path, "outbox"))
    kept = rows(journal.path, "set_aside")
    assert [seq for seq, _ in kept] == list(range(1, held + 1))       # ... and nothing is lost
    assert outbox.set_aside == held
    # the reconciled alarm is reported after the mark, and a confirmation deletes only that
    after = outbox.pending()
    assert after and all(p.seq > held + 5 for p in after)
    assert any(json.loads(p.payload)["body"]["alarm"] == "reconciled" for p in after)
    outbox.confirm_through(after[-1].seq)
    assert rows(journal.path, "set_aside") == kept and rows(journal.path, "outbox") == []
    # diag shows them
    check = check_outbox(SimpleNamespace(state_dir=tmp_path, link=object()))
    assert check.status == "warn" and f"{held} report(s) set aside" in check.detail, check
    outbox.close()
    journal.close()
    # started again: the link finds no mark (the unit is not flagged again), the unit's
    # journal replayed says not behind, and the reports set aside are still there
    again, journal, outbox = open_dealer(tmp_path)
    try:
        assert outbox.behind is None and again.behind is None and outbox.set_aside == held
        assert [a["by"] for a in again.alarms if a["alarm"] == "reconciled"] == ["Ann"]
    finally:
        outbox.close()
        journal.close()


def test_a_step_that_fails_leaves_the_outbox_behind(tmp_path):
    """The mark and the reports move in the step's own transaction: a step that is not
    written (a fault after the move) moves nothing."""
    dealer, journal, outbox = open_dealer(tmp_path)
    dealer.outbox = outbox
    dealer.step("device", dict(SHOE_DOWN))
    behind = outbox.mark_behind(outbox.last_seq + 5)
    assert dealer.step(BEHIND, behind)

    def broken(unit) -> None:
        raise RuntimeError("the step fails after the outbox was moved")
    dealer.observe(broken, in_step=True)
    try:
        dealer.step("msg", command(1))
    except RuntimeError:
        pass
    outbox.close()
    journal.close()
    journal = Journal(tmp_path / "journal.db", UNIT, "dealer")
    again = Outbox(tmp_path / "outbox.db", UNIT, journal=journal)
    try:
        assert again.behind == behind and again.set_aside == 0
    finally:
        again.close()
        journal.close()


def test_an_outbox_of_its_own_file_is_reconciled_too(tmp_path):
    outbox = Outbox(tmp_path / "outbox.db", "t/seat-1")
    for n in range(3):
        outbox.put("r", "alarm", {"n": n}, key=f"alarm/{n + 1}")
    assert outbox.reconcile("Ann") is None                  # not behind: nothing moves
    outbox.mark_behind(10)
    assert outbox.reconcile("Ann") == 3
    assert outbox.behind is None and outbox.set_aside == 3 and outbox.pending() == []
    assert outbox.put("r", "alarm", {"n": 0}, key="alarm/1") is None      # reported: never again
    outbox.close()
    again = Outbox(tmp_path / "outbox.db", "t/seat-1")
    try:
        assert again.behind is None and again.set_aside == 3
        assert again.put("r", "alarm", {"n": 9}, key="alarm/9") == 11     # numbered after the mark
    finally:
        again.close()
