"""The round's end as remembered (issue 17 speed, session 9 "end"): a box of one hand
settled at the end of the round by what decides it (``round._ONE_HAND``), the ledgers
booked on ``main`` shared round to round (``round._BOOKED``) and the settlement's bets
JSON remembered by the stakes, amount at risk and ledger (``settlement._box_memo``). Many rounds with the same
wagers (as at a table, and as the memos are keyed alike) are played with the memos warm,
then each round is replayed with every memo empty: the rounds, outcomes and settlement
JSON must be byte for byte the same. A memo keyed on less than decides it (a hand's total,
the ledger, the amount at risk, the dealer) gives another round here."""

from __future__ import annotations

import json
import pickle
import random
from contextlib import contextmanager
from fractions import Fraction
from typing import Iterator

import pytest

import firmware.engine.round as round_module
import firmware.engine.settlement as settle_module
from firmware.engine.cards import ShoeComposition, parse_card
from firmware.engine.errors import RuleError
from firmware.engine.events import Action, BetsClosed, CardDrawn, Decision
from firmware.engine.hand import hand_total
from firmware.engine.outcomes import HandSettled
from firmware.engine.profile import load_profile, profile_names
from firmware.engine.round import Round, replay
from firmware.engine.settlement import settlement

from .helpers import step
from .test_properties import LongWayDriver, given_rounds, replaced, serialised

#: the same wagers every round per profile (the profile's side bets where it has them);
#: box 3 bets more, so boxes differ in their amounts at risk too
SIDE = {"rws-blackjack": ("player_pair", "under_13", "over_13"),
        "uk-4-deck": ("super_pairs", "twenty_one_plus_three", "top_3"),
        "rws-blackjack-switch": ("progressive",)}


def _wagers(name: str) -> BetsClosed:
    sides = {bet: 5 for bet in SIDE.get(name, ()) if bet in load_profile(name).bet_names()}
    return BetsClosed.of({n: {"main": 25 if n == 3 else 10, **sides} for n in range(1, 8)})


@contextmanager
def cold() -> Iterator[None]:
    """Within: every memo of the round's end and of the settlement JSON empty (saved and
    put back after), so nothing is taken as remembered."""
    names = [(round_module, "_ONE_HAND"), (round_module, "_BOOKED"), (round_module, "_ROUND_COMPLETE"),
             (settle_module, "_box_memo")]
    saved = [getattr(m, n) for m, n in names]
    plans = dict(round_module._PLANS)
    for m, n in names:
        setattr(m, n, {})
    round_module._PLANS.clear()
    settle_module._last = (None, ())
    try:
        yield
    finally:
        for (m, n), value in zip(names, saved, strict=True):
            setattr(m, n, value)
        round_module._PLANS.clear()
        round_module._PLANS.update(plans)
        settle_module._last = (None, ())


def _play(profile, bets: BetsClosed, rnd: random.Random, shoe: list) -> Round:
    """One round of random legal play: each decision drawn among the legal ones."""
    state, _ = Round.new(profile).apply(bets)
    while True:
        expect = state.expecting()
        if expect.kind == "card":
            if not shoe:
                shoe.extend(CardDrawn(c) for c in rnd.sample(_CARDS, len(_CARDS)))
            state, _ = state.apply(shoe.pop())
            continue
        if expect.kind != "decision":
            return state
        legal = [a for a, why in state.legal_decisions(expect.box, expect.hand).items()
                 if why is None and a in (Action.HIT, Action.STAND, Action.DOUBLE, Action.SPLIT,
                                          Action.SURRENDER)]
        rnd.shuffle(legal)
        for action in legal:
            try:
                state, _ = state.apply(Decision(expect.box, action))
                break
            except RuleError:       # (asked of the box's first hand; try the next)
                continue
        else:
            raise AssertionError(f"no decision taken at {expect}: {state.history!r}")


_CARDS = [parse_card(r + s) for r in "A23456789TJQK" for s in "SHDC"] * 6


def _same_cold(state: Round, warm_outcomes: list) -> None:
    profile = state.profile
    warm = serialised(state)
    settle_module._last = (None, ())
    warm_json = json.dumps(settlement(state))
    with cold():
        again, outcomes = replay(profile, state.history)
        assert serialised(again) == warm, f"{profile.name}: {state.history!r} differs with the memos empty"
        assert outcomes == warm_outcomes
        assert json.dumps(settlement(again)) == warm_json


@pytest.mark.parametrize("name", profile_names())
def test_rounds_with_the_memos_warm_are_the_rounds_with_them_empty(name):
    """300 rounds a profile with the same wagers, the memos warm from the rounds before: each
    replayed with every memo empty gives the same round, outcomes and settlement JSON."""
    profile = load_profile(name)
    bets = _wagers(name)
    rnd = random.Random(name)
    shoe: list = []
    for _ in range(300):
        state = _play(profile, bets, rnd, shoe)
        _, outcomes = replay(profile, state.history)        # (warm, as played)
        _same_cold(state, outcomes)


