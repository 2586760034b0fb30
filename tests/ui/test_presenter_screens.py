"""Rules, service and font look-up models (no Kivy)."""

from __future__ import annotations

import logging
import sys
from fractions import Fraction

import pytest

from firmware.engine.profile import load_profile
from ui import fonts
from ui.rulesinfo import meter_amount, odds_for, rules_screen
from ui.service import NOT_AVAILABLE, LogRing, PinLock, check_pin, hash_pin, lamp_restore, lamp_test, service_sections
from ui.source import ControllerFeed

from .helpers import Table


def test_rules_screen_has_pay_tables_and_exact_house_edges():
    p = load_profile("uk-4-deck")
    computing = rules_screen(p, "en")
    assert computing.sections[0].note == "Working out the odds…"
    s = rules_screen(p, "en", computed=odds_for(p))
    assert s.title == "Blackjack 4 Deck — rules and pay tables"
    assert "Blackjack pays 3:2" in s.main and "4 decks" in s.main
    heads = [x.heading for x in s.sections]
    assert heads == ["Super Pairs", "21+3", "Top 3 (needs a 21+3 bet)"]
    assert "Suited Trips 50:1" in s.sections[0].lines
    assert s.sections[1].note == "House edge 4.24%"        # the UK poster: 4.24%
    zh = rules_screen(p, "zh", computed=odds_for(p))
    assert zh.sections[1].note == "庄家优势 4.24%" and "黑杰克赔 3:2" in zh.main


def test_rules_screen_progressive_with_meter():
    p = load_profile("rws-blackjack-switch")
    s = rules_screen(p, "en", meter=Fraction(25000), computed=odds_for(p))
    prog = s.sections[-1]
    assert prog.heading == "Progressive (5)"
    assert "Suited Four of a Kind 100% of the meter" in prog.lines
    assert prog.lines[-1] == "Envy bonus 1,000 when another seat hits Suited Four of a Kind"
    assert prog.note.startswith("Return ")
    assert "Dealer 22 is a stand off" in s.main


def test_service_sections_say_not_available_honestly(tmp_path):
    t = Table(tmp_path, controller=ControllerFeed("up", Fraction(100)))
    try:
        t.open()
        t.bet(1, "main", 20)
        t.unknown_chip(1, "perfect_pairs")
        seat = t.table.seats[1]
        ring = LogRing()
        secs = {s.heading: dict(s.rows) for s in service_sections(seat, t.table, t.controller,
                                                                   log_lines=["12:00:00 INFO x: hello"])}
        assert secs["Unit"]["unit"] == "t1/seat-1" and secs["Unit"]["configuration hash"] == NOT_AVAILABLE
        assert secs["Links"]["broker"] == "in-process bus (no broker)"
        assert secs["Links"]["jackpot controller"] == "up"
        assert "unknown" in secs["Chip reader (live, debounced)"]["perfect_pairs"]
        assert "valid 5" in secs["Chip reader (live, debounced)"]["main"]
        assert secs["Journal and outbox"]["MQTT outbox depth"].startswith(NOT_AVAILABLE)
        assert int(secs["Journal and outbox"]["inputs journalled"].replace(",", "")) > 0
        assert secs["Card shoe"]["connected"] == "yes"
        # formatted for a technician: no Python reprs anywhere (LampState(...), Fraction(...), True)
        rows = [v for sec in secs.values() for v in sec.values()]
        assert not any(x in v for v in rows for x in ("LampState(", "Fraction(", "True", "False", "None"))
        assert set(secs["Lamps"].values()) <= {"on", "off"} and secs["Links"]["meter"] == "100"
        alone = {s.heading: dict(s.rows) for s in service_sections(seat)}
        assert alone["Links"]["jackpot controller"] == NOT_AVAILABLE
        assert alone["Card shoe"]["shoe"].startswith(NOT_AVAILABLE)
        assert lamp_test(seat) and str(seat.lamps.state("bets_locked")) != "off"
        lamp_restore(seat)
        assert ring.lines is not None
    finally:
        t.close()


