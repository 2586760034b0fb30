"""The stalled resend on its own (session 6; before, only a floor test under a bridge's timing
showed it): every report PUBACKed by the broker, the controller online, and nothing confirmed
for ``resend_stalled`` seconds: the unit sends its unconfirmed reports again. Never while its
table's bridge says the floor is away (``0``): duplicates would fill the bridge's queue."""

from __future__ import annotations

import json
import threading
import time

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from firmware.link import connect_bus, topics

from .helpers import wait_until

UNIT = "t1/seat-1"


class Controller:
    """Stands for a controller that is online and takes reports but confirms none."""

    def __init__(self, port: int) -> None:
        self.seen: dict[int, int] = {}
        self._lock = threading.Lock()
        self.c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="stalled-test-controller")
        self.c.on_message = self._on

        self.c.connect("127.0.0.1", port)
        self.c.subscribe(topics.report_topic(UNIT), qos=1)
        self.c.loop_start()

    def _on(self, client, userdata, msg) -> None:
        seq = json.loads(msg.payload)["seq"]
        with self._lock:
            self.seen[seq] = self.seen.get(seq, 0) + 1

    def say(self, topic: str, payload: bytes) -> None:
        self.c.publish(topic, payload, qos=1, retain=True).wait_for_publish(10)

    def close(self) -> None:
        self.c.loop_stop()
        self.c.disconnect()


def run(broker, tmp_path, floor: bytes | None) -> tuple[int, dict[int, int]]:
    ctl = Controller(broker.port)
    if floor is not None:
        ctl.say(topics.bridge_state_topic("t1"), floor)
    ctl.say(topics.jackpot_status_topic("main"), json.dumps({"state": "online"}).encode())
    bus = connect_bus(broker.url, UNIT, outbox_path=tmp_path / "seat.db", allow_insecure=True)
    bus.resend_stalled = 1.0                                         # 60 s as shipped
    try:
        wait_until(lambda: bus._controller_online, 20, "the controller's status")
        for rnd in (1, 2, 3):
            bus.report("round_result", {"void": False, "net": "0"}, key=f"{rnd}/r", table="t1", round=rnd)
        wait_until(lambda: bus.drained() and len(ctl.seen) == 3, 20, "the broker's PUBACKs")
        time.sleep(3.5 * bus.resend_stalled)
        return bus.stalled_resends, dict(ctl.seen)
    finally:
        bus.close()
        ctl.say(topics.jackpot_status_topic("main"), b"")            # retained: cleared for other tests
        if floor is not None:
            ctl.say(topics.bridge_state_topic("t1"), b"")
        ctl.close()


def test_reports_the_online_controller_never_confirms_are_sent_again(broker, tmp_path):
    resends, seen = run(broker, tmp_path, floor=None)
    assert resends >= 1
    assert set(seen) == {1, 2, 3} and min(seen.values()) >= 2


def test_not_sent_again_while_the_bridge_says_the_floor_is_away(broker, tmp_path):
    resends, seen = run(broker, tmp_path, floor=b"0")
    assert resends == 0 and seen == {1: 1, 2: 1, 3: 1}
