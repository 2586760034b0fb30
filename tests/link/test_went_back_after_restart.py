"""A unit restarted (its process has handed nothing to paho yet) hears an older retained
mark (a broker restarted from its 30 s autosave), then the controller's own mark, which
covers what the unit had confirmed before. That mark is not beyond what this unit sent:
the reports up to the old mark were confirmed once. Taken only through the lower mark, the
range no longer kept stayed recorded and was alarmed as lost to a controller that holds it."""

from __future__ import annotations

import json

from firmware.link.config import config_from_url
from firmware.link.mqtt import MqttBus
from firmware.link.outbox import Outbox

UNIT = "table-1/seat-1"


def mark(through: int) -> bytes:
    return json.dumps({"schema": 1, "unit": UNIT, "through_seq": through}).encode()


def test_the_controllers_own_mark_after_an_older_retained_one_clears_the_lost_range(tmp_path):
    # kept nothing (confirmed by firmware before the kept table): nothing goes again, so the
    # controller has no new report to publish its mark again for
    outbox = Outbox(tmp_path / "outbox.db", UNIT, keep_confirmed=0)
    try:
        for n in range(1, 7):
            outbox.put("t", "progressive_wager", {"amount": "5"}, key=f"{n}/w")
        outbox.mark_acked_many(list(range(1, 7)))
        outbox.confirm_through(6)
        bus = MqttBus(config_from_url("mqtt://127.0.0.1:1"), UNIT, outbox=outbox)   # (restarted: no sender)
        bus._on_confirmed(mark(2))                           # the broker's older retained mark
        assert outbox.went_back is not None and outbox.confirmed == 2
        bus._on_confirmed(mark(6))                           # the controller's own
        assert outbox.went_back is None
        assert outbox.confirmed == 6 and outbox.pending() == []
    finally:
        outbox.close()
