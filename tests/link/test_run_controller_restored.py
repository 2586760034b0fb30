"""The jackpot controller restored from an older copy of its database (a backup), as `betbox
run` processes on a real mosquitto: the dealer and the seat send again the reports the
restored controller lost (they had deleted them as confirmed, and took its lower mark
silently), and it books every one of them, with the same ids, once."""

from __future__ import annotations

import json
import random
import shutil

import pytest

from firmware.engine.profile import load_profile
from firmware.jackpot.store import connect
from firmware.link.topics import confirmed_topic
from firmware.runtime.spots import seat_spots
from firmware.sim.shoe import SimShoe

from .helpers import Sniffer, wait_until
from .test_run_units import TABLE, status
from .units import Devices, TableWatch, UnitProcess, dealer_config, jackpot_config, play_round, seat_config

pytestmark = pytest.mark.slow          # stops and restarts the controller

UNITS = (f"{TABLE}/seat-1", f"{TABLE}/dealer")


def booked(db_path) -> dict[str, set[tuple[int, str]]]:
    db = connect(db_path, readonly=True)
    try:
        return {u: set(db.execute("SELECT seq, id FROM event WHERE unit = ?", (u,)).fetchall()) for u in UNITS}
    finally:
        db.close()


def test_a_controller_restored_from_its_backup_books_again_what_the_units_had_sent(broker, tmp_path):
    profile = load_profile("rws-blackjack-switch")
    link_id = "run-ctl-restored"
    devices = Devices(seat_spots(profile))
    sniffer = Sniffer(broker.url)
    state = tmp_path / "jackpot"
    db_path = state / "jackpot.db"
    jackpot_toml = jackpot_config(tmp_path, broker.url, link_id)
    procs: list[UnitProcess] = []

    def mark(unit: str) -> int:
        topic = confirmed_topic(link_id, unit)
        marks = [json.loads(p)["through_seq"] for t, p, _ in list(sniffer.messages) if t == topic and p]
        return marks[-1] if marks else 0

    def controller_up(name: str) -> UnitProcess:
        p = UnitProcess(name, jackpot_toml, tmp_path)
        procs.append(p)
        return p

    try:
        jackpot = controller_up("jackpot")
        dealer = UnitProcess("dealer", dealer_config(tmp_path, broker.url, TABLE, profile,
                                                     devices.shoe.transport.path, link_id),
                             tmp_path, drive=tmp_path / "console.fifo")
        procs.append(dealer)
        seat = UnitProcess("seat-1", seat_config(tmp_path, broker.url, TABLE, 1, profile,
                                                 devices.reader.transport.path, link_id), tmp_path)
        procs.append(seat)
        wait_until(lambda: status(sniffer, f"betbox/v1/unit/{UNITS[0]}/status") == "online", 60, "the seat online")
        watch = TableWatch(sniffer, TABLE, {profile.name: profile})
        cards = iter(SimShoe(6, random.Random(31)).cards)
        bets = {"main": ["0A01", "0A02"], "progressive": ["0B01"]}
        play_round(watch, dealer, devices, cards, bets, box=1)
        wait_until(lambda: all(mark(u) >= 1 for u in UNITS), 30, "round 1's reports confirmed")
        assert jackpot.terminate() == 0
        shutil.copytree(state, tmp_path / "backup")               # the controller's backup
        before = {u: mark(u) for u in UNITS}

        jackpot = controller_up("jackpot-b")
        for _ in range(2):
            play_round(watch, dealer, devices, cards, bets, box=1)
        wait_until(lambda: all(mark(u) >= before[u] + 2 for u in UNITS), 30, "rounds 2 and 3 confirmed")
        assert jackpot.terminate() == 0
        held = booked(db_path)
        assert all(len(held[u]) == max(s for s, _ in held[u]) for u in UNITS)

        shutil.rmtree(state)
        shutil.copytree(tmp_path / "backup", state)               # restored from the backup
        assert all(len(b) < len(held[u]) for u, b in booked(db_path).items())
        jackpot = controller_up("jackpot-restored")
        wait_until(lambda: booked(db_path) == held, 60, "the reports the restored controller lost, booked again")
        assert [p.terminate() for p in (seat, dealer, jackpot)] == [0, 0, 0]
        assert booked(db_path) == held
    finally:
        for p in procs:
            p.kill()
        sniffer.close()
        devices.close()