def test_pin_is_kept_as_a_salted_hash_and_checked_against_it():
    stored = hash_pin("2468")
    assert "2468" not in stored and stored.startswith("scrypt$")
    assert stored != hash_pin("2468")                       # a new salt each time
    assert check_pin("2468", stored) and not check_pin("2469", stored) and not check_pin("", stored)
    # a plain PIN where the hash belongs matches nothing, not even itself
    assert not check_pin("2468", "2468") and not check_pin("", "")
    assert not check_pin("2468", "scrypt$16384$8$1$zz$00")


def test_wrong_pins_lock_the_service_screen_for_longer_each_time():
    now = [100.0]
    lock = PinLock(hash_pin("2468"), tries=3, lockout=60, clock=lambda: now[0])
    assert [lock.enter("1111"), lock.enter("2222")] == ["wrong", "wrong"]
    assert lock.enter("3333") == "locked" and lock.locked_for() == 60
    assert lock.enter("2468") == "locked"                  # the right PIN is not even checked
    now[0] += 60
    assert lock.enter("2468") == "ok"
    for pin in ("1", "2", "3"):
        lock.enter(pin)
    now[0] += 59
    assert lock.enter("2468") == "locked"
    now[0] += 1
    for pin in ("1", "2", "3"):
        lock.enter(pin)
    assert lock.locked_for() == 120                        # a second lockout in a row: twice as long
    assert PinLock("").enter("2468") == "no_pin"


def test_hash_pin_command_prints_the_configuration_line():
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-m", "ui.service", "--hash-pin"], input="2468\n",
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.startswith('pin_hash = "scrypt$')
    assert check_pin("2468", run.stdout.split('"')[1])
    bad = subprocess.run([sys.executable, "-m", "ui.service", "--hash-pin"], input="12\n",
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "4 to 8 digits" in bad.stderr


def test_cjk_font_is_found_or_the_error_says_what_to_install(monkeypatch):
    path = fonts.cjk_font()
    assert path.exists()
    monkeypatch.setattr(fonts, "KNOWN", ())
    monkeypatch.setattr(fonts, "_fc_list", lambda: [])
    fonts.cjk_font.cache_clear()
    with pytest.raises(fonts.FontMissing, match="fonts-wqy-microhei"):
        fonts.cjk_font()
    fonts.cjk_font.cache_clear()
    assert "kivy" not in sys.modules


def test_a_seat_configuration_keeps_the_pin_only_as_a_salted_hash():
    import tomllib

    import pytest

    from firmware.config import ConfigError, parse_config
    from tests.runtime.test_config import example_text  # the example's /etc/betbox files, in place
    seat = tomllib.loads(example_text("seat.toml"))
    config = parse_config(seat)
    assert check_pin("2468", config.display.pin)           # the example's hash is of 2468
    plain = dict(seat, display={k: v for k, v in seat["display"].items() if k != "pin_hash"} | {"pin": "2468"})
    with pytest.raises(ConfigError, match=r"\[display\] pin: a PIN is never kept in plain text"):
        parse_config(plain)
    garbled = dict(seat, display=dict(seat["display"], pin_hash="2468"))
    with pytest.raises(ConfigError, match=r"\[display\] pin_hash: not a PIN hash"):
        parse_config(garbled)
    none = dict(seat, display={k: v for k, v in seat["display"].items() if k != "pin_hash"})
    assert parse_config(none).display.pin == ""            # no PIN: the service screen stays shut


def test_the_rules_screens_meter_is_the_controllers_wire_text_as_an_amount(caplog):
    assert meter_amount("25009.25") == Fraction(100037, 4)
    assert meter_amount(None) is None
    with caplog.at_level(logging.WARNING, logger="ui.rulesinfo"):
        assert meter_amount("lots") is None
    assert "the controller's meter 'lots' is not an amount" in caplog.text
