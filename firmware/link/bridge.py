"""A table's own mosquitto, bridged to the floor broker (docs/floor.md).

Each table runs its own broker; its stream, catch-up and seat inputs never leave it, so it
deals and settles while the floor network is down. A mosquitto bridge (a connection the
table broker opens to the floor broker, as the MQTT user ``<table>/bridge``) carries:

- up (``out``): the table's units' reports and presence, the table alarm, the dealer's
  answers to the pit;
- down (``in``): the controller's presence and meter, the confirmation marks of the
  table's units, the pit's commands to this table.

QoS 1 both ways, a persistent session on both sides (``cleansession false``,
``local_cleansession false``) so what is published while the bridge is down is queued
(bounded by ``max_queued_messages``) and delivered in order once it is back, TLS to the
floor. The bridge's state is published retained (``notification_topic``) on
:func:`topics.bridge_state_topic`: ``1`` connected, ``0`` not; the units read it
(``ControllerWatch``) and close the progressive while it is ``0``, as when the controller
is offline.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from firmware.runtime.bus import ROOT

from . import topics
from .acl import render_acl

# Days of a table's reports while the floor is away (~900 an hour at 60 rounds/h:
# bench_floor.py measured 0.245 reports/s a table); a bound on what the table's own broker
# holds for the bridge (and for any one client).
TABLE_MAX_QUEUED = 50000


@dataclass(frozen=True)
class Listener:
    """Where the table broker takes its units' connections."""
    port: int = 8883
    address: str = "0.0.0.0"
    ca: str | None = "/etc/mosquitto/ca_certificates/betbox-ca.pem"
    cert: str | None = "/etc/mosquitto/certs/table-broker.pem"
    key: str | None = "/etc/mosquitto/certs/table-broker.key"


@dataclass(frozen=True)
class Bridge:
    """The table broker's connection to the floor broker."""
    table: str
    floor: str                               # host:port of the floor broker
    password: str                            # the bridge user's password at the floor broker
    ca: str | None = None                    # TLS to the floor: CA, the bridge's certificate, key
    cert: str | None = None
    key: str | None = None
    link_id: str = "main"
    restart: tuple[int, int] = (2, 30)       # reconnect backoff: base, cap (seconds)
    keepalive: int = 15                      # a dead floor link is noticed within ~1.5 of this

    @property
    def username(self) -> str:
        return bridge_user(self.table)


def bridge_user(table: str) -> str:
    """The bridge's MQTT user (and client id) at the floor broker: one per table."""
    return topics.check_unit_id(f"{table}/bridge")


def topics_up(table: str) -> list[str]:
    t = f"{ROOT}/table/{table}"
    return [f"{ROOT}/unit/{table}/+/report", f"{ROOT}/unit/{table}/+/status", f"{t}/alarm",
            f"{t}/pit/response"]


def topics_down(table: str, link_id: str = "main") -> list[str]:
    j = f"{ROOT}/jackpot/{link_id}"
    return [f"{j}/status", f"{j}/meter", f"{j}/confirmed/{table}/+", f"{ROOT}/table/{table}/pit/command"]


