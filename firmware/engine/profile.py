"""Rulesets as data: one profile file per rule document, validated strictly on load.

A profile is a TOML file in :mod:`firmware.profiles` (or any path). Every key is read with
its type and bounds; an unknown key, a missing key or an impossible value raises
:class:`ProfileError` naming the file, the section and the key. Table limits are not part
of a ruleset: they belong to the table's configuration.

Layout::

    [profile]      name, title, document, game ("blackjack" | "switch"), decks = [min, max],
                   default_decks
    [rules]        the main game (see :class:`Rules`)
    [clauses]      rule key -> clause of the rule document, quoted in errors and outcomes
    [side_bets.NAME]  pays = {category = odds-to-one, ...}, plus per-bet options
    [progressive]  hand, wager, envy_bonus, [progressive.pays] category = amount | "100%"
    [published]    the rule document's own house edges, to be checked (not used in play):
                   decks, main = "0.51%", a side bet's name = "4.24%"
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from firmware.engine.strict import Section, read_text

from .money import parse_amount, parse_odds, round_down_to_cent


class ProfileError(ValueError):
    """A profile that cannot be used, with the place and the reason."""


GAMES = ("blackjack", "switch")
DOUBLE_AMOUNTS = ("up_to_initial", "equal")
DEALER_BJ_COLLECTS = ("initial_bet", "all")
SURRENDER_WINDOWS = ("before_any_draw", "own_first_decision")
OVER_MAXIMUM = ("pro_rata", "refuse")
UNDER_MINIMUM = ("play", "refuse")
MAX_PROFILE_BYTES = 1_000_000           # a rule document's profile is a hundred lines


@dataclass(frozen=True)
class Rules:
    """The main game's rules. Each field names the clause it comes from in ``[clauses]``."""

    blackjack_pays: Fraction          # §4.1.1 Blackjack wins 3 to 2 (Switch: 1 to 1)
    insurance_pays: Fraction          # §4.1.1 Insurance wins 2 to 1
    insurance: bool                   # §3.14.2
    even_money: bool                  # §3.14.1
    surrender: bool                   # §3.16
    must_draw_below: int              # §3.19 compulsory draw below 12 (0: none)
    dealer_stands_on: int             # §3.23 draws to 16, stands on 17 (soft 17 included)
    dealer_push_total: int            # Switch §3.19.2: dealer 22 stands off (0: none)
    max_hands: int                    # §3.21.2 no more than four hands (0: no limit)
    resplit_aces: bool                # §3.21.2 a pair of Aces can only be split once
    double_totals: tuple[int, ...]    # () = any two-card total; MY guide: 9, 10, 11
    double_with_ace: bool             # MY guide: the cards should not consist of an Ace
    double_amount: str                # "up_to_initial" (§1.6) | "equal" (MY, UK)
    double_after_split: bool          # §3.22 (ii)
    dealer_blackjack_collects: str    # "initial_bet" (§3.21.3, §3.22.2) | "all"
    blackjack_paid_at_once: bool      # Switch §3.8: paid immediately and kept
    surrender_window: str             # "before_any_draw" (§3.16) | "own_first_decision" (MY guide)
    over_maximum: str                 # "pro_rata" (§5.1.1) | "refuse"
    under_minimum: str                # "play" (§5.2.1) | "refuse"
    walked_away_draw_to: int          # §5.3 the House draws to 12 or more (0: hand stands as it is)


@dataclass(frozen=True)
class SideBetTable:
    """An operator-changeable pay table for one side bet."""

    name: str
    pays: Mapping[str, Fraction]      # category -> odds to one
    max_of_initial_bet: Fraction | None = None   # under/over 13: not above the initial bet
    requires: str | None = None       # top_3 needs a twenty_one_plus_three wager


@dataclass(frozen=True)
class Award:
    """A progressive award: a fixed amount, or a share of the meter (``100%``)."""

    amount: Fraction | None = None
    meter_share: Fraction | None = None

    def value(self, meter: Fraction | None) -> Fraction | None:
        if self.amount is not None:
            return self.amount
        if meter is None:
            return None
        # rounded down to the cent like the controller's lock (docs/mqtt "One amount for a
        # 100% hit"): the table pays exactly what the books lock
        assert self.meter_share is not None     # a pay is an amount or a share (checked on load)
        return round_down_to_cent(self.meter_share * meter)

    def __str__(self) -> str:
        if self.amount is not None:
            return str(self.amount)
        assert self.meter_share is not None
        return f"{self.meter_share * 100}% of the meter"


