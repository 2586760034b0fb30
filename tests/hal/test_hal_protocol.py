"""The frame parser and both protocols' messages: pure, and fed hostile bytes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hal.events import CardDrawn, InventoryCycle, ReaderFault, ShoeSignal, ShoeSignalKind
from hal.protocol import rfid, shoe
from hal.protocol.common import Hello, MessageError
from hal.protocol.framing import Frame, Parser, SequenceCheck, Sequencer, crc16, encode_frame

frames_st = st.builds(Frame, st.integers(0, 255), st.integers(0, 255),
                      st.binary(max_size=250))


def test_crc_is_ccitt_false() -> None:
    assert crc16(b"123456789") == 0x29B1


def test_frame_layout_is_as_documented() -> None:
    raw = encode_frame(Frame(0x10, 7, b"\x00\x01AS"))
    assert raw[:2] == b"\xA5\x5A"
    assert raw[2:6] == bytes((4, 0xFB, 0x10, 7))
    assert raw[6:10] == b"\x00\x01AS"
    assert int.from_bytes(raw[10:], "big") == crc16(raw[2:10])


def test_oversized_payload_is_refused() -> None:
    with pytest.raises(ValueError):
        encode_frame(Frame(1, 1, bytes(251)))


@given(st.lists(frames_st, max_size=8), st.data())
def test_any_split_of_a_stream_parses_the_same(frames: list[Frame], data) -> None:
    stream = b"".join(map(encode_frame, frames))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    parser, got, last = Parser(), [], 0
    for cut in cuts + [len(stream)]:
        got += parser.feed(stream[last:cut])
        last = cut
    assert got == frames
    assert parser.stats.rejected == 0


@settings(max_examples=300)
@given(st.binary(max_size=2000))
def test_random_bytes_never_raise(garbage: bytes) -> None:
    parser = Parser()
    parser.feed(garbage)
    parser.idle()
    assert parser.pending <= len(garbage)


@settings(max_examples=300)
@given(st.binary(max_size=600), st.lists(frames_st, min_size=1, max_size=6))
def test_every_valid_frame_after_garbage_is_recovered(garbage: bytes,
                                                      frames: list[Frame]) -> None:
    parser = Parser()
    got = parser.feed(garbage + b"".join(map(encode_frame, frames)))
    got += parser.idle()  # the line goes quiet after the burst
    # garbage may by chance contain a whole valid frame; everything else must be ours
    assert got[-len(frames):] == frames


@settings(max_examples=500)
@given(st.lists(frames_st, min_size=1, max_size=5), st.data())
def test_a_corrupted_frame_is_never_accepted(frames: list[Frame], data) -> None:
    encoded = [bytearray(encode_frame(f)) for f in frames]
    victim = data.draw(st.integers(0, len(frames) - 1))
    at = data.draw(st.integers(2, len(encoded[victim]) - 1))  # past the sync pair
    flip = data.draw(st.integers(1, 255))
    encoded[victim][at] ^= flip
    parser = Parser()
    got = parser.feed(b"".join(bytes(e) for e in encoded)) + parser.idle()
    others = [f for i, f in enumerate(frames) if i != victim]
    assert got == others  # the corrupted one is gone, every other one is intact
    assert parser.stats.rejected >= 1


@settings(max_examples=200)
@given(st.lists(frames_st, min_size=2, max_size=5), st.data())
def test_a_broken_sync_loses_only_that_frame(frames: list[Frame], data) -> None:
    encoded = [bytearray(encode_frame(f)) for f in frames]
    victim = data.draw(st.integers(0, len(frames) - 1))
    encoded[victim][data.draw(st.integers(0, 1))] ^= 0xFF
    parser = Parser()
    got = parser.feed(b"".join(bytes(e) for e in encoded)) + parser.idle()
    for i, frame in enumerate(frames):
        if i != victim:
            assert frame in got
    assert all(f in frames for f in got)


def test_fake_header_in_garbage_does_not_swallow_frames() -> None:
    good = encode_frame(Frame(0x10, 1, b"\x00\x01AS"))
    fake = b"\xA5\x5A\xF0\x0F"  # claims 240 bytes
    parser = Parser()
    assert parser.feed(fake + good) == []  # waiting for 240 bytes...
    assert parser.idle() == [Frame(0x10, 1, b"\x00\x01AS")]  # ...until the line idles
    assert parser.stats.truncated == 1


def test_sequence_check_counts_losses_and_duplicates() -> None:
    check = SequenceCheck()
    assert [check.accept(s) for s in (254, 255, 255, 2)] == [True, True, False, True]
    assert (check.lost, check.duplicates) == (2, 1)


def test_sequencer_wraps() -> None:
    seq = Sequencer()
    seq.skip(255)
    assert Parser().feed(seq.frame(1) + seq.frame(1)) == [Frame(1, 255), Frame(1, 0)]


# ---------------------------------------------------------------- messages


@pytest.mark.parametrize("message", [
    shoe.Card(513, "T", "H"), shoe.Event(ShoeSignalKind.JAM, 9), shoe.Heartbeat(3, 1),
    Hello(1, "shoe-42"),
])
def test_shoe_messages_round_trip(message) -> None:
    t, payload = shoe.encode(message)
    assert shoe.decode(Frame(t, 0, payload)) == message


@pytest.mark.parametrize("type_, payload", [
    (shoe.CARD, b"\x00\x01XS"), (shoe.CARD, b"\x00\x01A"), (shoe.EVENT, b"\x63\x00\x00"),
    (0x55, b""), (shoe.HEARTBEAT, b""), (0x01, b""),
])
def test_shoe_nonsense_is_a_message_error(type_: int, payload: bytes) -> None:
    with pytest.raises(MessageError):
        shoe.decode(Frame(type_, 0, payload))


@given(st.integers(0, 255), st.binary(max_size=40))
def test_decoders_only_raise_message_errors(type_: int, payload: bytes) -> None:
    for decode in (shoe.decode, rfid.decode):
        try:
            decode(Frame(type_, 0, payload))
        except MessageError:
            pass


def test_tags_split_and_round_trip() -> None:
    uids = [bytes.fromhex(f"04{i:012X}") for i in range(60)]
    parts = rfid.split_tags(7, 2, uids)
    assert len(parts) > 1
    decoded = [rfid.decode(Frame(*rfid.encode(p)[:1], 0, rfid.encode(p)[1])) for p in parts]
    assert sorted(u for p in decoded for u in p.uids) == sorted(uids)


def test_shoe_tracker_detects_gaps() -> None:
    t = shoe.ShoeTracker("shoe")
    t.handle(shoe.Event(ShoeSignalKind.SHUFFLED, 0))
    assert [type(e) for e in t.handle(shoe.Card(1, "A", "S"))] == [CardDrawn]
    events = t.handle(shoe.Card(4, "K", "S"))
    assert isinstance(events[0], ShoeSignal) and events[0].kind is ShoeSignalKind.CARD_GAP
    assert events[1] == CardDrawn(device="shoe", rank="K", suit="S", counter=4)
    assert t.handle(shoe.Heartbeat(4)) == []
    assert t.handle(shoe.Heartbeat(5))[0].kind is ShoeSignalKind.CARD_GAP


def test_assembler_delivers_only_complete_cycles() -> None:
    a = rfid.InventoryAssembler("rfid", ["main", "pp"])
    uid = bytes.fromhex("04A1B2C3")
    assert a.handle(rfid.Tags(1, 0, (uid,))) == []
    a.handle(rfid.Tags(1, 1, ()))
    [cycle] = a.handle(rfid.CycleEnd(1, 2))
    assert isinstance(cycle, InventoryCycle) and cycle.uids("main") == {"04A1B2C3"}
    a.handle(rfid.Tags(2, 0, (uid,)))  # the antenna-1 frame of cycle 2 is lost
    assert a.handle(rfid.CycleEnd(2, 2)) == []
    assert a.incomplete == 1
    [fault] = a.handle(rfid.Fault(1, "rf_error"))
    assert fault == ReaderFault(device="rfid", spot="pp", code="rf_error")
    assert a.handle(rfid.Fault(rfid.READER_ITSELF, "overheat"))[0].spot is None
