"""A round of play as a pure state machine: ``round.apply(event) -> (new_round, outcomes)``.

No I/O, no clock, no randomness, no threads. The round that ``apply`` is called on is left
unchanged, so any point of a round can be kept, compared and replayed. Who receives the
next card follows from the dealing procedure (``rws-blackjack-v5 §3.11``), the hand in play
and the decisions taken; :meth:`Round.expecting` says what the round waits for, and
:meth:`Round.why_not` says why a decision would be refused.

Clause references below are to ``rws-blackjack-v5`` unless named; at run time every error
and outcome quotes the clause of the round's own profile (:meth:`Profile.clause`).
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Any, Iterable, Mapping, Sequence

from .cards import _RANK_POS, _SUIT_BASE, Card, ShoeComposition
from .errors import BettingOpen, IllegalDecision, IllegalWager, NotYourTurn, RoundOver, RuleError, UnexpectedCard
from .events import TURN_ACTIONS, Action, BetsClosed, CardDrawn, Decision, Event, VoidRound, Wagers, WalkedAway
from .hand import describe, hand_total
from .money import is_whole_cents, whole_amount, whole_by_id
from .outcomes import (
    BetReturned,
    EnvyBonus,
    HandSettled,
    InsuranceSettled,
    Outcome,
    ProgressiveHit,
    RoundComplete,
    RoundVoided,
    SideBetSettled,
    WagerFlagged,
    hand_settled,
    side_bet_settled,
)
from .profile import Profile
from .progressive import PROGRESSIVE_HANDS
from .sidebets import RANKS_ONLY, SIDE_BETS

ZERO = whole_amount(0)          # the shared zero: a JSON projection knows it by identity
DEALER = "dealer"
#: the events of a round as a persistent list, newest first: (event, the earlier cell)
EventCell = tuple[Event, "EventCell | None"]


class Phase(StrEnum):
    BETTING = "betting"
    INITIAL_DEAL = "initial_deal"
    PLAY = "play"
    DEALER = "dealer"
    COMPLETE = "complete"
    VOID = "void"


# module names for the phases: an Enum member looked up on its class costs more than a global
_BETTING, _INITIAL_DEAL, _PLAY, _DEALER = Phase.BETTING, Phase.INITIAL_DEAL, Phase.PLAY, Phase.DEALER
_COMPLETE, _VOID = Phase.COMPLETE, Phase.VOID
# likewise the actions (``Action.HIT`` costs ~0.3 us, a global ~0.02 us)
_HIT, _STAND, _DOUBLE, _SPLIT = Action.HIT, Action.STAND, Action.DOUBLE, Action.SPLIT
_SURRENDER, _SWITCH, _INSURANCE, _EVEN_MONEY = Action.SURRENDER, Action.SWITCH, Action.INSURANCE, Action.EVEN_MONEY


_new_hand = _new_box = _new_round = object.__new__


@dataclass(slots=True)
class Hand:
    """One hand of a box. ``family`` is the initial hand it descends from (0, or 0/1 in
    Blackjack Switch); split hands share their family's initial bet."""

    family: int
    stake: Fraction
    id: int = 0                    # stable: 1..n for the initial hands, split hands numbered on as formed
    cards: list[Card] = field(default_factory=list)
    doubled: Fraction = ZERO
    from_split: bool = False
    split_aces: bool = False
    switched: bool = False
    wants_card: bool = False
    done: bool = False
    decided: bool = False          # any decision taken on this hand
    status: str = "play"           # play | stood | bust | twenty_one | doubled | blackjack | surrendered | even_money
    result: str | None = None      # set when settled
    net: Fraction | None = None

    def copy(self) -> "Hand":
        """A hand that can be changed without touching this one (its own card list)."""
        # slot by slot, not through the dataclass __init__: this runs for most events
        new = _new_hand(Hand)
        new.family = self.family
        new.stake = self.stake
        new.id = self.id
        new.cards = self.cards[:]
        new.doubled = self.doubled
        new.from_split = self.from_split
        new.split_aces = self.split_aces
        new.switched = self.switched
        new.wants_card = self.wants_card
        new.done = self.done
        new.decided = self.decided
        new.status = self.status
        new.result = self.result
        new.net = self.net
        return new

    @property
    def total(self) -> int:
        return hand_total(self.cards)[0]

    @property
    def soft(self) -> bool:
        return hand_total(self.cards)[1]

    @property
    def is_blackjack(self) -> bool:
        """§1.2 / Switch §1: two initial cards Ace + ten, not from a split or a switch."""
        return (len(self.cards) == 2 and not self.from_split and not self.switched
                and self.total == 21)

    @property
    def settled(self) -> bool:
        return self.net is not None

    @property
    def at_risk(self) -> Fraction:
        doubled = self.doubled
        # (ZERO by identity first: Fraction's bool is Python code)
        return _plus(self.stake, doubled) if doubled is not ZERO and doubled else self.stake


@dataclass(slots=True)
class Box:
    """One box's bets and hands. Rounds share unchanged boxes, so the containers below are
    never changed in place once the box belongs to a round that ``apply`` returned: they
    are replaced (``book`` and the engine's writes build new dicts and sets); only
    ``hands`` is the box's own list (copied with the box)."""

    number: int
    wagers: dict[str, Fraction]            # as placed
    stakes: dict[str, Fraction]            # as counted (after pro rata, returns)
    hands: list[Hand] = field(default_factory=list)
    insurance: dict[int, Fraction] = field(default_factory=dict)   # family -> stake
    insurance_settled: set[int] = field(default_factory=set)
    walked_away: bool = False
    switched: bool = False
    acted: bool = False
    ledger: dict[str, Fraction] = field(default_factory=dict)
    side_results: dict[str, str | None] = field(default_factory=dict)
    flags: list[WagerFlagged] = field(default_factory=list)
    returned: list[BetReturned] = field(default_factory=list)
    progressive_hand: str | None = None
    progressive_award: Fraction | None = None
    progressive_share: Fraction | None = None
    progressive_pending: bool = False
    envy_from: list[int] = field(default_factory=list)

    @property
    def dealt(self) -> bool:
        return "main" in self.stakes

    def copy(self) -> "Box":
        """A box that can be changed without touching this one: its own list of (shared) hands."""
        # slot by slot, not through the dataclass __init__: this runs for most events
        new = _new_box(Box)
        new.number = self.number
        new.wagers = self.wagers
        new.stakes = self.stakes
        new.hands = self.hands[:]
        new.insurance = self.insurance
        new.insurance_settled = self.insurance_settled
        new.walked_away = self.walked_away
        new.switched = self.switched
        new.acted = self.acted
        new.ledger = self.ledger
        new.side_results = self.side_results
        new.flags = self.flags
        new.returned = self.returned
        new.progressive_hand = self.progressive_hand
        new.progressive_award = self.progressive_award
        new.progressive_share = self.progressive_share
        new.progressive_pending = self.progressive_pending
        new.envy_from = self.envy_from
        return new

    def book(self, bet: str, amount: Fraction) -> None:
        # a new dict: the old one may be shared with an earlier round
        if type(amount) is not Fraction:
            amount = Fraction(amount)
        old = self.ledger.get(bet)
        self.ledger = {**self.ledger, bet: amount if old is None else _plus(old, amount)}

    def initial_cards(self) -> list[Card]:
        """The box's initial cards: two, or four in Blackjack Switch (before any switch)."""
        cards: list[Card] = []
        for family in sorted({h.family for h in self.hands}):
            first = next(h for h in self.hands if h.family == family)
            cards.extend(first.cards[:2])
        return cards


@dataclass(frozen=True)
class Expect:
    """What the round waits for next."""

    kind: str                      # "bets" | "card" | "decision" | "nothing"
    box: int | None = None
    hand: int | None = None        # 1-based index into the box's hands
    to_dealer: bool = False

    def __str__(self) -> str:
        if self.kind == "card":
            return "a card for the dealer" if self.to_dealer else f"a card for box {self.box} hand {self.hand}"
        if self.kind == "decision":
            return f"a decision for box {self.box} hand {self.hand}"
        return {"bets": "bets to be closed", "nothing": "nothing: the round is over"}[self.kind]


_BETS = Expect("bets")
_NOTHING = Expect("nothing")
_DEALER_CARD = Expect("card", to_dealer=True)
_DEALER_CARD_NO_HAND: "tuple[Expect, None, None]" = (_DEALER_CARD, None, None)
_EXPECTS: dict[tuple[str, int, int], Expect] = {}


def _expect(kind: str, box: int, hand: int) -> Expect:
    """The (immutable, so shared) Expect for a box's hand: made once, not per query."""
    key = (kind, box, hand)
    found = _EXPECTS.get(key)
    if found is None:
        found = Expect(kind, box, hand)
        if len(_EXPECTS) < 4096:       # box numbers come from outside: keep the cache bounded
            _EXPECTS[key] = found
    return found


class _Table:
    """What the rounds of one game share from :meth:`Round.new` on: the deck count, limits,
    meter and shoe the round started with, and the reason it was voided (set once)."""

    __slots__ = ("decks", "limits", "meter", "shoe_start", "void_reason", "void_clause")

    decks: int
    limits: Mapping[str, tuple[Fraction, Fraction]]
    meter: Fraction | None
    shoe_start: ShoeComposition
    void_reason: str | None
    void_clause: str | None


_new_table = object.__new__
#: the table part of a round with a fresh shoe, no limits and no meter, per deck count (the
#: profiles' ranges: a handful)
_USUAL_TABLES: dict[int, _Table] = {}

#: per box number, per hand index: the Expect of the hand's decision, of its card, and
#: ``expecting_hand``'s answer for its initial card; read by two indexes instead of a tuple
#: key made and hashed per query (:func:`_hand_expects` fills it)
_HAND_EXPECTS: dict[int, list[tuple[Expect, Expect, "tuple[Expect, None, None]"]]] = {}


def _hand_expects(number: int, hi: int) -> tuple[Expect, Expect, "tuple[Expect, None, None]"]:
    """The entry of :data:`_HAND_EXPECTS` for hand ``hi`` (0-based) of box ``number``."""
    row = _HAND_EXPECTS.get(number)
    if row is None:
        if len(_HAND_EXPECTS) >= 4096:  # box numbers come from outside: keep the table bounded
            _HAND_EXPECTS.clear()
        row = _HAND_EXPECTS[number] = []
    while len(row) <= hi:
        n = len(row) + 1
        card = _expect("card", number, n)
        row.append((_expect("decision", number, n), card, (card, None, None)))
    return row[hi]


