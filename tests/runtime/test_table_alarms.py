"""The table's alarms (the dealer's, on the table's alarm topic) are seat inputs: taken only
from ``<table>/dealer`` with a well-formed body, journalled and replayed, and the faults in
force are in every seat's view: a shoe jam until it is cleared, a shoe door until it is
closed, any other alarm for the round it names."""

from __future__ import annotations

import logging
from pathlib import Path

from firmware.engine.profile import load_profile
from firmware.runtime.bus import Message, alarm_topic
from firmware.runtime.unit import CHECKPOINT_FORMAT
from firmware.sim import chipset
from firmware.sim.driver import TableDriver
from firmware.sim.table import InProcessTable, TableSpec, seat_spots

PROFILE = "rws-blackjack-switch"


def driver(state_dir: Path, boxes: int = 7) -> TableDriver:
    spec = TableSpec("t", load_profile(PROFILE), seed=5, state_dir=state_dir, boxes=boxes)
    d = TableDriver(InProcessTable(spec, chipset.registry(spec.boxes, len(seat_spots(spec.profile)))), spec.seed)
    d.boot()
    return d


def codes(seat) -> list[str]:
    return [a.code for a in seat.view.table_alarms]


def test_a_shoe_jam_shows_on_every_seat_until_cleared(tmp_path):
    d = driver(tmp_path)
    t = d.table
    try:
        d.play_round()
        t.shoe.jam()
        t.settle()
        for box, seat in t.seats.items():
            jam = [a for a in seat.view.table_alarms if a.code == "shoe_jam"]
            assert jam and jam[0].lasting, box
            assert "detail" not in dict(jam[0].params)
        n = t.dealer.round_no
        t.console.press("open_bets")                     # a new round: the jam is still in force
        t.settle()
        assert all(s.view.round == n + 1 and codes(s) == ["shoe_jam"] for s in t.seats.values())
        t.shoe.open_door()
        t.settle()
        assert codes(t.seats[3]) == ["shoe_door_opened", "shoe_jam"]
        t.shoe.clear_jam()
        t.settle()
        assert all(codes(s) == ["shoe_door_opened"] for s in t.seats.values())
        d.play_round()                                   # the door stays open for the next round too
        assert all(codes(s) == ["shoe_door_opened"] for s in t.seats.values())
        t.shoe.close_door()
        t.settle()
        assert all(codes(s) == [] for s in t.seats.values())
        # journalled as inputs, not rejected
        assert all(s.rejected == 0 for s in t.seats.values())
        kinds = [r.body["topic"] for r in t.seats[1].journal.records() if r.dir == "in" and r.kind == "msg"]
        assert kinds.count(alarm_topic("t")) == 4
    finally:
        t.close()


def test_a_round_alarm_shows_for_its_round_only(tmp_path):
    d = driver(tmp_path, boxes=2)
    t = d.table
    try:
        d.play_round()
        n = t.dealer.round_no
        t.shoe.misread()                                 # outside a round: an alarm of this round
        t.settle()
        assert codes(t.seats[1]) == ["misread"] and codes(t.seats[2]) == ["misread"]
        assert dict(t.seats[1].view.table_alarms[0].params).get("unit") is None
        assert t.seats[1].table_alarms[-1]["round"] == n
        d.play_round()
        assert codes(t.seats[1]) == []                  # the next round's view has none
    finally:
        t.close()


def test_the_faults_survive_a_seat_restart_from_its_journal(tmp_path):
    d = driver(tmp_path, boxes=3)
    t = d.table
    try:
        d.play_round()
        t.shoe.jam()
        t.shoe.misread()
        t.settle()
        before = t.seats[2].view.table_alarms
        assert [a.code for a in before] == ["shoe_jam", "misread"]
        seat = t.restart_seat(2)
        assert seat.replayed_steps > 0
        assert seat.view.table_alarms == before
        t.shoe.clear_jam()
        t.settle()
        assert codes(seat) == ["misread"]
    finally:
        t.close()


