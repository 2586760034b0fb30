"""Rigs: one way to drive each port on each backend, so one contract suite runs on all.

A rig owns the port under test, the queue its events land in, and the means to make the
hardware (mock, simulator on a pty, gpiozero MockFactory pins) do something.
"""

from __future__ import annotations

import queue
import time
from typing import Any, Iterator

import pytest

from hal import open_backend
from hal.events import HalEvent
from hal.sim.shoe import ShoeSimulator
from hal.sim.transport import PtyTransport

TIMEOUT = 10.0  # generous: pty I/O on a loaded CI machine


class Events:
    """The sink the rigs hand to ``port.start`` and bounded waits on it."""

    def __init__(self) -> None:
        self.queue: queue.SimpleQueue[HalEvent] = queue.SimpleQueue()

    def put(self, event: HalEvent) -> None:
        self.queue.put(event)

    def next(self, kind: type | tuple[type, ...] = HalEvent, timeout: float = TIMEOUT,
             where: Any = None) -> Any:
        """The next event of ``kind`` matching ``where``; others are skipped."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {kind} event within {timeout} s")
            try:
                event = self.queue.get(timeout=left)
            except queue.Empty:
                continue
            if isinstance(event, kind) and (where is None or where(event)):
                return event

    def drain(self, settle: float = 0.0) -> list[HalEvent]:
        if settle:
            time.sleep(settle)
        out = []
        while True:
            try:
                out.append(self.queue.get_nowait())
            except queue.Empty:
                return out


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def mock_factory() -> Iterator[Any]:
    from gpiozero.pins.mock import MockFactory

    factory = MockFactory()
    yield factory
    factory.reset()


@pytest.fixture
def quiet_shoe() -> Iterator[ShoeSimulator]:
    """hal/sim's shoe on a pseudo-terminal that sends a heartbeat only when a test does."""
    sim = ShoeSimulator(PtyTransport(), heartbeat=None, seed=7).start()
    yield sim
    sim.close()


@pytest.fixture
def shoe_port(quiet_shoe: ShoeSimulator, events: Events) -> Iterator[Any]:
    """The serial card-shoe port on :func:`quiet_shoe`, started into ``events``, the host seen."""
    shoe = open_backend("card_shoe", "serial", {"port": quiet_shoe.transport.path})
    shoe.start(events.put)
    try:
        assert quiet_shoe.wait_for_host()
        yield shoe
    finally:
        shoe.close()
