"""#19: the README's `betbox settle` example is a real round, run exactly as written; the
text mode is the default and `--json` writes `§` as is."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> tuple[str, str, str]:
    """(the JSON block, the command line shown, the text block) of README's settle section."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### `betbox settle`"):]
    section = section[:section.index("\n### ", 5)]
    script = re.search(r"```json\n(.*?)```", section, re.S).group(1)
    command = re.search(r"`(betbox settle round\.json)`", section).group(1)
    shown = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    return script, command, shown


def betbox(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "firmware", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_the_readme_example_runs_as_written_and_prints_what_the_readme_shows(tmp_path):
    script, command, shown = readme_example()
    (tmp_path / "round.json").write_text(script)
    proc = betbox(command.split()[1:], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == shown


def test_the_readme_example_is_a_played_round_that_uses_every_decision(tmp_path):
    script, command, _ = readme_example()
    (tmp_path / "round.json").write_text(script)
    proc = betbox([*command.split()[1:], "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["void"] is False and r["complete"] is True
    b1, b3 = r["boxes"]["1"], r["boxes"]["3"]
    # split, double:100 and stand all used: two hands, the first doubled
    assert [h["cards"] for h in b1["hands"]] == [["8S", "3C", "9H"], ["8D", "TC"]]
    assert b1["hands"][0]["doubled"] == 100 and [h["result"] for h in b1["hands"]] == ["win", "stand_off"]
    assert b1["bets"] == {"player_pair": 110, "insurance": -50, "main": 200} and b1["net"] == 260
    # the walked-away box: the House drew to 11 and on to 20
    assert b3["walked_away"] is True and b3["hands"][0]["cards"] == ["5C", "6C", "9D"] and b3["net"] == 50
    # every card of the listed shoe was dealt
    dealt = [c for b in r["boxes"].values() for h in b["hands"] for c in h["cards"]] + r["dealer"]["cards"]
    assert sorted(dealt) == sorted(json.loads(script)["shoe"])


def test_json_writes_the_section_sign_as_is_and_text_says_void(tmp_path):
    void = json.dumps({"profile": "rws-blackjack", "wagers": {"1": {"main": 10}}, "shoe": ["TS", "6H"]})
    proc = betbox(["settle", "-", "--json"], tmp_path, void)
    assert proc.returncode == 0, proc.stderr
    assert "§5.5.3" in proc.stdout and "\\u00a7" not in proc.stdout
    text = betbox(["settle", "-"], tmp_path, void)
    assert text.returncode == 0 and "VOID: insufficient_cards (rws-blackjack-v5 §5.5.3)" in text.stdout


def test_a_walked_away_blackjack_settles_when_the_round_ends_at_the_initial_deal(tmp_path):
    # #12.8: was "walked_away[0]: the round ended before the initial deal was complete"
    script = {"profile": "rws-blackjack", "wagers": {"1": {"main": 100}}, "shoe": ["AS", "9D", "KD"],
              "walked_away": ["1"]}
    proc = betbox(["settle", "-", "--json"], tmp_path, json.dumps(script))
    assert proc.returncode == 0, proc.stderr
    box = json.loads(proc.stdout)["boxes"]["1"]
    assert box["hands"][0]["result"] == "blackjack" and box["net"] == 150
    # an offer that was never made is still an error
    script["insurance"] = {"1": 50}
    proc = betbox(["settle", "-"], tmp_path, json.dumps(script))
    assert proc.returncode == 1 and "insurance['1']: the round ended before the initial deal" in proc.stderr
