"""A replayed SHUFFLED frame must not restart the shoe's card count: after it, the old card
frames (counts 1, 2, ...) would pass as new cards. Only the SHUFFLED restarts the count, so
the count cannot tell a replayed one; its frame number can: a SHUFFLED whose SEQ is behind
the last frame's is a replay, dropped and reported (``replayed_shuffle``).

Real serial traffic through a pseudo-terminal: hal/sim's shoe simulator sends the frames
and replays them byte for byte (same SEQ)."""

from __future__ import annotations

from hal.events import ShoeSignalKind
from hal.protocol import shoe as proto
from hal.protocol.common import HEARTBEAT
from hal.protocol.framing import Sequencer
from tests.hal.conftest import Events
from tests.hal.test_shoe_duplicates import cards_until


def test_a_replayed_shuffle_does_not_let_old_cards_be_dealt_again(quiet_shoe, shoe_port, events: Events) -> None:
    shoe_sim, shoe = quiet_shoe, shoe_port
    shoe_sim.shuffle()
    shoe_sim.deal("2H", "3H", "4H")
    shuffled = [f for t, f in shoe_sim.sent if t == proto.EVENT][-1]
    shoe_sim.replay(proto.EVENT, 1)     # the SHUFFLED frame again, byte for byte
    shoe_sim.replay_cards(3)            # then 2H 3H 4H again (counts 1-3)
    shoe_sim.deal("5H")
    seen = cards_until(events, "5H")
    assert shuffled[6] == 0x01              # (EVENT code SHUFFLED: the frame replayed is the shuffle)
    dealt = [(c, n) for k, c, n in seen if k == "card"]
    assert dealt == [("2H", 1), ("3H", 2), ("4H", 3), ("5H", 4)]
    kinds = [k for k, _, _ in seen]
    assert kinds.count(ShoeSignalKind.SHUFFLED) == 1 and kinds.count(ShoeSignalKind.REPLAYED_SHUFFLE) == 1
    assert kinds.count(ShoeSignalKind.DUPLICATE_CARD) == 3
    assert shoe.stats["replayed_shuffles"] == 1


def test_a_shuffle_after_the_shoes_hello_is_taken(quiet_shoe, shoe_port, events: Events) -> None:
    """A shoe that restarted (its HELLO) numbers its frames anew: its SHUFFLED is taken."""
    shoe_sim, shoe = quiet_shoe, shoe_port
    shoe_sim.shuffle()
    shoe_sim.deal("2H", "3H")
    shoe_sim.sequencer = Sequencer()     # the shoe restarts: its numbering from 0
    shoe_sim.hello()
    shoe_sim.shuffle()
    shoe_sim.deal("6S")
    seen = cards_until(events, "6S")
    assert [(c, n) for k, c, n in seen if k == "card"] == [("2H", 1), ("3H", 2), ("6S", 1)]
    assert [k for k, _, _ in seen].count(ShoeSignalKind.SHUFFLED) == 2
    assert shoe.stats["replayed_shuffles"] == 0


def test_the_dealer_alarms_a_replayed_shuffle_and_keeps_its_count(tmp_path) -> None:
    """What the HAL reports reaches the pit; the dealer's count does not restart."""
    from tests.tables import booted_table

    t = booted_table(tmp_path)
    t.shoe.deal_many("2H 3H")                     # (outside a round: card_while_betting, counted)
    t.settle()
    count, shoe_number = t.dealer.shoe_counter, t.dealer.shoe_number
    t.shoe._signal(ShoeSignalKind.REPLAYED_SHUFFLE)
    t.settle()
    assert (t.dealer.shoe_counter, t.dealer.shoe_number) == (count, shoe_number) and count == 2
    assert t.dealer.alarms[-1]["alarm"] == "shoe_replayed_shuffle"
    assert t.dealer.pit_calls.get("shoe_replayed_shuffle") == 1
    t.close()


def test_a_replayed_frame_before_the_shuffle_does_not_let_the_replayed_shuffle_through(
        quiet_shoe, shoe_port, events: Events) -> None:
    """The SEQ check follows a frame behind it (a device restarted without a HELLO goes on),
    so a replay of the frames from just before the shuffle, in order, moved the check back:
    the replayed SHUFFLED then looked new (4 frames old, not 128), the count restarted and
    the old cards were dealt a second time. A SHUFFLED is judged against the newest frame."""
    shoe_sim, shoe = quiet_shoe, shoe_port
    shoe_sim.send(HEARTBEAT, shoe_sim.heartbeat_payload())
    shoe_sim.shuffle()
    shoe_sim.deal("2H", "3H", "4H")
    shoe_sim.replay(HEARTBEAT, 1)       # the frames from the heartbeat on, byte for byte
    shoe_sim.replay(proto.EVENT, 1)     # the SHUFFLED
    shoe_sim.replay_cards(3)            # 2H 3H 4H (counts 1-3)
    shoe_sim.deal("5H")
    seen = cards_until(events, "5H")
    assert [(c, n) for k, c, n in seen if k == "card"] == [("2H", 1), ("3H", 2), ("4H", 3), ("5H", 4)]
    kinds = [k for k, _, _ in seen]
    assert kinds.count(ShoeSignalKind.SHUFFLED) == 1 and kinds.count(ShoeSignalKind.REPLAYED_SHUFFLE) == 1
    assert shoe.stats["replayed_shuffles"] == 1


def test_a_replayed_frame_is_not_counted_as_frames_lost(quiet_shoe, shoe_port, events: Events) -> None:
    """The SEQ check follows a replayed frame back; the shoe's next frame then looked as if
    the frames between had been lost (``lost_frames`` 2 for a line that lost none): the
    service menu sent the technician after line noise instead of a replay. Frames are lost
    only beyond the newest number heard."""
    shoe_sim, shoe = quiet_shoe, shoe_port
    shoe_sim.shuffle()
    shoe_sim.deal("2H", "3H", "4H", "5H")
    shoe_sim.transport.write([f for t, f in shoe_sim.sent if t == proto.CARD][-3])   # 3H again
    shoe_sim.deal("6H")
    seen = cards_until(events, "6H")
    assert ("duplicate_card", "3H", 2) in seen
    assert shoe.stats["lost_frames"] == 0 and shoe.stats["out_of_order_frames"] == 1
