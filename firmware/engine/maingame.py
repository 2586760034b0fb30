"""The main game's house edge by combinatorial analysis, and the expected value of each play.

For every dealer first card ``u`` and every pair of initial cards ``(c1, c2)`` the shoe that is
left (``shoe - u - c1 - c2``) gives the dealer's exact final-total probabilities (every drawing
sequence enumerated, without replacement) and the player's expected value of standing,
hitting (and playing on at his best), doubling, splitting and surrendering. The chosen
strategy is *total-dependent*: one action per hard total, soft total or pair against each
dealer card for the initial two cards, and hit or stand by total for three or more cards
(:mod:`firmware.engine.basic`); split hands decide their first hit or stand at their best.

Approximations, named and measured (``docs/engine.md`` "Main game"):

* After the initial cards, the player's further cards are drawn from that shoe without
  removing the cards he drew before (the dealer's probabilities likewise).
* Splits: each split hand is worth the same (the hands are independent), and the number of
  hands comes from the chance of pairing again, up to the profile's maximum; with
  "the dealer's Blackjack takes the initial bet only" the hands share that one bet equally.
* Blackjack Switch: each hand's value comes from the shoe without the *other* hand's cards
  removed.

The first two vanish with an infinite shoe (``tests/engine/test_maingame.py`` checks the
dealer's infinite-deck probabilities against the published table); finite shoes are checked
against published figures (the standard six-deck game's 0.26%, Blackjack Switch's 0.58%) and
the split approximation against full enumeration. ``docs/engine.md`` "Main game" has the
measured sizes, and why the UK poster's 0.51% is not what its profile's reading gives.

Cards are point values here: 1 (Ace) to 10 (ten or picture).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, Mapping

from .profile import Profile

VALUES = tuple(range(1, 11))     # 1 = Ace, 10 = any ten-value card
Deck = tuple[float, ...]         # how many of each value (index value-1) are left

# dealer outcome keys: a final total 17..21, 22 (exactly), BUST (above 22), BLACKJACK
BUST = 23
BLACKJACK = 0
UNLIMITED_SPLITS = 8             # "no limit" (UK): a ninth hand is rarer than 1e-9 of a deal


@dataclass(frozen=True)
class MainRules:
    """What the analysis needs of a ruleset; built from a profile by :func:`main_rules`."""

    decks: float                      # decks in the shoe (a large number: nearly infinite)
    blackjack_pays: float = 1.5
    stands_on: int = 17               # stands on every 17, soft 17 too (all profiles)
    hits_soft_17: bool = False
    peek: bool = False                # False: European no hole card (every profile)
    dealer_bj_takes: str = "all"      # "all" | "initial_bet" (rws §3.21.3, §3.22.2)
    push_22: bool = False             # Switch §3.19.2
    max_hands: int = 4                # 0: no limit
    resplit_aces: bool = False
    double_totals: tuple[int, ...] = ()   # () any two-card total
    double_with_ace: bool = True
    double_after_split: bool = True
    surrender: bool = False
    surrender_vs_ace: bool = False    # the engine refuses surrender against an Ace everywhere
    must_draw_below: int = 0
    blackjack_at_once: bool = False   # Switch §3.8: paid at once and kept
    switch: bool = False

    def deck(self) -> Deck:
        return tuple(4.0 * self.decks if v < 10 else 16.0 * self.decks for v in VALUES)


def main_rules(profile: Profile, decks: int) -> MainRules:
    r = profile.rules
    return MainRules(
        decks=decks, blackjack_pays=float(r.blackjack_pays), stands_on=r.dealer_stands_on,
        peek=False, dealer_bj_takes=r.dealer_blackjack_collects, push_22=r.dealer_push_total == 22,
        max_hands=r.max_hands, resplit_aces=r.resplit_aces, double_totals=r.double_totals,
        double_with_ace=r.double_with_ace, double_after_split=r.double_after_split,
        surrender=r.surrender, surrender_vs_ace=False, must_draw_below=r.must_draw_below,
        blackjack_at_once=r.blackjack_paid_at_once, switch=profile.is_switch)


def best_total(hard: int, ace: bool) -> int:
    return hard + 10 if ace and hard + 10 <= 21 else hard


# --- the dealer ------------------------------------------------------------------------

def dealer_outcomes(deck: Deck, up: int, rules: MainRules) -> dict[int, float]:
    """Probability of each final dealer outcome from ``deck`` (the first card ``up`` already out).

    Drawing sequences that reach the same cards are merged: the future depends only on which
    cards are out, so this is exact and fast (a few hundred states).
    """
    out: dict[int, float] = {}
    frontier: dict[tuple[int, ...], float] = {(0,) * 10: 1.0}
    total_cards = sum(deck)
    while frontier:
        nxt: dict[tuple[int, ...], float] = {}
        for drawn, prob in frontier.items():
            n_drawn = sum(drawn)
            left = total_cards - n_drawn
            hard0 = up + sum(v * drawn[v - 1] for v in VALUES)
            ace0 = up == 1 or drawn[0] > 0
            for v in VALUES:
                count = deck[v - 1] - drawn[v - 1]
                if count <= 0:
                    continue
                q = prob * count / left
                hard, ace = hard0 + v, ace0 or v == 1
                total = best_total(hard, ace)
                if n_drawn == 0 and total == 21:
                    out[BLACKJACK] = out.get(BLACKJACK, 0.0) + q
                    continue
                if hard > 21:
                    key = 22 if hard == 22 else BUST
                    out[key] = out.get(key, 0.0) + q
                    continue
                soft17 = total == 17 and ace and hard + 10 == 17
                if total >= rules.stands_on and not (rules.hits_soft_17 and soft17):
                    out[total] = out.get(total, 0.0) + q
                    continue
                grown = drawn[:v - 1] + (drawn[v - 1] + 1,) + drawn[v:]
                nxt[grown] = nxt.get(grown, 0.0) + q
        frontier = nxt
    return out


# --- the player --------------------------------------------------------------------------

class HandValues:
    """Expected values of the player's plays against dealer card ``up`` with ``deck`` left.

    Values are per unit of initial bet and include the dealer's Blackjack (no hole card: the
    player decides without knowing; with ``peek`` they are given no dealer Blackjack).
    """

    def __init__(self, rules: MainRules, deck: Deck, up: int,
                 later: Mapping[tuple[str, int], str] | None = None):
        self.rules = rules
        self.up = up
        # hands of three or more cards: (kind, total) -> "hit" | "stand", the total-dependent
        # chart's; None: each at its best for this shoe
        self.later = later
        n = sum(deck)
        self.p = tuple(c / n for c in deck)
        out = dealer_outcomes(deck, up, rules)
        self.p_blackjack = out.pop(BLACKJACK, 0.0)
        no_bj = 1.0 - self.p_blackjack
        self.dealer = {k: v / no_bj for k, v in out.items()}
        # the part of the dealer's Blackjack the player's decisions carry (none with a peek)
        self.bj = 0.0 if rules.peek else self.p_blackjack
        self.win_stand = [self._stand_given_no_bj(t) for t in range(22)]
        self._best: dict[tuple[int, bool, float], float] = {}

    def _stand_given_no_bj(self, total: int) -> float:
        ev = 0.0
        for d, q in self.dealer.items():
            if d == BUST or (d == 22 and not self.rules.push_22) or total > d:
                ev += q
            elif total < d and d != 22:
                ev -= q
        return ev

    def bj_loss(self, stake: float, share: float) -> float:
        """What a hand that has not bust loses to a dealer Blackjack."""
        return stake if self.rules.dealer_bj_takes == "all" else share

    def stand(self, total: int, stake: float = 1.0, share: float = 1.0) -> float:
        return -self.bj * self.bj_loss(stake, share) + (1 - self.bj) * stake * self.win_stand[total]

    def play(self, hard: int, ace: bool, share: float = 1.0) -> float:
        """A hand of three or more cards (stake 1) that may hit or stand: by the chart's
        ``later`` table if there is one, else at its best."""
        key = (hard, ace, share)
        known = self._best.get(key)
        if known is not None:
            return known
        total = best_total(hard, ace)
        if total > 21:
            value = -1.0
        elif total == 21:
            value = self.stand(21, 1.0, share)          # no draw on 21
        else:
            choice = None if self.later is None else \
                self.later.get(("soft" if total != hard else "hard", total))
            if choice == "stand":
                value = self.stand(total, 1.0, share)
            elif choice == "hit":
                value = self.hit(hard, ace, share)
            else:
                value = self.first_play(hard, ace, share)
        self._best[key] = value
        return value

    def first_play(self, hard: int, ace: bool, share: float = 1.0) -> float:
        """Hit or stand, whichever is worth more (compulsory draw below ``must_draw_below``)."""
        total = best_total(hard, ace)
        value = self.hit(hard, ace, share)
        if total >= self.rules.must_draw_below:
            value = max(value, self.stand(total, 1.0, share))
        return value

    def hit(self, hard: int, ace: bool, share: float = 1.0) -> float:
        return sum(p * self.play(hard + v, ace or v == 1, share) for v, p in zip(VALUES, self.p, strict=True) if p)

    def double(self, hard: int, ace: bool, share: float = 1.0) -> float:
        ev = 0.0
        for v, p in zip(VALUES, self.p, strict=True):
            if not p:
                continue
            h, a = hard + v, ace or v == 1
            ev += p * (-2.0 if h > 21 else self.stand(best_total(h, a), 2.0, share))
        return ev

    def may_double(self, hard: int, ace: bool) -> bool:
        r = self.rules
        total = best_total(hard, ace)
        if total >= 21 or (ace and not r.double_with_ace):
            return False
        return not r.double_totals or total in r.double_totals

    def split_hand(self, v: int, second: int, share: float) -> float:
        """One split hand: pair card ``v`` plus ``second`` (no Blackjack), not split again."""
        hard, ace = v + second, v == 1 or second == 1
        if v == 1:                                      # split Aces: one card each
            return self.stand(best_total(hard, ace), 1.0, share)
        total = best_total(hard, ace)
        value = self.stand(21, 1.0, share) if total == 21 else self.first_play(hard, ace, share)
        if self.rules.double_after_split and self.may_double(hard, ace):
            value = max(value, self.double(hard, ace, share))
        return value

    def split(self, v: int) -> float:
        r = self.rules
        limit = r.max_hands or UNLIMITED_SPLITS
        if v == 1 and not r.resplit_aces:
            limit = 2
        p_pair = self.p[v - 1]
        finished, stuck = split_hand_counts(p_pair, limit)
        hands = finished + stuck
        share = 1.0 / hands                 # the hands share one initial bet against a dealer BJ
        others = sum(p * self.split_hand(v, w, share) for w, p in zip(VALUES, self.p, strict=True) if w != v)
        other_ev = others / (1 - p_pair) if p_pair < 1 else 0.0
        return finished * other_ev + stuck * self.split_hand(v, v, share)


@lru_cache(maxsize=64)
def split_hand_counts(p_pair: float, limit: int) -> tuple[float, float]:
    """Expected numbers of split hands that end without a pair, and that end on a pair they
    may not split again, starting from two hands each needing a second card."""
    finished = stuck = 0.0
    # state: (hands waiting for their second card, hands in all) -> probability
    states: dict[tuple[int, int], float] = {(2, 2): 1.0}
    while states:
        nxt: dict[tuple[int, int], float] = {}
        for (waiting, hands), prob in states.items():
            finished += prob * (1 - p_pair)
            _add(nxt, (waiting - 1, hands), prob * (1 - p_pair))
            if hands < limit:                       # split again: both halves wait for a card
                _add(nxt, (waiting + 1, hands + 1), prob * p_pair)
            else:
                stuck += prob * p_pair
                _add(nxt, (waiting - 1, hands), prob * p_pair)
        states = nxt
    return finished, stuck


def _add(states: dict[tuple[int, int], float], key: tuple[int, int], prob: float) -> None:
    if key[0] > 0:                                  # no hand waiting: that line is done
        states[key] = states.get(key, 0.0) + prob


# --- the initial hands ----------------------------------------------------------------------

ACTIONS = ("stand", "hit", "double", "split", "surrender")


def initial_hands() -> Iterator[tuple[int, int]]:
    for a in VALUES:
        for b in VALUES:
            if a <= b:
                yield a, b


def is_blackjack(a: int, b: int) -> bool:
    return {a, b} == {1, 10}


def first_card_values(rules: MainRules, values: HandValues, a: int, b: int,
                      blackjack_allowed: bool = True) -> dict[str, float]:
    """Each legal play's value on the initial hand ``a, b`` (per unit bet, overall: a peek's
    dealer Blackjack included), or ``{"blackjack": ...}``."""
    bj = values.p_blackjack
    if blackjack_allowed and is_blackjack(a, b):
        if rules.blackjack_at_once:
            return {"blackjack": rules.blackjack_pays}
        return {"blackjack": (1 - bj) * rules.blackjack_pays}
    hard, ace = a + b, a == 1 or b == 1
    total = best_total(hard, ace)
    ev: dict[str, float] = {"hit": values.hit(hard, ace)} if total < 21 else {}
    if total >= rules.must_draw_below:
        ev["stand"] = values.stand(total)
    if values.may_double(hard, ace):
        ev["double"] = values.double(hard, ace)
    if a == b and rules.max_hands != 1:
        ev["split"] = values.split(a)
    if rules.surrender and (values.up != 1 or rules.surrender_vs_ace):
        ev["surrender"] = -0.5
    if rules.peek:                                   # decided knowing the dealer has no Blackjack
        ev = {k: -bj + (1 - bj) * v for k, v in ev.items()}
    return ev


@dataclass(frozen=True)
class Analysis:
    """Each initial hand's play values against each dealer card, and its probability."""

    rules: MainRules
    # (up, a, b) -> play -> value; a <= b
    values: dict[tuple[int, int, int], dict[str, float]]
    # (up, a, b) -> probability of that deal (a <= b, both orders)
    weights: dict[tuple[int, int, int], float]
    # (kind, total, up) -> ("hit", "stand") best first: hands of three or more cards
    later: dict[tuple[str, int, int], tuple[str, ...]]
    # Switch: (up, a, b) -> value of a, b as a switched hand (no Blackjack, no surrender)
    switched: dict[tuple[int, int, int], dict[str, float]]


