"""Validate MQTT traffic against docs/mqtt/asyncapi.yaml and its JSON Schemas."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import jsonschema
import yaml

DOCS = Path(__file__).resolve().parents[2] / "docs" / "mqtt"


@lru_cache(maxsize=1)
def channels() -> list[tuple[re.Pattern, str, jsonschema.Draft202012Validator]]:
    api = yaml.safe_load((DOCS / "asyncapi.yaml").read_text())
    out = []
    for name, ch in api["channels"].items():
        pattern = re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", ch["address"]) + "$")
        (msg,) = ch["messages"].values()
        ref = msg["$ref"].split("/")[-1]
        schema_file = api["components"]["messages"][ref]["payload"]["$ref"]
        schema = json.loads((DOCS / schema_file).read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        out.append((pattern, name, jsonschema.Draft202012Validator(schema,
                                                                   format_checker=jsonschema.FormatChecker())))
    return out


def validate(topic: str, payload: bytes) -> str:
    """The channel the message belongs to; raises if no channel matches or it does not validate."""
    for pattern, name, validator in channels():
        if pattern.match(topic):
            validator.validate(json.loads(payload))
            return name
    raise AssertionError(f"{topic} is on no channel of the AsyncAPI document")


def validate_all(messages) -> dict[str, int]:
    seen: dict[str, int] = {}
    for topic, payload, _ in messages:
        if not payload:
            continue                      # a cleared retained message
        name = validate(topic, payload)
        seen[name] = seen.get(name, 0) + 1
    return seen