RWS = load_profile("rws-blackjack")
RWS_BETS = BetsClosed.of({1: {"main": 10, "player_pair": 5, "under_13": 5, "over_13": 5}})


def _stand_against(hand_cards: list[str], dealer_draw: list[str]) -> tuple[Round, list]:
    """Box 1 (main 10 and the side bets 5) holds ``hand_cards`` and stands; the dealer's up
    card is a ten and it draws ``dealer_draw``. The same profile and wagers every time, so
    the same box (its stakes dict), as at a table where the wagers recur."""
    state, _ = Round.new(RWS).apply(RWS_BETS)
    return step(state, hand_cards[0], "TS", hand_cards[1], (1, "stand"), *dealer_draw)


@pytest.mark.parametrize("first,second", [
    (("9H", "8C"), ("9D", "9C")),      # the same box, ledger and dealer: only the total differs
    (("9H", "9C"), ("9D", "8C")),
])
def test_a_box_settled_as_remembered_is_settled_on_its_own_total(first, second):
    """Two rounds of the same box against the same dealer (T + 8), one hand on 17 and one on
    18 (lose, then stand off, and the other way round): each settles on its own total."""
    results = {}
    for cards in (first, second):
        state, outcomes = _stand_against(list(cards), ["8D"])
        (settled,) = [o for o in outcomes if isinstance(o, HandSettled)]
        total = state.box(1).hands[0].total
        results[total] = (settled.result, settled.net, state.box(1).ledger["main"])
    assert results == {17: ("lose", Fraction(-10), Fraction(-10)), 18: ("stand_off", 0, 0)}


def test_a_dealer_bust_and_a_dealer_total_each_settle_as_the_long_way():
    """The same box (17) against a dealer bust and dealer totals of 17, 18 and 19: the memo
    keys them apart; each round equals its replay with the memos empty. (Blackjack Switch's
    dealer 22, §3.19.2, is in the 300 random rounds above.)"""
    seen = set()
    for draw in (["6D", "8C"], ["7D"], ["8D"], ["9D"]):        # T+6+8=24, 17, 18, 19
        state, outcomes = _stand_against(["9H", "8C"], draw)
        (settled,) = [o for o in outcomes if isinstance(o, HandSettled)]
        seen.add(settled.result)
        _same_cold(state, replay(state.profile, state.history)[1])
    assert seen == {"win", "stand_off", "lose"}


def test_the_booked_ledgers_are_shared_round_to_round_and_never_changed_in_place():
    """The same box settled the same way twice holds the very same ledger (so the settlement
    JSON is remembered by it); the round before the final card still holds its own."""
    a, _ = _stand_against(["9H", "9C"], ["9D"])
    b, _ = _stand_against(["9S", "9D"], ["9H"])
    assert a.box(1).ledger is b.box(1).ledger
    before = pickle.dumps(dict(a.box(1).ledger))
    c, _ = _stand_against(["9H", "9C"], ["5D", "KD"])       # the same box won: another ledger
    assert c.box(1).ledger is not a.box(1).ledger
    assert pickle.dumps(dict(a.box(1).ledger)) == before


def test_the_json_of_a_ledger_is_the_callers_own_and_the_memo_bounded(monkeypatch):
    """What the box memo gives out may be changed by its caller without changing the next
    round's; the memo stays within its limit and is right after it was emptied; boxes of the
    same stakes and amount at risk that differ only in their ledger get their own bets."""
    monkeypatch.setattr(settle_module, "MEMO_LIMIT", 4)
    monkeypatch.setattr(settle_module, "_box_memo", {})
    state, _ = _stand_against(["9H", "9C"], ["9D"])
    settle_module._last = (None, ())
    first = settlement(state)
    assert first["boxes"]["1"]["bets"] == {"player_pair": 55, "under_13": -5, "over_13": 5, "main": -10}
    first["boxes"]["1"]["bets"]["main"] = 999
    first["boxes"]["1"]["wagered"]["main"] = 999
    again = settlement(state)["boxes"]["1"]
    assert (again["bets"]["main"], again["wagered"]["main"], again["net"]) == (-10, 10, 45)
    stakes, hands = state.box(1).stakes, state.box(1).hands
    ledgers = [{**state.box(1).ledger, "main": Fraction(n)} for n in range(10)]
    for _ in range(2):
        for n, ledger in enumerate(ledgers):
            *_, wagered, bets, net = settle_module._box_parts(stakes, hands[0].stake, ledger)
            assert (wagered["main"], bets["main"], net) == (10, n, 55 + n)
            assert len(settle_module._box_memo) <= 4


class SecondCardLongWay(LongWayDriver):
    """Applies every event twice: as ``apply`` does and with the dealer's second card read
    the long way (every box, :meth:`Round._second_card_settles`): the same round, outcomes."""

    way = staticmethod(lambda: replaced(_settle_dealer_second_card=Round._second_card_settles))


