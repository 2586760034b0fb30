"""``betbox demo`` in a process of the test's, killed at one point of a step (the kill-point
test of tests/jackpot/test_demo_killed.py): ``python -m tests.jackpot.demochild KIND N ARGS...``
runs ``betbox demo ARGS`` and sends itself SIGKILL right after the in-process controller
took the N-th report of kind KIND: the report is in the unit's outbox and in the
controller's books, and the step that made it (inside its journal transaction) never commits."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from firmware import cli
from firmware.jackpot.local import LocalReportLink


def main() -> int:
    kind, n, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    real = LocalReportLink.report
    seen = [0]

    def report_then_kill(self: LocalReportLink, k: str, body: dict[str, Any], key: str | None = None,
                         **extra: Any) -> int | None:
        seq = real(self, k, body, key, **extra)
        if k == kind and seq is not None:
            seen[0] += 1
            if seen[0] == n:
                os.kill(os.getpid(), signal.SIGKILL)
        return seq

    LocalReportLink.report = report_then_kill       # type: ignore[method-assign]
    return cli.main(["demo", *argv])


if __name__ == "__main__":
    sys.exit(main())
