"""The controller's own rows read back (claims' values, bookings' effects, hit rows) from a
database a lab may hand over damaged or hostile: an amount like "1e999999999" is never made
exact (``Fraction`` of it is a number of a billion digits: the controller hung). A running
controller books nothing of it and records an integrity alarm naming the row and field; a
start (and ``betbox jackpot report``) refuses a damaged hit row naming it (exit 2).

Each damaged step runs in a child process with a time limit: a hang fails the test."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from firmware.cli import main
from firmware.jackpot.controller import JackpotController
from tests.jackpot.test_books import FULL_HIT, _ingest_seat
from tests.link.helpers import POOL, dealer_payloads, dealer_records

ROOT = Path(__file__).resolve().parents[2]
ENDLESS = "1e999999999"


def _in_child(code: str, db: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (with ``ctl``, the controller of ``db``, and ``seat``) in a child process."""
    script = ("import sys\nfrom firmware.jackpot.controller import JackpotController\n"
              "from tests.jackpot.test_books import _ingest_seat as seat\n"
              "from tests.link.helpers import POOL, dealer_payloads, dealer_records\n"
              f"ctl = JackpotController({str(db)!r}, [POOL])\n{code}\nctl.close()\n")
    try:
        return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the controller hung on a stored {ENDLESS!r}") from None


def _damage(db: Path, sql: str, *params: object) -> None:
    con = sqlite3.connect(db)
    assert con.execute(sql, params).rowcount > 0
    con.commit()
    con.close()


def _integrity(db: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT reason, detail FROM integrity ORDER BY id").fetchall()
    finally:
        con.close()


def _played(db: Path, round_: int = 1) -> None:
    """Round ``round_``: box 1's wager and 100% hit in the dealer's record."""
    ctl = JackpotController(db, [POOL])
    script = [("progressive_wager", {"amount": "5"}, round_, "w"), ("progressive_hit", FULL_HIT, round_, "h")]
    for topic, payload in dealer_payloads("table-1", dealer_records({1: script})):
        assert ctl.ingest(topic, payload).status == "accepted"
    _ingest_seat(ctl, 2, "progressive_hit", round_, FULL_HIT)       # waits for the seat's wager
    ctl.close()


def test_a_damaged_stored_claim_is_disputed_naming_its_row_and_field_not_booked(tmp_path):
    """Both held claims of a hit say "1e999999999" (so they agree); the seat's wager then
    books, and the hit waiting for it is booked from its stored value: it hung."""
    db = tmp_path / "jackpot.db"
    _played(db)
    hit = json.dumps({**FULL_HIT, "amount": ENDLESS})
    _damage(db, "UPDATE claim SET value = ? WHERE kind = 'progressive_hit'", hit)
    done = _in_child('assert seat(ctl, 1, "progressive_wager", 1, {"amount": "5"}).status == "accepted"', db)
    assert done.returncode == 0, done.stderr
    ((reason, detail),) = _integrity(db)
    assert reason == "damaged_row", detail
    assert "claim row (table-1 round 1 box 1 progressive_hit): amount" in detail and ENDLESS in detail
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM hit").fetchone()[0] == 0
    assert set(con.execute("SELECT state FROM claim WHERE kind = 'progressive_hit'")) == {("disputed",)}
    con.close()


def test_a_hit_row_damaged_while_running_is_not_released_by_a_void_round(tmp_path):
    """The void round's result releases its pending hit by the hit row's amount: read back
    from the database, "1e999999999" hung the booking."""
    db = tmp_path / "jackpot.db"
    _played(db)
    ctl = JackpotController(db, [POOL])
    _ingest_seat(ctl, 1, "progressive_wager", 1, {"amount": "5"})    # the hit locks 1000, pending
    ctl.close()
    void = dealer_payloads("table-1", dealer_records({1: [("round_result", {"void": True, "net": "0"}, 1, "r")]}),
                           first_seq=3)
    done = _in_child(
        f"import sqlite3\ncon = sqlite3.connect({str(db)!r})\n"
        f"con.execute(\"UPDATE hit SET amount = '{ENDLESS}'\")\ncon.commit()\n"
        f"for topic, payload in {void!r}:\n    ctl.ingest(topic, payload)\n"
        'assert seat(ctl, 3, "round_result", 1, {"void": True, "net": "0"}).status == "accepted"', db)
    assert done.returncode == 0, done.stderr
    ((reason, detail),) = _integrity(db)
    assert reason == "damaged_row" and f"hit row 1: amount: '{ENDLESS}'" in detail, detail
    con = sqlite3.connect(db)
    assert con.execute("SELECT state FROM hit").fetchall() == [("pending",)]      # not released
    con.close()


def test_a_damaged_pending_hit_refuses_the_start_and_the_report_naming_it(tmp_path, capsys):
    db = tmp_path / "jackpot.db"
    _played(db)
    ctl = JackpotController(db, [POOL])
    _ingest_seat(ctl, 1, "progressive_wager", 1, {"amount": "5"})
    ctl.close()
    _damage(db, "UPDATE hit SET amount = ?", ENDLESS)
    done = _in_child("", db)
    assert done.returncode != 0 and f"hit row 1: amount: '{ENDLESS}' is not an amount" in done.stderr, done.stderr
    assert "DamagedRow" in done.stderr          # refused by name, not a fault
    code = subprocess.run([sys.executable, "-m", "firmware.cli", "jackpot", "report", "--db", str(db)], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert code.returncode == 2 and f"hit row 1: amount: '{ENDLESS}'" in code.stderr and str(db) in code.stderr, \
        code.stderr
    assert "Traceback" not in code.stderr


def test_legal_stored_amounts_still_book_and_report(tmp_path):
    db = tmp_path / "jackpot.db"
    _played(db)
    ctl = JackpotController(db, [POOL])
    _ingest_seat(ctl, 1, "progressive_wager", 1, {"amount": "5"})
    assert ctl.meter()["pools"]["main"]["pending"][0]["amount"] == "1000.00"
    ctl.close()
    assert main(["jackpot", "report", "--db", str(db)]) == 0
    assert _integrity(db) == []
