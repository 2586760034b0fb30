"""The round's start without needless copies (issue 17, session 9 "deal"): the memos of the
interim settlement and the shortcuts of the initial deal must give, byte for byte, the round the long way
gives, whatever was remembered from the rounds before.

Rounds repeat their wagers here (as at a table where the players bet the same), so the boxes
"no more bets" makes are shared round to round and the memos are found again; every event
is applied with the memos on and off (and with ``apply``'s shortcuts off), and the rounds
must serialise the same and the outcomes be equal.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import firmware.engine.round as engine_round
from firmware.engine.cards import ALL_CARDS, parse_card
from firmware.engine.events import BetsClosed, CardDrawn
from firmware.engine.profile import load_profile
from firmware.engine.round import Phase, Round
from tests.engine.test_properties import PROFILE_NAMES, PROFILES, SETTINGS, Driver, long_way, serialised, tables


class memos_off:
    """Within: the initial deal's memos are not read nor written (the long way)."""

    def __enter__(self):
        self.saved = engine_round._deal_memos
        engine_round._deal_memos = False

    def __exit__(self, *exc):
        engine_round._deal_memos = self.saved


class MemoDriver(Driver):
    """Applies every event as ``apply`` does and again the long way (memos and shortcuts
    off); the rounds must serialise the same and the outcomes be equal."""

    def apply(self, event, why: str) -> None:
        old = self.state
        super().apply(event, why)
        with memos_off(), long_way():
            slow, slow_out = old.apply(event)
        fast, fast_out = old.apply(event)
        assert serialised(slow) == serialised(fast), f"apply({event!r}) differs from the long way"
        assert slow_out == fast_out, f"apply({event!r}) gives other outcomes than the long way"
        assert serialised(fast) == serialised(self.state)


@pytest.mark.parametrize("name", PROFILE_NAMES)
@given(data=st.data())
@settings(SETTINGS, max_examples=40)
def test_the_deal_memos_give_the_long_ways_round_byte_for_byte_round_after_round(name, data):
    """Six rounds with the same wagers on one table (so "no more bets" and the interim
    settlements are found as remembered from the rounds before): every event, legal and
    refused, gives the same round and outcomes as the long way."""
    table = data.draw(tables(PROFILES[name]))
    rnd = data.draw(st.randoms(use_true_random=False))
    for _ in range(6):
        played = MemoDriver(table, rnd, check_illegal=True).play()
        assert played.state.is_over


RWS = load_profile("rws-blackjack")
WAGERS = {n: {"main": 10, "player_pair": 5, "under_13": 5, "over_13": 5} for n in range(1, 8)}


def _deal(cards: list[str], wagers=WAGERS, profile=RWS) -> list[tuple[Round, list]]:
    """Every round of the initial deal (from "no more bets" on) with what it gave."""
    state, out = Round.new(profile).apply(BetsClosed.of(wagers))
    rounds = [(state, out)]
    for text in cards:
        state, out = state.apply(CardDrawn(parse_card(text)))
        rounds.append((state, out))
    return rounds


def _dealt_twice(cards: list[str]) -> tuple[list[tuple[Round, list]], ...]:
    """The deal of ``cards`` twice (the second with what the first remembered) and the long
    way (memos and shortcuts off), the second checked byte for byte against the long way."""
    first = _deal(cards)
    again = _deal(cards)
    with memos_off(), long_way():
        slow = _deal(cards)
    for (a, a_out), (b, b_out) in zip(again, slow, strict=True):
        assert serialised(a) == serialised(b)
        assert a_out == b_out
    return first, again, slow


#: 7 boxes, the dealer, 7 boxes: box 3 a pair of 8s, box 4 a Blackjack, the dealer a 9 up
CARDS = ["8S", "2H", "8D", "AS", "KH", "5C", "6D", "9H",
         "3S", "4H", "8C", "QS", "7D", "TC", "3D"]


