"""Issue #12.2 on real parts: a `betbox run` dealer and seat on a real mosquitto with the
documented ACL. A card gap once an outcome is established wedges the round (the dealer owes
the missed card and holds the shoe's next one); it is cleared both ways: by the pit's
`betbox pit key-card` (user `pit`, password from stdin, answered with the dealer's verdict)
and by the console's card keypad. Nobody else may command the table: a seat's credentials
get no answer (the broker drops the command), and the dealer stays as it was."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from firmware.engine.profile import load_profile
from firmware.runtime.spots import seat_spots
from tests.link.broker import Broker
from tests.link.helpers import Sniffer, wait_until
from tests.link.schema import validate_all
from tests.link.units import CHIPS, ROOT, UnitProcess, write_toml

DOCS = Path(__file__).resolve().parents[2] / "docs" / "mqtt"
TABLE = "table-1"
USERS = {"table-1/dealer": "pwd", "table-1/seat-1": "pw1", "pit": "pwp", "jackpot/main": "pwj", "observer": "pwo"}
#: A test-only reader of everything: the broker binds client ids to usernames, so a sniffer
#: under the dealer's own user would take the dealer's place.
OBSERVER = "\nuser observer\ntopic read betbox/v1/#\n"


def configs(tmp: Path, url: str) -> tuple[Path, Path]:
    profile = load_profile("rws-blackjack")
    spots = list(seat_spots(profile))
    chips = tmp / "chips.csv"
    chips.write_text("uid,denomination,status\n" + "".join(f"{u},{d},valid\n" for u, d in CHIPS.items()))
    dealer = write_toml(tmp / "dealer.toml", {
        "unit": {"role": "dealer", "id": "dealer", "table": TABLE, "state_dir": str(tmp / "dealer")},
        "link": {"broker": url, "username": "table-1/dealer", "password": "pwd", "allow_insecure": True},
        "game": {"profile": profile.name},
        "hardware.card_shoe": {"backend": "mock"},
        "hardware.console": {"backend": "mock"}})
    seat = write_toml(tmp / "seat-1.toml", {
        "unit": {"role": "seat", "id": "seat-1", "table": TABLE, "state_dir": str(tmp / "seat-1")},
        "link": {"broker": url, "username": "table-1/seat-1", "password": "pw1", "allow_insecure": True},
        "seat": {"box": 1, "spots": spots, "chips": str(chips)},
        "hardware.chip_reader": {"backend": "mock", "spots": spots},
        "hardware.lamps": {"backend": "mock", "lamps": ["progressive", "bets_locked"]}})
    return dealer, seat


def pit(url: str, *args: str, user: str = "pit", password: str = "pwp") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "firmware", "pit", *args, "--broker", url, "--table", TABLE,
                           "--username", user, "--password-file", "-", "--timeout", "5", "--allow-insecure"],
                          input=password + "\n", cwd=ROOT, capture_output=True, text=True, timeout=60)


class Table:
    def __init__(self, sniffer: Sniffer) -> None:
        self.sniffer = sniffer

    def on(self, suffix: str) -> list[dict]:
        return [json.loads(p) for t, p, _ in list(self.sniffer.messages)
                if t == f"betbox/v1/table/{TABLE}{suffix}" and p]

    def stream(self, kind: str) -> list[dict]:
        return [m["body"] for m in self.on("/stream") if m["kind"] == kind]

    def alarms(self, code: str) -> list[dict]:
        return [m["body"] for m in self.on("/alarm") if m["body"].get("alarm") == code]

    def dealer_cards(self, round_no: int) -> list[str]:
        return [m["event"]["card"] for m in self.stream("event")
                if m["round"] == round_no and m["event"]["type"] == "card"]


def wedge(t: Table, dealer: UnitProcess, seat: UnitProcess, round_no: int) -> None:
    """Main 10 and player pair 5 on box 1; 9H 6C 7S: the pair has lost (an outcome, §5.4.1),
    box 1 stands on 16, the dealer's card goes out unseen and 5H comes after it."""
    dealer.send("press open_bets")
    wait_until(lambda: any(m["round"] == round_no for m in t.stream("round_open")), 30, f"round {round_no} open")
    seat.send("place main 0A01 0A02")
    seat.send("place player_pair 0A03")

    def offered() -> bool:
        seat.send("cycle 1")
        offers = [m["body"] for m in t.on("/seat/1/up") if m["kind"] == "offer" and m["body"]["round"] == round_no]
        return bool(offers) and set(offers[-1]["bets"] or {}) == {"main", "player_pair"}
    wait_until(offered, 30, "the seat's offer", step=0.2)
    dealer.send("press no_more_bets")
    wait_until(lambda: any(m["round"] == round_no and m["event"]["type"] == "bets_closed"
                           for m in t.stream("event")), 30, "bets closed")
    dealer.send("deal 9H 6C 7S")
    wait_until(lambda: len(t.dealer_cards(round_no)) == 3, 30, "the initial deal")
    dealer.send("press stand")
    dealer.send("skip 1")
    dealer.send("deal 5H")
    wait_until(lambda: [a for a in t.alarms("interruption_continue") if a["round"] == round_no], 30,
               "the dealer owing the missed card")


