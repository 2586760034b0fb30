"""The seat's view carries everything its screen shows, as codes and amounts (no English),
and the presenter words every state of it in en / zh / ms. A real in-process table, no
window."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from firmware.runtime.seat import SeatUnit
from ui.presenter import present
from ui.source import ControllerFeed, SeatSource

from .helpers import Table

needs_controller = pytest.mark.skipif(not hasattr(SeatUnit, "progressive_refusal"),
                                      reason="the seat has no controller input yet")


def view_spot(view, name):
    return next(s for s in view.spots if s.name == name)


def screen_spot(screen, name):
    return next(s for s in screen.spots if s.spot == name)


@pytest.fixture
def table(tmp_path):
    t = Table(tmp_path)
    t.table.shoe.shuffle()
    t.table.settle()
    yield t
    t.close()


def test_limits_title_and_profile_are_in_the_view(table):
    table.open()
    v = table.snap().view
    assert v.profile == "rws-perfect-pairs" and v.title and v.limit("main") == ("10", "500")


def test_pro_rata_carries_its_limit_and_clause(table):
    table.open()
    table.bet(1, "main", 600)
    main = view_spot(table.snap().view, "main")
    assert (main.issue, main.issues[0].limit) == ("pro_rata", "500") and "§5.1" in main.clause
    table.press("no_more_bets")                       # in play the engine's flag says the same
    assert view_spot(table.snap().view, "main").issue == "pro_rata"


def test_refused_limits_and_requires_carry_codes(tmp_path):
    t = Table(tmp_path, "uk-4-deck")
    try:
        t.open()
        t.bet(1, "main", 600)
        main = view_spot(t.snap().view, "main")
        assert (main.issue, main.issues[0].limit) == ("over_maximum", "500") and main.clause
        t.table.readers[1].remove_chips("main")
        t.bet(1, "main", 5, layer=1)
        assert view_spot(t.snap().view, "main").issues[0].limit == "10"
        t.table.readers[1].remove_chips("main")
        t.bet(1, "main", 20, layer=2)
        t.bet(1, "top_3", 5)
        top = view_spot(t.snap().view, "top_3")
        assert (top.issue, top.issues[0].requires) == ("requires", "twenty_one_plus_three")
    finally:
        t.close()


def test_a_box_the_dealer_refused_shows_the_engines_reason_on_its_spots(tmp_path):
    t = Table(tmp_path, "uk-4-deck")
    try:
        t.open()
        t.bet(1, "main", 600)
        t.bet(1, "twenty_one_plus_three", 5)
        t.bet(2, "main", 20)
        t.press("no_more_bets")
        v = t.snap().view
        assert v.phase == "play"
        assert view_spot(v, "main").issue == "over_maximum"
        side = view_spot(v, "twenty_one_plus_three")
        assert (side.issue, side.issues[0].reason) == ("refused", "over_maximum")
        s = present(t.snap())
        assert screen_spot(s, "main").note == "Over the maximum 500"
        assert screen_spot(s, "twenty_one_plus_three").note == "Refused: over the maximum"
        assert screen_spot(present(t.snap(), "zh"), "twenty_one_plus_three").note == "不接受：超过上限"
    finally:
        t.close()


def test_past_posting_is_a_coded_alarm_and_a_closed_spot(table):
    table.open()
    table.bet(1, "main", 20)
    table.press("no_more_bets")
    table.bet(1, "perfect_pairs", 5, layer=1)
    v = table.snap().view
    pp = view_spot(v, "perfect_pairs")
    assert pp.issue == "bets_closed" and "§" in pp.clause
    alarm = next(a for a in v.round_alarms if a.code == "past_posting")
    assert alarm.param("spot") == "perfect_pairs" and alarm.param("amount") == "5"
    assert all(k != "detail" for a in v.round_alarms for k, _ in a.params)


def test_alarms_of_an_earlier_round_are_not_shown_in_the_next(table):
    table.open()
    table.bet(1, "main", 20)
    table.press("no_more_bets")
    table.bet(1, "perfect_pairs", 5, layer=1)
    table.deal("TH", "7S", "9D")
    table.press("stand")
    table.deal("TC")
    assert table.snap().view.round_alarms
    table.open()
    v = table.snap().view
    assert v.round == 2 and v.round_alarms == ()
    assert not [b for b in present(table.snap()).banners if b.kind == "fault"]


def _past_post(t, layer: int) -> None:
    t.bet(1, "perfect_pairs", 5, layer=layer)          # after no more bets: past posting


def test_this_rounds_alarms_are_picked_by_their_round_across_a_restart(tmp_path):
    t = Table(tmp_path)
    t.table.shoe.shuffle()
    t.table.settle()
    t.open()
    t.bet(1, "main", 20)
    t.press("no_more_bets")
    _past_post(t, 1)
    t.deal("TH", "7S", "9D")
    t.press("stand")
    t.deal("TC")
    t.open()
    t.bet(1, "main", 20)
    t.press("no_more_bets")
    _past_post(t, 2)
    seat = t.seat()
    assert [a["round"] for a in seat.alarms if a["alarm"] == "past_posting"] == [1, 2]
    before = t.snap().view.round_alarms
    assert [a.code for a in before] == ["past_posting"] and all(k != "round" for a in before for k, _ in a.params)
    t.close()
    again = Table(tmp_path)                              # the units recover from their journals
    try:
        v = again.snap().view
        assert v.round == 2 and v.round_alarms == before  # round 1's alarm stays out after the restart
    finally:
        again.close()


def test_alarm_entries_without_a_round_fall_back_to_the_views_mark(table):
    table.open()
    table.bet(1, "main", 20)
    seat = table.seat()
    seat.alarms.append({"unit": seat.unit_id, "alarm": "tamper", "detail": "an older entry"})
    table.poke()
    assert [a.code for a in table.snap().view.round_alarms] == ["tamper"]
    table.press("no_more_bets")
    table.deal("TH", "7S", "9D")
    table.press("stand")
    table.deal("TC")
    table.open()
    assert table.snap().view.round_alarms == ()         # raised before this round's mark


def test_whose_turn_it_is(table):
    table.open()
    table.bet(1, "main", 20)
    table.bet(2, "main", 20)
    table.press("no_more_bets")
    table.deal("8H")
    assert table.snap().view.turn == "dealing"
    table.deal("5S", "8D", "9C", "KS")
    assert table.snap().view.turn == "mine"
    table.press("stand")
    assert table.snap().view.turn == "others"
    assert present(table.snap()).phase == "Other players' turn"
    table.press("stand")
    assert table.snap().view.turn == "dealer"


def test_pay_lines_carry_category_and_odds(table):
    table.open()
    table.bet(1, "main", 20)
    table.bet(1, "perfect_pairs", 10)
    table.press("no_more_bets")
    table.deal("8H", "9D", "8H")
    table.press("stand")
    table.deal("TC")
    lines = {r.bet: r for r in table.snap().view.pay_lines}
    assert (lines["perfect_pairs"].category, lines["perfect_pairs"].odds, lines["perfect_pairs"].net) == \
        ("perfect_pair", "25:1", "250")
    assert lines["main"].net == "-20" and lines["main"].odds is None


def test_switch_and_its_second_insurance_spot(tmp_path):
    t = Table(tmp_path, "rws-blackjack-switch", boxes=1)
    try:
        t.open()
        t.bet(1, "main", 20)
        t.press("no_more_bets")
        t.deal("TH", "5S", "6D", "5C", "TD")
        v = t.snap().view
        assert not v.switched and "switch" in v.decisions
        s = present(t.snap())
        assert not any(sp.spot.startswith("insurance") for sp in s.spots)   # empty: not shown
        t.press("switch")
        v = t.snap().view
        assert v.switched and all(h.switched for h in v.hands)
    finally:
        t.close()


@needs_controller
def test_controller_state_comes_from_the_seat(tmp_path):
    t = Table(tmp_path, "rws-blackjack-switch", boxes=1)
    seat = t.seat()
    try:
        assert t.snap().view.controller.link is None
        seat.post(("controller", {"link": "up", "meter": "31250.5", "pending": False}))
        t.table.settle()
        t.open()
        t.bet(1, "main", 20)
        t.bet(1, "progressive", 5)
        s = present(t.snap())
        assert s.meter == "Jackpot 31,250.50" and s.meter_tone == "gold"
        assert screen_spot(s, "progressive").note == ""
        seat.post(("controller", {"link": "up", "meter": "31250.5", "pending": True}))
        t.table.settle()
        assert present(t.snap()).meter == "Jackpot PENDING"
        seat.post(("controller", {"link": "down", "meter": None, "pending": False}))
        t.table.settle()
        v = t.snap().view
        prog = view_spot(v, "progressive")
        assert (prog.issue, prog.issues[0].reason) == ("progressive_unavailable", "controller_link_down")
        s = present(t.snap())
        assert s.meter == "Progressive unavailable — jackpot link down" and s.meter_tone == "bad"
        assert screen_spot(s, "progressive").note == "Unavailable: jackpot link down"
        assert [c.code for c in s.conditions] == ["jackpot_link_down"] and s.conditions[0].text.startswith("Progressive bets are off")
        zh = present(t.snap(), "zh")
        assert zh.meter == "累积奖金暂不可用 — 连线中断"
        t.press("no_more_bets")                       # locked while down: not a wager this round
        seat.post(("controller", {"link": "up", "meter": "31250.5", "pending": False}))
        t.table.settle()
        assert view_spot(t.snap().view, "progressive").issue == "progressive_unavailable"
    finally:
        t.close()


def test_a_demo_controller_is_used_only_while_the_seat_knows_none(table):
    feed = ControllerFeed("up", Fraction(100))
    source = SeatSource(table.seat(), feed)
    assert source.snapshot().controller.meter == "100"


def test_progressive_hit_and_envy_are_in_the_view(tmp_path):
    t = Table(tmp_path, "rws-blackjack-switch", boxes=2, controller=ControllerFeed("up", Fraction(25000)),
              meter=25000)
    other = SeatSource(t.table.seats[2], t.controller)
    try:
        t.open()
        for box in (1, 2):
            t.bet(box, "main", 20)
            t.bet(box, "progressive", 5)
        t.press("no_more_bets")
        t.deal("7S", "7S", "TC", "4H", "TD", "7S", "7S", "3D", "9C")
        p = t.snap().view.progressive
        assert p.hand == "suited_four_of_a_kind" and p.share and p.pending
        assert present(t.snap()).banners[0].kind == "jackpot"
        for _ in range(8):
            if t.table.dealer.phase != "play":
                break
            if t.table.dealer.round.expecting().kind == "decision":
                t.press("stand")
            else:
                t.deal("TC")
        v = t.snap().view
        assert v.progressive.award == "25000" and not v.progressive.pending
        assert other.snapshot().view.envy == ((1, "1000"),)
        lines = {r.bet: r for r in other.snapshot().view.pay_lines}
        assert lines["envy_bonus"].net == "1000"
    finally:
        t.close()


ENGLISH = re.compile(r"[A-Za-z]{3,}")


def _zh_texts(t: Table) -> list[str]:
    s = present(t.snap(), "zh")
    return [x for x in s.texts() if x != s.title]      # the table's name is a name


def test_no_english_on_a_chinese_screen_in_any_state(tmp_path):
    """Every text a zh screen shows comes from a code through ui.i18n (card ranks and the
    bet name 21+3 aside): refusals, alarms, results, the meter."""
    seen: list[str] = []
    t = Table(tmp_path, "uk-4-deck", boxes=2)
    try:
        t.table.shoe.shuffle()
        t.table.settle()
        t.open()
        t.bet(1, "main", 600)
        t.unknown_chip(1, "super_pairs")
        t.barred_chip(1, "twenty_one_plus_three")
        t.bet(1, "top_3", 5)
        seen += _zh_texts(t)
        t.bet(2, "main", 20)
        t.press("no_more_bets")                        # box 1 refused by the dealer
        t.bet(2, "super_pairs", 5, layer=1)
        seen += _zh_texts(t)
        t.table.shoe.jam()
        t.table.settle()
        seen += _zh_texts(t)
        t.table.shoe.clear_jam()
        t.table.shoe.open_door()
        t.table.settle()
        t.table.shoe.close_door()
        t.press("void_round")
        seen += _zh_texts(t)
    finally:
        t.close()
    t = Table(tmp_path / "b", "rws-perfect-pairs", boxes=1)
    try:
        t.table.shoe.shuffle()
        t.table.settle()
        t.open()
        t.bet(1, "main", 20)
        t.bet(1, "perfect_pairs", 10)
        t.press("no_more_bets")
        t.deal("8H", "9D", "8H")
        seen += _zh_texts(t)
        t.press("stand")
        t.deal("TC")
        seen += _zh_texts(t)
    finally:
        t.close()
    english = [x for x in seen if ENGLISH.search(x)]
    assert not english, english
    assert any("未被接受" in x for x in seen) and any("完美对子 25:1" in x for x in seen)
