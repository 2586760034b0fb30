"""Engine values on the wire: wagers, shoe compositions, limits, the jackpot controller's
status (plain JSON)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, Callable, Mapping

from firmware.engine.cards import ALL_CARDS, ShoeComposition
from firmware.engine.errors import RuleError
from firmware.engine.events import Action, event_from_dict, event_to_dict
from firmware.engine.money import parse_amount, to_json_number
from firmware.engine.profile import Profile
from firmware.engine.round import Round


def bets_to_json(bets: Mapping[str, Fraction]) -> dict[str, Any]:
    return {name: to_json_number(Fraction(a)) for name, a in sorted(bets.items()) if a}


def bets_from_json(data: Mapping[str, Any]) -> dict[str, Fraction]:
    return {str(name): parse_amount(a) for name, a in data.items()}


def limits_to_json(limits: Mapping[str, tuple[Fraction, Fraction]]) -> dict[str, list]:
    return {name: [to_json_number(lo), to_json_number(hi)] for name, (lo, hi) in sorted(limits.items())}


def shoe_to_json(shoe: ShoeComposition) -> list[int]:
    return list(shoe.counts)


def shoe_from_json(counts: list[int]) -> ShoeComposition:
    if len(counts) != 52 or not all(isinstance(c, int) and c >= 0 for c in counts):
        raise ValueError("a shoe composition is 52 non-negative counts")
    return ShoeComposition(tuple(counts))


LINK_STATES = ("up", "down")


@dataclass(frozen=True)
class ControllerStatus:
    """The jackpot controller as a unit knows it, one type from the link's watch to the
    unit's state and checkpoint (issue #15): ``link`` "up" | "down", or None before the
    controller was ever heard; ``meter`` this table's pool as wire text (None: none
    known); ``pending`` a hit is locked (the meter shows PENDING). Its JSON is the journal
    input's and the checkpoint field's, as they were when this was a dict."""

    link: str | None = None
    meter: str | None = None
    pending: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"link": self.link, "meter": self.meter, "pending": self.pending}

    @classmethod
    def from_json(cls, value: Any) -> "ControllerStatus":
        """A checkpoint's status: as last heard (checked), or never heard."""
        if isinstance(value, dict) and value.get("link") is None:
            if value != NEVER_HEARD.to_json():
                raise ValueError(f"a controller never heard has no meter: {value!r:.80}")
            return NEVER_HEARD
        return controller_input(value)


#: The jackpot controller's status before a unit has heard of it (link None).
NEVER_HEARD = ControllerStatus()


def controller_input(body: Any) -> ControllerStatus:
    """The controller status as a journal input, checked: ``link`` "up" | "down", ``meter``
    an amount string or None, ``pending`` a bool. Raises ValueError naming what is wrong."""
    if isinstance(body, ControllerStatus):
        body = body.to_json()
    if not isinstance(body, dict):
        raise ValueError(f"controller status must be a mapping, not {body!r}")
    unknown = set(body) - {"link", "meter", "pending"}
    if unknown:
        raise ValueError(f"controller status: unknown key(s) {sorted(unknown)}")
    link = body.get("link")
    if link not in LINK_STATES:
        raise ValueError(f"controller status: link must be 'up' or 'down', not {link!r}")
    meter = body.get("meter")
    if meter is not None:
        if not isinstance(meter, str):
            raise ValueError(f"controller status: meter must be an amount string or null, not {meter!r}")
        try:
            value = wire_amount(meter)
        except ValueError:
            raise ValueError(f"controller status: meter {meter!r} is not an amount") from None
        if value < 0:
            raise ValueError(f"controller status: meter {meter!r} is negative")
    pending = body.get("pending", False)
    if not isinstance(pending, bool):
        raise ValueError(f"controller status: pending must be true or false, not {pending!r}")
    return ControllerStatus(link, meter, pending)


def round_to_json(state: Round) -> dict[str, Any]:
    """A round as the table it opened at and its events: rebuilt by the engine itself
    (:func:`round_from_json`), so the layout does not follow the engine's internals and a
    firmware update reads it. ``shoe`` is the shoe after the round, a check on the rebuild."""
    drawn = state.cards_dealt()
    if drawn and (state.void_reason or "").startswith("foreign_card"):
        drawn = drawn[:-1]           # §5.5.1: the card the shoe could not hold never left it
    start = list(state.shoe.counts)
    for card in drawn:
        start[ALL_CARDS.index(card)] += 1
    return {"profile": state.profile.name, "decks": state.decks, "limits": limits_to_json(state.limits),
            "meter": None if state.meter is None else str(state.meter), "start_shoe": start,
            "events": [event_to_dict(e) for e in state.history], "shoe": list(state.shoe.counts)}