def test_a_wedged_dealer_is_cleared_by_the_pit_and_by_the_console(tmp_path):
    b = Broker(tmp_path / "mosquitto", acl=(DOCS / "acl").read_text() + OBSERVER, users=USERS).start()
    dealer_toml, seat_toml = configs(tmp_path, b.url)
    sniffer = Sniffer(b.url, "betbox/v1/#", username="observer", password="pwo")
    procs: list[UnitProcess] = []
    try:
        dealer = UnitProcess("dealer", dealer_toml, tmp_path, drive=tmp_path / "dealer.fifo")
        seat = UnitProcess("seat-1", seat_toml, tmp_path, drive=tmp_path / "seat.fifo")
        procs = [dealer, seat]
        t = Table(sniffer)
        wait_until(lambda: any(m["kind"] == "catchup" for m in t.on("/seat/1/down"))
                   or any(p.proc.poll() is not None for p in procs), 60, "the seat caught up by the dealer")
        for p in procs:
            assert p.proc.poll() is None, p.output()

        # round 1: wedged, then cleared by the pit
        wedge(t, dealer, seat, 1)
        assert t.dealer_cards(1) == ["9H", "6C", "7S"]              # 5H is held, not dealt
        dealer.send("press open_bets")                                # the table is stuck
        wait_until(lambda: any("is not over" in m["body"]["reason"] for m in t.on("/console")), 30,
                   "the console's refusal")
        # a seat's credentials cannot command the table: the broker drops it, nobody answers
        forged = pit(b.url, "key-card", "--card", "2D", user="table-1/seat-1", password="pw1")
        assert forged.returncode == 2 and "no answer from the dealer" in forged.stderr, forged.stderr
        assert t.dealer_cards(1) == ["9H", "6C", "7S"]
        # the pit may not void: an outcome is established (§5.4.1); the engine says so
        void = pit(b.url, "void", "--round", "1", "--reason", "interruption")
        assert void.returncode == 1 and "outcome has been established" in void.stderr, void.stderr
        keyed = pit(b.url, "key-card", "--card", "2D")
        assert keyed.returncode == 0, keyed.stderr
        assert f"table {TABLE} round 1: done" in keyed.stdout
        wait_until(lambda: t.dealer_cards(1) == ["9H", "6C", "7S", "2D", "5H"], 30, "the keyed and the held card")
        assert [a["by"] for a in t.alarms("card_keyed")] == ["pit:pit"]
        dealer.send("deal TC")                                        # 6 2 5 10: the dealer busts
        wait_until(lambda: any(m["round"] == 1 for m in t.stream("round_result")), 30, "round 1's result")
        assert [m["settlement"]["boxes"]["1"]["net"] for m in t.stream("round_result")] == [5]   # +10 -5
        # the interruption called the pit (the dealer's pit_call lamp): only the pit ends the call
        forged = pit(b.url, "ack", user="table-1/seat-1", password="pw1")
        assert forged.returncode == 2 and not t.alarms("pit_acknowledged"), forged.stderr
        acked = pit(b.url, "ack", "--by", "Ann")
        assert acked.returncode == 0 and "acknowledged: interruption_continue x1" in acked.stdout, acked
        wait_until(lambda: [a["by"] for a in t.alarms("pit_acknowledged")] == ["Ann"], 30, "the acknowledgement")

        # round 2: wedged the same way, cleared on the console's keypad
        wedge(t, dealer, seat, 2)
        dealer.send("keycard 2D")
        wait_until(lambda: t.dealer_cards(2) == ["9H", "6C", "7S", "2D", "5H"], 30, "the card keyed at the console")
        assert [a["by"] for a in t.alarms("card_keyed")] == ["pit:pit", "console"]
        dealer.send("deal TC")
        wait_until(lambda: any(m["round"] == 2 for m in t.stream("round_result")), 30, "round 2's result")
        # the pit's answers went only where the ACL lets them (the pit, and the dealer itself)
        answers = [m["body"] for m in t.on("/pit/response")]
        assert [a["ok"] for a in answers] == [False, True, True]          # void refused, key-card, ack
        codes = {p.name: p.terminate() for p in procs}
        assert codes == {"dealer": 0, "seat-1": 0}, [p.output() for p in procs]
        seen = validate_all(sniffer.messages)            # the traffic is the documented interface
        assert seen["pitResponse"] == 3, seen
    finally:
        for p in procs:
            p.kill()
        sniffer.close()
        b.kill()
