"""A real mosquitto on a free loopback port, configured in a temporary directory."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds the socket listening on 127.0.0.1:``port`` (Linux /proc)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        if f[1] == f"0100007F:{port:04X}" and f[3] == "0A":          # 127.0.0.1, LISTEN
            inodes.add(f"socket:[{f[9]}]")
    try:
        return any(os.readlink(fd) in inodes for fd in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:                 # it exited (or an fd closed while we looked)
        return False


class Broker:
    def __init__(self, directory: Path, *, acl: str | None = None, users: dict[str, str] | None = None,
                 tls: dict[str, Path] | None = None, port: int | None = None,
                 message_size_limit: int = 65536, extra: str = "") -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        lines = [f"listener {self.port} 127.0.0.1", f"user {pwd.getpwuid(os.getuid()).pw_name}",
                 "persistence true", f"persistence_location {self.dir}/",
                 "autosave_interval 30",     # as docs/mqtt/mosquitto.conf: on a time basis
                 "max_queued_messages 0", "max_inflight_messages 64", f"message_size_limit {message_size_limit}",
                 "set_tcp_nodelay true", "log_dest stderr", "log_type error", "log_type warning",
                 "log_type notice"]
        if tls:
            lines += [f"cafile {tls['ca']}", f"certfile {tls['cert']}", f"keyfile {tls['key']}",
                      "require_certificate true"]
        if users is not None:
            pw = self.dir / "passwd"
            pw.write_text("")
            for user, password in users.items():
                subprocess.run(["mosquitto_passwd", "-b", str(pw), user, password], check=True,
                               capture_output=True)
            # as docs/mqtt/mosquitto.conf: the client id is the authenticated user, so nobody
            # takes over another's session (the controller's persistent one above all)
            lines += ["allow_anonymous false", f"password_file {pw}", "use_username_as_clientid true"]
        else:
            lines += ["allow_anonymous true"]
        if acl is not None:
            (self.dir / "acl").write_text(acl)
            lines += [f"acl_file {self.dir}/acl"]
        self.conf = self.dir / "mosquitto.conf"
        # extra: more of mosquitto.conf after the listener's (a table broker's bridge section)
        self.conf.write_text("\n".join(lines) + "\n" + extra)

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def start(self, timeout: float = 10.0) -> "Broker":
        self._log = open(self.dir / "mosquitto.log", "ab")
        self.proc = subprocess.Popen([MOSQUITTO, "-c", str(self.conf)], stdout=subprocess.DEVNULL,
                                     stderr=self._log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mosquitto exited: {self.log()[-2000:]}")
            # its own listening socket, not a connection: another process may hold the port
            # (mosquitto then exits "Address already in use", and a stranger would answer)
            if listens(self.proc.pid, self.port):
                return self
            time.sleep(0.05)
        raise RuntimeError(f"mosquitto did not listen on {self.port} within {timeout}s")

    def kill(self) -> None:
        """SIGKILL: no goodbye, no final save."""
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def log(self) -> str:
        p = self.dir / "mosquitto.log"
        return p.read_text(errors="replace") if p.exists() else ""
