"""Amounts on the wire are exact decimals and nothing else: the controller's reader checks
them as text (wire._checked_amount, no Fraction on the hot path) and must refuse what the
Fraction-based check refused, and text that is not a plain decimal at all."""

from __future__ import annotations

import json

import pytest

from firmware.jackpot.wire import ReportRejected, parse_report

TOPIC = "betbox/v1/unit/t1/seat-1/report"


def _report(kind: str, body: dict) -> bytes:
    return json.dumps({"schema": 1, "id": "abcdefgh-1", "unit": "t1/seat-1", "table": "t1", "box": 1, "seq": 1,
                       "kind": kind, "round": 1, "body": body}).encode()


def _hit(share: str) -> dict:
    return {"category": "x", "award": None, "meter_share": share, "amount": "10"}


@pytest.mark.parametrize("payload", [
    _report("progressive_wager", {"amount": "0"}),
    _report("progressive_wager", {"amount": "0.00"}),
    _report("progressive_wager", {"amount": "-5"}),
    # a trailing newline: ``$`` matches before it, and Fraction() read "0\n" as 0
    _report("progressive_wager", {"amount": "0\n"}),
    _report("progressive_wager", {"amount": "5\n"}),
    _report("progressive_wager", {"amount": "0.00\n"}),
    _report("round_result", {"void": False, "net": "5\n"}),
    _report("envy_bonus", {"from_box": 2, "award": "0.0\n"}),
    _report("progressive_hit", _hit("0.0000")),
    _report("progressive_hit", _hit("0")),
    _report("progressive_hit", _hit("1\n")),
    _report("progressive_hit", _hit("0\n")),
])
def test_an_amount_that_is_not_a_positive_plain_decimal_is_refused(payload):
    with pytest.raises(ReportRejected) as err:
        parse_report(TOPIC, payload)
    assert err.value.reason in ("bad_amount", "bad_field")


@pytest.mark.parametrize("payload", [
    _report("progressive_wager", {"amount": "0.01"}),
    _report("progressive_wager", {"amount": "5"}),
    _report("progressive_wager", {"amount": "100.50"}),
    _report("round_result", {"void": False, "net": "0"}),
    _report("round_result", {"void": False, "net": "-12.5"}),
    _report("progressive_hit", _hit("0.0001")),
    _report("progressive_hit", _hit("1.0000")),
])
def test_a_plain_decimal_is_read(payload):
    assert parse_report(TOPIC, payload).kind in ("progressive_wager", "round_result", "progressive_hit")
