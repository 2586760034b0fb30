from __future__ import annotations

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from .broker import Broker


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


@pytest.fixture(scope="session")
def session_postgres():
    """One throwaway PostgreSQL cluster (initdb/pg_ctl, unprivileged, a free loopback port)."""
    from .postgres import PgCluster

    pg = PgCluster().start()
    yield pg
    pg.remove()


@pytest.fixture
def postgres(session_postgres):
    """The shared cluster with an empty ``betbox`` database."""
    session_postgres.reset()
    return session_postgres
