"""One seat's credentials in a hostile hand cannot fill the dealer's journal (review finding,
2026-11-25). A seat's ``hello`` was always taken, and answered with a catch-up of the round
in play and every round over since the round the hello names (tens of KB), both journalled:
hellos from one seat, each with the next seq, grew the dealer's journal by a catch-up each
until its state partition filled and the table stopped. The other messages a seat sends were
journalled one for one, each up to the 256 KiB any input may be.

Now: a hello whose catch-up is already journalled (the box's last hello, the same body,
nothing heard from the seat since, the table as it was) is answered by re-sending that
catch-up, not by a step; a box gets at most ``CATCHUPS_PER_ROUND`` new catch-ups a round
beyond one per stream message of the round, and its other messages (at most ``MAX_UP_BYTES``
each) are journalled up to ``SEAT_BYTES_PER_ROUND`` a round, with the dealer's answers to them. A seat whose link
flaps still gets its catch-up every time, and the dealer replays its journal to the same state.

The ACL does not matter here (the broker lets a seat write its own up topic, and these are
that seat's own messages): the in-process table, senders as the seat's credentials name them.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from firmware.engine.profile import load_profile
from firmware.runtime.bus import InProcessBus, Message, down_topic, up_topic
from firmware.runtime.dealer import (
    CATCHUPS_PER_ROUND,
    MAX_UP_BYTES,
    RESEND_BURST,
    RESENDS_PER_SECOND,
    SEAT_BYTES_PER_ROUND,
    DealerUnit,
)
from firmware.runtime.journal import JOURNAL_NAME, Journal
from firmware.sim import chipset
from firmware.sim.driver import TableDriver
from firmware.sim.table import InProcessTable, TableSpec, seat_spots

PROFILE = "rws-blackjack-switch"
BOX = 2                         # the seat whose credentials the adversary holds


def driver(state_dir: Path) -> TableDriver:
    spec = TableSpec("t", load_profile(PROFILE), seed=5, state_dir=state_dir, boxes=3)
    d = TableDriver(InProcessTable(spec, chipset.registry(spec.boxes, len(seat_spots(spec.profile)))), spec.seed)
    d.boot()
    return d


def journal_bytes(dealer: DealerUnit) -> int:
    """What the dealer's journal holds: every record's body as JSON."""
    return sum(len(json.dumps(r.body, separators=(",", ":"))) for r in dealer.journal.records())


class Hostile:
    """Seat BOX's credentials: messages on its own up topic, each with the next seq."""

    def __init__(self, d: TableDriver, seq: int) -> None:
        self.bus = d.table.bus
        self.seq = seq

    def send(self, kind: str, body: dict[str, Any]) -> None:
        self.seq += 1
        self.bus.publish(Message(up_topic("t", BOX), kind, f"t/seat-{BOX}", self.seq, {"box": BOX, **body}))


def hostile_table(tmp_path: Path, rounds: int = 6) -> tuple[TableDriver, Hostile, list[Message]]:
    """A table that has played ``rounds`` rounds, seat BOX powered off (its credentials in
    the adversary's hand) and the catch-ups the dealer sends to that box collected."""
    d = driver(tmp_path / "t")
    for _ in range(rounds):
        d.play_round()
    seat = d.table.seats[BOX]
    hostile = Hostile(d, seat.seq)
    d.table.stop_seat(BOX)
    answers: list[Message] = []
    d.table.bus.subscribe(down_topic("t", BOX), answers.append, "spy")
    return d, hostile, answers


def hello(round_no: int = 1, last: int = 0) -> dict[str, Any]:
    """A hello asking for the most: its round long over, nothing of the stream held."""
    return {"round": round_no, "last_stream_seq": last, "phase": "play", "bets": None, "pending": {}}


def test_a_flood_of_hellos_from_one_seat_is_answered_without_growing_the_dealers_journal(tmp_path):
    d, hostile, answers = hostile_table(tmp_path)
    dealer = d.table.dealer
    hostile.send("hello", hello())
    d.table.settle()
    first = answers[-1]
    size = len(first.to_json())
    assert first.kind == "catchup" and first.body["rounds"], first.body   # the rounds box 2 played since
    before, flood, again = journal_bytes(dealer), 300, dealer.answered_again
    dealer.clock = itertools.count(0, 1 / RESENDS_PER_SECOND).__next__   # as fast as re-sends go
    for _ in range(flood):
        hostile.send("hello", hello())
    d.table.settle()
    grown = journal_bytes(dealer) - before
    # before the change: ~size bytes a hello (each journalled with its catch-up)
    assert grown < flood * 64, f"{grown / flood:.0f} bytes journalled a hello; a catch-up is {size} bytes"
    assert len(answers) == flood + 1 and all(a.to_json() == first.to_json() for a in answers), \
        "every hello answered, by the catch-up already journalled"
    assert dealer.answered_again - again == flood
    dealer.clock = lambda: 1e9                      # later, and faster: RESEND_BURST at once, then refused
    for _ in range(20):
        hostile.send("hello", hello())
    d.table.settle()
    assert len(answers) == flood + 1 + RESEND_BURST
    assert dealer.rejections[-1]["problem"].startswith(f"hello: box {BOX}'s catch-up (seq {first.seq}) is re-sent")
    assert journal_bytes(dealer) - before < flood * 64 + 20 * 1024      # and its evidence
    heard = dealer.seat_seq[f"t/seat-{BOX}"]
    hostile.seq = 0                                 # a seat replaced (or restored) starts again: a step
    hostile.send("hello", hello())
    d.table.settle()
    assert answers[-1].seq > first.seq and answers[-1].body["heard"] == heard
    d.play_round()                                  # the table plays on
    d.table.close()


