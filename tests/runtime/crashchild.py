"""A table in its own process, for the recovery tests: ``python -m tests.runtime.crashchild
DIR PROFILE ROUNDS [KILL_AT before|after]``. With KILL_AT it sends itself SIGKILL around its
KILL_AT-th journal write (before the transaction, or after it and before acting on it)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from firmware.engine.profile import load_profile
from firmware.runtime import journal as journal_mod
from firmware.sim.driver import TableDriver
from firmware.sim.table import TableSpec


def main() -> None:
    state_dir, profile, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    if len(sys.argv) > 4:
        kill_at, mode = int(sys.argv[4]), sys.argv[5]
        original = journal_mod.Journal.write_step
        count = {"n": 0}

        def write_step(self, records, *args, **kwargs):
            count["n"] += 1
            if count["n"] == kill_at and mode == "before":
                os.kill(os.getpid(), signal.SIGKILL)
            step = original(self, records, *args, **kwargs)
            if count["n"] == kill_at and mode == "after":
                os.kill(os.getpid(), signal.SIGKILL)
            return step

        journal_mod.Journal.write_step = write_step
    driver = TableDriver.create(TableSpec("t", load_profile(profile), seed=7, state_dir=state_dir))
    while driver.table.dealer.round_no < rounds or driver.table.dealer.phase != "idle":
        driver.play_round()
        print(driver.table.dealer.round_no, flush=True)
    driver.table.close()


if __name__ == "__main__":
    main()
