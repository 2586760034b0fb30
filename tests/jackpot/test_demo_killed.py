"""The in-process demo table and its in-process controller keep their outboxes in files of
their own (``<state>/<table>/<unit>/outbox.db``, beside each unit's journal, not in it as
``betbox run`` does). A ``betbox demo`` SIGKILLed mid-round and started again on the same
state directory: every report any unit's outbox stored reaches the controller once, and
the controller's books equal, to the cent, the seats' and the dealer's outboxes and what
the seats' journals settled (tests/tables.py ``check_books``)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from firmware.jackpot.config import DEFAULT_POOLS, load_pools
from firmware.jackpot.controller import JackpotController, report
from tests.jackpot.controllers import BETBOX
from tests.link.helpers import wait_until
from tests.tables import audited_outbox, check_books, journal_books, outbox_reports

TABLE, BOXES = "table-1", range(1, 8)
UNITS = [f"{TABLE}/dealer", *(f"{TABLE}/seat-{b}" for b in BOXES)]


def _demo(state: Path, rounds: int, log: Path, kill_at: tuple[str, int] | None = None) -> subprocess.Popen:
    """``betbox demo`` on ``state``; ``kill_at`` (kind, n): in tests/jackpot/demochild.py,
    killed inside the step that made the n-th report of that kind."""
    args = ["--headless", "--state-dir", str(state), "--rounds", str(rounds), "--profile", "rws-blackjack-switch",
            "--seed", "7", "--json"]
    cmd = [BETBOX, "demo", *args] if kill_at is None else \
        [sys.executable, "-m", "tests.jackpot.demochild", kill_at[0], str(kill_at[1]), *args]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(log, "w"))


def _stored(state: Path) -> int:
    """Reports the controller holds (read-only: the demo writes it)."""
    path = state / "jackpot.db"
    if not path.exists():
        return 0
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(db.execute("SELECT COUNT(*) FROM event").fetchone()[0])
    except sqlite3.OperationalError:            # not made yet
        return 0
    finally:
        db.close()


def _books_after_restart(tmp_path: Path, state: Path, paths: dict[str, Path]) -> None:
    """Start the demo again on ``state`` for a few rounds; the books against every outbox
    and journal."""
    stored = sum(len(outbox_reports(p)) for p in paths.values())
    again = _demo(state, 3, tmp_path / "again.log")
    assert again.wait(300) == 0, (tmp_path / "again.log").read_text()[-2000:]
    outboxes = {u: outbox_reports(p) for u, p in paths.items()}
    pool = load_pools(DEFAULT_POOLS)[0]
    ctl = JackpotController(state / "jackpot.db", load_pools(DEFAULT_POOLS))
    try:
        data = report(ctl.db)
    finally:
        ctl.close()
    books = check_books(data, outboxes, journal_books(state / TABLE, BOXES), pool.rate, pool.name)
    assert books.wagers > 0 and stored > 0
    print(f"\nkilled with {stored} reports stored; {sum(len(r) for r in outboxes.values())} after the "
          f"restart, {books.wagers} progressive wagers booked")


@pytest.mark.parametrize("reports", [25, 60])
def test_a_demo_killed_mid_round_and_started_again_brings_every_stored_report_to_the_controller(
        tmp_path, reports):
    state = tmp_path / "state"
    paths = {u: audited_outbox(state / u / "outbox.db", u) for u in UNITS}
    first = _demo(state, 400, tmp_path / "first.log")
    try:
        wait_until(lambda: _stored(state) >= reports or first.poll() is not None, 300, "the demo's reports")
        assert first.poll() is None, (tmp_path / "first.log").read_text()[-2000:]
        os.kill(first.pid, signal.SIGKILL)
    finally:
        if first.poll() is None:
            first.kill()
        first.wait(10)
    _books_after_restart(tmp_path, state, paths)


@pytest.mark.parametrize("kind", ["round_progressive", "progressive_wager", "round_result"])
def test_a_demo_killed_inside_the_step_whose_report_the_controller_took(tmp_path, kind):
    """The outbox and the controller commit before the step's journal transaction does:
    killed between the two, the restarted unit makes that step again from its journal."""
    state = tmp_path / "state"
    paths = {u: audited_outbox(state / u / "outbox.db", u) for u in UNITS}
    first = _demo(state, 400, tmp_path / "first.log", kill_at=(kind, 3))
    assert first.wait(300) == -signal.SIGKILL, (tmp_path / "first.log").read_text()[-2000:]
    _books_after_restart(tmp_path, state, paths)


def _damage(path: Path, table: str) -> None:
    """Garbage over a leaf page of ``table`` (an index: the file still opens)."""
    db = sqlite3.connect(path)
    page = db.execute("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf'", (table,)).fetchone()[0]
    size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    data = bytearray(path.read_bytes())
    data[(page - 1) * size:page * size] = b"\xa5" * size
    path.write_bytes(bytes(data))


def test_a_demo_on_a_damaged_outbox_file_is_refused_naming_it(tmp_path):
    """The demo's (and the in-process controller's) outbox files of their own are checked
    (``PRAGMA quick_check``) at every open: a damaged one stops the demo with the file named,
    as bad input (2), not as a fault in betbox (3), and nothing in it is touched."""
    state = tmp_path / "state"
    assert _demo(state, 2, tmp_path / "first.log").wait(300) == 0, (tmp_path / "first.log").read_text()[-2000:]
    outbox = state / TABLE / "seat-1" / "outbox.db"
    _damage(outbox, "sqlite_autoindex_reported_1")
    damaged = outbox.read_bytes()
    again = _demo(state, 2, tmp_path / "again.log")
    assert again.wait(300) == 2
    said = (tmp_path / "again.log").read_text()
    assert f"{outbox}: the outbox is damaged" in said and "fault in betbox" not in said, said[-2000:]
    assert outbox.read_bytes() == damaged