class Round:
    """The state of one round at one table. Create with :meth:`Round.new`.

    Rounds share structure: ``apply`` copies the list of boxes, and a box or hand only when
    the event writes to it (:meth:`_wbox`, :meth:`_whand`), so every other box and hand is
    the very object of the round it came from. Nothing a returned round holds is changed
    in place afterwards."""

    __slots__ = ("profile", "_table", "phase", "boxes", "dealer", "deal_order",
                 "deal_pos", "cursor", "subsequent_deal", "second_card_seen", "_drawn", "_events",
                 "_fresh")

    profile: Profile
    # ``decks``, ``limits``, ``meter``, ``void_reason`` and ``void_clause`` (properties below)
    # live in one :class:`_Table` that every round of the game shares: set by ``new``, so
    # far only ``_void`` changes them, so a new round copies one slot, not six

    def __init__(self) -> None:  # use Round.new
        self.phase = _BETTING
        self.boxes: list[Box] = []
        self.dealer: list[Card] = []
        self.deal_order: list[tuple[int, int] | str] = []   # (box index, hand index) | DEALER
        self.deal_pos = 0
        self.cursor: tuple[int, int] | None = None
        self.subsequent_deal = False    # a card has been dealt after the initial deal
        self.second_card_seen = False   # the dealer's second card has settled insurance & waiting Blackjacks
        # the shoe as the round found it (``_table.shoe_start``) and how many of each card
        # were drawn from it (one int, :data:`_DRAWN_ONE`): the shoe after a card is read from
        # these (:attr:`shoe`) instead of a new 52-count composition made per card
        self._table: _Table
        self._drawn = 0
        # the events so far as a persistent list, newest first: (event, earlier) | None;
        # appending shares every earlier cell, so no apply copies the history
        self._events: EventCell | None = None
        self._fresh: set[int] | None = None   # ids of the boxes/hands this apply made (writable)

    # --- construction and the functional interface ------------------------------------

    @classmethod
    def new(cls, profile: Profile, decks: int | None = None,
            limits: Mapping[str, Sequence[object]] | None = None,
            meter: Fraction | int | None = None,
            shoe: ShoeComposition | None = None) -> "Round":
        """A round about to close bets. ``shoe`` is what is left in the shoe (default: a
        fresh shoe of ``decks``); ``limits`` are the table's, per bet name ``(min, max)``."""
        decks = profile.default_decks if decks is None else decks
        lo, hi = profile.decks
        if not lo <= decks <= hi:
            raise ValueError(f"{profile.name} is played with {lo} to {hi} decks, not {decks}")
        r = cls()
        r.profile = profile
        # the usual table part (a fresh shoe, no limits, no meter) is one per deck count, shared
        # by every such round (a write gives a round its own: _own_table)
        usual = not limits and meter is None and shoe is None and type(decks) is int
        table = _USUAL_TABLES.get(decks) if usual else None
        if table is None:
            table = _new_table(_Table)
            table.decks = decks
            # no limits: one shared empty mapping, so the boxes made at "no more bets" are known again
            table.limits = _read_limits(profile, limits) if limits else _NO_LIMITS
            table.meter = None if meter is None else Fraction(meter)
            if table.meter is not None and table.meter < 0:
                raise ValueError(f"the meter cannot be negative ({meter})")
            if shoe is not None and max(shoe.counts, default=0) > _DRAWN_MOST:
                # (the cards drawn are counted in 16 bits per card: :data:`_DRAWN_ONE`)
                raise ValueError(f"a shoe holds at most {_DRAWN_MOST} of a card, not {max(shoe.counts)}")
            table.shoe_start = shoe if shoe is not None else _fresh_shoe(decks)
            table.void_reason = table.void_clause = None
            if usual:
                _USUAL_TABLES[decks] = table
        r._table = table
        return r

    # the table's part (one :class:`_Table` shared by the rounds of a game), read and written
    # as the round's own attributes; a write gives this round a table of its own

    @property
    def decks(self) -> int:
        return self._table.decks

    @decks.setter
    def decks(self, decks: int) -> None:
        self._own_table().decks = decks

    @property
    def limits(self) -> Mapping[str, tuple[Fraction, Fraction]]:
        return self._table.limits

    @limits.setter
    def limits(self, limits: Mapping[str, tuple[Fraction, Fraction]]) -> None:
        self._own_table().limits = limits

    @property
    def meter(self) -> Fraction | None:
        return self._table.meter

    @meter.setter
    def meter(self, meter: Fraction | None) -> None:
        self._own_table().meter = meter

    @property
    def void_reason(self) -> str | None:
        return self._table.void_reason

    @void_reason.setter
    def void_reason(self, reason: str | None) -> None:
        self._own_table().void_reason = reason

    @property
    def void_clause(self) -> str | None:
        return self._table.void_clause

    @void_clause.setter
    def void_clause(self, clause: str | None) -> None:
        self._own_table().void_clause = clause

    def _own_table(self) -> "_Table":
        """This round's table part as its own (a copy of the shared one) before a write."""
        old = self._table
        table = self._table = _new_table(_Table)
        table.decks = old.decks
        table.limits = old.limits
        table.meter = old.meter
        table.shoe_start = old.shoe_start
        table.void_reason = old.void_reason
        table.void_clause = old.void_clause
        return table

    def apply(self, event: Event) -> tuple["Round", list[Outcome]]:
        """The round after ``event`` and what it produced; ``self`` is unchanged.
        An illegal event raises a :class:`RuleError` that explains itself."""
        done: tuple[Round, list[Outcome]] | None = None
        phase = self.phase                  # (read once: the phase decides the shortcut)
        if phase is _PLAY:
            # a card or a decision on the hand in play (~15 of a 7-box round's ~33 events):
            # the writes and the hand's flow without the general dispatch; by type, not
            # isinstance (neither event type has subclasses), and no call between (one a
            # play event less: :meth:`_card_in_play`, :meth:`_decision_in_play`)
            if type(event) is CardDrawn:
                done = self._card_in_play(event.card)
            elif type(event) is Decision:
                done = self._decision_in_play(event)
        elif phase is _INITIAL_DEAL:
            if type(event) is CardDrawn:
                # an initial card (15 a round) writes one hand and, but for the last,
                # produces nothing (:meth:`_initial_card`)
                done = self._initial_card(event.card)
        elif phase is _BETTING and type(event) is BetsClosed:
            # "no more bets" with the very wagers closed before (:meth:`_closed_again`)
            done = self._closed_again(event.wagers)
        elif phase is _DEALER and type(event) is CardDrawn:
            done = self._dealer_card(event.card)        # a card to the dealer (~2 a round)
        if done is not None:
            new = done[0]
            new._events = (event, self._events)
            return done
        new = self._clone()
        outcomes: list[Outcome] = []
        new._fresh = set()          # ids of the boxes and hands this apply made (writable)
        # a decision that why_not has just found legal on this very round is not checked again
        checked = _last_legal[0] is self and _last_legal[1] is event
        new._apply(event, outcomes, checked)
        new._fresh = None          # from here on the new round is as unchangeable as this one
        new._events = (event, self._events)
        return new, outcomes

    def _initial_card(self, card: Card) -> "tuple[Round, list[Outcome]] | None":
        """The round after an initial card that is not foreign to the shoe and what it gave,
        else None (``apply`` goes the long way). Such a card changes one hand (or the
        dealer's cards), the deal position and the cards drawn, and but for the last card
        nothing else (``_card`` then ``_advance``, which waits for the next card), so the new
        round copies that one box and hand straight away: no writable-set bookkeeping is
        needed. The last card then goes on through ``_advance`` (the interim settlement)
        with the box and hand it wrote as this apply's own."""
        pos = self.deal_pos
        order = self.deal_order
        if pos + 1 >= len(order):
            return self._last_initial_card(card)
        # (_drawn_with written out: the most frequent card; test_deal_speed holds them equal)
        i = _SUIT_BASE[card.suit] + _RANK_POS[card.rank]
        drawn = self._drawn
        if self._table.shoe_start.counts[i] <= drawn >> _DRAWN_SHIFT[i] & _DRAWN_MOST:
            return None                         # a foreign card voids the round: the long way
        drawn += _DRAWN_ONE[i]
        # (_clone written out: an initial card writes the deal position, the cards drawn and
        # the dealer's cards or the boxes, once each; the rest is as the deal left it)
        new = _new_round(Round)
        new.profile = self.profile
        new._table = self._table
        new.phase = _INITIAL_DEAL
        new.deal_order = order
        new.deal_pos = pos + 1
        # (no hand is in play and no card has been dealt after the initial deal, nor the
        # dealer's second card, before the initial deal ends)
        new.cursor = None
        new.subsequent_deal = new.second_card_seen = False
        new._drawn = drawn
        new._fresh = None
        target = order[pos]
        boxes = new.boxes = self.boxes[:]
        if isinstance(target, str):             # DEALER
            new.dealer = [*self.dealer, card]
        else:
            new.dealer = self.dealer
            bi, hi = target
            # (_dealt_to written out)
            box = boxes[bi] = boxes[bi].copy()
            hand = box.hands[hi] = box.hands[hi].copy()
            hand.cards.append(card)
        return new, []

    def _last_initial_card(self, card: Card) -> "tuple[Round, list[Outcome]] | None":
        """:meth:`_initial_card` of the initial deal's last card (to a box, as §3.11 deals)."""
        pos = self.deal_pos
        target = self.deal_order[pos]
        if isinstance(target, str):
            return None                         # (no deal order ends with the dealer)
        drawn = self._drawn_with(card)
        if drawn is None:
            return None                         # a foreign card voids the round: the long way
        new = self._clone()
        new.deal_pos = pos + 1
        new._drawn = drawn
        bi, hi = target
        box = new.boxes[bi] = _dealt_to(new.boxes[bi], hi, card)
        new._fresh = {id(box), id(box.hands[hi])}     # (as _card's _whand leaves it)
        out: list[Outcome] = []
        # _advance of the initial deal's end: the interim settlement, then the first hand in
        # play; when it waits for its decision (what _settle_hand_flow finds of it), that is
        # all the hand flow does, else the flow goes on the long way from that hand
        new._interim_settlement(out)
        new.phase = _PLAY
        first = new.cursor = new._first_open_hand(0, 0)
        if first is not None:
            box = new.boxes[first[0]]
            if not _waits_for_decision(box, box.hands[first[1]]):
                new._advance(out)
        else:
            new._advance(out)               # (every hand done: the dealer's turn)
        new._fresh = None
        return new, out

    def _closed_again(self, wagers: Wagers) -> "tuple[Round, list[Outcome]] | None":
        """``apply`` of "no more bets" with the very wagers (the same object, deeply
        immutable: :func:`_all_tuples`) that :meth:`_close_bets` last closed at these
        limits: the round as it made it (boxes, deal order, phase, outcomes, all shared and
        never changed in place); ``_advance`` has nothing to do after it. Else None."""
        if type(wagers) is not tuple:       # (only tuples are remembered; None has no len)
            return None
        limits = self._table.limits
        closed = _plan(self.profile).closed.get((id(limits), len(wagers)))
        if closed is None or closed[1] is not wagers or closed[0] is not limits or not _deal_memos:
            return None
        new = self._clone()
        new.boxes = list(closed[2])
        new.deal_order = closed[3]
        new.phase = closed[4]
        return new, list(closed[5])

    def _card_in_play(self, card: Card) -> "tuple[Round, list[Outcome]] | None":
        """``apply`` of a card for the hand in play, else None (the long way, which also
        gives every refusal its reason). The same writes as :meth:`_card`; a card that leaves
        a plain hand below 21 waiting for its decision, and a card that ends the hand when
        the next hand waits for its decision, end there (what :meth:`_settle_hand_flow` would
        find); anything else goes on through :meth:`_advance`."""
        cursor = self.cursor
        if cursor is None:
            return None
        bi, hi = cursor
        box = self.boxes[bi]
        hand = box.hands[hi]
        if not hand.wants_card or hand.done:
            return None                         # refused (or not the usual flow): the long way
        drawn = self._drawn_with(card)
        if drawn is None:
            return None                         # a foreign card voids the round: the long way
        new = self._clone()
        box = box.copy()
        new.boxes[bi] = box
        hand = hand.copy()
        box.hands[hi] = hand
        cards = hand.cards
        cards.append(card)
        hand.wants_card = False
        new.subsequent_deal = True
        new._drawn = drawn
        # what :meth:`_settle_hand_flow` does with the hand now, in its order, for the usual
        # cases; a split hand's first card, split Aces and a walk-away go the long way
        if len(cards) < 2:
            return new._advance_from(box, hand, [])     # a split hand's first card
        total = hand_total(cards)[0]
        doubled = hand.doubled
        if total > 21:
            hand.status = "bust"
            hand.done = True
            # §3.18: a Player who Busts loses his Bets
            out: list[Outcome] = []
            new._settle(box, hand, "bust", _minus(hand.at_risk), "bust", out)
            return new._hand_done(bi, hi, box, hand, out)
        elif total == 21 or (doubled is not ZERO and doubled and len(cards) >= 3):
            # §3.17: no drawing on a Blackjack or 21; §3.22: one card after a double
            hand.status = "twenty_one" if total == 21 else "doubled"
            hand.done = True
            return new._hand_done(bi, hi, box, hand, [])
        elif not hand.split_aces and not box.walked_away and (doubled is ZERO or not doubled):
            return new, []                      # it waits for its decision
        return new._advance_from(box, hand, [])

    def _decision_in_play(self, event: Decision) -> "tuple[Round, list[Outcome]] | None":
        """``apply`` of a plain decision on the hand in play (hit, stand, double, split or
        switch; no amount, no hand named), else None (the long way, which also gives every
        refusal its reason): the same writes as :meth:`_turn`; a hit, a double, and a stand
        whose next hand waits for its decision end there; anything else goes on through
        :meth:`_advance`."""
        action = event.action
        turn_check = _TURN_CHECKS.get(action)
        cursor = self.cursor
        if turn_check is None or cursor is None:
            return None                         # insurance, even money, surrender: the long way
        bi, hi = cursor
        box = self.boxes[bi]
        hand = box.hands[hi]
        if not (_last_legal[0] is self and _last_legal[1] is event):
            # :meth:`_plain_turn_checked` on the box and hand read above
            if (event.amount is not None or event.hand is not None
                    or box.number != event.box
                    or "main" not in box.stakes or box.walked_away or hand.wants_card):
                return None                     # not a plain decision: the long way checks it
            if action is _HIT:
                # :meth:`_check_hit`'s conditions without the call; refused: the long way says why
                if hand.split_aces or hand_total(hand.cards)[0] >= 21:
                    return None
            elif action is _STAND:
                floor = self.profile.rules.must_draw_below      # likewise :meth:`_check_stand`'s
                if floor and hand_total(hand.cards)[0] < floor and not hand.split_aces:
                    return None
            else:
                turn_check(self, box, hand, event)
        new = self._clone()
        box = box.copy()
        new.boxes[bi] = box
        if action is _HIT or action is _STAND or action is _DOUBLE:
            # as :meth:`_turn` makes them; the hand's cards do not change, so its copy shares
            # the card list (:func:`_copy_sharing_cards`)
            box.acted = True
            hand = _copy_sharing_cards(hand)
            box.hands[hi] = hand
            hand.decided = True
            if action is _HIT:
                hand.wants_card = True          # the hand waits for its card
                return new, []
            if action is _STAND:
                hand.status = "stood"
                hand.done = True
                return new._hand_done(bi, hi, box, hand, [])
            amount = event.amount               # a double: the hand then waits for its one card
            hand.doubled = hand.stake if amount is None else amount
            hand.wants_card = True
            return new, []
        new._fresh = {id(box)}                  # split, switch as _turn makes them
        new._turn(event)
        out: list[Outcome] = []
        if action is not _SPLIT:
            # (a split leaves the hand in play waiting for its second card, §3.21.2, where
            # _advance finds nothing to do; a switch may make a 21 that the rules go on from)
            new._advance(out)
        new._fresh = None
        return new, out

    def _advance_from(self, box: Box, hand: Hand, out: list[Outcome]) -> "tuple[Round, list[Outcome]]":
        """The rest of a play event (:meth:`_card_in_play`, :meth:`_hand_done`) the long way:
        :meth:`_advance` on this new round, whose ``box`` and ``hand`` (copied in this apply)
        are the ones it may still write."""
        self._fresh = {id(box), id(hand)}
        self._advance(out)
        self._fresh = None
        return self, out

    def _hand_done(self, bi: int, hi: int, box: Box, hand: Hand,
                   out: list[Outcome]) -> "tuple[Round, list[Outcome]]":
        """The rest of a play event after hand ``hi`` of box ``bi`` (``box``, ``hand``: this
        apply's copies, the cursor's) is done, as :meth:`_advance` goes on from it: the next
        hand not done, when it waits for its decision, is in play and that is all the hand
        flow does; no hand left: the dealer's turn (:meth:`_dealer_flow`); else the long way
        (a split hand's first card, split Aces, a walk-away: :meth:`_advance_from`)."""
        boxes = self.boxes
        nbi = bi + 1
        if hi + 1 == len(box.hands) and nbi < len(boxes) and boxes[nbi].hands and not boxes[nbi].hands[0].done:
            after: tuple[int, int] | None = (nbi, 0)    # (the usual next hand: _first_open_hand's first find)
        else:
            after = self._first_open_hand(bi, hi + 1)
        if after is not None:
            nbox = boxes[after[0]]
            if _waits_for_decision(nbox, nbox.hands[after[1]]):
                self.cursor = after
                return self, out
        # from here the hand is writable in this apply: its own card list (a decision's copy shares it)
        hand.cards = hand.cards[:]
        if after is not None:
            return self._advance_from(box, hand, out)
        # as _advance finds it: the hand in play done (_settle_hand_flow), no open hand after it
        self.cursor = None
        self.phase = _DEALER
        self._fresh = {id(box), id(hand)}
        self._dealer_flow(out)
        self._fresh = None
        return self, out

    def _clone(self) -> "Round":
        """A shallow copy: the boxes list is its own, the boxes and hands are shared. The
        history (``_events``) is left for ``apply`` to set: it always does."""
        new = _new_round(Round)
        new.profile = self.profile
        new._table = self._table                # shared: a write makes the round its own (_own_table)
        new.phase = self.phase
        new.boxes = self.boxes[:]
        new.dealer = self.dealer                # replaced on a dealer card, never changed in place
        new.deal_order = self.deal_order       # replaced, never changed in place
        new.deal_pos = self.deal_pos
        new.cursor = self.cursor
        new.subsequent_deal = self.subsequent_deal
        new.second_card_seen = self.second_card_seen
        new._drawn = self._drawn
        new._fresh = None
        return new

    def _wbox(self, bi: int) -> Box:
        """Box ``bi``, copied on the first write in this apply (the original stays with the
        round ``apply`` was called on)."""
        box = self.boxes[bi]
        assert self._fresh is not None, "a write outside apply"
        if id(box) not in self._fresh:
            box = box.copy()
            self.boxes[bi] = box
            self._fresh.add(id(box))
        return box

    def _whand(self, bi: int, hi: int) -> Hand:
        """Hand ``hi`` of box ``bi``, copied (with its box) on the first write in this apply."""
        box = self._wbox(bi)
        fresh = self._fresh
        assert fresh is not None, "a write outside apply"
        hand = box.hands[hi]
        if id(hand) not in fresh:
            hand = hand.copy()
            box.hands[hi] = hand
            fresh.add(id(hand))
        return hand

    def _box_index(self, number: int) -> int:
        for bi, b in enumerate(self.boxes):
            if b.number == number:
                return bi
        raise IllegalDecision(f"box {number} has no bets in this round")

    @property
    def shoe(self) -> ShoeComposition:
        """What is left in the shoe (a card the shoe could not hold never left it, §5.5.1)."""
        drawn = self._drawn
        start = self._table.shoe_start
        if not drawn:
            return start
        return ShoeComposition(tuple(left - (drawn >> shift & _DRAWN_MOST)
                                     for left, shift in zip(start.counts, _DRAWN_SHIFT, strict=True)))

    @property
    def history(self) -> list[Event]:
        """Every event applied so far, oldest first (a new list on each read)."""
        out: list[Event] = []
        cell = self._events
        while cell is not None:
            event, cell = cell
            out.append(event)
        out.reverse()
        return out

    # --- queries ----------------------------------------------------------------------

    @property
    def is_over(self) -> bool:
        phase = self.phase
        return phase is _COMPLETE or phase is _VOID

    def hand_by_id(self, number: int, hand_id: int) -> Hand:
        """The hand an outcome names: ids stay with their hand when later splits move it."""
        return next(h for h in self.box(number).hands if h.id == hand_id)

    def box(self, number: int) -> Box:
        for b in self.boxes:
            if b.number == number:
                return b
        raise IllegalDecision(f"box {number} has no bets in this round")

    def expecting(self) -> Expect:
        phase = self.phase
        if phase is _PLAY:
            assert self.cursor is not None              # PLAY: a hand is in play
            bi, hi = self.cursor
            box = self.boxes[bi]
            key = ("card" if box.hands[hi].wants_card else "decision", box.number, hi + 1)
            return _EXPECTS.get(key) or _expect(*key)       # (made once: a look-up, no call)
        if phase is _INITIAL_DEAL:
            target = self.deal_order[self.deal_pos]
            if isinstance(target, str):             # DEALER
                return _DEALER_CARD
            bi, hi = target
            key = ("card", self.boxes[bi].number, hi + 1)
            return _EXPECTS.get(key) or _expect(*key)
        if phase is _DEALER:
            return _DEALER_CARD
        if phase is _BETTING:
            return _BETS
        return _NOTHING

    def expecting_hand(self) -> tuple[Expect, Box | None, Hand | None]:
        """:meth:`expecting` with the box and hand in play (both None outside play): what a
        table asks before each event, in one call instead of two."""
        phase = self.phase
        if phase is _PLAY:
            cursor = self.cursor
            assert cursor is not None                   # PLAY: a hand is in play
            bi, hi = cursor
            box = self.boxes[bi]
            hand = box.hands[hi]
            # (subscripts in a try, free in 3.11, where a get and a length check were two calls)
            try:
                entry = _HAND_EXPECTS[box.number][hi]
            except (KeyError, IndexError):
                entry = _hand_expects(box.number, hi)
            return entry[1] if hand.wants_card else entry[0], box, hand
        if phase is _INITIAL_DEAL:               # (as expecting, without a second call)
            target = self.deal_order[self.deal_pos]
            if isinstance(target, str):         # DEALER
                return _DEALER_CARD_NO_HAND
            bi, hi = target
            try:
                return _HAND_EXPECTS[self.boxes[bi].number][hi][2]
            except (KeyError, IndexError):
                return _hand_expects(self.boxes[bi].number, hi)[2]
        return self.expecting(), None, None

    def hand_in_play(self) -> tuple[Box, Hand] | None:
        if self.phase is not _PLAY or self.cursor is None:
            return None
        bi, hi = self.cursor
        return self.boxes[bi], self.boxes[bi].hands[hi]

    def why_not(self, decision: Decision) -> str | None:
        """None when ``decision`` is legal now, else the reason (with its clause)."""
        global _last_legal
        try:
            if not self._plain_turn_checked(decision):
                self._check(decision)
        except RuleError as exc:
            return str(exc)
        # remembered, so that apply(decision) on this round right after does not check it
        # twice: both are immutable, so the answer cannot have changed
        _last_legal = (self, decision)
        return None

    def legal_decisions(self, box: int, hand: int | None = None) -> dict[Action, str | None]:
        """Every decision for ``box`` with None (legal now) or the reason it is not.

        ``hand`` (1-based) names the initial hand for insurance and surrender in Blackjack
        Switch (default: the first). Insurance is asked about at its largest amount, half
        that hand's initial bet."""
        result: dict[Action, str | None] = {}
        for action in Action:
            amount = None
            which = hand if action in (_INSURANCE, _SURRENDER) else None
            if action == _INSURANCE:
                b = next((b for b in self.boxes if b.number == box and b.dealt), None)
                family = (hand or 1) - 1
                if b is not None and any(h.family == family for h in b.hands):
                    amount = self._family_hand(b, family).stake / 2
            result[action] = self.why_not(Decision(box, action, amount, which))
        return result

    @property
    def offers_open(self) -> bool:
        """Insurance, even money and (table-wide window) surrender may still be asked for:
        the initial deal is complete and no further card has been dealt (§3.14, §3.16)."""
        return self.phase in (_PLAY, _DEALER) and not self.subsequent_deal

    def wagered(self, number: int) -> dict[str, Fraction]:
        """What a box put at risk per bet: stakes as counted, with every double and split
        stake under ``main``, and insurance. (Returned bets count nothing.)"""
        box = self.box(number)
        out: dict[str, Fraction] = {}
        for name, stake in box.stakes.items():
            if name != "main":
                out[name] = stake
            elif len(box.hands) == 1:
                out[name] = box.hands[0].at_risk      # (no sum: a Fraction add is costly)
            else:
                out[name] = sum((h.at_risk for h in box.hands), ZERO)
        if box.insurance:
            out["insurance"] = sum(box.insurance.values(), ZERO)
        return out

    def outcome_established(self) -> bool:
        """§5.4: has any bet conclusively won or lost? (Decides void vs. continue after a
        technical interruption.)"""
        for box in self.boxes:
            if box.side_results or box.insurance_settled or box.progressive_hand:
                return True
            if any(h.settled for h in box.hands):
                return True
        return False

    def dealer_total(self) -> int | None:
        return hand_total(self.dealer)[0] if self.dealer else None

    @property
    def dealer_blackjack(self) -> bool:
        return len(self.dealer) == 2 and hand_total(self.dealer)[0] == 21

    def cards_dealt(self) -> list[Card]:
        """Every card of the round in the order it was drawn."""
        return [e.card for e in self.history if isinstance(e, CardDrawn)]

    # --- the state machine ------------------------------------------------------------

    def _apply(self, event: Event, out: list[Outcome], checked: bool = False) -> None:
        phase = self.phase
        if phase is _COMPLETE or phase is _VOID:
            raise RoundOver(f"the round is {phase.value}; it takes no more events")
        # the most frequent events first; a card or decision while betting is open is refused
        if isinstance(event, CardDrawn) and phase is not _BETTING:
            self._card(event.card, out)
        elif isinstance(event, Decision) and phase is not _BETTING:
            if not checked and not self._plain_turn_checked(event):
                self._check(event)
            self._decide(event, out)
        elif isinstance(event, VoidRound):
            if event.reason == "interruption" and self.outcome_established():
                # §5.4.1: once any bet has conclusively won or lost, play continues
                raise RuleError("an outcome has been established: the round is concluded, not voided",
                                self.profile.clause("interruption"))
            self._void(event.reason, out)
            return
        elif isinstance(event, BetsClosed):
            if phase is not _BETTING:
                raise IllegalWager("bets are already closed", self.profile.clause("bets_closed"))
            self._close_bets(event, out)
        elif phase is _BETTING:
            raise BettingOpen("bets are still open: close them before any card or decision",
                              self.profile.clause("bets_closed"))
        elif isinstance(event, WalkedAway):
            self._walked_away(event.box, out)
        else:
            raise TypeError(f"not an event: {event!r}")
        self._advance(out)

    # bets ------------------------------------------------------------------------------

    def _close_bets(self, event: BetsClosed, out: list[Outcome]) -> None:
        p = self.profile
        plan = _plan(p)
        # "no more bets" with the same wagers (by value) at the same limits as a round
        # before closes them the same: the boxes as made, the deal order, the outcomes
        # (all shared: never changed in place); compared as a tuple (C-level, the shared
        # whole amounts by identity first), box numbers only as ints and amounts only as
        # Fractions (an int 10 or True equals them but would make another box)
        wagers = event.wagers
        try:
            count = len(wagers)
        except TypeError:               # (an event made by hand: BetsClosed.of makes a tuple)
            raise IllegalWager(f"{reprlib.repr(wagers)} are not wagers (each box's number and bets)", issue="malformed") from None
        closed = plan.closed.get((id(self.limits), count))
        if (closed is not None and closed[0] is self.limits and closed[1] == wagers
                and _plain_wagers(wagers)):
            if closed[1] is not wagers:
                # these very wagers (a table sends its own event each round) are known again
                # by identity from now on (:meth:`_closed_again`; equal to the entry's, so
                # in tuples all the way down too)
                plan.closed[(id(self.limits), len(wagers))] = (self.limits, wagers, *closed[2:])
            self.boxes = list(closed[2])
            self.deal_order = closed[3]
            self.phase = closed[4]
            out.extend(closed[5])
            return
        self._close_each(event, out)
        if _plain_wagers(wagers) and _all_tuples(wagers):
            if len(plan.closed) >= 4096:        # limits come from outside: bounded
                plan.closed.clear()
            # (the entry holds the limits, so the id in its key is theirs)
            plan.closed[(id(self.limits), len(wagers))] = (self.limits, wagers, tuple(self.boxes),
                                                           self.deal_order, self.phase, tuple(out))

    def _close_each(self, event: BetsClosed, out: list[Outcome]) -> None:
        """"No more bets", box by box (:meth:`_close_bets` on wagers not closed before)."""
        p = self.profile
        plan = _plan(p)
        known = plan.bet_names
        made = plan.boxes
        seen: set[int] = set()
        for entry in event.wagers:
            number, bets = _box_entry(entry)
            if number < 1:
                raise IllegalWager(f"box {number}: boxes are numbered from 1 at the dealer's left",
                                   p.clause("deal"))
            if number in seen:
                raise IllegalWager(f"box {number} is listed twice")
            seen.add(number)
            # the same wagers (by name and amount object) on the same box at the same limits
            # make the same box: taken as made (a returned round's box is never changed in
            # place, so rounds may share it), with the outcomes it gave
            if bets:
                names, amounts = zip(*bets, strict=True)
                key = (id(self.limits), number, names, *map(id, amounts))
            else:
                key = (id(self.limits), number)
            found = made.get(key)
            if found is not None:
                if found[2] is not None:
                    self.boxes.append(found[2])
                out.extend(found[3])
                continue
            given = len(out)
            placed = self._placed(number, bets, known)
            box = self._box_for(number, placed, out) if placed else None
            if box is not None:
                self.boxes.append(box)
            if len(made) >= 4096:           # box numbers and amounts come from outside: bounded
                made.clear()
            # (the entry holds the limits and the amounts, so the ids in its key are theirs)
            made[key] = (self.limits, bets, box, tuple(out[given:]))
        self.boxes.sort(key=_box_number)
        # §3.11: first card to each box with a bet from the dealer's left, one to the
        # dealer, then the second card to each box. Switch §3.3/§3.6: a position's two
        # boxes are dealt as two boxes.
        firsts = [(bi, hi) for bi, b in enumerate(self.boxes) if "main" in b.stakes   # (Box.dealt)
                  for hi in range(len(b.hands))]
        self.deal_order = [*firsts, DEALER, *firsts]
        self.phase = _INITIAL_DEAL if firsts else _COMPLETE
        if not firsts:
            out.append(RoundComplete(None))

    def _placed(self, number: int, bets: tuple[tuple[str, Any], ...],
                known: frozenset[str]) -> dict[str, Fraction]:
        """A box's wagers as placed, each checked (a zero wager is no bet)."""
        placed: dict[str, Fraction] = {}
        for name, amount in bets:
            if type(amount) is not Fraction:
                # an event made by hand, not by BetsClosed.of: a whole int is that amount;
                # anything else (True, 10.0, "10") is no amount (True == 1 would be a wager)
                if type(amount) is not int:
                    raise IllegalWager(f"box {number}: {name!r} wager {amount!r} is not an amount "
                                       f"(a Fraction or a whole number)", box=number, bet=str(name),
                                       issue="not_an_amount")
                amount = whole_amount(amount)
            if name not in known:
                raise IllegalWager(f"box {number}: {name!r} is not a bet at {self.profile.name} "
                                   f"(bets: {', '.join(sorted(known))})", box=number, bet=name,
                                   issue="unknown_bet")
            if name in placed:
                raise IllegalWager(f"box {number}: {name} is listed twice")
            whole = whole_by_id.get(id(amount))     # a shared whole amount: its int
            if whole is None:
                whole = amount.numerator
                if whole >= 0 and not is_whole_cents(amount):
                    raise IllegalWager(f"box {number}: {name} wager {amount} is not a whole number of cents",
                                       box=number, bet=name, issue="not_cents")
            if whole < 0:                  # (an int compare: Fraction's own is Python code)
                raise IllegalWager(f"box {number}: {name} wager {amount} is negative",
                                   box=number, bet=name, issue="negative")
            if whole:
                placed[name] = amount
        return placed

    def _box_for(self, number: int, placed: dict[str, Fraction], out: list[Outcome]) -> Box:
        p = self.profile
        plan = _plan(p)
        box = _make_box(number, dict(placed), {})
        main = placed.get("main")
        if main is not None:
            box.stakes["main"] = main if not self.limits else self._within_limits(box, "main", main, out)
        for name, amount in placed.items():
            if name == "main":
                continue
            if main is None:
                # §5.15: a side bet on a box with no initial bet is removed and returned
                self._return(box, name, amount, "no_initial_bet",
                             p.clause("no_initial_bet" if name != "progressive" else "initial_bets"), out)
                continue
            if name == "progressive":
                assert p.progressive is not None    # "progressive" is a bet only with a progressive
                if amount != p.progressive.wager:
                    raise IllegalWager(f"box {number}: the progressive wager is fixed at "
                                       f"{p.progressive.wager}, not {amount}", p.clause("initial_bets"),
                                       box=number, bet=name, issue="progressive_amount")
                box.stakes[name] = amount
                continue
            requires, max_of_initial_bet = plan.limits[name]
            if requires is not None and requires not in placed:
                # UK poster, TOP 3: "to play this bet, a player must have a 21 + 3 wager"
                self._return(box, name, amount, f"requires_{requires}", p.clause(name), out)
                continue
            if max_of_initial_bet is not None and _above(amount, max_of_initial_bet, main):
                raise IllegalWager(f"box {number}: {name} {amount} is above the initial bet {placed['main']}",
                                   p.clause("side_bet_limit"), box=number, bet=name, issue="above_initial_bet")
            box.stakes[name] = amount if not self.limits else self._within_limits(box, name, amount, out)
        if main is not None:                # (dealt: a main bet is counted whatever the limits)
            stake = box.stakes["main"]
            box.hands = [_make_hand(f, stake, f + 1) for f in range(plan.hands_per_box)]
        return box

    def _within_limits(self, box: Box, name: str, amount: Fraction, out: list[Outcome]) -> Fraction:
        limit = self.limits.get(name)
        if limit is None:
            return amount
        lo, hi = limit
        r = self.profile.rules
        if amount > hi:
            if r.over_maximum == "refuse":
                raise IllegalWager(f"box {box.number}: {name} {amount} is over the maximum {hi}",
                                   self.profile.clause("over_maximum"), box=box.number, bet=name,
                                   issue="over_maximum")
            # §5.1.1: not rejected, so won or lost pro rata on the permissible maximum
            flag = WagerFlagged(box.number, name, "over_maximum", amount, hi, self.profile.clause("over_maximum"))
            box.flags.append(flag)
            out.append(flag)
            return hi
        if amount < lo:
            if r.under_minimum == "refuse":
                raise IllegalWager(f"box {box.number}: {name} {amount} is under the minimum {lo}",
                                   self.profile.clause("under_minimum"), box=box.number, bet=name,
                                   issue="under_minimum")
            # §5.2.1: not noticed in time, so won or lost as placed
            flag = WagerFlagged(box.number, name, "under_minimum", amount, amount, self.profile.clause("under_minimum"))
            box.flags.append(flag)
            out.append(flag)
        return amount

    def _return(self, box: Box, name: str, amount: Fraction, reason: str, clause: str,
                out: list[Outcome]) -> None:
        ret = BetReturned(box.number, name, amount, reason, clause)
        box.returned.append(ret)
        box.book(name, ZERO)
        out.append(ret)

    # cards -----------------------------------------------------------------------------

    def _drawn_with(self, card: Card) -> int | None:
        """The cards drawn with ``card`` added (:data:`_DRAWN_ONE`), or None when the shoe
        as the round found it holds no more of that card."""
        i = _SUIT_BASE[card.suit] + _RANK_POS[card.rank]        # (card_index without the call)
        drawn = self._drawn
        if self._table.shoe_start.counts[i] > drawn >> _DRAWN_SHIFT[i] & _DRAWN_MOST:
            return drawn + _DRAWN_ONE[i]
        return None

    def _card(self, card: Card, out: list[Outcome]) -> None:
        drawn = self._drawn_with(card)
        if drawn is None:
            # §5.5.1 / §5.5.2: a card that does not form part of the set of cards
            self._void("foreign_card", out, detail=f"{card} cannot be in this {self.decks}-deck shoe")
            return
        phase = self.phase
        if phase is _INITIAL_DEAL:
            target = self.deal_order[self.deal_pos]
            self.deal_pos += 1
            if isinstance(target, str):         # DEALER
                self.dealer = [*self.dealer, card]
            else:
                self._whand(*target).cards.append(card)
        elif phase is _PLAY:
            assert self.cursor is not None              # PLAY: a hand is in play
            bi, hi = self.cursor
            box = self.boxes[bi]
            hand = box.hands[hi]
            if not hand.wants_card:
                raise UnexpectedCard(f"box {box.number} hand {hi + 1} ({describe(hand.cards)}) "
                                     f"is waiting for a decision, not a card", self.profile.clause("deal"))
            hand = self._whand(bi, hi)
            hand.cards.append(card)
            hand.wants_card = False
            self.subsequent_deal = True
        elif phase is _DEALER:
            self.dealer = [*self.dealer, card]
            self.subsequent_deal = True
        self._drawn = drawn

    def _advance(self, out: list[Outcome]) -> None:
        """Move the round on until it needs an event from outside."""
        if self.phase is _INITIAL_DEAL:
            if self.deal_pos != len(self.deal_order):
                return                      # the initial deal goes on
            self._interim_settlement(out)
            self.phase = _PLAY
            self.cursor = self._first_open_hand(0, 0)
        while self.phase is _PLAY:
            if self.cursor is None:
                self.phase = _DEALER
                break
            bi, hi = self.cursor
            if self._settle_hand_flow(bi, hi, out):
                self.cursor = self._first_open_hand(bi, hi + 1)
                continue
            break
        if self.phase is _DEALER:
            self._dealer_flow(out)

    def _first_open_hand(self, bi: int, hi: int) -> tuple[int, int] | None:
        while bi < len(self.boxes):
            box = self.boxes[bi]
            while hi < len(box.hands):
                if not box.hands[hi].done:
                    return bi, hi
                hi += 1
            bi, hi = bi + 1, 0
        return None

    def _settle_hand_flow(self, bi: int, hi: int, out: list[Outcome]) -> bool:
        """Complete what the rules do by themselves for the hand in play; True when it is done.
        The hand is only copied (:meth:`_whand`) when the rules change it."""
        box = self.boxes[bi]
        hand = box.hands[hi]
        if hand.done:
            return True
        if hand.wants_card:
            return False
        if len(hand.cards) < 2:
            # §3.21.2: a split hand receives its second card when the hand before it is complete
            self._whand(bi, hi).wants_card = True
            return False
        total = hand_total(hand.cards)[0]       # (Hand.total without the property call)
        if total > 21:
            hand = self._whand(bi, hi)
            hand.status = "bust"
            hand.done = True
            # §3.18: a Player who Busts loses his Bets
            self._settle(self.boxes[bi], hand, "bust", _minus(hand.at_risk), "bust", out)
            return True
        if total == 21:
            # §3.17: no drawing on a Blackjack or 21
            hand = self._whand(bi, hi)
            hand.status = "twenty_one"
            hand.done = True
            return True
        # (ZERO by identity first: Fraction's bool is Python code)
        if len(hand.cards) >= 3 and hand.doubled is not ZERO and hand.doubled:
            hand = self._whand(bi, hi)
            hand.status = "doubled"   # §3.22: exactly one card after a double
            hand.done = True
            return True
        r = self.profile.rules
        if hand.split_aces:
            # §3.21.2: split Aces draw one card each; a new pair of Aces may be split again
            # only where the rules allow it.
            if not (r.resplit_aces and self._can_split_count(box, hand)
                    and hand.cards[0].rank == hand.cards[1].rank == "A"):
                hand = self._whand(bi, hi)
                hand.status = "stood"
                hand.done = True
                return True
        if box.walked_away:
            # §5.3: the House draws for the player until the hand reaches 12 or more
            hand = self._whand(bi, hi)
            if total < r.walked_away_draw_to:
                hand.wants_card = True
                return False
            hand.status = "stood"
            hand.done = True
            return True
        return False

    # interim settlement -----------------------------------------------------------------

    def _interim_settlement(self, out: list[Outcome]) -> None:
        """§1.17, §3.13: side bets and (where due) Blackjacks settle after the initial deal,
        before any further card; Switch §3.7 progressive hands likewise (100% at the end)."""
        p = self.profile
        up = self.dealer[0]
        plan = _plan(p)
        paid_at_once = _blackjacks_paid_at_once(p.rules.blackjack_paid_at_once, up.rank)
        boxes = self.boxes
        fresh = self._fresh
        assert fresh is not None, "a write outside apply"
        quick = _INTERIM_BOXES if _deal_memos else _NOTHING_REMEMBERED
        for bi, box in enumerate(boxes):
            stakes = box.stakes
            if "main" not in stakes:        # (not Box.dealt)
                continue
            if len(stakes) > 1:
                # a box of one hand whose side bets read only the ranks, settled before with
                # the same stakes, ledger and results on the same two ranks (no Blackjack):
                # the same new ledger, results and records (:data:`_INTERIM_BOXES`)
                hands = box.hands
                cards = hands[0].cards
                key = (id(stakes), cards[0].rank, cards[1].rank)
                found = quick.get(key)
                if not (found is not None and found[0] is stakes and found[2] is box.ledger
                        and found[3] is box.side_results and found[1] is plan and found[4] == box.number
                        and len(hands) == 1):
                    # not by these ranks: by two ranks its side bets judge alike, if settled before
                    found = _interim_alike(key, box, up, plan) if quick is _INTERIM_BOXES and len(hands) == 1 \
                        else None
                if found is not None:
                    if id(box) not in fresh:
                        box = boxes[bi] = box.copy()
                        fresh.add(id(box))
                    box.ledger = found[5]
                    box.side_results = found[6]
                    out.extend(found[7])
                    continue                # (the two ranks make no 21: no Blackjack to settle)
                ledger, side_results = box.ledger, box.side_results
                if id(box) not in fresh:    # (_wbox written out) copied only when it has side bets to settle
                    box = box.copy()
                    boxes[bi] = box
                    fresh.add(id(box))
                _, nets, results, records = _sides_settled(box.number, stakes, cards, up, plan)
                box.ledger = nets if not ledger else _booked(ledger, nets)
                box.side_results = results if not side_results else {**side_results, **results}
                out.extend(records)
                if quick is _INTERIM_BOXES and len(hands) == 1 and plan.judges[id(stakes)][2]:
                    # (the entry holds the stakes, ledger and results, so their ids are theirs)
                    _remember_interim(key, (stakes, plan, ledger, side_results, box.number, box.ledger,
                                            box.side_results, records), cards, up)
            for hi, hand in enumerate(box.hands):
                if _two_card_21(hand.cards) and not hand.from_split and not hand.switched:   # is_blackjack
                    hand = self._whand(bi, hi)
                    box = self.boxes[bi]        # (the box as this apply writes it)
                    hand.status = "blackjack"
                    hand.done = True
                    if paid_at_once:
                        # §3.15 (and Switch §3.8: immediately, kept whatever the dealer draws)
                        self._settle(box, hand, "blackjack", _blackjack_net(hand.stake, p.rules.blackjack_pays),
                                     "blackjack_settlement", out)
        self._progressive(out)

    def _progressive(self, out: list[Outcome]) -> None:
        p = self.profile
        table = p.progressive
        if table is None:
            return
        evaluator = PROGRESSIVE_HANDS[table.hand]
        clause = p.clause("progressive")
        hits: dict[int, str | None] = {}
        for box in self.boxes:
            if not box.dealt:
                continue
            cards = box.initial_cards()
            if evaluator.cards == 3:
                cards = [*box.hands[0].cards[:2], self.dealer[0]]
            hits[box.number] = evaluator.evaluate(tuple(cards))
        for bi in range(len(self.boxes)):
            if "progressive" not in self.boxes[bi].stakes:
                continue
            box = self._wbox(bi)
            box.book("progressive", -box.stakes["progressive"])
            category = hits.get(box.number)
            award = table.pays.get(category) if category else None
            if award is not None:
                box.progressive_hand = category
                box.progressive_share = award.meter_share
                box.progressive_award = award.value(self.meter)
                if award.meter_share is not None:
                    box.progressive_pending = True      # §3.7: 100% wins settle at the end
                elif box.progressive_award is not None:
                    box.book("progressive", box.progressive_award)
                assert category is not None         # an award is found by its category
                out.append(ProgressiveHit(box.number, category, box.progressive_award,
                                          award.meter_share, clause))
            # §3.7.2: every *other* progressive player gets an envy bonus for each
            # player with initial wagers who has the envy hand.
            if table.envy_bonus is not None:
                box.envy_from = [n for n, c in hits.items() if c == table.envy_category and n != box.number]

    # decisions -------------------------------------------------------------------------

    def _check(self, d: Decision) -> None:
        """Raise the reason ``d`` is illegal now; return when it is legal."""
        p = self.profile
        r = p.rules
        phase = self.phase
        if phase is _COMPLETE or phase is _VOID:
            raise RoundOver(f"the round is {phase.value}; it takes no more decisions")
        if phase is _BETTING:
            raise BettingOpen("bets are still open", p.clause("bets_closed"))
        if phase is _INITIAL_DEAL:
            raise IllegalDecision("the initial deal is not complete: decisions come after the second card "
                                  "to each box", p.clause("deal"))
        box = self._box_asked(d.box)
        if not box.dealt:
            raise IllegalDecision(f"box {d.box} has no initial bet and is not dealt", p.clause("no_initial_bet"))
        if box.walked_away:
            raise IllegalDecision(f"the player at box {d.box} walked away: the House draws for the hand",
                                  p.clause("walked_away"))
        if d.amount is not None and d.action not in (_DOUBLE, _INSURANCE):
            raise IllegalDecision(f"{d.action} takes no amount")
        if d.amount is not None and not is_whole_cents(d.amount):
            raise IllegalDecision(f"{d.action} amount {d.amount} is not a whole number of cents")
        up = self.dealer[0]
        if d.action in TURN_ACTIONS:
            cur = self.hand_in_play()
            if cur is None:
                raise NotYourTurn("no hand is in play: the dealer is drawing", p.clause("dealer"))
            cbox, chand = cur
            assert self.cursor is not None          # a hand in play is the cursor's
            if cbox.number != d.box:
                raise NotYourTurn(f"box {cbox.number} is in play, not box {d.box}", p.clause("deal"))
            if d.hand is not None and d.hand != self.cursor[1] + 1:
                raise NotYourTurn(f"box {d.box} hand {self.cursor[1] + 1} is in play, not hand {d.hand}")
            if chand.wants_card:
                raise IllegalDecision(f"box {d.box} hand {self.cursor[1] + 1} is waiting for its card",
                                      p.clause("deal"))
            _TURN_CHECKS[d.action](self, box, chand, d)
            return
        if d.action == _INSURANCE:
            if not r.insurance:
                raise IllegalDecision(f"insurance is not offered at {p.name}", p.document)
            if not up.is_ace:
                raise IllegalDecision(f"insurance is offered only when the dealer's first card is an Ace "
                                      f"(it is {up})", p.clause("insurance"))
            if self.subsequent_deal:
                raise IllegalDecision("insurance must be placed before any additional card is dealt",
                                      p.clause("insurance"))
            family = self._family(box, d)
            hand = self._family_hand(box, family)
            if family in box.insurance:
                raise IllegalDecision(f"box {d.box} hand {family + 1} is already insured", p.clause("insurance"))
            if hand.status == "even_money":
                raise IllegalDecision(f"box {d.box} took even money; its hand is settled", p.clause("even_money"))
            if d.amount is None or d.amount <= 0:
                raise IllegalDecision("insurance needs an amount above zero", p.clause("insurance"))
            if d.amount > hand.stake / 2:
                raise IllegalDecision(f"insurance {d.amount} is more than half the initial bet {hand.stake}",
                                      p.clause("insurance"))
            return
        if d.action == _EVEN_MONEY:
            if not r.even_money:
                raise IllegalDecision(f"even money is not offered at {p.name}", p.document)
            if not up.is_ace:
                raise IllegalDecision(f"even money is offered only when the dealer's first card is an Ace "
                                      f"(it is {up})", p.clause("even_money"))
            if self.subsequent_deal:
                raise IllegalDecision("even money must be asked for before the dealer draws a third card "
                                      "for any player", p.clause("even_money"))
            hand = box.hands[0]
            if not hand.is_blackjack or hand.settled:
                raise IllegalDecision(f"box {d.box} has no unsettled Blackjack ({describe(hand.cards)})",
                                      p.clause("even_money"))
            if box.insurance:
                raise IllegalDecision(f"box {d.box} is insured; even money is instead of insurance",
                                      p.clause("even_money"))
            return
        if d.action == _SURRENDER:
            if not r.surrender:
                raise IllegalDecision(f"surrender is not offered at {p.name}", p.document)
            if up.is_ace:
                raise IllegalDecision("surrender is not allowed when the dealer's first card is an Ace",
                                      p.clause("surrender"))
            family = self._family(box, d)
            hand = self._family_hand(box, family)
            if len([h for h in box.hands if h.family == family]) > 1 or hand.from_split:
                raise IllegalDecision("a split hand cannot be surrendered", p.clause("split"))
            if box.switched:
                raise IllegalDecision(f"box {d.box} has switched; a switched hand cannot be surrendered",
                                      p.clause("surrender"))
            if r.surrender_window == "before_any_draw" and self.subsequent_deal:
                raise IllegalDecision("surrender must be decided before any additional card is dealt to any player",
                                      p.clause("surrender"))
            if hand.status == "surrendered":
                raise IllegalDecision(f"box {d.box} hand {family + 1} is already surrendered", p.clause("surrender"))
            if hand.decided or len(hand.cards) != 2 or (r.surrender_window == "own_first_decision" and box.acted):
                raise IllegalDecision(f"box {d.box} hand {family + 1} has already been played; surrender comes "
                                      "immediately after the initial two cards", p.clause("surrender"))
            if hand.is_blackjack:
                raise IllegalDecision("a Blackjack takes no further decisions", p.clause("no_draw_on_21"))
            return
        raise IllegalDecision(f"unknown decision {d.action!r}")

    def _plain_turn_checked(self, d: Decision) -> bool:
        """The usual decision, a plain one on the hand in play: when every check that
        :meth:`_check` makes before the decision's own passes, only that one is made here
        (it raises as there). False: not such a decision, :meth:`_check` goes the long way
        (the callers: :meth:`why_not`, :meth:`_apply`)."""
        turn_check = _TURN_CHECKS.get(d.action)
        cursor = self.cursor
        if (turn_check is None or self.phase is not _PLAY or cursor is None
                or d.amount is not None or d.hand is not None):
            return False
        box = self.boxes[cursor[0]]
        if box.number != d.box or "main" not in box.stakes or box.walked_away:
            return False
        hand = box.hands[cursor[1]]
        if hand.wants_card:
            return False
        turn_check(self, box, hand, d)
        return True

    def _box_asked(self, number: int) -> Box:
        """The box a decision names: mostly the box in play, found without a search."""
        cursor = self.cursor
        if cursor is not None:
            box = self.boxes[cursor[0]]
            if box.number == number:
                return box
        return self.box(number)

    def _family(self, box: Box, d: Decision) -> int:
        n = 1 if d.hand is None else d.hand
        if not 1 <= n <= self.profile.hands_per_box:
            raise IllegalDecision(f"box {box.number} has {self.profile.hands_per_box} initial hand(s), not hand {n}")
        return n - 1

    @staticmethod
    def _family_hand(box: Box, family: int) -> Hand:
        return next(h for h in box.hands if h.family == family)

    def _check_hit(self, box: Box, hand: Hand, d: Decision) -> None:
        p = self.profile
        if hand.split_aces:
            raise IllegalDecision("split Aces receive one card each", p.clause("split_aces"))
        total = hand_total(hand.cards)[0]       # (Hand.total without the property call)
        if total >= 21:
            raise IllegalDecision(f"a hand of {total} draws no more cards", p.clause("no_draw_on_21"))

    def _check_stand(self, box: Box, hand: Hand, d: Decision) -> None:
        p = self.profile
        floor = p.rules.must_draw_below
        if floor and hand_total(hand.cards)[0] < floor and not hand.split_aces:
            raise IllegalDecision(f"{describe(hand.cards)} is below {floor}: the hand must draw",
                                  p.clause("must_draw"))

    def _check_double(self, box: Box, hand: Hand, d: Decision) -> None:
        p = self.profile
        r = p.rules
        if len(hand.cards) != 2 or hand.decided:
            raise IllegalDecision("a double is only on the first two cards of a hand", p.clause("double"))
        if hand.split_aces:
            raise IllegalDecision("split Aces cannot be doubled", p.clause("double"))
        if hand.from_split and not r.double_after_split:
            raise IllegalDecision("no double after a split", p.clause("double"))
        total = hand.total
        if total == 21:
            raise IllegalDecision("no double on a Blackjack or a 21", p.clause("double"))
        if not r.double_with_ace and any(c.is_ace for c in hand.cards):
            raise IllegalDecision("a double is not allowed when the cards include an Ace", p.clause("double"))
        if r.double_totals and total not in r.double_totals:
            raise IllegalDecision(f"a double needs a total of {', '.join(map(str, r.double_totals))}, "
                                  f"not {total}", p.clause("double"))
        amount = hand.stake if d.amount is None else d.amount
        if amount is hand.stake:
            # the usual double, of the stake itself: equal to it and not above it; its sign
            # from the numerator (a Fraction's denominator is positive) without a Fraction compare
            if amount.numerator <= 0:
                raise IllegalDecision("a double needs an amount above zero", p.clause("double"))
            return
        if amount <= 0:
            raise IllegalDecision("a double needs an amount above zero", p.clause("double"))
        if r.double_amount == "equal" and amount != hand.stake:
            raise IllegalDecision(f"the double must equal the initial bet {hand.stake}, not {amount}",
                                  p.clause("double"))
        if amount > hand.stake:
            raise IllegalDecision(f"the double {amount} is more than the initial bet {hand.stake}",
                                  p.clause("double"))

    def _can_split_count(self, box: Box, hand: Hand) -> bool:
        limit = self.profile.rules.max_hands
        return limit == 0 or sum(1 for h in box.hands if h.family == hand.family) < limit

    def _check_split(self, box: Box, hand: Hand, d: Decision) -> None:
        p = self.profile
        r = p.rules
        doubled = hand.doubled                  # (ZERO by identity first: Fraction's bool is Python code)
        if len(hand.cards) != 2 or (doubled is not ZERO and doubled) or (hand.decided and not hand.split_aces):
            raise IllegalDecision("only the first two cards of a hand can be split", p.clause("split"))
        a, b = hand.cards
        if a.value != b.value:
            raise IllegalDecision(f"{a} and {b} are not of identical value", p.clause("split"))
        if hand.split_aces and not r.resplit_aces:
            raise IllegalDecision("a pair of Aces can only be split once", p.clause("split_aces"))
        if not self._can_split_count(box, hand):
            raise IllegalDecision(f"no more than {r.max_hands} hands from one initial hand",
                                  p.clause("max_hands"))

    def _check_switch(self, box: Box, hand: Hand, d: Decision) -> None:
        p = self.profile
        if not p.is_switch:
            raise IllegalDecision(f"switching is a Blackjack Switch decision, not offered at {p.name}", p.document)
        clause = p.clause("switch")
        if box.switched:
            raise IllegalDecision(f"box {box.number} has already switched", clause)
        if any(h.is_blackjack for h in box.hands):
            raise IllegalDecision("no switch with a Blackjack", clause)
        if any(h.status == "surrendered" for h in box.hands):
            raise IllegalDecision("no switch after a surrender", clause)
        if any(h.decided for h in box.hands) or len(box.hands) != 2:
            raise IllegalDecision("the switch must be decided before hit, stand, split or double", clause)

    def _decide(self, d: Decision, out: list[Outcome]) -> None:
        if d.action in TURN_ACTIONS:
            self._turn(d)
            return
        bi = self._box_index(d.box)
        box = self._wbox(bi)
        if d.action == _INSURANCE:
            assert d.amount is not None             # _check: insurance has an amount above zero
            box.insurance = {**box.insurance, self._family(box, d): d.amount}
            return
        if d.action == _EVEN_MONEY:
            hand = self._whand(bi, 0)
            hand.status = "even_money"
            # §3.14.1: paid 1 to 1 before the dealer draws on
            self._settle(box, hand, "even_money", hand.stake, "even_money", out)
            return
        if d.action == _SURRENDER:
            family = self._family(box, d)
            hand = self._whand(bi, next(i for i, h in enumerate(box.hands) if h.family == family))
            hand.status = "surrendered"
            hand.done = True
            hand.decided = True
            # §3.16, §1.17: half the initial bet is given up at the interim settlement
            self._settle(box, hand, "surrender", _surrender_net(hand.stake), "surrender", out)
            return
        raise IllegalDecision(f"unknown decision {d.action!r}")     # (_check refused it already)

    def _turn(self, d: Decision) -> None:
        """A decision on the hand in play (_check: the box decided on is the box in play)."""
        assert self.cursor is not None
        bi, hi = self.cursor
        box = self._wbox(bi)
        box.acted = True
        if d.action == _SWITCH:
            first, second = self._whand(bi, 0), self._whand(bi, 1)
            first.cards[1], second.cards[1] = second.cards[1], first.cards[1]
            first.switched = second.switched = True
            box.switched = True
            return
        hand = self._whand(bi, hi)
        hand.decided = True
        if d.action == _HIT:
            hand.wants_card = True
        elif d.action == _STAND:
            hand.status = "stood"
            hand.done = True
        elif d.action == _DOUBLE:
            hand.doubled = hand.stake if d.amount is None else d.amount
            hand.wants_card = True
        elif d.action == _SPLIT:
            aces = hand.cards[0].is_ace
            moved = hand.cards.pop()
            # (Hand(family=..., stake=..., id=..., cards=[moved], from_split=True, split_aces=aces,
            # switched=hand.switched) slot by slot: the dataclass __init__ is several times slower)
            new = _make_hand(hand.family, hand.stake, max(h.id for h in box.hands) + 1)
            new.cards.append(moved)
            new.from_split = True
            new.split_aces = aces
            new.switched = hand.switched
            hand.from_split = True
            hand.split_aces = aces
            hand.decided = False
            box.hands.insert(hi + 1, new)
            assert self._fresh is not None, "a write outside apply"
            self._fresh.add(id(new))
            # §3.21.2: the first split hand gets its second card at once
            hand.wants_card = True

    def _walked_away(self, number: int, out: list[Outcome]) -> None:
        bi = self._box_index(number)
        if not self.boxes[bi].dealt:
            raise IllegalDecision(f"box {number} has no initial bet", self.profile.clause("no_initial_bet"))
        self._wbox(bi).walked_away = True

    # dealer and final settlement ------------------------------------------------------

    def _dealer_card(self, card: Card) -> "tuple[Round, list[Outcome]] | None":
        """``apply`` of a card to the dealer that is not foreign to the shoe (else None: the
        long way voids the round): what ``_apply``'s ``_card`` and ``_advance`` do in the
        dealer's phase, without their dispatch (test_end_speed holds the two equal)."""
        drawn = self._drawn_with(card)
        if drawn is None:
            return None
        new = self._clone()
        new.dealer = [*self.dealer, card]
        new.subsequent_deal = True
        new._drawn = drawn
        new._fresh = set()          # ids of the boxes and hands this apply made (writable)
        out: list[Outcome] = []
        new._dealer_flow(out)
        new._fresh = None
        return new, out

    def _dealer_flow(self, out: list[Outcome]) -> None:
        p = self.profile
        total: int | None = None
        while True:
            dealer = self.dealer
            if len(dealer) == 1:
                if self._waiting_on_dealer():
                    return   # European no-hole-card: the second card comes after all players acted
                break
            total = hand_total(dealer)[0]                   # (counted once per dealer step)
            blackjack = total == 21 and len(dealer) == 2    # (dealer_blackjack)
            if not self.second_card_seen:
                self.second_card_seen = True
                self._settle_dealer_second_card(out, blackjack)
            if blackjack or total >= p.rules.dealer_stands_on:
                break
            if not self._any_live():
                break   # nothing left that the dealer's total can decide
            return
        self._final_settlement(out, total)

    def _live(self, hand: Hand) -> bool:
        return hand.done and not hand.settled and hand.status != "blackjack"

    def _any_live(self) -> bool:
        """Is any hand left that the dealer's total decides? (:meth:`_live`, without a call per hand.)"""
        for box in self.boxes:
            for h in box.hands:
                if h.done and h.net is None and h.status != "blackjack":
                    return True
        return False

    def _waiting_on_dealer(self) -> bool:
        for box in self.boxes:
            if box.insurance and any(f not in box.insurance_settled for f in box.insurance):
                return True
            for h in box.hands:
                if h.net is None:               # (not settled)
                    return True
        return False

    def _settle_dealer_second_card(self, out: list[Outcome], dealer_bj: bool) -> None:
        """The dealer's second card decides insurance and the Blackjacks that waited (§3.14,
        §3.15); ``dealer_bj``: the dealer has a Blackjack (:attr:`dealer_blackjack`)."""
        p = self.profile
        up = self.dealer[0].rank
        if up != "A" and _blackjacks_paid_at_once(p.rules.blackjack_paid_at_once, up):
            # nothing waits for the second card: insurance is offered only against an Ace
            # (_check, §3.14) and every Blackjack was paid at the interim settlement (§3.15)
            return
        self._second_card_settles(out, dealer_bj)

    def _second_card_settles(self, out: list[Outcome], dealer_bj: bool) -> None:
        """Every box's insurance and waiting Blackjack settled on the dealer's second card
        (:meth:`_settle_dealer_second_card` without its shortcut)."""
        p = self.profile
        boxes = self.boxes
        for bi, box in enumerate(boxes):        # (boxes[bi] is replaced in place: enumerate reads it anew)
            if box.insurance:
                for family, stake in sorted(box.insurance.items()):
                    net = stake * p.rules.insurance_pays if dealer_bj else -stake
                    box = self._wbox(bi)
                    box.insurance_settled = box.insurance_settled | {family}
                    box.book("insurance", net)
                    out.append(InsuranceSettled(box.number, family + 1, stake, net, p.clause("insurance")))
            for hi, hand in enumerate(box.hands):
                if hand.status == "blackjack" and hand.net is None:        # (not settled)
                    hand = self._whand(bi, hi)
                    box = boxes[bi]
                    if dealer_bj:
                        self._settle(box, hand, "stand_off", ZERO, "blackjack_settlement", out)
                    else:
                        self._settle(box, hand, "blackjack", _blackjack_net(hand.stake, p.rules.blackjack_pays),
                                     "blackjack_settlement", out)

    def _final_settlement(self, out: list[Outcome], dealer_total: int | None = None) -> None:
        """Every hand the dealer's final hand decides (``dealer_total``: its total, if counted)."""
        p = self.profile
        r = p.rules
        if dealer_total is None:
            dealer_total = hand_total(self.dealer)[0]
        dealer_bj = dealer_total == 21 and len(self.dealer) == 2       # (dealer_blackjack)
        progressive = p.progressive is not None
        collects = dealer_bj and r.dealer_blackjack_collects == "initial_bet"
        # what decides a live hand besides its own total: the dealer's total, or where the
        # hand's total does not count, 0 for a dealer Blackjack (every live hand loses), -2 for
        # Switch §3.19.2's push total (stands off) and -1 for a dealer bust (wins)
        push_total = r.dealer_push_total
        dealer = (0 if dealer_bj else -2 if push_total and dealer_total == push_total
                  else -1 if dealer_total > 21 else dealer_total)
        plan = _plan(p)
        plan_id = id(plan)
        counts = dealer > 0         # (a live hand's total decides only against a dealer's total that stands)
        boxes = self.boxes
        fresh = self._fresh
        assert fresh is not None, "a write outside apply"
        for bi, box in enumerate(boxes):
            if collects:
                self._collect_initial_bets(bi, out)
                box = boxes[bi]
            hands = box.hands
            if len(hands) != 1:
                self._settle_live_hands(bi, dealer, plan, out)
            elif (hand := hands[0]).done and hand.net is None and hand.status != "blackjack":     # (live)
                # a box of one live hand: settled as remembered by what decides it (_one_hand_settled)
                risk = hand.stake if hand.doubled is ZERO else hand.at_risk
                ledger = box.ledger
                # what decides it (_against_dealer): its total above, below or level with the
                # dealer's, else the dealer's Blackjack, bust or push total; not the two totals,
                # so a box's entries are a handful, not one per pair of totals
                total = hand_total(hand.cards)[0] if counts else 0
                decides = (1 if total > dealer else 2 if total < dealer else 3) if counts else dealer
                key = (box.number, hand.id, id(risk), decides, id(ledger), plan_id)
                found = _ONE_HAND.get(key)
                # (the entry holds the amount, ledger and plan, so their ids are not another's)
                if found is None or found[0] is not risk or found[1] is not ledger or found[2] is not plan:
                    found = _one_hand_settled(key, risk, ledger, plan, total, dealer)
                # (the hand's copy shares its card list: a finished round takes no card)
                if id(box) not in fresh:        # (_whand written out: a hand is this apply's only
                    box = box.copy()            # if its box is, so both are copied)
                    boxes[bi] = box
                    if progressive:             # (only the progressive's end writes the box again)
                        fresh.add(id(box))
                    hand = _copy_sharing_cards(hand)
                    box.hands[0] = hand
                elif id(hand) not in fresh:
                    hand = _copy_sharing_cards(hand)
                    box.hands[0] = hand
                hand.result = found[3]
                hand.net = found[4]
                box.ledger = found[6]
                out.append(found[5])
            if progressive:
                self._settle_progressive_end(bi, out)
        self.phase = _COMPLETE
        self.cursor = None
        done = _ROUND_COMPLETE.get(dealer_total)
        if done is None:
            done = _ROUND_COMPLETE[dealer_total] = RoundComplete(dealer_total)
        out.append(done)

    def _collect_initial_bets(self, bi: int, out: list[Outcome]) -> None:
        """§3.21.3 / §3.22.2: against a dealer Blackjack, box ``bi``'s hands that have not bust
        lose only the initial bet."""
        box = self.boxes[bi]
        for family in sorted({h.family for h in box.hands}):
            live = [hi for hi, h in enumerate(box.hands) if h.family == family and self._live(h)]
            if not live:
                continue
            loss = min(box.hands[live[0]].stake, sum((box.hands[hi].at_risk for hi in live), ZERO))
            for i, hi in enumerate(live):
                hand = self._whand(bi, hi)
                box = self.boxes[bi]
                self._settle(box, hand, "lose", -loss if i == 0 else ZERO, "dealer_blackjack", out)

    def _settle_live_hands(self, bi: int, dealer: int, plan: "_Plan", out: list[Outcome]) -> None:
        """Box ``bi``'s hands that the dealer's total decides (a box of more than one hand:
        :meth:`_final_settlement` settles the others), settled as :meth:`_settle` settles
        each (the same records, by the same memo), the box and each hand copied once, and
        the box's ``main`` booked once with their nets' sum (exact: the same amount as
        booking them one by one). ``dealer``: what decides beside a hand's own total."""
        box = self.boxes[bi]
        fresh = self._fresh
        assert fresh is not None, "a write outside apply"
        booked: Fraction | None = None
        for hi, hand in enumerate(box.hands):
            if not hand.done or hand.net is not None or hand.status == "blackjack":    # not live
                continue
            if id(box) not in fresh:            # (_wbox and _whand written out)
                box = box.copy()
                self.boxes[bi] = box
                fresh.add(id(box))
            if id(hand) not in fresh:
                hand = _copy_sharing_cards(hand)        # (no card comes after the final settlement)
                box.hands[hi] = hand
                fresh.add(id(hand))
            result, net, clause_key = _against_dealer(hand_total(hand.cards)[0] if dealer > 0 else 0, hand.at_risk,
                                                      dealer)
            hand.result = result
            hand.net = net
            booked = net if booked is None else _plus(booked, net)
            out.append(_hand_settled(plan, box.number, hand.id, result, net, clause_key))
        if booked is not None:
            box.ledger = _main_booked(box.ledger, booked)

    def _settle_progressive_end(self, bi: int, out: list[Outcome]) -> None:
        """Switch §3.7: 100% wins and their envy bonuses settle at the end of the round."""
        table = self.profile.progressive
        if table is None or "progressive" not in self.boxes[bi].stakes:
            return
        box = self._wbox(bi)
        if box.progressive_pending and box.progressive_award is not None:
            box.book("progressive", box.progressive_award)
        for other in box.envy_from:
            assert table.envy_bonus is not None     # envy is owed only where the table pays one
            box.book("envy_bonus", table.envy_bonus)
            out.append(EnvyBonus(box.number, other, table.envy_bonus, self.profile.clause("envy_bonus")))

    def _settle(self, box: Box, hand: Hand, result: str, net: Fraction, clause_key: str,
                out: list[Outcome]) -> None:
        hand.result = result
        hand.net = net
        if type(net) is not Fraction:
            net = Fraction(net)
        box.ledger = _main_booked(box.ledger, net)     # (Box.book, the ledger as remembered)
        out.append(_hand_settled(_plan(self.profile), box.number, hand.id, result, net, clause_key))

    def _void(self, reason: str, out: list[Outcome], detail: str | None = None) -> None:
        """§5.5, §5.17: a voided round has no result and every bet is returned."""
        clause = self.profile.clause(reason) if reason in self.profile.clauses else self.profile.clause("void")
        self.phase = _VOID
        self.cursor = None
        self.void_reason = reason if detail is None else f"{reason}: {detail}"
        self.void_clause = clause
        for bi in range(len(self.boxes)):
            if self.boxes[bi].ledger:
                box = self._wbox(bi)
                box.ledger = dict.fromkeys(box.ledger, ZERO)
        out.append(RoundVoided(self.void_reason, clause))


