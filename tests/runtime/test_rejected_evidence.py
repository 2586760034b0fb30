"""Issue #12.9: a rejected bus message is journalled at the unit as evidence (what came,
from whom, why it was refused), bounded so a flood cannot fill the state partition, and
never replayed into the state."""

from __future__ import annotations

from firmware.engine.profile import load_profile
from firmware.runtime.bus import Message, up_topic
from firmware.runtime.journal import open_readonly
from firmware.runtime.unit import EVIDENCE_BYTES, EVIDENCE_PER_MINUTE
from firmware.sim import chipset
from firmware.sim.table import InProcessTable, TableSpec, seat_spots


def table(tmp_path):
    p = load_profile("rws-blackjack")
    t = InProcessTable(TableSpec("t", p, 0, tmp_path), chipset.registry(7, len(seat_spots(p))))
    t.boot()
    return t


def forged_offer(n: int) -> Message:
    # seat-2 speaking for box 3: the dealer refuses it
    return Message(up_topic("t", 3), "offer", "t/seat-2", 1000 + n,
                   {"box": 3, "round": 0, "bets": {"main": "5"}, "note": "x" * 2000})


def evidence(tmp_path) -> list[dict]:
    j = open_readonly(tmp_path / "dealer" / "journal.db")
    try:
        return [r.body for r in j.records() if r.kind == "rejected"]
    finally:
        j.close()


def test_a_rejected_message_is_journalled_with_why_and_the_unit_recovers_over_it(tmp_path):
    t = table(tmp_path)
    t.bus.publish(forged_offer(0))
    t.settle()
    assert t.dealer.rejected == 1
    [record] = evidence(tmp_path)
    assert record["input"] == "msg" and record["sender"] == "t/seat-2"
    assert "only 't/seat-3' speaks for box 3" in record["problem"]
    assert len(record["excerpt"]) == EVIDENCE_BYTES and record["bytes"] > 2000
    assert record["not_journalled_before"] == 0
    before = t.dealer.checkpoint()
    t.close()
    again = table(tmp_path)                     # the evidence step replays as nothing
    assert again.dealer.checkpoint()["state"]["stream_seq"] == before["state"]["stream_seq"] + 1  # boot
    again.close()


def test_a_flood_is_journalled_only_up_to_the_bound_and_counted(tmp_path):
    t = table(tmp_path)
    for n in range(500):
        t.bus.publish(forged_offer(n))
    t.settle()
    assert t.dealer.rejected == 500
    records = evidence(tmp_path)
    assert EVIDENCE_PER_MINUTE <= len(records) <= EVIDENCE_PER_MINUTE + 2   # a few tokens refill
    assert t.dealer.evidence_skipped == 500 - len(records)
    t.close()
