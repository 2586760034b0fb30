"""Property tests of the round state machine, for every shipped profile.

A hypothesis-driven table plays random rounds: random wagers on 1-7 boxes (main, the
profile's side bets and progressive at random, sometimes a side bet without a main bet),
cards from a shuffled shoe of the profile's deck count, and at every decision point a
decision picked uniformly among those :meth:`Round.legal_decisions` reports legal. The
offer-window decisions (insurance, even money, surrender, switch) and the irregular events
(a player walking away, §5.3; a void, §5.4 / §5.5 / §5.17) are inserted at random.

Randomness comes only from hypothesis (``st.randoms`` / drawn data), never the global
``random``, and the settings are derandomized so CI cannot flake.
"""

from __future__ import annotations

import dataclasses
import pickle
import random
from collections import Counter
from contextlib import contextmanager
from fractions import Fraction
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmware.engine.cards import ALL_CARDS, ShoeComposition
from firmware.engine.errors import RuleError
from firmware.engine.events import Action, BetsClosed, CardDrawn, Decision, VoidRound, WalkedAway
from firmware.engine.money import to_json_number
from firmware.engine.outcomes import (
    HandSettled,
    InsuranceSettled,
    RoundVoided,
    SideBetSettled,
)
from firmware.engine.profile import Profile, load_profile, profile_names
from firmware.engine.round import Phase, Round, replay
from firmware.engine.settlement import settlement

PROFILE_NAMES = profile_names()
PROFILES = {name: load_profile(name) for name in PROFILE_NAMES}

#: 150 random rounds per profile and property; the whole file runs in well under 60 s.
EXAMPLES = 150
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: Offer-window and out-of-turn decisions the driver throws in now and then.
EXTRAS = (Action.INSURANCE, Action.EVEN_MONEY, Action.SURRENDER, Action.SWITCH)


def test_every_shipped_profile_is_covered():
    assert set(PROFILE_NAMES) == {"my-classic", "rws-blackjack", "rws-blackjack-switch",
                                  "rws-perfect-pairs", "uk-4-deck"}


# --- the random table ------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Table:
    """A round's set-up: everything :func:`Round.new` and the bets-closed event need."""

    profile: Profile
    decks: int
    limits: dict[str, tuple[Fraction, Fraction]] | None
    meter: Fraction | None
    wagers: dict[int, dict[str, Fraction]]

    def new_kwargs(self) -> dict[str, Any]:
        return {"decks": self.decks, "limits": self.limits, "meter": self.meter}

    def new_round(self) -> Round:
        return Round.new(self.profile, **self.new_kwargs())


def _amount(lo: int, hi: int):
    """Whole amounts and halves (a 12.5 chip) between lo and hi."""
    return st.one_of(st.integers(lo, hi).map(Fraction),
                     st.integers(2 * lo, 2 * hi).map(lambda n: Fraction(n, 2)))


@st.composite
def tables(draw, profile: Profile) -> Table:
    lo_decks, hi_decks = profile.decks
    decks = draw(st.integers(lo_decks, hi_decks))
    limits = None
    main_lo, main_hi = 1, 1000
    if draw(st.booleans()):
        lo = Fraction(draw(st.sampled_from([1, 5, 10])))
        hi = Fraction(draw(st.sampled_from([100, 500])))
        limits = {"main": (lo, hi)}
        if profile.rules.over_maximum == "refuse":
            main_hi = int(hi)
        if profile.rules.under_minimum == "refuse":
            main_lo = int(lo)
    meter = None
    if profile.progressive is not None and draw(st.booleans()):
        meter = Fraction(draw(st.integers(0, 10**6)))
    numbers = draw(st.lists(st.integers(1, 7), min_size=1, max_size=7, unique=True))
    side_names = list(profile.side_bets)
    wagers: dict[int, dict[str, Fraction]] = {}
    for number in numbers:
        bets: dict[str, Fraction] = {}
        # now and then a side bet without a main bet (§5.15: removed and returned)
        main = draw(_amount(main_lo, main_hi)) if draw(st.integers(0, 9)) else None
        if main is not None:
            bets["main"] = main
        for name in side_names:
            if draw(st.booleans()):
                cap = profile.side_bets[name].max_of_initial_bet
                if cap is not None and main is not None:
                    top = cap * main           # §3.13.2 d: not above the initial bet
                    bets[name] = draw(st.integers(1, max(1, int(top * 2)))
                                      .map(lambda n, top=top: min(Fraction(n, 2), top)))
                else:
                    bets[name] = draw(_amount(1, 200))
        if profile.progressive is not None and draw(st.booleans()):
            bets["progressive"] = profile.progressive.wager
        if not bets:
            bets["main"] = draw(_amount(main_lo, main_hi))
        wagers[number] = bets
    return Table(profile, decks, limits, meter, wagers)


