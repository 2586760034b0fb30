"""``betbox health --config FILE``: the health check after an update, before RAUC marks it good.

Starts the unit as ``betbox run`` does, from this release, and waits for its systemd
readiness message (``READY=1`` over a private ``NOTIFY_SOCKET``): the unit started and its
journal recovered (READY comes only after recovery) and, with ``[link]``, the broker is
connected. Then it stops the unit (SIGTERM: reports stay in the outbox). Exit 0: healthy,
1: not (why is printed). On a unit, ``betbox-health.service`` runs it on the first boot of a
new version and then calls ``rauc status mark-good`` or ``mark-bad`` (docs/technician.md).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from firmware.config import ConfigError, load_config


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("health", help="start the unit once and report whether it gets ready (after an update)")
    p.add_argument("--config", required=True, help="the unit's configuration")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the unit to be ready (default 60)")
    p.set_defaults(func=run)


def check(config_path: str, timeout: float) -> tuple[bool, str]:
    config = load_config(config_path)
    with tempfile.TemporaryDirectory(prefix="betbox-health-") as tmp:
        address = str(Path(tmp) / "notify")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(address)
        env = dict(os.environ, NOTIFY_SOCKET=address)
        env.pop("WATCHDOG_USEC", None)
        # from "/": the release this command runs from, never a checkout in the working directory
        # from "/": the release this command runs from, never a checkout in the working directory
        proc = subprocess.Popen([sys.executable, "-m", "firmware", "run", "--config", str(Path(config_path).resolve())],
                                cwd="/", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        status = ""
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and proc.poll() is None:
                sock.settimeout(max(0.1, min(1.0, deadline - time.monotonic())))
                try:
                    lines = sock.recv(4096).decode(errors="replace").split("\n")
                except socket.timeout:
                    continue
                if "READY=1" in lines:
                    status = next((x[7:] for x in lines if x.startswith("STATUS=")), "")
                    break
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                _, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            sock.close()
    if not status:
        last = (err or "").strip().splitlines()[-1:] or ["no message"]
        return False, f"not ready within {timeout:g} s (exit status {proc.returncode}): {last[0]}"
    if config.link is not None and "broker connected" not in status:
        return False, f"ready, but the link did not connect: {status}"
    return True, status


def run(args: argparse.Namespace) -> int:
    try:
        ok, detail = check(args.config, args.timeout)
    except ConfigError as exc:
        print(f"betbox health: {exc}", file=sys.stderr)
        return 2
    print(f"betbox health: {'healthy' if ok else 'NOT healthy'}: {detail}")
    return 0 if ok else 1
