"""Unit configuration files the technician's tests start ``betbox run`` and ``betbox diag``
with: one seat layout (mock lamps, one chip) with the sections a test needs added."""

from __future__ import annotations

from pathlib import Path

MOCK = 'backend = "mock"'


def seat_config(tmp_path: Path, *, reader: str = MOCK, link: str = "", verify: str = "",
                spots: tuple[str, ...] = ("main",), table: str = "t", state: Path | None = None,
                name: str = "seat.toml") -> Path:
    """``seat.toml`` in ``tmp_path`` for seat-1 of box 1: ``reader`` is the chip reader's
    backend lines, ``link`` and ``verify`` whole ``[link]``/``[verify]`` sections (or "")."""
    chips = tmp_path / "chips.csv"
    chips.write_text("uid,denomination,status\n0A01,5,valid\n")
    state = state or tmp_path / "state"
    state.mkdir(parents=True, exist_ok=True)
    config = tmp_path / name
    listed = "[" + ", ".join(f'"{s}"' for s in spots) + "]"
    config.write_text(f"""
[unit]
role = "seat"
id = "seat-1"
table = "{table}"
state_dir = "{state}"
{link}
[seat]
box = 1
spots = {listed}
chips = "{chips}"
{verify}
[hardware.chip_reader]
{reader}
spots = {listed}
[hardware.lamps]
backend = "mock"
lamps = ["progressive", "bets_locked"]
""")
    return config


def dealer_config(tmp_path: Path, shoe: str = MOCK, profile: str = "rws-blackjack") -> Path:
    """``dealer.toml`` in ``tmp_path``: ``shoe`` is the card shoe's backend lines, ``profile``
    the game's profile (a name or a path); a mock console."""
    (tmp_path / "state").mkdir(exist_ok=True)
    config = tmp_path / "dealer.toml"
    config.write_text(f"""
[unit]
role = "dealer"
id = "dealer"
table = "t"
state_dir = "{tmp_path / 'state'}"
[game]
profile = "{profile}"
[hardware.card_shoe]
{shoe}
[hardware.console]
backend = "mock"
""")
    return config


def verify_section(tree: Path, keyring: Path | None = None, at_start: bool = True) -> str:
    keyring_line = f'keyring = "{keyring}"\n' if keyring else ""
    return f'[verify]\n{"at_start = true" if at_start else ""}\ntree = "{tree}"\n{keyring_line}'