def legal_amount(rnd: random.Random, state: Round, d: Decision) -> Fraction | None:
    """A random legal amount for a double or insurance (None: the default / no amount)."""
    box = state.box(d.box)
    if d.action == Action.DOUBLE:
        _, hand = state.hand_in_play()
        if state.profile.rules.double_amount == "equal" or rnd.random() < 0.4:
            return None if rnd.random() < 0.5 else hand.stake
        cents = int(hand.stake * 100)
        return Fraction(rnd.randint(1, max(1, cents)), 100) if cents else hand.stake
    if d.action == Action.INSURANCE:
        family = 0 if d.hand is None else d.hand - 1
        stake = next(h for h in box.hands if h.family == family).stake
        half = stake / 2
        if rnd.random() < 0.4:
            return half
        cents = int(half * 100)
        return Fraction(rnd.randint(1, cents), 100) if cents else half
    return None


class Shoe:
    """A shuffled shoe of ``decks`` decks, shuffled lazily: each draw takes a uniformly
    random card of those left (a Fisher-Yates shuffle one step at a time), so a round
    costs hypothesis a few dozen choices instead of a full 416-card permutation."""

    def __init__(self, decks: int, rnd: random.Random):
        self.cards = [c for c in ALL_CARDS for _ in range(decks)]
        self.rnd = rnd

    def __bool__(self) -> bool:
        return bool(self.cards)

    def draw(self, prefer=None, bias: float = 0.0):
        """The next card; with probability ``bias``, one of the cards left that ``prefer``
        accepts (still a card of this shoe), so rare spots (an Ace up, a pair) come often."""
        i = self.rnd.randrange(len(self.cards))
        if prefer is not None and self.rnd.random() < bias:
            wanted = [j for j, c in enumerate(self.cards) if prefer(c)]
            if wanted:
                i = self.rnd.choice(wanted)
        self.cards[i], self.cards[-1] = self.cards[-1], self.cards[i]
        return self.cards.pop()


def snapshot(state: Round) -> Any:
    """Everything observable about a round, as plain values, for 'apply left it unchanged'."""
    boxes = [tuple((f.name, sorted(v) if isinstance(v, set) else repr(v))
                   for f in dataclasses.fields(b) for v in [getattr(b, f.name)])
             for b in state.boxes]
    return (settlement(state), state.phase, state.cursor, state.deal_pos, tuple(state.history),
            state.shoe, tuple(state.dealer), boxes, state.subsequent_deal,
            state.second_card_seen, state.void_reason, str(state.expecting()))


class Failure(AssertionError):
    pass


@dataclasses.dataclass
class Played:
    table: Table
    state: Round
    outcomes: list
    decisions_tried_illegal: int = 0