def test_a_round_dealt_as_before_shares_the_interim_results_and_equals_the_long_way():
    first, again, slow = _dealt_twice(CARDS)
    # after the interim settlement each box is its own, its new ledger and results shared
    # (Blackjack's box 4 and the last box, dealt in that very event, the long way each time)
    end1, end2 = first[-1][0], again[-1][0]
    assert end2.phase is Phase.PLAY
    for number in (1, 2, 3, 5, 6):
        b1, b2 = end1.box(number), end2.box(number)
        assert b1 is not b2
        assert b1.ledger is b2.ledger and b1.side_results is b2.side_results
    assert end2.box(3).side_results["player_pair"] is not None     # the pair of 8s won
    assert end2.box(4).hands[0].status == "blackjack"
    # the rounds the memos were made from are as they were (nothing shared was written)
    for (a, _), (b, _) in zip(first, slow, strict=True):
        assert serialised(a) == serialised(b)


def test_a_box_with_a_ledger_or_results_other_than_remembered_is_settled_afresh():
    """The interim memo holds the ledger and results it settled from: a box with a returned
    bet booked (another ledger) does not take the entry of a box without one."""
    wagers = {1: {"main": 10, "player_pair": 5}}
    returned = {1: {"main": 10, "player_pair": 5, "under_13": 5}}
    cards = ["8S", "9H", "8D"]
    plain = _deal(cards, wagers)[-1][0]
    with_limits = Round.new(RWS, limits={"under_13": [10, 100]})
    state, _ = with_limits.apply(BetsClosed.of(returned))
    for text in cards:
        state, out = state.apply(CardDrawn(parse_card(text)))
    with memos_off():
        slow, _ = _deal(cards, wagers)[-1]
    assert serialised(plain) == serialised(slow)
    assert state.box(1).ledger["player_pair"] == plain.box(1).ledger["player_pair"]


def test_the_interim_memo_is_bounded_and_right_when_emptied():
    engine_round._INTERIM_BOXES.clear()
    rnd = random.Random(7)
    deck = [str(c) for c in ALL_CARDS]
    for _ in range(30):
        cards = rnd.sample(deck, 15)
        fast = _deal(cards)
        with memos_off():
            slow = _deal(cards)
        assert [serialised(r) for r, _ in fast] == [serialised(r) for r, _ in slow]
        assert [o for _, o in fast] == [o for _, o in slow]
    assert 0 < len(engine_round._INTERIM_BOXES) <= 4096


def test_two_ranks_first_seen_at_a_box_settle_as_two_ranks_judged_alike_and_as_the_long_way(monkeypatch):
    """Box 1's side bets read only the ranks and judge 8-3 and 5-6 alike (no pair, 11: under
    13): dealt 5-6 after a deal of 8-3, with nothing remembered by the ranks 5-6, it takes the
    new ledger, results and records 8-3 made (``_INTERIM_ALIKE``) without settling its side
    bets again, is then remembered by its ranks, and every round of the deal is the long
    way's byte for byte."""
    eights, fives = list(CARDS), list(CARDS)
    eights[0], eights[8] = "8S", "3S"
    fives[0], fives[8] = "5H", "6C"
    engine_round._INTERIM_BOXES.clear()
    engine_round._INTERIM_ALIKE.clear()
    first = _deal(eights)
    engine_round._INTERIM_BOXES.clear()         # (so not by the ranks: by what they judge)
    settled = engine_round._sides_settled
    afresh: list[int] = []
    monkeypatch.setattr(engine_round, "_sides_settled",
                        lambda number, *a: (afresh.append(number), settled(number, *a))[1])
    again = _deal(fives)
    monkeypatch.setattr(engine_round, "_sides_settled", settled)
    assert afresh == [4]                        # (box 4's Blackjack goes the long way)
    with memos_off(), long_way():
        slow = _deal(fives)
    for (a, a_out), (b, b_out) in zip(again, slow, strict=True):
        assert serialised(a) == serialised(b)
        assert a_out == b_out
    box, before = again[-1][0].box(1), first[-1][0].box(1)
    assert box.ledger is before.ledger and box.side_results is before.side_results
    assert (id(box.stakes), "5", "6") in engine_round._INTERIM_BOXES


