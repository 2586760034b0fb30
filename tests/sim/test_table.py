"""Whole tables on every profile: every seat's settlement equals the dealer's, and both
equal the engine's replay of the journalled stream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firmware.engine.profile import load_profile, profile_names
from firmware.sim.driver import TableDriver
from firmware.sim.table import TableSpec
from tests.runtime.helpers import dealer_results, replayed_results, seat_results

ROUNDS = 24


def _canon(x):
    return json.loads(json.dumps(x, sort_keys=True))


@pytest.mark.parametrize("name", profile_names())
def test_every_seat_settles_like_the_dealer_and_the_engine(tmp_path: Path, name: str) -> None:
    spec = TableSpec("t", load_profile(name), seed=11, state_dir=tmp_path)
    driver = TableDriver.create(spec)
    for _ in range(ROUNDS):
        driver.play_round()
    summary = driver.summary()
    driver.table.close()
    assert summary.rounds == ROUNDS and summary.hands > ROUNDS
    assert summary.alarms["integrity"] == 0

    dealer = dealer_results(tmp_path)
    engine = replayed_results(tmp_path)
    assert sorted(dealer) == list(range(1, ROUNDS + 1))
    assert {n: _canon(s) for n, s in engine.items()} == dealer
    played = 0
    for box in range(1, 8):
        seat = seat_results(tmp_path, box)
        assert sorted(seat) == sorted(dealer)
        for n, s in seat.items():
            assert s == dealer[n]["boxes"].get(str(box)), (box, n)
            played += s is not None
    assert played > ROUNDS * 3


def test_the_demo_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    def run(where: Path):
        d = TableDriver.create(TableSpec("t", load_profile("rws-blackjack"), seed=5, state_dir=where))
        for _ in range(8):
            d.play_round()
        d.table.close()
        return d.summary().as_dict(), dealer_results(where)

    assert run(tmp_path / "a") == run(tmp_path / "b")
    other = TableDriver.create(TableSpec("t", load_profile("rws-blackjack"), seed=6, state_dir=tmp_path / "c"))
    for _ in range(8):
        other.play_round()
    assert dealer_results(tmp_path / "c") != dealer_results(tmp_path / "a")
