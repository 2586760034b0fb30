"""#11 "Identity on the broker": a password over plain mqtt:// is refused unless the
configuration says allow_insecure = true; the jackpot commands take no password on the
command line (readable in /proc), only from a file or standard input."""

from __future__ import annotations

import pytest

from firmware.cli import main
from firmware.link.config import LinkConfigError, load_link_config


def test_a_password_over_plain_mqtt_is_refused_naming_the_key_and_the_way_out():
    with pytest.raises(LinkConfigError) as err:
        load_link_config({"broker": "mqtt://127.0.0.1:1883", "username": "table-1/seat-1", "password": "pw"},
                         source="seat.toml")
    text = str(err.value)
    assert text.startswith("seat.toml: [link] password: sent in clear over mqtt://127.0.0.1:1883")
    assert "mqtts://" in text and "allow_insecure = true" in text


def test_allow_insecure_lets_it_through_and_must_be_true_or_false():
    cfg = load_link_config({"broker": "mqtt://127.0.0.1:1883", "username": "u", "password": "pw",
                            "allow_insecure": True})
    assert (cfg.username, cfg.password, cfg.tls) == ("u", "pw", None)
    # without a password there is nothing to protect: an anonymous loopback broker is fine
    assert load_link_config({"broker": "mqtt://127.0.0.1:1883"}).password is None
    with pytest.raises(LinkConfigError, match=r"\[link\] allow_insecure: expected true or false"):
        load_link_config({"broker": "mqtt://h:1", "username": "u", "password": "pw", "allow_insecure": "yes"})


def test_mqtts_with_a_password_needs_no_allow_insecure(tmp_path):
    (tmp_path / "ca.pem").write_text("x")
    cfg = load_link_config({"broker": "mqtts://h:8883", "tls": {"ca": "ca.pem"}, "username": "u", "password": "p"},
                           base=tmp_path)
    assert cfg.tls is not None and cfg.password == "p"


@pytest.mark.parametrize("action", [["serve", "--db", "j.db"], ["confirm", "--hit", "1"]])
def test_jackpot_commands_take_no_password_on_the_command_line(capsys, action):
    with pytest.raises(SystemExit) as exit_:
        main(["jackpot", action[0], "--broker", "mqtt://127.0.0.1:1", "--password", "secret", *action[1:]])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --password" in capsys.readouterr().err


def test_jackpot_serve_reads_the_password_file_and_refuses_plain_mqtt_without_allow_insecure(tmp_path, capsys):
    pw = tmp_path / "jackpot.pw"
    pw.write_text("s3cret\n")
    code = main(["jackpot", "serve", "--broker", "mqtt://127.0.0.1:1", "--db", str(tmp_path / "j.db"),
                 "--username", "jackpot/main", "--password-file", str(pw)])
    err = capsys.readouterr().err
    assert code == 2 and "[link] password: sent in clear over mqtt://127.0.0.1:1" in err and "s3cret" not in err
    code = main(["jackpot", "confirm", "--broker", "mqtt://127.0.0.1:1", "--hit", "1",
                 "--password-file", str(tmp_path / "missing.pw")])
    err = capsys.readouterr().err
    assert code == 2 and "--password-file" in err and "missing.pw" in err
    empty = tmp_path / "empty.pw"
    empty.write_text("\n")
    assert main(["jackpot", "confirm", "--broker", "mqtt://127.0.0.1:1", "--hit", "1",
                 "--password-file", str(empty), "--allow-insecure"]) == 2
    assert "the first line must hold the password" in capsys.readouterr().err
