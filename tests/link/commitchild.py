"""A dealer whose reports live in its journal, in its own process, for the kill-point tests
of the merged step transaction (issue #17.5): ``python -m tests.link.commitchild DIR MODE``.
It starts (recovering what DIR holds), then takes one input that raises an alarm (a report)
and sends itself SIGKILL: ``inside`` once the step's records and its report are written and
before the transaction commits, ``after`` once it committed and before the step is acted on,
``none`` not at all."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from firmware.engine.profile import load_profile
from firmware.link.outbox import Outbox
from firmware.link.reporter import DealerReporter
from firmware.runtime.bus import InProcessBus
from firmware.runtime.dealer import DealerUnit
from firmware.runtime.journal import Journal

UNIT = "t/dealer"
REPORTS = "betbox/v1/report/t/dealer"
SHOE_DOWN = {"device": "shoe", "kind": "card_shoe", "state": "down", "reason": "cable"}


class Link:
    """A report link on the dealer's outbox alone (the broker plays no part here)."""

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox

    def report(self, kind, body, key=None, **extra):
        return self.outbox.put(REPORTS, kind, body, key=key, extra=extra)


def open_dealer(state_dir: Path) -> tuple[DealerUnit, Journal, Outbox]:
    """The dealer as ``betbox run`` wires it: its outbox in its journal's file."""
    journal = Journal(state_dir / "journal.db", UNIT, "dealer")
    outbox = Outbox(state_dir / "outbox.db", UNIT, journal=journal)
    dealer = DealerUnit(UNIT, "t", InProcessBus(), journal, load_profile("rws-blackjack"), close_wait=None)
    dealer.recover()
    DealerReporter(dealer, Link(outbox)).sync()
    return dealer, journal, outbox


def main() -> None:
    state_dir, mode = Path(sys.argv[1]), sys.argv[2]
    dealer, journal, outbox = open_dealer(state_dir)
    if mode == "inside":
        report = dealer._report

        def then_kill() -> None:
            report()                                  # the step's report is written ...
            os.kill(os.getpid(), signal.SIGKILL)      # ... and the transaction never commits
        dealer._report = then_kill                    # type: ignore[method-assign]
    elif mode == "after":
        write_step = journal.write_step

        def kill_after(records, *args, **kwargs):
            step = write_step(records, *args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)      # committed, not yet acted on
            return step
        journal.write_step = kill_after               # type: ignore[method-assign]
    dealer.step("device", dict(SHOE_DOWN))
    outbox.close()
    journal.close()


if __name__ == "__main__":
    main()
