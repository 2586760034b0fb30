"""A broker URL with a password in it (``mqtts://pit:s3cret@host:8883``) is refused (the password
goes in [link] password or --password-file), but the refusal printed the URL whole: the secret went
to the terminal, the journal and the logs. Every message and log line that shows a URL shows it
through engine.strict.redact_url (``mqtts://pit:***@host:8883``)."""

from __future__ import annotations

import logging

import pytest

from firmware.cli import main
from firmware.engine.strict import redact_url
from firmware.link import connect_bus
from firmware.link.config import LinkConfigError, load_link_config, parse_broker_url

SECRET = "s3cret"


@pytest.mark.parametrize("url, shown", [
    ("mqtts://pit:s3cret@host:8883", "mqtts://pit:***@host:8883"),
    ("mqtt://pit:s3cret@host:1883/x", "mqtt://pit:***@host:1883/x"),
    ("http://pit:s3cret@host", "http://pit:***@host"),
    ("mqtt://pit:s3cret@host:99999", "mqtt://pit:***@host:99999"),
    ("mqtt://pit:s3cret@", "mqtt://pit:***@"),
    ("mqtt://pit:s3@cret@host:1883", "mqtt://pit:***@host:1883"),     # an @ in the password
    ("mqtt://:s3cret@host:1883", "mqtt://:***@host:1883"),            # no user name, still a password
])
def test_a_refused_broker_url_never_shows_its_password(url, shown):
    with pytest.raises(LinkConfigError) as err:
        parse_broker_url(url)
    assert SECRET not in str(err.value) and "cret" not in str(err.value)
    assert repr(shown) in str(err.value), str(err.value)
    with pytest.raises(LinkConfigError) as err:
        load_link_config({"broker": url}, source="seat.toml")
    assert str(err.value).startswith("seat.toml: [link] broker: ") and "cret" not in str(err.value)


def test_redact_url():
    assert redact_url("mqtts://pit:s3cret@host:8883") == "mqtts://pit:***@host:8883"
    assert redact_url("postgresql://jackpot:pw@db:5432/betbox") == "postgresql://jackpot:***@db:5432/betbox"
    for plain in ("mqtt://127.0.0.1:1883", "mqtts://pit@host:8883", "postgresql://jackpot@db/betbox", "", "host"):
        assert redact_url(plain) == plain


@pytest.mark.parametrize("argv", [
    ["pit", "ack", "--table", "table-1", "--broker"],
    ["jackpot", "confirm", "--hit", "1", "--broker"],
    ["demo", "--headless", "--broker"],
])
def test_commands_refusing_a_broker_url_never_print_its_password(capsys, argv):
    try:
        code = main([*argv, "mqtts://pit:s3cret@host:8883"])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and SECRET not in out + err, err
    assert "mqtts://pit:***@host:8883" in err, err


def test_a_postgresql_url_of_the_wrong_scheme_never_shows_its_password(capsys):
    code = main(["jackpot", "report", "--store-url", "mysql://jackpot:s3cret@db:5432/betbox"])
    out, err = capsys.readouterr()
    assert code == 2 and SECRET not in out + err, err


def test_a_good_url_logged_at_connect_never_shows_the_password(caplog):
    """The connect's log line names the broker (no broker listens on port 1 here)."""
    caplog.set_level(logging.INFO)
    cfg = load_link_config({"broker": "mqtt://127.0.0.1:1", "username": "pit", "password": SECRET,
                            "allow_insecure": True})
    bus = connect_bus(None, "table-1/seat-1", link=cfg, wait=0.5)
    try:
        assert "no broker at mqtt://127.0.0.1:1" in caplog.text
    finally:
        bus.close(timeout=0.5)
    assert SECRET not in caplog.text
