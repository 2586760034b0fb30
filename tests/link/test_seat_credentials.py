"""One seat's credentials in a hostile hand, on a real mosquitto with the documented ACL: a
table of two seats plays while a client logged in as ``<table>/seat-3`` (a box nobody sits
at) publishes what the ACL lets that seat publish, on its own up topic, well formed. The
dealer refuses what a seat cannot mean, naming it, and the table plays on."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from firmware.engine.profile import load_profile
from firmware.link import connect_bus
from firmware.link.acl import render_acl
from firmware.link.config import config_from_url
from firmware.runtime.bus import Message, up_topic
from firmware.runtime.phases import DealerPhase
from firmware.runtime.spots import insurance_hand, seat_spots
from firmware.sim import chipset
from firmware.sim.driver import TableDriver
from firmware.sim.table import InProcessTable, TableSpec

from .broker import Broker

TABLE = "cred-1"
PLAYING = 2                     # seats at the table; the ACL has a third, the hostile one's
HOSTILE = f"{TABLE}/seat-3"
UNITS = [f"{TABLE}/dealer"] + [f"{TABLE}/seat-{box}" for box in range(1, PLAYING + 2)]


class Hostile:
    """A raw client with seat 3's username and password: it publishes as seat 3 may."""

    def __init__(self, port: int) -> None:
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2)
        self.client.username_pw_set(HOSTILE, f"pw-{HOSTILE}")
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        self.seq = 0

    def send(self, kind: str, body: dict, times: int = 1) -> None:
        """``times`` messages on seat 3's up topic, each with the seat's next seq; back once
        the broker has taken the last (so the dealer's next marker comes after them all)."""
        info = None
        for _ in range(times):
            self.seq += 1
            message = Message(up_topic(TABLE, 3), kind, HOSTILE, self.seq, {"box": 3, **body})
            info = self.client.publish(message.topic, message.to_json(), qos=1)
        assert info is not None
        info.wait_for_publish(30)
        assert info.is_published()

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def hostile_table(tmp_path) -> Iterator[tuple[TableDriver, Hostile]]:
    broker = Broker(tmp_path / "mosquitto", acl=render_acl({TABLE: PLAYING + 1}),
                    users={u: f"pw-{u}" for u in UNITS}).start()
    buses = []

    def bus_factory(unit_id: str, role: str):
        link = config_from_url(broker.url, username=unit_id, password=f"pw-{unit_id}", allow_insecure=True)
        bus = connect_bus(None, unit_id, link=link, role=role, wait=10.0)
        assert bus.connected, unit_id
        buses.append(bus)
        return bus

    profile = load_profile("rws-blackjack")
    spec = TableSpec(TABLE, profile, seed=41, state_dir=tmp_path / "table", boxes=PLAYING)
    driver = TableDriver(InProcessTable(spec, chipset.registry(PLAYING, len(seat_spots(profile))),
                                        bus_factory=bus_factory), spec.seed)
    hostile = None
    try:
        driver.boot()
        hostile = Hostile(broker.port)
        yield driver, hostile
    finally:
        if hostile is not None:
            hostile.close()
        driver.table.close()
        for bus in buses:
            bus.close()
        broker.stop()


def deal_in(driver: TableDriver) -> None:
    """Open a round, bet, close it: the round is in play (the seats' additions and requests
    are taken now)."""
    t, dealer = driver.table, driver.table.dealer
    driver.clear_spots()
    t.console.press("open_bets")
    t.settle()
    driver._place_bets()
    t.console.press("no_more_bets")
    t.settle()
    assert dealer.phase == DealerPhase.PLAY, dealer.phase


def problems(driver: TableDriver) -> list[str]:
    return [r["problem"] for r in driver.table.dealer.rejections]


def test_insurance_hand_reads_only_a_spots_own_number():
    assert [insurance_hand(s) for s in ("insurance", "insurance_2", "insurance_12", "main")] == [1, 2, 12, None]
    # digits int() does not read (a superscript two), or more of them than it converts
    for spot in ("insurance_²", "insurance_" + "9" * 5000, "insurance_٣", "insurance_-2", "insurance_ 2"):
        assert insurance_hand(spot) is None, spot


