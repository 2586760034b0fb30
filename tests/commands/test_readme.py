"""Issue #19: the README and docs are true in a plain clone. Every relative link resolves
inside the repository; every `betbox` command the README's table lists exists and takes
every option the row names; the headless demo the README quotes runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)#\s]+)(?:#[^)]*)?\)")


def betbox(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "firmware", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_inside_the_repository(doc: Path):
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue                                    # a web address
        path = (doc.parent / target).resolve()
        assert path.exists(), f"{doc.relative_to(ROOT)} links {target}, which is not in the repository"
        assert ROOT in path.parents or path == ROOT, f"{doc.relative_to(ROOT)} links {target}, outside the repository"


def command_rows() -> list[tuple[str, list[str]]]:
    """(subcommand words, options) of every `betbox ...` the README's command table names."""
    text = (ROOT / "README.md").read_text()
    table = text[text.index("## Commands"):text.index("### `betbox settle`")]
    rows = []
    for line in table.splitlines():
        if not line.startswith("| `betbox"):
            continue
        for use in re.findall(r"`(betbox [^`]+)`", line.split(" | ")[0]):
            words = [w.replace("\\", "").split("|")[0] for w in use.split()[1:]]   # list\|enrol: list
            sub = [w for w in words[:2] if re.fullmatch(r"[a-z][a-z-]*", w)]
            if len(sub) == 2 and sub[0] not in {"jackpot", "journal", "device", "pit", "chips", "floor"}:
                sub = sub[:1]
            options = sorted(set(re.findall(r"--[a-z][a-z-]*", use)))
            rows.append((" ".join(sub), options))
    return rows


@pytest.mark.parametrize("sub,options", command_rows(), ids=lambda v: v if isinstance(v, str) else None)
def test_every_command_the_readme_lists_takes_the_options_it_names(sub: str, options: list[str]):
    run = betbox(*sub.split(), "--help")
    assert run.returncode == 0, f"betbox {sub} --help: {run.stderr}"
    for option in options:
        assert option in run.stdout, f"the README names betbox {sub} {option}; its --help does not"


def test_the_readme_lists_every_command_there_is():
    listed = {sub.split()[0] for sub, _ in command_rows()}
    run = betbox("--help")
    commands = set(re.findall(r"^    ([a-z][a-z-]*) ", run.stdout, re.M))
    assert commands, run.stdout
    assert commands <= listed | {"version"}, f"not in the README's table: {sorted(commands - listed)}"


def test_the_quoted_headless_demo_runs_as_written():
    text = (ROOT / "README.md").read_text()
    assert "`scripts/demo --headless --rounds 50 --seed 7`" in text
    run = betbox("demo", "--headless", "--rounds", "3", "--seed", "7", timeout=300)   # fewer rounds, same path
    assert run.returncode == 0, run.stderr[-2000:]
    assert "== all tables (1)" in run.stdout and "== what the figures mean" in run.stdout
