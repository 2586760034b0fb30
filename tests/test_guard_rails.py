"""The guard rails scripts/lint runs (issue #15): the complexity limit with its named
exceptions, and scripts/test running the lint before the suite."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _complexity():
    spec = importlib.util.spec_from_file_location("complexity", ROOT / "scripts" / "complexity.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _branchy(name: str, n: int) -> str:
    """A function of McCabe complexity ``n + 1``."""
    body = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(n))
    return f"def {name}(x):\n{body}    return -1\n"


def _project(tmp_path: Path, exceptions: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.ruff.lint.mccabe]\nmax-complexity = 15\n\n[tool.betbox.complexity]\n" + exceptions)
    (tmp_path / "game.py").write_text(_branchy("simple", 3) + "\n\n" + _branchy("tangled", 17))
    return tmp_path


def test_a_function_above_15_fails_unless_named(tmp_path, capsys):
    complexity = _complexity()
    assert complexity.main([], _project(tmp_path, "")) == 1
    assert "game.py::tangled has complexity 18 > 15" in capsys.readouterr().out
    assert complexity.main([], _project(tmp_path, '"game.py::tangled" = 18\n')) == 0


def test_a_named_function_may_not_grow_and_a_needless_name_goes(tmp_path, capsys):
    complexity = _complexity()
    assert complexity.main([], _project(tmp_path, '"game.py::tangled" = 17\n')) == 1
    assert "above its named ceiling 17" in capsys.readouterr().out
    assert complexity.main([], _project(tmp_path, '"game.py::tangled" = 18\n"game.py::simple" = 16\n')) == 1
    assert "game.py::simple is at most 15 now" in capsys.readouterr().out


def test_scripts_test_runs_the_lint_before_pytest():
    lines = [line.strip() for line in (ROOT / "scripts" / "test").read_text().splitlines()]
    assert lines.index("scripts/lint") < next(i for i, line in enumerate(lines) if "pytest" in line
                                              and not line.startswith("#"))
