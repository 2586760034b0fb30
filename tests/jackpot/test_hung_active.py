"""An active controller that hangs inside an open transaction (its fence holds the epoch
row) must not block the standby's takeover for longer than the store's bound on an idle
transaction: PostgreSQL ends the hung session, the standby raises the epoch, and the hung
one, should it wake, is told its store is gone and commits nothing."""

from __future__ import annotations

import threading

import pytest

from firmware.jackpot.pg import PgDatabase, PgTarget
from firmware.jackpot.store import StoreUnavailable
from tests.link.helpers import wait_until

BOUND = 1.0     # seconds an idle transaction may stay open in this test (the default is longer)


def test_a_standby_takes_over_from_an_active_controller_hung_inside_a_transaction(postgres):
    target = PgTarget(postgres.url, postgres.password_file)
    hung = PgDatabase(target, idle_in_transaction=BOUND)
    standby = PgDatabase(target, idle_in_transaction=BOUND)
    try:
        first = hung.become_active("main", "hung")
        hung.execute("BEGIN IMMEDIATE")
        hung.fence("main", first)                  # holds the epoch row; then the process hangs
        taken: list[int] = []
        threading.Thread(target=lambda: taken.append(standby.become_active("main", "standby")),
                         daemon=True).start()
        wait_until(lambda: taken, 30, "the standby's epoch (the hung transaction ended by the server)")
        assert taken == [first + 1]
        with pytest.raises(StoreUnavailable):      # the hung one wakes: its session is gone
            hung.execute("INSERT INTO meta VALUES ('hung', 'x')")
        assert standby.execute("SELECT COUNT(*) FROM meta WHERE key = 'hung'").fetchone()[0] == 0
    finally:
        hung.close()
        standby.close()
