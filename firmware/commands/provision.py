"""``betbox provision FILE [--root DIR]``: give a flashed unit its identity and secrets.

One provisioning file per unit (TOML) says who the unit is and how it reaches the broker::

    [unit]  role = "seat" | "dealer" | "jackpot", id, table (not jackpot), box (seat, 1..14)
    [link]  broker = "mqtts://HOST:PORT", username, password, jackpot (link id), keepalive, ...
    [link.tls]  ca, cert, key     PEM text written inline ('''-----BEGIN ...''')

It is checked strictly (the message names the file, the key and what is wrong): PEM that
does not parse, a key that is not the certificate's, a certificate the CA did not sign or
that has expired, a username that is not the unit's broker identity ``<table>/<id>`` (the
ACL's ``%u``), a client certificate whose CN is not that identity. Then it is merged into
the role's configuration that the image ships (``ROOT/etc/betbox/<role>.toml``: the table
model's hardware layout) and the whole result is checked as :func:`load_config` would.

Written under ``ROOT/etc/betbox``: ``<role>.toml`` (it holds the MQTT password: 0600),
``tls/ca.pem`` (0644), ``tls/client.pem`` (0644), ``tls/client.key`` (0600); the secret
files are owned by the ``betbox`` user of ROOT's own ``/etc/passwd`` (a flashed card mounted
on a technician's laptop has its own users). Files are staged and checked first, then moved
into place one by one with :func:`os.replace`: a bad file changes nothing.
``--remove-source``: the provisioning file is overwritten and deleted afterwards (first boot
reads it from the FAT boot partition, where every file is world-readable).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any, Mapping

from firmware.config import ID, ConfigError, parse_config
from firmware.engine.strict import Section, read_text

ROLES = ("seat", "dealer", "jackpot")
OWNER = "betbox"
CONFIG_DIR = "etc/betbox"
PEM = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----")
MAX_PROVISIONING_BYTES = 1_000_000      # a unit's identity, link and three PEM files: a few KB


class ProvisionError(ValueError):
    """A provisioning file that must not be applied; names the file, the key and why."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("provision", help="write a unit's identity, broker link and secrets from its provisioning file")
    p.add_argument("file", help="the unit's provisioning file (TOML)")
    p.add_argument("--root", default="/", help="the unit's root file system (default /; a mounted card: its mount point)")
    p.add_argument("--check", action="store_true", help="check the file only, write nothing")
    p.add_argument("--remove-source", action="store_true",
                   help="overwrite and delete the provisioning file once applied (it holds secrets)")
    p.set_defaults(func=run)


# --- reading --------------------------------------------------------------------------------

class _Section(Section):
    def __init__(self, data: Any, where: str, source: str, error: type[ValueError] = ProvisionError) -> None:
        super().__init__(data, where, source, error)


