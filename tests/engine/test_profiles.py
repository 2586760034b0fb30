"""Rulesets are data, validated strictly on load: an unknown key or an impossible value is
an error naming the file, the section and the key."""

from __future__ import annotations

import copy
import tomllib
from fractions import Fraction
from importlib import resources

import pytest

from firmware.engine.profile import ProfileError, load_profile, parse_profile, profile_names

SHIPPED = ["my-classic", "rws-blackjack", "rws-blackjack-switch", "rws-perfect-pairs", "uk-4-deck"]


def raw(name: str) -> dict:
    return tomllib.loads(resources.files("firmware.profiles").joinpath(f"{name}.toml").read_text())


def test_one_profile_per_rule_document_ships():
    assert profile_names() == SHIPPED
    documents = {load_profile(n).document for n in SHIPPED}
    assert documents == {"my-blackjack-players-guide", "rws-blackjack-v5", "rws-blackjack-switch-v4",
                         "rws-blackjack-perfect-pairs-v5", "uk-blackjack-4-deck-poster"}


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_profiles_load_and_cite_their_document(name):
    p = load_profile(name)
    assert p.name == name
    assert p.clause("deal").startswith(p.document)
    assert p.clause("double").startswith(p.document)


def test_pay_tables_match_the_documents():
    assert load_profile("rws-blackjack").rules.blackjack_pays == Fraction(3, 2)           # §4.1.1
    assert load_profile("rws-blackjack-switch").rules.blackjack_pays == 1                 # Switch §4.1.1
    pp = load_profile("rws-perfect-pairs").side_bets["perfect_pairs"].pays
    assert pp == {"perfect_pair": 25, "coloured_pair": 12, "mixed_pair": 6}               # PP §4.1.2
    assert load_profile("rws-blackjack").side_bets["player_pair"].pays == {"pair": 11}    # §4.1.1
    sp = load_profile("uk-4-deck").side_bets["super_pairs"].pays
    assert sp == {"suited_trips": 50, "suited_pair": 25, "prime_pair": 10, "any_pair": 5}
    prog = load_profile("rws-blackjack-switch").progressive
    assert prog.pays["suited_four_of_a_kind"].meter_share == 1 and prog.pays["pair_of_aces"].amount == 15
    assert prog.envy_bonus == 1000                                                        # Switch §4.1.2


def test_operator_can_change_a_pay_table():
    data = raw("rws-perfect-pairs")
    data["side_bets"]["perfect_pairs"]["pays"] = {"perfect_pair": 30, "coloured_pair": 10, "mixed_pair": 5}
    assert parse_profile(data, "pp-30-10-5").side_bets["perfect_pairs"].pays["perfect_pair"] == 30


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d["rules"].__setitem__("surender", True), r"\[rules\] surender: unknown key"),
    (lambda d: d.__setitem__("extra", {}), r"extra: unknown key"),
    (lambda d: d["rules"].pop("surrender"), r"\[rules\] surrender: missing"),
    (lambda d: d["rules"].__setitem__("surrender", "yes"), r"\[rules\] surrender: expected true or false"),
    (lambda d: d["rules"].__setitem__("max_hands", 1), r"max_hands: 1: expected 0 \(no limit\) or 2..52"),
    (lambda d: d["rules"].__setitem__("must_draw_below", 30), r"must_draw_below: 30 is out of range"),
    (lambda d: d["rules"].__setitem__("blackjack_pays", "3:0"), r"blackjack_pays: .*3:0"),
    (lambda d: d["rules"].__setitem__("double_amount", "half"), r"double_amount: 'half' is not one of"),
    (lambda d: d["rules"].__setitem__("double_totals", [9, 30]), r"double_totals: .*between 2 and 21"),
    (lambda d: d["profile"].__setitem__("decks", [4, 9]), r"decks: .*maximum <= 8"),
    (lambda d: d["profile"].__setitem__("default_decks", 2), r"default_decks: 2 is out of range 4..8"),
    (lambda d: d["profile"].__setitem__("game", "poker"), r"game: 'poker' is not one of"),
    (lambda d: d["side_bets"].__setitem__("lucky_ladies", {"pays": {"x": 1}}), r"unknown side bet"),
    (lambda d: d["side_bets"]["player_pair"]["pays"].__setitem__("suited_pair", 25),
     r"\[side_bets.player_pair.pays\] suited_pair: unknown key"),
    (lambda d: d["side_bets"]["player_pair"]["pays"].__setitem__("pair", -1), r"pair: .*positive"),
    (lambda d: d["side_bets"]["under_13"].__setitem__("max_of_initial_bet", 0), r"max_of_initial_bet: 0"),
])
def test_a_bad_profile_names_what_is_wrong(mutate, message):
    data = copy.deepcopy(raw("rws-blackjack"))
    mutate(data)
    with pytest.raises(ProfileError, match=message):
        parse_profile(data, "bad.toml")


