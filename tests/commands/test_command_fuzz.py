"""#12.8: commands never trace back. Each command is run with each hostile input; it must
exit with a documented non-zero code (1 refused, 2 bad input: never 3, a fault) and one
message naming the input, never a traceback. A few run as real processes too."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from firmware.cli import main
from tests.tech.configs import dealer_config, seat_config

ROOT = Path(__file__).resolve().parents[2]
HUGE = str(10**30)


def hostile(tmp: Path) -> dict[str, str]:
    """Files a hostile or careless user hands the commands, by name -> path."""
    files = {
        "bad_utf8.toml": b'[unit]\nrole = "seat"\nid = "s\xff"\n',
        "deep.toml": b"x = " + b"[" * 3000 + b"]" * 3000 + b"\n",
        "deep.json": b"[" * 100_000 + b"]" * 100_000,
        "deep_object.json": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        "digits.json": b'{"profile": "rws-blackjack", "wagers": {"1": {"main": ' + b"9" * 5000 + b"}}}",
        "digits_text.json": b'{"profile": "rws-blackjack", "wagers": {"1": {"main": "' + b"9" * 5000 + b'"}}}',
        "e400.json": b'{"profile": "rws-blackjack", "wagers": {"1": {"main": 1e400}}, "shoe": ["TS"]}',
        "e308.json": (b'{"profile": "rws-blackjack", "wagers": {"1": {"main": 1e308}}, "shoe": ["TS", "6H", "9D", '
                      b'"TC"], "decisions": {"1": ["stand"]}}'),
        "int400.json": b'{"profile": "rws-blackjack", "wagers": {"1": {"main": 1' + b"0" * 400 + b"}}}",
        "meter.json": b'{"profile": "rws-blackjack-switch", "meter": "1e400", "wagers": {"1": {"main": 10}}}',
        "double.json": (b'{"profile": "rws-blackjack", "wagers": {"1": {"main": 10}}, "shoe": ["5S", "6H", "9D", '
                        b'"5C", "TC"], "decisions": {"1": ["double:1e308"]}}'),
        "box30.json": b'{"profile": "rws-blackjack", "wagers": {"' + HUGE.encode() + b'": {"main": 10}}}',
        "boxes.json": json.dumps({"profile": "rws-blackjack",
                                  "wagers": {str(b): {"main": 10} for b in range(1, 100_001)}}).encode(),
        "bad_utf8.json": b'{"profile": "\xff"}',
        "garbage.db": b"\x00\x01 not a database at all " * 100,
        "chips_field.csv": b"uid,denomination,status\n\"" + b"0" * 200_000 + b'",5,valid\n',
        "chips_header.csv": b"uid," * 30_000 + b"\n",
        "chips_uid.csv": b"uid,denomination,status\n" + b"A" * 100_000 + b",5,valid\n",
        "chips_status.csv": b"uid,denomination,status\n0A01,5," + b"x" * 100_000 + b"\n",
    }
    out = {}
    for name, data in files.items():
        (tmp / name).write_bytes(data)
        out[name] = str(tmp / name)
    (tmp / "a_dir").mkdir()
    out["a_dir"] = str(tmp / "a_dir")
    out["missing"] = str(tmp / "missing.file")
    # a state directory whose journal has corrupt records: one nested 60,000 deep, one not JSON
    assert main(["demo", "--headless", "--rounds", "2", "--seed", "3", "--state-dir", str(tmp / "state"),
                 "--profile", "rws-blackjack"]) == 0
    journal = tmp / "state" / "table-1" / "dealer" / "journal.db"
    db = sqlite3.connect(journal)
    db.execute("UPDATE record SET body = ? WHERE id = 3", ("[" * 60_000 + "]" * 60_000,))
    db.execute("UPDATE record SET body = '{not json' WHERE id = 5")
    db.commit()
    db.close()
    out["corrupt_state"] = str(tmp / "state")
    # a copy whose record has a text where its sequence number belongs (SQLite keeps any type)
    shutil.copytree(tmp / "state", tmp / "text_seq")
    db = sqlite3.connect(tmp / "text_seq" / "table-1" / "dealer" / "journal.db")
    db.execute("UPDATE record SET seq = 'x' WHERE id = 4")
    db.commit()
    db.close()
    out["text_seq"] = str(tmp / "text_seq")
    (tmp / "dir_journal" / "journal.db").mkdir(parents=True)
    out["dir_journal"] = str(tmp / "dir_journal")
    return out


# (id, argv built from the files, a text the message must hold: the input it names)
Case = tuple[str, Callable[[dict[str, str]], list[str]], Callable[[dict[str, str]], str]]
CASES: list[Case] = [
    ("run invalid UTF-8", lambda f: ["run", "--config", f["bad_utf8.toml"]], lambda f: f["bad_utf8.toml"]),
    ("run 3000-deep TOML", lambda f: ["run", "--config", f["deep.toml"], "--check"], lambda f: f["deep.toml"]),
    ("run config is a directory", lambda f: ["run", "--config", f["a_dir"]], lambda f: f["a_dir"]),
    ("run config missing", lambda f: ["run", "--config", f["missing"], "--check"], lambda f: f["missing"]),
    ("run config garbage", lambda f: ["run", "--config", f["garbage.db"], "--check"], lambda f: f["garbage.db"]),
    ("settle 100000-deep JSON", lambda f: ["settle", f["deep.json"]], lambda f: f["deep.json"]),
    ("settle 50000-deep object", lambda f: ["settle", f["deep_object.json"]], lambda f: f["deep_object.json"]),
    ("settle 5000-digit amount", lambda f: ["settle", f["digits.json"]], lambda f: f["digits.json"]),
    ("settle 5000-digit amount text", lambda f: ["settle", f["digits_text.json"]], lambda f: "wagers['1']"),
    ("settle 1e400", lambda f: ["settle", f["e400.json"]], lambda f: "wagers['1']"),
    ("settle 1e308", lambda f: ["settle", f["e308.json"]], lambda f: "wagers['1']"),
    ("settle 10**400", lambda f: ["settle", f["int400.json"]], lambda f: "wagers['1']"),
    ("settle meter 1e400", lambda f: ["settle", f["meter.json"]], lambda f: "meter"),
    ("settle double 1e308", lambda f: ["settle", f["double.json"]], lambda f: "decisions['1'][0]"),
    ("settle box 10**30", lambda f: ["settle", f["box30.json"]], lambda f: "not a box number"),
    ("settle 10**5 boxes", lambda f: ["settle", f["boxes.json"]], lambda f: f["boxes.json"]),
    ("settle invalid UTF-8", lambda f: ["settle", f["bad_utf8.json"]], lambda f: f["bad_utf8.json"]),
    ("settle a directory", lambda f: ["settle", f["a_dir"]], lambda f: f["a_dir"]),
    ("settle --indent huge", lambda f: ["settle", f["e308.json"], "--json", "--indent", HUGE], lambda f: "--indent"),
    ("edge profile invalid UTF-8", lambda f: ["edge", "--profile", f["bad_utf8.toml"]], lambda f: f["bad_utf8.toml"]),
    ("edge profile 3000-deep", lambda f: ["edge", "--profile", f["deep.toml"]], lambda f: "deep.toml"),
    ("edge --decks 10**30", lambda f: ["edge", "--profile", "rws-blackjack", "--decks", HUGE], lambda f: "--decks"),
    ("edge --meter 10**400", lambda f: ["edge", "--profile", "rws-blackjack-switch", "--meter", "1" + "0" * 400],
     lambda f: "--meter"),
    ("edge --meter 1e308", lambda f: ["edge", "--profile", "rws-blackjack-switch", "--meter", "1e308"],
     lambda f: "--meter"),
    ("journal show --round 10**30", lambda f: ["journal", "show", f["corrupt_state"], "--round", HUGE],
     lambda f: f["corrupt_state"]),
    ("journal show corrupt records", lambda f: ["journal", "show", f["corrupt_state"]], lambda f: f["corrupt_state"]),
    ("journal show db is a directory", lambda f: ["journal", "show", f["dir_journal"]], lambda f: f["dir_journal"]),
    ("journal stats a text seq", lambda f: ["journal", "stats", f["text_seq"]], lambda f: f["text_seq"]),
    ("journal show a text seq", lambda f: ["journal", "show", f["text_seq"]], lambda f: f["text_seq"]),
    ("journal stats db is a directory", lambda f: ["journal", "stats", f["dir_journal"]], lambda f: f["dir_journal"]),
    ("jackpot report db is a directory", lambda f: ["jackpot", "report", "--db", f["a_dir"]], lambda f: "a_dir"),
    ("jackpot report garbage db", lambda f: ["jackpot", "report", "--db", f["garbage.db"]], lambda f: "garbage.db"),
    ("jackpot serve db is a directory", lambda f: ["jackpot", "serve", "--broker", "mqtt://127.0.0.1:1", "--db",
                                                   f["a_dir"]], lambda f: "a_dir"),
    ("jackpot serve garbage db", lambda f: ["jackpot", "serve", "--broker", "mqtt://127.0.0.1:1", "--db",
                                            f["garbage.db"]], lambda f: "garbage.db"),
    ("jackpot serve pools 3000-deep", lambda f: ["jackpot", "serve", "--broker", "mqtt://127.0.0.1:1", "--db",
                                                 f["missing"], "--pools", f["deep.toml"]], lambda f: "deep.toml"),
    ("jackpot serve pools invalid UTF-8", lambda f: ["jackpot", "serve", "--broker", "mqtt://127.0.0.1:1", "--db",
                                                     f["missing"], "--pools", f["bad_utf8.toml"]],
     lambda f: "bad_utf8.toml"),
    ("jackpot confirm --round 10**30", lambda f: ["jackpot", "confirm", "--broker", "mqtt://127.0.0.1:1", "--unit",
                                                  "table-1/seat-1", "--round", HUGE], lambda f: "--round"),
    ("jackpot confirm --hit 10**30", lambda f: ["jackpot", "confirm", "--broker", "mqtt://127.0.0.1:1", "--hit", HUGE],
     lambda f: "--hit"),
    ("jackpot confirm --timeout 1e308", lambda f: ["jackpot", "confirm", "--broker", "mqtt://127.0.0.1:1", "--hit", "1",
                                                   "--timeout", "1e308"], lambda f: "--timeout"),
    ("jackpot confirm password file a directory", lambda f: ["jackpot", "confirm", "--broker", "mqtt://127.0.0.1:1",
                                                             "--hit", "1", "--password-file", f["a_dir"]],
     lambda f: "--password-file"),
    ("jackpot confirm --password on argv", lambda f: ["jackpot", "confirm", "--broker", "mqtt://127.0.0.1:1", "--hit",
                                                      "1", "--password", "secret"], lambda f: "--password"),
    ("device --baud 12345", lambda f: ["device", "shoe", "--baud", "12345", "--exit"], lambda f: "--baud"),
    ("device --seed 10**30", lambda f: ["device", "shoe", "--seed", HUGE, "--exit"], lambda f: "--seed"),
    ("device script a directory", lambda f: ["device", "shoe", "--script", f["a_dir"], "--exit"], lambda f: "a_dir"),
    ("device script invalid UTF-8", lambda f: ["device", "shoe", "--script", f["bad_utf8.toml"], "--exit"],
     lambda f: "bad_utf8.toml"),
    ("demo --rounds 10**30", lambda f: ["demo", "--headless", "--rounds", HUGE], lambda f: "--rounds"),
    ("demo --tables 10**30", lambda f: ["demo", "--headless", "--tables", HUGE], lambda f: "--tables"),
    ("demo --seed 10**30", lambda f: ["demo", "--headless", "--seed", HUGE], lambda f: "--seed"),
    ("demo state dir is a file", lambda f: ["demo", "--headless", "--rounds", "1", "--state-dir", f["garbage.db"]],
     lambda f: "garbage.db"),
    ("chips list field beyond csv's limit", lambda f: ["chips", "list", "--file", f["chips_field.csv"]],
     lambda f: "chips_field.csv"),
    ("chips list a 120,000-character header", lambda f: ["chips", "list", "--file", f["chips_header.csv"]],
     lambda f: "chips_header.csv line 1"),
    ("chips list a 100,000-character UID", lambda f: ["chips", "list", "--file", f["chips_uid.csv"]],
     lambda f: "chips_uid.csv line 2: not a tag UID"),
    ("chips list a 100,000-character status", lambda f: ["chips", "list", "--file", f["chips_status.csv"]],
     lambda f: "chips_status.csv line 2"),
    ("chips list invalid UTF-8", lambda f: ["chips", "list", "--file", f["bad_utf8.json"]], lambda f: "bad_utf8.json"),
    ("chips enrol 5000-digit denomination", lambda f: ["chips", "enrol", "--file", f["missing"], "0A01", "9" * 5000],
     lambda f: "denomination"),
    ("chips enrol 1e400", lambda f: ["chips", "enrol", "--file", f["missing"], "0A01", "1e400"],
     lambda f: "denomination"),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    return hostile(tmp_path_factory.mktemp("hostile"))


def run(capsys, argv: list[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:            # argparse's usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, err


@pytest.mark.parametrize("name, argv, named", CASES, ids=[c[0] for c in CASES])
def test_every_command_answers_every_hostile_input_with_a_message_and_a_documented_code(files, capsys, name,
                                                                                         argv, named):
    code, err = run(capsys, argv(files))
    assert code in (1, 2), (code, err)          # 3 would be a fault in betbox
    assert "Traceback" not in err
    assert named(files) in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and len(lines[-1]) < 2000          # one readable message, not 5,000 digits


@pytest.mark.parametrize("name", ["run invalid UTF-8", "settle 100000-deep JSON", "journal show corrupt records",
                                  "settle 5000-digit amount"])
def test_as_a_process_there_is_no_traceback_either(files, name):
    argv = next(c[1] for c in CASES if c[0] == name)(files)
    proc = subprocess.run([sys.executable, "-m", "firmware", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("betbox ")


def test_an_unexpected_fault_is_one_line_with_exit_code_3(tmp_path, capsys, monkeypatch):
    """What no command foresaw still ends as one line naming the command and its input."""
    import firmware.commands.settle as settle

    def broken(script):
        raise KeyError("a bug")
    monkeypatch.setattr(settle, "run_script", broken)
    path = tmp_path / "round.json"
    path.write_text(json.dumps({"profile": "rws-blackjack", "wagers": {"1": {"main": 10}}}))
    code, err = run(capsys, ["settle", str(path)])
    assert code == 3 and "Traceback" not in err
    assert err.startswith(f"betbox settle: settle {path}: failed: KeyError") and len(err.splitlines()) == 1


def _one_gib() -> None:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


SPECIAL_FILE_CASES = [
    ["run", "--config", "/dev/zero", "--check"],
    ["diag", "--config", "/dev/zero"],
    ["chips", "list", "--file", "/dev/zero"],
    ["provision", "/dev/zero", "--check"],
    ["strategy", "--profile", "/dev/zero"],
    ["jackpot", "serve", "--broker", "mqtt://127.0.0.1:1", "--db", "{tmp}/j.db", "--pools", "/dev/zero"],
    ["device", "shoe", "--script", "/dev/zero", "--exit"],
    ["run", "--config", "{tmp}/seat.toml", "--check"],            # [seat] chips = "/dev/zero"
    ["run", "--config", "{tmp}/dealer.toml", "--check"],          # [game] profile = "/dev/zero"
]


@pytest.mark.parametrize("argv", SPECIAL_FILE_CASES, ids=[" ".join(a[:2]) + f" {i}" for i, a in
                                                          enumerate(SPECIAL_FILE_CASES)])
def test_a_special_file_is_refused_by_its_size_not_read_for_ever(tmp_path, argv):
    """/dev/zero has no size (st_size 0): a configuration, chip registry, provisioning file,
    profile or pools file was read whole, gigabytes a few seconds until the memory ran out (on a
    unit the OOM killer; here a 1 GiB cap). Each is read to its bound and refused, naming it."""
    seat = seat_config(tmp_path)
    seat.write_text(seat.read_text().replace(f'chips = "{tmp_path / "chips.csv"}"', 'chips = "/dev/zero"'))
    dealer_config(tmp_path, profile="/dev/zero")
    for config in ("seat.toml", "dealer.toml"):
        assert '= "/dev/zero"' in (tmp_path / config).read_text()
    argv = [a.format(tmp=tmp_path) for a in argv]
    proc = subprocess.run([sys.executable, "-m", "firmware", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, preexec_fn=_one_gib)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "/dev/zero" in proc.stderr and "larger than" in proc.stderr, proc.stderr


BROKEN_LINK_CASES = [
    ["run", "--config", "{link}", "--check"],
    ["strategy", "--profile", "{link}"],
    ["chips", "list", "--file", "{link}"],
    ["provision", "{link}", "--check"],
]


@pytest.mark.parametrize("argv", BROKEN_LINK_CASES, ids=[a[0] for a in BROKEN_LINK_CASES])
def test_a_broken_symlink_is_said_to_be_one_naming_its_target(tmp_path, capsys, argv):
    """A file read through engine.strict.read_text that is a dangling symlink was "No such file
    or directory", though `ls` shows it there: the message says it is a link and to what."""
    link = tmp_path / "file.toml"
    link.symlink_to(tmp_path / "gone.toml")
    code, err = run(capsys, [a.format(link=link) for a in argv])
    assert code == 2 and "Traceback" not in err, err
    assert f"{link}: a broken symlink to {tmp_path / 'gone.toml'}" in err, err


