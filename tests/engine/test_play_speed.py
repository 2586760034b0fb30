"""The hand in play's shortcuts (issue 17 speed, session 9 "play") give what the long way gives.

``Round._card_in_play`` and ``Round._decision_in_play`` settle a card that busts the hand in play,
makes 21 or completes a double, and take a plain double, without the general ``_advance``; ``Round.expecting_hand`` answers
``expecting()`` and ``hand_in_play()`` in one call. Each is compared here with the long way,
event by event, on rounds of every shipped profile (turning a shortcut wrong makes these fail: the bust's record, a
21's or a double's status, the hand moved to, the double's amount).
"""

from __future__ import annotations

import importlib.util
import random
from collections import Counter
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

from firmware.engine.events import Action, CardDrawn, Decision
from firmware.engine.round import Phase, Round

from .test_properties import PROFILES, LongWayDriver, Table, long_way, serialised


class CountingDriver(LongWayDriver):
    """:class:`LongWayDriver` (each event applied with the shortcuts and the long way, the
    rounds compared byte for byte, the outcomes for equality), counting the cases the
    shortcuts of this session take, and checking ``expecting_hand`` before every event."""

    def __init__(self, *args, seen: Counter, **kw):
        super().__init__(*args, **kw)
        self.seen = seen

    def apply(self, event, why: str) -> None:
        old = self.state
        expect, box, hand = old.expecting_hand()
        in_play = old.hand_in_play()
        assert expect == old.expecting(), f"expecting_hand() says {expect}, expecting() {old.expecting()}"
        assert (box, hand) == ((None, None) if in_play is None else in_play)
        if in_play is not None:
            assert box is in_play[0] and hand is in_play[1]
        super().apply(event, why)
        if old.phase is Phase.PLAY and in_play is not None:
            before = hand
            assert before is not None
            if isinstance(event, CardDrawn) and before.wants_card:
                after = next(h for b in self.state.boxes for h in b.hands
                             if h.id == before.id and b.number == in_play[0].number)
                moved = self.state.cursor != old.cursor
                waits = (self.state.phase is Phase.PLAY and self.state.cursor is not None
                         and not self.state.hand_in_play()[1].wants_card)
                self.seen[f"card {after.status}" + (" moved" if moved else "")
                          + (" next waits" if moved and waits else "")
                          + (" dealer" if self.state.phase is not Phase.PLAY else "")] += 1
            elif isinstance(event, Decision) and event.action is Action.DOUBLE:
                self.seen["double" + (" amount" if event.amount is not None else "")] += 1
            elif isinstance(event, Decision) and event.action is Action.SPLIT and self.state is not old:
                self.seen["split"] += 1
            elif isinstance(event, Decision) and event.action is Action.STAND and self.state is not old:
                # (session 10) where play went on from a stand: the next hand waiting for its
                # decision, another hand the rules go on with, or the dealer's turn
                waits = (self.state.phase is Phase.PLAY and self.state.cursor is not None
                         and not self.state.hand_in_play()[1].wants_card)
                self.seen["stand " + ("dealer" if self.state.phase is not Phase.PLAY
                                      else "next waits" if waits else "moved")] += 1


def test_a_card_that_ends_the_hand_and_a_double_give_the_long_ways_round():
    """Rounds of every profile (1-7 boxes, main and side bets; the random driver of
    test_properties with its offers, walk-aways, voids and refused decisions): every event
    with the shortcuts and the long way, the same round byte for byte and equal outcomes.
    The cases the shortcuts take all occur (a bust, a 21 and a completed double, each with
    the next hand waiting, the next hand not waiting yet and the dealer's turn after them)."""
    seen: Counter = Counter()
    for name, profile in sorted(PROFILES.items()):
        rnd = random.Random(name)
        for _ in range(60):
            boxes = rnd.sample(range(1, 8), rnd.randint(1, 7))
            wagers = {}
            for number in boxes:
                bets = {"main": Fraction(rnd.choice([5, 10, 25]))}
                for side in profile.side_bets:
                    if rnd.random() < 0.3:
                        bets[side] = Fraction(5)
                wagers[number] = bets
            table = Table(profile, profile.default_decks, None, None, wagers)
            CountingDriver(table, rnd, seen=seen, check_illegal=True).play()
    for case in ("card bust moved next waits", "card bust moved dealer", "card twenty_one moved next waits",
                 "card twenty_one moved dealer", "card doubled moved next waits", "card doubled moved dealer",
                 "card play", "double", "double amount", "stand dealer", "stand next waits", "stand moved", "split"):
        assert seen[case] > 0, f"{case!r} never occurred: {sorted(seen.items())}"
    # a bust or 21 whose next hand is not waiting for its decision (a split hand's first card)
    assert sum(n for case, n in seen.items() if case.startswith("card ") and case.endswith("moved")) > 0, seen