@dataclass(frozen=True)
class ProgressiveTable:
    hand: str                         # evaluator name in firmware.engine.progressive
    wager: Fraction                   # the fixed progressive wager
    pays: Mapping[str, Award]
    envy_bonus: Fraction | None       # Switch §3.7.2; None: no envy bonus
    envy_category: str | None         # the hand that triggers envy bonuses


@dataclass(frozen=True)
class Published:
    """The house edges the rule document itself states (e.g. the UK poster's "A PLAYERS GUIDE
    TO THE HOUSE EDGE"), kept as written so a computed figure is compared at the document's
    own rounding. ``betbox edge`` prints them beside its own and says where they differ."""

    decks: int
    edges: Mapping[str, Decimal]      # "main" or a side bet's name -> percent, as written


@dataclass(frozen=True)
class Profile:
    name: str
    title: str
    document: str
    game: str
    decks: tuple[int, int]
    default_decks: int
    rules: Rules
    clauses: Mapping[str, str]
    side_bets: Mapping[str, SideBetTable] = field(default_factory=dict)
    progressive: ProgressiveTable | None = None
    source: str = ""
    published: Published | None = None

    @property
    def is_switch(self) -> bool:
        return self.game == "switch"

    @property
    def hands_per_box(self) -> int:
        """Blackjack Switch: two initial hands per player position (Switch §3.3)."""
        return 2 if self.is_switch else 1

    def clause(self, key: str) -> str:
        """The rule document clause for a rule key, e.g. ``rws-blackjack-v5 §3.16``."""
        ref = self.clauses.get(key)
        return f"{self.document} {ref}" if ref else self.document

    def bet_names(self) -> tuple[str, ...]:
        names = ["main", *self.side_bets]
        if self.progressive is not None:
            names.append("progressive")
        return tuple(names)


# --- strict reading -------------------------------------------------------------------

class _Section(Section):
    """A profile table: strict reading plus odds (``"3:2"``, ``25``)."""

    def __init__(self, data: Any, where: str, source: str):
        super().__init__(data, where, source, ProfileError)

    def odds(self, key: str) -> Fraction:
        value = self.get(key, (str, int, float))
        try:
            return parse_odds(value)
        except ValueError as exc:
            raise self.fail(key, str(exc)) from None


def _read_rules(s: _Section) -> Rules:
    double_totals = s.get("double_totals", (str, list))
    if isinstance(double_totals, str):
        if double_totals != "any":
            raise s.fail("double_totals", f"{double_totals!r}: expected \"any\" or a list of totals")
        totals: tuple[int, ...] = ()
    else:
        if not double_totals or not all(isinstance(t, int) and not isinstance(t, bool) and 2 <= t <= 21
                                        for t in double_totals):
            raise s.fail("double_totals", f"{double_totals!r}: expected totals between 2 and 21")
        totals = tuple(sorted(set(double_totals)))
    max_hands = s.get("max_hands", int)
    if max_hands != 0 and not 2 <= max_hands <= 52:
        raise s.fail("max_hands", f"{max_hands}: expected 0 (no limit) or 2..52")
    push = s.get("dealer_push_total", int)
    if push not in (0, 22):
        raise s.fail("dealer_push_total", f"{push}: expected 0 (none) or 22")
    rules = Rules(
        blackjack_pays=s.odds("blackjack_pays"),
        insurance_pays=s.odds("insurance_pays"),
        insurance=s.get("insurance", bool),
        even_money=s.get("even_money", bool),
        surrender=s.get("surrender", bool),
        must_draw_below=s.int_in("must_draw_below", 0, 21),
        dealer_stands_on=s.int_in("dealer_stands_on", 12, 21),
        dealer_push_total=push,
        max_hands=max_hands,
        resplit_aces=s.get("resplit_aces", bool),
        double_totals=totals,
        double_with_ace=s.get("double_with_ace", bool),
        double_amount=s.choice("double_amount", DOUBLE_AMOUNTS),
        double_after_split=s.get("double_after_split", bool),
        dealer_blackjack_collects=s.choice("dealer_blackjack_collects", DEALER_BJ_COLLECTS),
        blackjack_paid_at_once=s.get("blackjack_paid_at_once", bool),
        surrender_window=s.choice("surrender_window", SURRENDER_WINDOWS),
        over_maximum=s.choice("over_maximum", OVER_MAXIMUM),
        under_minimum=s.choice("under_minimum", UNDER_MINIMUM),
        walked_away_draw_to=s.int_in("walked_away_draw_to", 0, 21),
    )
    s.finish()
    return rules


