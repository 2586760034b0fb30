"""``betbox pit``: a pit supervisor's commands to a table's dealer, over the broker.

``key-card`` keys in a card the shoe dealt unseen (the dealer owes it after a card gap once
an outcome is established, ``rws-blackjack-v5 §5.4.1``); ``void`` voids the round in play
where the rules let the pit (§5.4.2, §5.5); ``ack`` acknowledges the table's pit call (the
dealer's ``pit_call`` lamp: a supervisor came; only the pit ends a call); ``reconciled`` clears
"behind its confirmed mark" on one unit (a seat, ``--box N``, or the dealer, ``--dealer``)
once a supervisor has reconciled its rounds (docs/technician.md): the dealer journals it and
passes it on to the seat, whose answer comes back through the dealer. The command goes to
``betbox/v1/table/<T>/pit/command`` as the supervisor identity (user ``pit`` in the ACL:
nobody else may write it); the dealer judges it like the console's input and answers on
``.../pit/response`` with its verdict, echoing the command's ``tx``. The password comes
from a file (``--password-file``) or stdin (``--password-file -``), never the command line.

Exit codes: 0 done, 1 refused by the dealer (its reason is printed), 2 not sent or no
answer (bad arguments, broker unreachable or refusing the credentials, no dealer).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from typing import Any

from firmware.commands.limits import bounded_float, password_options, read_password, tls_options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pit", help="a pit supervisor's commands to a table (key a card, void a round, acknowledge "
                                   "a pit call, clear a unit reconciled)",
                       description=__doc__.split("\n\n")[1])
    psub = p.add_subparsers(dest="pit_command", metavar="ACTION")
    psub.required = True
    k = psub.add_parser("key-card", help="key in a card the shoe dealt unseen (the dealer owes it)")
    k.add_argument("--card", required=True, help="the card, e.g. 7C, TD, 10h")
    v = psub.add_parser("void", help="void the round in play where the rules allow (§5.4.2, §5.5)")
    v.add_argument("--round", required=True, type=int, help="the round in play (a check: it must be the table's)")
    v.add_argument("--reason", required=True, help="interruption | foreign_card | card_count | "
                                                  "insufficient_cards | not_shuffled")
    a = psub.add_parser("ack", help="acknowledge the table's pit call (the dealer's pit_call lamp goes off)")
    r = psub.add_parser("reconciled", help="a unit behind its confirmed mark was reconciled: it takes bets again")
    which = r.add_mutually_exclusive_group(required=True)
    which.add_argument("--box", type=int, help="the seat of this box")
    which.add_argument("--dealer", action="store_true", help="the table's dealer unit")
    for q in (k, v, a, r):
        q.add_argument("--broker", required=True, help="mqtt://HOST:PORT or mqtts://HOST:PORT")
        q.add_argument("--table", required=True, help="the table id, e.g. table-1")
        q.add_argument("--by", help="who (name or badge); default: the --username")
        q.add_argument("--username", default="pit", help="MQTT username (the ACL's supervisor, default pit)")
        password_options(q)
        tls_options(q)
        q.add_argument("--timeout", type=bounded_float("--timeout", 0.1, 600.0), default=10.0,
                       help="seconds to wait for the answer (default 10)")
        q.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    from firmware.link import topics
    from firmware.link.ask import ask
    from firmware.link.config import LinkConfigError, config_from_url
    from firmware.runtime.bus import Message, pit_command_topic, pit_response_topic
    from firmware.runtime.dealer import pit_command

    name = f"betbox pit {args.pit_command}"
    tx = uuid.uuid4().hex
    kind = {"key-card": "key_card", "void": "void_round", "ack": "acknowledge",
            "reconciled": "reconciled"}[args.pit_command]
    body: dict[str, Any] = {"tx": tx, "by": args.by or args.username}
    if kind == "key_card":
        body["card"] = args.card
    elif kind == "void_round":
        body.update(round=args.round, reason=args.reason)
    elif kind == "reconciled":
        body["box"] = None if args.dealer else args.box
    tls = {k: getattr(args, k) for k in ("ca", "cert", "key") if getattr(args, k)}
    try:
        topics.check_unit_id(f"{args.table}/dealer")
        body = pit_command(kind, body)
        if not 0 < args.timeout <= 600:
            raise ValueError(f"--timeout {args.timeout}: seconds above 0 and at most 600")
        cfg = config_from_url(args.broker, username=args.username, password=read_password(args),
                              tls=tls or None, allow_insecure=args.allow_insecure or None)
    except (LinkConfigError, ValueError, OSError) as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    # seq: the dealer takes a supervisor's commands only in increasing order (a redelivery
    # is never applied twice); the wall clock in microseconds grows between invocations
    message = Message(pit_command_topic(args.table), kind, f"pit/{args.username}" if args.username != "pit"
                      else "pit", time.time_ns() // 1000, body)
    answer = ask(cfg, f"pit:{tx[:8]}", message.topic, message.to_json(), pit_response_topic(args.table),
                 lambda d: d["body"] if isinstance(d, dict) and isinstance(d.get("body"), dict)
                 and d["body"].get("tx") == tx else None,
                 args.timeout, name, "the dealer (is it running? may this user command the table?)"
                 if kind != "reconciled" or args.dealer else
                 f"seat {args.box} through the dealer (are both running? may this user command the table?)")
    if answer is None:
        return 2
    if answer.get("ok") and kind == "reconciled":
        print(f"table {args.table}: {answer.get('unit')}: {answer.get('verdict')}")
        return 0
    if answer.get("ok"):
        extra = f"; {answer['owed']} card(s) still owed" if answer.get("owed") else ""
        expects = f"; the round expects {answer['expects']}" if answer.get("expects") else ""
        print(f"table {args.table} round {answer.get('round')}: {answer.get('verdict')}{extra}{expects}")
        return 0
    print(f"{name}: refused by the dealer: {answer.get('error')}", file=sys.stderr)
    return 1
