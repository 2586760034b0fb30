"""McCabe complexity <= 15 with named per-function exceptions.

ruff reports every function above the limit (C901); this keeps those named in pyproject.toml's
[tool.betbox.complexity] ("path::function" = ceiling) and fails on the rest, on an exception whose
function grew past its ceiling, and on an exception no longer needed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MESSAGE = re.compile(r"`(?P<name>[^`]+)` is too complex \((?P<score>\d+) > \d+\)")


def main(paths: list[str], root: Path = ROOT) -> int:
    """``root``: the project (its pyproject.toml); ``paths``: what to check (default: all)."""
    allowed: dict[str, int] = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["betbox"]["complexity"]
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--select", "C901", "--output-format", "json", "--exit-zero", *paths],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout
    found: dict[str, tuple[int, str]] = {}
    for item in json.loads(out):
        m = MESSAGE.search(item["message"])
        if m is None:
            raise SystemExit(f"complexity: unexpected ruff message {item['message']!r}")
        path = Path(item["filename"]).resolve().relative_to(root.resolve()).as_posix()
        where = f"{path}:{item['location']['row']}"
        found[f"{path}::{m['name']}"] = (int(m["score"]), where)
    problems = []
    for key, (score, where) in sorted(found.items()):
        ceiling = allowed.get(key)
        if ceiling is None:
            problems.append(f"{where}: {key} has complexity {score} > 15 (simplify it, or name it in pyproject.toml)")
        elif score > ceiling:
            problems.append(f"{where}: {key} has complexity {score}, above its named ceiling {ceiling}")
    checked_all = not paths
    for key in sorted(set(allowed) - set(found)):
        if checked_all or any(key.startswith(p.rstrip("/")) for p in paths):
            problems.append(f"pyproject.toml: {key} is at most 15 now; remove it from [tool.betbox.complexity]")
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
