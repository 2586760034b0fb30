"""A [link.tls] ca, cert or key that is there but is not a regular file this user can read is
said to be what it is (a directory, a special file, a broken symlink, unreadable), never
"does not exist": the fix differs (a wrong path, a wrong link, a mode or an owner)."""

from __future__ import annotations

import os

import pytest

from firmware.engine import strict
from firmware.link.config import LinkConfigError, load_link_config


def tls_config(tmp_path, **files):
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("x")
    tls = {"ca": "ca.pem", "cert": "cert.pem", "key": "key.pem", **files}
    return {"broker": "mqtts://h:8883", "tls": tls}


def refusal(tmp_path, **files) -> str:
    with pytest.raises(LinkConfigError) as err:
        load_link_config(tls_config(tmp_path, **files), base=tmp_path, source="seat.toml")
    return str(err.value)


def test_a_directory_is_said_to_be_a_directory(tmp_path):
    (tmp_path / "certs").mkdir()
    text = refusal(tmp_path, ca="certs")
    assert text == f"seat.toml: [link.tls] ca: {tmp_path / 'certs'} is a directory, not a regular file"


def test_a_fifo_and_a_device_are_special_files(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    text = refusal(tmp_path, cert="pipe")
    assert f"[link.tls] cert: {tmp_path / 'pipe'} is a special file (a FIFO), not a regular file" in text
    text = refusal(tmp_path, key="/dev/zero")
    assert "[link.tls] key: /dev/zero is a special file (a character device), not a regular file" in text
    assert "does not exist" not in text


def test_a_dangling_symlink_names_its_target(tmp_path):
    (tmp_path / "ca-link.pem").symlink_to(tmp_path / "gone.pem")
    text = refusal(tmp_path, ca="ca-link.pem")
    assert f"[link.tls] ca: {tmp_path / 'ca-link.pem'} is a broken symlink to {tmp_path / 'gone.pem'}" in text


def test_an_unreadable_file_is_said_to_be_unreadable(tmp_path, monkeypatch):
    if os.geteuid() == 0:        # root reads any mode: the check is os.access, asked as this user
        real = os.access
        monkeypatch.setattr(strict.os, "access",
                            lambda p, mode, **kw: False if str(p).endswith("key.pem") else real(p, mode, **kw))
    config = tls_config(tmp_path)
    (tmp_path / "key.pem").chmod(0)
    with pytest.raises(LinkConfigError) as err:
        load_link_config(config, base=tmp_path)
    assert f"[link.tls] key: {tmp_path / 'key.pem'} is not readable by this user (uid {os.getuid()})" in str(err.value)


def test_a_missing_file_still_does_not_exist(tmp_path):
    assert refusal(tmp_path, ca="nope.pem").endswith(f"[link.tls] ca: {tmp_path / 'nope.pem'} does not exist")
    (tmp_path / "plain").write_text("x")
    assert refusal(tmp_path, ca="plain/ca.pem").endswith(
        f"[link.tls] ca: {tmp_path / 'plain/ca.pem'} does not exist ({tmp_path / 'plain'} is not a directory)")
