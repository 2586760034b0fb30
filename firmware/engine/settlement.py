"""A round's settlement as plain data (JSON-ready): what `betbox settle` prints, what the
seat and dealer units compare (dual check), and what the journal recalls."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from .hand import hand_total
from .money import to_json_number
from .round import Phase, Round


def settlement(state: Round) -> dict[str, Any]:
    void = state.phase == Phase.VOID
    dealer_total = hand_total(state.dealer)[0] if state.dealer else None
    out: dict[str, Any] = {
        "profile": state.profile.name,
        "decks": state.decks,
        "void": void,
    }
    if void:
        out["reason"] = state.void_reason
        out["clause"] = state.void_clause
    out["complete"] = state.is_over
    out["dealer"] = {
        "cards": [str(c) for c in state.dealer],
        "total": dealer_total,
        "blackjack": state.dealer_blackjack,
    }
    boxes: dict[str, Any] = {}
    for box in state.boxes:
        hands = []
        for hand in box.hands:
            total, soft = hand_total(hand.cards)
            entry: dict[str, Any] = {
                "id": hand.id,
                "cards": [str(c) for c in hand.cards],
                "total": total,
                "soft": soft,
                "result": None if void else hand.result,
                "stake": to_json_number(hand.stake),
            }
            if hand.doubled:
                entry["doubled"] = to_json_number(hand.doubled)
            if state.profile.is_switch:
                entry["switched"] = hand.switched
            hands.append(entry)
        if void:
            # §5.17: every bet of a voided round is returned
            bets: dict[str, int | float | str] = {name: 0 for name in [*box.wagers, *box.ledger, *(["insurance"] if box.insurance else [])]}
        else:
            bets = {name: to_json_number(amount) for name, amount in box.ledger.items()}
        b: dict[str, Any] = {
            "hands": hands,
            "wagered": {n: to_json_number(a) for n, a in state.wagered(box.number).items()},
            "bets": bets,
            "net": to_json_number(Fraction(sum(box.ledger.values(), start=Fraction(0))) if not void else Fraction(0)),
        }
        if box.side_results and not void:
            b["side_bets"] = dict(box.side_results)
        if "progressive" in box.stakes:
            b["progressive"] = {
                "hand": box.progressive_hand,
                "award": None if box.progressive_award is None else to_json_number(box.progressive_award),
            }
        if box.insurance:
            b["insurance"] = {str(f + 1): to_json_number(a) for f, a in sorted(box.insurance.items())}
        if box.flags:
            b["flags"] = [{"bet": f.bet, "issue": f.issue, "placed": to_json_number(f.placed),
                           "counted": to_json_number(f.counted), "clause": f.clause} for f in box.flags]
        if box.returned:
            b["returned"] = [{"bet": r.bet, "amount": to_json_number(r.amount), "reason": r.reason,
                              "clause": r.clause} for r in box.returned]
        if box.walked_away:
            b["walked_away"] = True
        boxes[str(box.number)] = b
    out["boxes"] = boxes
    return out
