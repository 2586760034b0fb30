"""The seat display's presenter, driven by a real in-process table (no Kivy, no window)."""

from __future__ import annotations

import sys
from fractions import Fraction

import pytest

from firmware.runtime.wire import ControllerStatus
from hal.events import ShoeSignalKind
from ui.i18n import EN, LANGUAGES, MS, ZH
from ui.presenter import SeatPresenter, card_face, faults, money, odds, present
from ui.source import ControllerFeed, SeatSource

from .helpers import Table


@pytest.fixture
def table(tmp_path):
    t = Table(tmp_path)
    t.table.shoe.shuffle()
    t.table.settle()
    yield t
    t.close()


def spot(screen, name):
    return next(s for s in screen.spots if s.spot == name)


def test_no_kivy_in_the_presenter():
    import ui.i18n
    import ui.model
    import ui.presenter  # noqa: F401,E401
    assert "kivy" not in sys.modules


def test_formatting():
    assert money("1234.5") == "1,234.50" and money("-20") == "−20" and money("250", signed=True) == "+250"
    assert odds(Fraction(3, 2)) == "3:2" and odds(Fraction(25)) == "25:1"
    assert card_face("TS").text == "10♠" and card_face("AH").red and not card_face("KC").red


def test_every_language_has_every_text():
    for table in (ZH, MS):
        assert set(table) == set(EN)
    assert set(LANGUAGES) == {"en", "zh", "ms"}


def test_header_and_phases_through_a_round(table):
    s = present(table.snap())
    assert s.phase == "Waiting for the next round" and s.seat == "Seat 1"
    table.open()
    s = present(table.snap())
    assert (s.phase, s.title, s.limits, s.round) == ("Place your bets", "Blackjack Perfect Pairs"
                                                     if "Perfect" in s.title else s.title, "Limits 10–500", "Round 1")
    table.bet(1, "main", 20)
    table.bet(2, "main", 20)
    table.press("no_more_bets")
    assert present(table.snap()).phase in ("Dealing", "No more bets")
    table.deal("8H")
    assert present(table.snap()).phase == "Dealing"
    table.deal("5S", "8D", "9C", "KS")
    s = present(table.snap())
    assert s.phase == "Your hand"
    assert s.hands[0].total == "17" and s.hands[0].in_play
    assert s.decisions.startswith("You may: hit, stand")
    assert s.dealer_label == "Dealer" and [c.text for c in s.dealer_cards] == ["8♦"]
    table.press("stand")
    assert present(table.snap()).phase == "Other players' turn"
    table.press("stand")
    table.deal("TC")
    s = present(table.snap())
    assert s.phase == "Round over" and s.dealer_total == "18"
    assert s.hands[0].result == "Lose  −20" and s.net == "Round net −20" and s.net_tone == "bad"


def test_spot_statuses_counted_and_pro_rata(table):
    table.open()
    table.bet(1, "main", 20)
    table.bet(1, "perfect_pairs", 10)
    s = present(table.snap())
    assert (spot(s, "main").amount, spot(s, "main").note, spot(s, "main").tone) == ("20", "", "ok")
    table.bet(1, "main", 600, layer=1)       # rws: over the maximum is played pro rata (§5.1.1)
    s = present(table.snap())
    assert spot(s, "main").note == "Over the maximum: paid on 500" and spot(s, "main").tone == "warn"


def test_unknown_chip_and_side_bet_without_main(table):
    table.open()
    table.bet(1, "perfect_pairs", 10)
    table.unknown_chip(1, "main")
    s = present(table.snap())
    assert spot(s, "main").note == "1 chip not accepted: please ask the dealer" and spot(s, "main").tone == "bad"
    assert spot(s, "main").amount == ""
    assert spot(s, "perfect_pairs").note == "Needs a main bet: will be returned"
    view = table.snap().view
    pp = next(sp for sp in view.spots if sp.name == "perfect_pairs")
    assert pp.issue == "no_initial_bet" and "§" in pp.clause


