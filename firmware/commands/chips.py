"""``betbox chips``: the chip registry a seat counts wagers with (``[seat] chips``; format in
docs/chips.md).

``list`` prints the chips (by UID, denomination, status); ``enrol`` adds a chip; ``bar``
withdraws one (barred, or ``--stolen``). Every change is read back with the registry's own
checks (the ones a seat makes at start) and replaces the file atomically, keeping its
comments, its order and its mode; a seat reads the registry when it starts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from firmware.chips import MAX_REGISTRY_BYTES, ChipRegistry, ChipRegistryError, chips, enrol_text, set_status_text
from firmware.commands.limits import BAD_INPUT, OK, REFUSED
from firmware.engine.strict import read_text

HEADER = "uid,denomination,status\n"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chips", help="list, enrol and bar chips in a seat's chip registry (CSV)",
                       description=__doc__.split("\n\n")[1])
    csub = p.add_subparsers(dest="chips_command", metavar="ACTION")
    csub.required = True
    ls = csub.add_parser("list", help="the chips: UID, denomination, status")
    ls.add_argument("--file", required=True, help="the registry, e.g. /etc/betbox/chips.csv")
    ls.add_argument("--status", choices=("valid", "barred"), help="only chips of this status")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=run_list)
    en = csub.add_parser("enrol", help="add a chip (the file is created with its header if new)")
    en.add_argument("--file", required=True)
    en.add_argument("uid", help="the tag's UID: hex, whole bytes (04A1B2C3D4E5F6)")
    en.add_argument("denomination", help="its value: above 0, at most 1000000, two decimals at most")
    en.set_defaults(func=run_enrol)
    bar = csub.add_parser("bar", help="withdraw a chip: a seat refuses it from its next start on")
    bar.add_argument("--file", required=True)
    bar.add_argument("uid")
    bar.add_argument("--stolen", action="store_true", help="record it as stolen (barred, saying why)")
    bar.set_defaults(func=run_bar)


def _read(path: str, missing_ok: bool = False) -> str:
    p = Path(path)
    if missing_ok and not p.exists() and not p.is_symlink():
        return HEADER
    try:
        return read_text(p, MAX_REGISTRY_BYTES, "a chip registry")       # (/dev/zero has no size)
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _replace(path: str, text: str) -> None:
    """Write ``text`` to a new file beside ``path`` and rename it over: a reader (or a crash)
    sees the old registry or the new one, never half of one. A registry behind a symlink is
    replaced where it is: renamed over, the link itself would become the new file."""
    target = Path(os.path.realpath(path))
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o640
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dirfd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dirfd)
    finally:
        os.close(dirfd)


def run_list(args: argparse.Namespace) -> int:
    try:
        registry = ChipRegistry.from_csv(_read(args.file), args.file)
    except (ValueError, ChipRegistryError) as exc:
        print(f"betbox chips list: {exc}", file=sys.stderr)
        return BAD_INPUT
    rows = [c for c in chips(registry) if args.status is None or c.status == args.status]
    if args.json:
        json.dump([{"uid": c.uid, "denomination": str(c.denomination), "status": str(c.status)} for c in rows],
                  sys.stdout, indent=2)
        print()
        return OK
    print(f"{'uid':<34}{'denomination':>14}  status")
    for c in rows:
        print(f"{c.uid:<34}{c.denomination:>14}  {c.status}")
    counts = Counter(str(c.status) for c in rows)
    print(f"{len(rows)} chip(s): " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return OK


def _edit(args: argparse.Namespace, what: str, change) -> int:
    try:
        text = _read(args.file, missing_ok=what == "enrol")
    except ValueError as exc:
        print(f"betbox chips {what}: {exc}", file=sys.stderr)
        return BAD_INPUT
    try:
        new = change(text)
    except ChipRegistryError as exc:
        print(f"betbox chips {what}: {exc}", file=sys.stderr)
        return REFUSED
    try:
        _replace(args.file, new)
    except OSError as exc:
        print(f"betbox chips {what}: cannot write {args.file}: {exc.strerror}", file=sys.stderr)
        return BAD_INPUT
    return OK


def run_enrol(args: argparse.Namespace) -> int:
    code = _edit(args, "enrol", lambda text: enrol_text(text, args.uid, args.denomination, "valid", args.file))
    if code == OK:
        print(f"{args.file}: enrolled {args.uid.strip().upper()} ({args.denomination}, valid)")
    return code


def run_bar(args: argparse.Namespace) -> int:
    status = "stolen" if args.stolen else "barred"
    code = _edit(args, "bar", lambda text: set_status_text(text, args.uid, status, args.file))
    if code == OK:
        print(f"{args.file}: {args.uid.strip().upper()} barred ({status}); seats refuse it from their next start")
    return code
