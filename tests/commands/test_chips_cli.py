"""`betbox chips`: list, enrol and bar chips with the registry's own checks; the shipped
example registry is what a seat starts with."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from firmware.chips import ChipRegistry, ChipStatus
from firmware.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "chips.csv"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_shipped_example_is_a_registry_a_seat_accepts():
    registry = ChipRegistry.load(EXAMPLE)
    assert len(registry) >= 5
    assert registry.get("04A1B2C3D4E5FE").status is ChipStatus.BARRED      # "stolen" reads as barred


def test_list_by_uid_denomination_and_status(tmp_path, capsys):
    path = shutil.copy(EXAMPLE, tmp_path / "chips.csv")
    code, out, _ = run(capsys, "chips", "list", "--file", str(path), "--json")
    rows = json.loads(out)
    assert code == 0 and {"uid": "04A1B2C3D4E5FC", "denomination": "2.50", "status": "valid"} in rows
    code, out, _ = run(capsys, "chips", "list", "--file", str(path), "--status", "barred")
    assert code == 0 and "04A1B2C3D4E5FD" in out and "04A1B2C3D4E5F6" not in out and "2 chip(s): 2 barred" in out


def test_enrol_then_bar_keeps_comments_and_mode_and_a_seat_reads_the_result(tmp_path, capsys):
    path = tmp_path / "chips.csv"
    shutil.copy(EXAMPLE, path)
    path.chmod(0o640)
    before = path.read_text()
    assert run(capsys, "chips", "enrol", "--file", str(path), "0aff01", "25")[0] == 0
    assert run(capsys, "chips", "bar", "--file", str(path), "04A1B2C3D4E5F6")[0] == 0
    text = path.read_text()
    assert text.startswith(before.splitlines(keepends=True)[0]) and "# betbox chip registry" in text
    assert oct(path.stat().st_mode & 0o777) == "0o640"
    registry = ChipRegistry.load(path)
    assert registry.get("0AFF01").denomination == 25 and registry.get("0AFF01").status is ChipStatus.VALID
    assert registry.get("04A1B2C3D4E5F6").status is ChipStatus.BARRED
    assert len(registry) == len(ChipRegistry.load(EXAMPLE)) + 1


def test_enrol_creates_a_new_registry_with_its_header(tmp_path, capsys):
    path = tmp_path / "new.csv"
    assert run(capsys, "chips", "enrol", "--file", str(path), "04AB", "5")[0] == 0
    assert path.read_text() == "uid,denomination,status\n04AB,5.00,valid\n"


@pytest.mark.parametrize("args, code, message", [
    (["enrol", "04A1B2C3D4E5F6", "5"], 1, "UID 04A1B2C3D4E5F6 is already enrolled"),
    (["enrol", "04a1b2c3d4e5f6", "5"], 1, "already enrolled"),
    (["enrol", "XYZ", "5"], 1, "not a tag UID: 'XYZ'"),
    (["enrol", "0ABC", "5.001"], 1, "more than two decimals"),
    (["enrol", "0ABC", "1e400"], 1, "denomination '1e400'"),
    (["enrol", "0ABC", "9" * 5000], 1, "denomination"),
    (["enrol", "0ABC", "-5"], 1, "must be above 0"),
    (["bar", "0ABCDE"], 1, "UID 0ABCDE is not enrolled"),
    (["bar", "zz"], 1, "not a tag UID"),
])
def test_the_registrys_own_checks_refuse_and_leave_the_file_as_it_was(tmp_path, capsys, args, code, message):
    path = tmp_path / "chips.csv"
    shutil.copy(EXAMPLE, path)
    before = path.read_bytes()
    got, out, err = run(capsys, "chips", args[0], "--file", str(path), *args[1:])
    assert got == code and message in err and str(path) in err, err
    assert path.read_bytes() == before


def test_a_broken_registry_is_named_and_never_rewritten(tmp_path, capsys):
    path = tmp_path / "chips.csv"
    broken = "uid,denomination,status\n0A01,5,valid\n0a01,5,valid\n"
    path.write_text(broken)
    for action in (["list"], ["enrol", "0B01", "5"], ["bar", "0A01"]):
        code, _, err = run(capsys, "chips", action[0], "--file", str(path), *action[1:])
        assert code in (1, 2) and "line 3: duplicate UID 0A01" in err
    assert path.read_text() == broken
    code, _, err = run(capsys, "chips", "list", "--file", str(tmp_path / "missing.csv"))
    assert code == 2 and "cannot read" in err and "missing.csv" in err


def test_a_registry_behind_a_symlink_is_changed_where_it_is(tmp_path, capsys):
    """/etc/betbox/chips.csv -> /data/chips.csv: the rename put a new regular file in place of
    the link, and the file the link named (the one a seat may read) never got the chip."""
    real = tmp_path / "data" / "chips.csv"
    real.parent.mkdir()
    shutil.copy(EXAMPLE, real)
    link = tmp_path / "chips.csv"
    link.symlink_to(real)
    assert run(capsys, "chips", "enrol", "--file", str(link), "0aff01", "25")[0] == 0
    assert run(capsys, "chips", "bar", "--file", str(link), "04A1B2C3D4E5F6")[0] == 0
    assert link.is_symlink() and link.resolve() == real
    registry = ChipRegistry.load(real)
    assert registry.get("0AFF01").denomination == 25
    assert registry.get("04A1B2C3D4E5F6").status is ChipStatus.BARRED
    assert not [p.name for p in real.parent.iterdir() if p.name != "chips.csv"]    # no temporary left

