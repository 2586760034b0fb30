"""The rules screen: the profile's main rules, pay tables and each bet's house edge.

House edges come from the engine's exact odds (``firmware.engine.odds``) and the main game's
combinatorial analysis (``firmware.engine.basic``: house edge with basic strategy), worked
out once per (profile, decks) and cached: a few seconds on the Pi, started in the background
at start-up so the screen is ready when a player touches "Rules". The display works them out
in a child process (``python -m ui.rulesinfo``): the engine's working memory for them (its
caches, ~6 MB) would otherwise stay in the display's RSS for good (docs/ui.md "Memory").
"""

from __future__ import annotations

import logging
import pickle
import subprocess
import sys
import threading
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from firmware.engine.money import parse_amount
from firmware.engine.profile import Profile

from .i18n import tr
from .presenter import category_label, money, odds, spot_label

if TYPE_CHECKING:
    from firmware.engine.odds import ProfileOdds

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]     # where ``ui`` and ``firmware`` are imported from
CHILD_TIMEOUT_S = 600.0                         # a few seconds on the Pi

@dataclass(frozen=True)
class RulesSection:
    heading: str
    lines: tuple[str, ...]
    note: str = ""          # the house edge / return line


@dataclass(frozen=True)
class RulesScreen:
    title: str
    main: tuple[str, ...]
    sections: tuple[RulesSection, ...]
    document: str


_cache: dict[tuple[str, int], ProfileOdds] = {}
_main_cache: dict[tuple[str, int], float] = {}
_cache_lock = threading.Lock()


def work_out(profile: Profile, decks: int) -> tuple[ProfileOdds, float]:
    """The side bets' and progressive's odds and the main game's house edge, here."""
    from firmware.engine.basic import house_edge
    from firmware.engine.cards import ShoeComposition
    from firmware.engine.maingame import main_rules
    from firmware.engine.odds import profile_odds
    return (profile_odds(profile, ShoeComposition.of_decks(decks), decks=decks),
            house_edge(main_rules(profile, decks)))


def child_command() -> list[str]:
    return [sys.executable, "-m", "ui.rulesinfo"]


def work_out_in_child(profile: Profile, decks: int) -> tuple[ProfileOdds, float]:
    """:func:`work_out` in a child process, so this process never holds the engine's
    caches; our own child's pickled answer on a pipe."""
    done = subprocess.run(child_command(), input=pickle.dumps((profile, decks)), capture_output=True,
                          timeout=CHILD_TIMEOUT_S, cwd=ROOT, check=False)
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError(f"the odds' child process exited with status {done.returncode}: {tail[0]}")
    computed, main = pickle.loads(done.stdout)
    return computed, main


def odds_for(profile: Profile, decks: int | None = None, child: bool = False) -> ProfileOdds:
    """The odds for the rules screen, worked out once per (profile, decks); ``child``: in a
    child process (the display's warm-up), or here if that fails (logged)."""
    decks = decks or profile.default_decks
    key = (profile.name, decks)
    with _cache_lock:
        hit = _cache.get(key)
    if hit is None:
        try:
            hit, main = work_out_in_child(profile, decks) if child else work_out(profile, decks)
        except Exception as exc:  # noqa: BLE001 - any failure of the child: the screen still gets its odds
            log.warning("rules screen: %s; working the odds out in the display's process", exc)
            hit, main = work_out(profile, decks)
        with _cache_lock:
            _main_cache[key] = main
            _cache[key] = hit
    return hit


def cached_main_edge(profile: Profile, decks: int | None = None) -> float | None:
    """The main game's house edge with basic strategy, once :func:`odds_for` has worked it out."""
    with _cache_lock:
        return _main_cache.get((profile.name, decks or profile.default_decks))


def cached_odds(profile: Profile, decks: int | None = None) -> ProfileOdds | None:
    with _cache_lock:
        return _cache.get((profile.name, decks or profile.default_decks))


def warm_up(profile: Profile, decks: int | None = None) -> threading.Thread:
    """Work the odds out in a background thread (start-up), so the screen opens at once."""
    t = threading.Thread(target=odds_for, args=(profile, decks, True), name="odds", daemon=True)
    t.start()
    return t


