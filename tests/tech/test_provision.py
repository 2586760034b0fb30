"""``betbox provision``: one file per unit, checked strictly, secrets never world-readable."""

from __future__ import annotations

import os
import shutil
import stat
import tomllib
from pathlib import Path

import pytest

from firmware.cli import main
from firmware.config import load_config

from .pki import make_ca, make_cert

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")

IMAGE_CONFIG = Path(__file__).resolve().parents[2] / "image" / "config"
UID, GID = 4242, 4343          # betbox in the image's own /etc/passwd, not this machine's


@pytest.fixture
def pki(tmp_path):
    d = tmp_path / "pki"
    make_ca(d)
    make_cert(d, "seat", "table-7/seat-3")
    make_cert(d, "other", "table-7/seat-4")
    make_ca(d, "rogue", "someone else's CA")
    make_cert(d, "forged", "table-7/seat-3", ca="rogue")
    return d


@pytest.fixture
def root(tmp_path):
    """A flashed card's root as the image leaves it: the role templates and a betbox user."""
    r = tmp_path / "root"
    (r / "etc/betbox").mkdir(parents=True)
    for role in ("seat", "dealer", "jackpot"):
        shutil.copy(IMAGE_CONFIG / f"{role}.toml", r / "etc/betbox" / f"{role}.toml")
    (r / "etc/passwd").write_text(f"root:x:0:0::/root:/bin/sh\nbetbox:x:{UID}:{GID}::/var/lib/betbox:/usr/sbin/nologin\n")
    return r


def provisioning(pki: Path, *, cert="seat", key="seat", ca="ca", username="table-7/seat-3", box="3",
                 extra_unit="", extra_link="") -> str:
    read = lambda name: (pki / name).read_text()  # noqa: E731
    return f"""
[unit]
role = "seat"
id = "seat-3"
table = "table-7"
box = {box}
{extra_unit}
[link]
broker = "mqtts://broker.table-7.local:8883"
username = "{username}"
password = "s3cret-pw"
{extra_link}
[link.tls]
ca = '''{read(ca + '.pem')}'''
cert = '''{read(cert + '.pem')}'''
key = '''{read(key + '.key')}'''
"""


def write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "seat-3.provision.toml"
    f.write_text(text)
    return f


@pytest.mark.skipif(os.geteuid() != 0, reason="gives files to another user: needs root")
def test_a_good_file_writes_the_units_config_and_secrets_owned_by_betbox(tmp_path, pki, root, capsys):
    f = write(tmp_path, provisioning(pki))
    assert main(["provision", str(f), "--root", str(root), "--remove-source"]) == 0
    etc = root / "etc/betbox"
    config = load_config(etc / "seat.toml")         # what the unit reads at start
    assert (config.unit_id, config.table, config.box) == ("seat-3", "table-7", 3)
    assert config.link.url == "mqtts://broker.table-7.local:8883"
    assert config.link.password == "s3cret-pw" and config.link.username == "table-7/seat-3"
    assert config.link.tls.key == etc / "tls/client.key"
    # the table model's layout from the image is kept
    assert config.hardware["chip_reader"]["backend"] == "serial"
    assert config.hardware["lamps"]["options"]["lamps"] == {"progressive": 17, "bets_locked": 27}
    for rel, mode, uid in (("seat.toml", 0o600, UID), ("tls/client.key", 0o600, UID),
                           ("tls/client.pem", 0o644, 0), ("tls/ca.pem", 0o644, 0)):
        st = (etc / rel).stat()
        assert stat.S_IMODE(st.st_mode) == mode, rel
        assert (st.st_uid, st.st_gid) == (uid, GID), rel
    assert "s3cret-pw" not in capsys.readouterr().out
    assert not f.exists()                            # --remove-source: the secret copy is gone
    assert not list(etc.glob(".provision-*"))


