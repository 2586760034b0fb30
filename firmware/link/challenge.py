"""A seeded software check over the link (GSA GAT style): a verifier (``betbox jackpot
verify``, ACL user ``verifier``) publishes a seed on the unit's ``verify/challenge`` topic;
the unit answers on its ``verify/answer`` topic with HMAC-SHA-256 keyed with that seed over
its installed files (:func:`firmware.verify.challenge`). The verifier computes the same over
its approved copy: a unit cannot precompute the answer, a changed file changes it.

The unit hashes on a thread of its own (tens of MB: seconds on a Pi), one challenge at a
time; a malformed challenge is answered with an error naming what is wrong, never raised
on paho's thread."""

from __future__ import annotations

import json
import logging
import re
import threading
from pathlib import Path
from typing import Any

from firmware import wirejson

from . import topics
from .mqtt import MqttBus

log = logging.getLogger(__name__)
SEED = re.compile(r"^(?:[0-9a-fA-F]{2}){8,64}\Z")       # 8..64 bytes, hex
TX = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
HMAC = re.compile(r"^[0-9a-f]{64}\Z")                   # HMAC-SHA-256, as the unit writes it
MAX_VERSION, MAX_ERROR = 64, 1000                         # characters the verifier shows of either


def parse_challenge(payload: bytes) -> tuple[str, bytes]:
    """``(tx, seed)`` of a challenge ``{"tx": ..., "seed": HEX}``; ValueError names what is wrong."""
    try:
        msg = wirejson.loads(payload)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(msg, dict):
        raise ValueError("not a JSON object")
    tx, seed = msg.get("tx"), msg.get("seed")
    if not isinstance(tx, str) or not TX.match(tx):
        raise ValueError("'tx' must be 1-64 letters, digits, _ or -")
    if not isinstance(seed, str) or not SEED.match(seed):
        raise ValueError("'seed' must be 8 to 64 bytes as hex")
    return tx, bytes.fromhex(seed)


def answer_problem(data: Any, unit_id: str, tx: str, seed: str) -> str | None:
    """Why ``data`` is not ``unit_id``'s answer to the challenge (``tx``, ``seed``) as
    docs/mqtt/schemas/verify-answer.json has it, or None. Whoever holds the unit's password
    may answer first: the verifier takes only such an answer, and its text only printable
    (a terminal escape in it would rewrite the technician's screen)."""
    if not isinstance(data, dict) or data.get("tx") != tx:
        return "not an answer to this challenge"
    if data.get("schema") != 1 or data.get("unit") != unit_id:
        return f"an answer naming unit {data.get('unit')!r:.80}, not {unit_id}"
    if "error" in data:
        error = data["error"]
        if not isinstance(error, str) or not error.isprintable() or len(error) > MAX_ERROR:
            return f"its error is not a line of text of at most {MAX_ERROR} characters"
        return None
    if data.get("seed") != seed.lower():
        return f"an answer for seed {data.get('seed')!r:.80}, not the one sent"
    if not isinstance(data.get("hmac"), str) or not HMAC.match(data["hmac"]):
        return f"hmac {data.get('hmac')!r:.80} is not 64 hex digits"
    version = data.get("version")
    if not isinstance(version, str) or not version.isprintable() or len(version) > MAX_VERSION:
        return f"version {version!r:.80} is not a version"
    return None


def answer(tree: Path, unit_id: str, payload: bytes) -> dict[str, Any]:
    """The answer to one challenge: the HMAC, or the error (never raises)."""
    from firmware import __version__
    from firmware.verify import VerifyError, challenge

    try:
        tx, seed = parse_challenge(payload)
    except ValueError as exc:
        return {"schema": 1, "unit": unit_id, "tx": None, "error": f"bad challenge: {exc}"}
    out: dict[str, Any] = {"schema": 1, "unit": unit_id, "tx": tx, "seed": seed.hex()}
    try:
        if not tree.is_dir():
            raise VerifyError(f"no installed release at {tree}")
        version = (tree / "VERSION").read_text().strip() if (tree / "VERSION").is_file() else __version__
        out.update(hmac=challenge(tree, seed), version=version)
    except (VerifyError, OSError) as exc:
        out["error"] = str(exc)
    return out


def answer_challenges(bus: MqttBus, tree: Path) -> None:
    """Answer every challenge to ``bus.unit_id`` from now on (a unit's link calls this once)."""
    busy = threading.Lock()
    reply = topics.challenge_answer_topic(bus.unit_id)

    def work(payload: bytes) -> None:
        try:
            bus.publish_raw(reply, json.dumps(answer(tree, bus.unit_id, payload)), qos=1)
        finally:
            busy.release()

    def sink(topic: str, payload: bytes) -> None:      # paho's thread: hand over, return
        if not busy.acquire(blocking=False):
            try:
                tx: str | None = parse_challenge(payload)[0]
            except ValueError:
                tx = None
            bus.publish_raw(reply, json.dumps({"schema": 1, "unit": bus.unit_id, "tx": tx,
                                               "error": "busy with another challenge; ask again"}), qos=1)
            return
        threading.Thread(target=work, args=(bytes(payload),), name="verify-challenge", daemon=True).start()

    bus.subscribe_raw(topics.challenge_topic(bus.unit_id), sink)
