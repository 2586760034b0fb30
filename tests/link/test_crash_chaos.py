"""The crash-chaos run (issue #11, "Done when"): `betbox run` processes — a dealer, two seats
and the jackpot controller — on a real mosquitto of the test's own, 30+ rounds, with
SIGKILLs of the seats, the dealer, the controller and the broker at points a seeded random
number generator chooses (in the betting window, after bets closed, mid-deal, at a round's
end; a seat sometimes stays down until the next round has opened). At the end the
controller's books equal the dealer's journal to the cent for every box and round: each
round's result and each progressive wager, once.

The table is followed through the dealer's own journal (read-only), not the broker: the
broker is killed too, and the journal is the record the books are checked against."""

from __future__ import annotations

import json
import random
import sqlite3
import time
from fractions import Fraction
from pathlib import Path

import pytest

from firmware.engine.events import event_from_dict
from firmware.engine.money import parse_amount
from firmware.engine.profile import load_profile
from firmware.engine.round import Round
from firmware.jackpot.store import connect
from firmware.runtime.spots import seat_spots
from firmware.runtime.wire import shoe_from_json
from firmware.sim.shoe import SimShoe
from hal.sim.rfid import RfidSimulator
from hal.sim.shoe import ShoeSimulator
from hal.sim.transport import PtyTransport

from .helpers import unit_outbox, wait_until
from .units import UnitProcess, dealer_config, jackpot_config, seat_config, stand_or_next

SEED = 20261123
ROUNDS = 30
TABLE = "chaos-1"
BOXES = (1, 2)
KINDS = ("none", "seat", "seat_across", "seat_across", "dealer", "controller", "broker")
POINTS = ("open", "closed", "dealing", "end")


def read_records(path: Path, after: int) -> list[tuple[int, str, dict]]:
    """The dealer's records journalled after record ``after`` (read-only)."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2)
        try:
            rows = db.execute("SELECT id, kind, body FROM record WHERE id > ? ORDER BY id",
                              (after,)).fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return []
    return [(i, k, json.loads(b)) for i, k, b in rows]


class JournalWatch:
    """Mirrors the dealer's rounds from its journal through the engine."""

    def __init__(self, path: Path, profile) -> None:
        self.path = path
        self.profile = profile
        self.round: Round | None = None
        self.round_no = 0
        self.results: dict[int, dict] = {}
        self.shuffles = 0
        self._after = 0

    def update(self) -> None:
        for rid, kind, m in read_records(self.path, self._after):
            self._after = rid
            if kind == "shoe" and m.get("signal") == "shuffled":
                self.shuffles += 1
            if not str(m.get("topic", "")).endswith("/stream"):
                continue
            body = m["body"]
            if kind == "round_open":
                self.round_no = body["round"]
                meter = body.get("meter")
                self.round = Round.new(self.profile, decks=body["decks"], limits=body.get("limits") or {},
                                       shoe=shoe_from_json(body["shoe"]),
                                       meter=None if meter is None else parse_amount(meter))
            elif kind == "event" and body["round"] == self.round_no and self.round is not None:
                self.round, _ = self.round.apply(event_from_dict(body["event"]))
            elif kind == "round_result":
                self.results[body["round"]] = body["settlement"]

    def over(self, rnd: int) -> bool:
        self.update()
        return rnd in self.results