#: The check of each decision that belongs to the hand in play (no attribute built per call).
_TURN_CHECKS = {Action.HIT: Round._check_hit, Action.STAND: Round._check_stand,
                Action.DOUBLE: Round._check_double, Action.SPLIT: Round._check_split,
                Action.SWITCH: Round._check_switch}
assert _TURN_CHECKS.keys() == TURN_ACTIONS


def _hand_settled(plan: "_Plan", number: int, hand_id: int, result: str, net: Fraction,
                  clause_key: str) -> HandSettled:
    """The (frozen, so shared) record of a hand settled so, made once per box, hand, result,
    net and clause."""
    settled = plan.settled
    key = (number, hand_id, result, id(net), clause_key)
    found = settled.get(key)
    # (the entry holds its net, so the net's id is not another's)
    if found is None or found[0] is not net:
        found = (net, hand_settled(number, hand_id, result, net, plan.clause(clause_key)))
        if len(settled) >= 4096:        # box numbers and amounts come from outside: bounded
            settled.clear()
        settled[key] = found
    return found[1]


#: the (frozen, so shared) record of a round complete, per dealer's total (a few dozen at most)
_ROUND_COMPLETE: dict[int, RoundComplete] = {}


def _against_dealer(total: int, risk: Fraction, dealer: int) -> tuple[str, Fraction, str]:
    """A live hand's result, net and clause key against the dealer's final hand (§3.17-§3.21,
    Switch §3.19.2): ``total`` is the hand's (read only where ``dealer`` is a total that
    stands), ``dealer`` as :meth:`Round._final_settlement` reads it."""
    if dealer == 0:
        return "lose", _minus(risk), "dealer_blackjack"
    if dealer == -2:
        return "stand_off", ZERO, "dealer_push"         # Switch §3.19.2
    if dealer == -1 or total > dealer:
        return "win", risk, "dealer"
    if total < dealer:
        return "lose", _minus(risk), "dealer"
    return "stand_off", ZERO, "dealer"


