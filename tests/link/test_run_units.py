"""`betbox run` on a broker: a dealer, a seat and the jackpot controller as their own
processes on a real mosquitto play rounds end to end (the shoe and the chip reader are
simulated devices on ptys, read through the serial backend; the dealer's console is driven
through --drive); SIGTERM stops them cleanly; the controller's report shows the seat's
events. And `--check` names bad [link] values."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
from fractions import Fraction

import pytest

from firmware.cli import main
from firmware.engine.profile import load_profile
from firmware.jackpot.controller import report
from firmware.jackpot.store import connect
from firmware.runtime.spots import seat_spots
from firmware.sim.shoe import SimShoe

from .helpers import Sniffer, unit_outbox, wait_until
from .schema import validate_all
from .units import (
    ROOT,
    Devices,
    TableWatch,
    UnitProcess,
    dealer_config,
    jackpot_config,
    play_round,
    seat_config,
    write_toml,
)

TABLE = "table-9"


def status(sniffer: Sniffer, topic: str) -> str | None:
    states = [json.loads(p)["state"] for t, p, _ in list(sniffer.messages) if t == topic and p]
    return states[-1] if states else None


def test_dealer_seat_and_controller_processes_play_rounds_on_a_broker(broker, tmp_path):
    profile = load_profile("rws-blackjack-switch")
    link_id = "run-e2e"
    devices = Devices(seat_spots(profile))
    sniffer = Sniffer(broker.url)
    procs: list[UnitProcess] = []
    try:
        jackpot = UnitProcess("jackpot", jackpot_config(tmp_path, broker.url, link_id), tmp_path)
        dealer = UnitProcess("dealer", dealer_config(tmp_path, broker.url, TABLE, profile, devices.shoe.transport.path,
                                                     link_id), tmp_path, drive=tmp_path / "console.fifo")
        seat = UnitProcess("seat-1", seat_config(tmp_path, broker.url, TABLE, 1, profile,
                                                 devices.reader.transport.path, link_id), tmp_path)
        procs = [jackpot, dealer, seat]
        topics = {"jackpot": f"betbox/v1/jackpot/{link_id}/status",
                  "dealer": f"betbox/v1/unit/{TABLE}/dealer/status",
                  "seat": f"betbox/v1/unit/{TABLE}/seat-1/status"}
        wait_until(lambda: all(status(sniffer, t) == "online" for t in topics.values())
                   or any(p.proc.poll() is not None for p in procs), 60, "all three units online")
        for p in procs:
            assert p.proc.poll() is None, p.output()
        watch = TableWatch(sniffer, TABLE, {profile.name: profile})
        # the dealer has caught the seat up (it counts the seat as present at no more bets)
        wait_until(lambda: any(m["kind"] == "catchup" for m in watch.messages("/seat/1/down")), 30,
                   "the dealer's catch-up for the seat")
        cards = iter(SimShoe(6, random.Random(7)).cards)
        bets = {"main": ["0A01", "0A02"], "progressive": ["0B01"]}
        settlements = [play_round(watch, dealer, devices, cards, bets, box=1) for _ in range(2)]
        for s in settlements:
            assert s["boxes"]["1"]["progressive"] is not None
        # the seat's own engine agreed with the dealer's (no integrity alarm) ...
        assert not [m for m in watch.messages("/alarm") if m["body"].get("alarm") == "integrity"]
        # ... and its reports reached the controller: a progressive wager and a result per round
        db_path = tmp_path / "jackpot" / "jackpot.db"

        def seat_events():
            db = connect(db_path, readonly=True)
            try:
                return report(db)
            finally:
                db.close()
        # booked once the dealer's record of each round (from the dealer process) agrees
        # (and the dealer's settlement of round 2: it may come after the seat's own result)
        wait_until(lambda: seat_events()["units"].get(f"{TABLE}/seat-1", {}).get("events", 0) >= 4 and
                   seat_events()["pools"]["main"]["meters"]["wagers"] == 2 and
                   seat_events()["units"].get(f"{TABLE}/dealer", {}).get("kinds", {}).get("round_settlement") == 2,
                   30, "the seat's reports booked and the dealer's records in")
        data = seat_events()
        m = data["pools"]["main"]["meters"]
        assert (m["wagers"], Fraction(m["wagers_in"])) == (2, 2 * profile.progressive.wager)
        assert data["integrity"]["count"] == 0
        assert data["units"][f"{TABLE}/dealer"]["kinds"]["round_settlement"] == 2
        u = data["units"][f"{TABLE}/seat-1"]
        assert u["missing"] == 0 and u["duplicates"] == 0
        # SIGTERM: every unit stops cleanly and says offline (retained)
        codes = {p.name: p.terminate() for p in (seat, dealer, jackpot)}
        assert codes == {"seat-1": 0, "dealer": 0, "jackpot": 0}, [p.output() for p in procs]
        wait_until(lambda: all(status(sniffer, t) == "offline" for t in topics.values()), 20,
                   "every unit offline")
        path, _ = unit_outbox(tmp_path / "seat-1")
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        assert db.execute("SELECT COUNT(*) FROM outbox WHERE acked = 0").fetchone()[0] == 0   # none waiting
        db.close()
        # the report on the command line names the seat with its events
        out = subprocess.run([sys.executable, "-m", "firmware", "jackpot", "report", "--db", str(db_path)],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
        assert f"{TABLE}/seat-1: {u['events']} events, highest seq {u['highest_seq']}" in out
        assert "integrity alarms: 0" in out
        seen = validate_all(sniffer.messages)

        assert seen["unitReport"] >= 4 and seen["tableStream"] > 10 and seen["unitStatus"] >= 4, seen
    finally:
        for p in procs:
            p.kill()
        sniffer.close()
        devices.close()


@pytest.mark.parametrize("link, named", [
    ({"broker": "http://broker:1883"}, "[link] broker: 'http://broker:1883' must start with mqtt://"),
    ({"broker": "mqtt://broker:1883", "keepalive": 0}, "[link] keepalive"),
    ({"broker": "mqtt://broker:1883", "pasword": "x"}, "pasword"),
    ({"broker": "mqtts://broker:8883"}, "[link.tls]"),
    ({"broker": "mqtt://broker:1883", "jackpot": "a/b"}, "[link] jackpot"),
    ({"broker": "mqtt://broker:1883", "tls": {"ca": "missing-ca.pem"}}, "[link.tls] ca"),
])
def test_check_names_a_bad_link_value(tmp_path, capsys, link, named):
    profile = load_profile("rws-blackjack")
    path = seat_config(tmp_path, None, TABLE, 2, profile, "/dev/null")
    text = path.read_text() + "[link]\n" + "".join(
        f"{k} = {json.dumps(v)}\n" for k, v in link.items() if k != "tls")
    if "tls" in link:
        text += "[link.tls]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in link["tls"].items())
    path.write_text(text)
    assert main(["run", "--config", str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and named in err


def test_check_refuses_the_examples_until_their_files_are_in_place_and_the_jackpot_role_needs_a_link(
        tmp_path, capsys):
    # the examples' TLS files are installed by hand; with them in place they pass --check and
    # start (tests/runtime/test_check_table.py)
    for name in ("dealer", "seat", "jackpot"):
        assert main(["run", "--config", str(ROOT / "docs" / "examples" / f"{name}.toml"), "--check"]) == 2
        assert "[link.tls] ca: /etc/betbox/ca.pem does not exist" in capsys.readouterr().err
    path = write_toml(tmp_path / "j.toml", {"unit": {"role": "jackpot", "id": "main", "state_dir": str(tmp_path)}})
    assert main(["run", "--config", str(path), "--check"]) == 2
    assert "[link] is missing" in capsys.readouterr().err


def test_a_seat_cut_off_from_the_controller_refuses_progressive_wagers_and_takes_them_after(broker, tmp_path):
    """Through the real chain: the controller process stops (its will/offline status on the
    broker), the seat's ControllerWatch posts link "down", the seat's gate drops the
    progressive from its offer; the controller back, the offer has it again."""
    profile = load_profile("rws-blackjack-switch")
    link_id = "run-gate"
    devices = Devices(seat_spots(profile))
    sniffer = Sniffer(broker.url)
    procs: list[UnitProcess] = []
    jackpot_toml = jackpot_config(tmp_path, broker.url, link_id)
    jackpot_status = f"betbox/v1/jackpot/{link_id}/status"
    try:
        jackpot = UnitProcess("jackpot", jackpot_toml, tmp_path)
        dealer = UnitProcess("dealer", dealer_config(tmp_path, broker.url, TABLE, profile, devices.shoe.transport.path,
                                                     link_id), tmp_path, drive=tmp_path / "console.fifo")
        seat = UnitProcess("seat-1", seat_config(tmp_path, broker.url, TABLE, 1, profile,
                                                 devices.reader.transport.path, link_id), tmp_path)
        procs = [jackpot, dealer, seat]
        watch = TableWatch(sniffer, TABLE, {profile.name: profile})
        wait_until(lambda: status(sniffer, jackpot_status) == "online"
                   and any(m["kind"] == "catchup" for m in watch.messages("/seat/1/down")), 60,
                   "the controller online and the seat caught up")
        dealer.send("press open_bets")
        wait_until(lambda: watch.update() is not None and watch.round_no == 1, 30, "round 1 open")
        devices.reader.place("main", "0A01", "0A02")
        devices.reader.place("progressive", "0B01")

        def offer() -> dict | None:
            devices.reader.cycle(1)
            offers = [m["body"]["bets"] for m in watch.messages("/seat/1/up") if m["kind"] == "offer"]
            return offers[-1] if offers else None
        wait_until(lambda: set(offer() or {}) == {"main", "progressive"}, 30, "the progressive offered", step=0.1)
        assert jackpot.terminate() == 0
        wait_until(lambda: status(sniffer, jackpot_status) == "offline", 20, "the controller offline")
        # the seat drops the progressive from its offer while bets are still open
        wait_until(lambda: set(offer() or {}) == {"main"}, 30, "the progressive refused while cut off", step=0.1)
        jackpot = UnitProcess("jackpot-again", jackpot_toml, tmp_path)
        procs.append(jackpot)
        wait_until(lambda: set(offer() or {}) == {"main", "progressive"}, 60, "the progressive taken again",
                   step=0.1)
        # cut off again, then bets close: the lock has no progressive and the round none either
        assert jackpot.terminate() == 0
        wait_until(lambda: set(offer() or {}) == {"main"}, 30, "the progressive refused again", step=0.1)
        dealer.send("press no_more_bets")
        wait_until(lambda: any(m["kind"] == "lock" and m["body"]["round"] == 1
                               for m in watch.messages("/seat/1/up")), 30, "the seat's lock")
        lock = [m["body"]["bets"] for m in watch.messages("/seat/1/up") if m["kind"] == "lock"][-1]
        assert set(lock) == {"main"}
        watch.wait_event(0, "bets closed")
        assert watch.round.box(1).stakes.get("progressive") is None
    finally:
        for p in procs:
            p.kill()
        sniffer.close()
        devices.close()
