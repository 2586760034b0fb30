"""A round's settlement: one frozen :class:`BoxSettlement` per box, the single projection
that the dual check (seat vs dealer), the seat view and the reporters read (issue #15), and
its JSON (what `betbox settle` prints, what the units compare, what the journal recalls),
derived from it so the wire format stays as it was."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable

from .hand import hand_total
from .money import to_json_number, whole_amount, whole_by_id
from .outcomes import BetReturned, WagerFlagged, record_maker
from .round import Box, Hand, Phase, Round

ZERO = whole_amount(0)
_VOID, _COMPLETE = Phase.VOID, Phase.COMPLETE


@dataclass(frozen=True, slots=True)
class HandSettlement:
    """One hand as settled: its cards, total and result (None in a void round)."""

    id: int
    cards: tuple[str, ...]
    total: int
    soft: bool
    result: str | None
    stake: Fraction
    doubled: Fraction
    switched: bool | None          # None unless the profile is Blackjack Switch

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": self.id, "cards": list(self.cards), "total": self.total,
                                 "soft": self.soft, "result": self.result, "stake": to_json_number(self.stake)}
        if self.doubled is not ZERO and self.doubled:      # (Fraction's bool is Python code)
            entry["doubled"] = to_json_number(self.doubled)
        if self.switched is not None:
            entry["switched"] = self.switched
        return entry


@dataclass(frozen=True, slots=True)
class ProgressiveSettlement:
    """A box's progressive wager as judged: the hand it hit (None: no hit) and the award."""

    hand: str | None
    award: Fraction | None


@dataclass(frozen=True, slots=True)
class BoxSettlement:
    """One box's settlement. ``bets`` is each bet's net as the engine booked it (all zero
    once a round is voided, §5.17); ``returned_bets`` names every bet a void round returns
    (the JSON's ``bets`` then); ``net`` is the box's total (zero in a void round)."""

    box: int
    void: bool
    hands: tuple[HandSettlement, ...]
    wagered: tuple[tuple[str, Fraction], ...]
    bets: tuple[tuple[str, Fraction], ...]
    returned_bets: tuple[str, ...]
    net: Fraction
    side_results: tuple[tuple[str, str | None], ...]
    progressive: ProgressiveSettlement | None      # None: no progressive wager
    envy_from: tuple[int, ...]                     # boxes whose hit pays this box an envy bonus
    insurance: tuple[tuple[int, Fraction], ...]    # family -> stake
    flags: tuple[WagerFlagged, ...]
    returned: tuple[BetReturned, ...]
    walked_away: bool

    def bet_net(self, bet: str) -> Fraction:
        """The net of one bet (zero when it has none booked)."""
        return dict(self.bets).get(bet, ZERO)

    def stake(self, bet: str) -> Fraction | None:
        """What the box put at risk on one bet (None: no such wager)."""
        return dict(self.wagered).get(bet)

    def category(self, bet: str) -> str | None:
        """A side bet's paying category (None: it did not pay, or was not judged)."""
        return dict(self.side_results).get(bet)

    def to_json(self) -> dict[str, Any]:
        """The box's entry in the settlement JSON (the wire and journal format)."""
        if self.void:
            bets: dict[str, int | float | str] = dict.fromkeys(self.returned_bets, 0)
        else:
            bets = _json_amounts(self.bets)
        b: dict[str, Any] = {
            "hands": [h.to_json() for h in self.hands],
            "wagered": _json_amounts(self.wagered),
            "bets": bets,
            "net": to_json_number(self.net),
        }
        if self.side_results and not self.void:
            b["side_bets"] = dict(self.side_results)
        if self.progressive is not None:
            award = self.progressive.award
            b["progressive"] = {"hand": self.progressive.hand,
                                "award": None if award is None else to_json_number(award)}
        if self.insurance:
            b["insurance"] = {str(f + 1): to_json_number(a) for f, a in self.insurance}
        if self.flags:
            b["flags"] = [{"bet": f.bet, "issue": f.issue, "placed": to_json_number(f.placed),
                           "counted": to_json_number(f.counted), "clause": f.clause} for f in self.flags]
        if self.returned:
            b["returned"] = [{"bet": r.bet, "amount": to_json_number(r.amount), "reason": r.reason,
                              "clause": r.clause} for r in self.returned]
        if self.walked_away:
            b["walked_away"] = True
        return b


