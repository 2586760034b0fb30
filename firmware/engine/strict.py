"""Strict reading of configuration tables (profiles, unit configurations).

Every key is read with its type and bounds; a missing key, a wrong type, an impossible
value or a key nobody read (:meth:`Section.finish`) raises the caller's error class with
the source, the section and the key: ``seat.toml: [seat] box: 0 is out of range 1..14``.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any, Self


def read_text(path: str | Path, limit: int, what: str) -> str:
    """A file's UTF-8 text, reading at most ``limit`` characters: a file's size says nothing of
    a special file (/dev/zero, /dev/urandom, a pipe: st_size 0), read whole it never ends.
    Raises OSError as ``open`` does (EFBIG: larger than ``limit``, ``what`` it is not; a dangling
    symlink: "a broken symlink to X", not "No such file or directory") and UnicodeDecodeError."""
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError as exc:
        problem = file_problem(path)
        if problem is None or problem.startswith("does not exist"):
            raise
        raise OSError(exc.errno, problem.removeprefix("is "), str(path)) from None
    with f:
        text = f.read(limit + 1)
    if len(text) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit} bytes: not {what}", str(path))
    return text


def redact_url(url: str) -> str:
    """``url`` fit for a message or a log line: a password in it is ``***``
    (``mqtts://pit:***@host:8883``), the rest as written. The user info runs to the last ``@``
    (as urlsplit reads it: a password may hold an unescaped ``@``); the one helper every printed
    broker or database URL goes through, so a refusal of a URL that holds a password (a mistake
    in itself) does not spread it to the terminal and the logs."""
    scheme, sep, rest = url.partition("://")
    head = scheme + sep if sep else ""
    userinfo, at, host = (rest if sep else url).rpartition("@")
    if not at or ":" not in userinfo:
        return url
    return f"{head}{userinfo.split(':', 1)[0]}:***@{host}"


_SPECIAL_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                  (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def file_problem(path: str | Path) -> str | None:
    """Why ``path`` is not a regular file this user can read, said to follow the path
    (``f"{path} {problem}"``: "is a directory, not a regular file", "is a broken symlink to X",
    "is not readable by this user (uid N)", "does not exist"); None when it is one. Nothing is
    opened: a FIFO is never waited on."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return f"is a broken symlink to {os.readlink(path)}"
        return "does not exist"
    except NotADirectoryError:
        parent = next(p for p in Path(path).parents if p.exists() or p.is_symlink())
        return f"does not exist ({parent} is not a directory)"
    except OSError as exc:          # ELOOP, EACCES on a directory on the way, ENAMETOOLONG
        return f"cannot be reached: {exc.strerror}"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, not a regular file"
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _SPECIAL_KINDS if test(st.st_mode)), "not a regular file")
        return f"is a special file ({kind}), not a regular file"
    if not os.access(path, os.R_OK):
        return f"is not readable by this user (uid {os.getuid()})"
    return None


_KIND_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
               list: "a list", dict: "a table"}


def kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)


class Section:
    """One TOML table; remembers which keys were read so leftovers are errors."""

    def __init__(self, data: Any, where: str, source: str, error: type[ValueError] = ValueError):
        self.error = error
        if not isinstance(data, dict):
            raise error(f"{source}: [{where}] must be a table, not {type(data).__name__}")
        self.data = data
        self.where = where
        self.source = source
        self.used: set[str] = set()

    def fail(self, key: str, msg: str) -> ValueError:
        if not self.where:                  # the file's top level: the key is a section's name
            return self.error(f"{self.source}: {key}: {msg}")
        return self.error(f"{self.source}: [{self.where}] {key}: {msg}")

    def section(self, key: str, default: Any = ...) -> Self:
        """A sub-table, read as strictly, under ``[where.key]``."""
        name = f"{self.where}.{key}" if self.where else key
        return type(self)(self.get(key, dict, default), name, self.source, self.error)

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
        self.used.add(key)
        if key not in self.data:
            if default is ...:
                raise self.fail(key, "missing")
            return default
        value = self.data[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # bool is an int in Python: never accept one for the other
        if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            raise self.fail(key, f"expected {kind_name(kind)}, got {value!r}")
        return value

    def int_in(self, key: str, lo: int, hi: int, default: Any = ...) -> int:
        value: int = self.get(key, int, default)
        if not lo <= value <= hi:
            raise self.fail(key, f"{value} is out of range {lo}..{hi}")
        return value

    def choice(self, key: str, options: tuple[str, ...], default: Any = ...) -> str:
        value: str = self.get(key, str, default)
        if value not in options:
            raise self.fail(key, f"{value!r} is not one of {', '.join(options)}")
        return value

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            also = f" (also: {', '.join(unknown[1:])})" if unknown[1:] else ""
            raise self.fail(unknown[0], "unknown key" + also)
