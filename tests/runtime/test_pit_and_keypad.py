"""Issue #12.2: a card gap after an outcome is established no longer wedges the table. The
missed card is keyed in on the console's keypad or by the pit's command (judged by the
dealer, answered with its verdict), and where the rules let the pit void (§5.4.2, §5.5) a
supervisor's void is judged by the engine."""

from __future__ import annotations

from fractions import Fraction

import pytest

from firmware.runtime.bus import Message, pit_command_topic, pit_response_topic
from firmware.runtime.journal import open_readonly
from firmware.sim import chipset
from tests.tables import booted_table

from .test_keyed_card import outcome_established


def wedged(tmp_path):
    """Box 2 stands on 16; the dealer (6C) draws a card nobody saw, then 5H: the dealer owes
    the missed card and holds 5H behind it; nothing in play can go on."""
    t = outcome_established(tmp_path)
    t.console.press("stand")
    t.settle()
    t.shoe.counter += 1
    t.shoe.deal("5H")
    t.settle()
    assert t.dealer.owed == 1 and t.dealer.held == ["5H"]
    t.console.press("open_bets")
    t.settle()
    assert "is not over" in t.dealer.refusals[-1]["reason"]
    return t


class Pit:
    """What ``betbox pit`` puts on the bus, and the dealer's answers it hears."""

    def __init__(self, t) -> None:
        self.t, self.answers, self.seq = t, [], 0
        t.bus.subscribe(pit_response_topic("t"), self.answers.append, "pit")

    def send(self, kind: str, sender: str = "pit", **body) -> dict:
        self.seq += 1
        tx = f"tx{self.seq}"
        self.t.bus.publish(Message(pit_command_topic("t"), kind, sender, self.seq, {"tx": tx, "by": "Ann", **body}))
        self.t.settle()
        mine = [m.body for m in self.answers if m.body["tx"] == tx]
        return mine[0] if mine else {}


def test_the_console_keypad_clears_a_wedged_round(tmp_path):
    t = wedged(tmp_path)
    t.console.key_card("2D")           # rank key 2, suit key D
    t.settle()
    assert t.dealer.owed == 0 and t.dealer.held == []
    assert [str(c) for c in t.dealer.round.dealer] == ["6C", "2D", "5H"]  # the missed card, then the held one
    keyed = [a for a in t.dealer.alarms if a["alarm"] == "card_keyed"]
    assert keyed[-1]["by"] == "console" and "at the console" in keyed[-1]["detail"]
    assert [str(c) for c in t.seats[2].round.dealer] == ["6C", "2D", "5H"]   # every seat follows
    t.shoe.deal("TC")                  # 23: the dealer busts, box 2's 16 wins
    t.settle()
    assert t.dealer.phase == "idle" and t.dealer.results[1]["boxes"]["2"]["net"] == 20
    j = open_readonly(tmp_path / "dealer" / "journal.db")
    try:
        assert [r.body for r in j.records() if r.kind == "keyed_card"] == [{"card": "2D", "by": "console"}]
    finally:
        j.close()


def test_the_pit_keys_a_card_and_gets_the_verdict(tmp_path):
    t = wedged(tmp_path)
    pit = Pit(t)
    answer = pit.send("key_card", card="2d")
    assert answer["ok"] is True and answer["owed"] == 0 and answer["round"] == 1
    assert "card" in answer["expects"]          # 6 2 5 = 13: the dealer draws again
    assert [str(c) for c in t.dealer.round.dealer] == ["6C", "2D", "5H"]
    assert t.dealer.alarms[-1]["alarm"] == "card_keyed" and t.dealer.alarms[-1]["by"] == "pit:Ann"
    # the same command again (a redelivery, same seq) is never applied twice
    t.bus.publish(Message(pit_command_topic("t"), "key_card", "pit", pit.seq, {"tx": "again", "by": "Ann",
                                                                               "card": "2D"}))
    t.settle()
    again = [m.body for m in pit.answers if m.body["tx"] == "again"][0]
    assert again["ok"] is False and "not newer" in again["error"]
    assert len(t.dealer.round.dealer) == 3
    # nothing is owed now: the pit cannot deal the dealer a card, the shoe does
    refused = pit.send("key_card", card="8C")
    assert refused["ok"] is False and "no missed card is owed" in refused["error"]
    assert len(t.dealer.round.dealer) == 3


def test_the_pit_voids_only_where_the_rules_let_it(tmp_path):
    t = wedged(tmp_path)
    pit = Pit(t)
    no = pit.send("void_round", round=1, reason="interruption")   # §5.4.1: an outcome stands
    assert no["ok"] is False and "outcome has been established" in no["error"]
    wrong = pit.send("void_round", round=7, reason="card_count")
    assert wrong["ok"] is False and "round 1 is the table's" in wrong["error"]
    yes = pit.send("void_round", round=1, reason="card_count")    # §5.5.2: shortage or excess of cards
    assert yes["ok"] is True and yes["phase"] == "idle"
    assert t.dealer.owed == 0 and t.dealer.held == []
    assert t.seats[2].phase == "void"
    assert t.dealer.alarms[-1]["alarm"] == "round_voided_by_pit"


def test_a_void_before_any_outcome_is_the_engines_interruption(tmp_path):
    t = booted_table(tmp_path)
    pit = Pit(t)
    t.console.press("open_bets")
    t.settle()
    t.readers[1].place_chips("main", chipset.chips_for(Fraction(20), 1, 0, 0))
    t.cycle_readers(2, [1])
    t.console.press("no_more_bets")
    t.settle()
    t.shoe.deal("AS")
    t.settle()
    assert t.dealer.phase == "play"
    answer = pit.send("void_round", round=1, reason="interruption")
    assert answer["ok"] is True and t.dealer.phase == "idle"
    assert t.seats[1].phase == "void"


@pytest.mark.parametrize("kind, body, sender, why", [
    ("key_card", {"card": "1X"}, "pit", "cannot read card"),
    ("key_card", {"card": "2D"}, "t/seat-2", "only the pit"),
    ("void_round", {"round": 1, "reason": "bored"}, "pit", "not one the rules let the pit void"),
    ("void_round", {"round": True, "reason": "card_count"}, "pit", "round must be a round number"),
    ("open_bets", {}, "pit", "the pit may key_card or void_round or acknowledge"),
    ("acknowledge", {"round": 1}, "pit", "the body has ['by', 'tx']"),
])
def test_a_bad_pit_command_is_rejected_naming_what_is_wrong(tmp_path, kind, body, sender, why):
    t = wedged(tmp_path)
    pit = Pit(t)
    assert pit.send(kind, sender=sender, **body) == {}
    assert why in t.dealer.rejections[-1]["problem"]
    assert t.dealer.owed == 1
