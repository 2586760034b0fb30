"""Each input is decoded once on its way through a unit (issue #15 "parse once"):
``check_input`` returns the parsed input (the bus ``Message``, the engine ``Event`` of a
stream event, the ``Round`` a ``round_open`` opens) and ``handle`` applies it. Before, a
seat decoded every message twice (check, handle) and every event twice, and built every
round it was told of twice. Counted live and in a replay of the same journal."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterator

import pytest

import firmware.engine.events as events_module
import firmware.engine.round as engine_round
import firmware.runtime.bus as bus_module
from firmware.engine.profile import load_profile
from firmware.runtime.bus import InProcessBus
from firmware.runtime.journal import JOURNAL_NAME, Journal, open_readonly
from firmware.runtime.seat import SeatUnit
from firmware.sim.driver import TableDriver
from firmware.sim.table import TableSpec


@pytest.fixture()
def decodes(monkeypatch) -> Iterator[Counter]:
    """Counts Message.from_dict, event_from_dict and Round.new wherever they are called."""
    seen: Counter = Counter()
    from_dict = bus_module.Message.from_dict.__func__
    new = engine_round.Round.new.__func__
    event_from_dict = events_module.event_from_dict

    def counting_from_dict(cls, data):
        seen["message"] += 1
        return from_dict(cls, data)

    def counting_new(cls, *args: Any, **kwargs: Any):
        seen["round"] += 1
        return new(cls, *args, **kwargs)

    def counting_event(data):
        seen["event"] += 1
        return event_from_dict(data)

    monkeypatch.setattr(bus_module.Message, "from_dict", classmethod(counting_from_dict))
    monkeypatch.setattr(engine_round.Round, "new", classmethod(counting_new))
    import firmware.runtime.seat as seat_module
    import firmware.runtime.wire as wire_module
    for module in (events_module, seat_module, wire_module):
        if hasattr(module, "event_from_dict"):
            monkeypatch.setattr(module, "event_from_dict", counting_event)
    yield seen


def _seat(path, driver: TableDriver) -> SeatUnit:
    old = driver.table.seats[1]
    return SeatUnit(old.unit_id, old.table, 1, InProcessBus(), Journal(path / JOURNAL_NAME, old.unit_id, "seat"),
                    old.registry, old.spots)


def test_a_seat_decodes_each_message_once_live_and_in_replay(tmp_path, decodes):
    driver = TableDriver.create(TableSpec("once", load_profile("rws-blackjack"), seed=4, state_dir=tmp_path / "t",
                                          boxes=1))
    driver.play_round()
    driver.table.close()
    j = open_readonly(tmp_path / "t" / "seat-1" / JOURNAL_NAME)
    inputs = [(r.kind, r.body) for r in j.records() if r.dir == "in" and r.kind in ("msg", "boot")]
    j.close()
    stream = [body for kind, body in inputs if kind == "msg" and body["topic"].endswith("/stream")]
    events = sum(1 for m in stream if m["kind"] == "event")
    opens = sum(1 for m in stream if m["kind"] == "round_open")
    assert events >= 4 and opens == 1

    seat = _seat(tmp_path / "live", driver)
    decodes.clear()
    for kind, body in inputs:                       # the same inputs, live: checked, then handled
        if kind == "msg":
            assert seat.step(kind, body), body["kind"]
    assert decodes["message"] == len([k for k, _ in inputs if k == "msg"])
    assert decodes["event"] == events
    assert decodes["round"] == opens                # the round a round_open opens, built once
    seat.journal.close()

    again = _seat(tmp_path / "live", driver)
    decodes.clear()
    again.recover()                                 # replay: each journalled input decoded once
    assert decodes["message"] == len([k for k, _ in inputs if k == "msg"])
    assert decodes["event"] == events
    again.journal.close()
