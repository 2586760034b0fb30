"""A frame from before the last shuffle, replayed after it, must not count.

The shoe's card counter restarts at a shuffle, so a CARD replayed from the shoe before it
may carry a count ahead of the new shoe's: it passed as a new card (a card that never left
the shoe now), and took the count of the real card after it, which was then refused as a
duplicate. A replayed HEARTBEAT from the old shoe moved the count ahead (a card gap) and the
real cards after it were refused too. Such a frame's SEQ is behind the newest frame's and its
count ahead of the unit's: only a frame from before the last shuffle can be both.

Real serial traffic through a pseudo-terminal: hal/sim's shoe simulator sends the frames and
the test replays them byte for byte (same SEQ)."""

from __future__ import annotations

from hal.events import CardDrawn, ShoeSignal, ShoeSignalKind
from hal.protocol import shoe as proto
from hal.protocol.common import HEARTBEAT
from tests.hal.conftest import Events


def until_cut_card(events: Events) -> list[tuple[str, str, int | None]]:
    """Cards and shoe signals, in order, up to the cut card (sent last, whatever came before)."""
    seen: list[tuple[str, str, int | None]] = []
    while True:
        event = events.next((CardDrawn, ShoeSignal))
        if isinstance(event, CardDrawn):
            seen.append(("card", event.card, event.counter))
        elif event.kind is ShoeSignalKind.CUT_CARD:
            return seen
        else:
            seen.append((str(event.kind), event.card or "", event.counter))


def test_frames_of_the_shoe_before_the_shuffle_are_not_taken(quiet_shoe, shoe_port, events: Events) -> None:
    sim, shoe = quiet_shoe, shoe_port
    sim.shuffle()
    sim.deal("2H", "3H", "4H")
    sim.send(HEARTBEAT, sim.heartbeat_payload())             # count 3
    old_card = [f for t, f in sim.sent if t == proto.CARD][-2]      # 3H, count 2
    old_beat = [f for t, f in sim.sent if t == HEARTBEAT][-1]
    sim.shuffle()                                            # a new shoe
    sim.deal("5S")                                           # count 1
    sim.transport.write(old_card)                            # 3H, count 2, again
    sim.deal("6S")                                           # count 2
    sim.transport.write(old_beat)                            # count 3 again
    sim.deal("7S")                                           # count 3
    sim.cut_card()
    seen = until_cut_card(events)
    dealt = [(c, n) for k, c, n in seen if k == "card"]
    assert dealt == [("2H", 1), ("3H", 2), ("4H", 3), ("5S", 1), ("6S", 2), ("7S", 3)]
    assert [(c, n) for k, c, n in seen if k == ShoeSignalKind.DUPLICATE_CARD] == [("3H", 2)]
    assert ShoeSignalKind.CARD_GAP not in [k for k, _, _ in seen]
    assert shoe.stats["duplicate_cards"] == 1 and shoe.stats["stale_counters"] == 1
