"""The link's topics, all under the runtime's versioned root (``betbox/v1``).

Unit ids are ``<table>/<unit>`` (``table-1/seat-3``) and appear in topics as two levels, so
a broker ACL pattern ``betbox/v1/unit/%u/#`` lets a unit whose username is its id publish
only as itself.
"""

from __future__ import annotations

import re

from firmware.runtime.bus import ROOT

UNIT_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}/[A-Za-z0-9_.-]{1,64}\Z")
LINK_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")


def check_unit_id(unit_id: str) -> str:
    if not UNIT_ID.match(unit_id):
        raise ValueError(f"unit id {unit_id!r} is not <table>/<unit> (letters, digits, _ . -)")
    return unit_id


def check_link_id(link_id: str) -> str:
    if not LINK_ID.match(link_id):
        raise ValueError(f"jackpot link id {link_id!r} must be letters, digits, _ . - (one topic level)")
    return link_id


def status_topic(unit_id: str) -> str:
    """Retained presence of a unit: birth ``online`` / will ``offline``."""
    return f"{ROOT}/unit/{unit_id}/status"


def sync_topic(unit_id: str) -> str:
    """A unit's own markers (QoS 1, to itself): a table of units run in one process waits
    for quiet by sending one through the broker (demo, tests, bench)."""
    return f"{ROOT}/unit/{unit_id}/sync"


def report_topic(unit_id: str) -> str:
    """A unit's reports to the jackpot controller (QoS 1, from its durable outbox)."""
    return f"{ROOT}/unit/{unit_id}/report"


def challenge_topic(unit_id: str) -> str:
    """A seeded verification challenge to a unit (``betbox jackpot verify``; QoS 1)."""
    return f"{ROOT}/unit/{unit_id}/verify/challenge"


def challenge_answer_topic(unit_id: str) -> str:
    """The unit's answer to a challenge: its HMAC over its installed files (QoS 1)."""
    return f"{ROOT}/unit/{unit_id}/verify/answer"


REPORT_PATTERN = f"{ROOT}/unit/+/+/report"
STATUS_PATTERN = f"{ROOT}/unit/+/+/status"


def jackpot_status_topic(link_id: str) -> str:
    return f"{ROOT}/jackpot/{link_id}/status"


def meter_topic(link_id: str) -> str:
    """Retained meter broadcast to the seats."""
    return f"{ROOT}/jackpot/{link_id}/meter"


def confirmed_topic(link_id: str, unit_id: str) -> str:
    """Retained: the highest sequence number up to which the controller holds every report
    of ``unit_id`` (the outbox prunes what is covered; resends the rest on reconnect)."""
    return f"{ROOT}/jackpot/{link_id}/confirmed/{unit_id}"


def command_topic(link_id: str) -> str:
    return f"{ROOT}/jackpot/{link_id}/command"


def response_topic(link_id: str) -> str:
    return f"{ROOT}/jackpot/{link_id}/response"


def bridge_state_topic(table: str) -> str:
    """Retained ``1``/``0``: whether the table broker's bridge to the floor is connected
    (mosquitto's bridge notification; docs/floor.md)."""
    return f"{ROOT}/bridge/{table}/state"


def unit_from_topic(topic: str, leaf: str) -> str | None:
    """``betbox/v1/unit/<table>/<unit>/<leaf>`` → ``<table>/<unit>``; None otherwise."""
    parts = topic.split("/")
    if len(parts) != 6 or "/".join(parts[:3]) != f"{ROOT}/unit" or parts[5] != leaf:
        return None
    return f"{parts[3]}/{parts[4]}"
