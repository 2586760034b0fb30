"""The jackpot controller as its own process that SIGKILLs itself right after its Nth
batch commit (or its first one after the first with a seat's report), before it
acknowledges the batch (the crash between commit and PUBACK).
Prints the committed batch's reports as ``committed <topic> <seq>`` lines first."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from firmware.jackpot.service import JackpotService  # noqa: E402
from firmware.link import topics  # noqa: E402
from firmware.link.config import config_from_url  # noqa: E402
from tests.link.helpers import controller  # noqa: E402


def main() -> None:
    url, db, batches = sys.argv[1], sys.argv[2], int(sys.argv[3])
    svc = JackpotService(controller(Path(db)), config_from_url(url))
    acknowledge = svc._acknowledge

    def crash_before_acknowledging(batch):
        # the Nth batch, or the first with a seat's report in it after the first (a
        # controller that falls behind may take everything in a few large batches)
        if svc.batches >= batches or (svc.batches > 1 and any("/seat-" in t for t, _, _ in batch)):
            for topic, payload, _ in batch:
                print("committed", topics.unit_from_topic(topic, "report"), json.loads(payload)["seq"], flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        acknowledge(batch)

    svc._acknowledge = crash_before_acknowledging
    svc.start()
    print("up", flush=True)
    time.sleep(3600)


if __name__ == "__main__":
    main()
