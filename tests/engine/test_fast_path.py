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
from firmware.engine.errors import IllegalWager, NotYourTurn, RuleError
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


# --- session 6: whole amounts by identity, slot-by-slot makers, remembered side-bet records ----

def test_a_shared_whole_amount_gives_the_same_json_and_sums_as_an_equal_fraction():
    from firmware.engine.money import to_json_number
    from firmware.engine.round import _minus, _plus, _times

    for n in (-250, -1, 0, 1, 7, 10**15):
        shared, other = whole_amount(n), Fraction(3 * n, 3)
        assert shared is not other or n == 0
        assert to_json_number(shared) == to_json_number(other) == n
        assert type(to_json_number(shared)) is int
    half = Fraction(25, 2)
    for a in (whole_amount(10), Fraction(10), half, Fraction(-7, 4)):
        for b in (whole_amount(3), Fraction(3), half, Fraction(3, 2)):
            assert _plus(a, b) == a + b and type(_plus(a, b)) is Fraction
            assert _times(a, b) == a * b and type(_times(a, b)) is Fraction
        assert _minus(a) == -a
    assert to_json_number(half) == 12.5


def test_the_fast_box_and_hand_makers_equal_the_dataclass_ones():
    from firmware.engine.round import Box, Hand, _make_box, _make_hand

    hand = _make_hand(1, whole_amount(10), 2)
    assert hand == Hand(family=1, stake=Fraction(10), id=2)
    assert all(hasattr(hand, f.name) for f in dataclasses.fields(Hand))
    box = _make_box(3, {"main": Fraction(10)}, {"main": Fraction(10)})
    assert box == Box(number=3, wagers={"main": Fraction(10)}, stakes={"main": Fraction(10)})
    assert all(hasattr(box, f.name) for f in dataclasses.fields(Box))
    other = _make_box(4, {}, {})
    for f in dataclasses.fields(Box):            # no container shared between two new boxes
        value = getattr(box, f.name)
        if isinstance(value, (list, dict, set)):
            assert value is not getattr(other, f.name)


def test_two_card_21_is_an_ace_and_a_ten_value():
    from firmware.engine.cards import ALL_CARDS
    from firmware.engine.hand import hand_total
    from firmware.engine.round import _two_card_21

    for a in ALL_CARDS[:13]:
        for b in ALL_CARDS[13:26]:
            assert _two_card_21([a, b]) == (hand_total([a, b])[0] == 21)
    assert not _two_card_21([parse_card("AS"), parse_card("5D"), parse_card("5C")])


def test_side_bet_records_remembered_per_box_category_and_stake_are_the_ones_made_fresh():
    from firmware.engine.events import BetsClosed, CardDrawn
    from firmware.engine.profile import load_profile
    from firmware.engine.round import Round

    profile = load_profile("rws-blackjack")

    def interim(stake, cards):
        state = Round.new(profile).apply(BetsClosed.of({1: {"main": 10, "player_pair": stake}}))[0]
        out = []
        for c in cards:
            state, got = state.apply(CardDrawn(parse_card(c)))
            out += got
        return [o for o in out if isinstance(o, SideBetSettled)]

    first = interim(5, ["8S", "2D", "8H"])
    again = interim(5, ["8C", "3D", "8D"])                   # the same box, category and stake
    half = interim("2.5", ["8C", "3D", "8D"])                # another stake: its own record
    lost = interim(5, ["8C", "3D", "9D"])
    assert first == again == [SideBetSettled(1, "player_pair", "pair", Fraction(11), Fraction(5),
                                             Fraction(55), first[0].clause)]
    assert half[0].net == Fraction(55, 2) and half[0].stake == Fraction(5, 2)
    assert lost[0].category is None and lost[0].odds is None and lost[0].net == Fraction(-5)


def test_the_profiles_clause_texts_are_read_once_and_the_same():
    from firmware.engine.profile import load_profile
    from firmware.engine.round import _plan

    profile = load_profile("uk-4-deck")
    plan = _plan(profile)
    assert _plan(profile) is plan
    for key in [*profile.clauses, "no such clause"]:
        assert plan.clause(key) == profile.clause(key)


