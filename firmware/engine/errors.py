"""Errors the engine raises. Each says what was refused, why, and under which clause.

They subclass :class:`ValueError` (python-chess / pokerkit style) so callers that only care
that input was bad can catch that.
"""

from __future__ import annotations


class RuleError(ValueError):
    """An event the rules do not allow now."""

    def __init__(self, message: str, clause: str | None = None):
        self.reason = message
        self.clause = clause
        super().__init__(f"{message} ({clause})" if clause else message)


class IllegalWager(RuleError):
    """A wager the table must refuse at "no more bets". ``box``, ``bet`` and ``issue`` say
    which spot and why, for screens that show it on the spot (``over_maximum``,
    ``under_minimum``, ``above_initial_bet``, ``progressive_amount``, ``not_cents``, ...)."""

    def __init__(self, message: str, clause: str | None = None, *, box: int | None = None,
                 bet: str | None = None, issue: str | None = None):
        super().__init__(message, clause)
        self.box = box
        self.bet = bet
        self.issue = issue


class IllegalDecision(RuleError):
    """A player decision the rules do not allow for this hand now."""


class NotYourTurn(IllegalDecision):
    """A turn decision for a box whose hand is not in play."""


class UnexpectedCard(RuleError):
    """A card drawn when the round is waiting for something else."""


class RoundOver(RuleError):
    """An event after the round was settled or voided."""


class BettingOpen(RuleError):
    """A play event before bets were closed."""
