"""A FAULT names an antenna; only FF is the reader itself.

Real serial traffic through a pseudo-terminal from hal/sim's RFID simulator.
"""

from __future__ import annotations

from hal import open_backend
from hal.events import ReaderFault
from hal.sim.rfid import RfidSimulator
from hal.sim.transport import PtyTransport
from tests.hal.conftest import Events


def test_a_fault_on_an_antenna_without_a_spot_is_not_the_readers_own(events: Events) -> None:
    """A reader with more antennas than the box has spots (a 3-antenna reader under a
    2-spot box): a fault on the spare antenna was reported as a fault of the reader itself
    (spot None), which makes the seat take no bet at all. It is ignored and counted, like
    that antenna's tags; the reader's own fault (antenna FF) still is the reader's."""
    sim = RfidSimulator(PtyTransport(), ["main", "pp", "spare"], heartbeat=None).start()
    reader = open_backend("chip_reader", "serial",
                          {"port": sim.transport.path, "spots": ["main", "pp"]})
    reader.start(events.put)
    try:
        assert sim.wait_for_host()
        sim.fault("spare", "antenna_open")
        sim.fault("pp", "rf_error")
        sim.fault("reader", "overheat")
        faults = [events.next(ReaderFault) for _ in range(2)]
        assert [(f.spot, f.code) for f in faults] == [("pp", "rf_error"), (None, "overheat")]
        assert reader.stats["unmapped"] == 1
    finally:
        reader.close()
        sim.close()