def test_amounts_as_fractions_deal_as_ints_do():
    as_fractions = {n: {k: Fraction(v) for k, v in bets.items()} for n, bets in WAGERS.items()}
    a = _deal(CARDS, as_fractions)
    b = _deal(CARDS)
    assert [serialised(r) for r, _ in a] == [serialised(r) for r, _ in b]


@pytest.mark.parametrize("stake", [Fraction(10), Fraction(25, 2), Fraction(7), Fraction(1, 100)])
def test_a_blackjack_net_as_remembered_is_the_stake_times_the_odds(stake):
    """A Blackjack paid at the interim settlement: the same stake and odds give the same net
    object (so its record is found again), and it is exactly stake x odds."""
    odds = RWS.rules.blackjack_pays
    first = engine_round._blackjack_net(stake, odds)
    assert first == stake * odds
    assert engine_round._blackjack_net(stake, odds) is first
    other = Fraction(stake.numerator + 1, stake.denominator)
    assert engine_round._blackjack_net(other, odds) == other * odds


def test_a_blackjack_paid_at_once_settles_as_the_long_way_round_after_round():
    cards = ["AS", "2H", "8D", "AH", "KH", "5C", "6D", "9H",
             "KS", "4H", "8C", "QS", "AD", "TC", "3D"]
    first, again, _ = _dealt_twice(cards)
    blackjacks = [o for o in again[-1][1] if getattr(o, "result", None) == "blackjack"]
    assert [(o.box, o.net) for o in blackjacks] == [(1, 15), (4, 15), (5, 15)]
    assert blackjacks == [o for o in first[-1][1] if getattr(o, "result", None) == "blackjack"]


def test_no_more_bets_again_with_equal_wagers_of_another_object_is_then_known_by_identity():
    """A table sends its own "no more bets" each round: equal wagers of a new object close
    the long way (the boxes as made) and are known by identity from then on."""
    closed = []
    for _ in range(3):
        event = BetsClosed.of(WAGERS)       # a new object each time, equal values
        state = Round.new(RWS)
        taken = state._closed_again(event.wagers)
        fast, fast_out = state.apply(event)
        with memos_off():
            slow, slow_out = state.apply(event)
        assert serialised(fast) == serialised(slow) and fast_out == slow_out
        again = state._closed_again(event.wagers)
        assert again is not None
        again[0]._events = slow._events     # (apply's part)
        assert serialised(again[0]) == serialised(slow) and again[1] == slow_out
        closed.append(taken)
    assert closed[1] is None and closed[2] is None      # each new object: the long way first


def test_no_more_bets_with_mutable_wagers_is_never_known_by_identity():
    """Wagers in lists (not as BetsClosed.of makes them) could change after they were
    closed: they are closed the long way every time."""
    wagers = [[1, [("main", Fraction(10))]]]
    event = BetsClosed(wagers)              # type: ignore[arg-type]
    first, _ = Round.new(RWS).apply(event)
    assert Round.new(RWS)._closed_again(event.wagers) is None
    wagers[0][1][0] = ("main", Fraction(20))
    second, _ = Round.new(RWS).apply(event)
    assert second.box(1).stakes["main"] == 20 and first.box(1).stakes["main"] == 10


# --- session 10 "start": the cards drawn counted in one int, the table part shared ----------

