"""``betbox edge``: the exact house edge of a profile's side bets and progressive.

For technicians and regulators checking a pay table against a rule document, e.g. the UK
poster's published edges (``uk-blackjack-4-deck-poster`` "A PLAYERS GUIDE TO THE HOUSE
EDGE"). The main game's basic-strategy house edge comes from the combinatorial analysis of
:mod:`firmware.engine.maingame` (``main`` in ``--json``; ``betbox strategy`` prints its chart).

A profile's ``[published]`` table holds the figures the rule document itself prints; each is
compared with the computed one at the document's own rounding, and a difference is said
plainly (``--check`` makes it the exit status), never smoothed over.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from typing import Any

from firmware.commands.limits import bounded_int
from firmware.commands.strategy import StrategyError, main_json, profile_rules
from firmware.engine.cards import ShoeComposition
from firmware.engine.money import format_amount, parse_amount, to_json_number
from firmware.engine.odds import ProfileOdds, ProgressiveOdds, SideBetOdds, profile_odds
from firmware.engine.profile import Award, Profile


class EdgeError(ValueError):
    """A request ``betbox edge`` cannot answer, with the reason."""


MAX_METER = 10**9          # no progressive meter comes near a thousand million


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "edge",
        help="exact odds and house edge of a profile's side bets and progressive",
        description="Exact odds of each side bet and progressive category a profile offers, by "
                    "enumerating every deal from a full shoe, and each bet's house edge.",
    )
    parser.add_argument("--profile", required=True, help="shipped profile name or path to a .toml profile")
    parser.add_argument("--decks", type=bounded_int("--decks", 1, 64),
                        help="decks in the shoe (default: the profile's default_decks)")
    parser.add_argument("--meter", help="progressive meter amount, to value a share-of-meter award")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a computed house edge differs from one the rule document "
                             "publishes (the profile's [published] figures)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        profile, decks, rules = profile_rules(args.profile, args.decks)   # the profile read once
        odds = odds_for(profile, decks, args.meter)
    except (EdgeError, StrategyError) as exc:
        print(f"betbox edge: error: {exc}", file=sys.stderr)
        return 2
    main = main_json(profile, rules)
    compared = compare_published(profile, odds, main["house_edge"])
    if args.json:
        json.dump({**to_json(odds), "main": main, "published": published_json(profile, odds, compared)},
                  sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(to_text(odds, main["house_edge"]) + published_text(profile, odds, compared))
    differ = [c for c in compared if not c.agrees]
    if args.check and differ:
        for c in differ:
            print(f"betbox edge: {profile.name} {c.bet}: computed {c.computed_text}, the document "
                  f"({profile.document}) states {c.published}%", file=sys.stderr)
        return 1
    return 0


@dataclass(frozen=True)
class Comparison:
    """One published house edge beside the computed one, rounded as the document rounds."""

    bet: str
    published: Decimal            # percent, as the document prints it
    computed: float               # the computed house edge (a fraction of the wager)

    @property
    def computed_text(self) -> str:
        exponent = self.published.as_tuple().exponent
        assert isinstance(exponent, int)        # a finite percentage (checked on load)
        quantum = Decimal(1).scaleb(exponent)   # the document's last digit, e.g. 0.01
        return f"{Decimal(repr(self.computed * 100)).quantize(quantum, ROUND_HALF_EVEN)}%"

    @property
    def agrees(self) -> bool:
        return self.computed_text == f"{self.published}%"


def compare_published(profile: Profile, odds: ProfileOdds, main_edge: float) -> list[Comparison]:
    """The profile's published figures beside the computed ones; empty when the profile has
    none or the shoe is not the one they were published for."""
    pub = profile.published
    if pub is None or pub.decks != odds.decks:
        return []
    computed: dict[str, float] = {"main": main_edge}
    computed.update((bet.bet, float(bet.house_edge)) for bet in odds.side_bets)
    prog = odds.progressive
    if prog is not None and prog.return_ is not None:
        computed["progressive"] = float(1 - prog.return_)
    return [Comparison(bet, value, computed[bet]) for bet, value in pub.edges.items() if bet in computed]


def published_json(profile: Profile, odds: ProfileOdds, compared: list[Comparison]) -> dict[str, Any] | None:
    pub = profile.published
    if pub is None:
        return None
    return {
        "document": profile.document,
        "decks": pub.decks,
        "compared": pub.decks == odds.decks,
        "figures": {c.bet: {"published": float(c.published) / 100, "computed": c.computed,
                            "computed_rounded": c.computed_text, "agrees": c.agrees} for c in compared},
    }


def published_text(profile: Profile, odds: ProfileOdds, compared: list[Comparison]) -> str:
    pub = profile.published
    if pub is None:
        return ""
    if pub.decks != odds.decks:
        return (f"the document's own figures ({profile.document}) are for {pub.decks} decks: "
                f"not compared at {odds.decks}\n")
    width = max(len(c.bet) for c in compared) if compared else 0
    lines = [f"the document's own figures ({profile.document}, {pub.decks} decks):"]
    for c in compared:
        verdict = "agrees" if c.agrees else "DIFFERS (docs/rules-interpretation.md)"
        lines.append(f"  {c.bet:<{width}}  published {str(c.published) + '%':>7}  "
                     f"computed {c.computed_text:>7}  {verdict}")
    return "\n".join(lines) + "\n"


def compute(profile_name: str, decks: int | None, meter_text: str | None) -> ProfileOdds:
    """The odds of a profile by name (``--decks`` checked against the profile)."""
    try:
        profile, decks, _ = profile_rules(profile_name, decks)
    except StrategyError as exc:
        raise EdgeError(str(exc)) from None
    return odds_for(profile, decks, meter_text)


def odds_for(profile: Profile, decks: int, meter_text: str | None) -> ProfileOdds:
    meter: Fraction | None = None
    if meter_text is not None:
        if profile.progressive is None:
            raise EdgeError(f"--meter: profile {profile.name!r} has no progressive")
        if len(meter_text) > 32:
            raise EdgeError(f"--meter {meter_text[:12]}...: not an amount (at most 32 characters)")
        try:
            meter = parse_amount(meter_text)
        except ValueError as exc:
            raise EdgeError(f"--meter: {exc}") from None
        if meter < 0:
            raise EdgeError(f"--meter {meter_text}: a meter cannot be negative")
        if meter > MAX_METER:
            raise EdgeError(f"--meter {meter_text}: above the largest meter {MAX_METER}")
    return profile_odds(profile, ShoeComposition.of_decks(decks), meter=meter, decks=decks)


def _award_json(award: Award | None) -> int | float | str | None:
    if award is None:
        return None
    if award.amount is not None:
        return to_json_number(award.amount)
    assert award.meter_share is not None        # an award is an amount or a share of the meter
    return f"{format_amount(award.meter_share * 100)}%"


def _side_bet_json(bet: SideBetOdds) -> dict[str, Any]:
    return {
        "clause": bet.clause,
        "house_edge": float(bet.house_edge),
        "outcomes": {o.category: {"probability": float(o.probability),
                                  "pays": None if o.pays is None else to_json_number(o.pays)}
                     for o in bet.outcomes},
        "lose_probability": float(bet.lose),
    }


def _progressive_json(prog: ProgressiveOdds) -> dict[str, Any]:
    out: dict[str, Any] = {
        "hand": prog.hand,
        "clause": prog.clause,
        "wager": to_json_number(prog.wager),
        "outcomes": {o.category: {"probability": float(o.probability), "pays": _award_json(o.award)}
                     for o in prog.outcomes},
        "lose_probability": float(prog.lose),
    }
    if prog.return_ is not None:
        out["return"] = float(prog.return_)
        out["house_edge"] = float(1 - prog.return_)
    return out


def to_json(odds: ProfileOdds) -> dict[str, Any]:
    bets: dict[str, Any] = {bet.bet: _side_bet_json(bet) for bet in odds.side_bets}
    if odds.progressive is not None:
        bets["progressive"] = _progressive_json(odds.progressive)
    return {"profile": odds.profile, "decks": odds.decks, "bets": bets}


def _pct(x: Fraction) -> str:
    return f"{float(x) * 100:.4f}%"


def to_text(odds: ProfileOdds, main_edge: float | None = None) -> str:
    rows = [("bet", "category", "pays", "probability", "house edge")]
    for bet in odds.side_bets:
        for i, o in enumerate(bet.outcomes):
            rows.append((bet.bet if i == 0 else "", o.category,
                         "-" if o.pays is None else f"{format_amount(o.pays)}:1",
                         _pct(o.probability), f"{float(bet.house_edge) * 100:.2f}%" if i == 0 else ""))
    prog = odds.progressive
    if prog is not None:
        for i, p in enumerate(prog.outcomes):
            edge = ""
            if i == 0:
                edge = "needs --meter" if prog.return_ is None else f"{float(1 - prog.return_) * 100:.2f}%"
            pays = "-" if p.award is None else str(_award_json(p.award))
            rows.append((f"progressive ({prog.hand}, wager {format_amount(prog.wager)})" if i == 0 else "",
                         p.category, pays, _pct(p.probability), edge))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = [f"{odds.profile}: {odds.decks} decks"]
    if len(rows) == 1:
        lines.append("no side bets and no progressive in this profile")
    else:
        for r in rows:
            lines.append("  ".join((c.ljust(w) if i < 2 else c.rjust(w)) for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip())
    if main_edge is not None:
        lines.append(f"main game (basic strategy, betbox strategy): house edge {main_edge * 100:.2f}%")
    return "\n".join(lines) + "\n"
