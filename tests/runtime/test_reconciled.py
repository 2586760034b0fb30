"""A unit flagged behind its confirmed mark (restarted from an older copy of its state;
issue #11.5) refuses bets until a supervisor has reconciled its rounds; then the pit's
``reconciled`` command clears the flag. The dealer journals the command; for itself it
clears its own flag, for a seat it tells that seat on the seat's down topic (only the
dealer writes it), and the seat clears its flag as a journalled input, answering through
the dealer. The clearing raises the alarm ``reconciled`` naming the supervisor, is refused
with a reason for a unit that is not behind, is never applied twice, and a replay of the
journal gives the same state."""

from __future__ import annotations

import shutil

from firmware.runtime.bus import Message, down_topic, pit_command_topic, pit_response_topic
from firmware.runtime.journal import open_readonly
from firmware.runtime.unit import BEHIND
from tests.tables import boxes_with_a_bet_on

from .test_behind import driver, older_dealer_copy, restart_dealer


class Pit:
    """What ``betbox pit`` puts on the bus, and the answers it hears."""

    def __init__(self, t) -> None:
        self.t, self.answers, self.seq = t, [], 0
        t.bus.subscribe(pit_response_topic("t"), self.answers.append, "pit")

    def send(self, kind: str, seq: int | None = None, tx: str | None = None, **body) -> dict:
        if seq is None:
            self.seq += 1
            seq = self.seq
        tx = tx or f"tx{seq}x{len(self.answers)}"
        self.t.bus.publish(Message(pit_command_topic("t"), kind, "pit", seq, {"tx": tx, "by": "Ann", **body}))
        self.t.settle()
        mine = [m.body for m in self.answers if m.body["tx"] == tx]
        return mine[-1] if mine else {}


def behind_seat(tmp_path, d):
    """Seat 1 restarted from an older copy of its state: the dealer heard later messages."""
    t = d.table
    d.play_round()
    t.stop_seat(1)
    shutil.copytree(tmp_path / "seat-1", tmp_path / "seat-1.old")
    t.restart_seat(1)
    for _ in range(2):
        d.play_round()
    t.stop_seat(1)
    shutil.rmtree(tmp_path / "seat-1")
    shutil.copytree(tmp_path / "seat-1.old", tmp_path / "seat-1")
    seat = t.restart_seat(1)
    assert seat.behind is not None and "heard" in seat.behind
    return seat



def seat_journal_kinds(path) -> list[tuple[str, str]]:
    j = open_readonly(path)
    try:
        return [(r.kind, r.body.get("kind")) for r in j.records() if r.dir == "in"]
    finally:
        j.close()


def test_a_behind_seat_is_cleared_by_the_pit_and_takes_bets_again(tmp_path):
    d = driver(tmp_path)
    t = d.table
    try:
        seat = behind_seat(tmp_path, d)
        assert 1 not in boxes_with_a_bet_on(d, 1)           # bets refused while behind
        pit = Pit(t)
        answer = pit.send("reconciled", box=1)
        assert answer["ok"] is True, answer
        assert answer["unit"] == "t/seat-1" and "reconciled" in answer["verdict"]
        assert seat.behind is None
        alarm = [a for a in seat.alarms if a["alarm"] == "reconciled"]
        assert len(alarm) == 1 and alarm[0]["by"] == "Ann" and "Ann" in alarm[0]["detail"]
        assert "heard" in alarm[0]["was"]
        # the dealer heard the seat's alarm too, and journalled the command
        assert [a["by"] for a in t.dealer.alarms if a.get("alarm") == "reconciled"] == ["Ann"]
        j = open_readonly(tmp_path / "dealer" / "journal.db")
        try:
            assert [r.body["kind"] for r in j.records() if r.dir == "in" and r.kind == "msg"
                    and r.body["topic"] == pit_command_topic("t")] == ["reconciled"]
        finally:
            j.close()
        assert ("msg", "reconciled") in seat_journal_kinds(tmp_path / "seat-1" / "journal.db")
        seat.after_step()
        assert "behind_confirmed" not in seat.view.conditions
        assert 1 in boxes_with_a_bet_on(d, 1)               # bets taken again
        # the journal replayed gives the same state
        state = seat.checkpoint()["state"]
        again = t.restart_seat(1)
        assert again.behind is None
        assert again.reconciled_seq == seat.reconciled_seq > 0
        replayed = again.checkpoint()["state"]
        assert {k: v for k, v in replayed.items() if k != "seq"} == {k: v for k, v in state.items()
                                                                     if k != "seq"}
        # the same command again (a redelivery: its seq is not newer) is never applied twice
        repeated = pit.send("reconciled", seq=pit.seq, box=1)
        assert repeated["ok"] is False and "not newer" in repeated["error"]
        assert len([a for a in again.alarms if a["alarm"] == "reconciled"]) == 1
        # a new command for a seat that is not behind is refused, with the reason
        refused = pit.send("reconciled", box=1)
        assert refused["ok"] is False and "not behind" in refused["error"], refused
        assert len([a for a in again.alarms if a["alarm"] == "reconciled"]) == 1
    finally:
        t.close()


