"""Fixtures for the whole suite (each area's own are in its conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from firmware.sim.table import InProcessTable
from tests.link.broker import Broker
from tests.tables import booted_table

BROKER_FIXTURES = {"session_broker", "broker", "own_broker"}


@pytest.fixture
def table(tmp_path: Path) -> Iterator[InProcessTable]:
    """A booted in-process table (rws-blackjack, shoe shuffled), its journals in ``tmp_path``."""
    t = booted_table(tmp_path)
    yield t
    t.close()


# -- a real mosquitto on a free loopback port (tests/link/broker.py) --------------------

@pytest.fixture(scope="session")
def session_broker(tmp_path_factory):
    """One mosquitto for the tests that do not kill it (127.0.0.1, a free port)."""
    b = Broker(tmp_path_factory.mktemp("mosquitto")).start()
    yield b
    b.stop()


@pytest.fixture
def broker(session_broker):
    """The shared mosquitto, with the jackpot controller's persistent session of earlier
    tests discarded (it would hand their leftover reports to this test's controller)."""
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="betbox-jackpot-main", clean_session=True)
    c.connect("127.0.0.1", session_broker.port)
    c.disconnect()
    return session_broker


@pytest.fixture
def own_broker(tmp_path):
    """A mosquitto of the test's own, which it may kill and restart."""
    b = Broker(tmp_path / "mosquitto").start()
    yield b
    b.kill()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test on a real broker (a broker fixture, or a module starting its own) is
    ``slow``: ``-m "not slow"`` leaves them out."""
    for item in items:
        module = getattr(item, "module", None)
        if BROKER_FIXTURES & set(getattr(item, "fixturenames", ())) or getattr(module, "Broker", None) is Broker:
            item.add_marker(pytest.mark.slow)


# -- a throwaway PostgreSQL cluster (tests/jackpot/postgres.py) --------------------------

@pytest.fixture(scope="session")
def session_postgres():
    """One throwaway PostgreSQL cluster (initdb/pg_ctl, unprivileged, a free loopback port)."""
    from tests.jackpot.postgres import PgCluster

    pg = PgCluster().start()
    yield pg
    pg.remove()


@pytest.fixture
def postgres(session_postgres):
    """The shared cluster with an empty ``betbox`` database."""
    session_postgres.reset()
    return session_postgres
