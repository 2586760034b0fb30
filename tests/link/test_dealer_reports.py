"""The dealer's alarms as durable reports: through the dealer's own outbox, exactly once
across a broker outage, valid against the AsyncAPI document; the ACL keeps everyone else
from reporting as the dealer; the controller's reading of dealer reports and its gap log."""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import pytest

from firmware.engine.profile import load_profile
from firmware.jackpot.controller import GAP_GRACE, report
from firmware.jackpot.service import JackpotService
from firmware.jackpot.wire import ReportRejected, parse_report
from firmware.link import connect_bus, topics
from firmware.link.config import config_from_url, load_link_config
from firmware.link.reporter import DealerReporter
from firmware.sim.driver import TableDriver
from firmware.sim.table import TableSpec

from .broker import Broker
from .helpers import Sniffer, controller, wait_until
from .schema import validate, validate_all

DOCS = Path(__file__).resolve().parents[2] / "docs" / "mqtt"


def _dealer_report(seq: int, **over) -> dict:
    r = {"schema": 1, "id": f"dealer-report-{seq:04d}", "unit": "t1/dealer", "table": "t1", "seq": seq,
         "kind": "alarm", "round": 3, "body": {"alarm": "shoe_jam", "detail": "shoe reported jam"}}
    r.update(over)
    return r


def _ingest(ctl, data: dict):
    return ctl.ingest(topics.report_topic(data["unit"]), json.dumps(data).encode())


def test_dealer_alarms_survive_a_broker_outage_exactly_once(own_broker, tmp_path):
    ctl = controller(tmp_path / "jackpot.db")
    svc = JackpotService(ctl, config_from_url(own_broker.url), tick=0.02).start()
    sniffer = Sniffer(own_broker.url)
    spec = TableSpec(table_id="dl-1", profile=load_profile("rws-blackjack"), seed=5,
                     state_dir=tmp_path / "t", boxes=2)
    driver = TableDriver.create(spec)
    t = driver.table
    dealer = t.dealer
    bus = connect_bus(own_broker.url, dealer.unit_id, outbox_path=tmp_path / "dealer-outbox.db", role="dealer")
    rep = DealerReporter(dealer, bus)
    rep.sync()
    driver.play_round()
    t.shoe.jam()
    t.shoe.clear_jam()
    t.readers[1].place_chips("main", ["FFEE01"])      # a seat's alarm: the seat reports it, not the dealer
    t.cycle_readers(2, [1])
    t.readers[1].remove_chips("main")
    t.cycle_readers(2, [1])
    t.settle()
    wait_until(lambda: ctl.marks().get(dealer.unit_id) == bus.outbox.last_seq > 0, 30, "the first alarms")
    before_outage = bus.outbox.last_seq

    own_broker.kill()
    wait_until(lambda: not bus.connected, 10, "the dealer noticing the broker is gone")
    t.shoe.open_door()
    t.shoe.close_door()
    driver.play_round()
    t.settle()
    assert bus.outbox.last_seq > before_outage, "alarms raised while the broker was down"
    assert bus.outbox.stats()["waiting"] > 0
    own_broker.start()

    wait_until(lambda: ctl.marks().get(dealer.unit_id) == bus.outbox.last_seq, 60,
               "every dealer alarm at the controller after the outage")
    wait_until(lambda: bus.outbox.stats()["confirmed"] == bus.outbox.last_seq, 30, "the dealer's confirmation")
    own = Counter(e["alarm"] for e in dealer.alarms if e.get("unit") == dealer.unit_id)
    assert own["shoe_door_opened"] == own["shoe_jam"] == 1, own
    assert any(e.get("unit") != dealer.unit_id for e in dealer.alarms), "a relayed seat alarm, skipped"
    every = ctl.db.execute("SELECT seq, kind, round, body FROM event WHERE unit = ? ORDER BY seq",
                           (dealer.unit_id,)).fetchall()
    # exactly once: seqs 1..N, each alarm the dealer raised itself and its record of each
    # round (rws-blackjack has no progressive: a settlement per round), nothing else
    assert [r[0] for r in every] == list(range(1, bus.outbox.last_seq + 1))
    assert {r[1] for r in every} == {"alarm", "round_settlement"}
    settled = [r[2] for r in every if r[1] == "round_settlement"]
    assert settled == list(range(1, dealer.round_no + 1))
    rows = [r for r in every if r[1] == "alarm"]
    assert Counter(json.loads(r[3])["alarm"] for r in rows) == own
    mine = [e for e in dealer.alarms if e.get("unit") == dealer.unit_id]
    assert [r[2] for r in rows] == [e.get("round") for e in mine]
    data = report(ctl.db)["units"][dealer.unit_id]
    assert data["events"] == len(every) and data["missing"] == 0
    assert data["kinds"] == {"alarm": len(rows), "round_settlement": len(settled)}
    assert data["alarms"] == dict(sorted(own.items()))
    # looking at the same state again (a restart after journal replay) reports nothing new
    last = bus.outbox.last_seq
    again = DealerReporter(dealer, bus)
    again.sync()
    assert bus.outbox.last_seq == last and again.reported == 0
    seen = validate_all(sniffer.messages)
    assert seen.get("unitReport")
    bus.close()
    bus.outbox.close()
    t.close()
    sniffer.close()
    svc.stop()
    ctl.close()