@pytest.mark.parametrize("section, key, value, message", [
    ("rules", "blackjack_pays", "1e999999999:1", r"\[rules\] blackjack_pays: .*out of range"),
    ("rules", "insurance_pays", "2:1e-999999999", r"\[rules\] insurance_pays: .*out of range"),
    ("rules", "blackjack_pays", "1e999999999 to 1", r"\[rules\] blackjack_pays: .*out of range"),
    ("progressive.pays", "suited_four_of_a_kind", "1e-999999999%",
     r"\[progressive.pays\] suited_four_of_a_kind: .*out of range"),
    ("side_bets.under_13", "max_of_initial_bet", float("inf"), r"\[side_bets.under_13\] max_of_initial_bet: inf"),
    ("side_bets.under_13", "max_of_initial_bet", float("nan"), r"\[side_bets.under_13\] max_of_initial_bet: nan"),
    ("side_bets.under_13", "max_of_initial_bet", 1e308, r"max_of_initial_bet: .*out of range"),
])
def test_odds_and_shares_are_bounded_and_named_like_amounts(section, key, value, message):
    """A profile's odds ("3:2") and percentages ("100%") were made with Fraction(text), which
    builds "1e999999999" exactly: a number of a billion digits (betbox edge, strategy, settle and
    a dealer's start hung on the file); max_of_initial_bet = inf or nan ended in "Invalid literal
    for Fraction", naming neither file nor key. They are read as amounts now (parse_amount)."""
    profile = "rws-blackjack-switch" if section.startswith("progressive") else "rws-blackjack"
    data = copy.deepcopy(raw(profile))
    table = data
    for part in section.split("."):
        table = table[part]
    table[key] = value
    with pytest.raises(ProfileError, match=message) as err:
        parse_profile(data, "bad.toml")
    assert str(err.value).startswith("bad.toml: ") and len(str(err.value)) < 300


def test_odds_are_read_as_they_were():
    data = copy.deepcopy(raw("rws-blackjack"))
    data["rules"]["blackjack_pays"], data["rules"]["insurance_pays"] = "6 to 5", 2.5
    data["side_bets"]["under_13"]["max_of_initial_bet"] = 0.5
    p = parse_profile(data, "house.toml")
    assert (p.rules.blackjack_pays, p.rules.insurance_pays) == (Fraction(6, 5), Fraction(5, 2))
    assert p.side_bets["under_13"].max_of_initial_bet == Fraction(1, 2)
    data = copy.deepcopy(raw("rws-blackjack-switch"))
    data["progressive"]["pays"]["suited_four_of_a_kind"] = "12.5%"
    assert parse_profile(data, "house.toml").progressive.pays["suited_four_of_a_kind"].meter_share == Fraction(1, 8)


def test_progressive_errors_name_the_key():
    data = copy.deepcopy(raw("rws-blackjack-switch"))
    data["progressive"]["pays"]["suited_four_of_a_kind"] = "150%"
    with pytest.raises(ProfileError, match=r"suited_four_of_a_kind: 150% must be above 0% and at most 100%"):
        parse_profile(data, "bad.toml")
    data = copy.deepcopy(raw("rws-blackjack-switch"))
    data["progressive"]["hand"] = "five_card"
    with pytest.raises(ProfileError, match=r"hand: 'five_card' is not a progressive hand"):
        parse_profile(data, "bad.toml")


