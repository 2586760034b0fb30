"""`betbox settle`: JSON in, JSON out; bad input exits non-zero saying what and where."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from firmware.cli import main


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path, script) -> str:
    path = tmp_path / "round.json"
    path.write_text(script if isinstance(script, str) else json.dumps(script))
    return str(path)


GOOD = {"profile": "rws-blackjack", "decks": 6,
        "wagers": {"1": {"main": 100, "player_pair": 10}, "3": {"main": 50}},
        "shoe": ["TS", "6H", "9D", "TD", "9H", "4C", "8S"],
        "decisions": {"1": ["stand"], "3": ["hit", "stand"]},
        "limits": {"main": [10, 5000]}}


def test_settles_a_script_from_a_file(tmp_path, capsys):
    code, out, err = run_cli(capsys, "settle", write(tmp_path, GOOD), "--json")
    assert code == 0 and err == ""
    result = json.loads(out)
    assert result["void"] is False
    assert result["dealer"] == {"cards": ["9D", "8S"], "total": 17, "blackjack": False}
    b1, b3 = result["boxes"]["1"], result["boxes"]["3"]
    assert b1["hands"][0]["cards"] == ["TS", "TD"] and b1["hands"][0]["result"] == "win"
    assert b1["bets"] == {"player_pair": 110, "main": 100} and b1["net"] == 210
    assert b3["hands"][0]["cards"] == ["6H", "9H", "4C"] and b3["net"] == 50


def test_reads_standard_input():
    proc = subprocess.run([sys.executable, "-m", "firmware", "settle", "-", "--json"], input=json.dumps(
        {"profile": "rws-blackjack", "wagers": {"1": {"main": 25}}, "shoe": ["AS", "6H", "KD"]}),
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["boxes"]["1"]["bets"]["main"] == 37.5     # exact 3:2 on 25


@pytest.mark.parametrize("script,message", [
    ("{not json", "not valid JSON"),
    ({"wagers": {}}, "profile: missing"),
    ({"profile": "rws-blackjack", "wagers": {}, "shoe": [], "dealer": 1}, "unknown key 'dealer'"),
    ({"profile": "nope", "wagers": {}}, "profile: unknown profile 'nope'"),
    ({"profile": "rws-blackjack", "wagers": {"1": {"main": 10}}, "shoe": ["TS", "XX"]}, "shoe[1]: cannot read card 'XX'"),
    ({"profile": "rws-blackjack", "wagers": {"one": {"main": 10}}}, "wagers: 'one' is not a box number"),
    ({"profile": "rws-blackjack", "wagers": {"1": {"main": "ten"}}}, "wagers['1']: 'ten' is not an amount"),
    ({"profile": "rws-blackjack", "wagers": {"1": {"lucky": 10}}}, "'lucky' is not a bet at rws-blackjack"),
    ({"profile": "rws-blackjack", "decks": 2, "wagers": {}}, "played with 4 to 8 decks, not 2"),
    ({"profile": "rws-blackjack", "wagers": {"1": {"main": 10}}, "shoe": ["TS", "6H", "9D"],
      "decisions": {"1": ["stnad"]}}, "decisions['1'][0]: 'stnad' is not a decision"),
    ({"profile": "rws-blackjack", "wagers": {"1": {"main": 10}}, "shoe": ["TS", "6H", "5D", "2C"],
      "decisions": {"1": ["hit"]}}, "decisions['1']: ran out while box 1 hand 1 (TS 5D 2C (17)) needs a decision"),
    ({"profile": "rws-blackjack", "wagers": {"1": {"main": 10}}, "shoe": ["TS", "6H", "9D", "TC", "9C"],
      "decisions": {"1": ["stand", "hit"]}}, "decisions['1'][1]: hit was never asked for"),
    ({"profile": "rws-blackjack", "wagers": {"1": {"main": 10, "under_13": 20}}},
     "under_13 20 is above the initial bet 10"),
    ({"profile": "rws-blackjack", "wagers": {"1": {"main": 10}}, "limits": {"mian": [1, 2]}},
     "limits: 'mian' is not a bet"),
    # an exponent that would build a number of a billion digits (settle hung on it)
    ({"profile": "rws-blackjack", "wagers": {"1": {"main": "1e999999999"}}}, "wagers['1']: '1e999999999' is out of range"),
    ({"profile": "rws-blackjack", "wagers": {"1": {"main": "1e-999999999"}}}, "wagers['1']: '1e-999999999' is out of range"),
])
def test_bad_scripts_exit_non_zero_naming_what_and_where(tmp_path, capsys, script, message):
    code, out, err = run_cli(capsys, "settle", write(tmp_path, script))
    assert code != 0 and out == ""
    assert message in err, err


W = {"1": {"main": 10}}


@pytest.mark.parametrize("script", [
    {"wagers": {}},
    [],
    {"profile": "rws-blackjack", "wagers": {}, "dealer": 1},
    {"profile": "nope", "wagers": {}},
    {"profile": "rws-blackjack", "wagers": []},
    {"profile": "rws-blackjack", "wagers": {"1": []}},
    {"profile": "rws-blackjack", "wagers": {"one": {"main": 10}}},
    {"profile": "rws-blackjack", "wagers": {"1": {"main": "ten"}}},
    {"profile": "rws-blackjack", "wagers": {"1": {"main": "1e999999999"}}},
    {"profile": "rws-blackjack", "wagers": {"1": {"main": 10**12}}},
    {"profile": "rws-blackjack", "decks": "six", "wagers": W},
    {"profile": "rws-blackjack", "wagers": W, "shoe": ["TS", "XX"]},
    {"profile": "rws-blackjack", "wagers": W, "decisions": {"1": "stand"}},
    {"profile": "rws-blackjack", "wagers": W, "decisions": {"1": ["stnad"]}},
    {"profile": "rws-blackjack", "wagers": W, "insurance": {"1": "lots"}},
    {"profile": "rws-blackjack", "wagers": W, "walked_away": [15]},
    {"profile": "rws-blackjack", "wagers": W, "limits": {"main": [10, "1e999"]}},
], ids=lambda s: json.dumps(s)[:60])
def test_a_malformed_script_is_bad_input(tmp_path, capsys, script):
    """Exit 2 (README: bad input, naming it), not 1: 1 is a well-formed round the rules refuse.
    Every script error was 1, a wager list where an object belongs as much as an illegal hit."""
    code, out, err = run_cli(capsys, "settle", write(tmp_path, script))
    assert code == 2 and out == "" and err.startswith("betbox settle: "), (code, err)


@pytest.mark.parametrize("script", [
    {"profile": "rws-blackjack", "wagers": {"1": {"lucky": 10}}},
    {"profile": "rws-blackjack", "decks": 2, "wagers": {}},
    {"profile": "rws-blackjack", "wagers": {"1": {"main": 10, "under_13": 20}}},
    {"profile": "rws-blackjack", "wagers": W, "shoe": ["TS", "6H", "9D", "TC", "9C"], "decisions": {"1": ["stand", "hit"]}},
    {"profile": "rws-blackjack", "wagers": W, "shoe": ["TS", "6H", "5D", "2C"], "decisions": {"1": ["hit"]}},
], ids=lambda s: json.dumps(s)[:60])
def test_a_round_the_rules_refuse_is_refused(tmp_path, capsys, script):
    code, out, err = run_cli(capsys, "settle", write(tmp_path, script))
    assert code == 1 and out == "", (code, err)


def test_missing_file(capsys, tmp_path):
    code, _, err = run_cli(capsys, "settle", str(tmp_path / "nope.json"))
    assert code == 2 and "cannot read" in err


def test_split_double_and_settlement_amounts_in_the_issue_example_shape(tmp_path, capsys):
    script = {"profile": "rws-blackjack", "decks": 6,
              "wagers": {"1": {"main": 100, "player_pair": 10}, "3": {"main": 50}},
              "shoe": ["TS", "6H", "9D", "TH", "AS", "3C", "9C", "8D", "7C", "8C"],
              "decisions": {"1": ["split", "stand", "double:100"], "3": ["hit", "stand"]},
              "limits": {"main": [10, 5000]}}
    code, out, err = run_cli(capsys, "settle", write(tmp_path, script), "--json")
    assert code == 0, err
    r = json.loads(out)
    b1, b3 = r["boxes"]["1"], r["boxes"]["3"]
    # T T split: hand 1 T 3 (13) stands; hand 2 T 9 doubles for 100 and busts with the 8
    assert [h["cards"] for h in b1["hands"]] == [["TS", "3C"], ["TH", "9C", "8D"]]
    assert [h["result"] for h in b1["hands"]] == ["lose", "bust"]
    assert b1["bets"] == {"player_pair": 110, "main": -300} and b1["net"] == -190
    # box 3: 6 A (soft 17) hits a 7: hard 14 against the dealer's 9 8
    assert b3["hands"][0]["cards"] == ["6H", "AS", "7C"] and b3["hands"][0]["total"] == 14
    assert r["dealer"]["cards"] == ["9D", "8C"] and b3["net"] == -50