def _json_amounts(pairs: Iterable[tuple[str, Fraction]]) -> dict[str, int | float | str]:
    """``{name: to_json_number(amount)}``; a shared whole amount by a look-up, without the call."""
    out: dict[str, int | float | str] = {}
    for name, amount in pairs:
        whole = whole_by_id.get(id(amount))
        out[name] = whole if whole is not None else to_json_number(amount)
    return out


#: the projection's records made field by field (the same frozen types, a third of the time)
_hand_settlement = record_maker(HandSettlement)
_box_settlement = record_maker(BoxSettlement)


def box_settlement(state: Round, number: int) -> BoxSettlement | None:
    """One box's settlement; None when the box has no bets this round. A seat reads its own
    box's only: that box is projected, not the whole round (unless it already was)."""
    global _last_box
    seen, found = _last
    if seen is state:
        for b in found:
            if b.box == number:
                return b
        return None
    seen, seen_number, one = _last_box
    if seen is state and seen_number == number:
        return one
    one = None
    for box in state.boxes:
        if box.number == number:
            one = _settle_box(box, state.phase is Phase.VOID, state.profile.is_switch)
            break
    _last_box = (state, number, one)
    return one


#: the last round projected and its settlements: a round never changes once ``apply`` has
#: returned it, so the dual check, the seat view and the reporters reading the same round
#: share one projection (one entry: it keeps one round alive at most)
_last: tuple[object, tuple[BoxSettlement, ...]] = (None, ())
#: likewise the last box projected alone (:func:`box_settlement`: the seat's own box)
_last_box: tuple[object, int, BoxSettlement | None] = (None, 0, None)


def box_settlements(state: Round) -> tuple[BoxSettlement, ...]:
    """Every box's settlement, in the round's box order (projected once per round)."""
    global _last
    seen, found = _last
    if seen is state:
        return found
    void = state.phase is Phase.VOID
    switch = state.profile.is_switch
    found = tuple(_settle_box(box, void, switch) for box in state.boxes)
    _last = (state, found)
    return found


def _total(amounts: Iterable[Fraction]) -> Fraction:
    """The exact sum; whole amounts (the usual case) on integers, not Fraction additions."""
    whole = 0
    rest: Fraction | None = None        # (None, not ZERO: Fraction's bool is Python code)
    by_id = whole_by_id.get
    for amount in amounts:
        n = by_id(id(amount))
        if n is not None:
            whole += n
        elif amount.denominator == 1:
            whole += amount.numerator
        else:
            rest = amount if rest is None else rest + amount
    return whole_amount(whole) if rest is None or not rest else whole_amount(whole) + rest


def _wagered(box: Box) -> tuple[tuple[str, Fraction], ...]:
    """What the box put at risk per bet (:meth:`Round.wagered`, without finding the box again)."""
    out: list[tuple[str, Fraction]] = []
    hands = box.hands
    for name, stake in box.stakes.items():
        if name != "main":
            out.append((name, stake))
        elif len(hands) == 1:
            out.append((name, hands[0].at_risk))
        else:
            out.append((name, _total([h.at_risk for h in hands])))
    if box.insurance:
        out.append(("insurance", _total(box.insurance.values())))
    return tuple(out)


