"""Two (or more) ``betbox run`` jackpot controllers on one real PostgreSQL and a real
mosquitto, one active (the advisory lock), the others waiting: the harness of
tests/jackpot/test_hot_standby.py, test_stopped_active.py and tests/floor/test_whole_tables.py;
and a burst of seats' reports to feed them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from firmware.jackpot.controller import report
from firmware.jackpot.database import open_store
from firmware.jackpot.store import StoreUnavailable
from firmware.link import connect_bus, topics
from tests.jackpot.test_jackpot_integration import dealer, send
from tests.link.helpers import Books, Sniffer, seat_script, send_dealer, wait_until

BETBOX = str(Path(sys.executable).with_name("betbox"))
STATUS = topics.jackpot_status_topic("main")
CLIENT_ID = "betbox-jackpot-main"           # the persistent session both controllers share


class Controllers:
    """``betbox run`` jackpot processes sharing one database, and a view of it. ``user`` and
    ``password``: the broker's account for them (the documented broker: the client id is
    the user, the floor's ``jackpot/main``); none: anonymous, the fixed client id."""

    def __init__(self, broker, postgres, tmp_path: Path, *, user: str | None = None,
                 password: str | None = None) -> None:
        self.broker, self.postgres, self.tmp = broker, postgres, tmp_path
        self.user, self.password = user, password
        self.client_id = user or CLIENT_ID
        self.procs: list[subprocess.Popen] = []
        self.db = open_store("unused", postgres.url, postgres.password_file)

    def start(self, name: str, pg_url: str | None = None) -> subprocess.Popen:
        """``pg_url``: the database by another way (a relay), by default the cluster's."""
        account = "" if self.user is None else \
            f'username = "{self.user}"\npassword = "{self.password}"\nallow_insecure = true\n'
        config = self.tmp / f"{name}.toml"
        config.write_text(f'[unit]\nrole = "jackpot"\nid = "main"\nstate_dir = "{self.tmp / name}"\n'
                          f'[link]\nbroker = "{self.broker.url}"\n{account}'
                          f'[store]\nurl = "{pg_url or self.postgres.url}"\n'
                          f'password_file = "{self.postgres.password_file}"\n')
        proc = subprocess.Popen([BETBOX, "run", "--config", str(config), "-v"],
                                stderr=open(self.tmp / f"{name}.log", "w"), stdout=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text()

    def _rows(self, sql: str) -> list:
        """The test's own view survives the database restart (reconnects)."""
        try:
            return self.db.execute(sql).fetchall()
        except StoreUnavailable:
            wait_until(self._reconnect, 60, "the database back")
            return self.db.execute(sql).fetchall()

    def _reconnect(self) -> bool:
        try:
            self.db = open_store("unused", self.postgres.url, self.postgres.password_file)
            return True
        except StoreUnavailable:
            return False

    def active_pid(self) -> int | None:
        rows = self._rows("SELECT holder FROM active WHERE link = 'main'")
        return None if not rows else int(rows[0][0].rsplit(":", 1)[1])

    def epoch(self) -> int:
        rows = self._rows("SELECT epoch FROM active WHERE link = 'main'")
        return int(rows[0][0]) if rows else 0

    def events(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM event")[0][0])

    def marks(self) -> dict[str, int]:
        return dict(self._rows("SELECT unit, contiguous FROM unit"))

    def meter_hits(self) -> list[str]:
        return [s for (s,) in self._rows("SELECT state FROM hit WHERE kind = 'meter' ORDER BY id")]

    def confirmed(self, expected: Books) -> bool:
        marks = self.marks()
        return all(marks.get(u) == n for u, n in expected.events.items())

    def report(self) -> dict:
        return report(self.db)

    def sessions(self) -> tuple[int, int]:
        """How often, by the broker's log so far, a client connected as the controllers'
        shared client id, and how often such a connection took the session from another:
        a log offset (:meth:`since`) for the counts after a point."""
        text = self.broker.log()
        return text.count(f" as {self.client_id} ("), text.count(f"Client {self.client_id} already connected")

    def since(self, mark: tuple[int, int]) -> tuple[int, int]:
        now = self.sessions()
        return now[0] - mark[0], now[1] - mark[1]

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        self.db.close()


def states(sniffer: Sniffer, since: int = 0) -> list[str]:
    """The controller's presence as ``sniffer`` heard it (from message ``since`` on)."""
    return [json.loads(p)["state"] for t, p, _ in sniffer.messages[since:] if t == STATUS]


def one_flap(seen: list[str]) -> None:
    """The seats saw the controller go once (the dead one's will) and come back, and stay:
    any later message says ``online`` (the new one answers a stale ``offline`` by saying so again)."""
    assert seen[:2] == ["offline", "online"] and set(seen[2:]) <= {"online"}, seen


def pair(ctls: Controllers, sniffer: Sniffer | None = None,
         a_pg_url: str | None = None) -> tuple[subprocess.Popen, subprocess.Popen]:
    """Controller a active (online, when ``sniffer`` listens), then b waiting."""
    a = ctls.start("a", a_pg_url)
    wait_until(lambda: ctls.active_pid() == a.pid, 30, "controller a active")
    if sniffer is not None:
        wait_until(lambda: "online" in states(sniffer), 30, "controller a online")
    b = ctls.start("b")
    wait_until(lambda: "standby" in ctls.log("b"), 30, "controller b waiting")
    assert ctls.active_pid() == a.pid
    return a, b


def watched_pair(broker, postgres, tmp_path: Path, a_pg_url: str | None = None,
                 ) -> tuple[Controllers, subprocess.Popen, subprocess.Popen, Sniffer]:
    """:func:`pair` on an anonymous broker, with a sniffer on the controller's topics."""
    ctls = Controllers(broker, postgres, tmp_path)
    sniffer = Sniffer(broker.url, "betbox/v1/jackpot/main/#")
    a, b = pair(ctls, sniffer, a_pg_url)
    return ctls, a, b, sniffer


def takeover(ctls: Controllers, sniffer: Sniffer, victim: subprocess.Popen, heir: subprocess.Popen,
             ) -> dict[str, float]:
    """SIGKILL the active controller; wait for the other to be active and online."""
    seen = len(sniffer.messages)
    killed = time.monotonic()
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(10)
    wait_until(lambda: ctls.active_pid() == heir.pid, 30, "the standby active", step=0.005)
    active = time.monotonic()
    wait_until(lambda: "online" in states(sniffer, seen), 30, "the standby online", step=0.005)
    online = time.monotonic()
    return {"killed": killed, "active_s": active - killed, "online_s": online - killed, "seen": seen}


class Burst:
    """Seats ``boxes`` of ``table`` each sending ``rounds`` rounds of reports (``seat_script``,
    seeds from ``seed``) on a thread of its own, after the dealer's record of them; what the
    books must then show: ``expected``."""

    def __init__(self, url: str, table: str, boxes: range | list[int], rounds: int, seed: int,
                 tmp_path: Path) -> None:
        self.expected = Books()
        scripts = {}
        self.buses = []
        for i, box in enumerate(boxes):
            unit = f"{table}/seat-{box}"
            scripts[box], exp = seat_script(unit, rounds, seed=seed + i, meter_hits=True)
            self.expected.add(exp)
            self.buses.append(connect_bus(url, unit, outbox_path=tmp_path / f"{i}.db"))
        self.dealer = dealer(url, table, tmp_path)
        send_dealer(self.dealer, scripts, self.expected)
        self.threads = [threading.Thread(target=send, args=(bus, bus.unit_id, scripts[box]))
                        for bus, box in zip(self.buses, boxes, strict=True)]
        for th in self.threads:
            th.start()

    def join(self) -> None:
        for th in self.threads:
            th.join()

    def close(self) -> None:
        for bus in [*self.buses, self.dealer]:
            bus.close()
