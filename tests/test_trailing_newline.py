"""An identifier, code or amount read off the wire or a configuration is the pattern and
nothing else: Python's ``$`` also matches before a final newline, so ``"table-1/seat-1\\n"``,
a report id or a bet name with a newline, a meter amount ``"5\\n"`` or a challenge's seed
passed checks written with ``re.match(r"^...$")`` (the controller's session found it for
amounts, tests/jackpot/test_wire_amounts.py; these are the rest)."""

from __future__ import annotations

import json

import pytest

from firmware.jackpot.wire import ReportRejected, parse_report
from firmware.link import topics
from firmware.link.challenge import parse_challenge
from firmware.link.presence import meter_problem

TOPIC = "betbox/v1/unit/t1/seat-1/report"


def _report(**over) -> bytes:
    data = {"schema": 1, "id": "abcdefgh-1", "unit": "t1/seat-1", "table": "t1", "box": 1, "seq": 1,
            "kind": "progressive_wager", "round": 1, "body": {"amount": "5"}}
    data.update(over)
    return json.dumps(data).encode()


def test_the_report_itself_is_taken():
    assert parse_report(TOPIC, _report()).id == "abcdefgh-1"


@pytest.mark.parametrize("payload", [
    _report(id="abcdefgh-1\n"),
    _report(kind="progressive_hit", body={"category": "royal\n", "award": None, "meter_share": "1", "amount": "10"}),
    _report(kind="alarm", body={"alarm": "tilt\n", "detail": "x"}),
])
def test_a_report_field_with_a_trailing_newline_is_refused(payload):
    with pytest.raises(ReportRejected):
        parse_report(TOPIC, payload)


def test_unit_and_link_ids_with_a_trailing_newline_are_refused():
    assert topics.check_unit_id("table-1/seat-1") == "table-1/seat-1"
    with pytest.raises(ValueError):
        topics.check_unit_id("table-1/seat-1\n")
    with pytest.raises(ValueError):
        topics.check_link_id("main\n")


def test_a_meter_amount_with_a_trailing_newline_is_refused():
    meter = {"pools": {"main": {"tables": ["*"], "amount": "5.00", "maximum": "100.00"}}}
    assert meter_problem(meter, "table-1") is None
    meter["pools"]["main"]["amount"] = "5.00\n"
    assert meter_problem(meter, "table-1") is not None


def test_a_challenge_with_a_trailing_newline_is_refused():
    assert parse_challenge(b'{"tx": "t1", "seed": "00112233445566778899"}')[0] == "t1"
    for body in (b'{"tx": "t1\\n", "seed": "00112233445566778899"}', b'{"tx": "t1", "seed": "00112233445566778899\\n"}'):
        with pytest.raises(ValueError):
            parse_challenge(body)
