"""The betting spots (antennas) a seat has for a profile."""

from __future__ import annotations

from firmware.engine.profile import Profile


def insurance_spot(hand: int | None) -> str:
    """The spot an insurance bet on initial hand ``hand`` (1-based; None: the only hand) is
    sensed on: ``insurance`` for the first, ``insurance_2`` for the second."""
    return "insurance" if hand in (None, 1) else f"insurance_{hand}"


def insurance_hand(spot: str) -> int | None:
    """The initial hand an insurance spot insures (1, 2, ...), or None for another spot."""
    if spot == "insurance":
        return 1
    prefix, _, n = spot.partition("_")
    # a seat's message names the spot: ASCII digits, and few (str.isdigit() passes "²", which
    # int() refuses, and int() refuses more than 4,300 digits): the dealer's step must not raise
    if prefix == "insurance" and n.isascii() and n.isdigit() and len(n) <= 2 and int(n) >= 2:
        return int(n)
    return None


def seat_spots(profile: Profile) -> tuple[str, ...]:
    """The antennas a seat needs for a profile: main, insurance (one per initial hand where
    each hand is insured on its own, e.g. `rws-blackjack-switch-v4 §3.9.1` "on either or
    both hands"), each side bet, progressive."""
    spots = ["main"]
    if profile.rules.insurance:
        spots += [insurance_spot(n) for n in range(1, profile.hands_per_box + 1)]
    else:
        spots.append("insurance")      # the antenna is there; chips on it are never a bet
    spots += list(profile.side_bets)
    if profile.progressive is not None:
        spots.append("progressive")
    return tuple(spots)
