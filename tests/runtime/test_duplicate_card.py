"""Issue #12.1 at the dealer: a card whose shoe count does not advance since the last
shuffle is a duplicate (a repeated or replayed frame, or one the HAL could not judge after
a restart): alarmed, journalled, never dealt, and play goes on with the real cards."""

from __future__ import annotations

from firmware.runtime.journal import open_readonly
from hal.events import ShoeSignal, ShoeSignalKind

from .test_keyed_card import outcome_established


def test_a_repeated_card_is_not_dealt_with_an_outcome_established(tmp_path):
    t = outcome_established(tmp_path)        # box 1 Blackjack paid; box 2 (9 7) in play
    t.console.press("stand")                 # the dealer (6C) draws
    t.settle()
    t.shoe.deal("5S")
    t.settle()
    t.shoe.counter -= 1                      # the same card's frame once more
    t.shoe.deal("5S")
    t.settle()
    assert [str(c) for c in t.dealer.round.dealer] == ["6C", "5S"]
    assert t.dealer.owed == 0 and t.dealer.phase == "play"
    dup = [a for a in t.dealer.alarms if a["alarm"] == "duplicate_card"]
    assert [(a["card"], a["counter"]) for a in dup] == [("5S", 6)]
    t.shoe.deal("TS")                        # 6 5 10 = 21: box 2's 16 loses
    t.settle()
    assert t.dealer.phase == "idle"
    assert [str(c) for c in t.seats[2].round.dealer] == ["6C", "5S", "TS"]
    assert t.dealer.results[1]["boxes"]["2"]["net"] == -20
    # the HAL's own verdict (the serial tracker) is journalled and alarmed the same way
    t.dealer.post(ShoeSignal(device="shoe", kind=ShoeSignalKind.DUPLICATE_CARD, counter=7, card="TS"))
    t.settle()
    assert t.dealer.alarms[-1]["alarm"] == "duplicate_card" and t.dealer.alarms[-1]["card"] == "TS"
    j = open_readonly(tmp_path / "dealer" / "journal.db")
    try:
        outs = [r.body for r in j.records() if r.dir == "out" and r.kind == "alarm"]
    finally:
        j.close()
    assert sum(1 for m in outs if m["body"]["alarm"] == "duplicate_card") == 2


def test_a_burn_card_repeated_between_rounds_is_not_taken_from_the_shoe(tmp_path):
    t = outcome_established(tmp_path)
    t.console.press("stand")
    t.settle()
    for card in ("TC", "TD"):                # dealer 6 10 10: bust, the round is over
        t.shoe.deal(card)
        t.settle()
    left = t.dealer.shoe
    t.shoe.counter -= 1
    t.shoe.deal("TD")
    t.settle()
    assert t.dealer.shoe == left
    assert t.dealer.alarms[-1]["alarm"] == "duplicate_card"