def round_from_json(data: Any, profile_of: Callable[[str], Profile]) -> Round:
    """The round :func:`round_to_json` wrote; raises ValueError naming what is wrong."""
    if not isinstance(data, dict):
        raise ValueError(f"a round is a mapping, not {type(data).__name__}")
    keys = {"profile", "decks", "limits", "meter", "start_shoe", "events", "shoe"}
    if set(data) != keys:
        raise ValueError(f"a round has the keys {sorted(keys)}, not {sorted(data)}")
    if not isinstance(data["profile"], str) or not isinstance(data["events"], list):
        raise ValueError("a round's profile is a name and its events a list")
    meter = data["meter"]
    if meter is not None and not isinstance(meter, str):
        raise ValueError(f"a round's meter is an exact amount string, not {meter!r}")
    if not isinstance(data["limits"], dict):
        raise ValueError(f"a round's limits are a mapping, not {data['limits']!r}")
    state = Round.new(profile_of(data["profile"]), decks=data["decks"],
                      limits={k: [parse_amount(x) for x in v] for k, v in data["limits"].items()},
                      meter=None if meter is None else Fraction(meter),
                      shoe=shoe_from_json(data["start_shoe"]))
    for n, item in enumerate(data["events"]):
        if not isinstance(item, dict):
            raise ValueError(f"round event {n} is not a mapping: {item!r}")
        try:
            state, _ = state.apply(event_from_dict(item))
        except RuleError as exc:
            raise ValueError(f"round event {n} ({item.get('type')}) is refused by the engine: {exc}") from None
    if state.shoe != shoe_from_json(data["shoe"]):
        raise ValueError("the rebuilt round does not leave the shoe the checkpoint recorded")
    return state


# -- what a unit takes from the bus (issue #6: malformed and forged messages are refused) --
# Each check returns what is wrong (for the log) or None. They run before an input is
# handled or journalled, so a refused message changes nothing.

MAX_COUNT = 2 ** 53                # rounds, sequence numbers: exact in every JSON reader
MAX_BOX = 99
MAX_WIRE_AMOUNT = 10 ** 9          # no bet, meter or limit on a table's wire comes near it


def wire_amount(value: Any) -> Fraction:
    """An amount from a message, bounded before it is converted (a string like "1e999999999"
    would otherwise build a number of a billion digits). Raises ValueError naming it."""
    if isinstance(value, str) and len(value) > 40:
        raise ValueError(f"{value[:20]!r}...: {len(value)} characters is no amount")
    if isinstance(value, str):
        try:
            d = Decimal(value.strip())
        except InvalidOperation:
            raise ValueError(f"{value!r} is not an amount") from None
        exponent = d.as_tuple().exponent          # a letter only for NaN/Infinity, refused first
        if not d.is_finite() or d.adjusted() > 12 or (isinstance(exponent, int) and exponent < -12):
            raise ValueError(f"{value!r} is out of range")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not abs(value) <= MAX_WIRE_AMOUNT:
        raise ValueError(f"{value!r:.40} is out of range")
    amount = parse_amount(value)
    if abs(amount) > MAX_WIRE_AMOUNT:
        raise ValueError(f"{value!r:.40} is above {MAX_WIRE_AMOUNT}")
    return amount


def _count(value: Any, name: str, low: int = 0, high: int = MAX_COUNT) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return f"{name} must be a whole number from {low} to {high}, not {value!r:.60}"
    return None


def _amounts(value: Any, name: str) -> str | None:
    if not isinstance(value, dict):
        return f"{name} must be a mapping of spot to amount, not {value!r:.60}"
    for spot, amount in value.items():
        if not isinstance(spot, str):
            return f"{name}: spot {spot!r:.40} is not a name"
        try:
            if wire_amount(amount) < 0:
                return f"{name}: {spot} {amount!r:.40} is negative"
        except (TypeError, ValueError):
            return f"{name}: {spot} {amount!r:.40} is not an amount (0 to {MAX_WIRE_AMOUNT})"
    return None


def _first(*problems: str | None) -> str | None:
    return next((p for p in problems if p is not None), None)


