"""The rules screen shows the main game's house edge (basic strategy) beside the side bets'."""

from __future__ import annotations

from firmware.engine.basic import house_edge
from firmware.engine.maingame import main_rules
from firmware.engine.profile import load_profile
from ui.rulesinfo import cached_main_edge, odds_for, rules_screen


def test_rules_screen_shows_the_main_game_house_edge_beside_the_side_bets():
    p = load_profile("rws-blackjack")
    computed = odds_for(p)
    edge = house_edge(main_rules(p, 6))
    assert cached_main_edge(p) == edge
    s = rules_screen(p, "en", computed=computed)
    assert f"House edge {edge * 100:.2f}% with basic strategy" in s.main
    assert s.sections[0].note.startswith("House edge ")          # the side bets' still there
    assert any(line.startswith("Kelebihan rumah ") for line in rules_screen(p, "ms", computed=computed).main)


def test_rules_screen_says_the_main_edge_is_being_worked_out_until_it_is():
    p = load_profile("my-classic")
    assert "Working out the odds…" in rules_screen(p, "en").main
