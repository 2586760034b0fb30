"""The betting spots (antennas) a seat has for a profile."""

from __future__ import annotations

from firmware.engine.profile import Profile


def seat_spots(profile: Profile) -> tuple[str, ...]:
    """The antennas a seat needs for a profile: main, insurance, each side bet, progressive."""
    spots = ["main", "insurance", *profile.side_bets]
    if profile.progressive is not None:
        spots.append("progressive")
    return tuple(spots)