def as_json_value(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples as lists, keys as strings): the form in
    which the dealer's and a seat's settlements are compared (dual check)."""
    return json.loads(json.dumps(value, sort_keys=True))


def _box_list(value: Any, kind: str, name: str) -> str | None:
    if not isinstance(value, list) or any(_count(b, "box", 1, MAX_BOX) for b in value):
        return f"{kind}: {name} must be a list of boxes, not {value!r:.60}"
    return None


def check_stream_message(kind: str, body: Mapping[str, Any],
                         profile_of: Callable[[str], Profile]) -> str | None:
    """A table stream message as a seat takes it: what is wrong, or None
    (:func:`read_stream_message` without its value)."""
    try:
        read_stream_message(kind, body, profile_of)
    except ValueError as exc:
        return str(exc)
    return None


def read_stream_message(kind: str, body: Mapping[str, Any], profile_of: Callable[[str], Profile]) -> Any:
    """A table stream message as a seat takes it, read once: the engine ``Event`` of an
    ``event``, the ``Round`` a ``round_open`` opens, else None. Kinds this firmware does not
    know pass (a newer dealer's), with a sequence number and a round like every stream
    message. Raises ValueError naming what is wrong."""
    problem = _first(_count(body.get("stream_seq"), "stream_seq", 1), _count(body.get("round"), "round"))
    if problem is not None:
        raise ValueError(f"stream {kind}: {problem}")
    if kind == "round_open":
        name = body.get("profile")
        if not isinstance(name, str):
            raise ValueError(f"round_open: profile must be a name, not {name!r:.60}")
        try:
            profile = profile_of(name)
        except Exception as exc:          # noqa: BLE001 - any profile that does not load is refused
            raise ValueError(f"round_open: profile {name!r:.60} does not load: {exc}") from None
        meter, limits = body.get("meter"), body.get("limits") or {}
        try:
            if not isinstance(limits, dict) or not all(isinstance(v, list) for v in limits.values()):
                raise ValueError(f"limits must map bet names to [min, max], not {limits!r:.60}")
            return Round.new(profile, decks=body.get("decks"), limits=limits,
                             meter=None if meter is None else wire_amount(meter),
                             shoe=shoe_from_json(shoe if isinstance(shoe := body.get("shoe"), list) else []))
        except (RuleError, TypeError, ValueError) as exc:
            raise ValueError(f"round_open: {exc}") from None
    if kind == "bets_closing":
        _raise(_box_list(body.get("waiting"), kind, "waiting"))
    elif kind == "bets_not_taken":
        _raise(_box_list(body.get("boxes"), kind, "boxes"))
        if not isinstance(body.get("reason"), str):
            raise ValueError(f"bets_not_taken: reason must be a string, not {body.get('reason')!r:.60}")
    elif kind == "event":
        event = body.get("event")
        if not isinstance(event, dict):
            raise ValueError(f"event: the event must be a mapping, not {event!r:.60}")
        try:
            return event_from_dict(event)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"event: the engine cannot read it: {exc}") from None
    elif kind == "round_result":
        result = body.get("settlement")
        if not isinstance(result, dict) or not isinstance(result.get("boxes"), dict):
            raise ValueError(f"round_result: settlement must be a mapping with boxes, not {result!r:.60}")
    return None


def _raise(problem: str | None) -> None:
    if problem is not None:
        raise ValueError(problem)


@dataclass(frozen=True)
class Catchup:
    """A catch-up read once: each stream message's value (:func:`read_stream_message`, in
    the order of ``messages``) and the rounds over it carries, rebuilt by the engine."""

    values: tuple[Any, ...]
    rounds: Mapping[int, Round]


def check_down_message(kind: str, body: Mapping[str, Any], box: int,
                       profile_of: Callable[[str], Profile]) -> str | None:
    """A message from the dealer to one seat (``box``): what is wrong, or None."""
    try:
        read_down_message(kind, body, box, profile_of)
    except ValueError as exc:
        return str(exc)
    return None


def read_down_message(kind: str, body: Mapping[str, Any], box: int,
                      profile_of: Callable[[str], Profile]) -> Catchup | None:
    """A message from the dealer to one seat (``box``), read once: a ``catchup`` as
    :class:`Catchup`, else None. Raises ValueError naming what is wrong."""
    if body.get("box") != box:
        raise ValueError(f"{kind} for box {body.get('box')!r:.20} on box {box}'s topic")
    if kind == "catchup":
        problem = _first(_count(body.get("head"), "head"),
                         None if isinstance(body.get("snapshot"), bool) else "snapshot must be true or false")
        if problem is not None:
            raise ValueError(f"catchup: {problem}")
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise ValueError(f"catchup: messages must be a list, not {messages!r:.60}")
        values = []
        for n, m in enumerate(messages):
            if not isinstance(m, dict) or not isinstance(m.get("kind"), str) or not isinstance(m.get("body"), dict):
                raise ValueError(f"catchup: message {n} is not a stream message")
            try:
                values.append(read_stream_message(m["kind"], m["body"], profile_of))
            except ValueError as exc:
                raise ValueError(f"catchup: message {n}: {exc}") from None
        return Catchup(tuple(values), _read_catchup_record(body, profile_of))
    elif kind == "reconciled":
        _raise(check_reconciled(body))
    elif kind == "refused":
        if not isinstance(body.get("reason"), str):
            raise ValueError(f"refused: reason must be a string, not {body.get('reason')!r:.60}")
        if body.get("stage") is not None and not isinstance(body.get("stage"), str):
            raise ValueError(f"refused: stage must be a string, not {body.get('stage')!r:.60}")
    return None


def _read_catchup_record(body: Mapping[str, Any], profile_of: Callable[[str], Profile]) -> dict[int, Round]:
    """A catch-up's rounds over (round number -> round, each rebuilt by the engine and
    over), ``unheld`` ([first, last] or null) and ``conditions`` (table alarms): all optional,
    a dealer of an older firmware sends none. The rounds, read; ValueError names a fault."""
    _raise(_check_catchup_record(body))
    out: dict[int, Round] = {}
    for key, data in (body.get("rounds") or {}).items():
        try:
            state = round_from_json(data, profile_of)
        except (TypeError, ValueError, KeyError, RuleError) as exc:
            raise ValueError(f"catchup: round {key}: {exc}") from None
        if not state.is_over:
            raise ValueError(f"catchup: round {key} is not over")
        out[int(key)] = state
    return out


def _check_catchup_record(body: Mapping[str, Any]) -> str | None:
    """The catch-up record's shape (its rounds are read by :func:`_read_catchup_record`)."""
    rounds = body.get("rounds") or {}
    if not isinstance(rounds, dict) or len(rounds) > 64:
        return f"catchup: rounds must be a mapping of at most 64 rounds, not {rounds!r:.60}"
    for key in rounds:
        if not (isinstance(key, str) and key.isdigit() and key.isascii() and len(key) <= 12 and int(key) >= 1):
            return f"catchup: round {key!r:.20} is not a round number"
    if body.get("heard") is not None and _count(body["heard"], "heard") is not None:
        return f"catchup: {_count(body['heard'], 'heard')}"
    unheld = body.get("unheld")
    if unheld is not None and not (isinstance(unheld, list) and len(unheld) == 2
                                   and all(_count(n, "unheld", 1) is None for n in unheld) and unheld[0] <= unheld[1]):
        return f"catchup: unheld must be [first, last] round numbers or null, not {unheld!r:.60}"
    conditions = body.get("conditions")
    if conditions is None:
        return None
    if not isinstance(conditions, list) or len(conditions) > len(TABLE_LASTING):
        return f"catchup: conditions must be a list of the table's lasting alarms, not {conditions!r:.60}"
    for entry in conditions:
        if (not isinstance(entry, dict) or not isinstance(entry.get("alarm"), str)
                or entry.get("alarm") not in TABLE_LASTING):
            return f"catchup: condition {entry!r:.60} is not a lasting table alarm ({', '.join(TABLE_LASTING)})"
        problem = check_table_alarm("alarm", entry, entry.get("unit"))
        if problem is not None:
            return f"catchup: condition: {problem}"
    return None


