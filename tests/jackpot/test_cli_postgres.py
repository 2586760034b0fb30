"""``betbox jackpot serve`` and ``report`` on the PostgreSQL store (``--store-url``): a real
controller process on a real mosquitto and the throwaway PostgreSQL cluster; the report
read back from the database equals what the units sent, to the cent."""

from __future__ import annotations

import json
import subprocess
import sys

from firmware.link import connect_bus
from firmware.link.presence import ControllerWatch
from tests.jackpot.test_jackpot_integration import ROOT, dealer, send
from tests.link.helpers import check_accounting, seat_script, send_dealer, wait_until


def _betbox(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "firmware", "jackpot", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, **kw)


def test_the_jackpot_command_line_serves_and_reports_on_postgresql(broker, postgres, tmp_path):
    store = ["--store-url", postgres.url, "--store-password-file", str(postgres.password_file)]
    proc = subprocess.Popen([sys.executable, "-m", "firmware", "jackpot", "serve", "--broker", broker.url,
                             "--link", "pgcli", *store], cwd=tmp_path)
    unit = "table-3/seat-2"
    try:
        seat = connect_bus(broker.url, unit, outbox_path=tmp_path / "s.db", link_id="pgcli")
        watch = ControllerWatch(seat, "pgcli")
        wait_until(lambda: watch.available, 30, "the served controller online")
        script, expected = seat_script(unit, 30, seed=12)
        send(seat, unit, script)
        table_dealer = dealer(broker.url, "table-3", tmp_path, link_id="pgcli")
        n = send_dealer(table_dealer, {2: script}, expected)
        wait_until(lambda: seat.outbox.stats()["confirmed"] == len(script), 30, "the served controller's mark")
        wait_until(lambda: table_dealer.outbox.stats()["confirmed"] == n, 30, "the mark for the dealer's records")
        seat.close()
        table_dealer.close()
    finally:
        proc.terminate()
        assert proc.wait(20) == 0
    assert not (tmp_path / "jackpot.db").exists()           # nothing went to SQLite
    out = _betbox("report", *store, "--json", check=True)
    data = json.loads(out.stdout)
    check_accounting(data, expected)
    assert data["units"][unit]["events"] == len(script)
    text = _betbox("report", *store, check=True).stdout
    assert f"{unit}: {len(script)} events, highest seq {len(script)}" in text


def test_the_store_options_are_checked_before_anything_is_opened(tmp_path):
    both = _betbox("report", "--db", str(tmp_path / "j.db"), "--store-url", "postgresql://u@127.0.0.1:1/b")
    assert both.returncode == 2 and "one of them" in both.stderr
    neither = _betbox("serve", "--broker", "mqtt://127.0.0.1:1")
    assert neither.returncode == 2 and "--store-url" in neither.stderr
    secret = _betbox("report", "--store-url", "postgresql://u:hunter2@127.0.0.1:1/b")
    assert secret.returncode == 2 and "password_file" in secret.stderr and "hunter2" not in secret.stderr
