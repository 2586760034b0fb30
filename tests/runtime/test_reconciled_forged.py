"""One seat's credentials must not choose where a reconciled dealer's stream goes on: a
forged hello claiming it heard (nearly) every stream seq there can be would push the
dealer's stream past what any seat accepts, and the table would never deal again."""

from __future__ import annotations

from firmware.runtime.bus import Message, up_topic
from firmware.runtime.wire import MAX_COUNT

from .test_behind import older_dealer_copy, restart_dealer
from .test_reconciled import Pit


def test_a_forged_hello_does_not_push_the_reconciled_dealers_stream_out_of_range(tmp_path):
    d = older_dealer_copy(tmp_path)
    t = d.table
    try:
        heard = t.seats[2].last_stream
        dealer = restart_dealer(t, tmp_path / "dealer.old")
        assert dealer.behind is not None and dealer.behind["seat_heard"] == heard
        # seat 1's credentials: a hello saying it heard the last stream seq there can be
        seat1 = t.seats[1]
        t.bus.publish(Message(up_topic("t", 1), "hello", "t/seat-1", 10 ** 9,
                              {"box": 1, "round": seat1.round_no, "last_stream_seq": MAX_COUNT - 1,
                               "phase": str(seat1.phase), "bets": None, "pending": {}}))
        t.settle()
        assert dealer.behind["seat_heard"] == heard          # refused: the mark is the seats' own
        assert Pit(t).send("reconciled", box=None)["ok"] is True
        assert dealer.behind is None
        n = dealer.round_no
        d.play_round()
        d.play_round()
        assert dealer.round_no == n + 2
        assert t.seats[2].round_no == n + 2           # the honest seat takes the dealer's rounds
        assert dealer.stream_seq < MAX_COUNT
    finally:
        t.close()
