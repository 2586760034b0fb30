"""A controller's database is a file a technician may hand over damaged, or a lab hostile:
``betbox jackpot report`` (and a controller's start) reads each pool's stored state strictly,
and a wrong field is bad input naming it (exit 2), never an endless number or a fault."""

from __future__ import annotations

import json
import sqlite3

import pytest

from firmware.cli import main
from firmware.jackpot.config import DEFAULT_POOLS, load_pools
from firmware.jackpot.controller import JackpotController
from firmware.jackpot.pools import PoolState, new_pool


@pytest.mark.parametrize("state, named", [
    ({"amount": "1e999999999"}, "'amount': '1e999999999' is not an amount"),
    ({"won": "1e-999999999"}, "'won': '1e-999999999' is not an amount"),
    ({"amount": "abc"}, "'amount': 'abc' is not an amount"),
    ({"amount": 1000.5}, "'amount': 1000.5 is not an amount"),
    ({"hits": "7"}, "'hits': '7' is not int"),
    ({"bogus": 1}, "'bogus': 1 is not a meter field"),
    ([], "a pool's state is list"),
])
def test_a_damaged_pool_state_is_bad_input_naming_the_field(tmp_path, capsys, state, named):
    """"1e999999999" as a stored amount hung the report (Fraction(text) made it exact); a list
    or an unknown field ended as a fault in betbox (exit 3, AttributeError / KeyError)."""
    db_path = tmp_path / "jackpot.db"
    JackpotController(db_path, load_pools(DEFAULT_POOLS)).close()
    db = sqlite3.connect(db_path)
    if isinstance(state, dict):
        state = {**json.loads(db.execute("SELECT state FROM pool").fetchone()[0]), **state}
    db.execute("UPDATE pool SET state = ?", (json.dumps(state),))
    db.commit()
    db.close()
    assert main(["jackpot", "report", "--db", str(db_path)]) == 2
    err = capsys.readouterr().err
    assert named in err and str(db_path) in err and "Traceback" not in err, err


def test_a_stored_state_reads_back_as_it_was_written():
    spec = load_pools(DEFAULT_POOLS)[0]
    state = new_pool(spec)
    assert PoolState.from_json(json.loads(json.dumps(state.to_json()))) == state
