from __future__ import annotations

import pytest

from .broker import Broker


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """One mosquitto for the tests that do not kill it (127.0.0.1, a free port)."""
    b = Broker(tmp_path_factory.mktemp("mosquitto")).start()
    yield b
    b.stop()


@pytest.fixture
def own_broker(tmp_path):
    """A mosquitto of the test's own, which it may kill and restart."""
    b = Broker(tmp_path / "mosquitto").start()
    yield b
    b.kill()
