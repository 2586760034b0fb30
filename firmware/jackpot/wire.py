"""Reading a unit's report off the wire, strictly: every field checked, every reason named.

The controller treats anything it cannot read as hostile: oversized, not JSON, the wrong
schema, a unit that is not the one whose topic it came on (forged), amounts that are not
exact decimals. Such a message is rejected and logged; it changes nothing.

Two kinds of unit report: a seat (``<table>/seat-<box>``, ``box`` required and equal to the
unit's own box) and a table's dealer (``<table>/dealer``, no ``box`` field; the
:class:`Report` carries box 0): its alarms and its record of each round, ``round_progressive``
(every box's progressive wager and hit, once judged on the initial cards) and
``round_settlement`` (every box's result, envy bonuses and side bets at the round's end),
the authority the controller checks each seat's word against. Any other unit name is read
as a seat (``box`` required).
The JSON Schemas in ``docs/mqtt/schemas`` say the same for other implementers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import AbstractSet, Any, Mapping

from firmware import wirejson
from firmware.link import topics

MAX_REPORT_BYTES = 16 * 1024
AMOUNT = re.compile(r"^-?(0|[1-9][0-9]{0,11})(\.[0-9]{1,2})?\Z")
SHARE = re.compile(r"^(0(\.[0-9]{1,4})?|1(\.0{1,4})?)\Z")
REPORT_ID = re.compile(r"^[A-Za-z0-9_.:-]{8,64}\Z")
CODE = re.compile(r"^[a-z0-9_]{1,64}\Z")          # alarm codes, bet names
MAX_DETAIL = 1000
KINDS = ("progressive_wager", "progressive_hit", "envy_bonus", "round_result", "side_bet", "alarm",
         "round_progressive", "round_settlement")
DEALER = "dealer"                                # a table's dealer unit: <table>/dealer
DEALER_KINDS = ("alarm", "round_progressive", "round_settlement")   # what a dealer reports (no box)
SEAT_KINDS = ("progressive_wager", "progressive_hit", "envy_bonus", "round_result", "side_bet", "alarm")
MAX_BOXES = 99
SEAT_UNIT = re.compile(r"^seat-([1-9][0-9]?)\Z")
# a report's fields: a dealer's has no box
DEALER_REQUIRED = frozenset({"schema", "id", "unit", "seq", "kind", "table", "body"})
DEALER_FIELDS = DEALER_REQUIRED | {"round"}
SEAT_REQUIRED = DEALER_REQUIRED | {"box"}
SEAT_FIELDS = DEALER_FIELDS | {"box"}


class ReportRejected(ValueError):
    """Why a report was refused (``reason`` is a short code; the message says more)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Report:
    id: str
    unit: str
    table: str
    seq: int
    kind: str
    box: int                    # 0: the dealer's report (no box on the wire)
    round: int | None
    body: Mapping[str, Any]


def amount(body: Mapping[str, Any], key: str, *, nullable: bool = False, positive: bool = True) -> Fraction | None:
    text = _checked_amount(body, key, nullable=nullable, positive=positive)
    return None if text is None else Fraction(text)


def _checked_amount(body: Mapping[str, Any], key: str, *, nullable: bool = False,
                    positive: bool = True) -> str | None:
    """:func:`amount`'s checks without making the Fraction (the ingest's hot path: the text
    is all the controller keeps); the amount's text, or None for an allowed null."""
    v = body.get(key)
    if v is None and nullable and key in body:
        return None
    # fullmatch: the pattern's "$" alone lets a trailing newline through ("0\n")
    if not isinstance(v, str) or not AMOUNT.fullmatch(v):
        raise ReportRejected("bad_amount", f"{key}: {v!r} is not an exact decimal amount like \"12.50\"")
    if positive and not _above_zero(v):
        raise ReportRejected("bad_amount", f"{key}: {v} must be more than 0")
    return v


def _above_zero(text: str) -> bool:
    """Whether a decimal ``text`` (AMOUNT or SHARE shaped) is more than 0: no minus sign
    and a digit other than 0."""
    return not text.startswith("-") and text.strip("0.") != ""


def _int(data: Mapping[str, Any], key: str, lo: int, hi: int) -> int:
    v = data.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ReportRejected("bad_field", f"{key}: {v!r} is not a whole number from {lo} to {hi}")
    return v