def _read_side_bet(name: str, s: _Section, known: Mapping[str, Any]) -> SideBetTable:
    rule = known.get(name)
    if rule is None:
        raise ProfileError(f"{s.source}: [side_bets.{name}] unknown side bet "
                           f"(known: {', '.join(sorted(known))})")
    pays_raw = _Section(s.get("pays", dict), f"side_bets.{name}.pays", s.source)
    pays: dict[str, Fraction] = {}
    for category in rule.categories:
        if category in pays_raw.data:
            pays[category] = pays_raw.odds(category)
    pays_raw.finish()  # a category the evaluator does not know is an error
    if not pays:
        raise s.fail("pays", f"no category pays (categories: {', '.join(rule.categories)})")
    for category, odds in pays.items():
        if odds <= 0:
            raise ProfileError(f"{s.source}: [side_bets.{name}.pays] {category}: odds must be above zero")
    max_of_value = s.get("max_of_initial_bet", (int, float), None)
    try:                               # an amount's bounds: TOML's inf and nan are floats too
        max_of = None if max_of_value is None else parse_amount(max_of_value)
    except ValueError as exc:
        raise s.fail("max_of_initial_bet", str(exc)) from None
    if max_of is not None and max_of <= 0:
        raise s.fail("max_of_initial_bet", f"{max_of_value} must be above zero")
    requires = s.get("requires", str, None)
    if requires is not None and requires not in known:
        raise s.fail("requires", f"{requires!r} is not a side bet")
    s.finish()
    return SideBetTable(name=name, pays=pays,
                        max_of_initial_bet=max_of,
                        requires=requires)


def _read_progressive(s: _Section, evaluators: Mapping[str, Any]) -> ProgressiveTable:
    hand = s.get("hand", str)
    rule = evaluators.get(hand)
    if rule is None:
        raise s.fail("hand", f"{hand!r} is not a progressive hand (known: {', '.join(sorted(evaluators))})")
    try:
        wager = parse_amount(s.get("wager", (int, float, str)))
    except ValueError as exc:
        raise s.fail("wager", str(exc)) from None
    if wager <= 0:
        raise s.fail("wager", "must be above zero")
    pays_raw = _Section(s.get("pays", dict), "progressive.pays", s.source)
    pays: dict[str, Award] = {}
    for category in rule.categories:
        if category not in pays_raw.data:
            continue
        value = pays_raw.get(category, (int, float, str))
        if isinstance(value, str) and value.strip().endswith("%"):
            try:                       # an amount's bounds: Fraction("1e-999999999") is exact, and endless
                share = parse_amount(value.strip()[:-1]) / 100
            except ValueError as exc:
                raise pays_raw.fail(category, f"cannot read {value!r} as a percentage: {exc}") from None
            if not 0 < share <= 1:
                raise pays_raw.fail(category, f"{value} must be above 0% and at most 100%")
            pays[category] = Award(meter_share=share)
        else:
            try:
                amount = parse_amount(value)
            except ValueError as exc:
                raise pays_raw.fail(category, str(exc)) from None
            if amount <= 0:
                raise pays_raw.fail(category, "must be above zero")
            pays[category] = Award(amount=amount)
    pays_raw.finish()
    if not pays:
        raise s.fail("pays", f"no category pays (categories: {', '.join(rule.categories)})")
    envy = s.get("envy_bonus", (int, float, str), None)
    envy_amount = None
    envy_category = None
    if envy is not None:
        try:
            envy_amount = parse_amount(envy)
        except ValueError as exc:
            raise s.fail("envy_bonus", str(exc)) from None
        envy_category = s.get("envy_category", str)
        if envy_category not in rule.categories:
            raise s.fail("envy_category", f"{envy_category!r} is not a {hand} category")
    s.finish()
    return ProgressiveTable(hand=hand, wager=wager, pays=pays, envy_bonus=envy_amount,
                            envy_category=envy_category)


def _read_published(s: _Section, bets: tuple[str, ...], decks: tuple[int, int]) -> Published:
    n = s.int_in("decks", decks[0], decks[1])
    edges: dict[str, Decimal] = {}
    for key in list(s.data):
        if key == "decks":
            continue
        if key not in bets:
            raise s.fail(key, f"not a bet of this profile (bets: {', '.join(bets)})")
        text = s.get(key, str)
        try:
            value = Decimal(text.strip().removesuffix("%")) if text.strip().endswith("%") else None
        except InvalidOperation:
            value = None
        if value is None or not value.is_finite() or value.is_signed() or not value < 100:
            shown = repr(text) if len(text) <= 40 else repr(text[:40]) + "..."
            raise s.fail(key, f"{shown}: expected a percentage as the document prints it, e.g. \"0.51%\"")
        edges[key] = value
    s.finish()
    if not edges:
        raise s.fail("decks", "no published figure follows (write e.g. main = \"0.51%\")")
    return Published(decks=n, edges=edges)


