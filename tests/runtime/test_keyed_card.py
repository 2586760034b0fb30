"""Cards keyed in at the dealer's console after an interruption once an outcome is
established (`rws-blackjack-v5 §5.4.1`: play continues and the round is concluded). A keyed
card goes the shoe card's way: journalled, judged by the engine, streamed to every seat."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from firmware.runtime.journal import open_readonly
from firmware.sim import chipset
from firmware.sim.table import InProcessTable
from tests.tables import booted_table

from .helpers import dealer_results, replayed_results


def key(t: InProcessTable, card) -> None:
    t.dealer.post(("keyed_card", {"card": card}))
    t.settle()


def refusals(t: InProcessTable) -> list[str]:
    return [r["reason"] for r in t.dealer.refusals]


def outcome_established(tmp_path: Path) -> InProcessTable:
    """Box 1 has a Blackjack paid at once (an outcome, §5.4.1); box 2 (9 7) is in play."""
    t = booted_table(tmp_path)
    t.console.press("open_bets")
    t.settle()
    for box in (1, 2):
        t.readers[box].place_chips("main", chipset.chips_for(Fraction(20), box, 0, 0))
    t.cycle_readers(2, [1, 2])
    t.console.press("no_more_bets")
    t.settle()
    for card in "AS 9H 6C KD 7S".split():
        t.shoe.deal(card)
        t.settle()
    state = t.dealer.round
    assert state.outcome_established() and state.hand_in_play()[0].number == 2
    return t


def test_a_missed_card_is_keyed_in_and_play_continues(tmp_path):
    t = outcome_established(tmp_path)
    t.console.press("hit")
    t.settle()
    t.shoe.skip(1)                     # the shoe dealt box 2 a card nobody saw
    t.settle()
    assert t.dealer.phase == "play" and t.dealer.owed == 1
    assert [a for a in t.dealer.alarms if a["alarm"] == "interruption_continue"][0]["owed"] == 1
    t.console.press("stand")           # decisions wait for the missed card
    t.settle()
    assert "1 missed card(s) must be keyed in first" in refusals(t)[-1]
    key(t, "2D")                       # the supervisor keys in the card the player holds
    assert t.dealer.owed == 0
    assert t.dealer.round.box(2).hands[0].cards[-1].rank == "2"
    assert t.seats[2].round.box(2).hands[0].total == 18      # every seat saw it too
    assert any(a["alarm"] == "card_keyed" and a["card"] == "2D" for a in t.dealer.alarms)
    t.console.press("stand")
    t.settle()
    for card in ("TC", "TD"):          # dealer 6 10 10: bust
        t.shoe.deal(card)
        t.settle()
    assert t.dealer.phase == "idle"
    assert t.seats[2].own_result == t.dealer.results[1]["boxes"]["2"]
    assert t.dealer.results[1]["boxes"]["2"]["net"] == 20            # 18 beats a dealer bust
    # the keyed card is in the record like any other: the engine's replay settles the same
    engine = replayed_results(tmp_path)
    assert dealer_results(tmp_path)[1]["boxes"] == {k: v for k, v in engine[1]["boxes"].items()}
    j = open_readonly(tmp_path / "dealer" / "journal.db")
    try:
        assert [r.body for r in j.records() if r.dir == "in" and r.kind == "keyed_card"] == [{"card": "2D"}]
    finally:
        j.close()


def test_shoe_cards_after_the_gap_wait_for_the_keyed_ones(tmp_path):
    t = outcome_established(tmp_path)
    t.console.press("stand")           # box 2 stands on 16: the dealer (6C) draws
    t.settle()
    t.shoe.counter += 1                # a card the shoe counted but never sent ...
    t.shoe.deal("5H")                  # ... shows as a gap when the next one comes
    t.settle()
    assert t.dealer.owed == 1 and t.dealer.held == ["5H"]
    assert [str(c) for c in t.dealer.round.dealer] == ["6C"]   # held, not out of order
    key(t, "2D")                       # the missed card, then the held 5H: 6 2 5 = 13
    assert t.dealer.owed == 0 and t.dealer.held == []
    assert [str(c) for c in t.dealer.round.dealer] == ["6C", "2D", "5H"]
    t.shoe.deal("TC")                  # 23: the dealer busts
    t.settle()
    assert t.dealer.phase == "idle"
    assert t.seats[2].own_result == t.dealer.results[1]["boxes"]["2"]
    assert [str(c) for c in t.seats[2].round.dealer] == ["6C", "2D", "5H", "TC"]


def test_a_key_in_is_refused_when_no_card_is_expected(tmp_path):
    t = outcome_established(tmp_path)
    key(t, "3C")                       # box 2 must decide first
    assert "expects a decision" in refusals(t)[-1]
    assert len(t.dealer.round.box(2).hands[0].cards) == 2
    t.console.press("stand")
    t.settle()
    for card in ("TC", "TD"):          # dealer 6 10 10: the round is over
        t.shoe.deal(card)
        t.settle()
    key(t, "4C")
    assert "no round is in play" in refusals(t)[-1]


@pytest.mark.parametrize("body, wrong", [({"card": "1X"}, "1X"), ({"card": 7}, "card"),
                                         ({"rank": "A"}, "keyed card")])
def test_a_badly_keyed_card_is_refused_naming_it(tmp_path, body, wrong):
    t = outcome_established(tmp_path)
    before = t.dealer.journal.last_step
    t.dealer.post(("keyed_card", body))
    with pytest.raises(ValueError, match=wrong):
        t.dealer.pump()
    assert t.dealer.journal.last_step == before