def test_the_same_wagers_make_the_same_box_with_the_same_outcomes_and_other_limits_their_own():
    from firmware.engine.events import BetsClosed, CardDrawn
    from firmware.engine.outcomes import BetReturned, WagerFlagged
    from firmware.engine.profile import load_profile
    from firmware.engine.round import Round

    uk = load_profile("rws-blackjack")
    # a side bet without a main bet is returned (§5.15); a main bet over the maximum is
    # counted pro rata (§5.1.1)
    wagers = {1: {"main": 600}, 2: {"player_pair": 5}, 3: {"main": 10}}
    limits = {"main": [10, 500]}
    first, out1 = Round.new(uk, limits=limits).apply(BetsClosed.of(wagers))
    second, out2 = Round.new(uk, limits=limits).apply(BetsClosed.of(wagers))
    assert out1 == out2 and [type(o) for o in out1] == [WagerFlagged, BetReturned]
    assert [b.number for b in first.boxes] == [1, 2, 3] and not first.boxes[1].dealt
    assert first.boxes == second.boxes and first.boxes[0].stakes["main"] == Fraction(500)
    wide, out3 = Round.new(uk, limits={"main": [10, 1000]}).apply(BetsClosed.of(wagers))
    assert wide.boxes[0].stakes["main"] == Fraction(600) and [type(o) for o in out3] == [BetReturned]
    # play on from the first: the second round (sharing its boxes as made) is unchanged
    before = settlement(second)
    state = first
    for card in ["8S", "9D", "7C", "8H", "2D"]:
        state, _ = state.apply(CardDrawn(parse_card(card)))
    assert settlement(second) == before and all(not h.cards for b in second.boxes for h in b.hands)
    assert [c for h in state.boxes[0].hands for c in map(str, h.cards)] == ["8S", "8H"]


def test_rounds_without_limits_share_one_empty_limits_so_their_boxes_are_made_once():
    from firmware.engine.events import BetsClosed
    from firmware.engine.profile import load_profile
    from firmware.engine.round import Round

    profile = load_profile("rws-blackjack")
    a, b = Round.new(profile), Round.new(profile, limits={})
    assert a.limits == {} and a.limits is b.limits
    wagers = {1: {"main": 10, "under_13": 5}}
    first = a.apply(BetsClosed.of(wagers))[0]
    again = b.apply(BetsClosed.of(wagers))[0]
    assert first.boxes[0] is again.boxes[0]
    limited = Round.new(profile, limits={"main": [5, 500]}).apply(BetsClosed.of(wagers))[0]
    assert limited.boxes[0] is not first.boxes[0] and limited.boxes[0] == first.boxes[0]


def test_the_plain_turn_check_refuses_and_allows_exactly_what_the_long_check_does():
    import random

    from firmware.engine.events import BetsClosed, CardDrawn
    from firmware.engine.profile import load_profile, profile_names
    from firmware.engine.round import Round

    def long_way(state, d):
        try:
            state._check(d)
        except RuleError as exc:
            return str(exc)
        return None

    rng = random.Random(17)
    compared = 0
    for name in profile_names():
        profile = load_profile(name)
        for _ in range(15):
            shoe = [c for c in ALL_CARDS for _ in range(profile.default_decks)]
            rng.shuffle(shoe)
            state = Round.new(profile).apply(BetsClosed.of({1: {"main": 10}, 3: {"main": 10}, 4: {"main": 10}}))[0]
            while not state.is_over:
                expect = state.expecting()
                if expect.kind == "card":
                    state = state.apply(CardDrawn(shoe.pop()))[0]
                    continue
                for box in (expect.box, expect.box + 1, 2):
                    for action in Action:
                        for d in (Decision(box, action), Decision(box, action, None, 1),
                                  Decision(box, action, Fraction(5))):
                            assert state.why_not(d) == long_way(state, d), (name, d)
                            compared += 1
                legal = [a for a, why in state.legal_decisions(expect.box).items()
                         if why is None and a in (Action.HIT, Action.STAND, Action.DOUBLE, Action.SPLIT)]
                state = state.apply(Decision(expect.box, rng.choice(legal)))[0]
    assert compared > 1000