def tx_problem(value: Any, name: str) -> str | None:
    """What is wrong with a pit command's ``tx`` (the answer echoes it), or None."""
    if not isinstance(value, str) or not 1 <= len(value) <= 64 or not value.isascii() or not value.isalnum():
        return f"{name}: tx must be 1-64 letters or digits, not {value!r:.80}"
    return None


def by_problem(value: Any, name: str) -> str | None:
    """What is wrong with a pit command's ``by`` (the supervisor), or None."""
    if not isinstance(value, str) or not 1 <= len(value) <= 64 or not value.isprintable():
        return f"{name}: by names the supervisor (1-64 printable characters), not {value!r:.80}"
    return None


def check_reconciled(body: Mapping[str, Any]) -> str | None:
    """The dealer's word to a seat that the pit reconciled it (down topic, kind
    ``reconciled``): ``{"box", "tx", "by", "seq"}``, ``seq`` the pit command's (it grows per
    command: the seat takes each once)."""
    if set(body) != {"box", "tx", "by", "seq"}:
        return f"reconciled: the body has box, tx, by and seq, not {sorted(body)!r:.80}"
    return _first(by_problem(body["by"], "reconciled"), tx_problem(body["tx"], "reconciled"),
                  _count(body["seq"], "reconciled: seq", 1))