class Driver:
    """Plays one random round, checking after every event what every event must keep."""

    def __init__(self, table: Table, rnd: random.Random, *, check_illegal: bool = False,
                 check_unchanged: bool = False, allow_void: bool = True):
        self.table = table
        self.profile = table.profile
        self.rnd = rnd
        self.check_illegal = check_illegal
        self.check_unchanged = check_unchanged
        self.allow_void = allow_void
        self.state = table.new_round()
        self.outcomes: list = []
        self.shoe = Shoe(table.decks, rnd)
        self.illegal_tried = 0

    # applying ----------------------------------------------------------------------

    def apply(self, event, why: str) -> None:
        """Apply an event the driver believes legal: any exception is a failure."""
        before = snapshot(self.state) if self.check_unchanged else None
        old = self.state
        try:
            new, out = old.apply(event)
        except RuleError as exc:
            raise Failure(f"{event!r} was reported legal ({why}) but refused: {exc}\n"
                          f"history: {old.history!r}") from exc
        if before is not None:
            assert snapshot(old) == before, f"apply({event!r}) mutated the round it was called on"
        self.state = new
        self.outcomes.extend(out)

    def refuse(self, event, reason: str, before: Any = None) -> None:
        """An event reported illegal must raise a RuleError and leave the round unchanged."""
        own = before is None
        if own:
            before = snapshot(self.state)
        history = list(self.state.history)
        try:
            self.state.apply(event)
        except RuleError:
            pass
        else:
            raise Failure(f"{event!r} was reported illegal ({reason}) but accepted\n"
                          f"history: {history!r}")
        if own:
            assert snapshot(self.state) == before, f"refused {event!r} changed the round"
        self.illegal_tried += 1

    def try_decision(self, d: Decision) -> None:
        """Apply ``d`` if the engine says it is legal, else check it is refused."""
        reason = self.state.why_not(d)
        if reason is None:
            self.apply(d, "why_not is None")
        elif self.check_illegal:
            self.refuse(d, reason)

    # the round ---------------------------------------------------------------------

    def play(self) -> Played:
        t = self.table
        self.apply(BetsClosed.of(t.wagers), "wagers drawn within the rules")
        steps = 0
        asked_round = False
        while not self.state.is_over:
            steps += 1
            if steps > 400:
                raise Failure(f"the round never ends; expecting {self.state.expecting()}\n"
                              f"history: {self.state.history!r}")
            if self.allow_void and self.rnd.random() < 0.01:
                reason = self.rnd.choice(["interruption", "insufficient_cards", "power failure"])
                if reason == "interruption" and self.state.outcome_established():
                    # §5.4.1: once an outcome is established the round is concluded, not voided
                    with pytest.raises(RuleError, match="outcome has been established"):
                        self.state.apply(VoidRound(reason))
                else:
                    self.apply(VoidRound(reason), "a void is possible (§5.4.2, §5.5)")
                    break
            if self.state.phase in (Phase.PLAY, Phase.DEALER) and not asked_round:
                # the offer window opens: the dealer asks each box in turn (§3.14, §3.16)
                asked_round = True
                for box in list(self.state.boxes):
                    if self.rnd.random() < 0.7 and not self.state.is_over:
                        self.extra(box)
                if self.state.is_over:
                    break
            if self.state.phase in (Phase.PLAY, Phase.DEALER):
                # the window stays open until a further card; later, stray requests
                window = not self.state.subsequent_deal
                if self.rnd.random() < (0.4 if window else 0.1):
                    self.extra()
                    if self.state.is_over:
                        break
            if self.check_illegal and self.state.boxes and self.rnd.random() < 0.5:
                self.check_illegal_for(self.rnd.choice(self.state.boxes).number)
            expect = self.state.expecting()
            if expect.kind == "card":
                if not self.shoe:
                    self.apply(VoidRound("insufficient_cards"), "§5.5.3 the shoe ran out")
                    break
                self.apply(CardDrawn(self.draw_for(expect)), f"expecting {expect}")
            elif expect.kind == "decision":
                self.decide(expect.box)
            else:
                raise Failure(f"the round is not over but expects {expect}")
        return Played(t, self.state, self.outcomes, self.illegal_tried)

    def draw_for(self, expect):
        """A card from the shoe, biased towards the spots the rules treat specially: the
        dealer's Ace or ten up (insurance, even money, waiting Blackjacks), pairs (splits)."""
        state = self.state
        roll = self.rnd.random()
        if expect.to_dealer and not state.dealer:
            if roll < 0.3:
                return self.shoe.draw(lambda c: c.is_ace, 1)
            return self.shoe.draw(lambda c: c.is_ten_value, 0.2)
        if not expect.to_dealer:
            hand = state.box(expect.box).hands[expect.hand - 1]
            if len(hand.cards) == 1:
                first = hand.cards[0]
                if roll < 0.2:      # a pair
                    return self.shoe.draw(lambda c: c.value == first.value, 1)
                if roll < 0.35 and (first.is_ace or first.is_ten_value):   # a Blackjack
                    return self.shoe.draw(lambda c: c.is_ace != first.is_ace and
                                          (c.is_ace or c.is_ten_value), 1)
        return self.shoe.draw()

    def decide(self, number: int) -> None:
        legal = [a for a, why in self.state.legal_decisions(number).items() if why is None]
        turn = [a for a in legal if a in (Action.HIT, Action.STAND, Action.DOUBLE, Action.SPLIT,
                                          Action.SWITCH)]
        if not turn:
            raise Failure(f"box {number} is expected to decide but has no legal turn decision: "
                          f"{self.state.legal_decisions(number)}\nhistory: {self.state.history!r}")
        action = self.rnd.choice(legal)
        if self.check_illegal:
            self.check_illegal_for(number)
        d = Decision(number, action)
        amount = legal_amount(self.rnd, self.state, d)
        if amount is not None:
            d = Decision(number, action, amount)
            reason = self.state.why_not(d)
            assert reason is None, f"{d!r}: a legal amount was refused: {reason}"
        self.apply(d, "in legal_decisions")

    def extra(self, box=None) -> None:
        """An offer-window decision or a walk-away, for a (random) box, legal or not."""
        box = self.rnd.choice(self.state.boxes) if box is None else self.state.box(box.number)
        if self.rnd.random() < 0.04:
            if box.dealt:
                self.apply(WalkedAway(box.number), "a dealt box's player may walk away (§5.3)")
            else:
                self.check_illegal and self.refuse(WalkedAway(box.number), "no initial bet")
            return
        action = self.rnd.choice(EXTRAS)
        if self.rnd.random() < 0.7:
            # an offer some box may take now (even money needs the one box with a Blackjack)
            offers = [(box.number, a) for a, why in self.state.legal_decisions(box.number).items()
                      if why is None and a in EXTRAS]
            if offers:
                number, action = self.rnd.choice(offers)
                box = self.state.box(number)
        hand = self.rnd.randint(1, self.profile.hands_per_box) if action in (
            Action.INSURANCE, Action.SURRENDER) and self.profile.is_switch else None
        d = Decision(box.number, action, hand=hand)
        if action == Action.INSURANCE and box.dealt:
            d = Decision(box.number, action, legal_amount(self.rnd, self.state, d), hand)
        self.try_decision(d)

    def check_illegal_for(self, number: int) -> None:
        """Every decision legal_decisions reports illegal is refused, round unchanged."""
        state = self.state
        before = snapshot(state)
        for action, reason in state.legal_decisions(number).items():
            if reason is None:
                continue
            amount = None
            if action == Action.INSURANCE:
                b = next((b for b in state.boxes if b.number == number and b.dealt), None)
                amount = b.hands[0].stake / 2 if b is not None else None
            self.refuse(Decision(number, action, amount), reason, before)
        assert snapshot(state) == before, "refused decisions changed the round"