class Chaos:
    def __init__(self, tmp: Path, broker, profile, rng: random.Random) -> None:
        self.tmp, self.broker, self.profile, self.rng = tmp, broker, profile, rng
        self.link = "chaos"
        self.shoe = ShoeSimulator(PtyTransport(), heartbeat=0.5).start()
        self.spots = seat_spots(profile)
        self.readers = {b: RfidSimulator(PtyTransport(), self.spots, heartbeat=0.5).start() for b in BOXES}
        self.cards = iter(SimShoe(6, random.Random(rng.random())).cards)
        self.left = 6 * 52
        self.procs: list[UnitProcess] = []
        self.starts = 0
        jp = jackpot_config(tmp, broker.url, self.link)
        self.configs = {"jackpot": jp,
                        "dealer": self._dealer_config(),
                        **{f"seat-{b}": seat_config(tmp, broker.url, TABLE, b, profile,
                                                    self.readers[b].transport.path, self.link) for b in BOXES}}
        self.units: dict[str, UnitProcess | None] = {name: None for name in self.configs}
        self.watch = JournalWatch(tmp / "dealer" / "journal.db", profile)
        self.kills: dict[str, int] = {}

    def _dealer_config(self) -> Path:
        path = dealer_config(self.tmp, self.broker.url, TABLE, self.profile, self.shoe.transport.path, self.link)
        text = path.read_text().replace("[game]\n", "[game]\nclose_wait = 3\n")
        path.write_text(text)
        return path

    def start(self, name: str) -> UnitProcess:
        self.starts += 1
        drive = self.tmp / "console.fifo" if name == "dealer" else None
        p = UnitProcess(f"{name}.{self.starts}", self.configs[name], self.tmp, drive=drive)
        self.procs.append(p)
        self.units[name] = p
        marker = "jackpot controller" if name == "jackpot" else " running"
        wait_until(lambda: marker in p.output() or p.proc.poll() is not None, 60, f"{name} started")
        assert p.proc.poll() is None, p.output()[-3000:]
        return p

    def kill(self, name: str) -> None:
        p = self.units.get(name)
        if name == "broker":
            self.broker.kill()
        elif p is not None:
            p.kill()
            self.units[name] = None
        self.kills[name] = self.kills.get(name, 0) + 1

    def revive(self) -> None:
        if self.broker.proc.poll() is not None:
            self.broker.start()
        for name, p in self.units.items():
            if p is None:
                self.start(name)

    def press(self, button: str) -> None:
        p = self.units["dealer"]
        assert p is not None and p.proc.poll() is None, p.output()[-3000:] if p else "dealer down"
        p.send(f"press {button}")

    def place_bets(self) -> None:
        bets = {"main": ["0A01", "0A02"], "progressive": ["0B01"]}
        for reader in self.readers.values():
            for spot in self.spots:
                reader.remove(spot)
            for spot, uids in bets.items():
                reader.place(spot, *uids)

    def cycle(self) -> None:
        for reader in self.readers.values():
            reader.cycle(1)

    def step_round(self, rnd: int) -> None:
        """One input the round waits for (a card or a chip-free decision)."""
        state = self.watch.round
        expect = state.expecting()
        n = len(state.history)
        if expect.kind == "card":
            self.shoe.deal(str(next(self.cards)))
            self.left -= 1
        elif expect.kind == "decision":
            self.press(stand_or_next(state, expect.box))
        else:
            raise AssertionError(f"round {rnd} waits for {expect}")
        wait_until(lambda: self.watch.update() is None and (len(self.watch.round.history) > n
                                                            or self.watch.over(rnd)), 30,
                   f"round {rnd}: the dealer taking {expect}")

    def play(self, rnd: int, kind: str, point: str, victim: str) -> None:
        def maybe(at: str) -> None:
            if kind != "none" and point == at:
                self.kill(victim)
                if kind != "seat_across":
                    self.revive()
        if self.left < 60:                            # a new shoe before this one runs out
            self.watch.update()
            seen = self.watch.shuffles
            self.shoe.shuffle()
            wait_until(lambda: self.watch.update() is None and self.watch.shuffles > seen, 30, "the shuffle")
            self.cards = iter(SimShoe(6, random.Random(SEED * 1000 + seen)).cards)
            self.left = 6 * 52
        self.press("open_bets")
        wait_until(lambda: self.watch.update() is None and self.watch.round_no == rnd, 60, f"round {rnd} opened")
        self.revive()                 # a seat down across the last round's end is back only now
        self.place_bets()
        for _ in range(4):
            self.cycle()
            time.sleep(0.1)
        maybe("open")
        self.press("no_more_bets")
        # the dealer closes once every seat online has locked, or after close_wait without it
        wait_until(lambda: self.watch.update() is None and self.watch.round is not None
                   and len(self.watch.round.history) > 0, 60, f"round {rnd}: bets closed")
        maybe("closed")
        cards = 0
        while not self.watch.over(rnd):
            self.step_round(rnd)
            cards += 1
            if cards == 2:
                maybe("dealing")
        maybe("end")

    def close(self) -> None:
        for p in self.procs:
            p.kill()
        self.shoe.close()
        for reader in self.readers.values():
            reader.close()


