"""A throwaway PostgreSQL cluster for the tests: Debian's ``postgresql`` package, ``initdb``
and ``pg_ctl`` as an unprivileged user (``postgres`` when the tests run as root), on a free
loopback port, password authentication (scram) with the password in a file."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.link.broker import free_port

PASSWORD = "jackpot-test-password"


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")) or [shutil.which(name) or ""]
    if not found[-1]:
        raise RuntimeError(f"{name}: PostgreSQL is not installed (apt-get install postgresql; scripts/setup test)")
    return found[-1]


class PgCluster:
    def __init__(self) -> None:
        # its own directory straight under the temporary directory: the unprivileged user
        # must reach it (pytest's tmp_path is private to the user running the tests)
        self.root = Path(tempfile.mkdtemp(prefix="betbox-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.password_file = self.root / "pg.pass"
        self.user = "postgres" if os.geteuid() == 0 else None

    @property
    def url(self) -> str:
        return f"postgresql://betbox@127.0.0.1:{self.port}/betbox"

    def _run(self, *cmd: str, timeout: float = 60) -> None:
        argv = list(cmd)
        if self.user is not None:
            argv = ["runuser", "-u", self.user, "--", *argv]
        subprocess.run(argv, check=True, timeout=timeout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start(self) -> "PgCluster":
        self.password_file.write_text(PASSWORD + "\n")
        pwfile = self.root / "initdb.pw"
        pwfile.write_text(PASSWORD + "\n")
        if self.user is not None:
            pw = pwd.getpwnam(self.user)
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            os.chown(pwfile, pw.pw_uid, pw.pw_gid)
        self._run(_bin("initdb"), "-D", str(self.data), "-U", "betbox", "--auth=scram-sha-256",
                  f"--pwfile={pwfile}", "-E", "UTF8", "--no-sync", timeout=120)
        with open(self.data / "postgresql.conf", "a") as f:
            f.write(f"listen_addresses = '127.0.0.1'\nport = {self.port}\nunix_socket_directories = ''\n"
                    "fsync = on\nmax_connections = 40\nshared_buffers = 32MB\n")
        self._pg_ctl("start")
        self._run(_bin("psql"), "-q", f"postgresql://betbox:{PASSWORD}@127.0.0.1:{self.port}/postgres",
                  "-c", "CREATE DATABASE betbox")
        return self

    def _pg_ctl(self, action: str, *extra: str) -> None:
        args = [_bin("pg_ctl"), "-D", str(self.data), "-w", "-t", "60", "-l", str(self.root / "log"), action]
        self._run(*args, *extra, timeout=90)

    def stop(self) -> None:
        self._pg_ctl("stop", "-m", "fast")

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def restart(self) -> None:
        self._pg_ctl("restart", "-m", "fast")

    def reset(self) -> None:
        """An empty database for the next test."""
        self._run(_bin("psql"), "-q", f"postgresql://betbox:{PASSWORD}@127.0.0.1:{self.port}/postgres",
                  "-c", "DROP DATABASE IF EXISTS betbox WITH (FORCE)", "-c", "CREATE DATABASE betbox")