def play(table: Table, rnd: random.Random, **kw) -> Played:
    return Driver(table, rnd, **kw).play()


def given_rounds(test=None, *, examples: int = EXAMPLES):
    """Parametrize over every shipped profile and draw (table, rnd) for it."""
    if test is None:
        return lambda t: given_rounds(t, examples=examples)

    @pytest.mark.parametrize("name", PROFILE_NAMES)
    @settings(SETTINGS, max_examples=examples)
    @given(data=st.data())
    def wrapper(name, data):
        profile = PROFILES[name]
        table = data.draw(tables(profile), label="table")
        rnd = data.draw(st.randoms(use_true_random=True), label="rnd")
        test(table, rnd)
    wrapper.__name__ = test.__name__
    wrapper.__doc__ = test.__doc__
    return wrapper


# --- the properties ----------------------------------------------------------------------

@given_rounds
def test_random_legal_play_never_crashes_and_always_ends(table: Table, rnd: random.Random):
    """Any legal decision is accepted; the round always reaches complete or void."""
    played = play(table, rnd)
    state = played.state
    assert state.is_over
    assert state.expecting().kind == "nothing"
    s = settlement(state)
    assert s["complete"] is True
    assert s["void"] is (state.phase == Phase.VOID)
    if state.phase == Phase.COMPLETE:
        check_complete_round(played)


