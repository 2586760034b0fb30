"""A seat's credentials in a hostile hand: well-formed reports on its own report topic (the
ACL lets it), each under a new seq, that repeat or contradict what it reported before, or
claim what the dealer's record of the round does not hold. The controller takes them as the
design says (a repeat books nothing, a contradiction or an unrecorded claim is an integrity
alarm, every one counted and recorded); what it logs of them stays bounded, per box, so the
flood neither fills the log nor silences another box's alarms."""

from __future__ import annotations

import json
import logging

from firmware.jackpot.controller import report
from firmware.link import topics
from tests.link.helpers import controller

SEAT = "table-1/seat-1"


def seat_report(seq: int, kind: str, body: dict, rnd: int, unit: str = SEAT, box: int = 1) -> tuple[str, bytes]:
    return topics.report_topic(unit), json.dumps({
        "schema": 1, "id": f"{unit.replace('/', '.')}.{seq:08d}", "unit": unit, "table": "table-1", "box": box,
        "seq": seq, "kind": kind, "round": rnd, "body": body}).encode()


def dealer_settlement(seq: int, rnd: int) -> tuple[str, bytes]:
    unit = "table-1/dealer"
    return topics.report_topic(unit), json.dumps({
        "schema": 1, "id": f"dealer.{seq:08d}", "unit": unit, "table": "table-1", "seq": seq,
        "kind": "round_settlement", "round": rnd,
        "body": {"void": False, "boxes": [{"box": 1, "net": "0", "envy": [], "side_bets": []}]}}).encode()


def test_a_seats_flood_of_repeated_and_contradicting_reports_is_counted_in_full_and_logged_sparsely(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="betbox.jackpot")
    ctl = controller(tmp_path / "jackpot.db")
    n = 1500
    try:
        seq = 0
        for _ in range(n // 500):
            batch = []
            for _ in range(500):
                seq += 1
                batch.append(seat_report(seq, "progressive_wager", {"amount": "5"}, 5))         # a repeat
            ctl.ingest_batch(batch)
        for _ in range(n // 500):
            batch = []
            for _ in range(500):
                seq += 1                                                                      # a contradiction
                batch.append(seat_report(seq, "progressive_wager", {"amount": f"{seq}"}, 5))
            ctl.ingest_batch(batch)
        ctl.ingest(*dealer_settlement(1, 6))
        batch = []
        for _ in range(n):
            seq += 1                                      # side bets the dealer's record of round 6 lacks
            batch.append(seat_report(seq, "side_bet", {"bet": f"bet_{seq}", "stake": "1", "net": "-1"}, 6))
        ctl.ingest_batch(batch)
        assert ctl.counts["accepted"] == 3 * n + 1 and ctl.counts["repeated"] == n - 1
        data = report(ctl.db)
        assert data["integrity"]["by_reason"] == {"conflicting_report": n, "not_in_dealer_record": n}
        lines = [r for r in caplog.records if SEAT in r.getMessage() or "box 1 " in r.getMessage()]
        repeats = [r.getMessage() for r in lines if "repeats report" in r.getMessage()]
        alarms = [r.getMessage() for r in lines if r.getMessage().startswith("integrity:")]
        assert len(repeats) == 10 + 1 and repeats[-1].endswith("(1000 so far)"), len(repeats)
        assert len(alarms) == 10 + 3 and alarms[-1].endswith("(3000 so far)"), len(alarms)
        # another box's alarm after the flood is logged: the bound is per box
        caplog.clear()
        ctl.ingest_batch([seat_report(1, "progressive_wager", {"amount": "5"}, 5, "table-1/seat-2", 2),
                          seat_report(2, "progressive_wager", {"amount": "9"}, 5, "table-1/seat-2", 2)])
        assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
            "integrity: conflicting_report: table-1/seat-2 reported progressive_wager for round 5 box 2 twice, "
            "differently: report 4502 {'amount': '5'}, report 4503 {'amount': '9'}; the first stands "
            "(seat report 4502, dealer report none) (1 so far)"]
    finally:
        ctl.close()