def render_bridge(bridge: Bridge) -> str:
    """The bridge section of the table broker's mosquitto.conf."""
    table = topics.check_unit_id(f"{bridge.table}/x").split("/")[0]
    if (bridge.cert is None) != (bridge.key is None):
        raise ValueError("a bridge's TLS needs both a certificate and its key")
    if not bridge.password or any(c.isspace() for c in bridge.password):
        raise ValueError("the bridge password must be one word (mosquitto.conf ends it at a space)")
    lines = ["# The bridge to the floor broker (docs/floor.md). QoS 1 both ways; the sessions on",
             "# both sides persist, so what is published while the floor is away is queued",
             "# (max_queued_messages) and delivered in order once it is back.",
             f"connection floor-{table}",
             f"address {bridge.floor}",
             f"remote_clientid {bridge.username}",
             f"remote_username {bridge.username}",
             f"remote_password {bridge.password}",
             f"local_clientid bridge-{table}",
             "bridge_protocol_version mqttv311",
             "try_private true",
             "cleansession false",
             "local_cleansession false",
             "start_type automatic",
             f"restart_timeout {bridge.restart[0]} {bridge.restart[1]}",
             f"keepalive_interval {bridge.keepalive}",
             "# 1/0 retained on both brokers: the units close the progressive while it is 0",
             "notifications true",
             f"notification_topic {topics.bridge_state_topic(table)}"]
    if bridge.ca:
        lines += [f"bridge_cafile {bridge.ca}", "bridge_tls_version tlsv1.2"]
        if bridge.cert:
            lines += [f"bridge_certfile {bridge.cert}", f"bridge_keyfile {bridge.key}"]
    lines += ["# up: reports, presence, alarms, answers to the pit"]
    lines += [f"topic {t} out 1" for t in topics_up(table)]
    lines += ["# down: the controller's presence and meter, this table's marks, the pit's commands"]
    lines += [f"topic {t} in 1" for t in topics_down(table, bridge.link_id)]
    return "\n".join(lines) + "\n"


def render_table_broker(bridge: Bridge, *, listener: Listener = Listener(), persistence: str =
                        "/var/lib/mosquitto/", password_file: str = "/etc/mosquitto/betbox.passwd",
                        acl_file: str = "/etc/mosquitto/betbox.acl",
                        max_queued: int = TABLE_MAX_QUEUED) -> str:
    """A table broker's whole mosquitto.conf: the table's listener as docs/mqtt/mosquitto.conf
    (TLS, per-unit passwords, the ACL of :func:`render_table_acl`), then the bridge."""
    lines = [f"# mosquitto 2.x: the broker of table {bridge.table}, bridged to the floor",
             "# (generated by `betbox floor bridge-config`; docs/floor.md).",
             "per_listener_settings false",
             f"listener {listener.port} {listener.address}"]
    if listener.ca:
        lines += [f"cafile {listener.ca}", f"certfile {listener.cert}", f"keyfile {listener.key}",
                  "require_certificate true", "tls_version tlsv1.2"]
    lines += ["allow_anonymous false", f"password_file {password_file}", f"acl_file {acl_file}",
              "use_username_as_clientid true",
              "persistence true", f"persistence_location {persistence}", "autosave_interval 30",
              "# per client, the bridge's queue for the floor included",
              f"max_queued_messages {max_queued}", "max_queued_bytes 52428800",
              "max_inflight_messages 64", "message_size_limit 65536", "set_tcp_nodelay true", ""]
    return "\n".join(lines) + "\n" + render_bridge(bridge)


def render_table_acl(table: str, boxes: int, link_id: str = "main") -> str:
    """The table broker's ACL: the link's ACL for this one table (``render_acl``) and every
    unit may read the bridge's state."""
    return (render_acl({table: boxes}, link_id) + "\n# the bridge to the floor: 1 up, 0 down (retained)\n"
            f"pattern read {ROOT}/bridge/+/state\n")


def render_floor_acl(tables: Mapping[str, int] | list[str], link_id: str = "main") -> str:
    """The floor broker's ACL: the controller, the attendant and the pit as ``render_acl``,
    and one bridge user per table that may write only its own table's topics."""
    out = [render_acl({}, link_id).rstrip("\n"), "", "# one bridge per table (docs/floor.md)"]
    for table in sorted(tables):
        out += [f"user {bridge_user(table)}"]
        out += [f"topic write {t}" for t in topics_up(table)]
        out += [f"topic readwrite {topics.bridge_state_topic(table)}"]
        out += [f"topic read {t}" for t in topics_down(table, link_id)]
        out += [""]
    out += ["# the controller may watch every table's bridge", f"user jackpot/{link_id}",
            f"topic read {ROOT}/bridge/+/state", ""]
    return "\n".join(out)


def write_private(path: Path, text: str) -> None:
    """A file only its owner reads (the bridge password is in it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.touch(mode=0o600)
    tmp.chmod(0o600)
    tmp.write_text(text)
    tmp.replace(path)
