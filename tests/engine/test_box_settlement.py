"""One frozen settlement per box (issue #15): the settlement JSON is derived from it, byte
for byte as before (the golden files' key order included), and the dual check, the seat
view and the reporters read it instead of walking the ledger each its own way."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction
from pathlib import Path

import pytest

from firmware.engine.events import BetsClosed, VoidRound
from firmware.engine.profile import load_profile
from firmware.engine.round import Round
from firmware.engine.settlement import box_settlement, box_settlements, settlement
from firmware.script import play_script

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
FILES = sorted(GOLDEN.glob("*/*.json"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_settlement_json_is_byte_identical_to_the_golden_file(path):
    golden = json.loads(path.read_text())
    state = play_script(golden["script"])
    assert json.dumps(settlement(state)) == json.dumps(golden["expected"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_box_entry_is_its_box_settlement(path):
    state = play_script(json.loads(path.read_text())["script"])
    boxes = settlement(state)["boxes"]
    settled = box_settlements(state)
    assert [str(b.box) for b in settled] == list(boxes)
    for b in settled:
        assert b.to_json() == boxes[str(b.box)]
        assert b.net == sum((net for _, net in b.bets), Fraction(0))
        assert box_settlement(state, b.box) == b
        for bet, net in b.bets:
            assert b.bet_net(bet) == net


def test_a_box_settlement_is_frozen():
    state = play_script(json.loads(FILES[0].read_text())["script"])
    b = box_settlements(state)[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.net = Fraction(1)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.hands[0].result = "win"  # type: ignore[misc]


def test_a_box_without_bets_has_no_settlement():
    state = play_script(json.loads(FILES[0].read_text())["script"])
    assert box_settlement(state, 99) is None


def test_a_void_round_returns_every_bet_and_nets_nothing():
    """rws-blackjack-v5 §5.17: every bet of a voided round is returned."""
    profile = load_profile("rws-blackjack")
    state, _ = Round.new(profile, decks=6).apply(BetsClosed.of({2: {"main": Fraction(10)}}))
    state, _ = state.apply(VoidRound("insufficient_cards"))
    b = box_settlement(state, 2)
    assert b is not None and b.void and b.net == 0
    assert b.returned_bets == ("main",)
    assert b.to_json()["bets"] == {"main": 0}
    assert b.to_json()["net"] == 0
    assert settlement(state)["boxes"]["2"] == b.to_json()