def _only(data: Mapping[str, Any], allowed: AbstractSet[str], required: AbstractSet[str], where: str) -> None:
    if data.keys() <= allowed and required <= data.keys():     # the usual case: no set built
        return
    extra = sorted(set(data) - allowed)
    if extra:
        raise ReportRejected("bad_field", f"{where}: unknown field {extra[0]!r}")
    missing = sorted(required - set(data))
    if missing:
        raise ReportRejected("bad_field", f"{where}: {missing[0]!r} is missing")


def parse_report(topic: str, payload: bytes) -> Report:
    if len(payload) > MAX_REPORT_BYTES:
        raise ReportRejected("oversized", f"{len(payload)} bytes (at most {MAX_REPORT_BYTES})")
    unit = topics.unit_from_topic(topic, "report")
    if unit is None:
        raise ReportRejected("bad_topic", f"{topic!r} is not a unit's report topic")
    try:
        data = wirejson.loads(payload)          # bounded: depth, non-finite numbers, digits
    except ValueError as exc:
        raise ReportRejected("not_json", str(exc)[:120]) from None
    if not isinstance(data, dict):
        raise ReportRejected("not_json", "a report is a JSON object")
    if data.get("schema") != 1:
        raise ReportRejected("bad_schema", f"schema {data.get('schema')!r} is not 1")
    table, name = unit.split("/")
    dealer = name == DEALER
    _only(data, DEALER_FIELDS if dealer else SEAT_FIELDS, DEALER_REQUIRED if dealer else SEAT_REQUIRED, "report")
    if data["unit"] != unit:
        raise ReportRejected("forged", f"a report naming unit {data['unit']!r} on {unit!r}'s topic")
    if data["table"] != table:
        raise ReportRejected("forged", f"unit {unit!r} reports for table {data['table']!r}")
    rid = data["id"]
    if not isinstance(rid, str) or not REPORT_ID.match(rid):
        raise ReportRejected("bad_field", f"id: {rid!r} is not a report id")
    seq = _int(data, "seq", 1, 2 ** 53)
    box = 0 if dealer else _int(data, "box", 1, 99)
    seat = SEAT_UNIT.match(name)
    if seat is not None and int(seat.group(1)) != box:
        raise ReportRejected("forged", f"unit {unit!r} reports for box {box}")
    kind = data["kind"]
    if kind not in KINDS:
        raise ReportRejected("bad_kind", f"kind {kind!r} (known: {', '.join(KINDS)})")
    if dealer and kind not in DEALER_KINDS:
        raise ReportRejected("bad_kind", f"a dealer reports only {', '.join(DEALER_KINDS)}, not {kind!r}")
    if not dealer and kind not in SEAT_KINDS:
        raise ReportRejected("bad_kind", f"only a table's dealer reports {kind!r}")
    rnd = _int(data, "round", 1, 2 ** 53) if kind != "alarm" or "round" in data else None
    body = data["body"]
    if not isinstance(body, dict):
        raise ReportRejected("bad_field", "body must be an object")
    _check_body(kind, body)
    return Report(rid, unit, data["table"], seq, kind, box, rnd, body)


