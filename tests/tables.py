"""One in-process table for the tests: a dealer and seven seats on mock hardware, booted,
the shoe shuffled. The ``table`` fixture (tests/conftest.py) hands one to a test; a test that
needs its own profile, or a second boot of the same journals, calls :func:`booted_table`.

For whole tables on a broker (tests/floor/test_whole_tables.py): :func:`linked_table` (every
unit on its own bus, reporting, gated by the controller), :func:`audited_outbox` and
:func:`outbox_reports` (every report an outbox ever stored), :func:`journal_books` and
:func:`check_books` (the controller's books against the outboxes and journals, to the cent),
:func:`open_round`, :func:`deal_initial`, :func:`finish_round` (a round dealt from the test's
cards)."""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable

from firmware.engine.profile import load_profile
from firmware.engine.round import Phase
from firmware.link.outbox import Outbox
from firmware.link.presence import ControllerWatch, takes_controller_input
from firmware.link.reporter import DealerReporter, SeatReporter
from firmware.runtime.journal import JOURNAL_NAME, open_readonly
from firmware.sim import chipset
from firmware.sim.driver import LIMITS, TableDriver
from firmware.sim.table import BusFactory, InProcessTable, TableSpec, seat_spots
from tests.link.helpers import Books

PROFILE = "rws-blackjack"


def booted_table(state_dir: Path, profile: str = PROFILE) -> InProcessTable:
    """Table ``t`` at ``state_dir`` (recovered from the journals there, if any), booted, with
    a shuffled shoe."""
    p = load_profile(profile)
    t = InProcessTable(TableSpec("t", p, 0, state_dir), chipset.registry(7, len(seat_spots(p))))
    t.boot()
    t.shoe.shuffle()
    t.settle()
    return t


def place_bet(t: InProcessTable, box: int, amount: int | Fraction, spot: str = "main", layer: int = 0) -> None:
    """Chips worth ``amount`` on ``box``'s ``spot``, read in (two reader cycles)."""
    t.readers[box].place_chips(spot, chipset.chips_for(Fraction(amount), box, t.spots.index(spot), layer))
    t.cycle_readers(2, [box])


def boxes_with_a_bet_on(d: TableDriver, box: int) -> set[int]:
    """Play a round in which ``box``'s player put chips on main (the driver's players may sit
    a round out): the boxes the dealer took wagers of."""
    t = d.table
    if t.dealer.phase == "idle":
        d.clear_spots()
        t.console.press("open_bets")
        t.settle()
    place_bet(t, box, 10)
    d.play_round()
    return {b.number for b in d.rounds[-1].boxes}


# -- whole tables on a broker, and their books (tests/floor: the whole-table fault tests) --

#: Every report the outbox ever stores, copied by a trigger in the same transaction: the
#: controller's marks delete confirmed reports, the test still sums all of them afterwards.
AUDIT = """
CREATE TABLE IF NOT EXISTS audit (seq INTEGER NOT NULL, payload TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS audit_put AFTER INSERT ON outbox BEGIN
    INSERT INTO audit (seq, payload) VALUES (new.seq, new.payload);
END;
"""


def audited_outbox(path: Path, unit: str) -> Path:
    """An outbox at ``path`` (made now) that keeps a copy of every report it stores."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Outbox(path, unit).close()
    db = sqlite3.connect(path)
    try:
        db.executescript(AUDIT)
    finally:
        db.close()
    return path


def outbox_reports(path: Path) -> list[dict[str, Any]]:
    """Every report the audited outbox at ``path`` stored, in the order it stored them."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [json.loads(p) for (p,) in db.execute("SELECT payload FROM audit ORDER BY rowid")]
    finally:
        db.close()


