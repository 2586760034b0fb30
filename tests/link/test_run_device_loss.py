"""Issue #12.4 on real parts: `betbox run` dealer and seat on a broker, the shoe and the
seat's RFID reader simulated on ptys and read through the serial backends. Killing the
reader mid-betting and then the shoe is not silent: journalled inputs, alarms to the pit,
the seat takes no bets that round, the dealer deals no new round without its shoe."""

from __future__ import annotations

import json

from firmware.engine.profile import load_profile
from firmware.runtime.journal import open_readonly
from firmware.runtime.spots import seat_spots

from .helpers import Sniffer, wait_until
from .units import Devices, UnitProcess, dealer_config, seat_config

TABLE = "table-8"


def test_killing_the_reader_and_the_shoe_mid_play_is_journalled_alarmed_and_refuses_bets(broker, tmp_path):
    profile = load_profile("rws-blackjack")
    devices = Devices(seat_spots(profile))
    sniffer = Sniffer(broker.url, f"betbox/v1/table/{TABLE}/#")
    procs: list[UnitProcess] = []

    def on(suffix: str) -> list[dict]:
        return [json.loads(p) for t, p, _ in list(sniffer.messages) if t.endswith(suffix) and p]

    try:
        dealer = UnitProcess("dealer", dealer_config(tmp_path, broker.url, TABLE, profile,
                                                     devices.shoe.transport.path), tmp_path,
                             drive=tmp_path / "console.fifo")
        seat = UnitProcess("seat-1", seat_config(tmp_path, broker.url, TABLE, 1, profile,
                                                 devices.reader.transport.path), tmp_path)
        procs = [dealer, seat]
        wait_until(lambda: any(m["kind"] == "catchup" for m in on("/seat/1/down"))
                   or any(p.proc.poll() is not None for p in procs), 60, "the seat caught up")
        for p in procs:
            assert p.proc.poll() is None, p.output()
        dealer.send("press open_bets")
        wait_until(lambda: any(m["kind"] == "round_open" for m in on("/stream")), 30, "round 1 open")
        devices.reader.place("main", "0A01", "0A02")

        def offered() -> bool:
            devices.reader.cycle(1)
            offers = [m["body"]["bets"] for m in on("/seat/1/up") if m["kind"] == "offer"]
            return bool(offers) and offers[-1] == {"main": 10}
        wait_until(offered, 30, "the seat's offer of 10 on main", step=0.1)

        devices.reader.close()                       # the reader dies mid-betting
        wait_until(lambda: any(m["body"].get("alarm") == "reader_down" for m in on("/seat/1/up")), 30,
                   "the seat's reader_down alarm")
        wait_until(lambda: [m["body"]["bets"] for m in on("/seat/1/up") if m["kind"] == "offer"][-1] == {}, 30,
                   "the seat withdrawing its offer")
        dealer.send("press no_more_bets")
        wait_until(lambda: [m["body"]["bets"] for m in on("/seat/1/up") if m["kind"] == "lock"] == [{}], 30,
                   "the seat locking no bets")
        wait_until(lambda: [m for m in on("/stream") if m["kind"] == "event"
                            and m["body"]["event"]["type"] == "bets_closed"], 30, "bets closed")
        closed = [m["body"]["event"] for m in on("/stream") if m["kind"] == "event"
                  and m["body"]["event"]["type"] == "bets_closed"]
        assert "1" not in closed[0]["wagers"]

        devices.shoe.close()                         # then the shoe
        wait_until(lambda: any(m["body"].get("alarm") == "shoe_down" for m in on("/alarm")), 30,
                   "the dealer's shoe_down alarm")
        dealer.send("press open_bets")
        wait_until(lambda: any("card shoe" in m["body"]["reason"] for m in on("/console")), 30,
                   "the dealer refusing to open a round without its shoe")
        codes = {p.name: p.terminate() for p in procs}
        assert codes == {"dealer": 0, "seat-1": 0}, [p.output() for p in procs]

        def device_inputs(unit: str) -> list[dict]:
            j = open_readonly(tmp_path / unit / "journal.db")
            try:
                return [r.body for r in j.records() if r.kind == "device"]
            finally:
                j.close()
        seat_in = device_inputs("seat-1")
        assert [(d["kind"], d["state"]) for d in seat_in] == [("chip_reader", "down")]
        assert "serial port" in seat_in[0]["reason"]
        assert [(d["kind"], d["state"]) for d in device_inputs("dealer")] == [("card_shoe", "down")]
    finally:
        for p in procs:
            p.kill()
        sniffer.close()
        devices.close()
