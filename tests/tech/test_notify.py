"""Readiness and watchdog over sd_notify: a real datagram socket, a real ``betbox run``."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

from firmware.commands.run import serve
from firmware.runtime.journal import open_readonly
from firmware.runtime.notify import Notifier

from . import configs

ROOT = Path(__file__).resolve().parents[2]


def listen(path: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(str(path))
    s.settimeout(30)
    return s


def seat_config(tmp_path: Path) -> Path:
    return configs.seat_config(tmp_path)


def test_betbox_run_says_ready_after_recovery_pets_the_watchdog_and_says_stopping(tmp_path):
    sock = listen(tmp_path / "notify")
    env = dict(os.environ, NOTIFY_SOCKET=str(tmp_path / "notify"), WATCHDOG_USEC="400000")
    proc = subprocess.Popen([sys.executable, "-m", "firmware", "run", "--config", str(seat_config(tmp_path))],
                            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        first = sock.recv(4096).decode().split("\n")
        assert first[0] == "READY=1" and "journal steps replayed" in first[1], first
        # READY came after recovery: the journal already holds the seat's boot step
        j = open_readonly(tmp_path / "state" / "journal.db")
        try:
            assert any(r.dir == "in" and r.kind == "boot" for r in j.records())
        finally:
            j.close()
        pets = [sock.recv(4096).decode() for _ in range(3)]
        assert pets == ["WATCHDOG=1"] * 3
        proc.send_signal(signal.SIGTERM)
        rest = []
        while "STOPPING=1" not in "".join(rest):
            rest.append(sock.recv(4096).decode())
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        sock.close()


class StuckUnit:
    """A unit whose next input blocks until released: a stuck dispatch loop."""

    close_wait = None

    def __init__(self) -> None:
        self.inbox: queue.Queue = queue.Queue()
        self.release = threading.Event()
        self.stuck = threading.Event()

    def translate(self, item):
        self.stuck.set()
        self.release.wait(30)
        return []


def test_a_stuck_loop_stops_petting_and_a_freed_one_pets_again(tmp_path):
    sock = listen(tmp_path / "notify")
    sock.settimeout(0.2)
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "notify"), "WATCHDOG_USEC": "200000"})
    unit = StuckUnit()
    stop = threading.Event()
    t = threading.Thread(target=serve, args=(unit, stop.is_set), kwargs={"pet": notifier.pet}, daemon=True)
    t.start()
    try:
        assert sock.recv(64) == b"WATCHDOG=1"
        unit.inbox.put("an input that hangs the loop")
        assert unit.stuck.wait(10)

        def drain() -> list[bytes]:
            got = []
            try:
                while True:
                    got.append(sock.recv(64))
            except socket.timeout:
                return got
        drain()                                   # what was sent before the loop got stuck
        assert drain() == [] and drain() == []    # 0.4 s, two watchdog intervals: no pet
        unit.release.set()
        sock.settimeout(10)
        assert sock.recv(64) == b"WATCHDOG=1"
    finally:
        unit.release.set()
        stop.set()
        t.join(10)
        sock.close()
        notifier.close()


def test_an_abstract_socket_and_no_socket():
    name = f"betbox-test-{os.getpid()}"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind("\0" + name)
    s.settimeout(10)
    try:
        n = Notifier({"NOTIFY_SOCKET": "@" + name})
        n.ready("up")
        assert s.recv(64) == b"READY=1\nSTATUS=up"
        n.pet()                                   # no WATCHDOG_USEC: no watchdog
        n.close()
    finally:
        s.close()
    quiet = Notifier({})
    assert not quiet.enabled and quiet.send("READY=1") is False
    assert Notifier({"WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"}).watchdog_interval is None