#: a box of one live hand settled at the end of the round, by (box, hand id, id of the
#: amount at risk, what decides it (1, 2, 3: the hand's total above, below or level with the
#: dealer's standing total; else the dealer as :meth:`Round._final_settlement` reads it: 0 a
#: Blackjack, -1 a bust, -2 Switch's push total), id of the box's ledger, id of the plan) ->
#: (amount at risk, ledger, plan, result, net, record, the new ledger): everything the
#: settlement reads is in the key (:func:`_against_dealer` reads the totals only so far), and
#: the entry holds each object whose id is.
OneHand = tuple[Fraction, dict[str, Fraction], "_Plan", str, Fraction, HandSettled, dict[str, Fraction]]
_ONE_HAND: dict[tuple[int, int, int, int, int, int], OneHand] = {}


def _one_hand_settled(key: tuple[int, int, int, int, int, int], risk: Fraction, ledger: dict[str, Fraction],
                      plan: "_Plan", total: int, dealer: int) -> OneHand:
    """A box of one live hand settled (:meth:`Round._settle_live_hands`), remembered in
    :data:`_ONE_HAND`; ``total`` and ``dealer`` as :func:`_against_dealer` reads them."""
    number, hand_id = key[0], key[1]
    result, net, clause_key = _against_dealer(total, risk, dealer)
    found = (risk, ledger, plan, result, net, _hand_settled(plan, number, hand_id, result, net, clause_key),
             _main_booked(ledger, net))
    if len(_ONE_HAND) >= 4096:          # box numbers, amounts and ledgers come from outside: bounded
        _ONE_HAND.clear()
    _ONE_HAND[key] = found
    return found


