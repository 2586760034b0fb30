"""A reader line that never closes a cycle must not grow the unit's memory.

Real serial traffic through a pseudo-terminal: hal/sim's RFID simulator sends TAGS frames of
one cycle, each with new UIDs, and no CYCLE_END. CYCLE_END counts a cycle's TAGS frames in one
byte, so a cycle of more than 255 can never complete: what comes after is not kept.
"""

from __future__ import annotations

import time

from hal import open_backend
from hal.events import InventoryCycle
from hal.protocol import rfid as proto
from hal.sim.rfid import RfidSimulator
from hal.sim.transport import PtyTransport
from tests.hal.conftest import Events

PER_FRAME = 49          # 4-byte UIDs in one TAGS frame (5 bytes each after the 4-byte head)


def test_an_endless_cycle_keeps_at_most_what_a_cycle_can_hold(events: Events) -> None:
    sim = RfidSimulator(PtyTransport(), ["main", "pp"], heartbeat=None).start()
    reader = open_backend("chip_reader", "serial",
                          {"port": sim.transport.path, "spots": ["main", "pp"]})
    reader.start(events.put)
    try:
        assert sim.wait_for_host()
        floods = 600
        for n in range(floods):
            uids = tuple((n * PER_FRAME + i).to_bytes(4, "big") for i in range(PER_FRAME))
            sim.send(*proto.encode(proto.Tags(9, 0, uids)))
        deadline = time.monotonic() + 20
        while reader.stats["frames"] < floods + 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert reader.stats["frames"] == floods + 1        # the HELLO and every TAGS frame
        held = sum(len(uids) for uids in reader.assembler._seen.values())
        assert held <= proto.MAX_CYCLE_FRAMES * PER_FRAME, f"{held} UIDs held for one open cycle"
        sim.send(*proto.encode(proto.CycleEnd(9, floods & 0xFF)))   # never complete
        sim.place("main", "04A1B2C3")
        sim.cycle()
        cycle = events.next(InventoryCycle)
        assert cycle.uids("main") == {"04A1B2C3"}
        assert reader.stats["incomplete_cycles"] == 1
    finally:
        reader.close()
        sim.close()