def controller_books(db_path: Path) -> tuple[dict, dict]:
    db = connect(db_path, readonly=True)
    try:
        results, wagers = {}, {}
        for unit, kind, rnd, body in db.execute("SELECT unit, kind, round, body FROM event "
                                                "WHERE kind IN ('round_result', 'progressive_wager')"):
            box = int(unit.rsplit("-", 1)[1])
            book = results if kind == "round_result" else wagers
            key = (box, rnd)
            assert key not in book, f"{kind} of box {box} round {rnd} booked twice"
            body = json.loads(body)
            book[key] = Fraction(body["net"] if kind == "round_result" else body["amount"])
        return results, wagers
    finally:
        db.close()


def outbox_last(state_dir: Path) -> int:
    path, meta = unit_outbox(state_dir)
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = db.execute(f"SELECT value FROM {meta} WHERE key = 'next_seq'").fetchone()
        return int(row[0]) - 1
    finally:
        db.close()


def outbox_ready(state_dir: Path) -> bool:
    """The seat has started with its outbox (in its journal's file)."""
    try:
        outbox_last(state_dir)
    except (sqlite3.Error, TypeError):             # no file, no table, no row yet
        return False
    return True


def controller_contiguous(db_path: Path) -> dict[str, int]:
    db = connect(db_path, readonly=True)
    try:
        return dict(db.execute("SELECT unit, contiguous FROM unit"))
    finally:
        db.close()


@pytest.mark.slow
def test_crash_chaos_ends_with_the_controllers_books_equal_to_the_dealers_journal(own_broker, tmp_path):
    rng = random.Random(SEED)
    profile = load_profile("rws-blackjack-switch")
    chaos = Chaos(tmp_path, own_broker, profile, rng)
    try:
        for name in ("jackpot", "dealer", *(f"seat-{b}" for b in BOXES)):
            chaos.start(name)
        for box in BOXES:
            wait_until(lambda box=box: outbox_ready(tmp_path / f"seat-{box}"), 30, f"seat {box}'s outbox")
        time.sleep(1.0)                               # the seats' hellos and catch-ups
        for rnd in range(1, ROUNDS + 1):
            kind = rng.choice(KINDS)
            point = rng.choice(POINTS)
            victim = {"seat": f"seat-{rng.choice(BOXES)}", "seat_across": f"seat-{rng.choice(BOXES)}",
                      "dealer": "dealer", "controller": "jackpot", "broker": "broker"}.get(kind, "")
            if kind == "seat_across" and point == "end":
                point = "dealing"
            chaos.play(rnd, kind, point, victim)
        chaos.revive()
        assert set(chaos.kills) == {"seat-1", "seat-2", "dealer", "jackpot", "broker"}, chaos.kills

        # the dealer's journal: every box's result and progressive wager, round by round
        chaos.watch.update()
        assert set(chaos.watch.results) >= set(range(1, ROUNDS + 1))
        expected_results, expected_wagers = {}, {}
        void = set()
        for rnd, s in chaos.watch.results.items():
            for box, b in s["boxes"].items():
                expected_results[(int(box), rnd)] = Fraction(str(b["net"]))
                if s["void"]:
                    void.add((int(box), rnd))      # a voided round's bets are returned (net 0)
                elif "progressive" in b["bets"]:
                    expected_wagers[(int(box), rnd)] = Fraction(str(b["wagered"]["progressive"]))
        assert len(expected_results) >= ROUNDS            # the seats did play
        # the controller's books, once every unit is back and has caught up
        db_path = tmp_path / "jackpot" / "jackpot.db"
        try:
            wait_until(lambda: controller_books(db_path)[0] == expected_results, 90,
                       "the controller's results equal to the dealer's journal")
        except AssertionError:
            got = controller_books(db_path)[0]      # name what differs, not only that it does
            raise AssertionError(
                f"the controller's results differ from the dealer's journal after 90 s: missing "
                f"{sorted(k for k in expected_results if k not in got)}, not in the journal "
                f"{sorted(k for k in got if k not in expected_results)}, other amounts "
                f"{sorted((k, got[k], v) for k, v in expected_results.items() if k in got and got[k] != v)}; "
                f"kills {chaos.kills}") from None
        for box in BOXES:
            unit = f"{TABLE}/seat-{box}"
            wait_until(lambda unit=unit, box=box: controller_contiguous(db_path).get(unit, 0)
                       >= outbox_last(tmp_path / f"seat-{box}"), 60, f"{unit}'s reports booked")
        results, wagers = controller_books(db_path)
        assert results == expected_results
        assert {k: v for k, v in wagers.items() if k not in void} == expected_wagers
    finally:
        chaos.close()