def test_top_3_requires_a_21_plus_3_bet_in_the_same_profile():
    data = copy.deepcopy(raw("uk-4-deck"))
    del data["side_bets"]["twenty_one_plus_three"]
    with pytest.raises(ProfileError, match="requires 'twenty_one_plus_three'"):
        parse_profile(data, "bad.toml")


def test_even_money_makes_no_sense_in_switch():
    data = copy.deepcopy(raw("rws-blackjack-switch"))
    data["rules"]["even_money"] = True
    with pytest.raises(ProfileError, match="even_money"):
        parse_profile(data, "bad.toml")


def test_unknown_profile_and_bad_files(tmp_path):
    with pytest.raises(ProfileError, match="unknown profile 'rws-baccarat' \\(shipped: my-classic"):
        load_profile("rws-baccarat")
    bad = tmp_path / "broken.toml"
    bad.write_text("[profile\nname=1")
    with pytest.raises(ProfileError, match="broken.toml: not valid TOML"):
        load_profile(bad)
    with pytest.raises(ProfileError, match="cannot read profile"):
        load_profile(tmp_path / "missing.toml")


def test_a_profile_file_by_path(tmp_path):
    path = tmp_path / "house.toml"
    path.write_text(resources.files("firmware.profiles").joinpath("rws-blackjack.toml").read_text())
    assert load_profile(path).name == "rws-blackjack"


def test_a_bare_name_is_a_shipped_profile_even_if_the_working_directory_has_that_name(tmp_path, monkeypatch):
    (tmp_path / "rws-blackjack").mkdir()
    monkeypatch.chdir(tmp_path)
    assert load_profile("rws-blackjack").name == "rws-blackjack"


def test_the_uk_posters_own_house_edges_are_kept_as_printed():
    """uk-blackjack-4-deck-poster, "A PLAYERS GUIDE TO THE HOUSE EDGE": kept with the poster's
    own digits, so `betbox edge` compares at the poster's rounding."""
    pub = load_profile("uk-4-deck").published
    assert pub is not None and pub.decks == 4
    assert {k: str(v) for k, v in pub.edges.items()} == {
        "main": "0.51", "super_pairs": "17.52", "twenty_one_plus_three": "4.24", "top_3": "15.04"}
    assert load_profile("rws-blackjack").published is None


@pytest.mark.parametrize("published,message", [
    ({"decks": 4, "main": "0.51"}, r"\[published\] main: '0.51': expected a percentage"),
    ({"decks": 4, "main": "lots%"}, r"\[published\] main: 'lots%': expected a percentage"),
    ({"decks": 4, "main": "NaN%"}, r"\[published\] main: 'NaN%'"),
    ({"decks": 4, "main": "150%"}, r"\[published\] main: '150%'"),
    ({"decks": 4, "main": "-0%"}, r"\[published\] main: '-0%'"),
    ({"decks": 4, "main": "1e400%"}, r"\[published\] main: '1e400%'"),
    ({"decks": 4, "main": "inf%"}, r"\[published\] main: 'inf%'"),
    ({"decks": 4, "main": "1" * 5000 + "%"}, r"\[published\] main: '1{40}'\.\.\.: expected a percentage"),
    ({"decks": 4, "main": 0.51}, r"\[published\] main: expected"),
    ({"decks": 4, "lucky_ladies": "1%"}, r"\[published\] lucky_ladies: not a bet of this profile"),
    ({"decks": 6, "main": "0.51%"}, r"\[published\] decks: 6 is out of range 4..4"),
    ({"main": "0.51%"}, r"\[published\] decks: missing"),
    ({"decks": 4}, r"\[published\] decks: no published figure follows"),
])
def test_a_bad_published_figure_names_what_is_wrong(published, message):
    data = copy.deepcopy(raw("uk-4-deck"))
    data["published"] = published
    with pytest.raises(ProfileError, match=message):
        parse_profile(data, "bad.toml")
