"""Shared by the link tests: bounded waits, simulated seats' report streams, a controller."""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterator

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from firmware.jackpot.controller import JackpotController
from firmware.jackpot.pools import PoolSpec
from firmware.link.reporter import amount_text
from firmware.runtime.bus import Message

POOL = PoolSpec("main", Fraction(1000), Fraction(15, 100), Fraction(250000), ("*",))


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, step: float = 0.02) -> Any:
    """Poll until ``predicate()`` is truthy; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(step)


@dataclass
class Books:
    """A progressive's money: as the controller books it (:meth:`of_controller`, from
    ``report()["pools"][...]["meters"]``), as the units' outboxes or journals say it
    (tests/tables.py), or as a test expects it (:func:`seat_script`); ``events``: unit -> the
    reports it sent (not part of the money: not compared)."""
    wagers: int = 0
    wagers_in: Fraction = Fraction(0)
    fixed_hits: int = 0
    fixed_won: Fraction = Fraction(0)
    envy: int = 0
    envy_won: Fraction = Fraction(0)
    meter_hits: int = 0
    meter_won: Fraction = Fraction(0)
    events: dict[str, int] = field(default_factory=dict, compare=False)

    @classmethod
    def of_controller(cls, meters: dict[str, Any]) -> "Books":
        return cls(meters["wagers"], Fraction(meters["wagers_in"]), meters["fixed_hits"],
                   Fraction(meters["fixed_won"]), meters["envy"], Fraction(meters["envy_won"]), meters["hits"],
                   Fraction(meters["won"]))

    def add(self, other: "Books") -> None:
        for f in fields(self):
            if f.compare:
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        self.events.update(other.events)


Expected = Books        # the name the link and jackpot tests use for what they expect


def seat_script(unit: str, rounds: int, seed: int, meter_hits: bool = False) -> tuple[list, Books]:
    """A deterministic stream of reports a seat could send: (kind, body, round, key)."""
    rng = random.Random(seed)
    out: list[tuple[str, dict, int, str]] = []
    exp = Books()
    for rnd in range(1, rounds + 1):
        if rng.random() < 0.7:
            wager = Fraction(rng.choice([1, 5, 5, 5, 10])) + Fraction(rng.choice([0, 25, 50]), 100)
            out.append(("progressive_wager", {"amount": amount_text(wager)}, rnd, f"{rnd}/w"))
            exp.wagers += 1
            exp.wagers_in += wager
            x = rng.random()
            if x < 0.1:
                award = Fraction(rng.choice([15, 20, 30, 500]))
                out.append(("progressive_hit", {"category": "two_pairs", "award": amount_text(award),
                                                "meter_share": None}, rnd, f"{rnd}/h"))
                exp.fixed_hits += 1
                exp.fixed_won += award
            elif meter_hits and x < 0.12:
                out.append(("progressive_hit", {"category": "suited_four_of_a_kind", "award": None,
                                                "meter_share": "1", "amount": "1000"}, rnd, f"{rnd}/h"))
                exp.meter_hits += 1
            if rng.random() < 0.03:
                out.append(("envy_bonus", {"from_box": 7, "award": "1000"}, rnd, f"{rnd}/e"))
                exp.envy += 1
                exp.envy_won += 1000
        out.append(("round_result", {"void": False, "net": amount_text(Fraction(rng.randint(-50, 50)))},
                    rnd, f"{rnd}/r"))
    exp.events[unit] = len(out)
    return out, exp


def dealer_records(scripts: dict[int, list]) -> list[tuple[str, dict, int, str]]:
    """The dealer's record of the rounds the seats' scripts (box -> script) report: per
    round a ``round_progressive`` (every box's wager and hit) and a ``round_settlement``
    (every box's net, envy bonuses, side bets), as the dealer's engine would send them."""
    rounds: dict[int, dict[int, dict[str, Any]]] = {}
    for box, script in scripts.items():
        for kind, body, rnd, _ in script:
            b = rounds.setdefault(rnd, {}).setdefault(box, {"envy": [], "side_bets": []})
            if kind == "progressive_wager":
                b["wager"] = body["amount"]
            elif kind == "progressive_hit":
                b["hit"] = dict(body)
            elif kind == "envy_bonus":
                b["envy"].append(dict(body))
            elif kind == "side_bet":
                b["side_bets"].append(dict(body))
            elif kind == "round_result":
                b["net"], b["void"] = body["net"], body["void"]
    out = []
    for rnd in sorted(rounds):
        boxes = rounds[rnd]
        wagered = [{"box": n, "wager": b["wager"], "hit": b.get("hit")} for n, b in sorted(boxes.items())
                   if "wager" in b]
        if wagered:
            out.append(("round_progressive", {"meter": "1000", "boxes": wagered}, rnd, f"{rnd}/round_progressive"))
        settled = [{"box": n, "net": b["net"], "envy": b["envy"], "side_bets": b["side_bets"]}
                   for n, b in sorted(boxes.items()) if "net" in b]
        if settled:
            void = any(b.get("void") for b in boxes.values())
            out.append(("round_settlement", {"void": void, "boxes": settled}, rnd, f"{rnd}/round_settlement"))
    return out


def dealer_payloads(table: str, records: list, first_seq: int = 1) -> list[tuple[str, bytes]]:
    """``dealer_records`` as (topic, payload) the dealer's outbox would publish."""
    out = []
    for i, (kind, body, rnd, _key) in enumerate(records):
        seq = first_seq + i
        out.append((f"betbox/v1/unit/{table}/dealer/report", json.dumps(
            {"schema": 1, "id": f"{table}-dealer-{seq:06d}", "unit": f"{table}/dealer", "table": table,
             "seq": seq, "kind": kind, "round": rnd, "body": body}).encode()))
    return out


def send_dealer(bus: Any, scripts: dict[int, list], expected: Books | None = None) -> int:
    """The dealer's record (``dealer_records``) of the seats' scripts through the dealer's
    own outbox (``bus``: a ``<table>/dealer`` link); counted in ``expected``'s events."""
    table = bus.unit_id.split("/")[0]
    records = dealer_records(scripts)
    for kind, body, rnd, key in records:
        bus.report(kind, body, key=key, table=table, round=rnd)
    if expected is not None:
        expected.events[bus.unit_id] = bus.outbox.last_seq
    return len(records)


def check_accounting(report: dict[str, Any], exp: Books) -> None:
    m = report["pools"]["main"]["meters"]
    assert m["wagers"] == exp.wagers
    assert Fraction(m["wagers_in"]) == exp.wagers_in
    assert Fraction(m["contributions"]) == exp.wagers_in * POOL.rate
    assert m["fixed_hits"] == exp.fixed_hits
    assert Fraction(m["fixed_won"]) == exp.fixed_won
    assert m["envy"] == exp.envy
    assert Fraction(m["envy_won"]) == exp.envy_won
    assert m["hits"] == exp.meter_hits
    assert report["pools"]["main"]["balanced"]
    for unit, n in exp.events.items():
        u = report["units"][unit]
        assert (u["events"], u["highest_seq"], u["missing"]) == (n, n, 0), (unit, u)


def controller(path: Path) -> JackpotController:
    return JackpotController(path, [POOL])


class Sniffer:
    """A plain paho client that records everything under betbox/v1/# (for schema checks)."""

    def __init__(self, url: str, pattern: str = "betbox/v1/#", **auth: str) -> None:
        host, port = url.removeprefix("mqtt://").split(":")
        self.messages: list[tuple[str, bytes, bool]] = []
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2)
        if auth:
            self.client.username_pw_set(auth["username"], auth["password"])
        self.client.on_message = lambda c, u, m: self.messages.append((m.topic, m.payload, m.retain))
        self._subscribed = False
        self.client.on_subscribe = lambda *a: setattr(self, "_subscribed", True)
        self.client.on_connect = lambda c, u, f, rc, p: c.subscribe(pattern, qos=1)
        self.client.connect(host, int(port))
        self.client.loop_start()
        wait_until(lambda: self._subscribed, 10, "the sniffer's subscription")

    def json(self, suffix: str) -> list[dict]:
        return [json.loads(p) for t, p, _ in self.messages if t.endswith(suffix)]

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def unit_outbox(state_dir: Path) -> tuple[Path, str]:
    """Where a ``betbox run`` seat or dealer keeps its outbox: in its journal's file (issue
    #17.5), the outbox's meta table there named ``outbox_meta``."""
    return Path(state_dir) / "journal.db", "outbox_meta"


def make_pki(d: Path, clients: dict[str, str]) -> dict[str, Path]:
    """A throwaway CA (openssl command), the broker's certificate for 127.0.0.1 and a client
    certificate per ``clients`` name -> common name: each file by its name (``ca.pem``,
    ``broker.key``, ``<name>.pem`` ...)."""
    d.mkdir(parents=True, exist_ok=True)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=betbox test CA")
    for name, cn in {"broker": "127.0.0.1", **clients}.items():
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={cn}")
        (d / f"{name}.ext").write_text("subjectAltName=IP:127.0.0.1\n" if name == "broker"
                                      else "extendedKeyUsage=clientAuth\n")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext")
    return {f.name: f for f in d.iterdir()}


#: the table stream the link tests' dealer publishes on and their seat takes
STREAM = "betbox/v1/t/stream"


def stream_message(n: int) -> Message:
    """The dealer's ``n``-th stream message (``seq`` n; 0: the one that waits for the seat)."""
    return Message(STREAM, "event", "t/dealer", n, {"round": 1, "stream_seq": n})


def until_subscribed(dealer: Any, seat: Any, got: list) -> None:
    """Until the seat's subscription is in: the dealer's message 0 went through (``got`` is
    what the seat's sink collects)."""
    for _ in range(100):
        dealer.publish(stream_message(0))
        if seat.wait_subscribed(0.1) and dealer.wait_published(1) and got:
            return
    wait_until(lambda: got, 10, "the seat subscribed")


@contextmanager
def spy_writes(client: mqtt.Client, kind: int, note: Callable[[bytes], None]) -> Iterator[None]:
    """While inside: ``note(buf)`` once each write of a ``kind`` packet (mqtt.PUBLISH, ...) by
    ``client`` is done, on the thread that made it (paho's ``Client._sock_send``, restored after)."""
    send = mqtt.Client._sock_send

    def noted(c: mqtt.Client, buf: bytes) -> int:
        n = send(c, buf)                                    # noted once written (a TLS write may wait)
        if c is client and buf[:1] and buf[0] & 0xF0 == kind:
            note(buf)
        return n
    mqtt.Client._sock_send = noted                          # type: ignore[method-assign]
    try:
        yield
    finally:
        mqtt.Client._sock_send = send                       # type: ignore[method-assign]


@contextmanager
def writers_of(client: mqtt.Client, kind: int) -> Iterator[list[str]]:
    """While inside: the name of the thread that wrote each ``kind`` packet of ``client``'s."""
    writers: list[str] = []
    with spy_writes(client, kind, lambda buf: writers.append(threading.current_thread().name)):
        yield writers
