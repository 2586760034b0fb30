"""A fault in checking an input refuses that input and nothing else: the check only reads, so
the unit's state is as before, the refusal names the fault, and the dispatch goes on (before,
any exception but a ValueError from a check ended ``betbox run``'s dispatch loop: one seat's
message could stop the dealer, e.g. a request whose action was an object, fixed in wire.py)."""

from __future__ import annotations

from pathlib import Path

import firmware.runtime.dealer as dealer_module
from firmware.engine.profile import load_profile
from firmware.runtime.bus import Message, up_topic
from firmware.sim import chipset
from firmware.sim.driver import TableDriver
from firmware.sim.table import InProcessTable, TableSpec, seat_spots


def driver(state_dir: Path) -> TableDriver:
    spec = TableSpec("t", load_profile("rws-blackjack"), seed=5, state_dir=state_dir)
    d = TableDriver(InProcessTable(spec, chipset.registry(spec.boxes, len(seat_spots(spec.profile)))), spec.seed)
    d.boot()
    return d


def test_an_input_whose_check_faults_is_refused_naming_the_fault_and_the_table_plays_on(tmp_path, monkeypatch):
    d = driver(tmp_path / "t")
    d.play_round()
    dealer = d.table.dealer
    real = dealer_module.check_up_message

    def faulty(kind, body, sender=None):
        if body.get("action") == "trip":            # a fault no input reaches today, made here
            raise TypeError("unhashable type: 'dict'")
        return real(kind, body, sender)

    monkeypatch.setattr(dealer_module, "check_up_message", faulty)
    before = dealer.checkpoint()
    steps = dealer.journal.last_step
    r = dealer.round_no
    d.table.bus.publish(Message(up_topic("t", 2), "request", "t/seat-2", 5000,
                                {"box": 2, "round": r, "action": "trip"}))
    d.table.settle()
    assert dealer.check_faults == 1 and dealer.rejected == 1
    problem = dealer.rejections[-1]["problem"]
    assert "a fault in betbox" in problem and "TypeError" in problem and "unhashable" in problem
    assert dealer.checkpoint() == before                       # nothing changed
    evidence = [s for s in dealer.journal.steps() if s[0].step > steps]
    assert [s[0].kind for s in evidence] == ["rejected"]       # only the evidence was journalled
    for _ in range(2):                                         # and the table plays on
        d.play_round()
    assert dealer.round_no == r + 2
    d.table.close()
