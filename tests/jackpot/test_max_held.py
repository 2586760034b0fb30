"""The most claims a seat may hold waiting for the dealer's record is the controller's
configuration key ``[jackpot] max_held`` (default 2000): bounded, a bad value refused naming
the key, and a low configured limit is what refuses the seat's next claim."""

from __future__ import annotations

import json

import pytest

from firmware.config import load_jackpot_config
from firmware.jackpot.config import JackpotConfigError
from firmware.jackpot.controller import MAX_HELD, report
from firmware.jackpot.service import configured_controller


def config(tmp_path, **jackpot):
    return load_jackpot_config({
        "unit": {"role": "jackpot", "id": "main", "state_dir": str(tmp_path)}, "link": {"broker": "mqtt://h:1"},
        "jackpot": {"db": str(tmp_path / "jackpot.db"), **jackpot}}, source="jackpot.toml")


def wager(ctl, seq: int, box: int = 1):
    unit = f"table-1/seat-{box}"
    return ctl.ingest(f"betbox/v1/unit/{unit}/report", json.dumps(
        {"schema": 1, "id": f"seat-{box}-{seq:06d}", "unit": unit, "table": "table-1", "box": box, "seq": seq,
         "kind": "progressive_wager", "round": 1000 + seq, "body": {"amount": "5"}}).encode()).status


def test_a_low_configured_limit_is_what_refuses_a_seats_claims(tmp_path):
    cfg = config(tmp_path, max_held=3)
    assert cfg.max_held == 3 and cfg.raw["jackpot"]["max_held"] == 3
    ctl = configured_controller(cfg, cfg.db)
    assert [wager(ctl, n) for n in (1, 2, 3, 4)] == ["accepted"] * 3 + ["rejected"]
    assert report(ctl.db)["rejected"]["by_reason"] == {"hold_full": 1}
    assert wager(ctl, 1, box=2) == "accepted"                # the limit is per seat
    ctl.close()


def test_without_the_key_the_limit_is_the_default(tmp_path):
    cfg = config(tmp_path)
    assert cfg.max_held == MAX_HELD == 2000 and "max_held" not in cfg.raw["jackpot"]
    ctl = configured_controller(cfg, cfg.db)
    assert [wager(ctl, n) for n in (1, 2, 3, 4)] == ["accepted"] * 4
    ctl.close()


@pytest.mark.parametrize("value", [0, -5, 10 ** 9, "2000", 2.5, True])
def test_a_bad_limit_is_refused_naming_the_key(tmp_path, value):
    with pytest.raises(JackpotConfigError, match=r"jackpot.toml: \[jackpot\] max_held: "):
        config(tmp_path, max_held=value)
