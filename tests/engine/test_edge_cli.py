"""`betbox edge`: the published house edges through the command line, and its errors."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from firmware.cli import main


def edge(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["edge", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def edge_json(capsys, *argv: str) -> dict:
    code, out, err = edge(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_uk_4_deck_reproduces_the_posters_side_bet_house_edges(capsys):
    """uk-blackjack-4-deck-poster 'THE HOUSE EDGE USING 4 DECKS': PERFECT PAIRS (the poster's
    name for Super Pairs) 17.52%, 21 + 3 4.24%, TOP 3 15.04%. (The main game's 0.51%: below.)"""
    data = edge_json(capsys, "--profile", "uk-4-deck", "--decks", "4")
    assert data["profile"] == "uk-4-deck" and data["decks"] == 4
    edges = {name: round(bet["house_edge"] * 100, 2) for name, bet in data["bets"].items()}
    assert edges == {"super_pairs": 17.52, "twenty_one_plus_three": 4.24, "top_3": 15.04}


def test_uk_4_deck_pay_tables_in_the_json_uk_poster(capsys):
    bets = edge_json(capsys, "--profile", "uk-4-deck")["bets"]
    assert {c: o["pays"] for c, o in bets["super_pairs"]["outcomes"].items()} == {
        "suited_trips": 50, "suited_pair": 25, "prime_pair": 10, "any_pair": 5}
    assert {c: o["pays"] for c, o in bets["top_3"]["outcomes"].items()} == {
        "suited_three_of_a_kind": 270, "straight_flush": 180, "three_of_a_kind": 90}
    for bet in bets.values():
        total = sum(o["probability"] for o in bet["outcomes"].values()) + bet["lose_probability"]
        assert total == pytest.approx(1, abs=1e-12)


def test_perfect_pairs_8_decks_json_shape_perfect_pairs_v5_4_1_2(capsys):
    data = edge_json(capsys, "--profile", "rws-perfect-pairs", "--decks", "8")
    bet = data["bets"]["perfect_pairs"]
    assert bet["house_edge"] == pytest.approx(17 / 415, rel=1e-12)
    assert bet["outcomes"]["perfect_pair"] == {"probability": pytest.approx(7 / 415, rel=1e-12), "pays": 25}
    assert list(bet["outcomes"]) == ["perfect_pair", "coloured_pair", "mixed_pair"]


def test_decks_default_to_the_profiles_default_decks(capsys):
    assert edge_json(capsys, "--profile", "rws-perfect-pairs")["decks"] == 6


def test_switch_progressive_return_needs_a_meter_switch_4_1_2(capsys):
    without = edge_json(capsys, "--profile", "rws-blackjack-switch")["bets"]["progressive"]
    assert "return" not in without
    assert without["outcomes"]["suited_four_of_a_kind"]["pays"] == "100%"
    assert list(without["outcomes"]) == ["suited_four_of_a_kind", "four_of_a_kind", "two_pairs",
                                         "three_of_a_kind", "pair_of_aces"]
    low = edge_json(capsys, "--profile", "rws-blackjack-switch", "--meter", "10000")["bets"]["progressive"]
    high = edge_json(capsys, "--profile", "rws-blackjack-switch", "--meter", "20000")["bets"]["progressive"]
    p = low["outcomes"]["suited_four_of_a_kind"]["probability"]
    # 10 000 more on the meter is worth p * 10 000 per wager of 5
    assert high["return"] - low["return"] == pytest.approx(p * 10000 / low["wager"], rel=1e-9)


def test_text_table_names_bets_categories_pays_and_edges(capsys):
    code, out, _ = edge(capsys, "--profile", "uk-4-deck")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "uk-4-deck: 4 decks"
    assert lines[1].split() == ["bet", "category", "pays", "probability", "house", "edge"]
    super_pairs = next(line for line in lines if line.startswith("super_pairs"))
    assert super_pairs.split() == ["super_pairs", "suited_trips", "50:1", "0.0141%", "17.52%"]
    assert any("4.24%" in line and line.startswith("twenty_one_plus_three") for line in lines)
    assert any("15.04%" in line and line.startswith("top_3") for line in lines)


def test_a_profile_with_nothing_to_price_says_so(capsys):
    code, out, _ = edge(capsys, "--profile", "my-classic")
    assert code == 0 and "no side bets and no progressive" in out


@pytest.mark.parametrize("argv,message", [
    (["--profile", "uk-4-deck", "--decks", "6"], "--decks 6: profile 'uk-4-deck' is played with 4 decks"),
    (["--profile", "rws-perfect-pairs", "--decks", "2"], "played with 4 to 8 decks"),
    (["--profile", "no-such-table"], "unknown profile 'no-such-table'"),
    (["--profile", "rws-blackjack", "--meter", "100"], "has no progressive"),
    (["--profile", "rws-blackjack-switch", "--meter", "lots"], "--meter"),
    (["--profile", "rws-blackjack-switch", "--meter", "-5"], "cannot be negative"),
])
def test_errors_exit_non_zero_and_say_what_is_wrong(capsys, argv, message):
    code, out, err = edge(capsys, *argv)
    assert code != 0
    assert out == ""
    assert message in err


def test_profile_by_path_with_a_three_card_progressive(tmp_path: Path, capsys):
    text = resources.files("firmware.profiles").joinpath("uk-4-deck.toml").read_text("utf-8")
    assert "[progressive]" not in text
    path = tmp_path / "with-progressive.toml"
    path.write_text(text + '\n[progressive]\nhand = "three_card"\nwager = 1\n'
                           '[progressive.pays]\nstraight_flush = 100\nflush = 2\n', encoding="utf-8")
    data = edge_json(capsys, "--profile", str(path))
    prog = data["bets"]["progressive"]
    assert prog["outcomes"]["straight"]["pays"] is None  # not in this pay table
    assert prog["return"] == pytest.approx(prog["outcomes"]["straight_flush"]["probability"] * 100
                                           + prog["outcomes"]["flush"]["probability"] * 2)
    # the same three cards as 21 + 3
    assert prog["outcomes"]["flush"]["probability"] == \
        data["bets"]["twenty_one_plus_three"]["outcomes"]["flush"]["probability"]


def test_python_m_firmware_edge_runs_as_a_program():
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "firmware", "edge", "--profile", "uk-4-deck", "--json"],
                          cwd=root, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert round(json.loads(done.stdout)["bets"]["top_3"]["house_edge"] * 100, 2) == 15.04


