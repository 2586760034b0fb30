"""Where a unit is in the round, as enums (issue #15: instead of bare strings compared in
~70 places). ``StrEnum``: a phase is its code on the wire, in the journal and on the screen
(``"open"``), so messages and checkpoints read as before."""

from __future__ import annotations

from enum import StrEnum


class DealerPhase(StrEnum):
    IDLE = "idle"           # no round, or the last one is over
    OPEN = "open"           # bets open
    CLOSING = "closing"     # "no more bets": waiting for the seats' locks
    PLAY = "play"           # the round is dealt


class SeatPhase(StrEnum):
    IDLE = "idle"           # no round seen yet
    OPEN = "open"
    CLOSING = "closing"
    PLAY = "play"
    OVER = "over"           # this seat's engine settled the round
    VOID = "void"           # the round was voided

    @property
    def settled(self) -> bool:
        """The round this seat saw is over (settled or voided)."""
        return self in (SeatPhase.OVER, SeatPhase.VOID)
