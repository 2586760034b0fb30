"""Is the software on this unit the approved software? For regulators and for the unit itself.

A *manifest* lists every file of an installed release (``/opt/betbox/releases/<version>``:
the venv with betbox and every dependency) with its SHA-256, one line each in path order,
``sha256sum``'s format; its own SHA-256 is the release's single *digest*. The build signs
the manifest (CMS, detached, X.509: ``openssl cms``, the format RAUC signs bundles with) and
ships it in the release as ``betbox.manifest`` + ``betbox.manifest.cms``. :func:`verify`
checks the signature against the keyring (``/etc/rauc/keyring.pem``, the same trust anchor
as the update bundles), then the files against the manifest: a changed, missing or added
file is named.

A *seeded challenge* (GSA GAT style) lets a lab check a unit without trusting its manifest:
the lab picks a seed, the unit answers HMAC-SHA-256 keyed with the seed over every file
(path and content, in path order), and the lab computes the same over its approved copy
(``betbox verify --tree COPY --seed SEED``). A unit cannot precompute the answer.

The signature is checked with the ``openssl`` command (Debian's openssl; no Python
dependency), which exists on the image and on every Debian host.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

MANIFEST = "betbox.manifest"
SIGNATURE = "betbox.manifest.cms"
KEYRING = Path("/etc/rauc/keyring.pem")
SKIP = {MANIFEST, SIGNATURE}
CHUNK = 1 << 20


class VerifyError(ValueError):
    """Verification could not be done at all (no tree, no openssl); names what is missing."""


@dataclass(frozen=True)
class Manifest:
    """``(path, sha256 hex)`` per file, in path order."""

    entries: tuple[tuple[str, str], ...]

    @property
    def text(self) -> str:
        return "".join(f"{digest}  {path}\n" for path, digest in self.entries)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @classmethod
    def parse(cls, text: str, source: str) -> "Manifest":
        entries = []
        for n, line in enumerate(text.splitlines(), 1):
            digest, sep, path = line.partition("  ")
            if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest) or not path:
                raise VerifyError(f"{source}: line {n} is not 'SHA256  PATH': {line[:80]!r}")
            entries.append((path, digest))
        if [p for p, _ in entries] != sorted(p for p, _ in entries):
            raise VerifyError(f"{source}: the paths are not in order")
        return cls(tuple(entries))


@dataclass(frozen=True)
class Result:
    ok: bool
    digest: str                              # of the files as they are now
    signed_digest: str | None                # of the signed manifest (None: none readable)
    problems: tuple[str, ...] = field(default=())

    @property
    def summary(self) -> str:
        if self.ok:
            return f"verified: digest {self.digest}"
        more = f" (+{len(self.problems) - 3} more)" if len(self.problems) > 3 else ""
        return "NOT verified: " + "; ".join(self.problems[:3]) + more


def files(tree: Path) -> Iterator[tuple[str, Path]]:
    """Every file and symlink under ``tree`` (not the manifest itself), in path order."""
    if not tree.is_dir():
        raise VerifyError(f"{tree}: no installed release there")
    found = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames.sort()
        base = Path(dirpath)
        for name in filenames + [d for d in dirnames if (base / d).is_symlink()]:
            rel = (base / name).relative_to(tree).as_posix()
            if rel not in SKIP:
                found.append((rel, base / name))
    yield from sorted(found)


def _content(path: Path) -> Iterator[bytes]:
    """A file's bytes; a symlink is its target (not followed: a link is part of the tree)."""
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode):
        yield b"symlink:" + os.readlink(path).encode()
        return
    if not stat.S_ISREG(st.st_mode):
        yield b"special:" + oct(stat.S_IFMT(st.st_mode)).encode()
        return
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            yield chunk


def make_manifest(tree: Path) -> Manifest:
    entries = []
    for rel, path in files(tree):
        h = hashlib.sha256()
        for chunk in _content(path):
            h.update(chunk)
        entries.append((rel, h.hexdigest()))
    return Manifest(tuple(entries))


def challenge(tree: Path, seed: bytes) -> str:
    """HMAC-SHA-256 keyed with ``seed`` over every file's path and bytes, in path order."""
    if not seed:
        raise VerifyError("the seed is empty")
    mac = hmac.new(seed, digestmod=hashlib.sha256)
    for rel, path in files(tree):
        mac.update(rel.encode() + b"\0")
        for chunk in _content(path):
            mac.update(chunk)
        mac.update(b"\0")
    return mac.hexdigest()


def _openssl(args: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise VerifyError("the openssl command is missing") from None


def sign(tree: Path, cert: Path, key: Path) -> Manifest:
    """Write the tree's manifest and its detached CMS signature into the tree."""
    manifest = make_manifest(tree)
    (tree / MANIFEST).write_text(manifest.text)
    done = _openssl(["cms", "-sign", "-binary", "-in", str(tree / MANIFEST), "-signer", str(cert),
                     "-inkey", str(key), "-outform", "PEM", "-out", str(tree / SIGNATURE)])
    if done.returncode != 0:
        raise VerifyError(f"openssl cms -sign failed: {done.stderr.strip()}")
    return manifest


def verify(tree: Path, keyring: Path = KEYRING) -> Result:
    """The tree's files against its signed manifest, the signature against ``keyring``."""
    current = make_manifest(tree)
    manifest_path, sig_path = tree / MANIFEST, tree / SIGNATURE
    for p in (manifest_path, sig_path):
        if not p.is_file():
            return Result(False, current.digest, None, (f"{p} is missing: this release has no signed manifest",))
    if not keyring.is_file():
        return Result(False, current.digest, None, (f"{keyring} (the keyring) is missing",))
    checked = _openssl(["cms", "-verify", "-binary", "-inform", "PEM", "-in", str(sig_path),
                        "-content", str(manifest_path), "-CAfile", str(keyring), "-purpose", "any",
                        "-out", os.devnull])
    if checked.returncode != 0:
        why = (checked.stderr.strip().splitlines() or ["openssl refused it"])[0]
        return Result(False, current.digest, None,
                      (f"{MANIFEST}'s signature does not verify against {keyring}: {why}",))
    try:
        signed = Manifest.parse(manifest_path.read_text(encoding="utf-8"), str(manifest_path))
    except (VerifyError, UnicodeDecodeError) as exc:
        return Result(False, current.digest, None, (str(exc),))
    want, have = dict(signed.entries), dict(current.entries)
    problems = [f"{p}: changed" for p in sorted(want) if p in have and have[p] != want[p]]
    problems += [f"{p}: missing" for p in sorted(set(want) - set(have))]
    problems += [f"{p}: not in the manifest" for p in sorted(set(have) - set(want))]
    return Result(not problems, current.digest, signed.digest, tuple(problems))