def test_the_cards_drawn_are_counted_per_card_as_the_shoe_holds_them():
    """``_drawn`` counts each card drawn in its own 16 bits: after every card the round's shoe
    is the start less the cards drawn, and a card the shoe no longer holds is foreign
    (§5.5.1), whichever card it is and however many of it the shoe held; the initial card's
    check (written out) gives what the long way's ``_drawn_with`` gives."""
    from firmware.engine.cards import ShoeComposition

    rnd = random.Random(10)
    for _ in range(20):
        counts = tuple(rnd.choice((0, 1, 2, 3, 300, 0xFFFF)) for _ in ALL_CARDS)
        start = ShoeComposition(counts)
        state, _ = Round.new(RWS, decks=6, shoe=start).apply(BetsClosed.of({1: {"main": 10}, 2: {"main": 10}}))
        drawn: list = []
        for _ in range(5):
            card = rnd.choice([c for c, n in zip(ALL_CARDS, counts, strict=True) if n] + [rnd.choice(ALL_CARDS)])
            after, out = state.apply(CardDrawn(card))
            with long_way():                # (the initial card's own copy of _drawn_with)
                slow, slow_out = state.apply(CardDrawn(card))
            assert serialised(after) == serialised(slow) and out == slow_out
            held = start.count(card) - drawn.count(card)
            if held <= 0:
                assert after.void_reason is not None and after.void_reason.startswith("foreign_card")
                assert after.shoe == state.shoe
                break
            drawn.append(card)
            assert after.shoe == start.without(drawn)
            assert after.void_reason is None
            state = after


def test_a_shoe_holding_more_of_a_card_than_the_count_can_hold_is_refused():
    from firmware.engine.cards import ShoeComposition

    most = ShoeComposition((0xFFFF,) * len(ALL_CARDS))
    assert Round.new(RWS, shoe=most).shoe == most
    with pytest.raises(ValueError, match="at most 65535 of a card, not 65536"):
        Round.new(RWS, shoe=ShoeComposition((1,) * 51 + (0x10000,)))


def test_the_table_part_is_shared_by_the_rounds_and_a_void_gives_the_round_its_own():
    """decks, limits, meter and the void's reason live in one object the rounds of a game
    share: read as before, and a void (or a write) changes only the round it is made on."""
    from firmware.engine.events import VoidRound

    start = Round.new(RWS, decks=6, limits={"main": [5, 500]}, meter=100)
    rounds = [r for r, _ in _deal(CARDS[:5])]
    assert len({id(r._table) for r in rounds}) == 1
    state, _ = start.apply(BetsClosed.of(WAGERS))
    dealt, _ = state.apply(CardDrawn(parse_card("8S")))
    assert dealt._table is state._table is start._table
    assert (dealt.decks, dealt.limits, dealt.meter) == (6, {"main": (Fraction(5), Fraction(500))}, Fraction(100))
    before = serialised(dealt)
    void, _ = dealt.apply(VoidRound("interruption"))
    assert void.void_reason == "interruption" and void.void_clause
    assert dealt.void_reason is None and dealt.void_clause is None and serialised(dealt) == before
    assert (void.decks, void.limits, void.meter) == (dealt.decks, dealt.limits, dealt.meter)
    void.meter = Fraction(5)
    assert dealt.meter == 100 and void.meter == 5
    # the usual table part (fresh shoe, no limits, no meter) is one per deck count
    a, b = Round.new(RWS), Round.new(RWS)
    assert a._table is b._table and (a.decks, a.limits, a.meter, a.shoe) == (6, {}, None, Round.new(RWS, meter=0).shoe)
    dealt_a, _ = a.apply(BetsClosed.of(WAGERS))
    void_a, _ = dealt_a.apply(VoidRound("interruption"))
    assert void_a.void_reason == "interruption" and b.void_reason is None and Round.new(RWS).void_reason is None
    assert type(Round.new(RWS, decks=6.0).decks) is float       # (as given: not the shared part)


def test_a_card_read_from_its_text_is_the_one_card_of_that_text():
    """(session 11) The card reader's cards are the 52 card objects of ALL_CARDS, found by
    their text (a look-up, not a frozen dataclass made and validated per card); other
    spellings as before, bad text still refused by name."""
    for card in ALL_CARDS:
        for text in (str(card), str(card).lower(), f" {card} "):
            assert parse_card(text) is card
    assert parse_card("10h") is parse_card("TH")
    with pytest.raises(ValueError, match="unknown rank 'Z'"):
        parse_card("ZS")
