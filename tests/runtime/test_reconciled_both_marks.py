"""A dealer restored from an older copy is behind twice over: its seats heard more of its
stream, and the jackpot controller confirmed more of its reports (its outbox's mark, which
the link posts as soon as the controller's retained mark comes). Whichever comes first,
the reconciled dealer's stream must go on after what its seats heard, or they drop its
next rounds as heard already."""

from __future__ import annotations

from firmware.runtime.unit import BEHIND

from .test_behind import older_dealer_copy, restart_dealer
from .test_reconciled import Pit


def _restored(tmp_path):
    d = older_dealer_copy(tmp_path)
    return d, d.table


def _deals_again(d, t, dealer, heard: int) -> None:
    assert Pit(t).send("reconciled", box=None)["ok"] is True
    assert dealer.behind is None
    assert dealer.stream_seq > heard
    n = dealer.round_no
    d.play_round()
    assert dealer.behind is None and dealer.round_no == n + 1
    assert {s.round_no for s in t.seats.values()} == {n + 1}


def test_the_outbox_mark_after_the_seats_hello_keeps_what_they_heard(tmp_path):
    d, t = _restored(tmp_path)
    try:
        heard = t.seats[1].last_stream
        dealer = restart_dealer(t, tmp_path / "dealer.old")
        assert dealer.behind is not None and dealer.behind["seat_heard"] == heard
        dealer.post((BEHIND, {"outbox_seq": 3, "confirmed": 9}))     # the controller's mark
        t.settle()
        _deals_again(d, t, dealer, heard)
    finally:
        t.close()


def test_a_seats_hello_after_the_outbox_mark_is_kept_too(tmp_path):
    d, t = _restored(tmp_path)
    try:
        heard = t.seats[1].last_stream
        for box in list(t.seats):
            t.stop_seat(box)
        dealer = restart_dealer(t, tmp_path / "dealer.old")
        assert dealer.behind is None
        dealer.post((BEHIND, {"outbox_seq": 3, "confirmed": 9}))     # the controller's mark first
        t.settle()
        assert dealer.behind == {"outbox_seq": 3, "confirmed": 9}
        for box in (1, 2):
            t.restart_seat(box)                                      # then the seats' hellos
        _deals_again(d, t, dealer, heard)
    finally:
        t.close()
