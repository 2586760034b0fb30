"""The jackpot controller in the same process as the tables (``betbox demo`` without
``--broker``): the seats' reports take the same path as on a broker — the durable outbox,
the same JSON on the wire, :meth:`JackpotController.ingest` — only without the network,
and the controller's meter reaches the units as the same ``("controller", ...)`` input.
Synchronous, so the demo stays deterministic for a seed."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from firmware.link import topics
from firmware.link.outbox import Outbox
from firmware.link.presence import pool_for_table, takes_controller_input

from .controller import JackpotController
from .pools import PoolSpec


class LocalController:
    def __init__(self, db_path: str | Path, pools: Sequence[PoolSpec], link_id: str = "main") -> None:
        self.controller = JackpotController(db_path, pools, link_id)
        self._units: list[tuple[str, Any]] = []            # (table, unit) fed the meter
        self._last: dict[str, dict[str, Any]] = {}
        self.links: list[LocalReportLink] = []

    def link(self, unit_id: str, outbox_path: str | Path) -> "LocalReportLink":
        """The report side of a seat's link (what :class:`~firmware.link.reporter.SeatReporter`
        reports through)."""
        out = LocalReportLink(self, unit_id, Outbox(outbox_path, unit_id))
        self.links.append(out)
        return out

    def feed(self, unit: Any, table: str) -> None:
        """Post the controller's state for ``table`` to ``unit`` now and on every change."""
        if not takes_controller_input(unit):
            return
        self._units.append((table, unit))
        unit.post(("controller", self.state(table)))

    def state(self, table: str) -> dict[str, Any]:
        pool = pool_for_table(self.controller.meter(), table)
        return {"link": "up", "meter": pool["amount"] if pool else None,
                "pending": bool(pool and pool["state"] == "pending")}

    def changed(self) -> None:
        """The change hook: a report moved the meter; post the new state to every unit fed."""
        for table in {t for t, _ in self._units}:
            state = self.state(table)
            if self._last.get(table) != state:
                self._last[table] = state
                for t, unit in self._units:
                    if t == table:
                        unit.post(("controller", dict(state)))

    def close(self) -> None:
        for link in self.links:
            link.outbox.close()
        self.controller.close()


class LocalReportLink:
    """``report()`` like :meth:`firmware.link.mqtt.MqttBus.report`: into the outbox, then
    straight to the controller, then pruned by the controller's mark."""

    def __init__(self, owner: LocalController, unit_id: str, outbox: Outbox) -> None:
        self.owner = owner
        self.unit_id = unit_id
        self.outbox = outbox

    def report(self, kind: str, body: dict[str, Any], key: str | None = None, **extra: Any) -> int | None:
        seq = self.outbox.put(topics.report_topic(self.unit_id), kind, body, key=key, extra=extra)
        changed = False
        for row in self.outbox.pending():
            result = self.owner.controller.ingest(row.topic, row.payload.encode())
            if result.status == "rejected":
                raise RuntimeError(f"{self.unit_id}: the controller rejected report {row.seq}: {result.reason}")
            changed |= result.meter_changed
        mark = self.owner.controller.marks([self.unit_id]).get(self.unit_id, 0)
        self.outbox.confirm_through(min(mark, self.outbox.last_seq))
        if changed:
            self.owner.changed()
        return seq

    def drained(self) -> bool:
        return True