def parse_profile(data: Mapping[str, Any], source: str = "<profile>") -> Profile:
    """Validate a profile's parsed TOML; every problem names its place."""
    from .progressive import PROGRESSIVE_HANDS
    from .sidebets import SIDE_BETS

    top = _Section(dict(data), "", source)
    head = _Section(top.get("profile", dict), "profile", source)
    name = head.get("name", str)
    title = head.get("title", str)
    document = head.get("document", str)
    game = head.choice("game", GAMES)
    decks = head.get("decks", list)
    if (len(decks) != 2 or not all(isinstance(d, int) and not isinstance(d, bool) for d in decks)
            or not 1 <= decks[0] <= decks[1] <= 8):
        raise head.fail("decks", f"{decks!r}: expected [minimum, maximum] with 1 <= minimum <= maximum <= 8")
    default_decks = head.int_in("default_decks", decks[0], decks[1])
    head.finish()

    rules = _read_rules(_Section(top.get("rules", dict), "rules", source))

    clauses_s = _Section(top.get("clauses", dict), "clauses", source)
    clauses = {key: clauses_s.get(key, str) for key in list(clauses_s.data)}
    clauses_s.finish()

    side_bets: dict[str, SideBetTable] = {}
    raw_side = top.get("side_bets", dict, {})
    for bet_name, table in raw_side.items():
        side_bets[bet_name] = _read_side_bet(bet_name, _Section(table, f"side_bets.{bet_name}", source), SIDE_BETS)
    for bet in side_bets.values():
        if bet.requires is not None and bet.requires not in side_bets:
            raise ProfileError(f"{source}: [side_bets.{bet.name}] requires {bet.requires!r}, "
                               "which this profile does not offer")

    progressive = None
    if "progressive" in top.data:
        progressive = _read_progressive(_Section(top.get("progressive", dict), "progressive", source),
                                        PROGRESSIVE_HANDS)
    bets = ("main", *side_bets, *(("progressive",) if progressive is not None else ()))
    published = None
    if "published" in top.data:
        published = _read_published(_Section(top.get("published", dict), "published", source), bets,
                                    (decks[0], decks[1]))
    top.finish()

    if game == "switch" and rules.even_money:
        raise ProfileError(f"{source}: [rules] even_money: Blackjack Switch pays a Blackjack at once "
                           "(Switch §3.8); even money does not apply")
    return Profile(name=name, title=title, document=document, game=game, decks=(decks[0], decks[1]),
                   default_decks=default_decks, rules=rules, clauses=clauses, side_bets=side_bets,
                   progressive=progressive, source=source, published=published)


def profile_names() -> list[str]:
    """The profiles shipped with the firmware."""
    return sorted(p.name[:-5] for p in resources.files("firmware.profiles").iterdir()
                  if p.name.endswith(".toml"))


def load_profile(name_or_path: str | Path) -> Profile:
    """Load a shipped profile by name (``rws-blackjack``) or any profile file by path."""
    text_source: str
    path = Path(name_or_path)
    # A bare name is always a shipped profile, whatever the working directory holds.
    is_path = isinstance(name_or_path, Path) or path.suffix == ".toml" or len(path.parts) > 1
    if is_path:
        try:
            raw = read_text(path, MAX_PROFILE_BYTES, "a profile")     # (/dev/zero has no size)
        except OSError as exc:
            raise ProfileError(f"cannot read profile {path}: {exc.strerror}") from None
        text_source = str(path)
    else:
        name = str(name_or_path)
        resource = resources.files("firmware.profiles").joinpath(f"{name}.toml")
        if not resource.is_file():
            raise ProfileError(f"unknown profile {name!r} (shipped: {', '.join(profile_names())})")
        raw = resource.read_text(encoding="utf-8")
        text_source = f"{name}.toml"
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{text_source}: not valid TOML: {exc}") from None
    profile = parse_profile(data, text_source)
    if not is_path and profile.name != str(name_or_path):
        raise ProfileError(f"{text_source}: [profile] name is {profile.name!r}, expected {name_or_path!r}")
    return profile