#: the ledgers made by booking a net on ``main``: (id of the ledger, id of the net) ->
#: (ledger, net, the new ledger). Ledgers are replaced, never changed in place once a round
#: ``apply`` returned holds them, so rounds may share them (and the settlement's JSON of
#: one is remembered by it: settlement._bets_json); the entry holds both keys' objects.
_BOOKED: dict[tuple[int, int], tuple[dict[str, Fraction], Fraction, dict[str, Fraction]]] = {}


def _main_booked(ledger: dict[str, Fraction], net: Fraction) -> dict[str, Fraction]:
    """``ledger`` with ``net`` booked on ``main`` (:meth:`Box.book`), the same new ledger
    for the same ledger and net."""
    key = (id(ledger), id(net))
    found = _BOOKED.get(key)
    if found is not None and found[0] is ledger and found[1] is net:
        return found[2]
    old = ledger.get("main")
    new = {**ledger, "main": net if old is None else _plus(old, net)}
    if len(_BOOKED) >= 4096:            # bounded
        _BOOKED.clear()
    _BOOKED[key] = (ledger, net, new)
    return new


def _times(amount: Fraction, odds: Fraction) -> Fraction:
    """``amount * odds``, exact; whole numbers (most stakes and odds) without Fraction's
    Python-level arithmetic."""
    a = whole_by_id.get(id(amount))
    if a is not None:
        b = whole_by_id.get(id(odds))
        if b is not None:
            return whole_amount(a * b)
    if amount.denominator == 1 and odds.denominator == 1:
        return whole_amount(amount.numerator * odds.numerator)
    return amount * odds