@pytest.mark.parametrize("change, says", [
    (dict(box="15"), "[unit] box: 15 is out of range 1..14"),
    (dict(username="table-7/seat-4"), "[link] username: 'table-7/seat-4': the broker's ACL knows this unit as 'table-7/seat-3'"),
    (dict(key="other"), "[link.tls] key: is not the key of this cert"),
    (dict(cert="other", key="other"), "[link.tls] cert: its CN is 'table-7/seat-4'"),
    (dict(cert="forged", key="forged"), "[link.tls] cert: not signed by the ca given here"),
    (dict(extra_unit='colour = "red"'), "[unit] colour: unknown key"),
    (dict(extra_link="keepalive = 1"), "[link] keepalive: 1 is out of range 2..3600"),
])
def test_a_bad_file_names_the_key_and_changes_nothing(tmp_path, pki, root, capsys, change, says):
    before = {p: p.read_bytes() for p in (root / "etc/betbox").rglob("*") if p.is_file()}
    f = write(tmp_path, provisioning(pki, **change))
    assert main(["provision", str(f), "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert f"{f}: " in err and says in err, err
    after = {p: p.read_bytes() for p in (root / "etc/betbox").rglob("*") if p.is_file()}
    assert after == before
    assert f.exists()


def test_a_key_that_is_no_pem_is_refused(tmp_path, pki, root, capsys):
    text = provisioning(pki).replace("-----BEGIN PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----\nnot base64!")
    f = write(tmp_path, text)
    assert main(["provision", str(f), "--root", str(root)]) == 2
    assert "[link.tls] key: not a valid PEM private key" in capsys.readouterr().err


def test_a_key_encrypted_with_a_passphrase_is_refused_without_asking_for_it(tmp_path, pki, root, capsys):
    """openssl pkey asked for the passphrase on the technician's terminal (typed, the encrypted
    key was written and the unit refused it at start); without a terminal the message said
    "not a valid PEM private key" of a valid one."""
    from .pki import openssl
    openssl("pkey", "-in", "seat.key", "-aes256", "-passout", "pass:secret", "-out", "enc.key", cwd=pki)
    f = write(tmp_path, provisioning(pki, key="enc"))
    assert main(["provision", str(f), "--root", str(root)]) == 2
    assert "[link.tls] key: encrypted with a passphrase" in capsys.readouterr().err


def test_a_file_name_where_pem_belongs_is_refused(tmp_path, pki, root, capsys):
    text = provisioning(pki)
    start = text.index("cert = '''")
    end = text.index("'''", start + 10) + 3
    f = write(tmp_path, text[:start] + 'cert = "/etc/betbox/seat.pem"' + text[end:])
    assert main(["provision", str(f), "--root", str(root)]) == 2
    assert "[link.tls] cert: expected PEM text" in capsys.readouterr().err


def test_not_toml_and_a_root_without_the_image_are_told(tmp_path, pki, capsys):
    f = write(tmp_path, "[unit\nrole=")
    assert main(["provision", str(f), "--root", str(tmp_path)]) == 2
    assert "not valid TOML" in capsys.readouterr().err
    f = write(tmp_path, provisioning(pki))
    assert main(["provision", str(f), "--root", str(tmp_path / "empty")]) == 2
    assert "the image's seat configuration cannot be read" in capsys.readouterr().err


def test_the_shipped_layout_wrong_for_the_role_is_caught_as_the_unit_would(tmp_path, pki, root, capsys):
    """The merged configuration is checked whole, with the unit's own reader."""
    (root / "etc/betbox/seat.toml").write_text((IMAGE_CONFIG / "seat.toml").read_text().replace(
        'backend = "gpio"', 'backend = "telepathy"'))
    f = write(tmp_path, provisioning(pki))
    assert main(["provision", str(f), "--root", str(root)]) == 2
    assert "[hardware.lamps] backend: 'telepathy' is not one of mock, serial, gpio" in capsys.readouterr().err
    assert not (root / "etc/betbox/tls").exists()


def test_check_only_writes_nothing(tmp_path, pki, root, capsys):
    f = write(tmp_path, provisioning(pki))
    assert main(["provision", str(f), "--check"]) == 0
    assert "seat table-7/seat-3: provisioning file OK" in capsys.readouterr().out
    assert tomllib.loads((root / "etc/betbox/seat.toml").read_text())["unit"]["id"] == "seat-unprovisioned"