def test_unknown_chip_beside_counted_chips_says_what_is_counted(table):
    table.open()
    table.bet(1, "main", 20)
    table.unknown_chip(1, "main")
    s = present(table.snap())
    assert (spot(s, "main").amount, spot(s, "main").note) == ("20", "1 chip not accepted")
    assert spot(present(table.snap(), "zh"), "main").note == "1 枚筹码未被接受"
    main = table.snap().view.spots[0]
    assert [c.status for c in main.chips].count("unknown") == 1
    assert {c.denomination for c in main.chips if c.status == "valid"} == {"5"}


def test_barred_chip_is_named_and_not_counted(table):
    table.open()
    table.bet(1, "main", 20)
    table.barred_chip(1, "main")
    s = present(table.snap())
    assert spot(s, "main").note == "1 chip not accepted"
    chips = table.snap().view.spots[0].chips
    assert any(c.status == "barred" and c.denomination == "25" for c in chips)


def test_over_and_under_limits_refused_and_top3_without_21_3(tmp_path):
    t = Table(tmp_path, "uk-4-deck", limits={"main": (Fraction(10), Fraction(500))})
    try:
        t.open()
        t.bet(1, "main", 600)
        s = present(t.snap())
        assert spot(s, "main").note == "Over the maximum 500" and spot(s, "main").tone == "bad"
        t.table.readers[1].remove_chips("main")
        t.bet(1, "main", 5, layer=1)
        assert spot(present(t.snap()), "main").note == "Under the minimum 10"
        t.table.readers[1].remove_chips("main")
        t.bet(1, "main", 20, layer=2)
        t.bet(1, "top_3", 5)
        s = present(t.snap())
        assert spot(s, "top_3").note == "Needs a 21+3 bet: will be returned"
        assert spot(present(t.snap(), "zh"), "top_3").note == "需要21+3注：将退还"
    finally:
        t.close()


def test_bets_closed_past_posting_is_shown_on_the_spot(table):
    table.open()
    table.bet(1, "main", 20)
    table.bet(1, "perfect_pairs", 10)
    table.press("no_more_bets")
    table.bet(1, "perfect_pairs", 5, layer=1)
    s = present(table.snap())
    assert spot(s, "perfect_pairs").note == "Bets closed: please wait for the dealer"
    # past posting is the pit's business: the player is asked to wait, told nothing alarming
    assert any(b.kind == "fault" and b.text == "Please wait for the dealer." for b in s.banners)
    words = " ".join(s.texts()).lower()
    assert not any(w in words for w in ("security", "alarm", "supervisor", "past post", "counted"))
    assert spot(s, "main").note == "Bet accepted"


def test_perfect_pair_result_with_its_pay_line(table):
    table.open()
    table.bet(1, "main", 20)
    table.bet(1, "perfect_pairs", 10)
    table.press("no_more_bets")
    table.deal("8H", "9D", "8H")                  # box 1: 8H 8H -- a perfect pair; dealer 9
    table.press("stand")
    table.deal("TC")
    s = present(table.snap())
    assert s.phase == "Round over"
    texts = [r.text for r in s.results]
    assert "Perfect Pair 25:1  +250" in texts and "Main bet  −20" in texts
    assert s.net == "Round net +230" and s.net_tone == "ok"
    assert s.hands[0].total == "16"
    zh = present(table.snap(), "zh")
    assert "完美对子 25:1  +250" in [r.text for r in zh.results]


def test_soft_blackjack_and_bust_totals(table):
    table.open()
    table.bet(1, "main", 20)
    table.bet(2, "main", 20)
    table.press("no_more_bets")
    table.deal("AH", "9S", "6D", "6C", "KS")       # box 1: A 6 soft 17; box 2: 9 K
    assert present(table.snap()).hands[0].total == "Soft 17"
    table.press("hit")
    table.deal("KD")                              # A 6 K: hard 17
    assert present(table.snap()).hands[0].total == "17"
    table.press("hit")
    table.deal("9H")
    s = present(table.snap())
    assert s.hands[0].total == "Bust 26"
    table.press("stand")
    table.deal("TD", "5C")
    assert present(table.snap()).phase == "Round over"


def test_blackjack_total(table):
    table.open()
    table.bet(1, "main", 20)
    table.press("no_more_bets")
    table.deal("AH", "6D", "KS", "9C")
    s = present(table.snap())
    assert s.hands[0].total == "Blackjack"