def _plus(a: Fraction, b: Fraction) -> Fraction:
    """``a + b``, exact; whole numbers on integers (shared whole amounts known by identity,
    without Fraction's Python-level ``numerator``)."""
    x = whole_by_id.get(id(a))
    if x is not None:
        y = whole_by_id.get(id(b))
        if y is not None:
            return whole_amount(x + y)
    if a.denominator == 1 and b.denominator == 1:
        return whole_amount(a.numerator + b.numerator)
    return a + b


def _minus(a: Fraction) -> Fraction:
    """``-a``, exact; a whole number from the shared table."""
    x = whole_by_id.get(id(a))
    if x is not None:
        return whole_amount(-x)
    return whole_amount(-a.numerator) if a.denominator == 1 else -a


class _Plan:
    """What the engine reads of a profile on every round, worked out once per profile: the
    bet names, each side bet's judge, pay table and clause, and the clause texts (a
    ``Profile.clause`` call formats its text each time)."""

    __slots__ = ("profile", "bet_names", "side", "limits", "hands_per_box", "settled", "boxes", "interim",
                 "closed", "judges", "by_ranks", "ranks_judged", "_clauses")

    def __init__(self, p: Profile) -> None:
        self.profile = p
        self.bet_names = frozenset(p.bet_names())
        # whole odds as the shared whole amounts, so stake x odds is integer arithmetic
        self.side: dict[str, tuple[Any, _SideSettle]] = {
            name: (SIDE_BETS[name].evaluate, _SideSettle(
                {c: whole_amount(o.numerator) if o.denominator == 1 else o for c, o in table.pays.items()},
                p.clause(name) if name in p.clauses else p.clause("side_bets")))
            for name, table in p.side_bets.items()}
        # each side bet's (requires, max_of_initial_bet), a whole factor as the shared amount
        self.limits: dict[str, tuple[str | None, Fraction | None]] = {
            name: (table.requires, None if (m := table.max_of_initial_bet) is None
                   else whole_amount(m.numerator) if m.denominator == 1 else m)
            for name, table in p.side_bets.items()}
        self.hands_per_box = p.hands_per_box
        #: the hand settlements made: (box, hand id, result, id of the net, clause key) -> (net, record)
        self.settled: dict[tuple[int, int, str, int, str], tuple[Fraction, HandSettled]] = {}
        #: the boxes made at "no more bets": (id of the limits, box, (bet, id of the amount)...)
        #: -> (limits, wagers, box or None, outcomes)
        self.boxes: dict[tuple[object, ...], tuple[object, object, Box | None, tuple[Outcome, ...]]] = {}
        #: the side bets of a box settled at the interim settlement: (box, id of its stakes,
        #: category judged per side bet...) -> what :func:`_side_bets_settled` made
        self.interim: dict[tuple[object, ...], SidesSettled] = {}
        #: the judges of a box's side bets, in the order of its stakes: id of the stakes ->
        #: (stakes, judges, whether all read only the ranks)
        self.judges: dict[int, Judged] = {}
        #: what :func:`_side_bets_settled` made, by (box, id of its stakes, the two ranks)
        #: where every side bet of the box reads only the ranks
        self.by_ranks: dict[tuple[int, int, str, str], SidesSettled] = {}
        #: what side bets reading only the ranks judge on two ranks, for every box with those
        #: side bets: their judges -> first rank -> second rank -> categories, None where the two
        #: make 21 (:func:`_ranks_judged`)
        self.ranks_judged: dict[tuple[Any, ...], dict[str, dict[str, tuple[str | None, ...] | None]]] = {}
        #: the last "no more bets" closed per (id of the limits, number of boxes): (limits,
        #: wagers, boxes, deal order, phase, outcomes)
        self.closed: dict[tuple[int, int], tuple[object, Wagers, tuple[Box, ...], list[tuple[int, int] | str],
                                                 Phase, tuple[Outcome, ...]]] = {}
        self._clauses: dict[str, str] = {}

    def clause(self, key: str) -> str:
        """``Profile.clause(key)``, formatted once."""
        text = self._clauses.get(key)
        if text is None:
            text = self._clauses[key] = self.profile.clause(key)
        return text


