"""``betbox verify``: the installed files against the signed manifest; the seeded challenge."""

from __future__ import annotations

import json
import shutil

import pytest

from firmware.cli import main
from firmware.verify import MANIFEST, SIGNATURE, challenge, make_manifest, sign, verify

SETTLEMENT = "lib/python3.11/site-packages/firmware/engine/settlement.py"


def test_an_untouched_release_is_verified(release, signing, capsys):
    assert main(["verify", "--tree", str(release), "--keyring", str(signing / "ca.pem"), "--manifest"]) == 0
    out = capsys.readouterr().out
    digest = make_manifest(release).digest
    assert f"digest: {digest}" in out and f"signed: {digest}" in out
    assert "verdict: VERIFIED" in out
    # one line per file, sha256sum's format, the manifest itself not in it
    assert f"  {SETTLEMENT}\n" in out and "  bin/python3\n" in out and MANIFEST not in out.split("betbox ")[0]


def test_a_tampered_file_is_named_and_the_verdict_is_not_verified(release, signing, capsys):
    (release / SETTLEMENT).write_text("PAYS = {'blackjack': (6, 5)}\n")     # a short-paying build
    assert main(["verify", "--tree", str(release), "--keyring", str(signing / "ca.pem"), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["verified"] is False
    assert out["problems"] == [f"{SETTLEMENT}: changed"]
    assert out["digest"] != out["signed_digest"]


def test_added_removed_and_relinked_files_are_named(release, signing):
    (release / "lib/python3.11/site-packages/firmware/__init__.py").unlink()
    (release / "lib/python3.11/site-packages/sitecustomize.py").write_text("import os\n")
    (release / "bin/python3").unlink()
    (release / "bin/python3").symlink_to("/tmp/evil-python")
    r = verify(release, signing / "ca.pem")
    assert not r.ok
    assert set(r.problems) == {"bin/python3: changed", "lib/python3.11/site-packages/firmware/__init__.py: missing",
                               "lib/python3.11/site-packages/sitecustomize.py: not in the manifest"}


def test_a_manifest_rewritten_to_match_a_tampered_file_fails_its_signature(release, signing):
    (release / SETTLEMENT).write_text("PAYS = {'blackjack': (6, 5)}\n")
    (release / MANIFEST).write_text(make_manifest(release).text)              # not re-signed
    r = verify(release, signing / "ca.pem")
    assert not r.ok and "signature does not verify" in r.problems[0]


def test_a_manifest_signed_by_a_ca_outside_the_keyring_is_not_verified(release, signing):
    sign(release, signing / "rogue-signer.pem", signing / "rogue-signer.key")
    r = verify(release, signing / "ca.pem")
    assert not r.ok and "signature does not verify" in r.problems[0]


def test_no_signed_manifest_or_no_keyring_is_not_verified(release, signing, tmp_path):
    r = verify(release, tmp_path / "no-keyring.pem")
    assert not r.ok and "keyring" in r.problems[0]
    (release / SIGNATURE).unlink()
    r = verify(release, signing / "ca.pem")
    assert not r.ok and "no signed manifest" in r.problems[0]


def test_the_seeded_challenge_matches_the_labs_copy_and_only_it(release, signing, tmp_path, capsys):
    lab_copy = tmp_path / "lab-copy"
    shutil.copytree(release, lab_copy, symlinks=True)
    seed = "00112233445566778899aabbccddeeff"
    assert main(["verify", "--tree", str(release), "--keyring", str(signing / "ca.pem"), "--seed", seed]) == 0
    answer = capsys.readouterr().out.split("hmac-sha256 ")[1].split()[0]
    assert answer == challenge(lab_copy, bytes.fromhex(seed))
    assert answer != challenge(lab_copy, bytes.fromhex("ff" + seed[2:]))      # a new seed: a new answer
    (release / SETTLEMENT).write_text("PAYS = {'blackjack': (6, 5)}\n")
    assert challenge(release, bytes.fromhex(seed)) != answer


@pytest.mark.parametrize("seed, says", [("xyz", "expected hex digits"), ("0011", "at least 8 bytes")])
def test_a_bad_seed_is_told(release, signing, capsys, seed, says):
    assert main(["verify", "--tree", str(release), "--seed", seed]) == 2
    assert says in capsys.readouterr().err


def test_no_tree_is_told(tmp_path, capsys):
    assert main(["verify", "--tree", str(tmp_path / "nothing")]) == 2
    assert "no installed release there" in capsys.readouterr().err
