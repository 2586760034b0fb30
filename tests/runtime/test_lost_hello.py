"""A seat's hello, or the dealer's catch-up that answers it, lost with the broker.

Found by the crash-chaos run (tests/link/test_crash_chaos.py) under CPU load: the broker was
SIGKILLed just after a seat, behind on the stream, said hello. mosquitto persists on a time
basis, so what it held went with it. The seat then waited for a catch-up that never came and
dropped every later stream message as held by that catch-up: it never played or reported
again (its real wager of that round never reached the controller)."""

from __future__ import annotations

from pathlib import Path

from firmware.engine.profile import load_profile
from firmware.runtime.bus import Message
from firmware.sim import chipset
from firmware.sim.table import InProcessTable, TableSpec, seat_spots


def table(tmp_path: Path) -> InProcessTable:
    p = load_profile("rws-blackjack")
    t = InProcessTable(TableSpec("t", p, 0, tmp_path), chipset.registry(7, len(seat_spots(p))))
    t.boot()
    t.shoe.shuffle()
    t.settle()
    return t


def broker_cut(t: InProcessTable, box: int) -> None:
    """The seat's next stream message and its hello go down with the broker."""
    lost = {"stream": 1}

    def tamper(subscriber: str, m: Message):
        if subscriber.endswith(f"seat-{box}") and "stream_seq" in m.body and lost["stream"]:
            lost["stream"] -= 1
            return None
        if subscriber.endswith("dealer") and m.kind == "hello" and m.body.get("box") == box:
            return None
        return m
    t.bus.tamper = tamper


def test_a_seat_whose_hello_went_down_with_the_broker_says_it_again_when_the_broker_is_back(tmp_path):
    t = table(tmp_path)
    seat = t.seats[1]
    broker_cut(t, 1)
    t.console.press("open_bets")                 # lost: seat 1 is behind and says hello (lost too)
    t.settle()
    t.console.press("no_more_bets")              # held back: the seat waits for its catch-up
    t.settle()
    assert seat.awaiting_catchup and seat.last_stream < t.dealer.stream_seq
    t.bus.tamper = None                          # the broker is back, and with it the link
    for state in ("down", "up"):
        seat.post(("device", {"device": "broker", "kind": "broker", "state": state}))
        t.settle()
    assert not seat.awaiting_catchup
    assert seat.last_stream == t.dealer.stream_seq
    assert seat.round_no == t.dealer.round_no


def test_a_seat_not_waiting_for_a_catch_up_says_no_hello_when_the_broker_is_back(tmp_path):
    t = table(tmp_path)
    seat = t.seats[1]
    said: list[Message] = []

    def spy(subscriber: str, m: Message):
        if subscriber.endswith("dealer") and m.kind == "hello":
            said.append(m)
        return m
    t.bus.tamper = spy
    for state in ("down", "up"):
        seat.post(("device", {"device": "broker", "kind": "broker", "state": state}))
        t.settle()
    assert not seat.awaiting_catchup and said == []