def linked_table(table_id: str, state_dir: Path, bus_factory: BusFactory, *, boxes: int = 3, seed: int = 1,
                 profile: str = "rws-blackjack-switch", link_id: str = "main") -> TableDriver:
    """A whole table of simulated players, every unit on its own bus (``bus_factory``): the
    seats and the dealer report (their outboxes), and each takes the controller's presence
    and meter (the progressive's gate), as ``betbox demo --broker`` wires them. Booted."""
    p = load_profile(profile)

    def on_unit(unit: Any, bus: Any) -> None:
        reporter = {"seat": SeatReporter, "dealer": DealerReporter}.get(unit.role)
        if reporter is not None:
            reporter(unit, bus)
        if takes_controller_input(unit):
            ControllerWatch(bus, link_id, unit.table).feed(unit)

    spec = TableSpec(table_id, p, seed, state_dir, boxes=boxes, limits=LIMITS)
    table = InProcessTable(spec, chipset.registry(boxes, len(seat_spots(p))), bus_factory=bus_factory,
                           on_unit=on_unit)
    driver = TableDriver(table, seed)
    driver.boot()
    return driver


def seat_report_books(reports: list[dict[str, Any]]) -> Books:
    """What the seats' reports claim, a void round's wager and hit left out (returned)."""
    void = {(r["table"], r["round"], r["box"]) for r in reports
            if r["kind"] == "round_result" and r["body"]["void"]}
    b = Books()
    for r in reports:
        body = r["body"]
        if (r.get("table"), r.get("round"), r.get("box")) in void:
            continue
        if r["kind"] == "progressive_wager":
            b.wagers += 1
            b.wagers_in += Fraction(body["amount"])
        elif r["kind"] == "progressive_hit" and body["award"] is not None:
            b.fixed_hits += 1
            b.fixed_won += Fraction(body["award"])
        elif r["kind"] == "progressive_hit":
            b.meter_hits += 1
            b.meter_won += Fraction(body["amount"])
        elif r["kind"] == "envy_bonus":
            b.envy += 1
            b.envy_won += Fraction(body["award"])
    return b


def dealer_report_books(reports: list[dict[str, Any]]) -> Books:
    """What the dealers' round records say (``round_progressive``, ``round_settlement``)."""
    void = {(r["table"], r["round"]) for r in reports if r["kind"] == "round_settlement" and r["body"]["void"]}
    b = Books()
    for r in reports:
        if (r.get("table"), r.get("round")) in void:
            continue
        for box in r["body"].get("boxes", []) if r["kind"] == "round_progressive" else []:
            b.wagers += 1
            b.wagers_in += Fraction(box["wager"])
            hit = box["hit"]
            if hit is not None and hit["award"] is not None:
                b.fixed_hits += 1
                b.fixed_won += Fraction(hit["award"])
            elif hit is not None:
                b.meter_hits += 1
                b.meter_won += Fraction(hit["amount"])
        for box in r["body"]["boxes"] if r["kind"] == "round_settlement" else []:
            for envy in box["envy"]:
                b.envy += 1
                b.envy_won += Fraction(envy["award"])
    return b


def journal_books(state_dir: Path, boxes: Iterable[int], profile: str = "rws-blackjack-switch") -> Books:
    """What the seats' own journals settled on the progressive (their ``result`` records)."""
    table = load_profile(profile).progressive
    assert table is not None                    # a table with a progressive
    b = Books()
    for box in boxes:
        j = open_readonly(state_dir / f"seat-{box}" / JOURNAL_NAME)
        try:
            settled = [r.body["body"]["settlement"] for r in j.records() if r.dir == "out" and r.kind == "result"]
        finally:
            j.close()
        for s in settled:
            # a void round's box (its bets returned): no hand judged, nothing booked
            if s is None or "progressive" not in s or all(h["result"] is None for h in s["hands"]):
                continue
            b.wagers += 1
            b.wagers_in += Fraction(str(s["wagered"]["progressive"]))
            p = s["progressive"]
            if p["hand"] is not None and table.pays[p["hand"]].meter_share is not None:
                b.meter_hits += 1
                b.meter_won += Fraction(str(p["award"]))
            elif p["hand"] is not None:
                b.fixed_hits += 1
                b.fixed_won += Fraction(str(p["award"]))
            if "envy_bonus" in s["bets"]:
                assert table.envy_bonus is not None
                won = Fraction(str(s["bets"]["envy_bonus"]))
                b.envy += int(won / table.envy_bonus)
                b.envy_won += won
    return b


