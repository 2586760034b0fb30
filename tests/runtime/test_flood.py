"""#12 finding 9: a flood of forged offers at the dealer is refused, counted in full and
logged sparsely (the first ten, then every thousandth), so it cannot fill the journal of
the system log; the table plays on."""

from __future__ import annotations

import logging

from firmware.runtime.bus import Message, up_topic

from .test_forged import driver


def test_a_flood_of_forged_offers_is_counted_in_full_and_logged_sparsely(tmp_path, caplog):
    d = driver(tmp_path / "t")
    d.play_round()
    dealer = d.table.dealer
    caplog.set_level(logging.WARNING)
    flood = 2500
    for n in range(flood):        # seat-2 offering for box 3, over and over
        d.table.bus.publish(Message(up_topic("t", 3), "offer", "t/seat-2", 1000 + n,
                                    {"box": 3, "round": dealer.round_no, "bets": {"main": 5}}))
    d.table.settle()
    assert dealer.rejected == flood
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("t/dealer: rejected")]
    assert len(lines) == 10 + 2, len(lines)
    assert lines[-1].endswith("(2000 so far)") and "only 't/seat-3' speaks for box 3" in lines[-1]
    d.play_round()                # and the table plays on
    assert dealer.round_no == 2
    d.table.close()