def _settle_box(box: Box, void: bool, switch: bool) -> BoxSettlement:
    hands = []
    for hand in box.hands:
        cards = hand.cards
        total, soft = hand_total(cards)
        # rank + suit is the card's text (Card.__str__), without a Python-level call per card
        hands.append(_hand_settlement(hand.id, tuple([c.rank + c.suit for c in cards]), total, soft,
                                      None if void else hand.result, hand.stake, hand.doubled,
                                      hand.switched if switch else None))
    # §5.17: every bet of a voided round is returned
    returned_bets = tuple(dict.fromkeys([*box.wagers, *box.ledger, *(["insurance"] if box.insurance else [])])) \
        if void else ()
    progressive = None
    if "progressive" in box.stakes:
        progressive = ProgressiveSettlement(box.progressive_hand, box.progressive_award)
    ledger = box.ledger
    insurance = box.insurance
    return _box_settlement(
        box.number, void, tuple(hands), _wagered(box), tuple(ledger.items()), returned_bets,
        ZERO if void else _total(ledger.values()), tuple(box.side_results.items()), progressive,
        # (most boxes have none of these: the empty tuple without a call)
        tuple(box.envy_from) if box.envy_from else (), tuple(sorted(insurance.items())) if insurance else (),
        tuple(box.flags) if box.flags else (), tuple(box.returned) if box.returned else (), box.walked_away)


def settlement(state: Round) -> dict[str, Any]:
    """The round's settlement as JSON-ready data: each box's entry is its BoxSettlement's
    JSON (:func:`_box_json` writes the usual box's straight from the round, the same text)."""
    phase = state.phase
    void = phase is _VOID            # (a module constant: Phase.VOID is a class attribute look-up)
    profile = state.profile
    dealer = state.dealer
    dealer_total = hand_total(dealer)[0] if dealer else None
    if void:
        out: dict[str, Any] = {"profile": profile.name, "decks": state.decks, "void": void,
                               "reason": state.void_reason, "clause": state.void_clause, "complete": True}
    else:
        out = {"profile": profile.name, "decks": state.decks, "void": void, "complete": phase is _COMPLETE}
    texts = []                          # str(card) of each, without a call per card or a comprehension's
    for c in dealer:
        texts.append(c.rank + c.suit)
    out["dealer"] = {"cards": texts, "total": dealer_total,
                     "blackjack": len(dealer) == 2 and dealer_total == 21}     # (Round.dealer_blackjack)
    seen, found = _last
    if void or seen is state:
        out["boxes"] = {str(b.box): b.to_json() for b in box_settlements(state)}
    else:
        # JSON only: no frozen projection made just to be written out and dropped
        switch = profile.is_switch
        boxes: dict[str, Any] = {}
        for box in state.boxes:             # (a loop: a comprehension is a call of its own)
            number = box.number
            boxes[_NUMBER_TEXT[number] if 0 < number < 16 else str(number)] = _box_json(box, switch)
        out["boxes"] = boxes
    return out


#: a box number's text (the JSON's key), for the usual numbers
_NUMBER_TEXT = tuple(str(n) for n in range(16))


def _box_json(box: Box, switch: bool) -> dict[str, Any]:
    """``_settle_box(box, False, switch).to_json()`` written straight from the box for the
    usual box (no insurance, flags, returned bets or walk-away: those go through the
    projection). test_properties.py::test_the_settlement_written_from_the_round_is_its_projections_json_byte_for_byte
    holds the two equal, key order included."""
    if box.insurance or box.flags or box.returned or box.walked_away:
        return _settle_box(box, False, switch).to_json()
    played = box.hands
    if len(played) == 1:                # the usual box: one hand, its amount at risk without a sum
        hand = played[0]
        hands = [_hand_json(hand, switch)]
        risk = hand.stake if hand.doubled is ZERO else hand.at_risk
    else:
        hands = [_hand_json(h, switch) for h in played]
        risk = _total([h.at_risk for h in played])
    stakes = box.stakes
    ledger = box.ledger
    # (_box_memo looked up here, not through a call per box; _box_parts makes a missing entry)
    found = _box_memo.get((id(stakes), id(risk), id(ledger)))
    if found is None or found[0] is not stakes or found[1] is not risk or found[2] is not ledger:
        found = _box_parts(stakes, risk, ledger)
    b: dict[str, Any] = {"hands": hands, "wagered": found[3].copy(), "bets": found[4].copy(), "net": found[5]}
    if side := box.side_results:
        b["side_bets"] = side.copy()
    if "progressive" in stakes:
        award = box.progressive_award
        b["progressive"] = {"hand": box.progressive_hand,
                            "award": None if award is None else to_json_number(award)}
    return b


