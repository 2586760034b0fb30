"""The seat's service screen in a real Kivy window (run under Xvfb by test_service_diag.py):
``python -m tests.tech.service_window CONFIG OUT.json`` opens a seat (the unit of CONFIG on
an in-process table) with its live diagnostics, shows the service screen, waits for the
checks to end and writes every label's text to OUT.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(config_path: str, out: str) -> int:
    from firmware.config import load_config
    from firmware.diag import LiveDiag
    from firmware.engine.profile import load_profile
    from firmware.sim import chipset
    from firmware.sim.table import InProcessTable, TableSpec, seat_spots
    from ui.app import build_app
    from ui.feed import SeatFeed

    config = load_config(config_path)
    p = load_profile("rws-blackjack")
    table = InProcessTable(TableSpec("t", p, 0, config.state_dir.parent), chipset.registry(7, len(seat_spots(p))))
    table.boot()
    diag = LiveDiag.of(config, wait=0.5)
    app = build_app(SeatFeed(table.seats[1], diag=diag), size=(800, 480))
    from kivy.clock import Clock

    def labels() -> list[str]:
        return [w.text for w in app.sm.current_screen.walk(restrict=True)
                if isinstance(getattr(w, "text", None), str) and w.text.strip()]

    def poll(_dt) -> None:
        if app.sm.current != "service" or diag.results is None or diag.running \
                or not any(t.startswith("verdict: ") for t in labels()):
            Clock.schedule_once(poll, 0.2)
            return
        Path(out).write_text(json.dumps(labels(), ensure_ascii=False, indent=1))
        app.stop()

    Clock.schedule_once(lambda _dt: app.show("service"), 0.5)
    Clock.schedule_once(poll, 1.0)
    Clock.schedule_once(lambda _dt: app.stop(), 120)           # never hang the suite
    app.run()
    return 0 if Path(out).exists() else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
