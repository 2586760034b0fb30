"""A simulated RFID reader: antennas under named spots, inventory cycles on demand or
on a timer."""

from __future__ import annotations

import threading
from typing import Callable, Sequence

from hal.events import normalise_uid
from hal.protocol import rfid as proto
from hal.sim.device import SimulatedDevice
from hal.sim.transport import Transport


class RfidSimulator(SimulatedDevice):
    device_id = "betbox-sim-rfid"

    def __init__(self, transport: Transport, spots: Sequence[str], *,
                 period: float | None = None, heartbeat: float | None = 0.5,
                 seed: int = 0) -> None:
        super().__init__(transport, heartbeat=heartbeat, seed=seed)
        self.spots = tuple(spots)
        self.period = period
        self.cycle_number = 0
        self._tags: list[set[bytes]] = [set() for _ in self.spots]
        self._cycle_lock = threading.Lock()

    def start(self) -> "RfidSimulator":
        super().start()
        if self.period:
            self._spawn(self._auto, "sim-inventory")
        return self

    def place(self, spot: str, *uids: str) -> None:
        with self._cycle_lock:
            self._tags[self._antenna(spot)].update(bytes.fromhex(normalise_uid(u))
                                                   for u in uids)

    def remove(self, spot: str, *uids: str) -> None:
        with self._cycle_lock:
            tags = self._tags[self._antenna(spot)]
            if uids:
                tags.difference_update(bytes.fromhex(normalise_uid(u)) for u in uids)
            else:
                tags.clear()

    def cycle(self, n: int = 1) -> None:
        """Run ``n`` inventory cycles: TAGS for every antenna, then CYCLE_END."""
        for _ in range(n):
            with self._cycle_lock:
                self.cycle_number = (self.cycle_number + 1) & 0xFFFF
                messages = [m for antenna, tags in enumerate(self._tags)
                            for m in proto.split_tags(self.cycle_number, antenna, tags)]
            for message in messages:
                self.send(*proto.encode(message))
            self.send(*proto.encode(proto.CycleEnd(self.cycle_number, len(messages))))

    def fault(self, where: str, code: str) -> None:
        antenna = proto.READER_ITSELF if where == "reader" else self._antenna(where)
        if code not in proto.FAULT_CODE_OF:
            raise ValueError(f"unknown fault {code!r} (known: {', '.join(proto.FAULT_CODE_OF)})")
        self.send(*proto.encode(proto.Fault(antenna, code)))

    def heartbeat_payload(self) -> bytes:
        return proto.Heartbeat(self.cycle_number).payload()

    def script_commands(self) -> dict[str, Callable[..., None]]:
        return super().script_commands() | {
            "place": self.place, "remove": self.remove,
            "cycle": lambda n="1": self.cycle(int(n)), "fault": self.fault,
        }

    def _antenna(self, spot: str) -> int:
        try:
            return self.spots.index(spot)
        except ValueError:
            raise ValueError(f"unknown spot {spot!r} (configured: {', '.join(self.spots)})") \
                from None

    def _auto(self) -> None:
        while not self._stop.wait(self.period):
            self.cycle()
