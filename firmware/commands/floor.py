"""``betbox floor``: the configuration of a floor of tables (docs/floor.md).

``bridge-config`` writes a table broker's mosquitto.conf (its listener for the table's units,
then the bridge to the floor broker) and its ACL; ``acl`` writes the floor broker's ACL (the
controller, the attendant, the pit and one bridge user per table).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from firmware.commands import limits
from firmware.link import topics
from firmware.link.bridge import (
    Bridge,
    Listener,
    render_floor_acl,
    render_table_acl,
    render_table_broker,
    write_private,
)


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host, int(port)


def _table(text: str) -> str:
    try:
        return topics.check_unit_id(f"{text}/bridge").split("/")[0]
    except ValueError:
        raise argparse.ArgumentTypeError(f"table id {text!r} must be letters, digits, _ . -") from None


def _table_boxes(text: str) -> tuple[str, int]:
    table, _, boxes = text.partition(":")
    if not boxes.isdigit() or not 1 <= int(boxes) <= 99:
        raise argparse.ArgumentTypeError(f"{text!r} is not TABLE:BOXES (boxes 1..99)")
    return _table(table), int(boxes)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("floor", help="configure table brokers bridged to the floor broker")
    fsub = p.add_subparsers(dest="floor_command", metavar="ACTION")
    fsub.required = True

    b = fsub.add_parser("bridge-config", help="write a table broker's mosquitto.conf with its bridge to the floor")
    b.add_argument("--table", required=True, type=_table, help="the table id (table-1)")
    b.add_argument("--boxes", type=limits.bounded_int("--boxes", 1, 99), default=7,
                   help="the table's boxes, for its ACL (default 7)")
    b.add_argument("--floor", required=True, type=_host_port, help="the floor broker, HOST:PORT")
    b.add_argument("--password-file", required=True,
                   help="the bridge user's password at the floor broker ('-': standard input)")
    b.add_argument("--bridge-ca", help="TLS to the floor: the CA that signed the floor broker's certificate")
    b.add_argument("--bridge-cert", help="TLS to the floor: the bridge's client certificate")
    b.add_argument("--bridge-key", help="TLS to the floor: the bridge's key")
    b.add_argument("--allow-insecure", action="store_true",
                   help="a bridge without TLS (a lab floor; the bridge password goes in the clear)")
    b.add_argument("--listen", type=_host_port, default=("0.0.0.0", 8883),
                   help="where the table's units connect (default 0.0.0.0:8883)")
    b.add_argument("--ca", help="the units' listener: CA (default: as docs/mqtt/mosquitto.conf)")
    b.add_argument("--cert", help="the units' listener: the broker's certificate")
    b.add_argument("--key", help="the units' listener: the broker's key")
    b.add_argument("--no-listener-tls", action="store_true", help="the units' listener in the clear (a lab)")
    b.add_argument("--persistence", default="/var/lib/mosquitto/", help="persistence_location")
    b.add_argument("--passwd", default="/etc/mosquitto/betbox.passwd", help="the units' password_file")
    b.add_argument("--acl", default="/etc/mosquitto/betbox.acl", help="acl_file (written with --acl-out)")
    b.add_argument("--acl-out", help="also write the table broker's ACL here")
    b.add_argument("--link", default="main", help="the jackpot link id (default main)")
    b.add_argument("--out", required=True, help="the mosquitto.conf to write ('-': standard output)")
    b.set_defaults(func=run_bridge_config)

    a = fsub.add_parser("acl", help="write the floor broker's ACL (one bridge user per table)")
    a.add_argument("--table", action="append", required=True, type=_table_boxes, metavar="TABLE:BOXES",
                   help="a table on the floor (repeat)")
    a.add_argument("--link", default="main", help="the jackpot link id (default main)")
    a.add_argument("--out", required=True, help="the ACL file to write ('-': standard output)")
    a.set_defaults(func=run_acl)


def _write(out: str, text: str) -> None:
    if out == "-":
        sys.stdout.write(text)
    else:
        write_private(Path(out), text)


def run_bridge_config(args: argparse.Namespace) -> int:
    tls = (args.bridge_ca, args.bridge_cert, args.bridge_key)
    if args.bridge_ca is None and not args.allow_insecure:
        print("betbox floor bridge-config: a bridge without --bridge-ca sends reports and the bridge password "
              "in the clear; give --bridge-ca (and --bridge-cert/--bridge-key) or --allow-insecure",
              file=sys.stderr)
        return limits.BAD_INPUT
    if (args.bridge_cert is None) != (args.bridge_key is None) or (args.bridge_cert and not args.bridge_ca):
        print("betbox floor bridge-config: --bridge-cert and --bridge-key go together, with --bridge-ca",
              file=sys.stderr)
        return limits.BAD_INPUT
    password = limits.read_password(args)
    if not password:
        print("betbox floor bridge-config: an empty bridge password", file=sys.stderr)
        return limits.BAD_INPUT
    bridge = Bridge(args.table, f"{args.floor[0]}:{args.floor[1]}", password, *tls, link_id=args.link)
    default = Listener()
    listener = Listener(args.listen[1], args.listen[0],
                        None if args.no_listener_tls else args.ca or default.ca,
                        None if args.no_listener_tls else args.cert or default.cert,
                        None if args.no_listener_tls else args.key or default.key)
    _write(args.out, render_table_broker(bridge, listener=listener, persistence=args.persistence,
                                         password_file=args.passwd, acl_file=args.acl))
    if args.acl_out:
        _write(args.acl_out, render_table_acl(args.table, args.boxes, topics.check_link_id(args.link)))
    return limits.OK


def run_acl(args: argparse.Namespace) -> int:
    tables = dict(args.table)
    if len(tables) != len(args.table):
        print("betbox floor acl: a table is given twice", file=sys.stderr)
        return limits.BAD_INPUT
    _write(args.out, render_floor_acl(tables, topics.check_link_id(args.link)))
    return limits.OK
