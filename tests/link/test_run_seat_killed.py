"""A seat unit killed with SIGKILL in the middle of a round on a broker (`betbox run`
processes: dealer, seat, jackpot controller on a real mosquitto), and started again: it
recovers from its journal, catches up from the dealer, settles the round exactly as the
dealer does (no integrity alarm), and the controller receives each of its reports exactly
once (the durable outbox and idempotency keys; issue #6 "a seat killed mid-round and
restarted")."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from firmware.engine.profile import load_profile
from firmware.jackpot.controller import report
from firmware.jackpot.store import connect
from firmware.runtime.spots import seat_spots
from firmware.sim.shoe import SimShoe

from .helpers import Sniffer, wait_until
from .test_run_units import TABLE, status
from .units import (
    Devices,
    TableWatch,
    UnitProcess,
    dealer_config,
    jackpot_config,
    play_round,
    seat_config,
    stand_or_next,
)

pytestmark = pytest.mark.slow          # kills processes and waits out their restart


def controller_report(db_path) -> dict:
    db = connect(db_path, readonly=True)
    try:
        return report(db)
    finally:
        db.close()


def test_a_seat_killed_mid_round_recovers_settles_like_the_dealer_and_reports_once(broker, tmp_path):
    profile = load_profile("rws-blackjack-switch")
    link_id = "run-kill"
    devices = Devices(seat_spots(profile))
    sniffer = Sniffer(broker.url)
    seat_status = f"betbox/v1/unit/{TABLE}/seat-1/status"
    procs: list[UnitProcess] = []
    try:
        jackpot = UnitProcess("jackpot", jackpot_config(tmp_path, broker.url, link_id), tmp_path)
        dealer = UnitProcess("dealer", dealer_config(tmp_path, broker.url, TABLE, profile,
                                                     devices.shoe.transport.path, link_id),
                             tmp_path, drive=tmp_path / "console.fifo")
        seat_toml = seat_config(tmp_path, broker.url, TABLE, 1, profile, devices.reader.transport.path, link_id)
        seat = UnitProcess("seat-1", seat_toml, tmp_path)
        procs = [jackpot, dealer, seat]
        watch = TableWatch(sniffer, TABLE, {profile.name: profile})
        wait_until(lambda: any(m["kind"] == "catchup" for m in watch.messages("/seat/1/down"))
                   or any(p.proc.poll() is not None for p in procs), 60, "the seat caught up by the dealer")
        for p in procs:
            assert p.proc.poll() is None, p.output()
        cards = iter(SimShoe(6, random.Random(11)).cards)
        bets = {"main": ["0A01", "0A02"], "progressive": ["0B01"]}
        play_round(watch, dealer, devices, cards, bets, box=1)

        # round 2: bets closed and the initial deal under way, then the seat loses power
        watch.update()
        before = watch.round_no
        dealer.send("press open_bets")
        wait_until(lambda: watch.update() is not None and watch.round_no > before, 30, "round 2 opened")
        rnd = watch.round_no

        def offered() -> bool:
            devices.reader.cycle(1)
            offers = [m for m in watch.messages("/seat/1/up")
                      if m["kind"] == "offer" and m["body"]["round"] == rnd]
            return bool(offers) and set(offers[-1]["body"]["bets"] or {}) == set(bets)
        wait_until(offered, 30, "the seat's offer", step=0.1)
        dealer.send("press no_more_bets")
        watch.wait_event(0, "bets closed")
        for _ in range(3):                      # three initial cards reach the seat
            n = len(watch.round.history)
            devices.shoe.deal(str(next(cards)))
            watch.wait_event(n, "an initial card")
        seat.kill()                             # SIGKILL: no clean shutdown, no offline message
        # the dealer plays on without the seat: the rest of the initial deal
        while watch.round.expecting().kind == "card" and len(watch.round.history) < 6:
            n = len(watch.round.history)
            devices.shoe.deal(str(next(cards)))
            watch.wait_event(n, "a card while the seat is down")
        wait_until(lambda: status(sniffer, seat_status) == "offline", 60, "the seat's last will")

        # power back: the same configuration, journal and outbox
        seat = UnitProcess("seat-1-again", seat_toml, tmp_path)
        procs.append(seat)
        wait_until(lambda: status(sniffer, seat_status) == "online" or seat.proc.poll() is not None, 60,
                   "the seat back online")
        assert seat.proc.poll() is None, seat.output()
        wait_until(lambda: " steps replayed" in seat.output(), 30, "the seat's start-up line")
        replayed = int(seat.output().split(" steps replayed")[0].rsplit(" ", 1)[1])
        assert replayed > 0, "the seat came back from its journal, not empty"
        wait_until(lambda: len([m for m in watch.messages("/seat/1/down") if m["kind"] == "catchup"]) >= 2,
                   30, "the dealer's catch-up for the restarted seat")
        while not (watch.round.is_over and rnd in watch.results):
            state = watch.round
            n = len(state.history)
            expect = state.expecting()
            if expect.kind == "card":
                devices.shoe.deal(str(next(cards)))
            else:
                dealer.send(f"press {stand_or_next(state, expect.box)}")
            watch.wait_event(n, f"round {rnd}: {expect}")

        # the seat's own engine settled round 2 exactly as the dealer did
        def seat_result():
            found = [m["body"]["settlement"] for m in watch.messages("/seat/1/up")
                     if m["kind"] == "result" and m["body"]["round"] == rnd]
            return found[-1] if found else None
        wait_until(lambda: seat_result() is not None, 30, "the restarted seat's result for round 2")
        assert not [m for m in watch.messages("/alarm") if m["body"].get("alarm") == "integrity"]
        assert watch.results[rnd]["boxes"]["1"]["net"] is not None

        # the controller got every report once: two progressive wagers, two results
        db_path = tmp_path / "jackpot" / "jackpot.db"
        wait_until(lambda: controller_report(db_path)["units"].get(f"{TABLE}/seat-1", {}).get("events", 0)
                   >= 4, 30, "the seat's reports at the controller")
        data = controller_report(db_path)
        meters = data["pools"]["main"]["meters"]
        assert (meters["wagers"], Fraction(meters["wagers_in"])) == (2, 2 * profile.progressive.wager)
        unit = data["units"][f"{TABLE}/seat-1"]
        assert unit["missing"] == 0 and unit["duplicates"] == 0, unit
        assert [p.terminate() for p in (seat, dealer, jackpot)] == [0, 0, 0]
    finally:
        for p in procs:
            p.kill()
        sniffer.close()
        devices.close()
