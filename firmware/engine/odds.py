"""Exact odds of the side bets and the progressive, by combinatorial enumeration of the shoe.

Cards are dealt without replacement from a :class:`ShoeComposition` (N decks, or any partly
used shoe); every probability is an exact :class:`Fraction` -- no simulation.

Why it is fast enough for a table unit (well under a second per bet): a hand is judged
once per *class*, not once per deal.

* The cards of one role (the player's two, the dealer's one; or the four of a
  Blackjack Switch progressive) are an unordered multiset: every evaluator here is
  symmetric within a role (the tests check it), so ``A♠ K♥`` and ``K♥ A♠`` are one hand
  weighted by its two orders.
* Hands that differ only by a permutation of suits are judged once: a bet whose rules
  see only rank and "same suit" (21 + 3, pairs by rank, the four-card progressive) is
  invariant under all 24 suit permutations; a bet that also sees colour (Perfect Pairs,
  Super Pairs) under the 8 that keep colours together. :data:`SUIT_SYMMETRY` says which;
  a bet it does not know is enumerated without this shortcut (slower, still exact).
* On a shoe that has the same symmetry (a full shoe: every card N times) each class is
  weighted by its size; on any other shoe only the *winning* classes are expanded to
  their individual hands, and "lose" is what is left.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from itertools import combinations_with_replacement, permutations, product
from math import factorial, prod
from typing import Callable, Mapping, Sequence

from .cards import ALL_CARDS, RANKS, SUITS, Card, ShoeComposition
from .profile import Award, Profile, ProgressiveTable, SideBetTable
from .progressive import PROGRESSIVE_HANDS
from .sidebets import SIDE_BETS

#: A hand as the evaluator sees it: one tuple of cards per role, e.g. ((p1, p2), (d,)).
HandJudge = Callable[[Sequence[Sequence[Card]]], str | None]

# --- suit symmetry ------------------------------------------------------------------------

_SUIT_INDEX = {s: i for i, s in enumerate(SUITS)}
_BLACK = frozenset(_SUIT_INDEX[s] for s in "SC")

#: Suit permutations (tuples mapping suit index -> suit index) by name.
SUIT_GROUPS: Mapping[str, tuple[tuple[int, ...], ...]] = {
    "suits": tuple(permutations(range(4))),
    "colours": tuple(p for p in permutations(range(4))
                     if frozenset(p[i] for i in _BLACK) in (_BLACK, frozenset(range(4)) - _BLACK)),
    "none": ((0, 1, 2, 3),),
}

#: Which suit permutations leave each bet's judgement unchanged (checked by the tests).
SUIT_SYMMETRY: Mapping[str, str] = {
    "player_pair": "suits",
    "under_13": "suits",
    "over_13": "suits",
    "perfect_pairs": "colours",
    "super_pairs": "colours",
    "twenty_one_plus_three": "suits",
    "top_3": "suits",
    "four_card": "suits",
    "three_card": "suits",
}

_CARD = [[Card(r, s) for s in SUITS] for r in RANKS]
_KIND = {c: i for i, c in enumerate(ALL_CARDS)}
_KIND_OF = [[_KIND[_CARD[r][s]] for s in range(4)] for r in range(len(RANKS))]


@lru_cache(maxsize=None)
def _suit_orbits(shape: tuple[int, ...], group: str) -> tuple[tuple[tuple[tuple[int, ...], ...],
                                                                   tuple[tuple[tuple[int, ...], ...], ...]], ...]:
    """Classes of suit assignments to groups of cards of one rank in one role.

    ``shape`` gives each group's size; an assignment is a sorted suit tuple per group.
    Returns (representative, all members) per class under the named suit group.
    """
    perms = SUIT_GROUPS[group]
    options = [tuple(combinations_with_replacement(range(4), k)) for k in shape]
    classes = []
    for assignment in product(*options):
        images = {tuple(tuple(sorted(g[s] for s in suits)) for suits in assignment) for g in perms}
        if min(images) == assignment:
            classes.append((assignment, tuple(sorted(images))))
    return tuple(classes)


@dataclass(frozen=True)
class _Class:
    """Hands that one evaluator call judges: a rank layout and a suit class."""

    category: str | None
    groups: tuple[tuple[int, int], ...]                  # (role, rank) per group of cards
    representative: tuple[tuple[int, ...], ...]          # suits per group
    members: tuple[tuple[tuple[int, ...], ...], ...]     # every suit assignment in the class
    role_sizes: tuple[int, ...]

    def hand(self, suits: tuple[tuple[int, ...], ...]) -> tuple[int, tuple[tuple[int, int], ...]]:
        """(orders within roles, ((kind, how many), ...)) for one member.

        Groups of one role have different ranks, so a role's repeated kinds are repeated
        suits within one group; the same kind in two roles is merged for the draw count.
        """
        orders = prod(factorial(size) for size in self.role_sizes)
        kinds: dict[int, int] = {}
        for (_, rank), group_suits in zip(self.groups, suits, strict=True):
            for s in group_suits:
                k = _KIND_OF[rank][s]
                kinds[k] = kinds.get(k, 0) + 1
            if len(group_suits) > 1:
                for s in set(group_suits):
                    orders //= factorial(group_suits.count(s))
        return orders, tuple(kinds.items())


@lru_cache(maxsize=None)
def _classes(judge: HandJudge, role_sizes: tuple[int, ...], group: str) -> tuple[_Class, ...]:
    """Every class of hands with its category: composition-independent, built once."""
    out = []
    per_role = [tuple(combinations_with_replacement(range(len(RANKS)), k)) for k in role_sizes]
    for ranks in product(*per_role):
        groups: list[tuple[int, int]] = []
        shape: list[int] = []
        for role, role_ranks in enumerate(ranks):
            for rank, n in sorted(Counter(role_ranks).items()):
                groups.append((role, rank))
                shape.append(n)
        for representative, members in _suit_orbits(tuple(shape), group):
            cards: list[list[Card]] = [[] for _ in role_sizes]
            for (role, rank), suits in zip(groups, representative, strict=True):
                cards[role].extend(_CARD[rank][s] for s in suits)
            out.append(_Class(judge(cards), tuple(groups), representative, members, role_sizes))
    return tuple(out)


def _falling(n: int, k: int) -> int:
    """n (n-1) ... (n-k+1): ordered draws of k of n identical-looking cards."""
    return prod(range(n - k + 1, n + 1)) if n >= k else 0


def _weight(counts: Sequence[int], hand: tuple[int, tuple[tuple[int, int], ...]]) -> int:
    orders, kinds = hand
    return orders * prod(_falling(counts[k], m) for k, m in kinds)


def _shoe_is_symmetric(shoe: ShoeComposition, group: str) -> bool:
    counts = shoe.counts
    return all(counts[_KIND_OF[r][g[s]]] == counts[_KIND_OF[r][s]]
               for g in SUIT_GROUPS[group] for r in range(len(RANKS)) for s in range(4))


def hand_probabilities(judge: HandJudge, role_sizes: tuple[int, ...], shoe: ShoeComposition,
                       group: str = "none") -> dict[str | None, Fraction]:
    """Exact probability of each category (``None``: the bet loses) for a hand of
    ``role_sizes`` cards per role dealt from ``shoe`` without replacement.

    ``judge`` must be symmetric within each role and invariant under the suit ``group``.
    """
    n = sum(role_sizes)
    total = _falling(len(shoe), n)
    if total == 0:
        raise ValueError(f"the shoe holds {len(shoe)} cards; the hand needs {n}")
    classes = _classes(judge, role_sizes, group)
    counts = shoe.counts
    weights: Counter[str | None] = Counter()
    if _shoe_is_symmetric(shoe, group):
        for cls in classes:
            w = _weight(counts, cls.hand(cls.representative))
            if w:
                weights[cls.category] += w * len(cls.members)
        if sum(weights.values()) != total:  # the classes do not cover the deals: a bug here
            raise AssertionError("enumeration does not cover every deal")
    else:
        for cls in classes:
            if cls.category is not None:
                weights[cls.category] += sum(_weight(counts, cls.hand(m)) for m in cls.members)
        weights[None] = total - sum(weights.values())
    return {category: Fraction(w, total) for category, w in weights.items() if w}


# --- bets ---------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _side_bet_judge(name: str) -> HandJudge:
    rule = SIDE_BETS[name]
    if rule.uses_dealer_card:
        return lambda cards: rule.evaluate(cards[0], cards[1][0])
    return lambda cards: rule.evaluate(cards[0], None)


@lru_cache(maxsize=None)
def _progressive_judge(name: str) -> HandJudge:
    hand = PROGRESSIVE_HANDS[name]
    return lambda cards: hand.evaluate(cards[0])


def side_bet_probabilities(name: str, shoe: ShoeComposition) -> dict[str | None, Fraction]:
    """Category -> probability for a side bet of :data:`SIDE_BETS` (``None``: loses)."""
    rule = SIDE_BETS[name]
    roles = (2, 1) if rule.uses_dealer_card else (2,)
    probs = hand_probabilities(_side_bet_judge(name), roles, shoe, SUIT_SYMMETRY.get(name, "none"))
    return {c: probs.get(c, Fraction(0)) for c in (*rule.categories, None)}


def progressive_probabilities(name: str, shoe: ShoeComposition) -> dict[str | None, Fraction]:
    """Category -> probability for a progressive hand of :data:`PROGRESSIVE_HANDS`."""
    hand = PROGRESSIVE_HANDS[name]
    probs = hand_probabilities(_progressive_judge(name), (hand.cards,), shoe, SUIT_SYMMETRY.get(name, "none"))
    return {c: probs.get(c, Fraction(0)) for c in (*hand.categories, None)}


@dataclass(frozen=True)
class CategoryOdds:
    category: str
    probability: Fraction
    pays: Fraction | None             # odds to one; None: not in the pay table, so it loses


@dataclass(frozen=True)
class SideBetOdds:
    bet: str
    clause: str
    outcomes: tuple[CategoryOdds, ...]
    lose: Fraction                    # probability the wager is lost (a category without pay included)
    house_edge: Fraction              # -(expected net) per unit wagered


def side_bet_odds(table: SideBetTable, shoe: ShoeComposition) -> SideBetOdds:
    """Pay table + probabilities -> house edge. A winning category is paid its odds and the
    wager returned; a category the pay table leaves out is treated as a loss."""
    probs = side_bet_probabilities(table.name, shoe)
    outcomes = tuple(CategoryOdds(c, probs[c], table.pays.get(c)) for c in SIDE_BETS[table.name].categories)
    expected_net = sum((o.probability * o.pays for o in outcomes if o.pays is not None), Fraction(0))
    lose = 1 - sum((o.probability for o in outcomes if o.pays is not None), Fraction(0))
    expected_net -= lose
    return SideBetOdds(table.name, SIDE_BETS[table.name].clause, outcomes, lose, -expected_net)


@dataclass(frozen=True)
class ProgressiveCategoryOdds:
    category: str
    probability: Fraction
    award: Award | None


@dataclass(frozen=True)
class ProgressiveOdds:
    hand: str
    clause: str
    wager: Fraction
    outcomes: tuple[ProgressiveCategoryOdds, ...]
    lose: Fraction
    expected_award: Fraction | None   # per wager, in money; None: depends on an unknown meter
    return_: Fraction | None          # expected award / wager (the envy bonus, paid for others' hands, is left out)


def progressive_odds(table: ProgressiveTable, shoe: ShoeComposition,
                     meter: Fraction | None = None) -> ProgressiveOdds:
    """Each trigger's probability and, when every award's value is known (fixed, or a share
    of a given ``meter``), the expected return per unit wagered. The progressive wager is
    collected and the award paid (``rws-blackjack-switch-v4 §4.1.2`` pays amounts, not odds)."""
    hand = PROGRESSIVE_HANDS[table.hand]
    probs = progressive_probabilities(table.hand, shoe)
    outcomes = tuple(ProgressiveCategoryOdds(c, probs[c], table.pays.get(c)) for c in hand.categories)
    lose = 1 - sum((o.probability for o in outcomes if o.award is not None), Fraction(0))
    values = [(o.probability, o.award.value(meter)) for o in outcomes if o.award is not None]
    known = [(p, v) for p, v in values if v is not None]
    expected = sum((p * v for p, v in known), Fraction(0)) if len(known) == len(values) else None
    return ProgressiveOdds(table.hand, hand.clause, table.wager, outcomes, lose, expected,
                           None if expected is None else expected / table.wager)


@dataclass(frozen=True)
class ProfileOdds:
    profile: str
    decks: int | None                 # None: a partly used shoe
    side_bets: tuple[SideBetOdds, ...]
    progressive: ProgressiveOdds | None


def profile_odds(profile: Profile, shoe: ShoeComposition, meter: Fraction | None = None,
                 decks: int | None = None) -> ProfileOdds:
    """The odds of every side bet and the progressive a profile offers, on ``shoe``."""
    return ProfileOdds(
        profile=profile.name,
        decks=decks,
        side_bets=tuple(side_bet_odds(t, shoe) for t in profile.side_bets.values()),
        progressive=None if profile.progressive is None else progressive_odds(profile.progressive, shoe, meter),
    )
