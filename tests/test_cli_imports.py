"""`betbox run` on a seat imports its own command, not every other one (#14: each command's
modules stay in a seat's memory for as long as it runs)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
from firmware import cli
try:
    cli.main(sys.argv[1:])        # `run` with no such file: refused before anything starts
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith("firmware.commands."))))
"""


def _commands_imported(*argv: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                         timeout=120, check=True)
    return [m.rsplit(".", 1)[1] for m in json.loads(out.stdout.splitlines()[-1])]


def test_a_named_command_imports_only_its_own_module():
    assert set(_commands_imported("run", "--config", "/nonexistent/seat.toml")) <= {"run", "limits"}


def test_no_command_or_an_unknown_one_still_lists_every_command():
    everything = _commands_imported("--help")
    assert {"run", "edge", "jackpot", "diag", "verify"} <= set(everything)
    assert set(_commands_imported("nosuch")) == set(everything)
    out = subprocess.run([sys.executable, "-m", "firmware", "nosuch"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    assert "invalid choice: 'nosuch'" in out.stderr and "'run'" in out.stderr and "'edge'" in out.stderr


def test_a_seat_reading_its_configuration_does_not_load_the_jackpot_controller():
    probe = ("import sys, firmware.config, firmware.runtime.seat, firmware.link.mqtt; "
             "print(sorted(m for m in sys.modules if m.startswith('firmware.jackpot')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    loaded = set(json.loads(out.stdout.strip().replace("'", '"')))
    assert not loaded & {"firmware.jackpot.controller", "firmware.jackpot.service", "firmware.jackpot.store"}
