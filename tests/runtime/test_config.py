"""Strict unit configuration and the journal commands."""

from __future__ import annotations

import json
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest

from firmware.cli import main
from firmware.config import ConfigError, parse_config

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


# the examples name their TLS files under /etc/betbox/; reading a configuration needs them
# to exist (what is in them is checked at start, tests/runtime/test_check_table.py)
ETC = Path(tempfile.mkdtemp(prefix="betbox-etc-"))
for _name in ("ca.pem", "table-1-dealer.pem", "table-1-dealer.key", "table-1-seat-3.pem", "table-1-seat-3.key",
              "jackpot-main.pem", "jackpot-main.key"):
    (ETC / _name).write_text("x\n")


def example_text(name: str) -> str:
    return (EXAMPLES / name).read_text().replace("/etc/betbox/", f"{ETC}/")


def example(name: str) -> dict:
    return tomllib.loads(example_text(name))


@pytest.mark.parametrize("name", ["dealer.toml", "seat.toml"])
def test_the_examples_are_valid(name):
    config = parse_config(example(name))
    assert config.role == name.split(".")[0]


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["unit"].update(colour="red"), "[unit] colour: unknown key"),
    (lambda d: d["game"].update(decks=9), "[game] decks: 9 is out of range 4..8"),
    (lambda d: d["limits"].update(main=[500, 10]), "[limits] main"),
    (lambda d: d["limits"].update(top_3=[1, 2]), "[limits] top_3: not a bet"),
    # a table's amounts are at most 10**9 (README; betbox settle refuses a script's limit above)
    (lambda d: d["limits"].update(main=[10, 1e100]), "[limits] main: [10, 1e+100] is not a valid [minimum, maximum]"),
    (lambda d: d["limits"].update(main=[10, "1e99"]), "[limits] main: [10, '1e99'] is not a valid"),
    (lambda d: d["limits"].update(main=[10, 10**9 + 1]), "at most 1000000000"),
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


def test_journal_rotation_and_close_wait_reach_the_units(tmp_path):
    """The examples' [journal] rotate_rounds/keep_segments and [game] close_wait are what
    `betbox run` builds the journal and the dealer with; close_wait = false: no bound."""
    from firmware.commands.run import build

    data = example("dealer.toml")
    data["unit"]["state_dir"] = str(tmp_path / "dealer")
    data.pop("link")
    data["journal"].update(rotate_rounds=7, keep_segments=2)
    data["game"]["close_wait"] = 2.5
    config = parse_config(data, "dealer.toml")
    unit, ports = build(config)
    try:
        assert (unit.journal.rotate_rounds, unit.journal.keep_segments, unit.close_wait) == (7, 2, 2.5)
    finally:
        for port in ports.values():
            port.close()
        unit.journal.close()
    data["game"]["close_wait"] = False
    data["journal"] = {}
    config = parse_config(data, "dealer.toml")
    assert (config.close_wait, config.rotate_rounds, config.keep_segments) == (None, None, None)
    seat = parse_config(example("seat.toml"), "seat.toml")
    assert (seat.rotate_rounds, seat.keep_segments) == (1000, 200)


@pytest.mark.parametrize("section, key, value, message", [
    ("journal", "rotate_rounds", 0, "[journal] rotate_rounds: 0 is out of range 1..1000000"),
    ("journal", "rotate_rounds", "100", "[journal] rotate_rounds: expected an integer"),
    ("journal", "keep_segments", -1, "[journal] keep_segments: -1 is out of range 0..1000000"),
    ("game", "close_wait", 0, "[game] close_wait: 0: seconds above 0 and at most 600"),
    ("game", "close_wait", 601, "[game] close_wait: 601"),
    ("game", "close_wait", -2.5, "[game] close_wait: -2.5"),
    ("game", "close_wait", True, "[game] close_wait: True"),
    ("game", "close_wait", "5s", "[game] close_wait: expected"),
])
def test_check_names_a_bad_rotation_or_close_wait(tmp_path, capsys, section, key, value, message):
    """`betbox run --check` refuses the value with file, section and key."""
    data = example("dealer.toml")
    data[section][key] = value
    path = tmp_path / "dealer.toml"
    path.write_text("".join(_toml(name, body) for name, body in data.items()))
    assert main(["run", "--config", str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: {message}" in err, err


def test_keep_segments_needs_rotate_rounds():
    data = example("seat.toml")
    del data["journal"]["rotate_rounds"]
    with pytest.raises(ConfigError, match=r"\[journal\] keep_segments: needs rotate_rounds"):
        parse_config(data, "seat.toml")


def _toml(name: str, body: dict, prefix: str = "") -> str:
    """A TOML table (and its sub-tables) from a dict; enough for the examples."""
    full = f"{prefix}{name}"
    flat = {k: v for k, v in body.items() if not isinstance(v, dict)}
    out = f"[{full}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in flat.items())
    for k, v in body.items():
        if isinstance(v, dict):
            out += _toml(k, v, full + ".")
    return out


@pytest.mark.parametrize("name, section, key, value", [
    ("dealer.toml", "unit", "state_dir", ""),
    ("dealer.toml", "unit", "state_dir", "/var/lib/betbox/\0dealer"),
    ("seat.toml", "seat", "chips", "/etc/betbox/\0chips.csv"),
    ("seat.toml", "seat", "chips", ""),
])
def test_an_empty_path_or_one_with_a_nul_is_no_path(name, section, key, value):
    """state_dir = "" was the working directory, wherever the unit happened to be started (its
    journal there, a start from elsewhere on an empty one); a NUL passed --check ("configuration
    OK") and the start failed on "embedded null byte", naming no key."""
    data = example(name)
    data[section][key] = value
    with pytest.raises(ConfigError, match=rf"\[{section}\] {key}: .* is not a path"):
        parse_config(data, name)


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


def test_one_typed_configuration_assembled_from_each_packages_section():
    """firmware.config assembles the unit's configuration; the link and the jackpot sections
    come typed from their own packages' readers (no Any), the display's choices are the
    screen's own lists (not a copy), and the close wait's default is the dealer's."""
    from typing import get_type_hints

    import firmware.config as config
    from firmware.jackpot.config import JackpotConfig
    from firmware.link.config import LinkConfig
    from firmware.runtime.dealer import CLOSE_WAIT

    hints = get_type_hints(config.UnitConfig)
    assert hints["link"] == LinkConfig | None
    assert hints["jackpot"] == JackpotConfig | None
    assert all(hint is not Any for name, hint in hints.items() if name != "raw"), hints
    from ui.i18n import LANGUAGES
    assert LANGUAGES is config.DISPLAY_LANGUAGES
    assert config.UnitConfig.__dataclass_fields__["close_wait"].default == CLOSE_WAIT
    jackpot = parse_config(example("jackpot.toml"), "jackpot.toml")
    assert isinstance(jackpot.jackpot, JackpotConfig) and isinstance(jackpot.link, LinkConfig)
    assert jackpot.jackpot.link is jackpot.link
