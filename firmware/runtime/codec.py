"""One dataclass <-> JSON codec for a unit's checkpoint (issue #15: it replaces the tables
of per-field lambdas each role kept).

A unit's state is a dataclass (``UnitState`` and the roles' ``DealerState`` / ``SeatState``);
each field is written as plain JSON by its declared type and read back checked against it:
whole numbers, strings, booleans, floats, exact amounts (``Fraction`` as ``"15/2"``), ``StrEnum``
phases and actions, ``None`` unions, lists, tuples, sets and frozensets (sorted), dicts
(integer keys as strings), the engine's ``Round`` (rebuilt by the engine from its events,
through the unit's profile lookup) and ``ShoeComposition``, and any class with ``to_json`` /
``from_json`` (the bounded logs; ``keep`` in the field's metadata). ``Any`` is kept as the
JSON it is. A field whose value needs the unit's own checks names a unit method in its
metadata (``read``): it gets the raw JSON and returns the value or raises ValueError.

Reading never executes anything from the checkpoint; a value that does not fit its type
raises ValueError naming it.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from dataclasses import Field, fields
from fractions import Fraction
from typing import Any, Callable

from firmware.engine.cards import ShoeComposition
from firmware.engine.money import EXACT_TEXT, exact_text
from firmware.engine.profile import Profile
from firmware.engine.round import Round

from .wire import round_from_json, round_to_json, shoe_from_json, shoe_to_json

ProfileOf = Callable[[str], Profile]


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def state_fields(state: Any) -> list[tuple[Field[Any], Any]]:
    """The state's fields with their resolved types (the class's own annotations)."""
    hints = typing.get_type_hints(type(state))
    return [(f, hints[f.name]) for f in fields(state)]


def encode(value: Any, hint: Any) -> Any:
    """``value`` as plain JSON, by its declared type."""
    if value is None:
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return encode(value, next(a for a in args if a is not type(None)))
    if hint is Any:
        return value
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return value.value
    if hint is Fraction:
        return exact_text(value)
    if hint is Round:
        return round_to_json(value)
    if hint is ShoeComposition:
        return shoe_to_json(value)
    if hint is Profile:
        return value.name
    if hasattr(hint, "to_json"):
        return value.to_json()
    if origin in (list, tuple):
        items = args[:1] * len(value) if origin is list or args[-1:] == (Ellipsis,) else args
        return [encode(v, h) for v, h in zip(value, items, strict=True)]
    if origin in (set, frozenset):
        return sorted(encode(v, args[0]) for v in value)
    if origin is dict:
        return {str(encode(k, args[0])): encode(v, args[1]) for k, v in value.items()}
    return value                                  # int, str, bool, float


#: plain JSON values: what fits each, and how a refusal names it
_SCALARS: dict[Any, tuple[Callable[[Any], bool], str]] = {
    bool: (lambda d: isinstance(d, bool), "true or false"),
    int: (_is_int, "a whole number"),
    float: (lambda d: _is_int(d) or isinstance(d, float), "a number"),
    str: (lambda d: isinstance(d, str), "a string"),
}


def decode(data: Any, hint: Any, profile_of: ProfileOf, keep: int | None = None) -> Any:
    """The value :func:`encode` wrote for ``hint``; ValueError names what does not fit."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        return decode(data, next(a for a in args if a is not type(None)), profile_of, keep)
    if hint is Any:
        json.dumps(data)
        return data
    if hint in _SCALARS:
        fits, what = _SCALARS[hint]
        if not fits(data):
            raise ValueError(f"expected {what}, not {_short(data)}")
        return float(data) if hint is float else data
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(data)
    if hint in (Fraction, Round, ShoeComposition, Profile):
        return _decode_game(data, hint, profile_of)
    if hasattr(hint, "from_json"):
        return hint.from_json(data) if keep is None else hint.from_json(data, keep)
    if origin in (list, tuple, set, frozenset, dict):
        return _decode_items(data, origin, args, profile_of)
    raise ValueError(f"no checkpoint codec for {hint!r}")


def _decode_game(data: Any, hint: Any, profile_of: ProfileOf) -> Any:
    """An amount, the engine's round, a shoe or a profile, as :func:`encode` wrote them."""
    if hint is Fraction:                # exact_text's form only: never "1e999999999" (endless)
        if not isinstance(data, str) or not EXACT_TEXT.match(data):
            raise ValueError(f"an amount is kept as a string like '15/2', not {_short(data)}")
        return Fraction(data)
    if hint is Round:
        return round_from_json(data, profile_of)
    if hint is ShoeComposition:
        return shoe_from_json(data)
    if not isinstance(data, str):
        raise ValueError(f"a profile is kept by its name, not {_short(data)}")
    return profile_of(data)


def _decode_items(data: Any, origin: Any, args: tuple[Any, ...], profile_of: ProfileOf) -> Any:
    """A list, tuple, set or mapping of decoded items."""
    if origin is dict:
        if not isinstance(data, dict):
            raise ValueError(f"expected a mapping, not {_short(data)}")
        return {_key(k, args[0]): decode(v, args[1], profile_of) for k, v in data.items()}
    if not isinstance(data, list):
        raise ValueError(f"expected a list, not {_short(data)}")
    if origin is tuple and args[-1:] != (Ellipsis,):
        if len(data) != len(args):
            raise ValueError(f"expected {len(args)} items, not {_short(data)}")
        return tuple(decode(v, h, profile_of) for v, h in zip(data, args, strict=True))
    return origin(decode(v, args[0], profile_of) for v in data)


def _key(text: Any, hint: Any) -> Any:
    if hint is int:
        if not isinstance(text, str) or not text.lstrip("-").isdigit() or len(text) > 20:
            raise ValueError(f"expected a whole number as a key, not {_short(text)}")
        return int(text)
    if not isinstance(text, str):
        raise ValueError(f"expected a string key, not {_short(text)}")
    return text


def state_to_json(state: Any) -> dict[str, Any]:
    """Every field of the unit's state dataclass as plain JSON."""
    return {f.name: encode(getattr(state, f.name), hint) for f, hint in state_fields(state)}


def state_from_json(state: Any, data: dict[str, Any], profile_of: ProfileOf,
                    skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The values ``data`` holds for the state's fields (those not in ``skip``); raises
    ValueError prefixed with the field's name. Nothing is set on ``state``."""
    out: dict[str, Any] = {}
    for f, hint in state_fields(state):
        if f.name in skip:
            continue
        try:
            reader = f.metadata.get("read")
            if reader is not None:
                read = reader if callable(reader) else getattr(state, reader)
                out[f.name] = read(data[f.name])
            else:
                out[f.name] = decode(data[f.name], hint, profile_of, f.metadata.get("keep"))
        except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
            raise ValueError(f"checkpoint state {f.name!r}: {exc}") from None
    return out
