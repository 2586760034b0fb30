"""Shared helpers for engine tests: scripted rounds and step-by-step rounds."""

from __future__ import annotations

from typing import Any, Iterable

from firmware.engine.cards import parse_card
from firmware.engine.events import Action, BetsClosed, CardDrawn, Decision
from firmware.engine.profile import load_profile
from firmware.engine.round import Round
from firmware.script import run_script


def settle(profile: str, wagers: dict, shoe: list[str], decisions: dict | None = None, **extra: Any) -> dict:
    script = {
        "profile": profile,
        "wagers": {str(k): v for k, v in wagers.items()},
        "shoe": shoe,
        "decisions": {str(k): v for k, v in (decisions or {}).items()},
        **extra,
    }
    return run_script(script)


def box(result: dict, number: int) -> dict:
    return result["boxes"][str(number)]


def start(profile: str, wagers: dict, cards: Iterable[str], **kw: Any) -> Round:
    """A round after bets closed and the given cards drawn."""
    state = Round.new(load_profile(profile), **kw)
    state, _ = state.apply(BetsClosed.of(wagers))
    for c in cards:
        state, _ = state.apply(CardDrawn(parse_card(c)))
    return state


def step(state: Round, *events: Any) -> tuple[Round, list]:
    """Apply events; strings are cards, (box, action[, amount]) tuples are decisions."""
    outcomes: list = []
    for e in events:
        if isinstance(e, str):
            e = CardDrawn(parse_card(e))
        elif isinstance(e, tuple):
            e = Decision(e[0], Action(e[1]), *e[2:])
        state, out = state.apply(e)
        outcomes.extend(out)
    return state, outcomes