def test_hellos_asking_for_different_catchups_are_bounded_per_round(tmp_path):
    d, hostile, answers = hostile_table(tmp_path)
    dealer = d.table.dealer
    before, flood = journal_bytes(dealer), 300
    for n in range(flood):                          # each asks another catch-up than the last
        hostile.send("hello", hello(round_no=1 + n % 2, last=n % 3))
    d.table.settle()
    grown = journal_bytes(dealer) - before
    allowed = CATCHUPS_PER_ROUND + len(dealer.round_stream)
    catchups = [a for a in answers if a.kind == "catchup"]
    biggest = max(len(a.to_json()) for a in catchups)
    assert len({a.seq for a in catchups}) == allowed, "new catch-ups journalled: the box's budget of the round"
    assert grown < allowed * (biggest + 1024) + 30 * 1024, f"{grown} bytes for {flood} hellos"
    assert any(r["problem"].startswith(f"hello: box {BOX} has had {allowed} new catch-ups") for r in dealer.rejections)
    d.play_round()                                  # a new round: a new budget, and the table plays on
    hostile.send("hello", hello(round_no=dealer.round_no))
    d.table.settle()
    assert answers[-1].kind == "catchup" and answers[-1].seq > catchups[-1].seq
    d.table.close()


def test_a_seats_other_messages_are_bounded_in_size_and_per_round(tmp_path):
    d, hostile, _ = hostile_table(tmp_path)
    dealer = d.table.dealer
    hostile.send("result", {"round": dealer.round_no, "settlement": "x" * MAX_UP_BYTES})
    d.table.settle()
    assert f"larger than the {MAX_UP_BYTES} a seat's message may be" in dealer.rejections[-1]["problem"]
    before, flood = journal_bytes(dealer), 600
    for n in range(flood):                          # offers out of a round, results and alarms
        kind = ("offer", "result", "alarm")[n % 3]
        body = {"round": dealer.round_no, "bets": {"main": 5}} if kind == "offer" else \
            {"round": dealer.round_no, "settlement": "x" * 4000} if kind == "result" else \
            {"round": dealer.round_no, "alarm": "reader_down", "detail": "y" * 2000, "unit": f"t/seat-{BOX}"}
        hostile.send(kind, body)
    d.table.settle()
    grown = journal_bytes(dealer) - before
    # before the change: every one journalled (~3.4 MB), a result with the integrity alarm it raises
    assert grown < SEAT_BYTES_PER_ROUND + 3 * MAX_UP_BYTES + 40 * 1024, f"{grown} bytes for {flood} messages"
    problem = dealer.rejections[-1]["problem"]
    assert problem.startswith(f"alarm: box {BOX} has had ") and "bytes journalled in round" in problem, problem
    d.play_round()                                  # a new round, a new budget
    hostile.send("result", {"round": dealer.round_no, "settlement": {}})
    rejected = dealer.rejected
    d.table.settle()
    assert dealer.rejected == rejected
    d.table.close()


def test_a_seat_whose_link_flaps_gets_its_catchup_every_time(tmp_path):
    """The catch-up lost with the link, again and again, while the round goes on: every
    hello is answered with the catch-up the seat needs now (a new one when the table moved,
    the same one re-sent when it did not); the seat ends where the dealer is."""
    d = driver(tmp_path / "t")
    t, dealer = d.table, d.table.dealer
    d.play_round()
    seat = t.seats[1]
    lost = {"on": True}
    answers: list[Message] = []

    def link(subscriber: str, m: Message):
        if subscriber == "t/seat-1" and m.kind == "catchup":
            answers.append(m)
            return None if lost["on"] else m
        if subscriber == "t/seat-1" and "stream_seq" in m.body and lost["on"]:
            return None
        return m
    t.bus.tamper = link
    dealer.clock = itertools.count(0, 1.0).__next__     # a link reconnects at most once a second
    seat.post(("device", {"device": "broker", "kind": "broker", "state": "down"}))
    seat.step("boot", {"box": 1})                   # a restart: hello, its catch-up lost
    t.settle()
    t.console.press("open_bets")
    t.settle()
    for flap in range(40):                          # the link flaps; now and then the table moves
        if flap % 10 == 9:
            t.console.press("no_more_bets")          # bets closing; closed without seat 1; refused
        for state in ("down", "up"):
            seat.post(("device", {"device": "broker", "kind": "broker", "state": state}))
            t.settle()
    assert seat.awaiting_catchup and len(answers) == 41          # the boot's hello, one a flap
    assert len({a.seq for a in answers}) <= 6, "a new catch-up only when the table moved"
    lost["on"] = False
    for state in ("down", "up"):
        seat.post(("device", {"device": "broker", "kind": "broker", "state": state}))
        t.settle()
    assert not seat.awaiting_catchup
    assert (seat.last_stream, seat.round_no) == (dealer.stream_seq, dealer.round_no)
    assert dealer.rejected == 0
    t.close()


def test_the_dealer_replays_a_flooded_journal_to_the_same_state(tmp_path):
    d, hostile, _ = hostile_table(tmp_path)
    dealer = d.table.dealer
    for n in range(60):
        hostile.send("hello", hello(round_no=1 + n % 2, last=n % 3))
        hostile.send("offer", {"round": dealer.round_no, "bets": {"main": 5}})
    for _ in range(60):
        hostile.send("hello", hello())
    d.table.settle()
    d.play_round()
    state = dealer.checkpoint()["state"]
    d.table.close()
    journal = Journal(tmp_path / "t" / "dealer" / JOURNAL_NAME, "t/dealer", "dealer")
    again = DealerUnit("t/dealer", "t", InProcessBus(), journal, load_profile(PROFILE))
    again.recover()                                 # raises ReplayDiverged if a step gives other messages
    assert again.checkpoint()["state"] == state
    journal.close()
