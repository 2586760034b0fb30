"""The settlement JSON's memo and its single-box projection (issue 17 speed, session 8): a
memo entry is never given out for a box it does not describe, it stays bounded, what it
gives out is the caller's own, and a seat's own box projected alone is the box the whole
round's projection holds. Each JSON is compared with the frozen projection's (no memo)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

import firmware.engine.settlement as settle_module
from firmware.engine.events import BetsClosed
from firmware.engine.money import whole_amount
from firmware.engine.profile import load_profile
from firmware.engine.round import Round
from firmware.engine.settlement import box_settlement, box_settlements, settlement

from .helpers import start, step

#: one "no more bets" for every round, as at a table where the same wagers recur: the
#: engine then makes the same boxes (the same stakes), so the memo is keyed alike
BETS = BetsClosed.of({1: {"main": 10, "player_pair": 5}, 2: {"main": 10, "player_pair": 5}})
PROFILE = load_profile("rws-blackjack")


def _start(cards: list[str]) -> Round:
    state, _ = Round.new(PROFILE).apply(BETS)
    return step(state, *cards)[0]


def _projected(state: Round) -> str:
    """The boxes' JSON from the frozen projection (``BoxSettlement.to_json``: no memo)."""
    return json.dumps({str(b.box): b.to_json() for b in box_settlements(state)})


def _direct(state: Round) -> str:
    """The boxes' JSON as ``settlement`` writes it straight from the round (memo included)."""
    settle_module._last = (None, ())          # nothing projected yet: the direct path
    return json.dumps(settlement(state)["boxes"])


def _doubled_or_not(double: bool) -> Round:
    """Box 1 holds 6+5 against a dealer 6 and doubles or hits to 20; the same wagers either
    way (so the same box, the same stakes), box 2 stands on 20; the dealer draws to 26."""
    state = _start(["6S", "TH", "6D", "5C", "KD"])
    state, _ = step(state, (1, "double" if double else "hit"), "9H")      # box 1: 20
    if not double:
        state, _ = step(state, (1, "stand"))
    state, _ = step(state, (2, "stand"), "TC", "KC")   # dealer 6 + T + K = 26
    assert state.is_over
    return state


def _net_differs(*dealer: str) -> Round:
    """The same two boxes standing on 19 and 20 against a dealer ten; only the dealer's
    draw (and so box 1's main net: win, push or lose) differs."""
    state = _start(["9S", "TH", "TD", "KC", "KD"])
    state, _ = step(state, (1, "stand"), (2, "stand"), *dealer)
    assert state.is_over
    return state


def test_boxes_that_differ_only_in_the_amount_at_risk_get_their_own_wagered_json():
    doubled, stood = _doubled_or_not(True), _doubled_or_not(False)
    # the same wagers made the same stakes for box 1: only its amount at risk tells them apart
    assert doubled.box(1).stakes is stood.box(1).stakes
    for _ in range(2):                          # the second pass reads the memo
        for state in (doubled, stood):
            assert _direct(state) == _projected(state)
    d, s = json.loads(_direct(doubled))["1"], json.loads(_direct(stood))["1"]
    assert (d["wagered"]["main"], s["wagered"]["main"]) == (20, 10)
    assert (d["bets"]["main"], s["bets"]["main"]) == (20, 10)


def test_rounds_that_differ_only_in_one_net_give_different_json():
    won, pushed, lost = _net_differs("6C", "KH"), _net_differs("9C"), _net_differs("TC")   # dealer 26, 19, 20
    texts = []
    for _ in range(2):
        for state in (won, pushed, lost):
            assert _direct(state) == _projected(state)
            texts.append(_direct(state))
    assert len(set(texts)) == 3
    nets = [json.loads(_direct(s))["1"]["bets"]["main"] for s in (won, pushed, lost)]
    assert nets == [10, 0, -10]


def test_a_caller_changing_its_settlement_does_not_change_the_next_one():
    state = _doubled_or_not(False)
    first = settlement(state)
    first["boxes"]["1"]["wagered"]["main"] = 999
    first["boxes"]["1"]["bets"].clear()
    again = _doubled_or_not(False)
    assert _direct(again) == _projected(again)
    assert json.loads(_direct(again))["1"]["wagered"]["main"] == 10


def test_the_memo_stays_bounded_and_right_when_it_is_emptied(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(settle_module, "MEMO_LIMIT", 4)
    monkeypatch.setattr(settle_module, "_box_memo", {})
    for main in range(5, 30):
        state = start("rws-blackjack", {1: {"main": main, "player_pair": 5}}, ["9S", "TH", "TD"])
        state, _ = step(state, (1, "stand"), "8C")
        assert _direct(state) == _projected(state)
        assert json.loads(_direct(state))["1"]["wagered"] == {"main": main, "player_pair": 5}
        assert len(settle_module._box_memo) <= 4


def test_amounts_that_are_not_shared_whole_amounts_are_written_exactly():
    """A half (3:2 on 5 is 7.5) is written exactly and summed exactly; a whole net made as a
    fresh Fraction (the progressive wager's loss is one), not a shared whole amount, is
    written as the int it is."""
    bets, net = settle_module._bets_json({"main": Fraction(15, 2), "progressive": Fraction(-5)})
    assert (bets, net) == ({"main": 7.5, "progressive": -5}, 2.5)
    bets, net = settle_module._bets_json({"a": Fraction(-5), "b": whole_amount(3)})
    assert (bets, net) == ({"a": -5, "b": 3}, -2) and type(net) is int
    bets, net = settle_module._bets_json({"a": Fraction(1, 4), "b": Fraction(1, 4)})
    assert (bets, net) == ({"a": 0.25, "b": 0.25}, 0.5)


def test_a_seats_own_box_projected_alone_is_the_rounds_projection_of_it():
    for state in (_doubled_or_not(True), _net_differs("6C", "KH")):
        settle_module._last = (None, ())
        alone = {n: box_settlement(state, n) for n in (1, 2, 3)}
        assert alone[3] is None
        whole = {b.box: b for b in box_settlements(state)}
        assert alone[1] == whole[1] and alone[2] == whole[2]
        assert box_settlement(state, 2) == whole[2]


def test_the_exact_sum_gives_the_shared_whole_amount_when_the_halves_cancel():
    total = settle_module._total
    assert total([Fraction(1, 2), Fraction(-1, 2), whole_amount(3)]) is whole_amount(3)
    assert total([Fraction(1, 2), whole_amount(1), Fraction(-4)]) == Fraction(-5, 2)
    assert total([Fraction(7), whole_amount(-2)]) is whole_amount(5)
    assert total([]) is whole_amount(0)
