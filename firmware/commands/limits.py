"""Sane bounds for numbers given on the command line, and the documented exit codes.

argparse's ``type=int`` takes ``--round 1000000000000000000000000000000``; SQLite and
the engine do not. Every number a command takes goes through :func:`bounded_int` or
:func:`bounded_float`, so a wild value is a usage error naming the option.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Callable

# exit codes (README, "Commands")
OK = 0
REFUSED = 1          # the input is well formed but the rules (or the controller) refuse it
BAD_INPUT = 2        # usage, a file or configuration that cannot be read or used
FAILED = 3           # an unexpected failure: a bug; the message names the command and its input
INTERRUPTED = 130

MAX_ROUND = 10**12   # rounds and hit numbers: 30 years of a round a second is below 10**10
MAX_DIGITS = 24      # characters in a number given as an option


def bounded_int(option: str, lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if len(text) > MAX_DIGITS:
            raise argparse.ArgumentTypeError(f"{text[:12]}...: more than {MAX_DIGITS} characters")
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is out of range {lo}..{hi}")
        return value
    parse.__name__ = option        # argparse names the option in its message
    return parse


def bounded_float(option: str, lo: float, hi: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        if len(text) > MAX_DIGITS:
            raise argparse.ArgumentTypeError(f"{text[:12]}...: more than {MAX_DIGITS} characters")
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value) or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{text} is out of range {lo:g}..{hi:g}")
        return value
    parse.__name__ = option
    return parse


def comma_list(option: str) -> Callable[[str], tuple[str, ...]]:
    """An option's ``NAME,NAME,...`` (each name stripped of white space): "" is no names, an
    empty name anywhere (",,,", "a,,b", "a,") is a usage error naming its position, never
    skipped (a skipped spot moves every later one to another antenna); a name twice is one too."""
    def parse(text: str) -> tuple[str, ...]:
        if not text:
            return ()
        names = tuple(s.strip() for s in text.split(","))
        shown = repr(text) if len(text) <= 60 else repr(text[:60]) + "..."
        empty = [str(i) for i, name in enumerate(names, 1) if not name]
        if empty:
            where = f"name at position {empty[0]}" if len(empty) == 1 else f"names at positions {', '.join(empty)}"
            raise argparse.ArgumentTypeError(f"{shown}: empty {where} (of {len(names)}; write NAME,NAME,...)")
        first: dict[str, int] = {}
        for i, name in enumerate(names, 1):
            if name in first:           # two antennas read as one spot, a side bet played once
                raise argparse.ArgumentTypeError(f"{shown}: {name[:40]!r} at positions {first[name]} and {i}: "
                                                 "each name once")
            first[name] = i
        return names
    parse.__name__ = option
    return parse


#: The longest password a command reads (a first line longer than this is not a password).
MAX_PASSWORD = 1024


def read_password(args: argparse.Namespace) -> str | None:
    """The password from ``--password-file`` (first line; ``-``: standard input), or None."""
    if not args.password_file:
        return None
    name = "<stdin>" if args.password_file == "-" else args.password_file
    try:
        if args.password_file == "-":
            line = sys.stdin.readline(MAX_PASSWORD + 2)
        else:
            with open(args.password_file, encoding="utf-8") as f:
                line = f.readline(MAX_PASSWORD + 2)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--password-file {name}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    password = line.rstrip("\r\n")
    if not password or len(password) > MAX_PASSWORD:
        raise ValueError(f"--password-file {name}: the first line must hold the password (1 to {MAX_PASSWORD} "
                         "characters)")
    return password


def password_options(p: argparse.ArgumentParser) -> None:
    """``--password-file`` and ``--allow-insecure`` of a command that logs in to the broker."""
    # never --password: a command line is readable by every user in /proc/PID/cmdline
    p.add_argument("--password-file", metavar="FILE",
                   help="the MQTT password: the first line of FILE, or - for standard input")
    p.add_argument("--allow-insecure", action="store_true",
                   help="allow the password over plain mqtt:// (a lab or loopback broker; default: mqtts:// only)")


def tls_options(p: argparse.ArgumentParser) -> None:
    """``--ca``, ``--cert``, ``--key``: the broker's CA and this client's certificate (mqtts://)."""
    p.add_argument("--ca", help="the CA certificate the broker's is checked against (PEM)")
    p.add_argument("--cert", help="this client's certificate (PEM)")
    p.add_argument("--key", help="this client's private key (PEM)")