def test_switch_shows_both_hands_and_the_switch(tmp_path):
    t = Table(tmp_path, "rws-blackjack-switch", boxes=1)
    try:
        t.open()
        t.bet(1, "main", 20)
        t.press("no_more_bets")
        t.deal("TH", "5S", "6D", "5C", "TD")       # hands 10 5 and 5 10; dealer 6
        s = present(t.snap())
        assert [h.label for h in s.hands] == ["Hand 1", "Hand 2"]
        assert s.switch_note == "You may switch the second cards"
        t.press("switch")
        s = present(t.snap())
        assert s.switch_note == "Cards switched"
        assert [c.text for c in s.hands[0].cards] == ["10♥", "10♦"]
    finally:
        t.close()


def test_meter_live_pending_and_link_down(table, tmp_path):
    t = Table(tmp_path / "p", "rws-blackjack-switch", boxes=1, controller=ControllerFeed("up", Fraction(25000)))
    try:
        t.open()
        t.bet(1, "main", 20)
        t.bet(1, "progressive", 5)
        s = present(t.snap())
        assert s.meter == "Jackpot 25,000" and spot(s, "progressive").note == ""
        t.controller.set(pending=True)
        assert present(t.snap()).meter == "Jackpot PENDING"
        t.controller.set(link="down")
        s = present(t.snap())
        assert s.meter == "Progressive unavailable — jackpot link down"
        assert spot(s, "progressive").note == "Unavailable: jackpot link down"
        assert [c.code for c in s.conditions] == ["jackpot_link_down"] and s.conditions[0].text.startswith("Progressive bets are off")
    finally:
        t.close()


def test_jackpot_celebration_and_envy_bonus(tmp_path):
    t = Table(tmp_path, "rws-blackjack-switch", boxes=2, controller=ControllerFeed("up", Fraction(25000)),
              meter=25000)
    other = SeatSource(t.table.seats[2], t.controller)
    try:
        t.open()
        for box in (1, 2):
            t.bet(box, "main", 20)
            t.bet(box, "progressive", 5)
        t.press("no_more_bets")
        # box 1 hands get 7S 7S / 7S 7S (suited four of a kind), box 2 gets TC 3D / 4H 9C
        t.deal("7S", "7S", "TC", "4H", "TD", "7S", "7S", "3D", "9C")
        for _ in range(8):
            if t.table.dealer.phase != "play":
                break
            if t.table.dealer.round.expecting().kind == "decision":
                t.press("stand")
            else:
                t.deal("TC")
        s = present(t.snap())
        jackpot = [b for b in s.banners if b.kind == "jackpot"]
        assert jackpot and jackpot[0].title == "JACKPOT! Suited Four of a Kind"
        assert jackpot[0].text == "Award 25,000"
        # the full-screen moment: the gross award, paid once settled, and the plain sums that
        # make it the pay line's net on the progressive spot (no "You win 25,000" vs "+24,995")
        j = s.jackpot
        assert (j.title, j.category, j.award, j.state) == ("JACKPOT", "Suited Four of a Kind", "Award 25,000", "paid")
        assert j.status == "Paid: 25,000"
        assert j.net == "Award 25,000 · your progressive bet 5 · net +24,995"
        assert spot(s, "progressive").result == "+24,995"
        assert present(t.snap(), "zh").jackpot.net == "奖金 25,000 · 您的累积奖金注码 5 · 净额 +24,995"
        s2 = present(other.snapshot())
        envy = [b for b in s2.banners if b.kind == "envy"]
        assert envy and envy[0].text == "Envy bonus 1,000: seat 1 hit the jackpot"
    finally:
        t.close()


def test_shoe_fault_tamper_and_void(table):
    table.open()
    table.bet(1, "main", 20)
    table.press("no_more_bets")
    table.table.shoe.jam()
    table.table.settle()
    s = present(table.snap())
    assert any(b.text.startswith("Card shoe fault") for b in s.banners)
    table.table.shoe.clear_jam()
    table.table.settle()
    assert not any(b.text.startswith("Card shoe fault") for b in present(table.snap()).banners)
    table.table.shoe.open_door()
    table.table.settle()
    assert any(b.text == "Please wait for the dealer." for b in present(table.snap()).banners)
    table.table.shoe.close_door()
    table.press("void_round")
    s = present(table.snap())
    assert s.phase == "Round voided"
    assert any(b.text == "This round is void: every bet is returned." for b in s.banners)
    assert present(table.snap(), "ms").phase == "Pusingan dibatalkan"


