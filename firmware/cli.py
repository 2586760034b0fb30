"""The ``betbox`` command line.

Each sub-command lives in its own module under :mod:`firmware.commands` and exposes
``register(subparsers)``; the parser is assembled from whatever modules are there.
A command returns its exit status; errors that name what is wrong exit non-zero.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from typing import Sequence

from firmware import __version__
from firmware import commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="betbox",
        description="Firmware of a casino blackjack table's electronics.",
    )
    parser.add_argument("--version", action="version", version=f"betbox {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
