"""Rules, service and font look-up models (no Kivy)."""

from __future__ import annotations

import sys
from fractions import Fraction

import pytest

from firmware.engine.profile import load_profile
from ui import fonts
from ui.rulesinfo import odds_for, rules_screen
from ui.service import NOT_AVAILABLE, LogRing, check_pin, lamp_restore, lamp_test, service_sections
from ui.source import ControllerFeed

from .helpers import Table


def test_rules_screen_has_pay_tables_and_exact_house_edges():
    p = load_profile("uk-4-deck")
    computing = rules_screen(p, "en")
    assert computing.sections[0].note == "Working out the odds…"
    s = rules_screen(p, "en", computed=odds_for(p))
    assert s.title == "Blackjack 4 Deck — rules and pay tables"
    assert "Blackjack pays 3:2" in s.main and "4 decks" in s.main
    heads = [x.heading for x in s.sections]
    assert heads == ["Super Pairs", "21+3", "Top 3 (needs a 21+3 bet)"]
    assert "Suited Trips 50:1" in s.sections[0].lines
    assert s.sections[1].note == "House edge 4.24%"        # the UK poster: 4.24%
    zh = rules_screen(p, "zh", computed=odds_for(p))
    assert zh.sections[1].note == "庄家优势 4.24%" and "黑杰克赔 3:2" in zh.main


def test_rules_screen_progressive_with_meter():
    p = load_profile("rws-blackjack-switch")
    s = rules_screen(p, "en", meter=Fraction(25000), computed=odds_for(p))
    prog = s.sections[-1]
    assert prog.heading == "Progressive (5)"
    assert "Suited Four of a Kind 100% of the meter" in prog.lines
    assert prog.lines[-1] == "Envy bonus 1,000 when another seat hits Suited Four of a Kind"
    assert prog.note.startswith("Return ")
    assert "Dealer 22 is a stand off" in s.main


def test_service_sections_say_not_available_honestly(tmp_path):
    t = Table(tmp_path, controller=ControllerFeed("up", Fraction(100)))
    try:
        t.open()
        t.bet(1, "main", 20)
        t.unknown_chip(1, "perfect_pairs")
        seat = t.table.seats[1]
        ring = LogRing()
        secs = {s.heading: dict(s.rows) for s in service_sections(seat, t.table, t.controller,
                                                                   log_lines=["12:00:00 INFO x: hello"])}
        assert secs["Unit"]["unit"] == "t1/seat-1" and secs["Unit"]["configuration hash"] == NOT_AVAILABLE
        assert secs["Links"]["broker"] == "in-process bus (no broker)"
        assert secs["Links"]["jackpot controller"] == "up"
        assert "unknown" in secs["Chip reader (live, debounced)"]["perfect_pairs"]
        assert "valid 5" in secs["Chip reader (live, debounced)"]["main"]
        assert secs["Journal and outbox"]["MQTT outbox depth"].startswith(NOT_AVAILABLE)
        assert int(secs["Journal and outbox"]["inputs journalled"]) > 0
        assert secs["Card shoe"]["connected"] == "True"
        alone = {s.heading: dict(s.rows) for s in service_sections(seat)}
        assert alone["Links"]["jackpot controller"] == NOT_AVAILABLE
        assert alone["Card shoe"]["shoe"].startswith(NOT_AVAILABLE)
        assert lamp_test(seat) and str(seat.lamps.state("bets_locked")) != "off"
        lamp_restore(seat)
        assert ring.lines is not None
    finally:
        t.close()


def test_pin():
    assert check_pin("2468", "2468") and not check_pin("2469", "2468") and not check_pin("", "")


def test_cjk_font_is_found_or_the_error_says_what_to_install(monkeypatch):
    path = fonts.cjk_font()
    assert path.exists()
    monkeypatch.setattr(fonts, "KNOWN", ())
    monkeypatch.setattr(fonts, "_fc_list", lambda: [])
    fonts.cjk_font.cache_clear()
    with pytest.raises(fonts.FontMissing, match="fonts-wqy-microhei"):
        fonts.cjk_font()
    fonts.cjk_font.cache_clear()
    assert "kivy" not in sys.modules