def test_a_replayed_shuffle_asks_the_player_to_wait_for_the_pit(table):
    """A replayed shuffle frame on the shoe's line (the HAL drops it, the dealer calls the
    pit): a security matter, said to the player in the neutral words, not as a technical alarm."""
    table.open()
    table.bet(1, "main", 20)
    table.press("no_more_bets")
    table.table.shoe._signal(ShoeSignalKind.REPLAYED_SHUFFLE)
    table.table.settle()
    assert faults(table.snap()) == ("tamper",)
    texts = [b.text for b in present(table.snap()).banners if b.kind == "fault"]
    assert texts == ["Please wait for the dealer."], texts


def _seat_1_does_not_lock(table) -> None:
    """Seat 1's lock never reaches the dealer (a stuck seat, a lost link); seat 2 plays."""
    table.open()
    table.bet(1, "main", 20)
    table.bet(1, "perfect_pairs", 5)
    table.bet(2, "main", 20)

    def tamper(subscriber, m):
        if subscriber.endswith("dealer") and m.kind in ("lock", "hello") and m.body.get("box") == 1:
            return None
        return m
    table.table.bus.tamper = tamper
    table.press("no_more_bets")


def test_bets_not_taken_after_the_dealers_wait_for_locks(table):
    _seat_1_does_not_lock(table)
    table.table.dealer.post(("tick", {"now": 0.0}))       # the dealer's bounded wait (close_wait)
    table.table.dealer.post(("tick", {"now": 60.0}))
    table.table.settle()
    table.table.bus.tamper = None
    assert table.seat().bets_not_taken == "lock_timeout" and table.table.dealer.phase == "play"
    v = table.snap().view
    main = next(sp for sp in v.spots if sp.name == "main")
    assert main.status == "not_wagered" and main.issues[0].code == "bets_not_taken"
    assert main.issues[0].reason == "lock_timeout"
    expected = {
        "en": ("Not in this round", "Not taken: not in play this round",
               "Your bets were not confirmed in time: they are not in play this round. Please ask the dealer."),
        "zh": ("本局未参与", "未接受：本局不参与", "您的注码未能及时确认，本局不参与。请询问荷官。"),
        "ms": ("Tidak bermain pusingan ini", "Tidak diterima: tidak dimain pusingan ini",
               "Pertaruhan anda tidak disahkan tepat pada masanya: ia tidak dimain pusingan ini. "
               "Sila tanya peniaga."),
    }
    for lang, (phase, note, banner) in expected.items():
        s = present(table.snap(), lang)
        assert s.phase == phase, lang
        assert spot(s, "main").note == note and spot(s, "main").tone == "bad", lang
        assert spot(s, "main").amount == "20" and spot(s, "perfect_pairs").note == note, lang
        assert [b.text for b in s.banners if b.kind == "fault"] == [banner], lang
    # the table plays on without seat 1: no hand, no result, still told why at the end
    table.deal("8H", "9D", "TC")
    table.press("stand")
    table.deal("TC")
    s = present(table.snap())
    assert table.snap().view.phase == "over" and s.phase == "Not in this round" and not s.results
    table.open()                                             # the next round: nothing left over
    s = present(table.snap())
    assert s.phase == "Place your bets" and not [b for b in s.banners if b.kind == "fault"]


def test_bets_closed_by_the_dealer_without_the_seat_say_so(table):
    _seat_1_does_not_lock(table)
    table.press("no_more_bets")                              # the dealer presses again: closed
    table.table.bus.tamper = None
    assert table.seat().bets_not_taken == "closed_by_dealer"
    s = present(table.snap())
    assert [b.text for b in s.banners if b.kind == "fault"] == [
        "The dealer closed bets without your seat: your bets are not in play this round."]
    assert "本局" in present(table.snap(), "zh").banners[-1].text


