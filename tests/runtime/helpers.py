"""Shared by the runtime tests: read results back out of the units' journals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from firmware.engine.events import event_from_dict
from firmware.engine.profile import load_profile
from firmware.engine.round import replay
from firmware.engine.settlement import settlement
from firmware.runtime.journal import open_readonly
from firmware.runtime.wire import shoe_from_json


def dealer_results(state_dir: Path) -> dict[int, dict[str, Any]]:
    j = open_readonly(state_dir / "dealer" / "journal.db")
    try:
        return {r.body["body"]["round"]: r.body["body"]["settlement"]
                for r in j.records() if r.dir == "out" and r.kind == "round_result"}
    finally:
        j.close()


def seat_results(state_dir: Path, box: int) -> dict[int, Any]:
    j = open_readonly(state_dir / f"seat-{box}" / "journal.db")
    try:
        return {r.body["body"]["round"]: r.body["body"]["settlement"]
                for r in j.records() if r.dir == "out" and r.kind == "result"}
    finally:
        j.close()


def replayed_results(state_dir: Path) -> dict[int, dict[str, Any]]:
    """Each round rebuilt by the engine alone from the dealer's journalled stream."""
    j = open_readonly(state_dir / "dealer" / "journal.db")
    rounds: dict[int, dict[str, Any]] = {}
    events: dict[int, list] = {}
    try:
        for r in j.records():
            if r.dir != "out" or r.body["topic"].endswith("/stream") is False:
                continue
            body = r.body["body"]
            if r.kind == "round_open":
                rounds[body["round"]] = body
                events[body["round"]] = []
            elif r.kind == "event":
                events[body["round"]].append(event_from_dict(body["event"]))
    finally:
        j.close()
    out = {}
    for n, head in rounds.items():
        state, _ = replay(load_profile(head["profile"]), events[n], decks=head["decks"],
                          limits=head["limits"], shoe=shoe_from_json(head["shoe"]))
        if state.is_over:
            out[n] = settlement(state)
    return out