def test_the_posters_own_figures_are_compared_and_the_main_game_is_flagged(capsys):
    """The poster prints 0.51% for the main game ("BEST TECHNIQUE IS 0.51%"); the profile's
    reading of its rules (resplits without limit, the poster's ambiguity clause) computes
    0.40%. `betbox edge` says so beside the three side bets that agree."""
    code, out, err = edge(capsys, "--profile", "uk-4-deck")
    assert code == 0 and err == ""
    lines = out.splitlines()
    start = lines.index("the document's own figures (uk-blackjack-4-deck-poster, 4 decks):")
    rows = {line.split()[0]: line.split()[1:] for line in lines[start + 1:]}
    assert rows["main"][:5] == ["published", "0.51%", "computed", "0.40%", "DIFFERS"]
    for bet, edge_text in (("super_pairs", "17.52%"), ("twenty_one_plus_three", "4.24%"), ("top_3", "15.04%")):
        assert rows[bet] == ["published", edge_text, "computed", edge_text, "agrees"]
    pub = edge_json(capsys, "--profile", "uk-4-deck")["published"]
    assert pub["document"] == "uk-blackjack-4-deck-poster" and pub["decks"] == 4 and pub["compared"]
    assert pub["figures"]["main"]["agrees"] is False
    assert pub["figures"]["main"]["published"] == pytest.approx(0.0051)
    assert pub["figures"]["main"]["computed_rounded"] == "0.40%"
    assert all(pub["figures"][b]["agrees"] for b in ("super_pairs", "twenty_one_plus_three", "top_3"))


def test_check_exits_1_naming_each_figure_that_differs(capsys):
    code, out, err = edge(capsys, "--profile", "uk-4-deck", "--check")
    assert code == 1 and "DIFFERS" in out
    assert err.splitlines() == ["betbox edge: uk-4-deck main: computed 0.40%, the document "
                                "(uk-blackjack-4-deck-poster) states 0.51%"]
    code, _, err = edge(capsys, "--profile", "rws-blackjack", "--check")    # nothing published
    assert code == 0 and err == ""


def test_published_figures_agree_at_the_documents_rounding_and_only_for_its_shoe(tmp_path: Path, capsys):
    text = resources.files("firmware.profiles").joinpath("uk-4-deck.toml").read_text("utf-8")
    agreeing = tmp_path / "agreeing.toml"
    agreeing.write_text(text.replace('main = "0.51%"', 'main = "0.4%"'), encoding="utf-8")
    code, out, err = edge(capsys, "--profile", str(agreeing), "--check")
    assert code == 0 and err == ""
    assert "  main                   published    0.4%  computed    0.4%  agrees" in out.splitlines()
    # a profile played with 4 to 8 decks whose document published for 4: not compared at 6
    wider = tmp_path / "wider.toml"
    wider.write_text(text.replace("decks = [4, 4]", "decks = [4, 8]"), encoding="utf-8")
    code, out, _ = edge(capsys, "--profile", str(wider), "--decks", "6", "--check")
    assert code == 0
    assert out.splitlines()[-1] == ("the document's own figures (uk-blackjack-4-deck-poster) are for 4 "
                                    "decks: not compared at 6")
    assert edge_json(capsys, "--profile", str(wider), "--decks", "6")["published"]["compared"] is False