def check_complete_round(played: Played) -> None:
    """A completed round settled everything it took, and its outcomes say so."""
    state = played.state
    s = settlement(state)
    hand_outcomes: dict[int, Fraction] = Counter()
    side_outcomes: dict[tuple[int, str], Fraction] = {}
    insurance_outcomes: dict[int, Fraction] = Counter()
    for o in played.outcomes:
        if isinstance(o, HandSettled):
            hand_outcomes[o.box] += o.net
        elif isinstance(o, SideBetSettled):
            assert (o.box, o.bet) not in side_outcomes, f"{o.bet} of box {o.box} settled twice"
            side_outcomes[(o.box, o.bet)] = o.net
        elif isinstance(o, InsuranceSettled):
            insurance_outcomes[o.box] += o.net
        assert not isinstance(o, RoundVoided)
    for box in state.boxes:
        entry = s["boxes"][str(box.number)]
        assert entry["net"] == to_json_number(sum(box.ledger.values(), Fraction(0)))
        if not box.dealt:
            # §5.15: nothing but returned bets on a box with no initial bet
            assert not box.hands
            assert all(v == 0 for v in box.ledger.values())
            assert {r.bet for r in box.returned} == set(box.wagers)
            continue
        for i, hand in enumerate(box.hands, start=1):
            assert hand.settled and hand.result is not None, (
                f"box {box.number} hand {i} ({hand.cards}, {hand.status}) was never settled")
            assert hand.net >= -hand.at_risk
            assert entry["hands"][i - 1]["result"] == hand.result
        main = sum((h.net for h in box.hands), Fraction(0))
        assert box.ledger.get("main", Fraction(0)) == main
        assert hand_outcomes[box.number] == main, "HandSettled outcomes disagree with the ledger"
        for name in box.stakes:
            if name in ("main", "progressive"):
                continue
            assert name in box.side_results, f"side bet {name} of box {box.number} never settled"
            assert side_outcomes[(box.number, name)] == box.ledger[name]
        for family in box.insurance:
            assert family in box.insurance_settled, f"insurance of box {box.number} never settled"
        assert insurance_outcomes[box.number] == box.ledger.get("insurance", Fraction(0))
    # a HandSettled names the hand it settled (by its stable id): the same hand in the final
    # settlement, whatever later splits did to its position.
    for o in played.outcomes:
        if isinstance(o, HandSettled):
            hand = state.hand_by_id(o.box, o.hand)
            assert (hand.result, hand.net) == (o.result, o.net), f"{o} names another hand"


@given_rounds
def test_every_round_replays_to_identical_settlement_and_outcomes(table: Table, rnd: random.Random):
    """DESIGN 'Records': any round replays from its record and settles identically."""
    played = play(table, rnd)
    again, outcomes = replay(table.profile, played.state.history, **table.new_kwargs())
    assert settlement(again) == settlement(played.state)
    assert outcomes == played.outcomes
    assert again.history == played.state.history
    # replaying any prefix reaches the same intermediate state as live play did
    cut = rnd.randint(0, len(played.state.history))
    live = table.new_round()
    for event in played.state.history[:cut]:
        live, _ = live.apply(event)
    partial, _ = replay(table.profile, played.state.history[:cut], **table.new_kwargs())
    assert snapshot(partial) == snapshot(live)