USERS = {"table-1/seat-1": "pw1", "table-1/dealer": "pwd", "jackpot/main": "pwj", "attendant": "pwa"}


def test_the_acl_lets_the_dealer_report_and_refuses_a_seat_reporting_as_the_dealer(tmp_path):
    b = Broker(tmp_path / "mosquitto", acl=(DOCS / "acl").read_text(), users=USERS).start()
    try:
        ctl = controller(tmp_path / "jackpot.db")
        link = load_link_config({"broker": b.url, "username": "jackpot/main", "password": "pwj", "allow_insecure": True})
        svc = JackpotService(ctl, link, tick=0.02).start()
        dealer = connect_bus(b.url, "table-1/dealer", outbox_path=tmp_path / "d.db", role="dealer",
                             username="table-1/dealer", password="pwd", allow_insecure=True)
        forger = Sniffer(b.url, topics.confirmed_topic("main", "table-1/seat-1"),
                         username="table-1/seat-1", password="pw1")
        forged = {"schema": 1, "id": "forged-by-seat-1", "unit": "table-1/dealer", "table": "table-1",
                  "seq": 1, "kind": "alarm", "body": {"alarm": "shoe_door_opened", "detail": "forged"}}
        forger.client.publish(topics.report_topic("table-1/dealer"), json.dumps(forged), qos=1)
        forger.close()
        dealer.report("alarm", {"alarm": "shoe_jam", "detail": "shoe reported jam"}, key="alarm/1",
                      table="table-1", round=1)
        wait_until(lambda: ctl.marks().get("table-1/dealer") == 1, 20, "the dealer's own report")
        ids = [i for (i,) in ctl.db.execute("SELECT id FROM event WHERE unit = 'table-1/dealer'")]
        assert len(ids) == 1 and ids[0] != "forged-by-seat-1"
        wait_until(lambda: dealer.outbox.stats()["confirmed"] == 1, 20, "the confirmation at the dealer")
        dealer.close()
        dealer.outbox.close()
        svc.stop()
        ctl.close()
    finally:
        b.stop()


def test_what_the_controller_reads_from_a_dealer(tmp_path):
    ok = _dealer_report(1, body={"alarm": "seats_missing", "detail": "bets closed without 2", "boxes": [2]})
    validate(topics.report_topic("t1/dealer"), json.dumps(ok).encode())
    r = parse_report(topics.report_topic("t1/dealer"), json.dumps(ok).encode())
    assert (r.unit, r.box, r.round, r.kind) == ("t1/dealer", 0, 3, "alarm")
    bad = [(_dealer_report(1, box=1), "bad_field"),
           (_dealer_report(1, kind="progressive_wager", body={"amount": "5"}), "bad_kind"),
           (_dealer_report(1, kind="round_settlement", body={"void": False, "boxes": [
               {"box": 1, "net": "5", "envy": [], "side_bets": []},
               {"box": 1, "net": "-5", "envy": [], "side_bets": []}]}), "bad_field"),
           (_dealer_report(1, body={"alarm": "x", "detail": "", "boxes": [0]}), "bad_field")]
    seat_as_other_box = {**_dealer_report(1, unit="t1/seat-2"), "box": 1}
    bad.append((seat_as_other_box, "forged"))
    seat_as_dealer = {**_dealer_report(1, unit="t1/seat-1", kind="round_settlement",
                                       body={"void": False, "boxes": []}), "box": 1}
    bad.append((seat_as_dealer, "bad_kind"))
    for data, reason in bad:
        with pytest.raises(ReportRejected) as exc:
            parse_report(topics.report_topic(data["unit"]), json.dumps(data).encode())
        assert exc.value.reason == reason, (data, exc.value)
    import jsonschema
    for data, _ in [bad[0], bad[1], bad[3], bad[-1]]:
        with pytest.raises(jsonschema.ValidationError):
            validate(topics.report_topic(data["unit"]), json.dumps(data).encode())


def test_an_out_of_order_report_is_recorded_but_warned_only_if_the_hole_stays_open(tmp_path, caplog):
    ctl = controller(tmp_path / "jackpot.db")
    caplog.set_level(logging.INFO, logger="betbox.jackpot")
    for seq in (1, 3):
        assert _ingest(ctl, _dealer_report(seq)).status == "accepted"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("out of order" in r.getMessage() for r in caplog.records)
    assert ctl.check_gaps() == []                         # within the grace
    assert _ingest(ctl, _dealer_report(2)).status == "accepted"    # the hole closes moments later
    assert ctl.check_gaps(now=10 ** 9) == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert _ingest(ctl, _dealer_report(6)).status == "accepted"
    import time
    assert ctl.check_gaps(now=time.monotonic() + GAP_GRACE + 1) == [("t1/dealer", [[4, 5]])]
    assert ctl.check_gaps(now=time.monotonic() + GAP_GRACE + 2) == []     # warned once
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "4..5" in warnings[0]
    data = report(ctl.db)["units"]["t1/dealer"]
    assert data["gaps_recorded"] == 2 and data["missing_ranges"] == [[4, 5]]
    ctl.close()
    # a restarted controller warns for a hole it finds open in its database (after the grace)
    ctl = controller(tmp_path / "jackpot.db")
    assert ctl.check_gaps(grace=0) == [("t1/dealer", [[4, 5]])]
    ctl.close()
