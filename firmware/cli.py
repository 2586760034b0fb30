"""The ``betbox`` command line.

Each sub-command lives in its own module under :mod:`firmware.commands` and exposes
``register(subparsers)``; the parser is assembled from whatever modules are there (only the
named command's module when one is named).
A command returns its exit status (:mod:`firmware.commands.limits`: 0 done, 1 refused by the
rules, 2 bad input, 3 a fault in betbox, 130 interrupted); whatever a command does not catch
itself ends here as one line naming the input, never a traceback.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import pkgutil
import sqlite3
import sys
from typing import Sequence

from firmware import __version__, commands
from firmware.commands import limits


@functools.cache
def _command_modules() -> tuple[str, ...]:
    """The command modules, listed once a process: a unit's user may not be able to list
    the installed tree it runs from (the ``--check`` test drops to ``nobody`` after this)."""
    return tuple(sorted(info.name for info in pkgutil.iter_modules(commands.__path__)))


def _commands_for(argv: Sequence[str]) -> tuple[str, ...]:
    """The one command named, else all of them (help, an unknown name): a seat runs
    ``betbox run`` for days, and every other command's modules would stay in its memory
    (39 modules, ~1 MB: #14's 150 MB)."""
    word = next((a for a in argv if not a.startswith("-")), None)
    names = _command_modules()
    return (word,) if word in names else names


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="betbox",
        description="Firmware of a casino blackjack table's electronics.",
    )
    parser.add_argument("--version", action="version", version=f"betbox {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in _commands_for(argv):
        module = importlib.import_module(f"{commands.__name__}.{name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def _inputs(argv: Sequence[str]) -> str:
    """The command's input as a person typed it, shortened, for an error message."""
    text = " ".join(argv)
    return text if len(text) <= 120 else text[:117] + "..."


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    name = f"betbox {args.command}"
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return limits.INTERRUPTED
    except BrokenPipeError:
        return limits.OK
    # A command reports what it knows how to say; whatever escapes it still ends in one
    # line naming the input and a documented exit code, never a traceback (#12.8).
    except RecursionError:
        print(f"{name}: {_inputs(argv)}: the input is nested too deeply to read", file=sys.stderr)
        return limits.BAD_INPUT
    except MemoryError:
        print(f"{name}: {_inputs(argv)}: the input is too large to read", file=sys.stderr)
        return limits.BAD_INPUT
    except (OSError, ValueError, OverflowError, sqlite3.Error) as exc:
        print(f"{name}: {_inputs(argv)}: {_describe(exc)}", file=sys.stderr)
        return limits.BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - the last word on any failure is a message, not a traceback
        print(f"{name}: {_inputs(argv)}: failed: {_describe(exc)} (a fault in betbox; please report it "
              "with this line)", file=sys.stderr)
        return limits.FAILED


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename + ': ' if exc.filename else ''}{exc.strerror}"
    text = str(exc)
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, ValueError) or not text else text


if __name__ == "__main__":
    sys.exit(main())
