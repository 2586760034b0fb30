"""The controller's SQLite database across a kill (issue #11.5, as for a unit's journal and
outbox): a controller SIGKILLed leaves its write-ahead log beside the file, and the newest
books are in it. The file copied or restored without it is an older state: the units have
deleted the reports the controller confirmed, so starting from it would lose them (and the
hits they booked) silently. It is refused, naming the file; with its WAL, or closed
cleanly, it opens."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from firmware.jackpot.controller import JackpotController
from firmware.jackpot.store import StoreError
from firmware.link.outbox import Outbox
from tests.link.helpers import POOL

TOPIC = "betbox/v1/unit/t/seat-1/report"

KILLED = """
import json, os, signal, sys
from firmware.jackpot.controller import JackpotController
from tests.link.helpers import POOL
ctl = JackpotController(sys.argv[1], [POOL])
for payload in json.loads(sys.argv[2]):
    assert ctl.ingest(sys.argv[3], payload.encode()).status == "accepted"
os.kill(os.getpid(), signal.SIGKILL)
"""


def reports(tmp_path: Path, n: int) -> list[str]:
    """``n`` reports of a seat, as its outbox writes them."""
    outbox = Outbox(tmp_path / "seat-outbox.db", "t/seat-1")
    for i in range(1, n + 1):
        outbox.put(TOPIC, "alarm", {"alarm": "x", "detail": "d"}, key=f"alarm/{i}",
                   extra={"table": "t", "box": 1, "round": 1})
    payloads = [p.payload for p in outbox.pending()]
    outbox.close()
    return payloads


def killed_after_ingesting(path: Path, payloads: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", KILLED, str(path), json.dumps(payloads), TOPIC],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == -signal.SIGKILL, done.stderr


def test_a_controller_database_whose_wal_was_lost_is_refused(tmp_path):
    path = tmp_path / "jackpot.db"
    killed_after_ingesting(path, reports(tmp_path, 5))
    assert Path(str(path) + "-wal").exists()
    copy = tmp_path / "copy" / "jackpot.db"
    copy.parent.mkdir()
    shutil.copy2(path, copy)                        # the file alone: its newest books left behind
    with pytest.raises(StoreError, match="write-ahead log") as err:
        JackpotController(copy, [POOL])
    assert str(copy) in str(err.value)
    ctl = JackpotController(path, [POOL])           # with its WAL: all five held
    assert ctl.marks() == {"t/seat-1": 5}
    ctl.close()
    assert not Path(str(path) + "-wal").exists()    # closed cleanly: its WAL folded in and gone
    ctl = JackpotController(path, [POOL])
    assert ctl.marks() == {"t/seat-1": 5}
    ctl.close()
    shutil.copy2(path, copy)                        # a copy of a cleanly closed file is whole
    ctl = JackpotController(copy, [POOL])
    assert ctl.marks() == {"t/seat-1": 5}
    ctl.close()