@given_rounds
def test_cards_are_never_created_or_lost(table: Table, rnd: random.Random):
    """Every card drawn is in exactly one hand (dealer or box) and left the shoe once."""
    played = play(table, rnd)
    state = played.state
    drawn = state.cards_dealt()
    held = list(state.dealer) + [c for b in state.boxes for h in b.hands for c in h.cards]
    assert Counter(held) == Counter(drawn)
    assert len(held) == len(drawn)
    assert state.shoe == ShoeComposition.of_decks(table.decks).without(drawn)
    assert len(state.shoe) == 52 * table.decks - len(drawn)
    if state.phase == Phase.COMPLETE and any(b.dealt for b in state.boxes):
        # §3.11: two initial cards to each initial hand, one to the dealer
        assert len(state.dealer) >= 1
        for b in state.boxes:
            for h in b.hands:
                assert len(h.cards) >= (1 if h.split_aces else 2) or h.status == "surrendered"


def max_win(box, profile: Profile, meter: Fraction | None, boxes: int) -> Fraction:
    """The most a box can win: every bet at its best odds."""
    r = profile.rules
    total = sum((h.at_risk * max(Fraction(1), r.blackjack_pays) for h in box.hands), Fraction(0))
    for name, stake in box.stakes.items():
        if name in profile.side_bets:
            total += stake * max(profile.side_bets[name].pays.values())
    total += sum(box.insurance.values(), Fraction(0)) * r.insurance_pays
    table = profile.progressive
    if table is not None and "progressive" in box.stakes:
        best = max((a.value(meter) or Fraction(0)) for a in table.pays.values())
        total += best + (table.envy_bonus or 0) * (boxes - 1)
    return total


@given_rounds(examples=100)    # snapshots the round around every event: the costly one
def test_money_is_conserved_and_bounded(table: Table, rnd: random.Random):
    """A box never loses more than it put at risk nor wins more than its best odds; a void
    returns every bet (§5.17); ``apply`` never mutates the round it was called on."""
    played = play(table, rnd, check_unchanged=True)
    state, profile = played.state, table.profile
    s = settlement(state)
    for box in state.boxes:
        net = sum(box.ledger.values(), Fraction(0))
        entry = s["boxes"][str(box.number)]
        if state.phase == Phase.VOID:
            assert entry["net"] == 0, f"void round: box {box.number} net {entry['net']}"
            assert all(v == 0 for v in entry["bets"].values()), entry["bets"]
            continue
        at_risk = (sum((h.at_risk for h in box.hands), Fraction(0))
                   + sum((v for k, v in box.stakes.items() if k != "main"), Fraction(0))
                   + sum(box.insurance.values(), Fraction(0)))
        assert net >= -at_risk, f"box {box.number} lost {net} with only {at_risk} at risk"
        assert net <= max_win(box, profile, table.meter, len(state.boxes))
        # counted stakes never exceed what was placed (§5.1.1 pro rata)
        for name, stake in box.stakes.items():
            assert 0 < stake <= box.wagers[name]
        if table.limits and "main" in box.stakes and profile.rules.over_maximum == "pro_rata":
            assert box.stakes["main"] == min(box.wagers["main"], table.limits["main"][1])
    if state.phase == Phase.VOID:
        assert any(isinstance(o, RoundVoided) for o in played.outcomes)


