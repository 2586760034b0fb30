"""Link configuration: broker address, TLS and credentials, read strictly.

Read with :class:`firmware.engine.strict.Section`: unknown keys and bad values are errors that name
the file, the section and the key (``seat.toml: [link.tls] cert: ...``), so a misspelt
option stops start-up instead of silently connecting without TLS.

``[link]`` broker, username, password, allow_insecure (a password over plain ``mqtt://`` is
refused unless this is true), keepalive (2..3600 s), reconnect_max (1..300 s),
max_payload (bytes, 4096..16777216, default 65536: larger incoming messages are dropped
before they are decoded, logged and counted); ``[link.tls]`` ca, cert, key.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

from firmware.engine.strict import Section, file_problem, redact_url

DEFAULT_MAX_PAYLOAD = 64 * 1024   # bytes: an incoming message larger than this is dropped unread
MIN_PAYLOAD = 4 * 1024
MAX_PAYLOAD = 16 * 1024 * 1024


class LinkConfigError(ValueError):
    """A link option is unknown, missing or out of range; the message names it."""


@dataclass(frozen=True)
class TlsConfig:
    ca: Path
    cert: Path | None = None
    key: Path | None = None


@dataclass(frozen=True)
class LinkConfig:
    host: str
    port: int
    tls: TlsConfig | None = None
    username: str | None = None
    password: str | None = None
    keepalive: int = 15
    reconnect_max: int = 5            # seconds between reconnect attempts, at most
    max_payload: int = DEFAULT_MAX_PAYLOAD   # bytes; larger incoming messages are dropped unread

    @property
    def url(self) -> str:
        """The broker for messages and logs: scheme, host and port, never the credentials."""
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"


def parse_broker_url(url: str, where: str = "broker") -> tuple[str, int, bool]:
    """``mqtt://HOST:PORT`` or ``mqtts://HOST:PORT`` → (host, port, tls). A refusal shows the URL
    with any password in it redacted (:func:`redact_url`)."""
    shown = repr(redact_url(url))
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise LinkConfigError(f"{where}: {shown} is not a broker address ({exc})") from None
    if parts.scheme not in ("mqtt", "mqtts"):
        raise LinkConfigError(f"{where}: {shown} must start with mqtt:// or mqtts://")
    if not parts.hostname:
        raise LinkConfigError(f"{where}: {shown} names no host")
    # "@" in the address, not parts.username: "mqtt://:PASSWORD@host" has an empty user name
    if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
        raise LinkConfigError(f"{where}: {shown}: write only mqtt://HOST:PORT "
                              "(credentials go in username/password)")
    tls = parts.scheme == "mqtts"
    return parts.hostname, port if port is not None else (8883 if tls else 1883), tls


class _Section(Section):
    """A strict table whose errors are :class:`LinkConfigError`; without a source (the
    command line, a caller that adds it) the message starts at the section."""

    def __init__(self, data: Any, where: str, source: str | None, error: type[ValueError] = LinkConfigError) -> None:
        if not isinstance(data, Mapping):
            raise error(f"{source + ': ' if source else ''}[{where}] must be a table")
        super().__init__(dict(data), where, source or "", error)

    def fail(self, key: str, msg: str) -> ValueError:
        return self.error(f"{self.source + ': ' if self.source else ''}[{self.where}] {key}: {msg}")


    def path(self, key: str, base: Path | None) -> Path:
        value = self.get(key, str)
        if not value:
            raise self.fail(key, f"{value!r} is not a file path")
        path = Path(value)
        if base is not None and not path.is_absolute():
            path = base / path
        problem = file_problem(path)
        if problem is not None:
            raise self.fail(key, f"{path} {problem}")
        return path


def load_link_config(data: Mapping[str, Any], section: str = "link", base: Path | None = None,
                     source: str | None = None) -> LinkConfig:
    """A :class:`LinkConfig` from a TOML/JSON table; ``base`` resolves relative file paths;
    ``source`` (a file name) starts every error message."""
    link = _Section(data, section, source)
    if "broker" not in link.data:
        raise link.fail("broker", "missing (e.g. broker = \"mqtt://127.0.0.1:1883\")")
    url = link.get("broker", str)
    try:
        host, port, tls_wanted = parse_broker_url(url, "broker")
    except LinkConfigError as exc:
        raise link.fail("broker", str(exc).removeprefix("broker: ")) from None
    username = link.get("username", str, None)
    password = link.get("password", str, None)
    for key, value in (("username", username), ("password", password)):
        if value == "":
            raise link.fail(key, "must be a non-empty string")
    if password is not None and username is None:
        raise link.fail("password", "given without a username")
    # #11: a password sent in clear over plain mqtt:// is said to be meant, never a default
    allow_insecure = link.get("allow_insecure", bool, False)
    if password is not None and not tls_wanted and not allow_insecure:
        raise link.fail("password", f"sent in clear over {redact_url(url)}: use mqtts:// with a [{section}.tls] table "
                                    "(ca, cert, key), or say allow_insecure = true (a lab, a loopback broker)")
    keepalive = link.int_in("keepalive", 2, 3600, 15)
    reconnect_max = link.int_in("reconnect_max", 1, 300, 5)
    max_payload = link.int_in("max_payload", MIN_PAYLOAD, MAX_PAYLOAD, DEFAULT_MAX_PAYLOAD)
    tls = None
    if "tls" in link.data:
        t = link.section("tls")
        if "ca" not in t.data:
            raise t.fail("ca", "missing: the CA that signed the broker's certificate")
        if ("cert" in t.data) != ("key" in t.data):
            raise t.fail("key" if "cert" in t.data else "cert",
                         "missing: a client certificate needs its key and the key its certificate")
        tls = TlsConfig(t.path("ca", base), t.path("cert", base) if "cert" in t.data else None,
                        t.path("key", base) if "key" in t.data else None)
        t.finish()
    else:
        link.used.add("tls")
    link.finish()
    if tls_wanted and tls is None:
        raise link.fail("broker", f"mqtts:// needs a [{section}.tls] table with ca")
    if tls is not None and not tls_wanted:
        raise link.fail("broker", f"[{section}.tls] is given; write mqtts:// to use it")
    return LinkConfig(host, port, tls, username, password, keepalive, reconnect_max, max_payload)


def config_from_url(url: str, **extra: Any) -> LinkConfig:
    """The command-line form: ``--broker mqtt://HOST:PORT`` plus keyword options."""
    return load_link_config({"broker": url, **{k: v for k, v in extra.items() if v is not None}})


def config_hash(data: Any) -> str:
    """What a birth message carries: the SHA-256 of the unit's configuration (canonical JSON),
    secrets left out so the hash can be published."""
    def scrub(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {k: ("<secret>" if k in ("password", "key") else scrub(x)) for k, x in sorted(v.items())}
        if isinstance(v, (list, tuple)):
            return [scrub(x) for x in v]
        return v if isinstance(v, (str, int, float, bool)) or v is None else str(v)
    text = json.dumps(scrub(data), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
