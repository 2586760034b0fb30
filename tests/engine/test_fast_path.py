"""issue 17 item 4: the fast path's shortcuts give the same answers as the long way.

``why_not`` remembers the last decision it found legal so that ``apply`` of that very
decision on that very round is not checked twice; the settlement projection is made once per
round; the hot records (outcomes, settlements, the shoe) are made without the frozen
dataclass ``__init__``; whole amounts come from a shared table."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest

from firmware.engine.cards import ALL_CARDS, ShoeComposition, parse_card
from firmware.engine.errors import NotYourTurn, RuleError
from firmware.engine.events import Action, Decision
from firmware.engine.money import parse_amount, whole_amount
from firmware.engine.outcomes import HandSettled, SideBetSettled, hand_settled, record_maker, side_bet_settled
from firmware.engine.settlement import BoxSettlement, HandSettlement, box_settlements, settlement

from .helpers import start, step


def _two_boxes():
    # box 1: TS 6H (16), box 2: 9C 5D (14); dealer 7S; box 1 in play
    return start("rws-blackjack", {1: {"main": 10}, 2: {"main": 10}}, ["TS", "9C", "7S", "6H", "5D"])


def test_a_decision_found_legal_on_one_round_is_still_checked_on_the_next():
    first = _two_boxes()
    hit = Decision(1, Action.HIT)
    assert first.why_not(hit) is None
    later, _ = first.apply(Decision(1, Action.STAND))        # box 2 is in play now
    with pytest.raises(NotYourTurn):
        later.apply(hit)                                      # the same object: checked again


def test_a_refused_decision_is_not_remembered_as_legal():
    state = _two_boxes()
    wrong = Decision(2, Action.HIT)
    assert state.why_not(wrong) is not None
    with pytest.raises(RuleError):
        state.apply(wrong)


def test_apply_after_why_not_is_the_same_round_as_apply_alone():
    state = _two_boxes()
    double = Decision(1, Action.DOUBLE)
    checked_first = state.why_not(double) is None
    assert checked_first
    after_check, out_check = state.apply(double)
    plain, out_plain = _two_boxes().apply(Decision(1, Action.DOUBLE))
    after_check, out_check = step(after_check, "2C")
    plain, out_plain2 = step(plain, "2C")
    assert out_check == out_plain2 and settlement(after_check) == settlement(plain)


def test_settlements_are_each_rounds_own_when_read_in_turn():
    a = _two_boxes()
    b, _ = step(a, (1, "stand"), (2, "stand"), "TD")         # dealer 7S TD: 17, both lose
    a_first = box_settlements(a)
    b_first = box_settlements(b)
    assert box_settlements(a) == a_first and box_settlements(b) == b_first
    assert [x.net for x in b_first] == [Fraction(-10), Fraction(-10)]
    assert [x.net for x in a_first] == [Fraction(0), Fraction(0)]
    assert box_settlements(a) is box_settlements(a)           # made once while it is the last read


def test_fast_records_equal_the_dataclass_ones_with_every_field_set():
    made = hand_settled(3, 2, "win", Fraction(15, 2), "rws §3.20")
    assert made == HandSettled(3, 2, "win", Fraction(15, 2), "rws §3.20")
    side = side_bet_settled(1, "player_pair", "pair", Fraction(11), Fraction(5), Fraction(55), "c")
    assert side == SideBetSettled(1, "player_pair", "pair", Fraction(11), Fraction(5), Fraction(55), "c")
    for record in (made, side):
        assert all(hasattr(record, f.name) for f in dataclasses.fields(record))
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.box = 9                                    # type: ignore[misc]
    make = record_maker(HandSettlement)
    values = (1, ("AS", "KD"), 21, True, "blackjack", Fraction(10), Fraction(0), None)
    assert make(*values) == HandSettlement(*values)
    with pytest.raises(TypeError, match="positional argument"):
        record_maker(BoxSettlement)(1, False)


def test_the_shoe_after_a_draw_is_an_ordinary_composition():
    shoe = ShoeComposition.of_decks(1)
    card = parse_card("QH")
    after = shoe.take(card)
    assert after == ShoeComposition(tuple(0 if c == card else 1 for c in ALL_CARDS))
    assert after is not None and after.take(card) is None and len(after) == 51
    with pytest.raises(dataclasses.FrozenInstanceError):
        after.counts = ()                                     # type: ignore[misc]


def test_whole_amounts_are_exact_fractions():
    for n in (0, 5, -10, 10**30):
        assert whole_amount(n) == Fraction(n) and type(whole_amount(n)) is Fraction
    assert parse_amount(25) is whole_amount(25)
    assert parse_amount("12.5") == Fraction(25, 2)


def test_the_round_reads_its_shoe_from_the_cards_drawn():
    """The round keeps the shoe it started from and the cards drawn; ``shoe`` is what is left,
    and a card the shoe no longer holds is the foreign card of §5.5.1 (not drawn)."""
    from firmware.engine.events import BetsClosed, CardDrawn
    from firmware.engine.profile import load_profile
    from firmware.engine.round import Round

    start = ShoeComposition.of_decks(4).without([parse_card("AS")] * 3)    # one AS left
    state = Round.new(load_profile("rws-blackjack"), decks=4, shoe=start)
    assert state.shoe == start
    state, _ = state.apply(BetsClosed.of({1: {"main": 10}}))
    state, _ = state.apply(CardDrawn(parse_card("AS")))
    assert state.shoe == start.without([parse_card("AS")]) and state.shoe.count(parse_card("AS")) == 0
    before = state.shoe
    state, _ = state.apply(CardDrawn(parse_card("AS")))                   # a fifth AS: foreign
    assert state.void_reason is not None and state.void_reason.startswith("foreign_card")
    assert state.shoe == before
