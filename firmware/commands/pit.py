"""``betbox pit``: a pit supervisor's commands to a table's dealer, over the broker.

``key-card`` keys in a card the shoe dealt unseen (the dealer owes it after a card gap once
an outcome is established, ``rws-blackjack-v5 §5.4.1``); ``void`` voids the round in play
where the rules let the pit (§5.4.2, §5.5). The command goes to
``betbox/v1/table/<T>/pit/command`` as the supervisor identity (user ``pit`` in the ACL:
nobody else may write it); the dealer judges it like the console's input and answers on
``.../pit/response`` with its verdict, echoing the command's ``tx``. The password comes
from a file (``--password-file``) or stdin (``--password-file -``), never the command line.

Exit codes: 0 done, 1 refused by the dealer (its reason is printed), 2 not sent or no
answer (bad arguments, broker unreachable or refusing the credentials, no dealer).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pit", help="a pit supervisor's commands to a table (key a card, void a round)",
                       description=__doc__.split("\n\n")[1])
    psub = p.add_subparsers(dest="pit_command", metavar="ACTION")
    psub.required = True
    k = psub.add_parser("key-card", help="key in a card the shoe dealt unseen (the dealer owes it)")
    k.add_argument("--card", required=True, help="the card, e.g. 7C, TD, 10h")
    v = psub.add_parser("void", help="void the round in play where the rules allow (§5.4.2, §5.5)")
    v.add_argument("--round", required=True, type=int, help="the round in play (a check: it must be the table's)")
    v.add_argument("--reason", required=True, help="interruption | foreign_card | card_count | "
                                                  "insufficient_cards | not_shuffled")
    for q in (k, v):
        q.add_argument("--broker", required=True, help="mqtt://HOST:PORT or mqtts://HOST:PORT")
        q.add_argument("--table", required=True, help="the table id, e.g. table-1")
        q.add_argument("--by", help="who (name or badge); default: the --username")
        q.add_argument("--username", default="pit", help="MQTT username (the ACL's supervisor, default pit)")
        q.add_argument("--password-file", metavar="PATH",
                       help="read the password from this file's first line ('-': from stdin)")
        q.add_argument("--ca")
        q.add_argument("--cert")
        q.add_argument("--key")
        q.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the answer (default 10)")
        q.add_argument("--allow-insecure", action="store_true",
                       help="allow the password over plain mqtt:// (a lab or loopback broker; default: mqtts:// only)")
        q.set_defaults(func=command)


def _password(path: str | None) -> str | None:
    if path is None:
        return None
    text = sys.stdin.readline() if path == "-" else open(path, encoding="utf-8").readline()
    return text.rstrip("\r\n")


def command(args: argparse.Namespace) -> int:
    from firmware.link import topics
    from firmware.link.config import LinkConfigError, config_from_url
    from firmware.runtime.bus import Message, pit_command_topic, pit_response_topic
    from firmware.runtime.dealer import pit_command

    name = f"betbox pit {args.pit_command}"
    tx = uuid.uuid4().hex
    kind = "key_card" if args.pit_command == "key-card" else "void_round"
    body: dict[str, Any] = {"tx": tx, "by": args.by or args.username}
    body.update({"card": args.card} if kind == "key_card" else {"round": args.round, "reason": args.reason})
    tls = {k: getattr(args, k) for k in ("ca", "cert", "key") if getattr(args, k)}
    try:
        topics.check_unit_id(f"{args.table}/dealer")
        body = pit_command(kind, body)
        if not 0 < args.timeout <= 600:
            raise ValueError(f"--timeout {args.timeout}: seconds above 0 and at most 600")
        cfg = config_from_url(args.broker, username=args.username, password=_password(args.password_file),
                              tls=tls or None, allow_insecure=args.allow_insecure or None)
    except (LinkConfigError, ValueError, OSError) as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    # seq: the dealer takes a supervisor's commands only in increasing order (a redelivery
    # is never applied twice); the wall clock in microseconds grows between invocations
    message = Message(pit_command_topic(args.table), kind, f"pit/{args.username}" if args.username != "pit"
                      else "pit", time.time_ns() // 1000, body)
    answer = _ask(cfg, message, pit_response_topic(args.table), tx, args.timeout, name)
    if answer is None:
        return 2
    if answer.get("ok"):
        extra = f"; {answer['owed']} card(s) still owed" if answer.get("owed") else ""
        expects = f"; the round expects {answer['expects']}" if answer.get("expects") else ""
        print(f"table {args.table} round {answer.get('round')}: {answer.get('verdict')}{extra}{expects}")
        return 0
    print(f"{name}: refused by the dealer: {answer.get('error')}", file=sys.stderr)
    return 1


def _ask(cfg: Any, message: Any, response_topic: str, tx: str, timeout: float, name: str) -> dict | None:
    """Publish the command (QoS 1) once subscribed to the answers; the answer echoing ``tx``."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    answer: dict = {}
    got, subscribed = threading.Event(), threading.Event()

    def on_message(client, userdata, msg) -> None:
        try:
            data = json.loads(msg.payload)
            body = data.get("body") if isinstance(data, dict) else None
        except ValueError:
            return
        if isinstance(body, dict) and body.get("tx") == tx:
            answer.update(body)
            got.set()

    def on_connect(client, userdata, flags, rc, properties) -> None:
        if rc.is_failure:
            print(f"{name}: the broker refused: {rc}", file=sys.stderr)
        else:
            client.subscribe(response_topic, qos=1)

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"pit:{tx[:8]}")
    if cfg.username:
        client.username_pw_set(cfg.username, cfg.password)
    if cfg.tls:
        client.tls_set(ca_certs=str(cfg.tls.ca), certfile=str(cfg.tls.cert) if cfg.tls.cert else None,
                       keyfile=str(cfg.tls.key) if cfg.tls.key else None)
    client.on_message = on_message
    client.on_subscribe = lambda *a: subscribed.set()
    client.on_connect = on_connect
    try:
        client.connect(cfg.host, cfg.port, keepalive=cfg.keepalive)
    except OSError as exc:
        print(f"{name}: cannot reach {cfg.url}: {exc}", file=sys.stderr)
        return None
    client.loop_start()
    try:
        if not subscribed.wait(timeout):
            print(f"{name}: no subscription on {cfg.url} (credentials?)", file=sys.stderr)
            return None
        client.publish(message.topic, message.to_json(), qos=1)
        if not got.wait(timeout):
            print(f"{name}: no answer from the dealer within {timeout:g}s (is it running? is this user "
                  "allowed to command the table?)", file=sys.stderr)
            return None
    finally:
        client.disconnect()
        client.loop_stop()
    return answer
