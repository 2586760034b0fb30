"""A replayed inventory cycle must not be delivered.

A cycle is only its frames: no count that only goes forward can say it is old. With one
replayed between each two real ones, chips taken off a betting spot never read as gone (the
debouncer's misses never run two in a row): a bet without chips. Its frames' SEQs are
behind the newest frame's: TAGS and CYCLE_END frames from behind it are dropped and counted
(``replayed_frames``), as a replayed SHUFFLED is on the shoe's line.

Real serial traffic through a pseudo-terminal: hal/sim's RFID simulator sends the cycles and
the test replays one, byte for byte (same SEQs)."""

from __future__ import annotations

from hal import open_backend
from hal.events import InventoryCycle
from hal.protocol import rfid as proto
from hal.protocol.framing import Sequencer
from hal.sim.rfid import RfidSimulator
from hal.sim.transport import PtyTransport
from tests.hal.conftest import Events


def test_a_replayed_cycle_is_dropped(events: Events) -> None:
    sim = RfidSimulator(PtyTransport(), ["main"], heartbeat=None).start()
    reader = open_backend("chip_reader", "serial", {"port": sim.transport.path, "spots": ["main"]})
    reader.start(events.put)
    try:
        assert sim.wait_for_host()
        sim.place("main", "04A1B2C3")
        sim.cycle()                                              # cycle 1: the chip
        recorded = [f for t, f in sim.sent if t in (proto.TAGS, proto.CYCLE_END)]
        sim.remove("main")
        sim.cycle()                                              # cycle 2: gone
        sim.transport.write(b"".join(recorded))                  # cycle 1 again
        sim.cycle()                                              # cycle 3
        cycles = [events.next(InventoryCycle) for _ in range(3)]
        assert [(c.cycle, sorted(c.uids("main"))) for c in cycles] == [
            (1, ["04A1B2C3"]), (2, []), (3, [])]
        assert reader.stats["replayed_frames"] == 2
        sim.sequencer = Sequencer()                              # the reader restarts:
        sim.hello()                                              # its numbering from 0
        sim.cycle()
        assert events.next(InventoryCycle).cycle == 4
    finally:
        reader.close()
        sim.close()
