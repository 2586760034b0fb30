"""One request and its answer over MQTT, for the people's commands (``betbox jackpot
confirm``, ``betbox pit``): subscribe to the answers, publish the request at QoS 1, wait for
the answer that echoes the request's ``tx``. Answers are read with the bounded decoder and
nothing escapes paho's thread."""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable

from firmware import wirejson

from .config import LinkConfig


def ask(cfg: LinkConfig, client_id: str, topic: str, payload: str, response_topic: str,
        answer_of: Callable[[Any], dict | None], timeout: float, name: str, who: str) -> dict | None:
    """The answer (``answer_of(decoded message)`` returns it when the message is ours), or
    None after saying on stderr why there is none (``name``: the command; ``who``: what
    should have answered)."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    answer: dict = {}
    got, subscribed = threading.Event(), threading.Event()

    def on_message(client, userdata, msg) -> None:
        try:
            mine = answer_of(wirejson.loads(msg.payload))
        except Exception:  # noqa: BLE001 - not our answer (others' answers are ignored too)
            return
        if mine is not None and not got.is_set():      # the first answer: a later one is not mixed in
            answer.update(mine)
            got.set()

    def on_connect(client, userdata, flags, rc, properties) -> None:
        if rc.is_failure:
            print(f"{name}: the broker refused: {rc}", file=sys.stderr)
        else:
            client.subscribe(response_topic, qos=1)

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id)
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
        client.publish(topic, payload, qos=1)
        if not got.wait(timeout):
            print(f"{name}: no answer from {who} within {timeout:g}s", file=sys.stderr)
            return None
    finally:
        client.disconnect()
        client.loop_stop()
    return answer
