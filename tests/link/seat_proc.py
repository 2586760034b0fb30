"""A seat as its own process: reports a deterministic script through its durable outbox,
slowly, so a test can SIGKILL it mid-stream and start it again (same outbox)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from firmware.link import connect_bus  # noqa: E402
from tests.link.helpers import seat_script  # noqa: E402


def main() -> None:
    url, unit, outbox, rounds, seed, pause = sys.argv[1:7]
    bus = connect_bus(url, unit, outbox_path=outbox, config={"unit": unit})
    script, _ = seat_script(unit, int(rounds), int(seed))
    table, box = unit.split("/")[0], int(unit.rsplit("-", 1)[1])
    for kind, body, rnd, key in script:
        if bus.report(kind, body, key=key, table=table, box=box, round=rnd) is not None:
            time.sleep(float(pause))
    print("queued", flush=True)
    while not bus.drained():
        time.sleep(0.05)
    print("drained", flush=True)
    time.sleep(3600)     # stay up (the test ends it)


if __name__ == "__main__":
    main()