def meter_amount(text: str | None) -> Fraction | None:
    """The controller's meter as an amount: its status carries wire text ("25009.25"); None
    when no meter is known (or the text is not an amount: then the screen says no return)."""
    if text is None:
        return None
    try:
        return parse_amount(text)
    except ValueError:
        log.warning("rules screen: the controller's meter %r is not an amount", text)
        return None


def percent(value: Fraction) -> str:
    return f"{float(value) * 100:.2f}%"


def rules_screen(profile: Profile, lang: str, decks: int | None = None,
                 meter: Fraction | None = None, computed: ProfileOdds | None = None) -> RulesScreen:
    r = profile.rules
    decks = decks or profile.default_decks
    main = [tr(lang, "rules.decks", decks=decks),
            tr(lang, "rules.blackjack_pays", odds=odds(r.blackjack_pays))]
    if r.insurance:
        main.append(tr(lang, "rules.insurance_pays", odds=odds(r.insurance_pays)))
    main.append(tr(lang, "rules.dealer_stands", n=r.dealer_stands_on))
    if r.dealer_push_total:
        main.append(tr(lang, "rules.dealer_22"))
    main.append(tr(lang, "rules.surrender" if r.surrender else "rules.no_surrender"))
    if r.max_hands:
        main.append(tr(lang, "rules.max_hands", n=r.max_hands))
    # worked out together with the side bets' odds (odds_for): shown once those are
    main_edge = cached_main_edge(profile, decks) if computed is not None else None
    main.append(tr(lang, "rules.main_edge", edge=percent(Fraction(main_edge))) if main_edge is not None
                else tr(lang, "rules.computing"))
    edges = {o.bet: o for o in computed.side_bets} if computed else {}
    sections = []
    for name, table in profile.side_bets.items():
        lines = [tr(lang, "rules.pays", category=category_label(lang, c), odds=odds(p))
                 for c, p in table.pays.items()]
        heading = spot_label(lang, name)
        if table.requires:
            heading += " " + tr(lang, "rules.requires", bet=spot_label(lang, table.requires))
        o = edges.get(name)
        note = (tr(lang, "rules.house_edge", edge=percent(o.house_edge)) if o
                else tr(lang, "rules.computing"))
        sections.append(RulesSection(heading, tuple(lines), note))
    p = profile.progressive
    if p is not None:
        lines = []
        for c, award in p.pays.items():
            value = (tr(lang, "rules.award_share", percent=f"{float(award.meter_share) * 100:g}%")
                     if award.meter_share is not None else money(award.amount))
            lines.append(tr(lang, "rules.award", category=category_label(lang, c), award=value))
        if p.envy_bonus:
            lines.append(tr(lang, "rules.envy", amount=money(p.envy_bonus),
                            category=category_label(lang, p.envy_category or "")))
        note = ""
        if computed and computed.progressive is not None:
            if meter is not None:
                # the return depends on the meter: recomputed from the cached probabilities
                prog = computed.progressive
                values = [(o.probability, o.award.value(meter)) for o in prog.outcomes if o.award is not None]
                ret = sum((q * v for q, v in values if v is not None), Fraction(0)) / prog.wager
                note = tr(lang, "rules.return", ret=percent(ret))
        elif profile.progressive is not None and computed is None:
            note = tr(lang, "rules.computing")
        sections.append(RulesSection(f"{spot_label(lang, 'progressive')} ({money(p.wager)})",
                                     tuple(lines), note))
    return RulesScreen(tr(lang, "rules.title", title=profile.title), tuple(main), tuple(sections),
                       tr(lang, "rules.document", document=profile.document))


def _child_main() -> int:
    """``python -m ui.rulesinfo``: (profile, decks) pickled on stdin, the odds on stdout."""
    profile, decks = pickle.load(sys.stdin.buffer)
    sys.stdout.buffer.write(pickle.dumps(work_out(profile, decks)))
    return 0


if __name__ == "__main__":
    sys.exit(_child_main())