#: per profile (by identity; the plan holds the profile so its id is not reused)
_PLANS: dict[int, _Plan] = {}


def _plan(p: Profile) -> _Plan:
    found = _PLANS.get(id(p))
    if found is not None and found.profile is p:
        return found
    if len(_PLANS) >= 64:               # profiles are few; a test may make many
        _PLANS.clear()
    plan = _PLANS[id(p)] = _Plan(p)
    return plan


class _SideSettle(dict[tuple[int, str | None, int], tuple[Fraction, str | None, Fraction, SideBetSettled]]):
    """One side bet's pay table and clause, and its settlements as made: (box, category as
    judged, id of the stake) -> (stake, category paid, net, record). The records are frozen,
    so a box that wins the same category on the same stake again gets the same record."""

    __slots__ = ("pays", "clause")

    def __init__(self, pays: Mapping[str, Fraction], clause: str) -> None:
        super().__init__()
        self.pays = pays
        self.clause = clause


def _side_bet_result(settle: _SideSettle, number: int, name: str, category: str | None,
                     stake: Fraction) -> tuple[Fraction, str | None, Fraction, SideBetSettled]:
    """A side bet's settlement (the stake, the category paid, the net, the record), remembered."""
    key = (number, category, id(stake))
    odds = settle.pays.get(category) if category else None
    if odds is None:
        category = None
        net = _minus(stake)
    else:
        net = _times(stake, odds)
    found = (stake, category, net, side_bet_settled(number, name, category, odds, stake, net, settle.clause))
    if len(settle) >= 4096:             # box numbers and stakes come from outside: bounded
        settle.clear()
    settle[key] = found
    return found


SidesSettled = tuple[Mapping[str, Fraction], dict[str, Fraction], dict[str, str | None],
                     tuple[SideBetSettled, ...]]


def _side_bets_settled(number: int, stakes: Mapping[str, Fraction], categories: list[str | None],
                       side_plan: Mapping[str, tuple[Any, _SideSettle]]) -> SidesSettled:
    """A box's side bets settled on their judged categories (in the order of its stakes):
    (the stakes, each bet's net, each bet's category paid, the records)."""
    nets: dict[str, Fraction] = {}
    results: dict[str, str | None] = {}
    records = []
    judged = iter(categories)
    for name, stake in stakes.items():
        side = side_plan.get(name)
        if side is None:                # main, progressive
            continue
        settle = side[1]
        category = next(judged)
        found = settle.get((number, category, id(stake)))
        # (the entry holds its stake, so the stake's id is not another's)
        if found is None or found[0] is not stake:
            found = _side_bet_result(settle, number, name, category, stake)
        _, paid, net, record = found
        results[name] = paid
        nets[name] = net
        records.append(record)
    return stakes, nets, results, tuple(records)


Judged = tuple[Mapping[str, Fraction], tuple[Any, ...], bool]


def _judges_of(stakes: Mapping[str, Fraction], side_plan: Mapping[str, tuple[Any, _SideSettle]],
               judges: dict[int, Judged]) -> Judged:
    """The judge of each of a box's side bets in the order of its stakes and whether every
    one reads only the two ranks (:data:`RANKS_ONLY`), remembered by the stakes dict
    (replaced, never changed in place; the entry holds it, so its id is its own)."""
    names = [name for name in stakes if name in side_plan]
    found = (stakes, tuple(side_plan[name][0] for name in names), all(name in RANKS_ONLY for name in names))
    if len(judges) >= 4096:             # stakes come from outside: bounded
        judges.clear()
    judges[id(stakes)] = found
    return found


def _sides_settled(number: int, stakes: Mapping[str, Fraction], cards: list[Card], up: Card,
                   plan: _Plan) -> SidesSettled:
    """A box's side bets settled on its first two cards (and the dealer's up card): the
    same box (its stakes dict) judged the same settles the same, so the new ledger entries,
    results and records are remembered by the categories judged (frozen records; the dicts
    are replaced, never changed in place, so rounds may share them), and, when every side
    bet reads only the two ranks, by the ranks without judging again."""
    judged = plan.judges.get(id(stakes))
    if judged is None or judged[0] is not stakes:
        judged = _judges_of(stakes, plan.side, plan.judges)
    by_ranks = plan.by_ranks
    ranks = (number, id(stakes), cards[0].rank, cards[1].rank) if judged[2] else None
    if ranks is not None:
        found = by_ranks.get(ranks)
        if found is not None and found[0] is stakes:
            return found
    first_two = (cards[0], cards[1])            # (every dealt hand has its two cards now)
    categories = [judge(first_two, up) for judge in judged[1]]
    memo = plan.interim
    key = (number, id(stakes), *categories)
    found = memo.get(key)
    if found is None or found[0] is not stakes:
        found = _side_bets_settled(number, stakes, categories, plan.side)
        if len(memo) >= 4096:           # box numbers and stakes come from outside: bounded
            memo.clear()
        memo[key] = found
    if ranks is not None:
        if len(by_ranks) >= 4096:       # likewise
            by_ranks.clear()
        by_ranks[ranks] = found         # (the entry holds the stakes, so the id is theirs)
    return found


#: the interim settlement of a box of one hand whose side bets all read only the two ranks
#: (:data:`RANKS_ONLY`) and whose two ranks make no 21: (id of its stakes, the two ranks) ->
#: (stakes, plan, ledger and side results before, box number, ledger and side results
#: after, the records). The dicts are replaced, never changed in place, so rounds share them.
_INTERIM_BOXES: dict[tuple[int, str, str], tuple[Mapping[str, Fraction], "_Plan", dict[str, Fraction],
                                                dict[str, str | None], int, dict[str, Fraction],
                                                dict[str, str | None], tuple[SideBetSettled, ...]]] = {}
#: (what the interim settlement finds with the memos off)
_NOTHING_REMEMBERED: dict[tuple[int, str, str], Any] = {}
InterimBox = tuple[Mapping[str, Fraction], "_Plan", dict[str, Fraction], dict[str, str | None], int,
                   dict[str, Fraction], dict[str, str | None], tuple[SideBetSettled, ...]]
#: the entries of :data:`_INTERIM_BOXES` by (id of the stakes, the categories the side bets
#: judge on the two ranks): a box's pairs of ranks judged alike settle alike, so a pair of
#: ranks first seen at a box is found here (a handful of entries a box) rather than settled
#: afresh (the 7 boxes of a table would otherwise settle 13 x 13 pairs each before every
#: one is remembered)
_INTERIM_ALIKE: dict[tuple[int, tuple[str | None, ...]], InterimBox] = {}


def _interim_alike(key: tuple[int, str, str], box: Box, up: Card, plan: "_Plan") -> InterimBox | None:
    """The entry of :data:`_INTERIM_ALIKE` for ``box`` (of one hand, not in
    :data:`_INTERIM_BOXES` by its ranks: ``key``), now also kept there by its ranks; None
    where its side bets do not all read only the ranks, the ranks make 21 or nothing alike
    was settled from the same stakes, ledger and results."""
    stakes = box.stakes
    judged = plan.judges.get(id(stakes))
    if judged is None or judged[0] is not stakes or not judged[2]:
        return None
    categories = _ranks_judged(plan, judged[1], box.hands[0].cards, up)
    if categories is None:
        return None                         # (a 21: its Blackjack is settled the long way)
    found = _INTERIM_ALIKE.get((id(stakes), categories))
    if (found is None or found[0] is not stakes or found[1] is not plan or found[2] is not box.ledger
            or found[3] is not box.side_results or found[4] != box.number):
        return None
    if len(_INTERIM_BOXES) >= 4096:         # stakes come from outside: bounded
        _INTERIM_BOXES.clear()
    _INTERIM_BOXES[key] = found
    return found