def check_books(data: dict[str, Any], outboxes: dict[str, list[dict[str, Any]]], journals: Books,
                rate: Fraction, pool: str = "main") -> Books:
    """The controller's books (``report()``) equal, to the cent, what every unit's outbox
    stored (``outboxes``: unit -> its reports, :func:`outbox_reports`) and what the seats'
    journals settled; each report is held once, none missing, none held back. The books."""
    for unit, reports in outboxes.items():
        seqs = [r["seq"] for r in reports]
        assert seqs == list(range(1, len(seqs) + 1)), (unit, "the outbox numbered its reports 1..n once each")
        if seqs:
            u = data["units"][unit]
            assert (u["events"], u["highest_seq"], u["missing"], u["missing_ranges"]) == \
                (len(seqs), len(seqs), 0, []), (unit, u)
    seat = seat_report_books([r for unit, rs in outboxes.items() if "/seat-" in unit for r in rs])
    dealer = dealer_report_books([r for unit, rs in outboxes.items() if unit.endswith("/dealer") for r in rs])
    p = data["pools"][pool]
    books = Books.of_controller(p["meters"])
    assert books == seat == dealer == journals, {"controller": books, "seats' outboxes": seat,
                                                 "dealers' outboxes": dealer, "seats' journals": journals}
    assert Fraction(p["meters"]["contributions"]) == books.wagers_in * rate
    # the meter: what was seeded, plus the outboxes' contributions, less their 100% hits
    assert Fraction(p["exact"]["amount"]) + Fraction(p["exact"]["overflow"]) == \
        Fraction(p["meters"]["seeds"]) + seat.wagers_in * rate - seat.meter_won, p
    assert p["balanced"] and p["meters"]["pending"] == 0
    assert data["integrity"]["count"] == 0 and data["held"] == {"seat": 0, "dealer": 0}
    return books


def open_round(t: InProcessTable, bets: dict[int, dict[str, int]]) -> None:
    """A round of the dealer's own: bets open, ``bets`` (box -> spot -> amount) placed, no
    more bets. For a round dealt from the test's cards (:func:`deal_initial`)."""
    if t.dealer.shoe_number == 0:
        t.shoe.shuffle()
        t.settle()
    t.console.press("open_bets")
    t.settle()
    for box, spots in bets.items():
        for spot, amount in spots.items():
            place_bet(t, box, amount, spot)
    t.console.press("no_more_bets")
    t.settle()


def deal_initial(t: InProcessTable, cards: dict[int, list[str]], dealer: tuple[str, ...] = ("9C", "TD")) -> None:
    """Deal the initial cards: each box its ``cards`` in turn (ten of clubs once they run
    out), the dealer ``dealer``'s; stop at the first decision (the progressive is judged)."""
    state = t.dealer.round
    assert state is not None, "no round in play"
    boxes = {box: iter(c) for box, c in cards.items()}
    to_dealer = iter(dealer)
    for _ in range(40):
        if state.phase != Phase.INITIAL_DEAL:
            return
        e = state.expecting()
        t.shoe.deal(next(to_dealer, "TD") if e.to_dealer else next(boxes[e.box], "TC"))
        t.settle()
        state = t.dealer.round
    raise AssertionError("the initial deal did not end")


def finish_round(t: InProcessTable) -> None:
    """Every hand stands, the dealer draws tens, to the end of the round."""
    for _ in range(80):
        state = t.dealer.round
        if state is None or state.is_over:
            return
        e = state.expecting()
        if e.kind == "decision":
            t.console.press("stand")
        else:
            t.shoe.deal("TD")
        t.settle()
    raise AssertionError("the round did not end")
