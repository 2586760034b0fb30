"""A simulated electronic card shoe."""

from __future__ import annotations

from typing import Callable

from hal.events import ShoeSignalKind, parse_card
from hal.protocol import shoe as proto
from hal.sim.device import SimulatedDevice


class ShoeSimulator(SimulatedDevice):
    device_id = "betbox-sim-shoe"

    counter = 0
    jammed = False
    door_open = False

    def deal(self, *cards: str) -> None:
        for text in cards:
            rank, suit = parse_card(text)
            self.counter += 1
            self._msg(proto.Card(self.counter, rank, suit))

    def repeat(self, text: str, counter: int) -> None:
        """Fault: a CARD frame with a counter already used (a new SEQ, an old count)."""
        rank, suit = parse_card(text)
        self._msg(proto.Card(counter, rank, suit))

    def replay_cards(self, n: int = 1) -> None:
        """Fault: the last ``n`` CARD frames again, byte for byte (same SEQ)."""
        self.replay(proto.CARD, n)

    def shuffle(self) -> None:
        self.counter = 0
        self._event(ShoeSignalKind.SHUFFLED)

    def cut_card(self) -> None:
        self._event(ShoeSignalKind.CUT_CARD)

    def misread(self) -> None:
        self.counter += 1
        self._event(ShoeSignalKind.MISREAD)

    def skip(self, n: int = 1) -> None:
        """Fault: cards leave unseen (the counter moves, nothing is sent)."""
        self.counter += n

    def jam(self) -> None:
        self.jammed = True
        self._event(ShoeSignalKind.JAM)

    def unjam(self) -> None:
        self.jammed = False
        self._event(ShoeSignalKind.JAM_CLEARED)

    def door(self, state: str) -> None:
        if state not in ("open", "close", "closed"):
            raise ValueError(f"door takes open or close, not {state!r}")
        self.door_open = state == "open"
        self._event(ShoeSignalKind.DOOR_OPENED if self.door_open
                    else ShoeSignalKind.DOOR_CLOSED)

    def heartbeat_payload(self) -> bytes:
        flags = (proto.FLAG_JAMMED if self.jammed else 0) | \
                (proto.FLAG_DOOR_OPEN if self.door_open else 0)
        return proto.Heartbeat(self.counter, flags).payload()

    def script_commands(self) -> dict[str, Callable[..., None]]:
        return super().script_commands() | {
            "deal": self.deal, "shuffle": self.shuffle, "cut": self.cut_card,
            "misread": self.misread, "skip": lambda n="1": self.skip(int(n)),
            "jam": self.jam, "unjam": self.unjam, "door": self.door,
            "repeat": lambda card, counter: self.repeat(card, int(counter)),
            "replay": lambda n="1": self.replay_cards(int(n)),
        }

    def _event(self, kind: ShoeSignalKind) -> None:
        self._msg(proto.Event(kind, self.counter))

    def _msg(self, message: proto.ShoeMessage) -> None:
        self.send(*proto.encode(message))
