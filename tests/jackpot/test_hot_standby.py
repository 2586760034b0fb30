"""Two ``betbox run`` jackpot controllers on one real PostgreSQL and a real mosquitto: one
active (the advisory lock), one waiting. Fault tests: the active one SIGKILLed in the middle
of a burst and while a 100% hit is pending, and the database restarted under the active
one. Each ends with the books compared, to the cent, to what the units sent. The harness:
tests/jackpot/controllers.py.

The takeover time (active killed -> the other online and its first report committed) is
printed (``-s``), not asserted: speed is measured, not tested."""

from __future__ import annotations

import json
import threading
import time

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from firmware.link import connect_bus, topics
from tests.jackpot.controllers import STATUS, Burst, one_flap, states, takeover, watched_pair
from tests.jackpot.test_jackpot_integration import dealer
from tests.jackpot.test_postgres_store import _payloads
from tests.link.helpers import Sniffer, check_accounting, wait_until


def test_the_active_controller_sigkilled_mid_burst_the_standby_takes_over_and_every_report_counts_once(
        own_broker, postgres, tmp_path):
    broker = own_broker           # its retained marks must not reach other tests' units
    ctls, a, b, sniffer = watched_pair(broker, postgres, tmp_path)
    try:
        burst = Burst(broker.url, "table-1", [1, 2, 3], 150, 900, tmp_path)
        expected = burst.expected
        wait_until(lambda: ctls.events() > 150, 60, "the burst under way", step=0.005)
        t = takeover(ctls, sniffer, a, b)
        before = ctls.events()
        wait_until(lambda: ctls.events() > before, 30, "the standby's first commit", step=0.005)
        first = time.monotonic() - t["killed"]
        burst.join()
        wait_until(lambda: ctls.confirmed(expected), 90, "every report confirmed")
        check_accounting(ctls.report(), expected)
        # presence: a online; at the kill its will (offline), then b online, and no more flaps
        one_flap(states(sniffer, t["seen"]))
        print(f"\ntakeover: lock {t['active_s'] * 1000:.0f} ms, online {t['online_s'] * 1000:.0f} ms, "
              f"first report committed {first * 1000:.0f} ms after the SIGKILL")
        burst.close()
    finally:
        sniffer.close()
        ctls.close()


def test_the_active_controller_sigkilled_with_a_full_hit_pending_the_standby_keeps_it_pending(
        own_broker, postgres, tmp_path):
    broker = own_broker           # its retained marks must not reach other tests' units
    ctls, a, b, sniffer = watched_pair(broker, postgres, tmp_path)
    try:
        seat = connect_bus(broker.url, "table-3/seat-1", outbox_path=tmp_path / "seat.db")
        table_dealer = dealer(broker.url, "table-3", tmp_path)
        hit = {"category": "suited_four_of_a_kind", "award": None, "meter_share": "1", "amount": "1000"}
        seat.report("progressive_wager", {"amount": "5"}, key="1/w", table="table-3", box=1, round=1)
        seat.report("progressive_hit", hit, key="1/h", table="table-3", box=1, round=1)
        table_dealer.report("round_progressive", {"meter": "1000", "boxes": [{"box": 1, "wager": "5", "hit": hit}]},
                            key="1/p", table="table-3", round=1)
        wait_until(lambda: ctls.db.execute("SELECT state FROM hit").fetchall() == [("pending",)], 30,
                   "the 100% hit pending")
        t = takeover(ctls, sniffer, a, b)
        # the meter the new controller publishes still shows the hit PENDING, for the same amount
        meters = wait_until(lambda: [json.loads(p) for tp, p, _ in sniffer.messages[t["seen"]:]
                                     if tp == topics.meter_topic("main")], 30, "the standby's meter")
        pool = meters[-1]["pools"]["main"]
        assert pool["state"] == "pending" and [h["amount"] for h in pool["pending"]] == ["1000.00"]
        # the round ends: the hit is paid and the pool reseeded, by the controller now active
        seat.report("round_result", {"void": False, "net": "5"}, key="1/r", table="table-3", box=1, round=1)
        table_dealer.report("round_settlement", {"void": False, "boxes": [{"box": 1, "net": "5", "envy": [],
                                                                            "side_bets": []}]},
                            key="1/s", table="table-3", round=1)
        wait_until(lambda: ctls.db.execute("SELECT state FROM hit").fetchall() == [("confirmed",)], 30,
                   "the hit confirmed")
        wait_until(lambda: ctls.marks() == {"table-3/seat-1": 3, "table-3/dealer": 2}, 30, "every report held")
        m = ctls.report()["pools"]["main"]
        # seed 1000 + 0.75 contributed; 1000 won; reseeded: 1000.75, to the cent
        assert (m["exact"]["amount"], m["meters"]["won"], m["meters"]["hits"], m["meters"]["pending"],
                m["meters"]["reseeds"], m["balanced"]) == ("1000.75", "1000", 1, 0, 1, True)
        one_flap(states(sniffer, t["seen"]))
        seat.close()
        table_dealer.close()
    finally:
        sniffer.close()
        ctls.close()