def test_an_empty_spot_name_is_refused_not_skipped_shifting_the_antennas(capsys):
    """`device rfid --spots main,,insurance` was read as main,insurance: insurance moved from
    antenna 2 to antenna 1 without a word. A hole in a comma list is refused, naming where."""
    code, err = run(capsys, ["device", "rfid", "--spots", "main,,insurance", "--exit"])
    assert code == 2 and "argument --spots: 'main,,insurance': empty name at position 2" in err, err
    code, err = run(capsys, ["device", "rfid", "--spots", ",", "--exit"])
    assert code == 2 and "argument --spots: ',': empty names at positions 1, 2" in err, err


def test_a_name_given_twice_in_a_comma_list_is_refused(capsys):
    """`device rfid --spots main,main` had two antennas read as one spot (chips on either
    counted as the other's); `simulate --side-bets a,a` played a once. Both are mistakes said."""
    code, err = run(capsys, ["device", "rfid", "--spots", "main,insurance,main", "--exit"])
    assert code == 2 and "argument --spots: 'main,insurance,main': 'main' at positions 1 and 3" in err, err
    code, err = run(capsys, ["simulate", "--profile", "rws-perfect-pairs", "--rounds", "1",
                             "--side-bets", "perfect_pairs,perfect_pairs"])
    assert code == 2 and "'perfect_pairs' at positions 1 and 2" in err, err
