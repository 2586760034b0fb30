"""Issue #6: malformed, oversized and forged messages to the units are rejected, logged and
harmless. A seat takes the stream and its down topic only from its table's dealer; the
dealer takes a box's up messages only from the seat that owns that box."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from firmware.engine.profile import load_profile
from firmware.runtime.bus import Message, down_topic, stream_topic, up_topic
from firmware.runtime.journal import JOURNAL_NAME, open_readonly
from firmware.sim import chipset
from firmware.sim.driver import TableDriver
from firmware.sim.table import InProcessTable, TableSpec, seat_spots

PROFILE = "rws-blackjack-switch"


def driver(state_dir: Path) -> TableDriver:
    spec = TableSpec("t", load_profile(PROFILE), seed=5, state_dir=state_dir)
    d = TableDriver(InProcessTable(spec, chipset.registry(spec.boxes, len(seat_spots(spec.profile)))), spec.seed)
    d.boot()
    return d


def settlements(state_dir: Path, unit: str, kind: str) -> dict[int, object]:
    j = open_readonly(state_dir / unit / JOURNAL_NAME)
    try:
        return {r.body["body"]["round"]: r.body["body"]["settlement"]
                for r in j.history() if r.dir == "out" and r.kind == kind}
    finally:
        j.close()


def stream(state_dir: Path) -> list[tuple[str, str]]:
    j = open_readonly(state_dir / "dealer" / JOURNAL_NAME)
    try:
        return [(r.kind, json.dumps(r.body["body"], sort_keys=True)) for r in j.history()
                if r.dir == "out" and r.body["topic"].endswith("/stream")]
    finally:
        j.close()


def forged(d: TableDriver) -> list[Message]:
    dealer = d.table.dealer
    r, nxt = dealer.round_no, dealer.stream_seq + 1
    big = "x" * 300_000
    return [
        # a seat writing the table stream: a void, a card
        Message(stream_topic("t"), "event", "t/seat-2", 900, {"round": r, "stream_seq": nxt,
                                                               "event": {"type": "void", "reason": "x"}}),
        Message(stream_topic("t"), "round_open", "t/seat-2", 901, {"round": r + 1, "stream_seq": nxt,
                                                                    "profile": PROFILE}),
        # someone else talking to seat 4 as the dealer
        Message(down_topic("t", 4), "refused", "t/seat-5", 902, {"box": 4, "round": r, "reason": "go away",
                                                                  "bets": {"main": 5}}),
        # seat-2 speaking for box 3; seat-3 naming box 2 in its body
        Message(up_topic("t", 3), "hello", "t/seat-2", 903, {"box": 3, "round": r, "last_stream_seq": 0,
                                                              "phase": "idle", "bets": None, "pending": {}}),
        Message(up_topic("t", 3), "alarm", "t/seat-3", 904, {"box": 2, "round": r, "alarm": "x", "detail": "y"}),
        # the right senders, garbage bodies
        Message(stream_topic("t"), "event", "t/dealer", 905, {"round": r, "stream_seq": nxt,
                                                               "event": {"type": "card", "card": "ZZ"}}),
        Message(stream_topic("t"), "round_open", "t/dealer", 906, {"round": r + 1, "stream_seq": nxt,
                                                                    "profile": "no-such-game", "decks": 6}),
        Message(stream_topic("t"), "event", "t/dealer", 907, {"round": r, "stream_seq": "next"}),
        Message(down_topic("t", 4), "catchup", "t/dealer", 908, {"box": 4, "head": 3, "snapshot": True,
                                                                  "messages": [{"kind": "event", "body": {}}]}),
        Message(up_topic("t", 1), "offer", "t/seat-1", 909, {"box": 1, "round": r, "bets": {"main": "lots"}}),
        Message(up_topic("t", 1), "request", "t/seat-1", 910, {"box": 1, "round": r, "action": "fly"}),
        Message(up_topic("t", 1), "lock", "t/seat-1", 911, {"box": 1, "round": r, "bets": {"main": -50}}),
        Message(up_topic("t", 1), "gossip", "t/seat-1", 912, {"box": 1, "round": r}),
        Message(up_topic("t", 1), "alarm", "t/seat-1", 913, {"box": 1, "round": r, "alarm": "x", "detail": big}),
    ]


def test_forged_and_malformed_messages_are_rejected_logged_and_harmless(tmp_path, caplog):
    twin = driver(tmp_path / "twin")
    d = driver(tmp_path / "t")
    for _ in range(2):
        twin.play_round()
        d.play_round()
    before = {u.unit_id: u.checkpoint() for u in d.table.units}
    steps = {u.unit_id: u.journal.last_step for u in d.table.units}
    caplog.set_level(logging.WARNING, logger="firmware.runtime.unit")
    for message in forged(d):
        d.table.bus.publish(message)
    d.table.settle()
    for unit in d.table.units:          # nothing changed; only the evidence was journalled
        assert unit.checkpoint() == before[unit.unit_id], unit.unit_id
        evidence = [s for s in unit.journal.steps() if s[0].step > steps[unit.unit_id]]
        assert len(evidence) == unit.rejected, unit.unit_id
        assert all(len(s) == 1 and s[0].kind == "rejected" for s in evidence), unit.unit_id
    seats = d.table.seats
    # seats 1, 3-7 heard the two forged stream messages, and two garbled ones from the dealer
    assert seats[1].rejected == 5 and seats[4].rejected == 7 and seats[2].rejected == 3
    assert d.table.dealer.rejected == 7
    problems = [r["problem"] for r in d.table.dealer.rejections]
    assert "only 't/seat-3' speaks for box 3" in problems[0]
    assert "names box 2 in its body, not 3" in problems[1]
    assert any("larger than" in p for p in problems)
    assert any("only 't/dealer' writes the table stream" in r["problem"] for r in seats[1].rejections)
    assert any("cannot read it" in r["problem"] for r in seats[1].rejections)
    assert "rejected" in caplog.text and "t/seat-2" in caplog.text
    for _ in range(3):                                   # the table plays on as if untouched
        twin.play_round()
        d.play_round()
    twin.table.close()
    d.table.close()
    assert stream(tmp_path / "t") == stream(tmp_path / "twin")
    assert settlements(tmp_path / "t", "dealer", "round_result") == settlements(tmp_path / "twin", "dealer",
                                                                                "round_result")
    for box in range(1, 8):
        assert (settlements(tmp_path / "t", f"seat-{box}", "result")
                == settlements(tmp_path / "twin", f"seat-{box}", "result")), box


def test_a_garbled_stream_message_mid_round_is_refused_and_the_seat_catches_up(tmp_path):
    twin = driver(tmp_path / "twin")
    d = driver(tmp_path / "t")
    garbled = []

    def tamper(subscriber: str, m: Message) -> Message | None:
        if subscriber == "t/seat-3" and m.kind == "event" and not garbled and m.body["round"] == 2:
            garbled.append(m.body["stream_seq"])
            return Message(m.topic, m.kind, m.sender, m.seq, {**m.body, "event": {"type": "card"}})
        return m

    d.table.bus.tamper = tamper
    for _ in range(3):
        twin.play_round()
        d.play_round()
    twin.table.close()
    d.table.close()
    assert garbled and d.table.seats[3].rejected == 1
    assert not [a for a in d.table.seats[3].alarms if a["alarm"] == "integrity"]
    assert (settlements(tmp_path / "t", "seat-3", "result")
            == settlements(tmp_path / "twin", "seat-3", "result"))


def test_units_say_they_take_the_controller_status():
    from firmware.runtime.dealer import DealerUnit
    from firmware.runtime.seat import SeatUnit
    from firmware.runtime.unit import Unit
    assert SeatUnit.accepts_controller is True and DealerUnit.accepts_controller is True
    assert Unit.accepts_controller is False