def _rounds(profile_name: str, cards: list[str], decisions: list[Decision]) -> list[tuple[Round, list]]:
    """Every round of a dealt game, each from the one before it, as the table applies them."""
    from firmware.engine.cards import parse_card
    from firmware.engine.events import BetsClosed
    state = Round.new(PROFILES[profile_name])
    state, _ = state.apply(BetsClosed.of({1: {"main": 10}, 2: {"main": 10}}))
    out = [(state, [])]
    pending = list(decisions)
    for text in cards:
        while state.expecting().kind == "decision":
            state, got = state.apply(pending.pop(0))
            out.append((state, got))
        state, got = state.apply(CardDrawn(parse_card(text)))
        out.append((state, got))
    return out


def test_a_bust_and_a_doubled_21_are_settled_as_the_long_way_and_play_moves_on():
    """Box 1 (T 6) hits and busts: its HandSettled (bust, -10) and ledger as the long way,
    box 2 in play; box 2 (5 6) doubles and makes 21: 'twenty_one' (§3.17 before §3.22's
    'doubled'), the dealer's turn. Each event against the long way, byte for byte."""
    cards = ["TS", "5H", "9S", "6C", "6D",     # box 1, box 2, the dealer's up card, box 1, box 2
             "KD", "TH", "7C", "2D"]
    decisions = [Decision(1, Action.HIT), Decision(2, Action.DOUBLE)]
    rounds = _rounds("rws-blackjack", cards, decisions)
    for (before, _), (after, got) in zip(rounds, rounds[1:], strict=False):
        event = after.history[-1]
        with long_way():
            slow, slow_out = before.apply(event)
        assert serialised(slow) == serialised(after), event
        assert slow_out == got, event
    states = [s for s, _ in rounds]
    bust, bust_out = next((s, o) for s, o in rounds if s.boxes[0].hands[0].status == "bust")
    assert bust.boxes[0].hands[0].net == -10 and bust.boxes[0].ledger["main"] == -10
    assert [(o.box, o.hand, o.result, o.net) for o in bust_out] == [(1, 1, "bust", -10)]
    assert bust.expecting_hand()[1] is bust.boxes[1] and str(bust.expecting()) == "a decision for box 2 hand 1"
    doubled = next(s for s in states if s.boxes[1].hands[0].status != "play")
    assert (doubled.boxes[1].hands[0].status, doubled.boxes[1].hands[0].doubled) == ("twenty_one", 10)
    assert doubled.phase is Phase.DEALER and doubled.expecting_hand() == (doubled.expecting(), None, None)
    assert states[-1].is_over and states[-1].boxes[1].hands[0].net == 20


def test_three_cards_are_counted_as_the_loop_counts_them():
    """``hand_total`` reads three cards from a table made once: every three cards (as a list
    and as a tuple) as the loop counts them (§3.2, §1.11, §1.28)."""
    from firmware.engine.cards import ALL_CARDS
    from firmware.engine.hand import hand_total

    for a in ALL_CARDS[:13]:
        for b in ALL_CARDS[13:26]:
            for c in ALL_CARDS[26:39]:
                total, has_ace = 0, False
                for card in (a, b, c):  # the loop of hand_total, written out
                    total += card.value
                    has_ace = has_ace or card.rank == "A"
                expected = (total + 10, True) if has_ace and total + 10 <= 21 else (total, False)
                assert hand_total([a, b, c]) == expected and hand_total((a, b, c)) == expected