def test_a_seat_behind_its_outbox_mark_is_cleared_too(tmp_path):
    d = driver(tmp_path)
    t = d.table
    try:
        d.play_round()
        seat = t.seats[2]
        assert seat.step(BEHIND, {"outbox_seq": 7, "confirmed": 12})
        assert 2 not in boxes_with_a_bet_on(d, 2)
        answer = Pit(t).send("reconciled", box=2)
        assert answer["ok"] is True, answer
        assert seat.behind is None
        assert [a["was"] for a in seat.alarms if a["alarm"] == "reconciled"] == [{"outbox_seq": 7, "confirmed": 12}]
        assert 2 in boxes_with_a_bet_on(d, 2)
        assert t.restart_seat(2).behind is None
    finally:
        t.close()


def test_a_seat_takes_the_clear_only_from_its_dealer(tmp_path):
    d = driver(tmp_path)
    t = d.table
    try:
        d.play_round()
        seat = t.seats[1]
        assert seat.step(BEHIND, {"outbox_seq": 7, "confirmed": 12})
        body = {"box": 1, "tx": "forged", "by": "Mallory", "seq": 10 ** 15}
        rejected = seat.rejected
        # another seat's credentials, the pit's, a forged box: refused, never journalled
        for sender in ("t/seat-2", "pit", "other/dealer"):
            t.bus.publish(Message(down_topic("t", 1), "reconciled", sender, 10 ** 9, dict(body)))
        t.bus.publish(Message(down_topic("t", 1), "reconciled", "t/dealer", 10 ** 9, {**body, "box": 2}))
        t.settle()
        assert seat.behind is not None and seat.rejected == rejected + 4
        assert not [a for a in seat.alarms if a["alarm"] == "reconciled"]
        assert ("msg", "reconciled") not in seat_journal_kinds(tmp_path / "seat-1" / "journal.db")
        # nor from a seat's answer: the dealer relays only the answer of the box it asked
        t.bus.publish(Message("betbox/v1/table/t/seat/2/up", "reconcile_answer", "t/seat-2", 10 ** 9,
                              {"box": 2, "round": t.seats[2].round_no, "tx": "forged", "ok": True,
                               "verdict": "reconciled"}))
        answers: list = []
        t.bus.subscribe(pit_response_topic("t"), answers.append, "pit")
        t.settle()
        assert answers == []
        # the same word from its dealer is taken (journalled, the flag cleared, once)
        t.bus.publish(Message(down_topic("t", 1), "reconciled", "t/dealer", 10 ** 9, dict(body)))
        t.settle()
        assert seat.behind is None
        assert [a["by"] for a in seat.alarms if a["alarm"] == "reconciled"] == ["Mallory"]
        assert ("msg", "reconciled") in seat_journal_kinds(tmp_path / "seat-1" / "journal.db")
        t.bus.publish(Message(down_topic("t", 1), "reconciled", "t/dealer", 10 ** 9 + 1, dict(body)))
        t.settle()                      # the same command again (its seq): not applied twice
        assert len([a for a in seat.alarms if a["alarm"] == "reconciled"]) == 1
    finally:
        t.close()


def test_the_pit_refuses_to_clear_a_unit_that_is_not_behind(tmp_path):
    d = driver(tmp_path)
    t = d.table
    try:
        d.play_round()
        pit = Pit(t)
        dealer = pit.send("reconciled", box=None)
        assert dealer["ok"] is False and "t/dealer is not behind" in dealer["error"], dealer
        seat = pit.send("reconciled", box=1)
        assert seat["ok"] is False and "t/seat-1 is not behind" in seat["error"], seat
        absent = pit.send("reconciled", box=5)          # no seat 5 said hello at this table
        assert absent["ok"] is False and "box 5" in absent["error"], absent
        assert not [a for u in t.units for a in u.alarms if a.get("alarm") == "reconciled"]
    finally:
        t.close()