def _publisher(url: str) -> tuple[mqtt.Client, list[int]]:
    """A plain QoS 1 publisher that never sends anything twice (no outbox): whatever the
    broker acknowledged must reach the books without a resend."""
    host, port = url.removeprefix("mqtt://").split(":")
    acked: list[int] = []
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="raw-publisher")
    c.on_publish = lambda client, userdata, mid, rc, props: acked.append(mid)
    c.connect(host, int(port))
    c.loop_start()
    return c, acked


def test_the_database_restarted_under_the_active_controller_it_stops_taking_reports_loses_none_and_resumes(
        own_broker, postgres, tmp_path):
    broker = own_broker           # its retained marks must not reach other tests' units
    ctls, a, b, sniffer = watched_pair(broker, postgres, tmp_path)
    client, acked = _publisher(broker.url)
    try:
        messages, expected = _payloads("table-4", 3, 120)
        half = len(messages) // 2
        for topic, payload in messages[:half]:
            client.publish(topic, payload, qos=1)
        wait_until(lambda: ctls.events() == half, 60, "the first half stored")
        seen, epoch, sessions = len(sniffer.messages), ctls.epoch(), ctls.sessions()
        restarting = threading.Thread(target=postgres.restart)
        restarting.start()
        for topic, payload in messages[half:]:            # during the restart and after it
            client.publish(topic, payload, qos=1)
            time.sleep(0.001)
        restarting.join(120)
        wait_until(lambda: len(acked) == len(messages), 60, "the broker's PUBACKs to the publisher")
        # the active controller stepped down when the database went (the restart ends its
        # session and with it the advisory lock) and one took the lock again: a new epoch.
        # Whether the seats saw ``offline`` in between depends on who won the lock: the one
        # stepping down says it, unless the standby took over the MQTT session first (same
        # client id, so the broker drops the old connection and no will is sent).
        wait_until(lambda: ctls.epoch() > epoch, 60, "a controller active again, in a new epoch")
        wait_until(lambda: states(sniffer, seen)[-1:] == ["online"], 60, "a controller online again")
        wait_until(lambda: ctls.events() == len(messages), 60, "every report stored")
        wait_until(lambda: ctls.confirmed(expected), 30, "every mark moved")
        check_accounting(ctls.report(), expected)
        assert ctls.report()["held"] == {"seat": 0, "dealer": 0}
        assert ctls.active_pid() in (a.pid, b.pid) and a.poll() is None and b.poll() is None
        # the one that stepped down closed its link for good: the session taken from it once at most
        assert ctls.since(sessions)[1] <= 1, ctls.broker.log()[-3000:]
    finally:
        client.disconnect()
        client.loop_stop()
        sniffer.close()
        ctls.close()


def test_a_late_offline_on_the_shared_presence_topic_is_answered_by_the_serving_controller(broker, tmp_path):
    """A controller that steps down after the other took over says ``offline`` on the
    topic both share: the serving one says ``online`` again, so a seat that connects later
    reads ``online`` (retained), not a controller that is gone."""
    from firmware.jackpot.service import JackpotService
    from firmware.link.config import config_from_url
    from tests.link.helpers import controller

    ctl = controller(tmp_path / "j.db")
    svc = JackpotService(ctl, config_from_url(broker.url)).start()
    sniffer = Sniffer(broker.url, "betbox/v1/jackpot/main/#")
    late = None
    try:
        wait_until(lambda: "online" in states(sniffer), 10, "the controller online")
        late, _ = _publisher(broker.url)
        late.publish(STATUS, json.dumps({"schema": 1, "unit": "jackpot/main", "role": "jackpot",
                                         "state": "offline"}), qos=1, retain=True)
        wait_until(lambda: states(sniffer)[-2:] == ["offline", "online"], 10, "online said again")
        fresh = Sniffer(broker.url, STATUS)
        wait_until(lambda: states(fresh), 10, "the retained presence")
        assert states(fresh) == ["online"]
        fresh.close()
    finally:
        if late is not None:
            late.disconnect()
            late.loop_stop()
        sniffer.close()
        svc.stop()
        ctl.close()
