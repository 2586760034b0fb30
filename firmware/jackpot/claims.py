"""What a report claims about a box's money in a round, in one comparable shape.

The controller books a wager, hit, envy bonus or result only when the seat's claim and the
dealer's record agree (DESIGN "Progressive jackpot": the dealer's record is the authority
for money; the dual-replica check carried to the controller). A seat's report makes one
claim; a dealer's ``round_progressive`` or ``round_settlement`` makes one claim per item of
every box. A claim is identified by (table, round, box, kind, key): ``key`` is the envy
bonus's ``from_box`` or the side bet's name, else ``""``. Amounts are normalised (``"5.50"``
and ``"5.5"`` are one amount) so equal money compares equal. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

from .pools import money
from .wire import Report

#: which of the dealer's records holds each kind of claim
STAGE = {"progressive_wager": "progressive", "progressive_hit": "progressive",
         "envy_bonus": "settlement", "round_result": "settlement", "side_bet": "settlement"}
BOOKED_KINDS = tuple(STAGE)


@dataclass(frozen=True)
class Claim:
    table: str
    round: int
    box: int
    kind: str
    key: str
    value: Mapping[str, Any]

    @property
    def stage(self) -> str:
        return STAGE[self.kind]


# a plain decimal as the wire carries it (wire.AMOUNT, wire.SHARE): normalised as text
_DECIMAL = re.compile(r"(-?)([0-9]{1,13})(?:\.([0-9]{1,12}))?")


def _amount(text: Any) -> str | None:
    """``money(Fraction(text))``, the same text (tests/jackpot/test_money_text.py), made
    without the Fraction for a plain decimal: leading and trailing zeros dropped."""
    if text is None:
        return None
    plain = _DECIMAL.fullmatch(text) if isinstance(text, str) else None
    if plain is None:
        return money(Fraction(text))
    sign, whole, frac = plain.groups()
    whole, frac = whole.lstrip("0") or "0", (frac or "").rstrip("0")
    digits = f"{whole}.{frac}" if frac else whole
    return digits if digits == "0" else sign + digits


def _hit(body: Mapping[str, Any]) -> dict[str, Any]:
    return {"category": body["category"], "award": _amount(body.get("award")),
            "meter_share": _amount(body.get("meter_share")), "amount": _amount(body.get("amount"))}


def _envy(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    return str(body["from_box"]), {"award": _amount(body["award"])}


def _side_bet(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    return body["bet"], {"category": body.get("category"), "stake": _amount(body["stake"]),
                         "net": _amount(body["net"])}


def seat_claim(r: Report) -> Claim | None:
    """A seat's report as a claim; None for a kind that moves no money (an alarm)."""
    b, rnd = r.body, r.round
    if rnd is None:               # only an alarm may have no round (wire.parse_report)
        return None
    if r.kind == "progressive_wager":
        return Claim(r.table, rnd, r.box, r.kind, "", {"amount": _amount(b["amount"])})
    if r.kind == "progressive_hit":
        return Claim(r.table, rnd, r.box, r.kind, "", _hit(b))
    if r.kind == "envy_bonus":
        key, value = _envy(b)
        return Claim(r.table, rnd, r.box, r.kind, key, value)
    if r.kind == "round_result":
        return Claim(r.table, rnd, r.box, r.kind, "", {"void": b["void"], "net": _amount(b["net"])})
    if r.kind == "side_bet":
        key, value = _side_bet(b)
        return Claim(r.table, rnd, r.box, r.kind, key, value)
    return None


def dealer_claims(r: Report) -> list[Claim]:
    """A dealer's round record as claims, box by box (a box's wager before its hit)."""
    out: list[Claim] = []
    rnd = r.round
    if rnd is None:
        return out
    if r.kind == "round_progressive":
        for entry in r.body["boxes"]:
            box = entry["box"]
            out.append(Claim(r.table, rnd, box, "progressive_wager", "", {"amount": _amount(entry["wager"])}))
            if entry["hit"] is not None:
                out.append(Claim(r.table, rnd, box, "progressive_hit", "", _hit(entry["hit"])))
    elif r.kind == "round_settlement":
        for entry in r.body["boxes"]:
            box = entry["box"]
            out.append(Claim(r.table, rnd, box, "round_result", "",
                             {"void": r.body["void"], "net": _amount(entry["net"])}))
            for envy in entry["envy"]:
                key, value = _envy(envy)
                out.append(Claim(r.table, rnd, box, "envy_bonus", key, value))
            for bet in entry["side_bets"]:
                key, value = _side_bet(bet)
                out.append(Claim(r.table, rnd, box, "side_bet", key, value))
    return out


RECORD_STAGE = {"round_progressive": "progressive", "round_settlement": "settlement"}


def stage_of_record(kind: str) -> str | None:
    """The stage a dealer's report records (None: not a round record)."""
    return RECORD_STAGE.get(kind)