def _minus(deck: Deck, *cards: int) -> Deck:
    out = list(deck)
    for c in cards:
        out[c - 1] -= 1
    return tuple(out)


def later_table(rules: MainRules) -> dict[tuple[str, int, int], tuple[str, ...]]:
    """Hit or stand with three or more cards, by total against each dealer card (from the
    shoe without the dealer's card)."""
    later: dict[tuple[str, int, int], tuple[str, ...]] = {}
    for up in VALUES:
        hv = HandValues(rules, _minus(rules.deck(), up), up)
        for total in range(4, 21):
            for kind, hard, ace in (("hard", total, False), ("soft", total - 10, True)):
                if kind == "soft" and total < 12:
                    continue
                plays = {"hit": hv.hit(hard, ace)}
                if total >= rules.must_draw_below:
                    plays["stand"] = hv.stand(total)
                later[(kind, total, up)] = tuple(sorted(plays, key=lambda p: -plays[p]))
    return later


@lru_cache(maxsize=32)
def analyse(rules: MainRules) -> Analysis:
    """Every initial deal's play values (cached per ruleset: a few seconds)."""
    full = rules.deck()
    n = sum(full)
    values: dict[tuple[int, int, int], dict[str, float]] = {}
    weights: dict[tuple[int, int, int], float] = {}
    switched: dict[tuple[int, int, int], dict[str, float]] = {}
    later = later_table(rules)
    for up in VALUES:
        later_here = {(kind, total): plays[0] for (kind, total, u), plays in later.items() if u == up}
        for a, b in initial_hands():
            deck = _minus(full, up, a, b)
            if min(deck) < 0:
                continue
            # the player's first card, the dealer's, the player's second (the order does not matter)
            w = full[a - 1] / n * (full[up - 1] - (up == a)) / (n - 1) * \
                (full[b - 1] - (b == a) - (b == up)) / (n - 2)
            weights[(up, a, b)] = w * (1 if a == b else 2)
            hv = HandValues(rules, deck, up, later_here)
            values[(up, a, b)] = first_card_values(rules, hv, a, b)
            if rules.switch:
                plays = first_card_values(rules, hv, a, b, blackjack_allowed=False)
                plays.pop("surrender", None)            # Switch §3.10: not after a switch
                switched[(up, a, b)] = plays
    return Analysis(rules, values, weights, later, switched)
