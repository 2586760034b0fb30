"""``betbox strategy``: the basic-strategy chart the main-game analysis chose for a profile.

Codes: H hit, S stand, D double (else hit), Ds double (else stand), P split; the surrender
table marks R where surrendering comes first (the hard/soft/pair code is then the play when
surrender is no longer possible). Rows of three or more cards hit or stand by ``multi_card``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from firmware.commands.limits import bounded_int
from firmware.engine.basic import Chart, chart_for, expected_return
from firmware.engine.events import Action
from firmware.engine.maingame import VALUES, MainRules, main_rules
from firmware.engine.profile import Profile, ProfileError, load_profile

UPS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 1)          # dealer cards as charts print them, Ace last


class StrategyError(ValueError):
    """A request ``betbox strategy`` cannot answer, with the reason."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "strategy",
        help="the main game's basic-strategy chart for a profile",
        description="The total-dependent basic strategy chosen by the exact main-game analysis "
                    "(hard, soft, pairs, surrender; Blackjack Switch adds the switch rule).",
    )
    parser.add_argument("--profile", required=True, help="shipped profile name or path to a .toml profile")
    parser.add_argument("--decks", type=bounded_int("--decks", 1, 64),
                        help="decks in the shoe (default: the profile's default_decks)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def read_profile(name: str) -> Profile:
    """A profile, or :class:`StrategyError` naming what is wrong with the file."""
    try:
        return load_profile(name)
    except ProfileError as exc:
        raise StrategyError(str(exc)) from None
    except (OSError, UnicodeDecodeError, RecursionError) as exc:    # a profile file that is no profile
        what = "nested too deeply" if isinstance(exc, RecursionError) else \
            "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else exc.strerror
        raise StrategyError(f"--profile {name}: {what}") from None


def profile_rules(profile_name: str, decks: int | None) -> tuple[Profile, int, MainRules]:
    profile = read_profile(profile_name)
    low, high = profile.decks
    if decks is None:
        decks = profile.default_decks
    elif not low <= decks <= high:
        allowed = f"{low}" if low == high else f"{low} to {high}"
        raise StrategyError(f"--decks {decks}: profile {profile.name!r} is played with {allowed} decks")
    return profile, decks, main_rules(profile, decks)


def run(args: argparse.Namespace) -> int:
    try:
        profile, decks, rules = profile_rules(args.profile, args.decks)
    except StrategyError as exc:
        print(f"betbox strategy: error: {exc}", file=sys.stderr)
        return 2
    data = {"profile": profile.name, "decks": decks, **main_json(profile, rules)}
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(chart_text(data))
    return 0


def up_label(up: int) -> str:
    return "A" if up == 1 else str(up)


def code(plays: Sequence[Action]) -> str:
    """The chart code of a preference list, surrender left out (its own table)."""
    rest = [p for p in plays if p != Action.SURRENDER]
    first = rest[0]
    if first == Action.DOUBLE:
        after = next(p for p in rest if p in (Action.HIT, Action.STAND))
        return "D" if after == Action.HIT else "Ds"
    return {Action.HIT: "H", Action.STAND: "S", Action.SPLIT: "P"}[first]


def strategy_json(chart: Chart) -> dict[str, Any]:
    def rows(kind: str, keys: Sequence[int], table: str = "first") -> dict[str, dict[str, str]]:
        source = chart.first if table == "first" else chart.later
        return {(f"{up_label(k)},{up_label(k)}" if kind == "pair" else str(k)):
                {up_label(up): code(source[(kind, k, up)]) for up in UPS}
                for k in keys if (kind, k, UPS[0]) in source}

    surrender: dict[str, dict[str, str]] = {}
    for (kind, k, up), plays in sorted(chart.first.items(), key=lambda kv: (kv[0][0] == "pair", kv[0][1])):
        if plays[0] == Action.SURRENDER:
            row = f"{up_label(k)},{up_label(k)}" if kind == "pair" else f"{kind} {k}"
            surrender.setdefault(row, {})[up_label(up)] = "R"
    out: dict[str, Any] = {
        "kind": "total-dependent (initial two cards); hits after it by total",
        "hard": rows("hard", range(5, 21)),
        "soft": rows("soft", range(13, 21)),
        "pairs": rows("pair", VALUES[1:] + VALUES[:1]),
        "surrender": surrender,
        "multi_card": {"hard": rows("hard", range(4, 21), "later"),
                       "soft": rows("soft", range(12, 21), "later")},
    }
    if chart.rules.switch:
        out["switch"] = {
            "rule": "switch the second cards when the two switched hands' values (hand_values_switched) "
                    "add up to more than the two dealt (hand_values); never with a Blackjack (Switch §3.11)",
            "hand_values": _values(chart.hand_values),
            "hand_values_switched": _values(chart.switched_values),
        }
    return out


def _values(table: Any) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for (up, a, b), value in sorted(table.items()):
        out.setdefault(up_label(up), {})[f"{up_label(a)},{up_label(b)}"] = round(value, 6)
    return out


def main_json(profile: Profile, rules: MainRules) -> dict[str, Any]:
    """``main`` of ``betbox edge --json``: house edge and the chart it was worked out with."""
    chart = chart_for(rules)
    return {
        "house_edge": -expected_return(rules),
        "method": "combinatorial analysis (docs/engine.md 'Main game'): exact dealer probabilities "
                  "per initial deal, total-dependent basic strategy",
        "clauses": {key: profile.clause(key) for key in ("dealer", "split", "double", "surrender",
                                                          "dealer_blackjack", "pay_table")
                    if key in profile.clauses},
        "strategy": strategy_json(chart),
    }


def _table(title: str, rows: dict[str, dict[str, str]]) -> list[str]:
    if not rows:
        return []
    width = max(len(r) for r in rows) + 1
    lines = [f"{title}", " " * width + " ".join(f"{up_label(u):>3}" for u in UPS)]
    for row, cells in rows.items():
        lines.append(f"{row:<{width}}" + " ".join(f"{cells.get(up_label(u), '-'):>3}" for u in UPS))
    return lines + [""]


def chart_text(data: dict[str, Any]) -> str:
    s = data["strategy"]
    lines = [f"{data['profile']}: {data['decks']} decks, main game house edge "
             f"{data['house_edge'] * 100:.2f}% (basic strategy, {s['kind']})", ""]
    lines += _table("hard", s["hard"]) + _table("soft", s["soft"]) + _table("pairs", s["pairs"])
    lines += _table("surrender (R: surrender first)", s["surrender"]) or ["surrender: never", ""]
    lines += _table("three or more cards, hard", s["multi_card"]["hard"])
    lines += _table("three or more cards, soft", s["multi_card"]["soft"])
    if "switch" in s:
        lines.append("switch: " + s["switch"]["rule"] + " (values in --json)")
    lines.append("codes: H hit, S stand, D double else hit, Ds double else stand, P split, R surrender")
    return "\n".join(lines) + "\n"