def _remember_interim(key: tuple[int, str, str], entry: InterimBox, cards: list[Card], up: Card) -> None:
    """Keep the interim settlement of a box of one hand whose side bets all read only the
    ranks in :data:`_INTERIM_BOXES` by its ranks (``key``) and in :data:`_INTERIM_ALIKE` by
    what they judge on them (no entry where the two make 21: the Blackjack is settled too)."""
    plan = entry[1]
    categories = _ranks_judged(plan, plan.judges[id(entry[0])][1], cards, up)
    if categories is None:
        return
    if len(_INTERIM_BOXES) >= 4096:         # stakes come from outside: bounded
        _INTERIM_BOXES.clear()
    _INTERIM_BOXES[key] = entry
    if len(_INTERIM_ALIKE) >= 4096:         # likewise
        _INTERIM_ALIKE.clear()
    _INTERIM_ALIKE[(key[0], categories)] = entry


def _ranks_judged(plan: "_Plan", judges: tuple[Any, ...], cards: list[Card],
                  up: Card) -> "tuple[str | None, ...] | None":
    """What ``judges`` (side bets reading only the two ranks, :data:`RANKS_ONLY`) judge on
    the two ``cards``, None where they make 21; remembered per judges and ranks for every box
    (``plan.ranks_judged``: first rank -> second rank -> categories)."""
    by_rank = plan.ranks_judged.get(judges)
    if by_rank is None:
        if len(plan.ranks_judged) >= 64:    # side bets come from the profile (a box's own order
            plan.ranks_judged.clear()       # of them another tuple): bounded all the same
        by_rank = plan.ranks_judged[judges] = {}
    row = by_rank.setdefault(cards[0].rank, {})
    second = cards[1].rank
    if second not in row:
        first_two = (cards[0], cards[1])
        row[second] = None if _two_card_21(cards) else tuple([judge(first_two, up) for judge in judges])
    return row[second]
#: a Blackjack's net as worked out before: (id of the stake, id of the odds) -> (stake, odds,
#: net). 3:2 is not whole, so the product is Fraction arithmetic (Python code, ~4 us); the same
#: net object then also finds its remembered ``HandSettled`` record (:func:`_hand_settled`).
_BLACKJACK_NETS: dict[tuple[int, int], tuple[Fraction, Fraction, Fraction]] = {}


def _blackjack_net(stake: Fraction, odds: Fraction) -> Fraction:
    """``_times(stake, odds)``, the same object for the same stake and odds objects."""
    found = _BLACKJACK_NETS.get((id(stake), id(odds)))
    if found is not None and found[0] is stake and found[1] is odds and _deal_memos:
        return found[2]
    net = _times(stake, odds)
    if len(_BLACKJACK_NETS) >= 4096:    # stakes come from outside: bounded
        _BLACKJACK_NETS.clear()
    # (the entry holds the stake and the odds, so the ids in its key are theirs)
    _BLACKJACK_NETS[(id(stake), id(odds))] = (stake, odds, net)
    return net


#: a surrender's net (half the initial bet given up, §3.16) as worked out before: id of the
#: stake -> (stake, net). Fraction arithmetic is Python code (~4 us), and the same net object
#: then finds its remembered ``HandSettled`` record and booked ledger (:func:`_hand_settled`,
#: :func:`_main_booked`, keyed by the net's id), as :func:`_blackjack_net`'s do.
_SURRENDER_NETS: dict[int, tuple[Fraction, Fraction]] = {}


def _surrender_net(stake: Fraction) -> Fraction:
    """``-stake / 2``, the same object for the same stake object."""
    found = _SURRENDER_NETS.get(id(stake))
    if found is not None and found[0] is stake and _deal_memos:
        return found[1]
    net = -stake / 2
    if len(_SURRENDER_NETS) >= 4096:    # stakes come from outside: bounded
        _SURRENDER_NETS.clear()
    # (the entry holds the stake, so the id in its key is its)
    _SURRENDER_NETS[id(stake)] = (stake, net)
    return net


#: the round start's memos on: the interim settlement's boxes, the Blackjack nets, "no more
#: bets" known by identity (tests/engine/test_deal_speed.py turns them off to compare)
_deal_memos = True


def _booked(ledger: Mapping[str, Fraction], nets: Mapping[str, Fraction]) -> dict[str, Fraction]:
    """A new ledger: ``ledger`` with each of ``nets`` added (:meth:`Box.book` per bet)."""
    merged = dict(ledger)
    for name, net in nets.items():
        old = merged.get(name)
        merged[name] = net if old is None else _plus(old, net)
    return merged


def _box_entry(entry: Any) -> tuple[int, tuple[tuple[Any, Any], ...]]:
    """One box of a "no more bets" closed the long way (wagers not closed before, or made by
    hand rather than by :meth:`BetsClosed.of`), checked: a box number that is an int (True
    equals 1 but is no box number) and its bets as (name, amount) pairs, each name a str
    (the amounts are :meth:`_placed`'s to check)."""
    try:
        number, bets = entry
        pairs = tuple([(name, amount) for name, amount in bets])
    except (TypeError, ValueError):
        raise IllegalWager(f"{reprlib.repr(entry)} is not a box's wagers (a box number and its bets, "
                           f"bet name and amount pairs)", issue="malformed") from None
    if type(number) is not int:
        raise IllegalWager(f"box {number!r} is not a box number (a whole number from 1)", issue="not_a_box")
    for name, _ in pairs:
        if type(name) is not str:
            raise IllegalWager(f"box {number}: {name!r} is not a bet name", box=number, issue="unknown_bet")
    return number, pairs


def _plain_wagers(wagers: Wagers) -> bool:
    """Box numbers all ints and amounts all Fractions, as :meth:`BetsClosed.of` makes them."""
    for number, bets in wagers:
        if type(number) is not int:
            return False
        for _, amount in bets:
            if type(amount) is not Fraction:
                return False
    return True


def _all_tuples(wagers: Wagers) -> bool:
    """Wagers in tuples all the way down, as :meth:`BetsClosed.of` makes them: the same
    object keeps the same values (lists could be changed after "no more bets"). Wagers
    equal to such wagers are such too (a tuple never equals a list)."""
    if type(wagers) is not tuple:
        return False
    for entry in wagers:
        if type(entry) is not tuple or type(entry[1]) is not tuple:
            return False
        for bet in entry[1]:
            if type(bet) is not tuple:
                return False
    return True


def _waits_for_decision(box: Box, hand: Hand) -> bool:
    """What :meth:`Round._settle_hand_flow` finds of a hand in play that is not done: it
    waits for its decision, nothing for the rules to do (two cards or more, below 21, not
    doubled, not split Aces, the player still there)."""
    doubled = hand.doubled
    cards = hand.cards
    if hand.wants_card or hand.split_aces or box.walked_away or not (doubled is ZERO or not doubled):
        return False
    n = len(cards)
    if n == 2 and not hand.from_split and not hand.switched:
        # the initial two cards of a hand not done are below 21 without counting them: a
        # two-card 21 of them is a Blackjack (§1.2), done since the interim settlement
        return True
    return n >= 2 and hand_total(cards)[0] < 21


_TEN_VALUES = frozenset("TJQK")


def _blackjacks_paid_at_once(rule: bool, up: str) -> bool:
    """§3.15: a Blackjack is paid at the interim settlement where the profile pays it at once
    or the dealer's up card (its rank) cannot make a dealer Blackjack; else it waits for the
    dealer's second card."""
    return rule or not (up == "A" or up in _TEN_VALUES)


def _two_card_21(cards: list[Card]) -> bool:
    """Two cards making 21: an Ace and a ten-value card (``hand_total`` of two cards == 21)."""
    if len(cards) != 2:
        return False
    a, b = cards[0].rank, cards[1].rank
    return (a == "A" and b in _TEN_VALUES) or (b == "A" and a in _TEN_VALUES)


def _dealt_to(box: Box, hi: int, card: Card) -> Box:
    """A copy of ``box`` whose hand ``hi`` (a copy too) has ``card`` added."""
    box = box.copy()
    hand = box.hands[hi].copy()
    box.hands[hi] = hand
    hand.cards.append(card)
    return box


def _box_number(box: Box) -> int:
    return box.number


def _copy_sharing_cards(hand: Hand) -> Hand:
    """:meth:`Hand.copy` with the very card list of ``hand``: for a decision that changes no
    card (hit, stand, double). The list is never changed in place through the copy: a card
    for it copies it again (:meth:`Hand.copy`), and :meth:`Round._hand_done` gives it its own
    list before anything else in the apply may write to it."""
    new = _new_hand(Hand)
    new.family = hand.family
    new.stake = hand.stake
    new.id = hand.id
    new.cards = hand.cards
    new.doubled = hand.doubled
    new.from_split = hand.from_split
    new.split_aces = hand.split_aces
    new.switched = hand.switched
    new.wants_card = hand.wants_card
    new.done = hand.done
    new.decided = hand.decided
    new.status = hand.status
    new.result = hand.result
    new.net = hand.net
    return new


def _make_hand(family: int, stake: Fraction, hand_id: int) -> Hand:
    """``Hand(family=family, stake=stake, id=hand_id)`` slot by slot (the dataclass ``__init__``
    is several times slower; tests/engine/test_fast_path.py holds them equal)."""
    new = _new_hand(Hand)
    new.family = family
    new.stake = stake
    new.id = hand_id
    new.cards = []
    new.doubled = ZERO
    new.from_split = False
    new.split_aces = False
    new.switched = False
    new.wants_card = False
    new.done = False
    new.decided = False
    new.status = "play"
    new.result = None
    new.net = None
    return new


def _make_box(number: int, wagers: dict[str, Fraction], stakes: dict[str, Fraction]) -> Box:
    """``Box(number=number, wagers=wagers, stakes=stakes)`` slot by slot, each container its own."""
    new = _new_box(Box)
    new.number = number
    new.wagers = wagers
    new.stakes = stakes
    new.hands = []
    new.insurance = {}
    new.insurance_settled = set()
    new.walked_away = False
    new.switched = False
    new.acted = False
    new.ledger = {}
    new.side_results = {}
    new.flags = []
    new.returned = []
    new.progressive_hand = None
    new.progressive_award = None
    new.progressive_share = None
    new.progressive_pending = False
    new.envy_from = []
    return new


#: (round, decision) that :meth:`Round.why_not` last found legal: ``apply`` of that very
#: decision object on that very round skips the second check. Both are immutable, so this
#: memo cannot change an answer; it holds one round alive at most.
_last_legal: tuple[object, object] = (None, None)


def _above(amount: Fraction, factor: Fraction, base: Fraction) -> bool:
    """``amount > factor * base``, exact, by cross-multiplied integers."""
    a, f, b = whole_by_id.get(id(amount)), whole_by_id.get(id(factor)), whole_by_id.get(id(base))
    if a is not None and f is not None and b is not None:
        return a > f * b
    return (amount.numerator * factor.denominator * base.denominator
            > factor.numerator * base.numerator * amount.denominator)


#: a fresh shoe per deck count: immutable, so every round of that many decks shares one
_FRESH_SHOES: dict[int, ShoeComposition] = {}


def _fresh_shoe(decks: int) -> ShoeComposition:
    found = _FRESH_SHOES.get(decks)
    if found is None:
        found = _FRESH_SHOES[decks] = ShoeComposition.of_decks(decks)   # (decks: the profile's range)
    return found


#: the cards a round drew, counted per card in one int: 16 bits at each card's place in
#: ALL_CARDS (``drawn >> _DRAWN_SHIFT[i] & _DRAWN_MOST`` of card i drawn). A card drawn is one
#: int addition and a count one shift, where a tuple of the indices drawn grew by a copy per
#: card and was counted item by item (~0.3 us a card by the end of the initial deal). A shoe
#: holds at most _DRAWN_MOST of a card (:meth:`Round.new`) and no more than it holds are
#: drawn, so a count never reaches the next card's bits.
_DRAWN_MOST = 0xFFFF
_DRAWN_SHIFT = tuple(16 * i for i in range(len(_RANK_POS) * len(_SUIT_BASE)))
_DRAWN_ONE = tuple(1 << shift for shift in _DRAWN_SHIFT)


#: (a dict, not a read-only proxy: a round is deep-copied and pickled by tools; typed
#: Mapping, so no typed code writes to it)
_NO_LIMITS: Mapping[str, tuple[Fraction, Fraction]] = {}


def _read_limits(profile: Profile, limits: Mapping[str, Sequence[object]]) -> dict[str, tuple[Fraction, Fraction]]:
    out: dict[str, tuple[Fraction, Fraction]] = {}
    if not limits:
        return out              # (most rounds: nothing to read, so nothing imported or built)
    from .money import parse_amount

    names = set(profile.bet_names())
    for name, pair in limits.items():
        if name not in names:
            raise ValueError(f"limits: {name!r} is not a bet at {profile.name} (bets: {', '.join(sorted(names))})")
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"limits: {name}: expected [minimum, maximum], got {pair!r}")
        lo, hi = (parse_amount(v) for v in pair)
        if lo < 0 or hi <= 0 or lo > hi:
            raise ValueError(f"limits: {name}: [{pair[0]}, {pair[1]}] is not a valid [minimum, maximum]")
        out[name] = (lo, hi)
    return out


def replay(profile: Profile, events: Iterable[Event], **new_kwargs: Any) -> tuple[Round, list[Outcome]]:
    """Rebuild a round from its event record: same events, same state, same settlement."""
    state = Round.new(profile, **new_kwargs)
    outcomes: list[Outcome] = []
    for event in events:
        state, out = state.apply(event)
        outcomes.extend(out)
    return state, outcomes
