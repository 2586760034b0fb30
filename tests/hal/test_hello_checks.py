"""Issue #12.9: HELLO field lengths and reserved bits are checked as the protocol documents
say (docs/protocols/card-shoe.md, rfid-reader.md); anything else is rejected and counted."""

from __future__ import annotations

import time

import pytest

from hal import open_backend
from hal.events import CardDrawn
from hal.protocol import rfid
from hal.protocol import shoe as proto
from hal.protocol.common import HEARTBEAT, HELLO, Hello, MessageError
from hal.protocol.framing import Frame
from hal.sim.shoe import ShoeSimulator
from hal.sim.transport import PtyTransport


@pytest.mark.parametrize("payload, why", [
    (b"", "without a version"),
    (b"\x00shoe", "version 0"),
    (b"\x01" + b"x" * 65, "65 bytes: at most 64"),
    (b"\x01shoe\x00", "printable ASCII"),
    (b"\x01sh\xc3\xa9", "printable ASCII"),
    (b"\x01line\nbreak", "printable ASCII"),
])
def test_a_bad_hello_is_refused_naming_the_field(payload, why) -> None:
    for decode in (proto.decode, rfid.decode):
        with pytest.raises(MessageError, match=why):
            decode(Frame(HELLO, 0, payload))


def test_good_hellos_pass() -> None:
    assert proto.decode(Frame(HELLO, 0, b"\x01" + b"S" * 64)) == Hello(1, "S" * 64)
    assert proto.decode(Frame(HELLO, 0, b"\x02")) == Hello(2, "")   # a later version is heard


@pytest.mark.parametrize("flags", [0x04, 0x80, 0xFF])
def test_reserved_heartbeat_flags_are_refused(flags) -> None:
    with pytest.raises(MessageError, match="reserved"):
        proto.decode(Frame(HEARTBEAT, 0, b"\x00\x01" + bytes((flags,))))
    assert proto.decode(Frame(HEARTBEAT, 0, b"\x00\x01\x03")) == proto.Heartbeat(1, 3)


def test_on_a_pty_bad_hellos_are_counted_and_change_nothing(events) -> None:
    sim = ShoeSimulator(PtyTransport(), heartbeat=None).start()
    shoe = open_backend("card_shoe", "serial", {"port": sim.transport.path})
    shoe.start(events.put)
    try:
        assert sim.wait_for_host()
        sim.shuffle()
        sim.deal("AS")
        assert events.next(CardDrawn).card == "AS"
        assert shoe._endpoint.device_id == "betbox-sim-shoe"
        sim.send(HELLO, b"\x01" + b"E" * 200)          # too long an id
        sim.send(HELLO, b"\x00evil")                   # version 0
        sim.send(HEARTBEAT, b"\x00\x01\x40")           # a reserved flag bit
        sim.deal("KS")
        assert events.next(CardDrawn).card == "KS"
        deadline = time.monotonic() + 10
        while shoe.stats["bad_messages"] < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert shoe.stats["bad_messages"] == 3
        assert shoe._endpoint.device_id == "betbox-sim-shoe"   # not taken from a bad HELLO
    finally:
        shoe.close()
        sim.close()
