"""Issue #12.1: a CARD frame sent twice must never be dealt twice.

Real serial traffic through a pseudo-terminal: the simulator replays frames byte for byte
(same SEQ), repeats a card under a new SEQ, replays after its own HELLO (which restarts the
SEQ check) and reorders two cards. Only the shoe's card counter can tell an old card from
a new one: a CARD whose counter does not advance since the last shuffle is a duplicate.
"""

from __future__ import annotations

import pytest

from hal import open_backend
from hal.events import CardDrawn, ShoeSignal, ShoeSignalKind
from hal.protocol import shoe as proto
from hal.sim.shoe import ShoeSimulator
from hal.sim.transport import PtyTransport
from tests.hal.conftest import Events


@pytest.fixture
def shoe_sim():
    sim = ShoeSimulator(PtyTransport(), heartbeat=0.1, seed=7).start()
    yield sim
    sim.close()


def cards_until(events: Events, last: str) -> list[tuple[str, str, int | None]]:
    """Cards and shoe signals, in order, up to the card ``last``."""
    seen: list[tuple[str, str, int | None]] = []
    while True:
        event = events.next((CardDrawn, ShoeSignal))
        if isinstance(event, CardDrawn):
            seen.append(("card", event.card, event.counter))
            if event.card == last:
                return seen
        else:
            seen.append((str(event.kind), event.card or "", event.counter))


def test_replayed_repeated_and_reordered_cards_are_never_dealt(shoe_sim, events) -> None:
    shoe = open_backend("card_shoe", "serial", {"port": shoe_sim.transport.path})
    shoe.start(events.put)
    try:
        assert shoe_sim.wait_for_host()
        shoe_sim.shuffle()
        shoe_sim.deal("2H", "3H")
        shoe_sim.replay_cards(1)        # 3H again, same SEQ as the frame before
        shoe_sim.deal("4H")
        shoe_sim.replay_cards(2)        # 3H 4H again, old SEQs
        shoe_sim.repeat("4H", 3)        # counter 3 again under a fresh SEQ
        shoe_sim.hello()                # the shoe "restarts": the SEQ check starts over
        shoe_sim.replay_cards(1)        # ... and the last card frame comes once more
        shoe_sim.hold(1)                # 5H (counter 4) goes out after 6H (counter 5)
        shoe_sim.deal("5H", "6H")
        shoe_sim.deal("7H")
        seen = cards_until(events, "7H")
    finally:
        shoe.close()
    dealt = [(c, n) for k, c, n in seen if k == "card"]
    assert dealt == [("2H", 1), ("3H", 2), ("4H", 3), ("6H", 5), ("7H", 6)]
    duplicates = [(c, n) for k, c, n in seen if k == ShoeSignalKind.DUPLICATE_CARD]
    # the same-SEQ replay is dropped by the frame layer; every other repeat by its counter
    assert duplicates == [("3H", 2), ("4H", 3), ("4H", 3), ("4H", 3), ("5H", 4)]
    # the late 5H is first a gap (a card the unit had not seen when 6H came), then refused
    assert ("card_gap", "", 4) in seen
    assert seen.index(("card_gap", "", 4)) < seen.index(("card", "6H", 5))
    stats = shoe.stats
    assert stats["duplicate_cards"] == 5 and stats["duplicate_frames"] >= 1
    assert stats["out_of_order_frames"] >= 2


def test_a_stale_heartbeat_does_not_reopen_old_counts() -> None:
    """A replayed heartbeat (counter behind) must not let an old card pass afterwards."""
    tracker = proto.ShoeTracker("shoe")
    tracker.handle(proto.Event(ShoeSignalKind.SHUFFLED, 0))
    for n, card in enumerate(("AS", "KS", "QS"), start=1):
        tracker.handle(proto.Card(n, card[0], card[1]))
    assert tracker.handle(proto.Heartbeat(1)) == []
    out = tracker.handle(proto.Card(2, "K", "S"))
    assert [type(e) for e in out] == [ShoeSignal] and out[0].kind is ShoeSignalKind.DUPLICATE_CARD
    assert tracker.handle(proto.Event(ShoeSignalKind.MISREAD, 3)) == []   # old misread
    assert tracker.counter == 3 and tracker.stale == 2
    tracker.handle(proto.Event(ShoeSignalKind.SHUFFLED, 0))   # a new shoe: counts start again
    assert isinstance(tracker.handle(proto.Card(1, "A", "S"))[0], CardDrawn)
