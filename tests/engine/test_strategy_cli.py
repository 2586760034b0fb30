"""`betbox strategy` and the main game in `betbox edge`: the chart as table and JSON, its errors."""

from __future__ import annotations

import json

from firmware.cli import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_strategy_json_has_hard_soft_pairs_surrender_and_matches_edge(capsys):
    code, out, err = run(capsys, "strategy", "--profile", "rws-blackjack", "--json")
    assert code == 0, err
    data = json.loads(out)
    s = data["strategy"]
    assert s["hard"]["11"]["6"] == "D" and s["hard"]["16"]["7"] == "H" and s["hard"]["13"]["2"] == "S"
    assert s["soft"]["18"]["3"] == "Ds"
    assert s["pairs"]["A,A"]["6"] == "P" and s["pairs"]["10,10"]["6"] == "S"
    assert s["surrender"]["hard 16"]["10"] == "R" and "A" not in s["surrender"]["hard 16"]
    code, out, err = run(capsys, "edge", "--profile", "rws-blackjack", "--json")
    assert code == 0, err
    edge = json.loads(out)["main"]
    assert edge["house_edge"] == data["house_edge"] and edge["strategy"] == s
    assert edge["clauses"]["split"] == "rws-blackjack-v5 §3.21"


def test_strategy_text_and_edge_text_show_the_main_edge(capsys):
    code, out, _ = run(capsys, "strategy", "--profile", "uk-4-deck")
    assert code == 0
    assert out.startswith("uk-4-deck: 4 decks, main game house edge 0.40%")
    assert "surrender: never" in out
    code, out, _ = run(capsys, "edge", "--profile", "uk-4-deck")
    assert code == 0 and "main game (basic strategy, betbox strategy): house edge 0.40%" in out


def test_switch_chart_has_the_switch_rule_and_hand_values(capsys):
    code, out, err = run(capsys, "strategy", "--profile", "rws-blackjack-switch", "--decks", "8", "--json")
    assert code == 0, err
    sw = json.loads(out)["strategy"]["switch"]
    assert "Switch §3.11" in sw["rule"]
    assert sw["hand_values"]["6"]["10,10"] > sw["hand_values"]["6"]["6,10"]
    assert sw["hand_values"]["10"]["A,10"] == 1.0            # Switch §3.8, §4.1.1: paid 1:1 at once
    assert sw["hand_values_switched"]["10"]["A,10"] < 1.0    # a switched 21 is no Blackjack


def test_strategy_refuses_a_deck_count_the_profile_does_not_play(capsys):
    code, _, err = run(capsys, "strategy", "--profile", "uk-4-deck", "--decks", "6")
    assert code == 2 and "--decks 6: profile 'uk-4-deck' is played with 4 decks" in err
    code, _, err = run(capsys, "strategy", "--profile", "no-such")
    assert code == 2 and "unknown profile 'no-such'" in err


def test_strategy_and_simulate_answer_a_profile_file_that_is_no_profile(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'[profile]\nname = "\xff"\n')
    deep = tmp_path / "deep.toml"
    deep.write_bytes(b"x = " + b"[" * 3000 + b"]" * 3000 + b"\n")
    for command in (["strategy"], ["simulate", "--rounds", "10"]):
        code, _, err = run(capsys, *command, "--profile", str(bad))
        assert code == 2 and err.endswith(f"--profile {bad}: not UTF-8 text\n"), err
        code, _, err = run(capsys, *command, "--profile", str(deep))
        assert code == 2 and "error:" in err and "Traceback" not in err
        code, _, err = run(capsys, *command, "--profile", str(tmp_path / "missing.toml"))
        assert code == 2 and "cannot read profile" in err
