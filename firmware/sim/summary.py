"""Totals over many rounds: rounds, hands, wagered and won per bet type, alarms."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from firmware.engine.money import format_amount, to_json_number
from firmware.engine.round import Phase, Round
from firmware.engine.settlement import box_settlements


@dataclass
class Summary:
    rounds: int = 0
    voided: int = 0
    hands: int = 0
    wagered: defaultdict[str, Fraction] = field(default_factory=lambda: defaultdict(Fraction))   # bet -> total
    won: defaultdict[str, Fraction] = field(default_factory=lambda: defaultdict(Fraction))   # bet -> player's net
    alarms: Counter[str] = field(default_factory=Counter)    # kind -> count
    refusals: int = 0

    def add_round(self, state: Round) -> None:
        """Count a finished round from the engine's own state."""
        self.rounds += 1
        if state.phase == Phase.VOID:
            self.voided += 1
            return
        for settled in box_settlements(state):
            self.hands += len(settled.hands)
            for name, amount in settled.wagered:
                self.wagered[name] += amount
            for name, net in settled.bets:
                self.won[name] += net

    def merge(self, other: "Summary") -> None:
        self.rounds += other.rounds
        self.voided += other.voided
        self.hands += other.hands
        for bet, amount in other.wagered.items():
            self.wagered[bet] += amount
        for bet, amount in other.won.items():
            self.won[bet] += amount
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
        out.append(f"{'bet':<24}{'wagered':>12}{'players net':>14}{'house hold':>12}")
        for bet in sorted(set(self.wagered) | set(self.won)):
            wagered, net = Fraction(self.wagered[bet]), Fraction(self.won[bet])
            hold = f"{float(-net / wagered):.2%}" if wagered else "-"
            out.append(f"{bet:<24}{format_amount(wagered):>12}{_signed(net):>14}{hold:>12}")
        alarms = ", ".join(f"{k} {v}" for k, v in sorted(self.alarms.items())) or "none"
        out.append(f"alarms: {alarms}; refusals: {self.refusals}")
        return out

    def legend(self) -> list[str]:
        """What the columns and the alarms seen mean, said once under the summaries."""
        out = ["players net: what the players won (+) or lost (-) on that bet, all boxes together;",
               "house hold: the house's share of what was wagered on it (-net / wagered);",
               "refusals: inputs the dealer unit refused (a decision out of turn, an illegal wager)."]
        if self.alarms:
            out.append("alarms: the simulated players sometimes misbehave; each chip or act is refused "
                       "(never counted) and reported to the pit:")
            out += [f"  {kind}: {ALARM_MEANINGS.get(kind, 'see docs/runtime.md')}" for kind in sorted(self.alarms)]
        return out


def _signed(value: Fraction) -> str:
    return ("+" if value > 0 else "") + format_amount(value)


#: What each alarm a demo can raise means, for a reader of the summary.
ALARM_MEANINGS = {
    "unknown_chip": "a chip not in the chip registry was on a spot (not counted)",
    "barred_chip": "a barred chip was on a spot (not counted)",
    "past_posting": "a chip added to a spot after no more bets (refused)",
    "pinching": "a chip taken off a spot after no more bets",
    "addition_mismatch": "a double, split or insurance addition that does not match its chips",
    "seats_missing": "a seat had not locked its wagers when bets closed (its bets not taken)",
    "integrity": "a seat's settlement differed from the dealer's",
    "card_while_betting": "a card came out of the shoe while bets were open",
    "shuffle_in_round": "the shoe was shuffled during a round",
    "interruption_void": "the round was interrupted before an outcome and voided",
    "interruption_continue": "the round was interrupted after an outcome; play continued",
    "card_keyed": "a missed card was keyed in at the console",
}
