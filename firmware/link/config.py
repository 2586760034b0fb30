"""Link configuration: broker address, TLS and credentials, read strictly.

Unknown keys and bad values are errors that name the key (``[link.tls] cert: ...``), so a
misspelt option stops start-up instead of silently connecting without TLS.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit


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

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"


def parse_broker_url(url: str, where: str = "broker") -> tuple[str, int, bool]:
    """``mqtt://HOST:PORT`` or ``mqtts://HOST:PORT`` → (host, port, tls)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise LinkConfigError(f"{where}: {url!r} is not a broker address ({exc})") from None
    if parts.scheme not in ("mqtt", "mqtts"):
        raise LinkConfigError(f"{where}: {url!r} must start with mqtt:// or mqtts://")
    if not parts.hostname:
        raise LinkConfigError(f"{where}: {url!r} names no host")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise LinkConfigError(f"{where}: {url!r}: write only mqtt://HOST:PORT "
                              "(credentials go in username/password)")
    tls = parts.scheme == "mqtts"
    return parts.hostname, port if port is not None else (8883 if tls else 1883), tls


_LINK_KEYS = {"broker", "username", "password", "keepalive", "reconnect_max", "tls"}
_TLS_KEYS = {"ca", "cert", "key"}


def _path(section: str, key: str, value: Any, base: Path | None) -> Path:
    if not isinstance(value, str) or not value:
        raise LinkConfigError(f"[{section}] {key}: {value!r} is not a file path")
    path = Path(value)
    if base is not None and not path.is_absolute():
        path = base / path
    if not path.is_file():
        raise LinkConfigError(f"[{section}] {key}: {path} does not exist")
    return path


def _int(section: str, key: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise LinkConfigError(f"[{section}] {key}: {value!r} must be a whole number from {lo} to {hi}")
    return value


def load_link_config(data: Mapping[str, Any], section: str = "link", base: Path | None = None) -> LinkConfig:
    """A :class:`LinkConfig` from a TOML/JSON table; ``base`` resolves relative file paths."""
    if not isinstance(data, Mapping):
        raise LinkConfigError(f"[{section}] must be a table")
    unknown = sorted(set(data) - _LINK_KEYS)
    if unknown:
        raise LinkConfigError(f"[{section}] unknown key {unknown[0]!r} (known: {', '.join(sorted(_LINK_KEYS))})")
    if "broker" not in data:
        raise LinkConfigError(f"[{section}] broker is missing (e.g. broker = \"mqtt://127.0.0.1:1883\")")
    if not isinstance(data["broker"], str):
        raise LinkConfigError(f"[{section}] broker: {data['broker']!r} is not an address")
    host, port, tls_wanted = parse_broker_url(data["broker"], f"[{section}] broker")
    username = data.get("username")
    password = data.get("password")
    for key, value in (("username", username), ("password", password)):
        if value is not None and (not isinstance(value, str) or not value):
            raise LinkConfigError(f"[{section}] {key}: must be a non-empty string")
    if password is not None and username is None:
        raise LinkConfigError(f"[{section}] password: given without a username")
    tls = None
    if "tls" in data:
        t = data["tls"]
        sub = f"{section}.tls"
        if not isinstance(t, Mapping):
            raise LinkConfigError(f"[{sub}] must be a table")
        unknown = sorted(set(t) - _TLS_KEYS)
        if unknown:
            raise LinkConfigError(f"[{sub}] unknown key {unknown[0]!r} (known: {', '.join(sorted(_TLS_KEYS))})")
        if "ca" not in t:
            raise LinkConfigError(f"[{sub}] ca is missing: the CA that signed the broker's certificate")
        if ("cert" in t) != ("key" in t):
            raise LinkConfigError(f"[{sub}] {'key' if 'cert' in t else 'cert'} is missing: "
                                  "a client certificate needs its key and the key its certificate")
        tls = TlsConfig(_path(sub, "ca", t["ca"], base),
                        _path(sub, "cert", t["cert"], base) if "cert" in t else None,
                        _path(sub, "key", t["key"], base) if "key" in t else None)
    if tls_wanted and tls is None:
        raise LinkConfigError(f"[{section}] broker: mqtts:// needs a [{section}.tls] table with ca")
    if tls is not None and not tls_wanted:
        raise LinkConfigError(f"[{section}] broker: [{section}.tls] is given; write mqtts:// to use it")
    return LinkConfig(host, port, tls, username, password,
                      _int(section, "keepalive", data.get("keepalive", 15), 2, 3600),
                      _int(section, "reconnect_max", data.get("reconnect_max", 5), 1, 300))


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