def test_the_faults_are_in_the_checkpoint_and_a_format_1_checkpoint_still_reads(tmp_path):
    d = driver(tmp_path, boxes=2)
    t = d.table
    try:
        d.play_round()
        t.shoe.open_door()
        t.settle()
        seat = t.seats[1]
        data = seat.checkpoint()
        assert data["format"] == CHECKPOINT_FORMAT == 6
        assert set(data["state"]["table_faults"]) == {"shoe_door_opened"}
        twin = t.seats[2]
        twin_data = twin.checkpoint()
        seat.table_faults = {}
        seat.restore(data)
        assert set(seat.table_faults) == {"shoe_door_opened"}
        # a checkpoint written before the seat kept the table's alarms
        old = {**twin_data, "format": 1,
               "state": {k: v for k, v in twin_data["state"].items()
                         if k not in ("table_faults", "table_alarms", "table_alarm_seq")}}
        twin.restore(old)
        assert twin.table_faults == {} and len(twin.table_alarms) == 0 and twin.table_alarm_seq == 0
        # the same keys missing from a format-2 checkpoint are an error
        try:
            twin.restore({**old, "format": 2})
        except Exception as exc:                          # noqa: BLE001
            assert "missing" in str(exc) and "table_faults" in str(exc)
        else:
            raise AssertionError("a format-2 checkpoint without the table faults was read")
        # a forged fault in a checkpoint is refused
        bad = {**data, "state": {**data["state"], "table_faults": {"shoe_door_opened": {
            **data["state"]["table_faults"]["shoe_door_opened"], "unit": "t/seat-2"}}}}
        try:
            seat.restore(bad)
        except Exception as exc:                          # noqa: BLE001
            assert "table_faults" in str(exc)
        else:
            raise AssertionError("a table fault not raised by the dealer was read")
    finally:
        t.close()


def test_forged_and_malformed_table_alarms_are_rejected_logged_and_harmless(tmp_path, caplog):
    d = driver(tmp_path, boxes=3)
    t = d.table
    try:
        d.play_round()
        r = t.dealer.round_no
        steps = {box: s.journal.last_step for box, s in t.seats.items()}
        caplog.set_level(logging.WARNING, logger="firmware.runtime.unit")
        topic = alarm_topic("t")
        jam = {"round": r, "alarm": "shoe_jam", "detail": "shoe reported jam"}
        for m in [
            Message(topic, "alarm", "t/seat-2", 900, {**jam, "unit": "t/seat-2"}),      # a seat forging it
            Message(topic, "alarm", "t/seat-2", 901, {**jam, "unit": "t/dealer"}),      # ... as the dealer
            Message(topic, "alarm", "t/dealer", 902, {**jam, "unit": "t/seat-2"}),      # raised by another
            Message(topic, "alarm", "t/dealer", 903, {**jam, "unit": "t/dealer", "alarm": "Shoe Jam!"}),
            Message(topic, "alarm", "t/dealer", 904, {**jam, "unit": "t/dealer", "detail": 7}),
            Message(topic, "alarm", "t/dealer", 905, {**jam, "unit": "t/dealer", "round": -1}),
            Message(topic, "gossip", "t/dealer", 906, {**jam, "unit": "t/dealer"}),
            Message(alarm_topic("other"), "alarm", "other/dealer", 907, {**jam, "unit": "other/dealer"}),
        ]:
            t.bus.publish(m)
        t.settle()
        for box, seat in t.seats.items():
            assert codes(seat) == [], box
            # nothing journalled but the bounded evidence of each rejection (issue #12.9)
            evidence = [st for st in seat.journal.steps() if st[0].step > steps[box]]
            assert [st[0].kind for st in evidence] == ["rejected"] * seat.rejected, box
            assert seat.table_faults == {}
        # seat 2 does not hear its own messages; seats 1 and 3 refuse all seven (the other
        # table's topic is not theirs to hear)
        assert t.seats[1].rejected == 7 and t.seats[3].rejected == 7 and t.seats[2].rejected == 5
        problems = [x["problem"] for x in t.seats[1].rejections]
        assert "only 't/dealer' raises the table's alarms" in problems[0]
        assert "raised by 't/seat-2', sent by 't/dealer'" in problems[2]
        assert "rejected" in caplog.text and "t/seat-2" in caplog.text
        d.play_round()                                    # the table plays on
        assert all(s.rejected in (5, 7) for s in t.seats.values())
    finally:
        t.close()


def test_a_redelivered_alarm_is_taken_once(tmp_path):
    d = driver(tmp_path, boxes=2)
    t = d.table
    try:
        d.play_round()
        t.shoe.misread()
        t.settle()
        seat = t.seats[1]
        last = next(r for r in reversed(list(t.dealer.journal.records()))
                    if r.dir == "out" and r.body["topic"] == alarm_topic("t"))
        steps = seat.journal.last_step
        t.bus.publish(Message.from_dict(last.body))       # the broker hands it over again
        t.settle()
        assert seat.journal.last_step == steps and codes(seat) == ["misread"]
    finally:
        t.close()