@given_rounds(examples=100)    # tries every illegal decision at half the steps
def test_illegal_decisions_are_refused_and_leave_the_round_unchanged(table: Table, rnd: random.Random):
    """What legal_decisions reports illegal raises a RuleError subclass and changes nothing."""
    played = play(table, rnd, check_illegal=True)
    # and once the round is over, nothing more is taken
    state = played.state
    number = rnd.choice(state.boxes).number
    for action in Action:
        reason = state.why_not(Decision(number, action))
        assert reason is not None
    for event in (CardDrawn(ALL_CARDS[0]), Decision(number, Action.STAND), WalkedAway(number),
                  VoidRound("interruption"), BetsClosed.of({1: {"main": 10}})):
        before = snapshot(state)
        with pytest.raises(RuleError):
            state.apply(event)
        assert snapshot(state) == before


@pytest.mark.parametrize("name", PROFILE_NAMES)
@settings(SETTINGS, max_examples=50)
@given(data=st.data())
def test_decisions_before_the_initial_deal_is_complete_are_refused(name, data):
    """§3.11: no decision before the second card to each box; bets closed only once."""
    profile = PROFILES[name]
    table = data.draw(tables(profile), label="table")
    rnd = data.draw(st.randoms(use_true_random=True), label="rnd")
    state = table.new_round()
    for action in Action:
        assert state.why_not(Decision(1, action)) is not None
    state, _ = state.apply(BetsClosed.of(table.wagers))
    shoe = Shoe(table.decks, rnd)
    while state.phase == Phase.INITIAL_DEAL:
        number = rnd.choice(state.boxes).number
        before = snapshot(state)
        for action in Action:
            d = Decision(number, action)
            reason = state.why_not(d)
            assert reason is not None
            with pytest.raises(RuleError):
                state.apply(d)
        assert snapshot(state) == before
        with pytest.raises(RuleError):
            state.apply(BetsClosed.of(table.wagers))
        state, _ = state.apply(CardDrawn(shoe.draw()))


def canonical(obj: Any) -> Any:
    """Everything ``obj`` holds, deeply, as plain values: every slot and attribute of every
    object (the engine's own copy-on-write bookkeeping included), dicts and sets in sorted
    order. The profile is shared configuration and is named, not walked."""
    if obj is None or isinstance(obj, (bool, int, str, Fraction)):
        return (type(obj).__name__, repr(obj))
    if isinstance(obj, Profile):
        return ("Profile", obj.name)
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [canonical(v) for v in obj])
    if isinstance(obj, dict):
        return ("dict", sorted((repr(k), canonical(v)) for k, v in obj.items()))
    if isinstance(obj, (set, frozenset)):
        return (type(obj).__name__, sorted(repr(v) for v in obj))
    names = [n for klass in type(obj).__mro__ for n in getattr(klass, "__slots__", ())]
    names += sorted(getattr(obj, "__dict__", {}))
    return (type(obj).__name__, [(n, canonical(getattr(obj, n))) for n in names if hasattr(obj, n)])


def serialised(state: Round) -> bytes:
    return pickle.dumps(canonical(state), protocol=5)


