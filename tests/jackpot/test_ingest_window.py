"""The controller's in-flight window is its own (#18): the broker's ``max_inflight_messages``
(64, docs/mqtt/mosquitto.conf) capped how many unacknowledged reports the controller held,
so a group commit took at most 64 reports and each batch's round trips and commit were
paid per 64. The controller connects with MQTT 5 and a receive maximum of
:data:`~firmware.jackpot.service.RECEIVE_MAXIMUM` (two batches), which mosquitto honours
per client: a batch fills while the previous one is stored. Still "stored before PUBACK"."""

from __future__ import annotations

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from firmware.jackpot.controller import report
from firmware.jackpot.service import JackpotService
from firmware.link.config import config_from_url
from tests.jackpot.test_postgres_store import _payloads
from tests.link.helpers import controller, wait_until


def test_the_controller_holds_more_reports_than_the_brokers_inflight_window_and_books_each_once(
        own_broker, tmp_path):
    host, port = own_broker.url.removeprefix("mqtt://").split(":")
    messages, expected = _payloads("table-7", 2, 60)
    ctl = controller(tmp_path / "jackpot.db")
    svc = JackpotService(ctl, config_from_url(own_broker.url)).start()
    pub = mqtt.Client(CallbackAPIVersion.VERSION2)
    pub.max_inflight_messages_set(1000)
    pub.connect(host, int(port))
    pub.loop_start()
    try:
        with ctl.lock:                                  # the ingest thread stops at its first batch
            infos = [pub.publish(t, p, qos=1) for t, p in messages]
            for info in infos:
                info.wait_for_publish(30)
            # every report delivered unacknowledged: far more than the broker's 64
            assert len(messages) > 200
            wait_until(lambda: svc._inbox.qsize() >= 200, 30,
                       f"{len(messages)} reports in the controller's hands (the broker allows 64 to others)")
        wait_until(lambda: sum(ctl.marks().values()) >= len(messages), 60, "every report committed")
        data = report(ctl.db)
        for unit, n in expected.events.items():
            assert data["units"][unit]["events"] == n and data["units"][unit]["duplicates"] == 0
        assert svc.batches < len(messages) / 64          # grouped beyond the broker's window
    finally:
        pub.loop_stop()
        pub.disconnect()
        svc.stop()
        ctl.close()
    # the controller's persistent session kept on the broker (MQTT 5: a session expiry)
    again = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="betbox-jackpot-main", protocol=mqtt.MQTTv5)
    present: list[bool] = []
    again.on_connect = lambda c, u, flags, rc, props: present.append(flags.session_present)
    again.connect(host, int(port), clean_start=False)
    again.loop_start()
    wait_until(lambda: present, 10, "the CONNACK")
    again.loop_stop()
    again.disconnect()
    assert present == [True]