def test_cards_and_decisions_made_by_their_own_init_are_the_frozen_dataclasses():
    from firmware.engine.events import CardDrawn

    card = CardDrawn(parse_card("AS"))
    assert card == CardDrawn(card=parse_card("AS")) and hash(card) == hash(CardDrawn(parse_card("AS")))
    assert repr(card) == "CardDrawn(card=Card(AS))" and card != CardDrawn(parse_card("AH"))
    d = Decision(2, Action.DOUBLE, Fraction(5))
    assert d == Decision(box=2, action=Action.DOUBLE, amount=Fraction(5), hand=None)
    assert (d.box, d.action, d.amount, d.hand) == (2, Action.DOUBLE, Fraction(5), None)
    assert Decision(1, Action.HIT) != Decision(1, Action.HIT, None, 1)
    assert [f.name for f in dataclasses.fields(Decision)] == ["box", "action", "amount", "hand"]
    assert dataclasses.replace(d, hand=1) == Decision(2, Action.DOUBLE, Fraction(5), 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        card.card = parse_card("AH")                          # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.box = 9                                             # type: ignore[misc]
    match d:
        case Decision(2, Action.DOUBLE, amount):
            assert amount == Fraction(5)
        case _:
            raise AssertionError("match_args lost")


def test_side_bets_judged_the_same_on_the_same_box_settle_the_same_and_merge_into_a_booked_ledger():
    from firmware.engine.events import BetsClosed, CardDrawn
    from firmware.engine.profile import load_profile
    from firmware.engine.round import Round

    def dealt(name, wagers, cards):
        state = Round.new(load_profile(name)).apply(BetsClosed.of(wagers))[0]
        out = []
        for c in cards:
            state, got = state.apply(CardDrawn(parse_card(c)))
            out += got
        return state, [o for o in out if isinstance(o, SideBetSettled)]

    rws = {1: {"main": 10, "player_pair": 5, "under_13": 5, "over_13": 5}}
    a, out_a = dealt("rws-blackjack", rws, ["8S", "7D", "8H"])     # pair, over 13
    b, out_b = dealt("rws-blackjack", rws, ["8C", "7H", "8D"])     # judged the same
    assert out_a == out_b and [o.category for o in out_a] == ["pair", None, "over_13"]
    assert a.boxes[0].ledger == b.boxes[0].ledger == {"player_pair": 55, "under_13": -5, "over_13": 5}
    assert list(a.boxes[0].side_results.items()) == [("player_pair", "pair"), ("under_13", None),
                                                      ("over_13", "over_13")]
    # TOP 3 without a 21 + 3 wager is returned first (booked at 0): the side bets settled at
    # the interim settlement are added to that ledger, in the order of the box's bets
    uk = {1: {"main": 10, "top_3": 5, "super_pairs": 5}}
    c, out_c = dealt("uk-4-deck", uk, ["QS", "5D", "QH"])
    assert [o.bet for o in out_c] == ["super_pairs"]
    assert list(c.boxes[0].ledger.items()) == [("top_3", 0), ("super_pairs", out_c[0].net)]
    again, _ = dealt("uk-4-deck", uk, ["QC", "5H", "QD"])
    assert list(again.boxes[0].ledger.items()) == list(c.boxes[0].ledger.items())


# --- session 7 -------------------------------------------------------------------------------

def test_rounds_of_one_deck_count_share_one_fresh_shoe_that_no_draw_changes():
    """``Round.new`` without a shoe starts from one shared fresh shoe per deck count (it is
    immutable): a round that draws leaves the next round's shoe full."""
    from firmware.engine.events import BetsClosed, CardDrawn
    from firmware.engine.profile import load_profile
    from firmware.engine.round import Round

    profile = load_profile("rws-blackjack")
    first = Round.new(profile, decks=6)
    played, _ = first.apply(BetsClosed.of({1: {"main": 10}}))
    for text in ("AS", "AS", "KD"):
        played, _ = played.apply(CardDrawn(parse_card(text)))
    assert played.shoe.count(parse_card("AS")) == 4 and len(played.shoe) == 6 * 52 - 3
    again = Round.new(profile, decks=6)
    assert again.shoe == first.shoe == ShoeComposition.of_decks(6) and len(again.shoe) == 6 * 52
    assert Round.new(profile, decks=4).shoe == ShoeComposition.of_decks(4)


def test_no_more_bets_with_wagers_closed_before_closes_as_the_long_way_and_other_wagers_their_own():
    from firmware.engine.events import BetsClosed
    from firmware.engine.profile import load_profile
    from firmware.engine.round import Round, _plan

    from .test_properties import serialised

    profile = load_profile("rws-blackjack")
    limits = {"main": [10, 500]}
    # box 1 over the maximum (flagged, pro rata), box 2 a side bet without a main bet (returned)
    wagers = {1: {"main": 600, "under_13": 5}, 2: {"player_pair": 5}, 4: {"main": 10, "over_13": 10}}

    def long_way(event):
        _plan(profile).closed.clear()
        return Round.new(profile, limits=limits).apply(event)

    first = long_way(BetsClosed.of(wagers))
    again = Round.new(profile, limits=limits).apply(BetsClosed.of(wagers))      # equal wagers, a new event
    assert serialised(again[0]) == serialised(first[0]) and again[1] == first[1]
    # rounds without limits share one limits mapping: the boxes as made, in a list of its own
    plain = {1: {"main": 10, "under_13": 5}, 3: {"main": 10}}
    one = Round.new(profile).apply(BetsClosed.of(plain))[0]
    two = Round.new(profile).apply(BetsClosed.of(plain))[0]
    assert two.boxes[0] is one.boxes[0] and two.boxes is not one.boxes
    # one amount other: that box is its own, closed as the long way closes it
    other = {**wagers, 4: {"main": 20, "over_13": 10}}
    quick = Round.new(profile, limits=limits).apply(BetsClosed.of(other))
    slow = long_way(BetsClosed.of(other))
    assert serialised(quick[0]) == serialised(slow[0]) and quick[1] == slow[1]
    assert quick[0].boxes[2].stakes["main"] == 20
    # an amount that only equals the typed one (10 == Fraction(10)) is not taken for the
    # wagers closed before: it closes the long way, which makes it that Fraction
    typed = BetsClosed(((1, (("main", whole_amount(10)),)),))
    odd = BetsClosed(((1, (("main", 10),)),))                                   # type: ignore[arg-type]
    Round.new(profile).apply(typed)
    quick = Round.new(profile).apply(odd)
    _plan(profile).closed.clear()
    slow = Round.new(profile).apply(odd)
    assert serialised(quick[0]) == serialised(slow[0]) and quick[1] == slow[1]
    assert quick[0].boxes[0].wagers["main"] == 10 and type(quick[0].boxes[0].wagers["main"]) is Fraction
    # a box number that only equals 1 (True) is no box number, closed before or not
    true_box = BetsClosed(((True, (("main", whole_amount(10)),)),))               # type: ignore[arg-type]
    for closed_before in (True, False):
        if not closed_before:
            _plan(profile).closed.clear()
        with pytest.raises(IllegalWager, match="box True is not a box number"):
            Round.new(profile).apply(true_box)


def test_two_cards_are_counted_as_the_loop_counts_them():
    from firmware.engine import hand

    for a in ALL_CARDS:
        for b in ALL_CARDS:
            two = [a, b]
            total, has_ace = 0, False
            for card in two:        # the loop of hand_total, written out
                total += card.value
                has_ace = has_ace or card.rank == "A"
            expected = (total + 10, True) if has_ace and total + 10 <= 21 else (total, False)
            assert hand.hand_total(two) == expected and hand.hand_total((a, b)) == expected


def test_the_side_bets_remembered_by_rank_read_nothing_but_the_two_ranks():
    from firmware.engine.sidebets import RANKS_ONLY, SIDE_BETS

    plain = {rank: next(c for c in ALL_CARDS if c.rank == rank) for rank in {c.rank for c in ALL_CARDS}}
    for name in RANKS_ONLY:
        judge = SIDE_BETS[name].evaluate
        for a in ALL_CARDS:
            for b in ALL_CARDS:
                expected = judge((plain[a.rank], plain[b.rank]), None)
                for dealer in (None, a, ALL_CARDS[0], ALL_CARDS[-1]):
                    assert judge((a, b), dealer) == expected, (name, a, b, dealer)


def test_a_box_settled_by_its_ranks_as_remembered_settles_as_judged_afresh():
    from firmware.engine.events import BetsClosed, CardDrawn
    from firmware.engine.profile import load_profile
    from firmware.engine.round import Round, _plan

    profile = load_profile("rws-blackjack")
    bets = BetsClosed.of({1: {"main": 10, "player_pair": 5, "under_13": 5, "over_13": 5}})

    def interim(cards):
        state = Round.new(profile).apply(bets)[0]
        out = []
        for card in cards:
            state, got = state.apply(CardDrawn(parse_card(card)))
            out.extend(got)
        return state, out

    for first, again in [(["8S", "9D", "8H"], ["8C", "2S", "8D"]), (["AS", "7D", "5H"], ["AH", "KC", "5C"]),
                         (["TS", "6D", "3H"], ["TD", "AS", "3C"])]:
        interim(first)                                  # remembered by the ranks of box 1's two cards
        quick, quick_out = interim(again)               # the same ranks, other suits and dealer card
        _plan(profile).by_ranks.clear()
        _plan(profile).interim.clear()
        slow, slow_out = interim(again)
        assert quick_out == slow_out and quick.boxes[0].side_results == slow.boxes[0].side_results
        assert quick.boxes[0].ledger == slow.boxes[0].ledger and any(isinstance(o, SideBetSettled) for o in quick_out)
