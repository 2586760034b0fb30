"""A controller's mark that goes back twice (a broker's older retained mark, then the
controller's own, older still: restored from an older copy) must name every report this
unit no longer keeps, not only those the second mark uncovered."""

from __future__ import annotations

from firmware.link.outbox import Outbox
from firmware.runtime.unit import lost_from_json

UNIT = "table-1/seat-1"


def test_a_mark_that_goes_back_twice_names_every_report_no_longer_kept(tmp_path):
    outbox = Outbox(tmp_path / "outbox.db", UNIT, keep_confirmed=4)
    try:
        for n in range(1, 11):
            outbox.put("t", "progressive_wager", {"amount": "5"}, key=f"{n}/w")
        outbox.confirm_through(10)                           # kept: 7-10
        first = outbox.reopen_after(5)                       # 7-10 go again; 6 is no longer kept
        assert first is not None and first.lost == (6, 6)
        second = outbox.reopen_after(2)                      # and 3-5 were never kept here
        assert second is not None and second.lost == (3, 5)
        lost = outbox.went_back
        assert lost is not None and (lost["first"], lost["last"]) == (3, 6), lost
        assert lost["controller"] == 2 and lost["confirmed"] == 10
        lost_from_json(lost)                                 # the alarm's input takes it
        outbox.confirm_through(4)                            # a mark that still leaves 5-6 out
        assert outbox.went_back is not None and outbox.went_back["last"] == 6
        assert outbox.reopen_after(3) is not None            # down again, above the first lost seq
        lost = outbox.went_back
        assert lost is not None and (lost["controller"], lost["first"], lost["last"]) == (3, 4, 6), lost
        lost_from_json(lost)
    finally:
        outbox.close()
