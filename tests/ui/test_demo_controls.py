"""The demo's dealer controls come from the seat's view (the engine's answer), no window:
insurance per hand in Blackjack Switch (`rws-blackjack-switch-v4 §3.9.1` "on either or both
hands"), worded per language."""

from __future__ import annotations

import threading
from fractions import Fraction

import pytest

from firmware.engine.profile import load_profile
from firmware.engine.round import Phase
from ui.demo import CONTROL_KEYS, DemoTable
from ui.presenter import present


class Watched:
    """A manual demo table run in its own thread, as the window runs it."""

    def __init__(self, tmp_path, profile: str) -> None:
        self.demo = DemoTable(load_profile(profile), box=1, pace=0, state_dir=tmp_path, auto=False)
        self.snap = None
        self.demo.start(self._seen)
        assert self.demo.wait_ready()

    def _seen(self, snap) -> None:
        self.snap = snap

    def run(self, fn) -> None:
        """``fn(demo)`` in the table's thread; back once the screen has the snapshot."""
        done = threading.Event()
        self.demo.command(fn)
        self.demo.command(lambda _d: done.set())
        assert done.wait(10)
        assert self.demo.error is None, self.demo.error

    def controls(self) -> tuple[str, ...]:
        return self.snap.controls


@pytest.fixture
def switch(tmp_path):
    w = Watched(tmp_path, "rws-blackjack-switch")
    yield w
    w.demo.stop()


def ace_up(d: DemoTable) -> None:
    """Seat 1 bets 20 (two hands of 20); the dealer shows an ace."""
    d.open_bets()
    d.bet("main", Fraction(20))
    d.press("no_more_bets")
    cards = {"box": iter(["9H", "TC", "7S", "8D"]), "dealer": iter(["AS"])}
    t = d.table
    while t.dealer.round.phase == Phase.INITIAL_DEAL:
        t.shoe.deal(next(cards["dealer" if t.dealer.round.expecting().to_dealer else "box"]))
        t.settle()


def test_switch_offers_insurance_on_each_hand_and_insures_the_second(switch):
    switch.run(ace_up)
    view = switch.snap.view
    assert ("insurance", 1) in view.offers and ("insurance", 2) in view.offers
    assert {"insurance_1", "insurance_2"} <= set(switch.controls())
    labels = dict(present(switch.snap).controls)
    assert labels["insurance_1"] == "Insurance\n(hand 1)" and labels["insurance_2"] == "Insurance\n(hand 2)"
    assert dict(present(switch.snap, "zh").controls)["insurance_2"] == "保险\n（第 2 手）"
    assert dict(present(switch.snap, "ms").controls)["insurance_2"] == "Insurans\n(tangan 2)"

    switch.run(lambda d: d.control("insurance_2"))
    box = switch.demo.table.dealer.round.box(1)
    assert box.insurance == {1: Fraction(10)}                 # the second hand, half its 20
    assert switch.demo.table.seats[1].round.box(1).insurance == {1: Fraction(10)}
    assert "insurance_2" not in switch.controls()             # the engine: hand 2 is insured
    assert ("insurance", 2) not in switch.snap.view.offers
    assert not switch.demo.table.seats[1].alarms


def test_every_control_the_demo_offers_has_a_key(switch):
    switch.run(ace_up)
    for c in switch.controls():
        assert c in CONTROL_KEYS, c
    assert CONTROL_KEYS["insurance_2"] == "I" and CONTROL_KEYS["insurance_1"] == "i"


def test_auto_play_pauses_after_each_step_a_player_sees(tmp_path, monkeypatch):
    """With a pace, auto play waits after every change of the watched seat's view (a card,
    a decision, a result) and longer between rounds; the waits are recorded, not slept."""
    from ui import demo as demo_module
    waits: list[float] = []
    views: list = []

    def pause(self, seconds):
        waits.append(seconds)
        views.append(self._last_view)
        if len(waits) >= 40:
            raise demo_module._Stopped

    monkeypatch.setattr(DemoTable, "_pause", pause)
    d = DemoTable(load_profile("rws-blackjack"), box=1, pace=0.5, state_dir=tmp_path, auto=True)
    d.start(lambda _snap: None)
    d._thread.join(30)
    assert not d._thread.is_alive() and d.error is None
    assert len(waits) == 40 and set(waits) <= {0.5, 1.5}
    assert 1.5 in waits                                      # the longer wait between rounds
    steps = [v for v, w in zip(views, waits, strict=True) if w == 0.5]
    assert all(a != b for a, b in zip(steps, steps[1:], strict=False))     # each wait follows a change
    assert any(len(v.hands) == 1 and len(v.hands[0].cards) == 1 for v in steps)   # card by card
    d.stop()


def test_the_pace_is_bounded_and_changed_by_keys(tmp_path):
    with pytest.raises(ValueError, match="pace"):
        DemoTable(load_profile("rws-blackjack"), pace=-1, state_dir=tmp_path)
    d = DemoTable(load_profile("rws-blackjack"), pace=0.8, state_dir=tmp_path, auto=False)
    assert d.change_pace(+1) == 1.0 and d.change_pace(-1) == 0.8
    for _ in range(30):
        d.change_pace(-1)
    assert d.pace == 0.0
    for _ in range(30):
        d.change_pace(+1)
    assert d.pace == 3.0


def test_a_meter_in_cents_reaches_the_seat_and_its_screen(tmp_path):
    """The simulated controller's meter is posted as the wire writes amounts ("25009.25"):
    str() of a Fraction ("100037/4") was refused by the seat, so the meter never moved."""
    w = Watched(tmp_path, "rws-blackjack-switch")
    try:
        w.demo.controller.set(link="up", meter=Fraction(100037, 4))
        w.run(lambda _d: None)
        assert w.demo.source.seat.view.controller.meter == "25009.25"
        assert present(w.snap).meter == "Jackpot 25,009.25"
    finally:
        w.demo.stop()