def test_recall_keeps_the_last_ten_rounds(table):
    p = SeatPresenter()
    for _n in range(12):
        table.table.shoe.shuffle()
        table.open()
        table.bet(1, "main", 20)
        table.press("no_more_bets")
        table.deal("TH", "7S", "9D")
        p.update(table.snap())
        table.press("stand")
        table.deal("TC")
        p.update(table.snap())
    lines = p.recall.lines("en")
    assert len(lines) == 10 and lines[0][0] == "Round 12" and lines[-1][0] == "Round 3"
    assert lines[0][1] == "10♥ 9♦ (19)" and lines[0][2] == "7♠ 10♣ (17)" and lines[0][3] == "+20"
    assert p.recall.lines("zh")[0][0] == "第 12 局"


def test_presenter_tells_listeners_only_on_change_and_switches_language(table):
    seen = []
    p = SeatPresenter()
    p.listen(seen.append)
    table.open()
    p.update(table.snap())
    p.update(table.snap())
    assert len(seen) == 1
    p.set_language("zh")
    assert seen[-1].phase == "请下注" and seen[-1].seat == "座位 1"
    p.set_language("ms")
    assert seen[-1].phase == "Sila letak pertaruhan"
    with pytest.raises(ValueError):
        p.set_language("fr")


def test_controller_state_defaults_hide_the_meter_without_progressive(table):
    table.open()
    assert present(table.snap()).meter == ""
    assert ControllerStatus().link is None


def test_dealer_total_and_blackjack_come_from_the_engine(table):
    """The screen shows the engine's verdict on the dealer's hand; it never judges it itself."""
    table.open()
    table.bet(1, "main", 20)
    table.press("no_more_bets")
    table.deal("5S", "AD", "9C")                     # box 1: 5 9; dealer Ace
    assert present(table.snap()).dealer_total == "Soft 11"
    table.press("stand")
    table.deal("KS")                                 # dealer Ace + King: Blackjack
    view = table.snap().view
    assert view.dealer_blackjack and view.dealer_total == 21
    assert present(table.snap()).dealer_total == "Blackjack"


def test_table_faults_come_from_the_seats_view_alone(table):
    """The screen does not listen to the bus: a shoe jam at the dealer reaches every seat as
    its journalled input, and the screen shows it from the view (also a seat whose screen
    was started after the jam, and after a restart of the seat)."""
    from dataclasses import replace

    from ui.model import SeatSnapshot

    assert not any(sub.endswith("/screen") for _, sub, _ in table.table.bus._subs)
    table.open()
    table.table.shoe.jam()
    table.table.settle()
    late = SeatSource(table.seat(2), table.controller)      # never heard the bus: the view has it
    for source in (table.source, late):
        v = source.snapshot().view
        assert [a.code for a in v.table_alarms] == ["shoe_jam"] and v.table_alarms[0].lasting
        s = present(source.snapshot())
        assert any(b.text.startswith("Card shoe fault") for b in s.banners)
        assert any(b.text == "发牌机故障。请等待荷官。" for b in present(source.snapshot(), "zh").banners)
    # the same view without its table faults shows no fault: nothing else feeds the banner
    snap = table.snap()
    bare = SeatSnapshot(view=replace(snap.view, table_alarms=()), controller=snap.controller)
    assert not any(b.text.startswith("Card shoe fault") for b in present(bare).banners)
    seat = table.table.restart_seat(1)
    assert any(b.text.startswith("Card shoe fault") for b in present(SeatSource(seat).snapshot()).banners)
    table.table.shoe.clear_jam()
    table.table.settle()
    assert not any(b.text.startswith("Card shoe fault") for b in present(SeatSource(seat).snapshot()).banners)


def test_a_seat_without_a_progressive_spot_shows_no_jackpot_meter_or_link_fault(tmp_path):
    """rws-blackjack has no progressive: the controller's link going down concerns no wager
    at this seat, so the player is not alarmed by it (the service screen still shows it)."""
    t = Table(tmp_path, "rws-blackjack", boxes=1, controller=ControllerFeed("up", Fraction(25000)))
    try:
        t.open()
        t.bet(1, "main", 20)
        t.controller.set(link="down")
        s = present(t.snap())
        assert s.meter == ""
        assert not any("Jackpot" in b.text or "jackpot" in b.text for b in s.banners)
    finally:
        t.close()
