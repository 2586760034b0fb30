"""JSON off the wire, bounded: whatever arrives on a broker topic is read with
:func:`loads`, which refuses before it recurses or overflows.

The standard decoder recurses once per nesting level (5,000 ``[`` raise RecursionError, in
whatever thread reads them), turns ``NaN``/``Infinity``/``1e999`` into floats that are not
numbers or infinite (``int(inf)`` raises OverflowError later), and reads integers of any
length (a 31-digit number overflows SQLite). Here the nesting depth is counted on the raw
text first (a linear scan, no recursion), non-finite numbers and integers longer than
:data:`MAX_INT_DIGITS` digits are refused while decoding, and every refusal is a
:class:`WireJSONError` (a ValueError) naming what is wrong.

:class:`RateLimitedLog` is the logging side of the same rule: a flood of bad messages is
counted in full but logged only the first few times, then every Nth.
"""

from __future__ import annotations

import json
import logging
import math
import re
from itertools import accumulate
from typing import Any

MAX_DEPTH = 32               # no betbox message nests deeper than a handful of levels
MAX_INT_DIGITS = 18          # > 2**53 (16 digits) for sequence numbers; a quintillion is no amount

_ESCAPE = re.compile(r"\\.", re.DOTALL)         # \" \\ ... inside strings
_QUOTED = re.compile(r'"[^"]*"')                 # a string, once its escapes are gone
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class WireJSONError(ValueError):
    """Why a payload is not JSON this firmware reads."""


def depth_of(text: str) -> int:
    """The deepest nesting of arrays/objects in ``text``, brackets inside strings not
    counted. Linear and without recursion: escapes are removed first, then whole strings
    (an unterminated one hides the brackets after it: such text is not JSON anyway)."""
    brackets = _NOT_BRACKET.sub("", _QUOTED.sub("", _ESCAPE.sub("", text)))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _constant(name: str) -> Any:
    raise WireJSONError(f"{name} is not a number this firmware takes")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise WireJSONError(f"{text[:40]} is out of range")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise WireJSONError(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_float, parse_int=_int)


def loads(payload: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """Decode ``payload`` (UTF-8 bytes or text); raises :class:`WireJSONError` for
    undecodable text, nesting deeper than ``max_depth``, non-finite numbers or integers
    longer than :data:`MAX_INT_DIGITS` digits."""
    try:
        text = payload.decode("utf-8") if isinstance(payload, (bytes, bytearray)) else payload
    except UnicodeDecodeError as exc:
        raise WireJSONError(f"not UTF-8: {exc}") from None
    if not isinstance(text, str):
        raise WireJSONError(f"not text: {type(payload).__name__}")
    # fewer opening brackets than the limit cannot nest deeper: most messages skip the scan
    if text.count("[") + text.count("{") > max_depth and depth_of(text) > max_depth:
        raise WireJSONError(f"nested more than {max_depth} levels deep")
    try:
        return _DECODER.decode(text)
    except WireJSONError:
        raise
    except (ValueError, RecursionError) as exc:      # JSONDecodeError is a ValueError
        raise WireJSONError(str(exc)[:200]) from None


class RateLimitedLog:
    """Count every occurrence; log the first ``first`` and then every ``every``-th, each
    line saying how many there have been (a flood of junk must not fill the journal)."""

    def __init__(self, logger: logging.Logger, first: int = 10, every: int = 1000,
                 level: int = logging.WARNING) -> None:
        self.logger = logger
        self.first = first
        self.every = every
        self.level = level
        self.count = 0

    def __call__(self, msg: str, *args: Any) -> bool:
        """Count one; log it if it is among the first or an every-th. Returns whether logged."""
        self.count += 1
        if self.count <= self.first or self.count % self.every == 0:
            self.logger.log(self.level, msg + " (%d so far)", *args, self.count)
            return True
        return False
