"""Totals over many rounds: rounds, hands, wagered and won per bet type, alarms."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from firmware.engine.money import format_amount, to_json_number
from firmware.engine.round import Phase, Round


@dataclass
class Summary:
    rounds: int = 0
    voided: int = 0
    hands: int = 0
    wagered: Counter = field(default_factory=Counter)   # bet -> Fraction
    won: Counter = field(default_factory=Counter)       # bet -> player's net (Fraction)
    alarms: Counter = field(default_factory=Counter)    # kind -> count
    refusals: int = 0

    def add_round(self, state: Round) -> None:
        """Count a finished round from the engine's own state."""
        self.rounds += 1
        if state.phase == Phase.VOID:
            self.voided += 1
            return
        for box in state.boxes:
            self.hands += len(box.hands)
            for name, amount in state.wagered(box.number).items():
                self.wagered[name] += amount
            for name, net in box.ledger.items():
                self.won[name] += net

    def merge(self, other: "Summary") -> None:
        self.rounds += other.rounds
        self.voided += other.voided
        self.hands += other.hands
        self.wagered.update(other.wagered)
        self.won.update(other.won)
        self.alarms.update(other.alarms)
        self.refusals += other.refusals

    def as_dict(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds, "voided": self.voided, "hands": self.hands,
            "wagered": {k: to_json_number(v) for k, v in sorted(self.wagered.items())},
            "won": {k: to_json_number(v) for k, v in sorted(self.won.items())},
            "alarms": dict(sorted(self.alarms.items())), "refusals": self.refusals,
        }

    def lines(self) -> list[str]:
        out = [f"rounds {self.rounds} (voided {self.voided}), hands {self.hands}"]
        out.append(f"{'bet':<24}{'wagered':>14}{'players won':>14}")
        for bet in sorted(set(self.wagered) | set(self.won)):
            out.append(f"{bet:<24}{format_amount(Fraction(self.wagered[bet])):>14}"
                       f"{format_amount(Fraction(self.won[bet])):>14}")
        alarms = ", ".join(f"{k} {v}" for k, v in sorted(self.alarms.items())) or "none"
        out.append(f"alarms: {alarms}; refusals: {self.refusals}")
        return out