def test_a_behind_dealer_is_cleared_by_the_pit_and_deals_again(tmp_path):
    d = older_dealer_copy(tmp_path)
    t = d.table
    try:
        heard = t.seats[1].last_stream
        dealer = restart_dealer(t, tmp_path / "dealer.old")
        assert dealer.behind is not None and dealer.behind["seat_heard"] == heard
        n = dealer.round_no
        t.console.press("open_bets")
        t.settle()
        assert dealer.round_no == n                       # no round while behind
        pit = Pit(t)
        answer = pit.send("reconciled", box=None)
        assert answer["ok"] is True and answer["unit"] == "t/dealer", answer
        assert dealer.behind is None
        alarm = [a for a in dealer.alarms if a["alarm"] == "reconciled"]
        assert len(alarm) == 1 and alarm[0]["by"] == "Ann" and alarm[0]["was"]["seat_heard"] == heard
        # its stream goes on after what the seats heard: they take its next round
        assert dealer.stream_seq > heard
        rounds_before = len(d.rounds)
        d.play_round()
        assert len(d.rounds) == rounds_before + 1 and dealer.round_no == n + 1
        assert 2 in {b.number for b in d.rounds[-1].boxes}           # (box 1 bets nothing here)
        for seat in t.seats.values():                                 # every seat took the round
            assert seat.round_no == n + 1 and seat.behind is None
            assert seat.own_result == seat.dealer_result and not seat.alarm_counts.get("integrity")
        # replayed from its journal: the same
        state = dealer.checkpoint()["state"]
        again = restart_dealer(t)
        assert again.behind is None
        assert again.checkpoint()["state"]["stream_seq"] >= state["stream_seq"]
        repeated = pit.send("reconciled", seq=pit.seq, box=None)
        assert repeated["ok"] is False and "not newer" in repeated["error"]
        assert len([a for a in again.alarms if a["alarm"] == "reconciled"]) == 1
    finally:
        t.close()


def test_the_dealer_goes_on_after_what_any_seat_heard(tmp_path):
    """Two seats heard different lengths of the lost stream: the first to say hello is one
    seat's word (a pit call, not yet behind); the second flags the dealer, with the mark the
    reconciled dealer goes on after: the most either heard (else that seat would drop its next
    messages as heard and flag it again)."""
    d = driver(tmp_path)
    t = d.table
    try:
        d.play_round()
        shutil.copytree(tmp_path / "dealer", tmp_path / "dealer.old")
        d.play_round()
        t.stop_seat(1)
        d.play_round()                                   # seat 2 hears more than seat 1
        t.stop_seat(2)
        dealer = restart_dealer(t, tmp_path / "dealer.old")
        assert dealer.behind is None                     # no seat has said hello yet
        low = t.restart_seat(1).last_stream
        assert dealer.behind is None and dealer.stream_claims == {1: low}
        seat = t.restart_seat(2)
        assert seat.last_stream > low
        assert dealer.behind == {"stream_seq": dealer.stream_seq, "seat_heard": seat.last_stream}
        assert len([a for a in dealer.alarms if a["alarm"] == "behind_confirmed"]) == 1
        assert Pit(t).send("reconciled", box=None)["ok"] is True
        assert dealer.behind is None and dealer.stream_seq > seat.last_stream - 1
        d.play_round()
        assert dealer.behind is None
        assert {s.round_no for s in t.seats.values()} == {dealer.round_no}
    finally:
        t.close()


def test_one_seats_word_is_reconciled_too(tmp_path):
    """One seat said it heard more of the stream than the dealer holds (a pit call; the table
    plays on, that seat holds those numbers as heard): a dealer restored beside a lone seat,
    or a forged hello. The pit's reconciled command for the dealer moves its stream past what
    the seat said, and the seat takes part again."""
    from firmware.runtime.bus import up_topic

    d = driver(tmp_path)
    t = d.table
    try:
        d.play_round()
        dealer, seat = t.dealer, t.seats[1]
        claim = dealer.stream_seq + 40
        m = Message(up_topic("t", 1), "hello", seat.unit_id, seat.seq + 1,
                    {"box": 1, "round": dealer.round_no, "phase": "over", "bets": None, "last_stream_seq": claim})
        assert dealer.step("msg", m.to_dict())
        seat.seq += 1                   # (as if the seat had said it: its next message follows it)
        assert dealer.behind is None and dealer.stream_claims == {1: claim}
        answer = Pit(t).send("reconciled", box=None)
        assert answer["ok"] is True, answer
        assert dealer.stream_claims == {} and dealer.stream_seq > claim
        done = [a for a in dealer.alarms if a["alarm"] == "reconciled"]
        assert done[-1]["by"] == "Ann" and done[-1]["was"] == {"stream_seq": claim - 40, "seat_heard": claim}
        assert 1 in boxes_with_a_bet_on(d, 1)
        assert Pit(t).send("reconciled", box=None)["ok"] is False        # nothing left to reconcile
    finally:
        t.close()