def _bench():
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_engine.py"
    spec = importlib.util.spec_from_file_location("bench_engine_for_test", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_the_bench_strategy_from_its_tables_is_the_charts():
    """The bench's basic strategy read from its tables gives what the charts say, for every
    two and three cards against every up card, on the first two cards and after."""
    bench = _bench()
    ranks = bench.ALL_CARDS[:13]
    for up in ranks:
        for a in ranks:
            for b in ranks:
                for cards in ([a, b], *([a, b, c] for c in ranks)):
                    for first_two in (True, False):
                        got = bench.basic_action(SimpleNamespace(cards=cards), up, first_two)
                        assert got is bench.chart_action(cards, up, first_two), (cards, up, first_two)


def test_a_double_of_the_stake_is_checked_as_a_double_of_an_equal_amount():
    """(session 10) ``_check_double`` takes a double without an amount (the stake itself) without
    comparing Fractions: it must refuse and allow as the check of an equal amount given as a
    Fraction of its own does, for a stake above zero, of zero and below zero."""
    from firmware.engine.cards import parse_card
    from firmware.engine.errors import RuleError
    from firmware.engine.round import Hand

    state = Round.new(PROFILES["rws-blackjack"])
    box = SimpleNamespace(number=1)
    for stake in (Fraction(10), Fraction(5, 2), Fraction(0), Fraction(-10)):
        for cards in (["5S", "6H"], ["TS", "2H"], ["AS", "7H"], ["9S", "2H", "3C"]):
            hand = Hand(family=0, stake=stake, cards=[parse_card(c) for c in cards])
            answers = []
            for d in (Decision(1, Action.DOUBLE), Decision(1, Action.DOUBLE, Fraction(stake.numerator, stake.denominator))):
                try:
                    state._check_double(box, hand, d)
                    answers.append(None)
                except RuleError as exc:
                    answers.append(str(exc))
            assert answers[0] == answers[1], (stake, cards, answers)
            if stake <= 0 and len(cards) == 2 and cards[0] != "TS":
                assert answers[0] is not None and "above zero" in answers[0], (stake, cards, answers)


def test_a_decision_shares_the_hands_cards_and_a_card_never_changes_the_earlier_rounds():
    """(session 10) A hit, stand or double copies the hand with the very card list (no card
    changes); the card that follows copies it again, so the round the hit was applied to
    keeps its two cards, and a stand that hands over to the dealer gives its hand its own list."""
    cards = ["TS", "7H", "9S", "6C", "6D", "2D", "TH"]     # box 1 T 6 hits (2), box 2 7 6 stands
    rounds = _rounds("rws-blackjack", cards, [Decision(1, Action.HIT), Decision(1, Action.STAND),
                                              Decision(2, Action.STAND)])
    states = [s for s, _ in rounds]
    hit = next(s for s in states if s.history[-1] == Decision(1, Action.HIT))
    before = states[states.index(hit) - 1]
    assert hit.boxes[0].hands[0].cards is before.boxes[0].hands[0].cards
    carded = states[states.index(hit) + 1]
    assert len(carded.boxes[0].hands[0].cards) == 3 and len(hit.boxes[0].hands[0].cards) == 2
    last = next(s for s in states if s.history[-1] == Decision(2, Action.STAND))
    earlier = states[states.index(last) - 1]
    assert last.phase is not Phase.PLAY
    assert last.boxes[1].hands[0].cards is not earlier.boxes[1].hands[0].cards
    assert [str(c) for c in earlier.boxes[1].hands[0].cards] == ["7H", "6D"]


def test_the_table_of_expects_answers_as_made_and_stays_bounded():
    """(session 10) ``expecting_hand`` reads its Expects from a table by box number and hand:
    each entry is the Expect its query names, and the table is cleared when full (box
    numbers come from outside)."""
    from firmware.engine.round import _HAND_EXPECTS, Expect, _hand_expects

    for number in range(5000):
        decision, card, card_no_hand = _hand_expects(number, number % 3)
        assert decision == Expect("decision", number, number % 3 + 1)
        assert card == Expect("card", number, number % 3 + 1) and card_no_hand == (card, None, None)
        assert len(_HAND_EXPECTS) <= 4096


def test_a_split_hand_is_the_hand_the_dataclass_makes_and_waits_for_its_card():
    """(session 10) ``_turn`` makes the split hand slot by slot and a split ends without
    ``_advance``: the new hand equals the one ``Hand(...)`` makes, the hand in play waits
    for its second card, and the long way gives the same round byte for byte."""
    from firmware.engine.cards import parse_card
    from firmware.engine.round import Hand

    for first, second, aces in (("8S", "8H", False), ("AS", "AH", True)):
        rounds = _rounds("rws-blackjack", [first, "5H", "9S", second, "6D"], [Decision(1, Action.SPLIT)])
        before = rounds[-1][0]
        event = Decision(1, Action.SPLIT)
        after, out = before.apply(event)
        with long_way():
            slow, slow_out = before.apply(event)
        assert serialised(slow) == serialised(after) and out == slow_out == []
        stake = before.boxes[0].hands[0].stake
        assert after.boxes[0].hands[1] == Hand(family=0, stake=stake, id=2, cards=[parse_card(second)],
                                               from_split=True, split_aces=aces, switched=False)
        assert after.expecting().kind == "card" and after.hand_in_play()[1].wants_card


def test_expecting_hand_answers_as_expecting_with_its_table_empty_or_short():
    """(session 11) ``expecting_hand`` reads its table by subscripts and makes a missing box
    number's row, or a row too short for a split hand, on the way: every round of a game with
    a split, asked with the table emptied before each question and with it filled, answers as
    ``expecting`` and ``hand_in_play``."""
    from firmware.engine.round import _HAND_EXPECTS, _hand_expects

    cards = ["8S", "5H", "9S", "8H", "6D", "TC", "9C", "7C", "8D"]
    decisions = [Decision(1, Action.SPLIT), Decision(1, Action.STAND), Decision(1, Action.STAND),
                 Decision(2, Action.HIT), Decision(2, Action.STAND)]
    rounds = _rounds("rws-blackjack", cards, decisions)
    assert rounds[-1][0].phase is Phase.COMPLETE
    for state, _ in rounds:
        for empty in (True, False):
            if empty:
                _HAND_EXPECTS.clear()
            expect, box, hand = state.expecting_hand()
            in_play = state.hand_in_play()
            assert expect == state.expecting()
            assert (box, hand) == (in_play if in_play is not None else (None, None))
    # a row made for hand 1 only is extended for the split hand (the IndexError way)
    split = [state for state, _ in rounds if state.phase is Phase.PLAY and state.cursor == (0, 1)]
    assert split
    for state in split:
        _HAND_EXPECTS.clear()
        _hand_expects(1, 0)
        assert len(_HAND_EXPECTS[1]) == 1
        assert state.expecting_hand()[0] == state.expecting()
        assert len(_HAND_EXPECTS[1]) == 2


def test_a_hand_waits_for_its_decision_as_counted_but_for_the_blackjacks_done_before():
    """(session 11) ``_waits_for_decision`` does not count the initial two cards of a hand
    that is neither from a split nor switched: such a hand making 21 is a Blackjack, done at
    the interim settlement (§1.2), so any other two such cards are below 21. Every pair of
    ranks, from a split or switched or neither, against the count."""
    from firmware.engine.cards import ALL_CARDS
    from firmware.engine.hand import hand_total
    from firmware.engine.round import _make_box, _make_hand, _waits_for_decision

    box = _make_box(1, {"main": Fraction(10)}, {"main": Fraction(10)})
    for a in ALL_CARDS[:13]:
        for b in ALL_CARDS[13:26]:
            for from_split, switched in ((False, False), (True, False), (False, True)):
                hand = _make_hand(0, Fraction(10), 1)
                hand.cards = [a, b]
                hand.from_split, hand.switched = from_split, switched
                counted = hand_total(hand.cards)[0] < 21
                if not from_split and not switched and not counted:
                    continue                # a Blackjack: done before anyone asks
                assert _waits_for_decision(box, hand) is counted, (a, b, from_split, switched)


def test_a_surrender_settles_as_the_long_way_with_its_net_remembered_by_the_stake():
    """(session 11) A surrender's net (-stake/2, §3.16) is worked out once per stake object, so
    its ``HandSettled`` record and booked ledger are found as remembered too: the round equals
    the long way (memos and shortcuts off) byte for byte, twice; an entry of another stake
    object (an id reused) is never taken; the memo is bounded."""
    import firmware.engine.round as engine_round
    from firmware.engine.round import _SURRENDER_NETS, _surrender_net

    from .test_deal_speed import memos_off

    rounds = _rounds("rws-blackjack", ["TS", "5H", "9S", "6C", "6D"], [])
    before = rounds[-1][0]
    event = Decision(1, Action.SURRENDER, None, 1)
    with memos_off(), long_way():
        slow, slow_out = before.apply(event)
    first, first_out = before.apply(event)
    again, again_out = before.apply(event)
    assert serialised(first) == serialised(slow) == serialised(again)
    assert first_out == slow_out == again_out
    assert first.boxes[0].hands[0].status == "surrendered" and first.boxes[0].ledger["main"] == -5
    assert again_out[0] is first_out[0] and again.boxes[0].ledger is first.boxes[0].ledger
    for stake in (Fraction(10), Fraction(25, 2), Fraction(7), Fraction(1, 100)):
        assert _surrender_net(stake) == -stake / 2 and _surrender_net(stake) is _surrender_net(stake)
        _SURRENDER_NETS[id(stake)] = (Fraction(99), Fraction(-1))     # another stake's entry
        assert _surrender_net(stake) == -stake / 2
    _SURRENDER_NETS.clear()
    for cents in range(5000):
        _surrender_net(Fraction(cents, 100))
        assert len(engine_round._SURRENDER_NETS) <= 4096
