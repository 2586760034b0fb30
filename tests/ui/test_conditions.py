"""Unit conditions on the seat's screen (issue 14 item 5): filled from the seat's state by
``unit_conditions(seat)`` (real seats, a real mosquitto for the broker), said by the
presenter in en / zh / ms, each its own words; none reads like a healthy idle seat."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from fractions import Fraction

import pytest

from firmware.engine.profile import load_profile
from firmware.runtime.seat import unit_conditions
from firmware.runtime.seatview import CONDITIONS
from firmware.runtime.spots import seat_spots
from firmware.sim import chipset
from firmware.sim.table import InProcessTable, TableSpec
from ui.feed import SeatFeed
from ui.presenter import BLOCKING, present
from ui.source import SeatSource

from .helpers import LIMITS, Table, registry

ENGLISH = re.compile(r"[A-Za-z]{3,}")


def _table(tmp_path, profile: str = "rws-perfect-pairs") -> InProcessTable:
    p = load_profile(profile)
    spec = TableSpec("t1", p, 1, tmp_path, boxes=1, limits=LIMITS)
    return InProcessTable(spec, registry(1, len(seat_spots(p))))


def test_a_seat_without_its_dealer_is_out_of_service_until_the_stream_comes(tmp_path):
    t = _table(tmp_path)
    try:
        seat = t.seats[1]
        seat.recover()
        seat.start()
        seat.pump()                     # said hello; the dealer is not running
        assert seat.view.conditions == ("no_dealer",)
        s = present(SeatSource(seat).snapshot())
        assert s.phase == "Out of service" and s.conditions[0].blocking
        assert s.conditions[0].text == "This seat cannot reach the dealer. No bets are taken."
        t.dealer.recover()
        t.dealer.start()
        t.settle()
        assert seat.view.conditions == ()
        assert present(SeatSource(seat).snapshot()).phase == "Waiting for the next round"
    finally:
        t.close()


def test_a_restarted_seat_says_it_is_recovering_until_it_has_caught_up(tmp_path):
    table = Table(tmp_path, boxes=1)
    try:
        table.open()
        table.bet(1, "main", 20)
        table.press("no_more_bets")
        assert table.seat().view.conditions == ()
    finally:
        table.close()
    t = _table(tmp_path)                # the same state directory: the journals of round 1
    try:
        seat = t.seats[1]
        seat.recover()
        seat.start()
        seat.pump()
        assert seat.view.conditions == ("recovering",)
        assert present(SeatSource(seat).snapshot(), "ms").phase == "Sedang dimulakan"
        t.dealer.recover()
        t.dealer.start()
        t.settle()
        assert seat.view.conditions == ()
    finally:
        t.close()


def test_jackpot_link_down_only_at_a_seat_with_a_progressive_spot(tmp_path):
    down = {"link": "down", "meter": None, "pending": False}
    switch = Table(tmp_path / "a", "rws-blackjack-switch", boxes=1)
    pairs = Table(tmp_path / "b", "rws-perfect-pairs", boxes=1)
    try:
        for t in (switch, pairs):
            t.seat().post(("controller", down))
            t.table.settle()
        assert switch.seat().view.conditions == ("jackpot_link_down",)
        assert pairs.seat().view.conditions == ()
        s = present(switch.snap(), "zh")
        assert [(c.code, c.title, c.blocking) for c in s.conditions] == [("jackpot_link_down", "累积奖金暂停", False)]
        switch.seat().post(("controller", {"link": "up", "meter": "1000", "pending": False}))
        switch.table.settle()
        assert switch.seat().view.conditions == ()
    finally:
        switch.close()
        pairs.close()


def test_broker_down_on_a_real_mosquitto_reaches_the_screen_between_steps(tmp_path):
    from firmware.link import connect_bus
    from tests.link.broker import Broker

    broker = Broker(tmp_path / "broker").start()
    buses = {}

    def bus_factory(unit_id: str, role: str):
        bus = buses[unit_id] = connect_bus(broker.url, unit_id, role=role, wait=10.0)
        return bus

    p = load_profile("rws-perfect-pairs")
    t = InProcessTable(TableSpec("t1", p, 1, tmp_path / "state", boxes=1),
                       chipset.registry(1, len(seat_spots(p))), bus_factory=bus_factory)
    try:
        t.boot()
        seat = t.seats[1]
        deadline = time.monotonic() + 10
        while seat.view.conditions and time.monotonic() < deadline:
            t.settle()
            time.sleep(0.02)
        assert seat.view.conditions == ()
        shown = []
        feed = SeatFeed(seat, bus=seat.bus)
        feed.start(shown.append)
        broker.kill()
        deadline = time.monotonic() + 10
        while seat.bus.connected and time.monotonic() < deadline:
            time.sleep(0.02)
        assert unit_conditions(seat) == ("broker_down",)
        # no step ran: the feed heard the link go down and the snapshot says so
        assert shown[-1].view.conditions == ("broker_down",)
        s = present(shown[-1])
        assert s.phase == "Out of service" and s.conditions[0].text.startswith("Network link lost")
    finally:
        t.close()
        for bus in buses.values():
            bus.close()
        broker.stop()


@pytest.fixture(scope="module")
def idle(tmp_path_factory):
    t = Table(tmp_path_factory.mktemp("idle"), "rws-blackjack-switch", boxes=1)
    t.open()
    t.bet(1, "main", 20)
    yield t.snap()
    t.close()


@pytest.mark.parametrize("code", CONDITIONS)
def test_every_condition_has_its_own_words_in_three_languages(idle, code):
    snap = replace(idle, view=replace(idle.view, conditions=(code,)))
    healthy = {lang: present(idle, lang) for lang in ("en", "zh", "ms")}
    seen = {}
    for lang in ("en", "zh", "ms"):
        s = present(snap, lang)
        assert [c.code for c in s.conditions] == [code]
        c = s.conditions[0]
        assert c.title and c.text and c.title != c.text
        assert c.blocking == (code in BLOCKING)
        if c.blocking:                  # no bets taken: the phase says why, not "Place your bets"
            assert s.phase == c.title != healthy[lang].phase
        assert s.texts() != healthy[lang].texts()
        seen[lang] = (c.title, c.text)
    assert not ENGLISH.search(" ".join(seen["zh"])), seen["zh"]
    assert seen["en"] != seen["ms"]
    # each condition's sentence is its own: a technician reads which one it is
    others = {present(replace(idle, view=replace(idle.view, conditions=(o,))), "en").conditions[0].text
              for o in CONDITIONS if o != code}
    assert seen["en"][1] not in others


def test_conditions_are_listed_worst_first(idle):
    snap = replace(idle, view=replace(idle.view, conditions=("broker_down", "jackpot_link_down")))
    s = present(snap)
    assert [c.code for c in s.conditions] == ["broker_down", "jackpot_link_down"]
    assert s.phase == "Out of service"
    # the jackpot link is said once, by the condition, not again as a fault banner
    assert not any("Jackpot link" in b.text for b in s.banners)


def test_an_amount_the_seat_holds_stays_on_its_spot_while_out_of_service(idle):
    snap = replace(idle, view=replace(idle.view, conditions=("reader_down",)))
    s = present(snap)
    main = next(sp for sp in s.spots if sp.spot == "main")
    assert main.amount == "20" and sum(Fraction(c) for c in main.chips) == 20


def test_a_seat_that_refuses_bets_says_so_over_its_spots(tmp_path):
    """A seat behind its confirmed mark (restarted from an older copy of its state) takes no
    bets; its screen said "Results are still being confirmed. Play continues." and kept the
    betting phase, so a player put chips down that the seat never offered."""
    from firmware.runtime.unit import BEHIND

    t = Table(tmp_path, "rws-blackjack-switch", boxes=1)
    try:
        t.open()
        healthy = present(t.snap())
        assert t.seat().step(BEHIND, {"outbox_seq": 3, "confirmed": 5})
        t.bet(1, "main", 20)
        assert t.seat().wagers() == {} and not t.seat().offered       # the seat takes no bet
        for lang in ("en", "zh", "ms"):
            s = present(t.snap(), lang)
            c = next(c for c in s.conditions if c.code == "behind_confirmed")
            assert c.blocking and s.phase == c.title
        s = present(t.snap())
        c = next(c for c in s.conditions if c.code == "behind_confirmed")
        assert s.phase != healthy.phase and "continues" not in c.text and "No bets" in c.text, c
    finally:
        t.close()
