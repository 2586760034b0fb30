"""Plays simulated players at an in-process table through its mock hardware only: chips on
the readers, cards out of the shoe, buttons on the console, requests on the seat screens.

Every choice is drawn from a ``random.Random`` keyed by (seed, round, box, step), and the
driver reads where the round is from the recovered units, so after a restart it carries on
with exactly the inputs an uninterrupted table would have had.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any, Callable

from firmware.engine.events import Action
from firmware.engine.round import Phase, Round
from firmware.runtime.bus import Bus
from firmware.runtime.phases import DealerPhase
from firmware.runtime.spots import insurance_spot
from firmware.sim.table import BusFactory, InProcessTable, TableSpec, seat_spots

from . import chipset
from .players import SimPlayer
from .shoe import SimShoe
from .summary import Summary

LIMITS = {"main": (Fraction(10), Fraction(500))}


class TableDriver:
    """Drives one in-process table."""

    def __init__(self, table: InProcessTable, seed: int) -> None:
        self.table = table
        self.seed = seed
        self.profile = table.spec.profile
        self.spots = list(seat_spots(self.profile))
        self.players = {box: SimPlayer(box, self.profile, random.Random(0), dict(table.spec.limits))
                        for box in table.seats}
        self.rounds: list[Round] = []
        self._shoe: SimShoe | None = None
        self._shoe_number = -1

    @classmethod
    def create(cls, spec: TableSpec) -> "TableDriver":
        registry = chipset.registry(spec.boxes, len(seat_spots(spec.profile)))
        table = InProcessTable(spec, registry)
        driver = cls(table, spec.seed)
        driver.boot()
        return driver

    def boot(self) -> None:
        """Recover the units and put the physical world back as the journals last saw it."""
        t = self.table
        t.dealer.recover()
        t.shoe.continue_from(t.dealer.shoe_counter)     # the shoe kept counting meanwhile
        for box, seat in t.seats.items():
            seat.recover()
            for spot, uids in seat.present.items():
                t.readers[box].place_chips(spot, uids)
            t.readers[box].start(seat.post)
        t.dealer.start()
        t.settle()
        for seat in t.seats.values():
            seat.start()
        t.settle()
        t.cycle_readers(2)

    # -- randomness keyed by where the round is ----------------------------------------

    def _rng(self, *key: object) -> random.Random:
        return random.Random(":".join(map(str, (self.seed, *key))))

    def _player(self, box: int, *key: object) -> SimPlayer:
        p = self.players[box]
        p.rng = self._rng(self.table.dealer.round_no, box, *key)
        return p

    def sim_shoe(self) -> SimShoe:
        """The simulated shoe for the dealer's current shoe (a new one after a shuffle)."""
        d = self.table.dealer
        if self._shoe is None or self._shoe_number != d.shoe_number:
            self._shoe = SimShoe(d.decks, self._rng("shoe", d.shoe_number))
            self._shoe_number = d.shoe_number
        self._shoe.pos = d.shoe_counter
        return self._shoe

    # -- one round ---------------------------------------------------------------------

    def play_round(self) -> Round:
        t = self.table
        d = t.dealer
        if d.phase == DealerPhase.IDLE:
            self.clear_spots()
            shoe = self.sim_shoe()
            if d.shoe_number == 0 or shoe.cut_card_out:
                t.shoe.shuffle()
                t.settle()
            t.console.press("open_bets")
            t.settle()
        if d.phase == DealerPhase.OPEN:
            self._place_bets()
            t.console.press("no_more_bets")
            t.settle()
        if d.phase == DealerPhase.CLOSING:
            t.console.press("no_more_bets")      # a seat did not answer: close without it
            t.settle()
        self._late_chips()
        while d.phase == DealerPhase.PLAY:
            self._next_input()
        done = d.take_finished()
        self.rounds.extend(done)
        return done[-1] if done else self._round()

    def _round(self) -> Round:
        """The dealer's round in play (the driver only asks while there is one)."""
        state = self.table.dealer.round
        if state is None:
            raise RuntimeError("the dealer has no round in play")
        return state

    def clear_spots(self) -> None:
        """Take every chip off every seat's spots (the players take their winnings)."""
        for reader in self.table.readers.values():
            for spot in reader.spots:
                reader.remove_chips(spot)
        self.table.cycle_readers(3)

    def _place_bets(self) -> None:
        t = self.table
        for box in t.seats:
            intent = self._player(box, "bets").bet_intent()
            for name, amount in intent.bets.items():
                spot = self.spots.index(name)
                t.readers[box].place_chips(name, chipset.chips_for(amount, box, spot, 0))
            if intent.unknown_chip:
                t.readers[box].place_chips(intent.unknown_chip,
                                           [chipset.unknown_uid(box, self.spots.index(intent.unknown_chip))])
        t.cycle_readers(2)

    def _late_chips(self) -> None:
        t = self.table
        if t.dealer.phase != DealerPhase.PLAY or self._round().phase != Phase.INITIAL_DEAL or self._round().cards_dealt():
            return
        late = []
        for box in t.seats:
            intent = self._player(box, "bets").bet_intent()
            if intent.late_chip:
                t.readers[box].place_chips("main", chipset.chips_for(Fraction(5), box, 0, chipset.LATE_LAYER))
                late.append(box)
        if late:
            t.cycle_readers(2, late)

    def _next_input(self) -> None:
        t = self.table
        state = self._round()
        if state.offers_open and not self._offers_done(state):
            self._offers(state)
            return
        expect = state.expecting()
        if expect.kind == "card":
            shoe = self.sim_shoe()
            if shoe.left == 0:
                t.console.press("void_round")
            else:
                t.shoe.deal(str(shoe.cards[shoe.pos]))
            t.settle()
            return
        box = expect.box
        assert box is not None                  # a decision is expected of a box
        decision = self._player(box, "turn", len(state.history)).turn(state)
        if decision.action in (Action.DOUBLE, Action.SPLIT):
            seat = t.seats.get(box)
            in_play = state.hand_in_play()
            assert in_play is not None          # a double or split is of the hand in play
            amount = decision.amount if decision.amount is not None else in_play[1].stake
            if seat is not None and not seat.pending.get("main"):
                layer = 1 + sum(1 for e in state.history
                                if getattr(e, "box", None) == box and getattr(e, "action", None)
                                in (Action.DOUBLE, Action.SPLIT))
                t.readers[box].place_chips("main", chipset.chips_for(amount, box, 0, layer))
                t.cycle_readers(2, [box])
        t.console.press(str(decision.action))
        t.settle()

    def _offers_done(self, state: Round) -> bool:
        return getattr(self, "_offered_round", None) == (self.table.dealer.round_no, len(state.history))

    def _offers(self, state: Round) -> None:
        """The offer window: insurance chips, even money and surrender asked on the screen."""
        t = self.table
        pressed: set[str] = set()
        for box in t.seats:
            seat = t.seats[box]
            for decision in self._player(box, "offers").offers(state):
                if decision.action == Action.INSURANCE:
                    # on the insured hand's own spot (Switch §3.9.1: either or both hands)
                    spot = insurance_spot(decision.hand)
                    if spot in self.spots and not t.readers[box].chips_on(spot):
                        assert decision.amount is not None      # an insurance offer has its amount
                        t.readers[box].place_chips(spot, chipset.chips_for(
                            decision.amount, box, self.spots.index(spot), 1))
                        t.cycle_readers(2, [box])
                else:
                    seat.request(str(decision.action), decision.hand)
                    t.settle()
                pressed.add(str(decision.action))
        for button in ("insurance", "even_money", "surrender"):
            if button in pressed:
                t.console.press(button)
                t.settle()
        self._offered_round = (t.dealer.round_no, len(self._round().history))

    # -- results -----------------------------------------------------------------------

    def summary(self) -> Summary:
        s = Summary()
        for state in self.rounds:
            s.add_round(state)
        for unit in self.table.units:
            # running counts: the alarm log keeps only the newest entries, and the
            # dealer's copies of the seats' alarms are not counted there
            s.alarms.update(unit.alarm_counts)
        s.refusals = self.table.dealer.refusals.total
        return s


def run_demo_table(spec: TableSpec, rounds: int, progress: Callable[[int], None] | None = None,
                   bus_factory: BusFactory | None = None, on_unit: Callable[[Any, Bus], None] | None = None) -> Summary:
    """Play ``rounds`` rounds of simulated players; the table's summary."""
    table = InProcessTable(spec, chipset.registry(spec.boxes, len(seat_spots(spec.profile))),
                           bus_factory=bus_factory, on_unit=on_unit)
    driver = TableDriver(table, spec.seed)
    try:
        driver.boot()
        for i in range(rounds):
            driver.play_round()
            if progress:
                progress(i + 1)
        table.settle()
        return driver.summary()
    finally:
        driver.table.close()