@given_rounds(examples=60)
def test_the_dealers_second_card_settles_as_the_long_way(table, rnd):
    """Where the up card is neither an Ace nor (Blackjacks paid at once) a ten, the dealer's
    second card settles nothing and is not looked for box by box: no insurance (offered only
    against an Ace, §3.14), no Blackjack waiting (§3.15). Random play with insurance, even
    money, surrender and walk-aways thrown in: every event gives the long way's round."""
    assert SecondCardLongWay(table, rnd, check_illegal=True).play().state.is_over


def test_the_settlements_two_and_three_card_counts_are_hand_totals():
    """settlement() writes each hand's total and softness as hand_total counts them: hands of
    two, three and four cards."""
    for cards, hits in ((["AH", "5C"], []), (["2H", "3C"], ["AD"]), (["2H", "AC"], ["AD", "3S"])):
        state, _ = Round.new(RWS).apply(RWS_BETS)
        events = [cards[0], "TS", cards[1]]
        for card in hits:
            events += [(1, "hit"), card]
        state, _ = step(state, *events, (1, "stand"), "9D")
        (hand,) = state.box(1).hands
        assert len(hand.cards) == 2 + len(hits)
        entry = settlement(state)["boxes"]["1"]["hands"][0]
        assert (entry["total"], entry["soft"]) == hand_total(hand.cards)


class DealerCardLongWay(LongWayDriver):
    """Applies every event twice: as ``apply`` does and with the dealer's card taken the long
    way (``_apply``'s ``_card`` and ``_advance``: :meth:`Round._dealer_card` off)."""

    way = staticmethod(lambda: replaced(_dealer_card=lambda self, card: None))


@given_rounds(examples=60)
def test_a_card_to_the_dealer_gives_the_long_ways_round(table, rnd):
    """A card to the dealer is applied without the general dispatch (:meth:`Round._dealer_card`):
    every event of random play (insurance, surrender, splits, walk-aways) gives the round and
    outcomes that ``_card`` and ``_advance`` give, the dealer's second card, its draws, the
    final settlement and Blackjack Switch's push 22 among them."""
    assert DealerCardLongWay(table, rnd, check_illegal=True).play().state.is_over


def test_the_dealers_cards_take_the_shortcut_and_a_foreign_one_the_long_way(monkeypatch):
    """``apply`` takes the shortcut for the dealer's cards (so the test above compares
    something), and a card the shoe cannot hold, dealt to the dealer, voids the round as the
    long way does (§5.5.1)."""
    taken = []
    shortcut = Round._dealer_card
    monkeypatch.setattr(Round, "_dealer_card", lambda self, card: taken.append(card) or shortcut(self, card))
    state, _ = Round.new(RWS).apply(BetsClosed.of({1: {"main": 10}}))
    state, _ = step(state, "9H", "5S", "9C", (1, "stand"), "6D", "8D")       # 5+6 = 11, +8 = 19
    assert [str(c) for c in taken] == ["6D", "8D"] and state.is_over
    # a shoe without the ten of spades: the dealer's card is foreign to it
    shoe = ShoeComposition.from_counts({c: 6 for c in _CARDS if str(c) != "TS"})
    state, _ = step(Round.new(RWS, shoe=shoe).apply(BetsClosed.of({1: {"main": 10}}))[0],
                    "9H", "5S", "9C", (1, "stand"))
    assert state._dealer_card(parse_card("TS")) is None
    voided, outcomes = state.apply(CardDrawn(parse_card("TS")))
    assert voided.phase.value == "void" and voided.void_reason.startswith("foreign_card")


def test_the_settled_hands_share_their_cards_and_the_round_before_is_unchanged():
    """The final settlement's copy of a hand keeps the very card list of the round before
    (a finished round takes no card, so neither list is written again); the round before the
    dealer's last card is unchanged and gives the same finished round again."""
    state, _ = Round.new(RWS).apply(BetsClosed.of({1: {"main": 10}, 2: {"main": 10}}))
    before, _ = step(state, "9H", "9S", "5S", "8C", "7C", (1, "stand"), (2, "stand"), "6D")
    kept = serialised(before)
    done, _ = step(before, "2D")            # 5+6+2 = 13: the dealer draws again
    done, outcomes = step(done, "5D")       # 18: box 1 (17) loses, box 2 (16) loses
    assert done.is_over and [o.result for o in outcomes if isinstance(o, HandSettled)] == ["lose", "lose"]
    for n in (1, 2):
        assert done.box(n).hands[0].cards is before.box(n).hands[0].cards
        assert done.box(n).hands[0] is not before.box(n).hands[0]
    assert serialised(before) == kept
    again, _ = step(before, "2D", "5D")
    assert serialised(again) == serialised(done)
    with pytest.raises(RuleError):
        done.apply(CardDrawn(parse_card("2C")))
