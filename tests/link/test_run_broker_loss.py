"""Issue #12.4, the broker link: a `betbox run` dealer and seat whose broker is SIGKILLed and
comes back journal the link's loss and return as device inputs, with the alarms
broker_down / broker_restored (kept in the unit's alarm record, reported to the pit and
the controller when the link is back); a restart replays them, it does not raise them again."""

from __future__ import annotations

import time

import pytest

from firmware.engine.profile import load_profile
from firmware.runtime.journal import open_readonly
from firmware.runtime.spots import seat_spots

from .broker import Broker
from .helpers import Sniffer, wait_until
from .units import Devices, UnitProcess, dealer_config, seat_config

pytestmark = pytest.mark.slow          # kills processes and waits out their restart

TABLE = "table-9"


def device_inputs(path) -> list[tuple[str, str]]:
    j = open_readonly(path / "journal.db")
    try:
        return [(r.body["kind"], r.body["state"]) for r in j.records() if r.kind == "device"]
    finally:
        j.close()


def test_a_lost_broker_is_journalled_and_alarmed_at_every_unit_and_its_return_too(tmp_path):
    b = Broker(tmp_path / "mosquitto").start()
    profile = load_profile("rws-blackjack")
    devices = Devices(seat_spots(profile))
    procs: list[UnitProcess] = []
    sniffer = None
    try:
        dealer = UnitProcess("dealer", dealer_config(tmp_path, b.url, TABLE, profile, devices.shoe.transport.path),
                             tmp_path)
        seat = UnitProcess("seat-1", seat_config(tmp_path, b.url, TABLE, 1, profile, devices.reader.transport.path),
                           tmp_path)
        procs = [dealer, seat]
        wait_until(lambda: all("running" in p.output() for p in procs) or any(p.proc.poll() is not None for p in procs),
                   60, "both units running")
        for p in procs:
            assert p.proc.poll() is None, p.output()
        b.kill()
        time.sleep(2)
        b.start()
        sniffer = Sniffer(b.url, f"betbox/v1/table/{TABLE}/#")
        # once the link is back, each unit's alarms reach the table: the loss and the return
        wait_until(lambda: {"broker_down", "broker_restored"} <= {
            m.get("body", {}).get("alarm") for m in sniffer.json("/alarm")}, 60, "the dealer's broker alarms")
        codes = {p.name: p.terminate() for p in procs}
        assert codes == {"dealer": 0, "seat-1": 0}, [p.output() for p in procs]
        for unit in ("dealer", "seat-1"):
            assert device_inputs(tmp_path / unit) == [("broker", "down"), ("broker", "up")], unit
        # a restart replays the record: nothing raised again while the link stays up
        again = UnitProcess("seat-1b", tmp_path / "seat-1.toml", tmp_path)
        procs.append(again)
        wait_until(lambda: "running" in again.output() or again.proc.poll() is not None, 60, "the seat again")
        assert again.terminate() == 0, again.output()
        assert device_inputs(tmp_path / "seat-1") == [("broker", "down"), ("broker", "up")]
    finally:
        for p in procs:
            p.kill()
        if sniffer is not None:
            sniffer.close()
        devices.close()
        b.stop()