def _check_body(kind: str, body: Mapping[str, Any]) -> None:
    where = f"{kind} body"
    if kind == "progressive_wager":
        _only(body, {"amount"}, {"amount"}, where)
        _checked_amount(body, "amount")
    elif kind == "progressive_hit":
        _check_hit(body, where)
    elif kind == "envy_bonus":
        _only(body, {"from_box", "award"}, {"from_box", "award"}, where)
        _int(body, "from_box", 1, 99)
        _checked_amount(body, "award")
    elif kind == "round_result":
        _only(body, {"void", "net", "progressive", "settlement"}, {"void", "net"}, where)
        if not isinstance(body["void"], bool):
            raise ReportRejected("bad_field", "void must be true or false")
        _checked_amount(body, "net", positive=False)
    elif kind == "side_bet":
        _only(body, {"bet", "category", "stake", "net"}, {"bet", "stake", "net"}, where)
        if not isinstance(body["bet"], str) or not CODE.match(body["bet"]):
            raise ReportRejected("bad_field", f"bet: {body['bet']!r} is not a bet name")
        category = body.get("category")
        if category is not None and (not isinstance(category, str) or not CODE.match(category)):
            raise ReportRejected("bad_field", f"category: {category!r} is not a category name or null")
        _checked_amount(body, "stake")
        _checked_amount(body, "net", positive=False)
    elif kind == "round_progressive":
        _only(body, {"meter", "boxes"}, {"meter", "boxes"}, where)
        if body["meter"] is not None:
            _checked_amount(body, "meter", positive=False)
        for entry in _boxes(body, where):
            _only(entry, {"box", "wager", "hit"}, {"box", "wager", "hit"}, f"{where} box")
            _checked_amount(entry, "wager")
            if entry["hit"] is not None:
                if not isinstance(entry["hit"], dict):
                    raise ReportRejected("bad_field", f"{where}: a box's hit is an object or null")
                _check_hit(entry["hit"], f"{where} box {entry['box']} hit")
    elif kind == "round_settlement":
        _only(body, {"void", "boxes"}, {"void", "boxes"}, where)
        if not isinstance(body["void"], bool):
            raise ReportRejected("bad_field", "void must be true or false")
        for entry in _boxes(body, where):
            _only(entry, {"box", "net", "envy", "side_bets"}, {"box", "net", "envy", "side_bets"}, f"{where} box")
            _checked_amount(entry, "net", positive=False)
            for name, items in (("envy", entry["envy"]), ("side_bets", entry["side_bets"])):
                if not isinstance(items, list) or len(items) > MAX_BOXES or not all(isinstance(i, dict)
                                                                                   for i in items):
                    raise ReportRejected("bad_field", f"{where}: {name} is a list of objects")
                for item in items:
                    _check_body("envy_bonus" if name == "envy" else "side_bet", item)
    elif kind == "alarm":
        _only(body, {"alarm", "detail", "boxes"}, {"alarm", "detail"}, where)
        boxes = body.get("boxes", [])
        if not isinstance(boxes, list) or len(boxes) > 99 or any(
                isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= 99 for b in boxes):
            raise ReportRejected("bad_field", f"boxes: {str(boxes)[:80]} is not a list of box numbers (1-99)")
        if not isinstance(body["alarm"], str) or not CODE.match(body["alarm"]):
            raise ReportRejected("bad_field", f"alarm: {body['alarm']!r} is not an alarm code")
        if not isinstance(body["detail"], str) or len(body["detail"]) > MAX_DETAIL:
            raise ReportRejected("bad_field", f"detail: text of at most {MAX_DETAIL} characters")


def _check_hit(body: Mapping[str, Any], where: str) -> None:
    """A progressive hit: a fixed ``award`` or a ``meter_share``; for a meter share,
    ``amount`` is what the table pays (the share of its round's meter, to the cent)."""
    _only(body, {"category", "award", "meter_share", "amount"}, {"category", "award", "meter_share"}, where)
    if not isinstance(body["category"], str) or not CODE.match(body["category"]):
        raise ReportRejected("bad_field", f"category: {body['category']!r}")
    award = _checked_amount(body, "award", nullable=True)
    share = body["meter_share"]
    if share is not None and (not isinstance(share, str) or not SHARE.fullmatch(share) or not _above_zero(share)):
        raise ReportRejected("bad_field", f"meter_share: {share!r} is not a share in (0, 1] like \"1\"")
    if (award is None) == (share is None):
        raise ReportRejected("bad_field", "a hit has either a fixed award or a meter share")
    if "amount" in body and body["amount"] is not None:
        if share is None:
            raise ReportRejected("bad_field", "amount is a meter share's; a fixed award says award")
        _checked_amount(body, "amount")


def _boxes(body: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    """A dealer record's ``boxes``: objects with distinct box numbers."""
    boxes = body["boxes"]
    if not isinstance(boxes, list) or len(boxes) > MAX_BOXES or not all(isinstance(b, dict) for b in boxes):
        raise ReportRejected("bad_field", f"{where}: boxes is a list of at most {MAX_BOXES} objects")
    numbers = [_int(b, "box", 1, MAX_BOXES) for b in boxes]
    if len(set(numbers)) != len(numbers):
        raise ReportRejected("bad_field", f"{where}: a box is listed twice")
    return boxes
