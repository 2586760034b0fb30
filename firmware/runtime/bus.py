"""The bus between a table's units: messages as plain JSON-able dicts on MQTT-style topics.

The in-process bus here is the embedded default (nothing to install): a whole table runs in
one process. The MQTT transport implements the same :class:`Bus` interface; messages are
serialised to JSON and back on every publish, so nothing here depends on sharing objects.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

from firmware import wirejson

SCHEMA = 1
ROOT = "betbox/v1"
MAX_SEQ = 2 ** 53             # a sender's sequence number (exact in every JSON reader)


def stream_topic(table: str) -> str:
    """The dealer's ordered table stream (every seat subscribes)."""
    return f"{ROOT}/table/{table}/stream"


def up_topic(table: str, box: int | str) -> str:
    """A seat's messages to the dealer (offers, locks, additions, results, alarms); ``box``
    may be the wildcard "+" to subscribe to every seat."""
    return f"{ROOT}/table/{table}/seat/{box}/up"


def down_topic(table: str, box: int) -> str:
    """The dealer's messages to one seat (catch-up, refusals)."""
    return f"{ROOT}/table/{table}/seat/{box}/down"


def alarm_topic(table: str) -> str:
    """Alarms of every unit at the table (surveillance, pit, the jackpot controller)."""
    return f"{ROOT}/table/{table}/alarm"


def console_topic(table: str) -> str:
    """What the dealer's console shows: refusals with their reasons."""
    return f"{ROOT}/table/{table}/console"


def pit_command_topic(table: str) -> str:
    """A pit supervisor's commands to the table's dealer (key a card, void a round); only
    the supervisor identity may write it (the broker's ACL: user ``pit``)."""
    return f"{ROOT}/table/{table}/pit/command"


def pit_response_topic(table: str) -> str:
    """The dealer's verdict on each pit command, echoing its ``tx``."""
    return f"{ROOT}/table/{table}/pit/response"


@dataclass(frozen=True)
class Message:
    """One message. ``seq`` is the sender's own gap-free sequence number over everything it
    emits; stream messages also carry ``stream_seq`` in ``body`` (the table's event order)."""

    topic: str
    kind: str
    sender: str
    seq: int
    body: Mapping[str, Any] = field(default_factory=dict)
    schema: int = SCHEMA

    def to_dict(self) -> dict[str, Any]:
        return {"schema": self.schema, "topic": self.topic, "kind": self.kind,
                "sender": self.sender, "seq": self.seq, "body": dict(self.body)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Message":
        schema = data.get("schema")
        if schema != SCHEMA:
            raise ValueError(f"message schema {schema!r} is not {SCHEMA}")
        missing = [k for k in ("topic", "kind", "sender", "seq", "body") if k not in data]
        if missing:
            raise ValueError(f"malformed message: {missing[0]!r} is missing")
        for key in ("topic", "kind", "sender"):
            if not isinstance(data[key], str):
                raise ValueError(f"malformed message: {key} must be a string, not {data[key]!r:.60}")
        seq = data["seq"]
        # a whole number in range: 1e999 or a float would overflow or round in int()
        if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= MAX_SEQ:
            raise ValueError(f"malformed message: seq must be a whole number from 0 to {MAX_SEQ}, "
                             f"not {seq!r:.40}")
        if not isinstance(data["body"], dict):
            raise ValueError(f"malformed message: body must be a mapping, not {data['body']!r:.60}")
        return cls(topic=data["topic"], kind=data["kind"], sender=data["sender"], seq=seq,
                   body=dict(data["body"]), schema=schema)

    def to_json(self) -> str:
        """The wire text, encoded once: the step journals it, then the transport sends it (a
        message is frozen; its body is never changed once emitted)."""
        text: str | None = self.__dict__.get("_json")
        if text is None:
            text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
            object.__setattr__(self, "_json", text)
        return text

    @classmethod
    def from_json(cls, text: str | bytes) -> "Message":
        """Bounded decoding (:func:`firmware.wirejson.loads`): any input raises ValueError."""
        data = wirejson.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"a message is a JSON object, not {type(data).__name__}")
        return cls.from_dict(data)


Sink = Callable[[Message], None]


def topic_matches(pattern: str, topic: str) -> bool:
    """MQTT wildcards: ``+`` one level, ``#`` the rest."""
    p, t = pattern.split("/"), topic.split("/")
    for i, part in enumerate(p):
        if part == "#":
            return True
        if i >= len(t) or (part != "+" and part != t[i]):
            return False
    return len(p) == len(t)


class Bus(Protocol):
    def publish(self, message: Message) -> None:
        """Hand a message to the transport; returns once it is accepted (in-process: delivered)."""

    def subscribe(self, pattern: str, sink: Sink, subscriber: str) -> None:
        """Deliver matching messages to ``sink`` (thread-safe, e.g. a queue's ``put``)."""

    def unsubscribe(self, subscriber: str) -> None:
        """Stop delivering to ``subscriber`` (a unit that went down)."""


Tamper = Callable[[str, Message], Message | None]


class InProcessBus:
    """Synchronous fan-out in one process. Every message goes through JSON, as it would on
    the wire. ``tamper(subscriber, message)`` is fault injection for tests: return a
    changed message, or None to drop it for that subscriber."""

    def __init__(self) -> None:
        self._subs: list[tuple[str, str, Sink]] = []
        self.tamper: Tamper | None = None
        self.published = 0

    def publish(self, message: Message) -> None:
        wire = message.to_json()
        self.published += 1
        for pattern, subscriber, sink in list(self._subs):
            if subscriber == message.sender or not topic_matches(pattern, message.topic):
                continue
            delivered = Message.from_json(wire)
            if self.tamper is not None:
                tampered = self.tamper(subscriber, delivered)
                if tampered is None:
                    continue
                delivered = tampered
            sink(delivered)

    def subscribe(self, pattern: str, sink: Sink, subscriber: str) -> None:
        self._subs.append((pattern, subscriber, sink))

    def unsubscribe(self, subscriber: str) -> None:
        self._subs = [s for s in self._subs if s[1] != subscriber]
