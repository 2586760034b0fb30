"""A floor on loopback: one floor broker and a broker per table bridged to it (the
configuration ``firmware.link.bridge`` writes), the documented ACLs and per-user passwords
on both; a TCP relay that a test can cut to take one table's bridge down."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

from firmware.jackpot.service import JackpotService
from firmware.link import connect_bus
from firmware.link.bridge import (
    Bridge,
    bridge_user,
    render_bridge,
    render_floor_acl,
    render_table_acl,
)
from firmware.link.config import load_link_config
from firmware.link.mqtt import MqttBus
from firmware.runtime.bus import ROOT
from tests.link.broker import Broker, free_port

CONTROLLER = {"jackpot/main": "pw-jackpot", "attendant": "pw-attendant", "pit": "pw-pit"}
# a test's or the bench's own client at the floor broker: reads everything, writes nothing
OBSERVER = ("observer", "pw-observer")


def unit_password(unit: str) -> str:
    return "pw-" + unit.replace("/", "-")


class Relay:
    """A TCP relay 127.0.0.1:port -> target: ``cut()`` drops every connection and refuses
    new ones (a floor switch gone), ``hold()`` forwards nothing more, ``restore()`` lets
    them through again."""

    def __init__(self, target: int, idle_timeout: float | None = None) -> None:
        """``idle_timeout``: a connection whose target sends nothing for that long is dropped;
        None (the default): never, as a real link (a 2 s default once hid that a bridge
        reconnecting again and again was what made the units send again)."""
        self.target = target
        self.idle_timeout = idle_timeout
        self.port = free_port()
        self._open = threading.Event()
        self._open.set()
        self._flowing = threading.Event()       # cleared by hold(): bytes wait, connections stay
        self._flowing.set()
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._server.settimeout(0.2)
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self._server.accept()
            except (TimeoutError, OSError):
                continue
            if not self._open.is_set():
                conn.close()
                continue
            try:
                up = socket.create_connection(("127.0.0.1", self.target), timeout=2)
                up.settimeout(self.idle_timeout)
            except OSError:
                conn.close()
                continue
            with self._lock:
                self._socks += [conn, up]
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                if not self._open.is_set():
                    break
                self._flowing.wait()
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def cut(self) -> None:
        self._open.clear()
        with self._lock:
            socks, self._socks = self._socks, []
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def restore(self) -> None:
        self._open.set()
        self._flowing.set()

    def hold(self) -> None:
        """Forward nothing, close nothing (a network that drops packets): a peer waiting for
        an answer waits, and no error comes. ``restore()`` delivers what was held."""
        self._flowing.clear()

    def close(self) -> None:
        self._stop = True
        self._flowing.set()
        self.cut()
        self._server.close()


class Floor:
    """``tables``: table id -> boxes. ``relay``: tables whose bridge goes through a Relay."""

    def __init__(self, root: Path, tables: dict[str, int], relay: tuple[str, ...] = (),
                 table_queue: int = 0, relay_idle: float | None = None) -> None:
        """``table_queue``: the table brokers' ``max_queued_messages`` (0: unbounded).
        ``relay_idle``: the relays' idle timeout (None: a link that never drops by itself)."""
        self.root = root
        self.boxes = dict(tables)
        users = {**CONTROLLER, **{bridge_user(t): unit_password(bridge_user(t)) for t in tables},
                 OBSERVER[0]: OBSERVER[1]}
        self.floor = Broker(root / "floor", users=users, acl=render_floor_acl(tables)
                            + f"\nuser {OBSERVER[0]}\ntopic read {ROOT}/#\n")
        self.relays = {t: Relay(self.floor.port, relay_idle) for t in relay}
        self.table_queue = table_queue
        self.tables: dict[str, Broker] = {t: self._table_broker(t) for t in tables}

    def _table_broker(self, table: str, port: int | None = None) -> Broker:
        floor = self.relays[table].port if table in self.relays else self.floor.port
        bridge = Bridge(table, f"127.0.0.1:{floor}", unit_password(bridge_user(table)), restart=(1, 2),
                        keepalive=5)
        # "observer": a test's own client, so it never takes over a unit's client id
        units = {**{u: unit_password(u) for u in self.units(table)}, "observer": unit_password("observer")}
        return Broker(self.root / table, acl=render_table_acl(table, self.boxes[table]), users=units, port=port,
                      extra=f"max_queued_messages {self.table_queue}\n" + render_bridge(bridge))

    def units(self, table: str) -> list[str]:
        return [f"{table}/dealer", *(f"{table}/seat-{b}" for b in range(1, self.boxes[table] + 1))]

    def start(self) -> "Floor":
        self.floor.start()
        for table in self.tables:
            for tries in range(3):
                try:
                    self.tables[table].start()
                    break
                except RuntimeError as exc:
                    # its port, free when picked, taken since by another process: nobody
                    # knows a table broker's port before it starts, so it takes another
                    if "Address already in use" not in str(exc) or tries == 2:
                        raise
                    self.tables[table] = self._table_broker(table, free_port())
        return self

    def stop(self) -> None:
        for relay in self.relays.values():
            relay.close()
        for b in [*self.tables.values(), self.floor]:
            b.stop()

    def controller_link(self):
        return load_link_config({"broker": self.floor.url, "username": "jackpot/main",
                                 "password": CONTROLLER["jackpot/main"], "allow_insecure": True})

    def service(self, ctl) -> JackpotService:
        return JackpotService(ctl, self.controller_link()).start()

    def bus(self, unit: str, outbox: Path | None = None, **kw) -> MqttBus:
        """A unit's link to its own table's broker, as itself."""
        table = unit.split("/")[0]
        role = "dealer" if unit.endswith("/dealer") else "seat"
        return connect_bus(self.tables[table].url, unit, outbox_path=outbox, username=unit,
                           password=unit_password(unit), allow_insecure=True, role=role, **kw)