class KeepingDriver(Driver):
    """Keeps every round of the game with its serialisation taken before it was applied from."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.kept: list[tuple[Round, bytes]] = []

    def apply(self, event, why: str) -> None:
        old = self.state
        self.kept.append((old, serialised(old)))
        super().apply(event, why)
        # the same event again from the same round: the same result, and neither apply
        # disturbed the other (they share everything the event did not touch)
        again, _ = old.apply(event)
        assert serialised(again) == serialised(self.state), f"apply({event!r}) twice differs"


@given_rounds(examples=60)
def test_a_round_applied_from_is_byte_for_byte_unchanged(table: Table, rnd: random.Random):
    """issue 17: ``apply`` shares the boxes and hands an event does not touch with the round it
    came from; every earlier round of the game must still serialise exactly as it did before
    it was applied from, after all the later events (legal and refused) have been applied."""
    driver = KeepingDriver(table, rnd, check_illegal=True)
    played = driver.play()
    assert driver.kept, "no event was applied"
    for i, (state, before) in enumerate(driver.kept):
        assert serialised(state) == before, (f"round {i} (after {state.history[-1:]!r}) changed "
                                             f"after it was applied from")
    assert played.state.is_over


# --- engine bugs found by the properties, as minimal reproductions -------------------------

def test_switch_outcome_names_the_hand_it_settled_after_a_later_split():
    """Switch §3.8 pays hand 2's Blackjack at once; §3.14 then splits hand 1. The outcome said
    'box 1 hand 2 blackjack +10', but after the split hand 2 is the split 8H."""
    profile = PROFILES["rws-blackjack-switch"]
    from firmware.engine.cards import parse_card
    events = [BetsClosed.of({1: {"main": 10}}),
              *(CardDrawn(parse_card(c)) for c in ["8S", "AS", "6D", "8H", "KS"]),
              Decision(1, Action.SPLIT)]
    state, outcomes = replay(profile, events)
    (settled,) = [o for o in outcomes if isinstance(o, HandSettled)]
    assert (settled.hand, settled.result) == (2, "blackjack")
    hand = state.hand_by_id(1, settled.hand)
    assert [str(c) for c in hand.cards] == ["AS", "KS"]
    assert [str(c) for c in state.box(1).hands[1].cards] == ["8H"]   # its position moved


@given_rounds(examples=60)
def test_the_settlement_written_from_the_round_is_its_projections_json_byte_for_byte(table: Table,
                                                                                       rnd: random.Random):
    """``settlement`` writes the usual box's JSON straight from the round (issue 17 speed):
    the same text as each box's ``BoxSettlement.to_json`` (its key order too), at the end of
    a round and part way through it."""
    import json

    import firmware.engine.settlement as projection

    played = play(table, rnd)
    history = played.state.history
    cut = rnd.randint(1, len(history))
    partial, _ = replay(table.profile, history[:cut], **table.new_kwargs())
    for state in (played.state, partial):
        projection._last = (None, ())          # nothing projected yet: the direct path
        direct = json.dumps(settlement(state))
        boxes = {str(b.box): b.to_json() for b in projection.box_settlements(state)}
        assert json.dumps(settlement(state)) == direct       # (now from the projection)
        assert json.dumps(json.loads(direct)["boxes"]) == json.dumps(boxes)


class LongWayDriver(Driver):
    """Applies every event twice: as ``apply`` does (its shortcuts for the initial deal and
    the hand in play) and the long way (those shortcuts turned off); the two rounds must
    serialise the same and give equal outcomes, and the refusals the same reasons.
    ``way``: what turns the shortcuts off (a subclass names another shortcut)."""

    way = staticmethod(lambda: long_way())

    def apply(self, event, why: str) -> None:
        old = self.state
        super().apply(event, why)
        with self.way():
            slow, slow_out = old.apply(event)
        fast, fast_out = old.apply(event)
        assert serialised(slow) == serialised(fast), f"apply({event!r}) differs from the long way"
        assert slow_out == fast_out, f"apply({event!r}) gives other outcomes than the long way"


@contextmanager
def replaced(**methods: Any) -> Iterator[None]:
    """Within: these methods of ``Round`` replaced (a shortcut answering "not mine", or its
    long way); restored after."""
    saved = {name: getattr(Round, name) for name in methods}
    for name, method in methods.items():
        setattr(Round, name, method)
    try:
        yield
    finally:
        for name, method in saved.items():
            setattr(Round, name, method)


def long_way() -> Any:
    """Within: ``Round.apply`` without its shortcuts for the initial deal and the hand in play
    (each answers "not mine")."""
    return replaced(_initial_card=lambda self, card: None, _card_in_play=lambda self, card: None,
                    _decision_in_play=lambda self, event: None)


@given_rounds(examples=60)
def test_the_shortcuts_of_apply_give_the_long_ways_round_byte_for_byte(table: Table, rnd: random.Random):
    """issue 17: ``apply`` takes an initial card, a card for the hand in play and a plain
    decision on it without the general dispatch; every event of random play (legal and
    refused) must give the same round, outcomes and refusal as the long way."""
    driver = LongWayDriver(table, rnd, check_illegal=True)
    played = driver.play()
    assert played.state.is_over
