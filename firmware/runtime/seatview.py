"""Builds a seat's :class:`~firmware.runtime.view.SeatView` from the seat unit's state after
every step. Kept apart from the seat unit so the screen's needs and the seat's rules change
separately; it reads the seat and asks the engine, and decides no rule itself."""

from __future__ import annotations

from typing import TYPE_CHECKING

from firmware.chips import ChipStatus
from firmware.engine.hand import hand_total
from firmware.engine.money import format_amount
from firmware.engine.round import Phase

from .view import HandView, SeatView, SpotView

if TYPE_CHECKING:
    from .seat import SeatUnit


def build_seat_view(seat: "SeatUnit") -> SeatView:
    state = seat.round
    spots = []
    locked = seat.phase in ("closing", "play")
    for spot in seat.spots:
        uids = seat.present[spot]
        worth = seat._worth(uids)
        refused = tuple(u for u in sorted(uids) if (c := seat.registry.get(u)) is None
                        or c.status is not ChipStatus.VALID)
        status = ("refused" if refused else "locked" if locked and worth else
                  "open" if worth else "empty")
        spots.append(SpotView(spot, format_amount(worth), status, refused))
    hands: list[HandView] = []
    results: tuple = ()
    decisions: tuple = ()
    dealer: tuple = ()
    dealer_total = None
    dealer_soft = dealer_blackjack = False
    if state is not None and state.phase != Phase.BETTING:
        dealer = tuple(str(c) for c in state.dealer)
        if state.dealer:
            dealer_total, dealer_soft = hand_total(state.dealer)
            dealer_blackjack = state.dealer_blackjack
        box = next((b for b in state.boxes if b.number == seat.box), None)
        if box is not None:
            cur = state.hand_in_play()
            for hand in box.hands:
                total, soft = hand_total(hand.cards)
                hands.append(HandView(tuple(str(c) for c in hand.cards), total, soft, hand.status,
                                      hand.result, None if hand.net is None else format_amount(hand.net),
                                      cur is not None and cur[1] is hand))
            if state.is_over:
                results = tuple((k, format_amount(v)) for k, v in sorted(box.ledger.items()))
            if cur is not None and cur[0] is box:
                decisions = tuple(str(a) for a, r in state.legal_decisions(seat.box).items() if r is None)
    lamps = tuple((k, "on" if v else "off") for k, v in seat.lamp_wanted().items())
    return SeatView(seat.box, seat.round_no, seat.phase, tuple(spots), tuple(hands), dealer,
                    dealer_total, results, tuple(seat.messages[-8:]),
                    tuple(a["detail"] for a in seat.alarms[-8:]), lamps, decisions,
                    dealer_soft, dealer_blackjack)
