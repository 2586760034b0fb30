"""Strict unit configuration and the journal commands."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from firmware.cli import main
from firmware.runtime.config import ConfigError, parse_config

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def example(name: str) -> dict:
    return tomllib.loads((EXAMPLES / name).read_text())


@pytest.mark.parametrize("name", ["dealer.toml", "seat.toml"])
def test_the_examples_are_valid(name):
    config = parse_config(example(name))
    assert config.role == name.split(".")[0]


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["unit"].update(colour="red"), "[unit] colour: unknown key"),
    (lambda d: d["game"].update(decks=9), "[game] decks: 9 is out of range 4..8"),
    (lambda d: d["limits"].update(main=[500, 10]), "[limits] main"),
    (lambda d: d["limits"].update(top_3=[1, 2]), "[limits] top_3: not a bet"),
    (lambda d: d["unit"].update(role="croupier"), "[unit] role"),
    (lambda d: d["game"].update(profile="no-such"), "[game] profile"),
    (lambda d: d["journal"].update(synchronous="OFF"), "[journal] synchronous"),
    (lambda d: d["hardware"]["console"].update(backend="usb"), "[hardware.console] backend"),
])
def test_a_bad_dealer_configuration_names_section_and_key(edit, message):
    data = example("dealer.toml")
    edit(data)
    with pytest.raises(ConfigError, match=None) as err:
        parse_config(data, "dealer.toml")
    assert message in str(err.value)


def test_a_bad_seat_configuration_names_section_and_key():
    data = example("seat.toml")
    data["seat"]["box"] = 0
    with pytest.raises(ConfigError, match=r"\[seat\] box: 0 is out of range"):
        parse_config(data)


def test_journal_show_and_stats(tmp_path, capsys):
    assert main(["demo", "--headless", "--rounds", "3", "--seed", "4", "--state-dir", str(tmp_path),
                 "--profile", "uk-4-deck"]) == 0
    capsys.readouterr()
    assert main(["journal", "stats", str(tmp_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 8
    dealer = next(r for r in rows if r["role"] == "dealer")
    assert dealer["emitted"] == dealer["highest_seq"] > 30 and dealer["undelivered"] == 0
    assert main(["journal", "show", str(tmp_path), "--round", "2"]) == 0
    out = capsys.readouterr().out
    assert "round 2 — uk-4-deck" in out and "dealer:" in out and "no more bets" in out
    assert "round 3" not in out
    assert main(["journal", "show", str(tmp_path), "--round", "99"]) == 1
