"""`betbox simulate`: rounds through Round.apply with the basic-strategy chart agree with the exact
figures of `betbox edge` within the 95% confidence interval; seeded runs are identical."""

from __future__ import annotations

import os
from statistics import NormalDist

import pytest

from firmware.cli import main
from firmware.commands.edge import compute
from firmware.engine.basic import house_edge
from firmware.engine.maingame import main_rules
from firmware.engine.profile import load_profile
from firmware.sim.montecarlo import Z95, run_chunks, summary


def exact_returns(name: str, side_bets: tuple[str, ...]) -> dict[str, float]:
    profile = load_profile(name)
    out = {"main": -house_edge(main_rules(profile, profile.default_decks))}
    odds = {b.bet: b for b in compute(name, None, None).side_bets}
    out.update({bet: -float(odds[bet].house_edge) for bet in side_bets})
    return out


def assert_within_ci(name: str, rounds: int, boxes: int, side_bets: tuple[str, ...],
                     z: float = Z95, workers: int = 1, every_round: bool = False) -> None:
    """Every bet's simulated return lies within its interval (95%, or widened to ``z``) of
    the exact figure."""
    exact = exact_returns(name, side_bets)
    profile = load_profile(name)
    tallies = run_chunks(profile, profile.default_decks, rounds, boxes, side_bets, 1, workers,
                         every_round=every_round)
    got = {r.bet: r for r in summary(tallies)}
    for bet, value in exact.items():
        r = got[bet]
        assert r.n == rounds * boxes
        assert r.within(value, z), (bet, r.mean, r.half_width * z / Z95, value)


def test_twenty_thousand_rounds_agree_with_the_exact_figures_within_the_ci():
    assert_within_ci("rws-blackjack", 20_000, 1, ("player_pair", "under_13", "over_13"))


def test_blackjack_switch_agrees_with_the_exact_figure_within_the_ci():
    """The switch is decided before the offer window's surrender: surrendering the 16 of T-6
    and 5-T against a ten instead of switching to 20 and 11 cost about 2% a hand."""
    assert_within_ci("rws-blackjack-switch", 20_000, 1, ())


def test_seeded_runs_are_identical_with_any_number_of_workers(capsys):
    argv = ["simulate", "--profile", "uk-4-deck", "--rounds", "6000", "--seed", "7",
            "--side-bets", "twenty_one_plus_three,top_3"]
    assert main(argv) == 0
    one, err = capsys.readouterr()
    assert "6000/6000 rounds" in err and "ETA" in err
    assert main([*argv, "--workers", "2"]) == 0
    two, _ = capsys.readouterr()
    assert one == two and one.startswith("uk-4-deck: 6000 rounds, 1 box(es), 4 decks, cut card at 75%")
    assert "top_3: return " in one and "main: return " in one
    assert main([*argv[:-2], "--seed", "8"]) == 0
    assert capsys.readouterr()[0] != one
    every = [*argv, "--boxes", "3", "--shuffle", "every-round"]
    assert main(every) == 0
    full_shoe = capsys.readouterr()[0]
    assert main([*every, "--workers", "2"]) == 0
    assert capsys.readouterr()[0] == full_shoe
    assert full_shoe.startswith("uk-4-deck: 6000 rounds, 3 box(es), 4 decks, a full shoe every round")


def test_a_side_bet_the_profile_does_not_offer_is_refused(capsys):
    assert main(["simulate", "--profile", "rws-blackjack", "--rounds", "10", "--side-bets", "top_3"]) == 2
    assert "--side-bets top_3: not offered by rws-blackjack" in capsys.readouterr()[1]
    assert main(["simulate", "--profile", "uk-4-deck", "--rounds", "10", "--side-bets", "top_3"]) == 2
    assert "--side-bets: top_3 needs twenty_one_plus_three" in capsys.readouterr()[1]


PROFILE_BETS = {
    "rws-blackjack": ("player_pair", "under_13", "over_13"),
    "rws-perfect-pairs": ("perfect_pairs",),
    "rws-blackjack-switch": (),
    "uk-4-deck": ("super_pairs", "twenty_one_plus_three", "top_3"),
    "my-classic": (),
}


#: Family-wise: the long test makes one comparison per bet per profile (12); each at 95% would
#: fail a correct simulator somewhere for about 46% of seeds (1 - 0.95**12). Bonferroni: each
#: interval at 1 - 1%/12, so all 12 together falsely fail at most 1% of seeds: z = 3.34
#: instead of 1.96, every interval 1.7 times as wide (the main game's half-width for 10**6
#: 7-box rounds ~0.15% at 95%, ~0.26% at z = 3.34).
COMPARISONS = sum(1 + len(bets) for bets in PROFILE_BETS.values())
LONG_Z = NormalDist().inv_cdf(1 - 0.01 / (2 * COMPARISONS))


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("BETBOX_LONG_SIMULATION"),
                    reason="10^6 7-box rounds per profile (minutes each with 2 workers): "
                           "set BETBOX_LONG_SIMULATION=1")
@pytest.mark.parametrize("name", sorted(PROFILE_BETS))
def test_a_million_rounds_agree_with_the_exact_figures(name):
    """10**6 rounds of 7 boxes (the table full, as the 2*10**4-round tests are not): the boxes
    of a round share the dealer's hand, so the interval is taken over rounds, not boxes
    (tests/sim/test_montecarlo.py). Every round from a full shoe, as the exact figures are:
    with the cut card, 10**6 7-box rounds of rws-blackjack measured under_13 at -9.916%
    against the full shoe's -10.067%, the cut-card effect (tests/sim/test_montecarlo.py),
    not an error. Workers: BETBOX_SIMULATION_WORKERS, default 2."""
    workers = int(os.environ.get("BETBOX_SIMULATION_WORKERS", "2"))
    assert_within_ci(name, 1_000_000, 7, PROFILE_BETS[name], z=LONG_Z, workers=workers, every_round=True)


@pytest.mark.parametrize("value, positions", [(",,,", "1, 2, 3, 4"), ("top_3,,twenty_one_plus_three", "2"),
                                              ("twenty_one_plus_three,", "2"), (" ,top_3", "1")])
def test_an_empty_side_bet_name_is_refused_naming_its_position(capsys, value, positions):
    """",,," was read as no side bets at all (and "a,,b" as "a,b"): a list with a hole in it is
    a mistake, said with where the hole is; the default "" stays no side bets."""
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "--profile", "uk-4-deck", "--rounds", "10", "--side-bets", value])
    err = capsys.readouterr()[1]
    assert exit_.value.code == 2
    assert f"argument --side-bets: {value!r}: empty name at position {positions}" in err or \
        f"argument --side-bets: {value!r}: empty names at positions {positions}" in err, err


def test_no_side_bets_is_still_the_default(capsys):
    assert main(["simulate", "--profile", "uk-4-deck", "--rounds", "10", "--side-bets", ""]) == 0
    assert "top_3" not in capsys.readouterr()[0]