def _openssl(args: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    """The openssl command, PEM on stdin (a key never goes on a command line)."""
    return subprocess.run(["openssl", *args], input=stdin, capture_output=True, text=True, timeout=30)


def _pem(tls: _Section, key: str, kind: str) -> str:
    text = tls.get(key, str)
    found = PEM.search(text)
    if found is None:
        raise tls.fail(key, f"expected PEM text ('-----BEGIN {kind}-----' ...), not a file name or other text")
    if kind == "CERTIFICATE":
        probe = _openssl(["x509", "-noout"], text)
    elif "ENCRYPTED" in text:           # PKCS#8 "ENCRYPTED PRIVATE KEY" or a legacy Proc-Type header
        raise tls.fail(key, "encrypted with a passphrase: a unit needs an unencrypted key (nobody is there "
                            "to type it at start)")
    else:                               # -passin pass:: openssl never asks on the technician's terminal
        probe = _openssl(["pkey", "-noout", "-passin", "pass:"], text)
    if probe.returncode != 0:
        raise tls.fail(key, f"not a valid PEM {kind.lower()}: {probe.stderr.strip().splitlines()[0] if probe.stderr else 'openssl refused it'}")
    return text if text.endswith("\n") else text + "\n"


def _check_tls(tls: _Section, identity: str, ca: str, cert: str | None, key: str | None) -> None:
    if cert is None:
        return
    with tempfile.NamedTemporaryFile("w", suffix=".pem") as cafile:
        cafile.write(ca)
        cafile.flush()
        signed = _openssl(["verify", "-CAfile", cafile.name], cert)
    if signed.returncode != 0:
        raise tls.fail("cert", f"not signed by the ca given here: {signed.stdout.strip() or signed.stderr.strip()}")
    if _openssl(["x509", "-noout", "-checkend", "0"], cert).returncode != 0:
        raise tls.fail("cert", "has expired")
    cert_pub = _openssl(["x509", "-noout", "-pubkey"], cert).stdout
    key_pub = _openssl(["pkey", "-pubout", "-passin", "pass:"], key or "").stdout
    if not cert_pub or cert_pub != key_pub:
        raise tls.fail("key", "is not the key of this cert (their public keys differ)")
    subject = _openssl(["x509", "-noout", "-subject", "-nameopt", "RFC2253"], cert).stdout.strip()
    cn = re.search(r"CN=((?:[^,\\]|\\.)*)", subject)
    if cn is None or cn.group(1) != identity:
        got = cn.group(1) if cn else "none"
        raise tls.fail("cert", f"its CN is {got!r}; the broker knows this unit as {identity!r}")


class Provisioning:
    """A checked provisioning file: the unit's identity and its ``[link]`` table, PEM apart."""

    def __init__(self, role: str, unit_id: str, table: str, box: int | None,
                 link: dict[str, Any], pems: dict[str, str]) -> None:
        self.role, self.unit_id, self.table, self.box = role, unit_id, table, box
        self.link, self.pems = link, pems

    @property
    def identity(self) -> str:
        """The unit's broker username (the ACL's ``%u``)."""
        return f"jackpot/{self.unit_id}" if self.role == "jackpot" else f"{self.table}/{self.unit_id}"


def read_provisioning(path: Path) -> Provisioning:
    source = str(path)
    try:
        data = tomllib.loads(read_text(path, MAX_PROVISIONING_BYTES, "a provisioning file"))
    except OSError as exc:
        raise ProvisionError(f"cannot read {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ProvisionError(f"{path}: not valid TOML: {exc}") from None
    top = _Section(data, "", source)
    unit = top.section("unit")
    role = unit.choice("role", ROLES)
    unit_id = unit.get("id", str)
    if not ID.match(unit_id):
        raise unit.fail("id", f"{unit_id!r}: letters, digits, '_', '.', '-' (at most 64)")
    table = ""
    if role != "jackpot":
        table = unit.get("table", str)
        if not ID.match(table):
            raise unit.fail("table", f"{table!r}: letters, digits, '_', '.', '-' (at most 64)")
    box = unit.int_in("box", 1, 14) if role == "seat" else None
    unit.finish()
    link = top.section("link")
    identity = f"jackpot/{unit_id}" if role == "jackpot" else f"{table}/{unit_id}"
    username = link.get("username", str)
    if username != identity:
        raise link.fail("username", f"{username!r}: the broker's ACL knows this unit as {identity!r}")
    link.get("password", str)                                   # required: the broker's password file
    for key in ("broker", "jackpot", "keepalive", "reconnect_max", "max_payload"):
        link.used.add(key)                                      # checked by the link's own reader below
    pems: dict[str, str] = {}
    table_data = {k: v for k, v in link.data.items() if k != "tls"}
    if "tls" in link.data:
        tls = link.section("tls")
        pems["ca"] = _pem(tls, "ca", "CERTIFICATE")
        if ("cert" in tls.data) != ("key" in tls.data):
            raise tls.fail("key" if "cert" in tls.data else "cert",
                           "missing: a client certificate needs its key and the key its certificate")
        if "cert" in tls.data:
            pems["cert"] = _pem(tls, "cert", "CERTIFICATE")
            pems["key"] = _pem(tls, "key", "PRIVATE KEY")
        tls.finish()
        _check_tls(tls, identity, pems["ca"], pems.get("cert"), pems.get("key"))
    else:
        link.used.add("tls")
    link.finish()
    top.finish()
    return Provisioning(role, unit_id, table, box, table_data, pems)


# --- writing --------------------------------------------------------------------------------

TLS_FILES = {"ca": ("tls/ca.pem", 0o644), "cert": ("tls/client.pem", 0o644), "key": ("tls/client.key", 0o600)}


def merged_config(template: Mapping[str, Any], p: Provisioning) -> dict[str, Any]:
    """The role's shipped configuration with this unit's identity and link written over it."""
    out = json.loads(json.dumps(template))                      # a deep copy of plain TOML values
    unit = out.setdefault("unit", {})
    unit["role"] = p.role
    unit["id"] = p.unit_id
    if p.role != "jackpot":
        unit["table"] = p.table
    if p.box is not None:
        out.setdefault("seat", {})["box"] = p.box
    link = dict(p.link)
    if p.pems:
        link["tls"] = {k: TLS_FILES[k][0] for k in p.pems}     # relative to /etc/betbox
    out["link"] = link
    return out


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)                               # a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {value!r} as TOML")


def dump_toml(data: Mapping[str, Any]) -> str:
    """TOML for a configuration (tables of tables of plain values); read back to be sure."""
    lines: list[str] = ["# written by betbox provision"]

    def table(name: str, body: Mapping[str, Any]) -> None:
        plain = {k: v for k, v in body.items() if not isinstance(v, dict) or name.startswith("hardware.")}
        subs = {k: v for k, v in body.items() if k not in plain}
        if plain or not subs:
            lines.append(f"\n[{name}]")
            lines.extend(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in plain.items())
        for k, v in subs.items():
            table(f"{name}.{k}", v)

    for name, body in data.items():
        if not isinstance(body, dict):
            raise TypeError(f"top-level {name!r} is not a table")
        if name == "hardware":
            for port, options in body.items():
                table(f"hardware.{port}", options)
        else:
            table(name, body)
    text = "\n".join(lines) + "\n"
    if tomllib.loads(text) != json.loads(json.dumps(data)):
        raise ValueError("the configuration did not survive writing as TOML")
    return text


def _owner(root: Path) -> tuple[int, int]:
    """``betbox``'s uid and gid in ROOT's own user database."""
    try:
        for line in (root / "etc/passwd").read_text(encoding="utf-8").splitlines():
            fields = line.split(":")
            if len(fields) >= 4 and fields[0] == OWNER:
                return int(fields[2]), int(fields[3])
    except OSError:
        pass
    raise ProvisionError(f"{root / 'etc/passwd'}: has no user {OWNER!r} (is {root} a betbox image's root?)")


def apply(p: Provisioning, root: Path, source: str) -> list[Path]:
    """Write the unit's configuration and secrets under ROOT; returns the files written."""
    config_dir = root / CONFIG_DIR
    template_path = config_dir / f"{p.role}.toml"
    try:
        template = tomllib.loads(template_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProvisionError(f"{template_path}: the image's {p.role} configuration cannot be read "
                             f"({exc.strerror}); is {root} a betbox {p.role} image?") from None
    uid, gid = _owner(root)
    config = merged_config(template, p)
    text = dump_toml(config)
    stage = Path(tempfile.mkdtemp(prefix=".provision-", dir=config_dir))
    try:
        os.chmod(stage, 0o700)
        files: dict[str, tuple[str, int]] = {f"{p.role}.toml": (text, 0o600)}
        for kind, pem in p.pems.items():
            files[TLS_FILES[kind][0]] = (pem, TLS_FILES[kind][1])
        for rel, (content, mode) in files.items():
            target = stage / rel
            target.parent.mkdir(mode=0o750, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)   # never readable by others, not even briefly
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(content)
                f.flush()
                os.fsync(f.fileno())
            os.chown(target, uid if mode == 0o600 else 0, gid)
        try:                                                    # the whole result, as the unit will read it
            parse_config(config, source, stage)
        except ConfigError as exc:
            raise ProvisionError(str(exc)) from None
        written = []
        for rel in files:
            final = config_dir / rel
            final.parent.mkdir(mode=0o750, exist_ok=True)
            os.chown(final.parent, 0, gid)
            os.replace(stage / rel, final)
            written.append(final)
        fd = os.open(config_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return written
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _remove(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.write(b"\0" * size)
        f.flush()
        os.fsync(f.fileno())
    path.unlink()


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        p = read_provisioning(path)
        if args.check:
            print(f"{path}: {p.role} {p.identity}: provisioning file OK")
            return 0
        written = apply(p, Path(args.root), str(path))
    except ProvisionError as exc:
        print(f"betbox provision: {exc}", file=sys.stderr)
        return 2
    except subprocess.TimeoutExpired:
        print("betbox provision: openssl did not answer", file=sys.stderr)
        return 2
    except PermissionError as exc:
        print(f"betbox provision: {exc.filename}: {exc.strerror} (run as root: the secrets go to user {OWNER})",
              file=sys.stderr)
        return 2
    if args.remove_source:
        _remove(path)
    for f in written:
        print(f"{f} ({oct(f.stat().st_mode & 0o777)})")
    print(f"betbox provision: {p.role} {p.identity} provisioned under {Path(args.root) / CONFIG_DIR}")
    return 0
