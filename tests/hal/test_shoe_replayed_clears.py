"""A replayed JAM_CLEARED or DOOR_CLOSED must not clear a jam or an open door.

The dealer keeps ``shoe_door_opened`` (the pit-call lamp flashes) and ``shoe_jam`` until the
shoe says they are over; a replayed "door closed" hid an open shoe door. Such an event is old
when its card counter is behind the unit's count, or (same count, no card since) when its
frame's SEQ is not ahead of the newest frame's: dropped and counted (``stale_counters``).

Real serial traffic through a pseudo-terminal: hal/sim's shoe simulator sends the frames and
replays them byte for byte (same SEQ)."""

from __future__ import annotations

from hal.events import ShoeSignalKind
from hal.protocol import shoe as proto
from hal.sim.shoe import ShoeSimulator
from tests.hal.conftest import Events
from tests.hal.test_shoe_duplicates import cards_until

OPENED, CLOSED = ShoeSignalKind.DOOR_OPENED, ShoeSignalKind.DOOR_CLOSED


def last_event_frame(sim: ShoeSimulator, kind: ShoeSignalKind) -> bytes:
    code = proto.CODE_OF[kind]
    return [f for t, f in sim.sent if t == proto.EVENT and f[6] == code][-1]


def test_a_replayed_door_closed_does_not_close_an_open_door(quiet_shoe, shoe_port, events: Events) -> None:
    sim, shoe = quiet_shoe, shoe_port
    sim.shuffle()
    sim.door("open")
    sim.door("close")                    # at count 0
    old_close = last_event_frame(sim, CLOSED)
    sim.deal("2H", "3H")
    sim.door("open")                     # at count 2: the door stays open
    sim.transport.write(old_close)       # replayed: count 0, an old SEQ
    sim.send(proto.EVENT, proto.Event(CLOSED, 1).payload())   # count 1 under a fresh SEQ
    sim.door("close")
    sim.door("open")                     # at count 2 again, no card since the close
    sim.transport.write(last_event_frame(sim, CLOSED))   # same count, an old SEQ
    sim.deal("4H")
    seen = cards_until(events, "4H")
    doors = [k for k, _, _ in seen if k in (OPENED, CLOSED)]
    assert doors == [OPENED, CLOSED, OPENED, CLOSED, OPENED]
    assert shoe.stats["stale_counters"] == 3
