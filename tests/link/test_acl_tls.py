"""The documented ACL under a real mosquitto: a seat publishes only as itself. And TLS with
a throwaway CA and client certificates (openssl CLI)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from firmware.jackpot.controller import report
from firmware.jackpot.service import JackpotService
from firmware.link import connect_bus, topics
from firmware.link.acl import render_acl
from firmware.link.config import load_link_config

from .broker import Broker
from .helpers import Sniffer, controller, make_pki, send_dealer, wait_until

DOCS = Path(__file__).resolve().parents[2] / "docs" / "mqtt"
USERS = {"table-1/seat-1": "pw1", "table-1/seat-2": "pw2", "jackpot/main": "pwj", "attendant": "pwa",
         "table-1/dealer": "pwd"}


def test_the_documented_acl_is_what_render_acl_makes():
    assert (DOCS / "acl").read_text().rstrip("\n") == render_acl({"table-1": 7}).rstrip("\n")


def test_the_acl_refuses_a_seat_that_publishes_as_another(tmp_path):
    b = Broker(tmp_path / "mosquitto", acl=(DOCS / "acl").read_text(), users=USERS).start()
    try:
        ctl = controller(tmp_path / "jackpot.db")
        link = load_link_config({"broker": b.url, "username": "jackpot/main", "password": "pwj", "allow_insecure": True})
        svc = JackpotService(ctl, link).start()
        seat1 = connect_bus(b.url, "table-1/seat-1", outbox_path=tmp_path / "s1.db",
                            username="table-1/seat-1", password="pw1", allow_insecure=True)
        watch_sniffer = Sniffer(b.url, "betbox/v1/#", username="attendant", password="pwa")
        # seat 1's credentials, used to publish as seat 2 (report and presence)
        forger = Sniffer(b.url, topics.confirmed_topic("main", "table-1/seat-1"),
                         username="table-1/seat-1", password="pw1")
        forged = {"schema": 1, "id": "forged-by-seat-1", "unit": "table-1/seat-2", "table": "table-1",
                  "box": 2, "seq": 1, "kind": "progressive_wager", "round": 1, "body": {"amount": "5"}}
        forger.client.publish(topics.report_topic("table-1/seat-2"), json.dumps(forged), qos=1)
        forger.client.publish(topics.status_topic("table-1/seat-2"),
                              json.dumps({"schema": 1, "unit": "table-1/seat-2", "role": "seat",
                                          "state": "offline"}), qos=1, retain=True)
        forger.close()            # the broker handles its packets in order, then the disconnect
        seat1.report("progressive_wager", {"amount": "10"}, key="1/w", table="table-1", box=1, round=1)
        # reports of one client arrive in order: once its own is in, the forged one never will be
        wait_until(lambda: ctl.marks().get("table-1/seat-1") == 1, 20, "seat 1's own report")
        # booked once the dealer's record of the round agrees
        dealer = connect_bus(b.url, "table-1/dealer", outbox_path=tmp_path / "d.db", role="dealer",
                             username="table-1/dealer", password="pwd", allow_insecure=True)
        send_dealer(dealer, {1: [("progressive_wager", {"amount": "10"}, 1, "1/w")]})
        wait_until(lambda: report(ctl.db)["pools"]["main"]["meters"]["wagers_in"] == "10", 20, "the booked wager")
        dealer.close()
        data = report(ctl.db)
        assert "table-1/seat-2" not in data["units"]
        # the controller's mark reached seat 1 through the ACL's %u pattern
        wait_until(lambda: seat1.outbox.stats()["confirmed"] == 1, 20, "the confirmation at seat 1")
        # a wrong password does not get in at all
        intruder = connect_bus(b.url, "table-1/seat-2", username="table-1/seat-2", password="nope", wait=1,
                               allow_insecure=True)
        assert not intruder.connected
        intruder.close()
        seat1.close()
        svc.stop()
        ctl.close()
        statuses = [json.loads(p) for t, p, _ in watch_sniffer.messages if t == topics.status_topic("table-1/seat-2")]
        assert statuses == []         # the forged "offline" for seat 2 never got through
        watch_sniffer.close()
    finally:
        b.stop()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_with_client_certificates(tmp_path):
    d = tmp_path / "pki"
    make_pki(d, {"seat": "table-1:seat-1"})
    b = Broker(tmp_path / "mosquitto", tls={"ca": d / "ca.pem", "cert": d / "broker.pem",
                                            "key": d / "broker.key"}).start()
    try:
        url = f"mqtts://127.0.0.1:{b.port}"
        tls = {"ca": str(d / "ca.pem"), "cert": str(d / "seat.pem"), "key": str(d / "seat.key")}
        seat = connect_bus(url, "table-1/seat-1", outbox_path=tmp_path / "s.db", tls=tls)
        assert seat.connected
        seat.report("alarm", {"alarm": "test", "detail": "over TLS"}, table="table-1", box=1)
        wait_until(seat.drained, 20, "the broker's PUBACK over TLS")
        seat.close()
        # without a client certificate the broker refuses the connection
        bare = connect_bus(url, "table-1/seat-2", tls={"ca": str(d / "ca.pem")}, wait=2)
        assert not bare.connected
        bare.close()
    finally:
        b.stop()


def test_under_the_acl_a_seat_reads_the_dealers_table_alarms_and_cannot_raise_them_as_the_dealer(tmp_path):
    """The seats take the dealer's table alarms (shoe jam, door) as an input: the ACL lets
    them read the alarm topic; only the dealer may write it (a seat reports its own alarms
    on its up topic and through its outbox)."""
    b = Broker(tmp_path / "mosquitto", acl=(DOCS / "acl").read_text(), users=USERS).start()
    try:
        alarm = "betbox/v1/table/table-1/alarm"
        seat_reader = Sniffer(b.url, alarm, username="table-1/seat-2", password="pw2")
        watcher = Sniffer(b.url, alarm, username="jackpot/main", password="pwj")
        dealer = Sniffer(b.url, "betbox/v1/unit/table-1/dealer/sync", username="table-1/dealer", password="pwd")
        forger = Sniffer(b.url, "betbox/v1/unit/table-1/seat-1/sync", username="table-1/seat-1", password="pw1")
        forger.client.publish(alarm, json.dumps({"forged": "by seat 1"}), qos=1).wait_for_publish(5)
        dealer.client.publish(alarm, json.dumps({"real": "shoe_jam"}), qos=1).wait_for_publish(5)
        wait_until(lambda: seat_reader.messages and watcher.messages, 20, "the dealer's alarm at the seat")
        assert [json.loads(p) for _, p, _ in seat_reader.messages] == [{"real": "shoe_jam"}]
        assert [json.loads(p) for _, p, _ in watcher.messages] == [{"real": "shoe_jam"}]
        for s in (seat_reader, watcher, dealer, forger):
            s.close()
    finally:
        b.stop()