def test_an_addition_on_a_spot_the_seat_does_not_have_is_refused_and_insurance_still_offered(hostile_table):
    driver, hostile = hostile_table
    t, dealer = driver.table, driver.table.dealer
    driver.play_round()
    deal_in(driver)
    # well formed: a spot name and an amount; "²" passes str.isdigit(), which int() does not read
    hostile.send("addition", {"round": dealer.round_no, "spot": "insurance_²", "amount": "5"})
    t.settle()
    t.console.press("insurance")        # the dealer's step raised ValueError here (insurance_hand)
    t.settle()
    assert dealer.rejected == 1
    assert "addition: spot 'insurance_²' is not one of seat 3's spots" in problems(driver)[-1]
    assert 3 not in dealer.additions
    assert dealer.refusals[-1]["reason"] == "insurance: no seat has asked for it"
    finished = len(driver.rounds)
    driver.play_round()                 # the round ends, and the table plays on
    driver.play_round()
    assert len(driver.rounds) == finished + 2


def test_a_seats_requests_are_held_once_each_and_the_offer_button_answers_them_once(hostile_table, caplog):
    """A request (even money, surrender) waits for the dealer's button; held once per action
    and hand. Kept as they came, a seat's flood made the button's one step refuse every
    copy (20,000 identical requests: 8 s) and filter the list per request (20,000 for
    distinct hands: 19 s), the table deaf meanwhile."""
    driver, hostile = hostile_table
    t, dealer = driver.table, driver.table.dealer
    driver.play_round()
    deal_in(driver)
    refused = len(dealer.refusals)
    rnd = dealer.round_no
    for hand in range(1, 151):
        hostile.send("request", {"round": rnd, "action": "surrender", "hand": hand})
    hostile.send("request", {"round": rnd, "action": "surrender", "hand": None}, times=150)
    t.settle()
    assert dealer.requests[3] == [("surrender", 1), ("surrender", None)]
    assert dealer.rejected == 298
    assert "rejected request msg from cred-1/seat-3: request: box 3 has no hand 2 (a box has 1 initial hand(s) " \
        "here)" in caplog.text
    assert problems(driver)[-1] == ("request: box 3 has asked for surrender already (hand None); it waits for "
                                    "the dealer's button")
    t.console.press("surrender")        # box 3 is not in the round: each held request refused once
    t.settle()
    assert len(dealer.refusals) - refused == 2
    assert dealer.requests[3] == []
    finished = len(driver.rounds)
    driver.play_round()
    assert len(driver.rounds) == finished + 1


def test_a_request_whose_action_is_not_text_is_refused_naming_it(hostile_table):
    """``action`` an object or a list: the dealer's check looked it up in a set of names and
    raised TypeError (unhashable) out of its step, which ``betbox run`` does not survive."""
    driver, hostile = hostile_table
    t, dealer = driver.table, driver.table.dealer
    driver.play_round()
    deal_in(driver)
    for action in ({"surrender": 1}, ["surrender"], 7):
        hostile.send("request", {"round": dealer.round_no, "action": action, "hand": None})
        t.settle()
    assert dealer.rejected == 3
    assert problems(driver) == ["request: {'surrender': 1} is not a decision", "request: ['surrender'] is not a "
                                "decision", "request: 7 is not a decision"]
    finished = len(driver.rounds)
    driver.play_round()
    assert len(driver.rounds) == finished + 1


def test_a_flood_of_hellos_is_answered_again_not_journalled_again(hostile_table):
    """A hello was always a step: each answered with a new catch-up, both journalled, so
    one seat's hellos filled the dealer's state partition (the table stops when it is
    full). The same hello again, nothing new at the table, is answered by re-sending the
    journalled catch-up; hellos asking for other catch-ups get a budget a round."""
    driver, hostile = hostile_table
    t, dealer = driver.table, driver.table.dealer
    driver.play_round()

    def journalled() -> int:
        return sum(len(json.dumps(r.body)) for r in dealer.journal.records())
    hello = {"round": 1, "last_stream_seq": 0, "phase": "play", "bets": None, "pending": {}}
    hostile.send("hello", hello)
    t.settle()
    before, again = journalled(), dealer.answered_again
    dealer.clock = itertools.count(0, 1.0).__next__     # one a second: every one re-sent
    hostile.send("hello", hello, times=200)
    t.settle()
    assert dealer.answered_again - again == 200
    assert journalled() - before < 200 * 64
    for last in range(1, 200):              # each asking for another catch-up
        hostile.send("hello", {**hello, "last_stream_seq": last % 7, "round": 1 + last % 3})
    t.settle()
    assert problems(driver)[-1].startswith("hello: box 3 has had ")
    finished = len(driver.rounds)
    driver.play_round()
    assert len(driver.rounds) == finished + 1
