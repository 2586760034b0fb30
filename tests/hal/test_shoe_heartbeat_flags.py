"""A jam or an open shoe door whose event frame was lost is still heard: the shoe's
heartbeat shows both conditions in its flags every second (``docs/protocols/card-shoe.md``).
Before, the flags were decoded and dropped: one lost DOOR_OPENED frame hid an open door for
as long as it stayed open.

Real serial traffic through a pseudo-terminal: hal/sim's shoe simulator drops the event
frame (numbered, never sent) and sends its heartbeats when told."""

from __future__ import annotations

from hal.events import ShoeSignalKind
from hal.protocol import shoe as proto
from hal.protocol.common import HEARTBEAT
from tests.hal.conftest import Events
from tests.hal.test_shoe_duplicates import cards_until


def test_a_lost_door_opened_or_jam_is_raised_by_the_next_heartbeat(quiet_shoe, shoe_port, events: Events) -> None:
    sim, shoe = quiet_shoe, shoe_port
    sim.shuffle()
    sim.drop(1)
    sim.door("open")                     # its DOOR_OPENED frame is lost
    sim.send(HEARTBEAT, sim.heartbeat_payload())
    sim.send(HEARTBEAT, sim.heartbeat_payload())    # told once, not at every heartbeat
    sim.drop(1)
    sim.jam()                            # its JAM frame is lost
    sim.send(HEARTBEAT, sim.heartbeat_payload())
    sim.unjam()
    sim.door("close")
    sim.send(HEARTBEAT, sim.heartbeat_payload())
    sim.deal("2H")
    seen = cards_until(events, "2H")
    kinds = [k for k, _, _ in seen if k != ShoeSignalKind.SHUFFLED]
    assert kinds == [ShoeSignalKind.DOOR_OPENED, ShoeSignalKind.JAM, ShoeSignalKind.JAM_CLEARED,
                     ShoeSignalKind.DOOR_CLOSED, "card"]
    assert shoe.stats["missed_events"] == 2


def test_a_stale_heartbeat_raises_nothing() -> None:
    """A heartbeat whose counter is behind the unit's is old (replayed): its flags are not
    taken either."""
    tracker = proto.ShoeTracker("shoe")
    tracker.handle(proto.Event(ShoeSignalKind.SHUFFLED, 0))
    tracker.handle(proto.Card(1, "A", "S"))
    assert tracker.handle(proto.Heartbeat(0, proto.FLAG_DOOR_OPEN)) == []
    [opened] = tracker.handle(proto.Heartbeat(1, proto.FLAG_DOOR_OPEN))
    assert opened.kind is ShoeSignalKind.DOOR_OPENED and opened.counter == 1
