"""Fixtures of the technician's tests: a signed release tree and its development CA."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from firmware.verify import sign

from .pki import make_ca, make_cert


@pytest.fixture
def signing(tmp_path_factory) -> Path:
    """A development CA (ca.pem: the keyring), its signer (signer.pem/.key), and a rogue CA's
    signer (rogue-signer.pem/.key) that the keyring does not trust."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    d = tmp_path_factory.mktemp("pki")
    make_ca(d)
    make_cert(d, "signer", "betbox development signer", ext="keyUsage=critical,digitalSignature")
    make_ca(d, "rogue", "rogue CA")
    make_cert(d, "rogue-signer", "betbox development signer", ca="rogue", ext="keyUsage=critical,digitalSignature")
    return d


@pytest.fixture
def release(tmp_path, signing) -> Path:
    """An installed release as the image has it: a venv-like tree, signed."""
    tree = tmp_path / "releases" / "0.1.0"
    (tree / "bin").mkdir(parents=True)
    (tree / "lib/python3.11/site-packages/firmware/engine").mkdir(parents=True)
    (tree / "lib/python3.11/site-packages/firmware/engine/settlement.py").write_text("PAYS = {'blackjack': (3, 2)}\n")
    (tree / "lib/python3.11/site-packages/firmware/__init__.py").write_text("__version__ = '0.1.0'\n")
    (tree / "bin/betbox").write_text("#!/opt/betbox/current/bin/python\n")
    (tree / "bin/python3").symlink_to("/usr/bin/python3.11")
    (tree / "pyvenv.cfg").write_text("home = /usr/bin\n")
    sign(tree, signing / "signer.pem", signing / "signer.key")
    return tree