def _hand_json(hand: Hand, switch: bool) -> dict[str, Any]:
    """A hand's entry in :func:`_box_json` (``HandSettlement.to_json``'s text)."""
    cards = hand.cards
    total, soft = hand_total(cards)
    if len(cards) == 2:     # the usual hand: written without a comprehension's call
        first, second = cards
        texts = [first.rank + first.suit, second.rank + second.suit]
    else:
        texts = [c.rank + c.suit for c in cards]
    stake = hand.stake
    whole = whole_by_id.get(id(stake))
    entry: dict[str, Any] = {"id": hand.id, "cards": texts, "total": total, "soft": soft, "result": hand.result,
                             "stake": whole if whole is not None else to_json_number(stake)}
    doubled = hand.doubled
    if doubled is not ZERO and doubled:
        entry["doubled"] = to_json_number(doubled)
    if switch:
        entry["switched"] = hand.switched
    return entry


def _bets_json(ledger: dict[str, Fraction]) -> tuple[dict[str, int | float | str], int | float | str]:
    """Each bet's net and the box's net as JSON, in one pass: whole amounts on ints (a shared
    one by a look-up), the exact sum of any others (:func:`_total`'s)."""
    by_id = whole_by_id.get
    bets: dict[str, int | float | str] = {}
    net = 0
    rest: Fraction | None = None
    for name, amount in ledger.items():
        whole = by_id(id(amount))
        if whole is None:
            if amount.denominator != 1:
                bets[name] = to_json_number(amount)
                rest = amount if rest is None else rest + amount
                continue
            whole = amount.numerator        # a whole amount that is not a shared one
        bets[name] = whole
        net += whole
    return bets, (net if rest is None else to_json_number(whole_amount(net) + rest))


#: a box's wagered JSON, bets JSON and net by the identities of its stakes, its main bet's
#: amount at risk and its ledger: a box's stakes and ledger are replaced, never changed in
#: place once it belongs to a round ``apply`` returned (Box), rounds share them (the same
#: wagers make the same box; the engine books the same net on the same ledger as the same
#: new ledger) and an amount is immutable. An entry holds all three objects, so no id can
#: be another object's while it is kept; bounded (emptied when full); what it gives out is
#: a copy (a caller may change its settlement without changing the next round's).
MEMO_LIMIT = 4096
JsonAmounts = dict[str, int | float | str]
BoxParts = tuple[dict[str, Fraction], Fraction, dict[str, Fraction], JsonAmounts, JsonAmounts, int | float | str]
_box_memo: dict[tuple[int, int, int], BoxParts] = {}


def _box_parts(stakes: dict[str, Fraction], risk: Fraction, ledger: dict[str, Fraction]) -> BoxParts:
    """What the box put at risk per bet (``risk`` on the main bet), each bet's net and the
    box's net, as JSON, remembered in :data:`_box_memo` (:func:`_box_json` looks it up)."""
    key = (id(stakes), id(risk), id(ledger))
    found = _box_memo.get(key)
    if found is None or found[0] is not stakes or found[1] is not risk or found[2] is not ledger:
        wagered: JsonAmounts = {}
        for name, stake in stakes.items():
            if name == "main":
                stake = risk
            whole = whole_by_id.get(id(stake))
            wagered[name] = whole if whole is not None else to_json_number(stake)
        found = (stakes, risk, ledger, wagered, *_bets_json(ledger))
        if len(_box_memo) >= MEMO_LIMIT:
            _box_memo.clear()
        _box_memo[key] = found
    return found
