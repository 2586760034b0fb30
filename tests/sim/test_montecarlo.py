"""The simulator's parts around ``Round.apply``: its shoe, its decisions (the chart's, with what
the table allows), the shoe carried from round to round, and the interval over rounds."""

from __future__ import annotations

import math
import random

import pytest

from firmware.engine.basic import chart_for
from firmware.engine.cards import ALL_CARDS
from firmware.engine.events import Action, CardDrawn, Decision
from firmware.engine.maingame import main_rules
from firmware.engine.profile import load_profile
from firmware.engine.round import Round
from firmware.sim.montecarlo import Z95, play, play_rounds, summary
from firmware.sim.shoe import EventShoe, SimShoe


def test_the_event_shoe_deals_the_demo_shoes_order_across_shuffles():
    sim, events = SimShoe(6, random.Random("s")), EventShoe(6, random.Random("s"))
    for _ in range(3):
        assert [e.card for e in events.events] == sim.cards
        assert events.cut == int(len(sim.cards) * 0.75)
        sim.shuffle()
        events.shuffle()


def _replayed(state: Round) -> list[tuple[Round, object]]:
    """(the round just before, the event) for every event of a finished round."""
    now = Round.new(state.profile, decks=state.decks)
    out = []
    for event in state.history:
        out.append((now, event))
        now = now.apply(event)[0]
    return out


def _charts_turn(before: Round, number: int) -> Action:
    """What the simulator did before the playbook: the chart told what the table allows."""
    chart = chart_for(main_rules(before.profile, before.decks))
    box, hand = before.hand_in_play()
    up = before.dealer[0].value
    if before.profile.is_switch and before.why_not(Decision(number, Action.SWITCH)) is None:
        if chart.switch(*([c.value for c in h.cards] for h in box.hands), up):
            return Action.SWITCH
    legal = before.legal_decisions(number)
    action = chart.action([c.value for c in hand.cards], up, can_double=legal[Action.DOUBLE] is None,
                          can_split=legal[Action.SPLIT] is None, can_surrender=False)
    if legal[action] is not None:
        action = Action.STAND if legal[Action.STAND] is None else Action.HIT
    return action


def _charts_surrenders(opened: Round) -> set[tuple[int, int | None]]:
    """The surrenders the chart wants and the table allows when the offers open."""
    chart = chart_for(main_rules(opened.profile, opened.decks))
    up = opened.dealer[0].value
    families = opened.profile.hands_per_box
    wanted = set()
    for box in opened.boxes:
        if opened.profile.is_switch and chart.switch(*([c.value for c in h.cards] for h in box.hands), up):
            continue
        for family in range(families):
            hand = next(h for h in box.hands if h.family == family)
            which = family + 1 if families > 1 else None
            if (chart.action([c.value for c in hand.cards], up) is Action.SURRENDER
                    and opened.why_not(Decision(box.number, Action.SURRENDER, None, which)) is None):
                wanted.add((box.number, which))
    return wanted


@pytest.mark.parametrize("name, boxes, side", [
    ("rws-blackjack", 7, ("player_pair",)), ("my-classic", 7, ()),
    ("rws-blackjack-switch", 3, ()), ("uk-4-deck", 5, ("twenty_one_plus_three",))])
def test_every_decision_is_the_charts_with_what_the_table_allows(name, boxes, side):
    """The playbook's tables and the plays the table refuses (learnt from ``apply``) make the
    same decisions as asking ``Chart.action`` with ``Round.legal_decisions`` every time."""
    profile = load_profile(name)
    seen = set()
    for state in play_rounds(profile, profile.default_decks, 150, boxes, side, 5, 0):
        opened = None
        surrendered = set()
        for before, event in _replayed(state):
            if opened is None and before.offers_open:
                opened = before
            if isinstance(event, Decision) and event.action is Action.SURRENDER:
                surrendered.add((event.box, event.hand))
            elif isinstance(event, Decision):
                assert event.action is _charts_turn(before, event.box), (state.history, event)
                seen.add(event.action)
        if opened is not None:
            assert surrendered == _charts_surrenders(opened), state.history
    assert {Action.HIT, Action.STAND, Action.DOUBLE} <= seen


def test_each_round_starts_from_what_the_last_left_in_the_shoe():
    profile = load_profile("uk-4-deck")
    full = Round.new(profile).shoe
    since: list = []            # every card out of the shoe since its shuffle
    shuffles = 0
    for state in play_rounds(profile, 4, 400, 7, (), 3, 0):
        cards = [e.card for e in state.history if isinstance(e, CardDrawn)]
        if len(full) - len(since) - len(cards) != len(state.shoe):
            assert len(since) >= int(len(full) * 0.75)     # reshuffled only at the cut card
            since, shuffles = [], shuffles + 1
        since += cards
        assert state.shoe == full.without(since)
    assert shuffles >= 10


def _naive_half_width(counts: dict[str, int]) -> float:
    """The interval taking every box as an independent sample."""
    n = sum(counts.values())
    mean = sum(float(k) * c for k, c in counts.items()) / n
    var = sum(c * (float(k) - mean) ** 2 for k, c in counts.items()) / n
    return Z95 * math.sqrt(var / n)


def test_the_interval_is_over_rounds_because_a_rounds_boxes_share_the_dealer():
    """A dealer's bust pays every box of the round: 7 boxes are far from 7 independent hands,
    and an interval over boxes would be too narrow by about half (a correct simulator would
    fail the long test). Over rounds it is wider; with one box the two are the same."""
    profile = load_profile("rws-blackjack")
    seven = {r.bet: r for r in summary([play(profile, 6, 2000, 7, ("player_pair",), 2, 0)])}
    assert seven["main"].half_width > 1.5 * _naive_half_width(seven["main"].results)
    assert seven["main"].n == 14000
    one = {r.bet: r for r in summary([play(profile, 6, 2000, 1, ("player_pair",), 2, 0)])}
    for bet in ("main", "player_pair"):
        assert one[bet].half_width == pytest.approx(_naive_half_width(one[bet].results), rel=1e-9)


def _start(state: Round) -> list[int]:
    """The shoe the round started from: what it left plus what it drew."""
    counts = list(state.shoe.counts)
    for event in state.history:
        if isinstance(event, CardDrawn):
            counts[ALL_CARDS.index(event.card)] += 1
    return counts


def _under_13(counts: list[int]) -> float:
    """under_13's exact return for a box's two cards from this shoe (§3.13.2: Aces 1)."""
    v = [0] * 11
    for card, n in zip(ALL_CARDS, counts, strict=True):
        v[card.value] += n
    total = sum(v)
    under = sum(v[i] * (v[j] - (i == j)) for i in range(1, 11) for j in range(1, 11) if i + j < 13)
    return 2 * under / (total * (total - 1)) - 1


def test_the_cut_card_moves_under_13_and_a_full_shoe_every_round_does_not():
    """With a cut card a shoe yields more rounds when its first rounds take few cards, so
    rounds are dealt from small-card-rich shoes more often than a full shoe says: under_13's
    mean exact return over the rounds played is above the full shoe's (the 10**6-round check
    measured +0.15%). Shuffled every round, each round starts from the full shoe."""
    profile = load_profile("rws-blackjack")
    full = list(Round.new(profile).shoe.counts)
    cut = [_under_13(_start(s)) for s in play_rounds(profile, 6, 5000, 7, (), 1, 0)]
    assert sum(cut) / len(cut) - _under_13(full) > 0.0005
    for state in play_rounds(profile, 6, 300, 7, (), 1, 0, every_round=True):
        assert _start(state) == full