#: The longest verdict or reason a seat's answer to the pit carries.
MAX_ANSWER = 500

UP_KINDS = ("hello", "offer", "lock", "addition", "request", "result", "alarm", "reconcile_answer")


def check_up_message(kind: str, body: Mapping[str, Any], sender: str | None = None) -> str | None:
    """A seat's message to the dealer (its topic, sender and box checked already)."""
    if kind == "alarm":
        # an alarm before the seat's first round has no round (null): a between-rounds
        # alarm, held to the table alarm's shape and raised by its sender
        return check_table_alarm(kind, body, sender)
    problem = _count(body.get("round"), "round")
    if problem is not None:
        return f"{kind}: {problem}"
    if kind == "hello":
        bets = body.get("bets")
        return _first(_count(body.get("last_stream_seq"), "hello: last_stream_seq"),
                      None if isinstance(body.get("phase"), str) else "hello: phase must be a string",
                      None if bets is None else _amounts(bets, "hello: bets"),
                      _amounts(body.get("pending", {}), "hello: pending"))
    if kind in ("offer", "lock"):
        return _amounts(body.get("bets"), f"{kind}: bets")
    if kind == "addition":
        if not isinstance(body.get("spot"), str):
            return f"addition: spot must be a name, not {body.get('spot')!r:.40}"
        return _amounts({body["spot"]: body.get("amount")}, "addition")
    if kind == "request":
        action = body.get("action")
        # text first: an object or a list is unhashable, and a TypeError ends the unit's step
        if not isinstance(action, str) or action not in {str(a) for a in Action}:
            return f"request: {action!r:.40} is not a decision"
        hand = body.get("hand")
        return None if hand is None else _count(hand, "request: hand", 1)
    if kind == "result":
        return None
    if kind == "reconcile_answer":
        # the seat's answer to the pit's reconciled command: {"tx", "ok", "verdict" | "error"}
        said = "verdict" if body.get("ok") is True else "error"
        if not isinstance(body.get("ok"), bool) or set(body) != {"box", "round", "tx", "ok", said}:
            return f"reconcile_answer: the body has box, round, tx, ok and verdict or error, not {sorted(body)!r:.80}"
        text = body[said]
        if not isinstance(text, str) or len(text) > MAX_ANSWER:
            return f"reconcile_answer: {said} must be a string of at most {MAX_ANSWER} characters"
        return tx_problem(body["tx"], "reconcile_answer")
    return f"{kind!r:.40} is not a message a seat sends (one of {', '.join(UP_KINDS)})"


# -- the table's alarms (the dealer's, on ``alarm_topic``): a seat input ------------------

#: Table conditions that last until their counterpart arrives, whatever the round.
TABLE_LASTING = {"shoe_jam": "shoe_jam_cleared", "shoe_door_opened": "shoe_door_closed",
                 "shoe_down": "shoe_restored", "console_down": "console_restored",
                 # the console's technician key turned on (service mode) until turned back
                 "technician_key": "technician_key_off"}
#: The longest alarm code and detail a seat takes (a code is a short name; the detail is
#: for the log, never shown as it is).
MAX_ALARM_CODE = 64
MAX_ALARM_DETAIL = 2000


def check_table_alarm(kind: str, body: Mapping[str, Any], sender: str | None) -> str | None:
    """A table alarm as a seat takes it: kind ``alarm``; ``alarm`` a code (lower-case
    letters, digits, ``_``), ``detail`` a string, ``round`` a round number or null, and
    ``unit`` the sender itself (the dealer raised it)."""
    if kind != "alarm":
        return f"{kind!r:.40} is not a message of the table's alarm topic (alarm)"
    code = body.get("alarm")
    if (not isinstance(code, str) or not code or len(code) > MAX_ALARM_CODE
            or not all(c.islower() or c.isdigit() or c == "_" for c in code) or not code.isascii()):
        return f"alarm: the code must be a short name (a-z, 0-9, _), not {code!r:.60}"
    detail = body.get("detail")
    if not isinstance(detail, str) or len(detail) > MAX_ALARM_DETAIL:
        return f"alarm {code}: detail must be a string of at most {MAX_ALARM_DETAIL} characters"
    if body.get("round") is not None:
        problem = _count(body.get("round"), f"alarm {code}: round")
        if problem is not None:
            return problem
    if body.get("unit") != sender:
        return f"alarm {code}: raised by {body.get('unit')!r:.60}, sent by {sender!r:.60}"
    return None
