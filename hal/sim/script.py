"""The bench-test script language: one command per line, ``#`` comments.

::

    wait_host 10        # until the unit opens the port
    shuffle
    deal AS KH          # shoe
    place main 04A1B2C3 # rfid
    cycle 3
    garbage 10          # faults: garbage N, drop N, corrupt N, silence S, hangup
    sleep 0.1

The same lines drive the mock backend (:mod:`hal.mock_keys`), so a scenario written for
the bench also runs on the desktop.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping


class ScriptError(ValueError):
    """A script line that cannot run; the message names the line."""


@dataclass(frozen=True, slots=True)
class ScriptLine:
    number: int
    verb: str
    args: tuple[str, ...]
    source: str = "<script>"

    def where(self) -> str:
        return f"{self.source} line {self.number}"


def parse_script(text: str, source: str = "<script>") -> list[ScriptLine]:
    lines = []
    for number, raw in enumerate(text.splitlines(), start=1):
        words = raw.split("#", 1)[0].split()
        if words:
            lines.append(ScriptLine(number, words[0].lower(), tuple(words[1:]), source))
    return lines


def check_script(lines: Iterable[ScriptLine],
                 commands: Mapping[str, Callable[..., None]]) -> None:
    """Reject unknown verbs and wrong argument counts before anything runs."""
    for line in lines:
        command = commands.get(line.verb)
        if command is None:
            raise ScriptError(f"{line.where()}: unknown command {line.verb!r} "
                              f"(known: {', '.join(sorted(commands))})")
        try:
            inspect.signature(command).bind(*line.args)
        except TypeError:
            raise ScriptError(f"{line.where()}: wrong number of arguments for "
                              f"{line.verb!r}: {' '.join(line.args) or '(none)'}") from None


def run_script(lines: Iterable[ScriptLine],
               commands: Mapping[str, Callable[..., None]]) -> None:
    lines = list(lines)
    check_script(lines, commands)
    for line in lines:
        try:
            commands[line.verb](*line.args)
        except (ValueError, KeyError, TimeoutError) as exc:
            raise ScriptError(f"{line.where()}: {line.verb}: {exc}") from exc
