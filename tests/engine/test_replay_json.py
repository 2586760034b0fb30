"""Events round-trip through ``event_to_dict`` / ``event_from_dict`` and JSON, and a replay
of the decoded record settles identically (DESIGN 'Records': every round reproducible from
its record; the journal stores events as JSON)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware.engine.cards import ALL_CARDS
from firmware.engine.events import (
    Action,
    BetsClosed,
    CardDrawn,
    Decision,
    VoidRound,
    WalkedAway,
    event_from_dict,
    event_to_dict,
)
from firmware.engine.round import Round, replay
from firmware.engine.settlement import settlement

from .test_properties import PROFILE_NAMES, PROFILES, SETTINGS, play, tables


def through_json(event):
    data = event_to_dict(event)
    text = json.dumps(data)
    return event_from_dict(json.loads(text))


@pytest.mark.parametrize("name", PROFILE_NAMES)
@settings(SETTINGS, max_examples=100)
@given(data=st.data())
def test_a_round_record_survives_json_and_replays_identically(name, data):
    profile = PROFILES[name]
    table = data.draw(tables(profile), label="table")
    rnd = data.draw(st.randoms(use_true_random=True), label="rnd")
    played = play(table, rnd)
    record = played.state.history
    text = json.dumps([event_to_dict(e) for e in record])
    decoded = [event_from_dict(d) for d in json.loads(text)]
    assert decoded == record
    for event, back in zip(record, decoded, strict=True):
        assert type(back) is type(event)
    state, outcomes = replay(profile, decoded, **table.new_kwargs())
    assert settlement(state) == settlement(played.state)
    assert outcomes == played.outcomes
    assert json.loads(json.dumps(settlement(state))) == settlement(state)


amounts = st.one_of(
    st.integers(0, 10**6).map(Fraction),
    st.integers(1, 10**8).map(lambda n: Fraction(n, 100)),     # cents
    st.integers(1, 10**6).map(lambda n: Fraction(n, 200)),     # half cents: half an odd-cent stake
)
bet_names = st.sampled_from(["main", "player_pair", "under_13", "over_13", "perfect_pairs",
                             "super_pairs", "twenty_one_plus_three", "top_3", "progressive"])
events = st.one_of(
    st.builds(lambda w: BetsClosed.of(w),
              st.dictionaries(st.integers(1, 7), st.dictionaries(bet_names, amounts, max_size=4),
                              max_size=7)),
    st.builds(CardDrawn, st.sampled_from(ALL_CARDS)),
    st.builds(Decision, st.integers(1, 7), st.sampled_from(list(Action)),
              st.none() | amounts, st.none() | st.integers(1, 2)),
    st.builds(WalkedAway, st.integers(1, 7)),
    st.builds(VoidRound, st.sampled_from(["interruption", "foreign_card", "insufficient_cards"])
              | st.text(max_size=40)),
)


@settings(SETTINGS, max_examples=300)
@given(events)
def test_every_event_round_trips_through_json(event):
    assert through_json(event) == event


@pytest.mark.parametrize("text", ["1", "12.5", "0.01", "1234567.89", "0.005"])
def test_amounts_come_back_exactly(text):
    amount = Fraction(text)
    d = Decision(3, Action.DOUBLE, amount)
    back = through_json(d)
    assert back.amount == amount and isinstance(back.amount, Fraction)


def test_malformed_records_are_refused_with_a_reason():
    for bad in ({"type": "card", "card": "ZZ"}, {"type": "decision", "box": 1, "action": "fold"},
                {"type": "bets_closed"}, {"type": "teleport"}, {"type": "walked_away"}):
        with pytest.raises(ValueError):
            event_from_dict(bad)


@pytest.mark.parametrize("bad,says", [
    ({"type": "decision", "box": 1.9, "action": "hit"}, "box 1.9 is not a box number"),     # not box 1
    ({"type": "decision", "box": True, "action": "hit"}, "box True is not a box number"),
    ({"type": "decision", "box": "1_0", "action": "hit"}, "box '1_0' is not a box number"),  # not box 10
    ({"type": "decision", "box": 2, "action": "hit", "hand": True}, "hand True is not a hand number"),
    ({"type": "decision", "box": 2, "action": "hit", "hand": "2"}, "hand '2' is not a hand number"),
    ({"type": "walked_away", "box": 3.0}, "box 3.0 is not a box number"),
    ({"type": "bets_closed", "wagers": {"true": {"main": 10}}}, "box 'true' is not a box number"),
    ({"type": "bets_closed", "wagers": {" 2": {"main": 10}}}, "box ' 2' is not a box number"),
    ({"type": "decision", "box": 2, "action": "double", "amount": True}, "True is not an amount"),
    ({"type": "bets_closed", "wagers": {"9" * 5000: {"main": 10}}}, r"box '9+\.\.\.9+' is not a box number"),
])
def test_a_recorded_number_is_read_as_written_or_refused_not_made_one(bad, says):
    """A round file (``betbox settle``, a replay) is read strictly: int() would make True box
    1, 1.9 box 1 and "1_0" box 10. A hand number in a record is an int, never text."""
    with pytest.raises(ValueError, match=says) as err:
        event_from_dict(bad)
    assert len(str(err.value)) < 300                    # the value named, not printed whole
    good = event_from_dict({"type": "bets_closed", "wagers": {"2": {"main": "10"}, "10": {"main": 5}}})
    assert good == BetsClosed.of({2: {"main": 10}, 10: {"main": 5}})


@pytest.mark.parametrize("make,says", [
    (lambda: CardDrawn("AS"), "a card drawn is a Card"),                            # text, not a Card
    (lambda: Decision(True, Action.HIT), "a decision's box is a whole number, not True"),
    (lambda: Decision("1", Action.HIT), "a decision's box is a whole number, not '1'"),
    (lambda: Decision(1, Action.DOUBLE, True), "a decision's amount is a Fraction or a whole number, not True"),
    (lambda: Decision(1, Action.DOUBLE, 10.5), "a decision's amount is a Fraction or a whole number, not 10.5"),
    (lambda: Decision(1, Action.SURRENDER, None, True), "a decision's hand is a whole number, not True"),
    (lambda: Decision(1, "fold"), "'fold' is not a valid Action"),
    (lambda: WalkedAway(True), "a walked-away box is a whole number, not True"),
])
def test_an_event_made_by_code_with_what_the_engine_would_misread_is_refused_when_made(make, says):
    """Events made in code (a simulator, a script, a test) are checked when made: True
    equals 1, so the engine would take it for box 1, hand 1 or a wager of 1, and text for a
    card fails deep inside ``apply``. An action's text and a whole int amount are made the
    Action and the Fraction they name."""
    with pytest.raises((TypeError, ValueError), match=says):
        make()
    made = Decision(2, "double", 10)                    # type: ignore[arg-type]
    assert made == Decision(2, Action.DOUBLE, Fraction(10))
    assert type(made.action) is Action and type(made.amount) is Fraction


def test_a_recorded_round_replays_from_its_json_journal():
    """A fixed rws-blackjack round: split, double, insurance; journal -> JSON -> replay."""
    profile = PROFILES["rws-blackjack"]
    journal = json.dumps([
        {"type": "bets_closed", "wagers": {"1": {"main": 10, "player_pair": 5}, "4": {"main": 25}}},
        {"type": "card", "card": "8S"}, {"type": "card", "card": "9H"},
        {"type": "card", "card": "AD"},
        {"type": "card", "card": "8D"}, {"type": "card", "card": "9C"},
        {"type": "decision", "box": 4, "action": "insurance", "amount": 12.5},
        {"type": "decision", "box": 1, "action": "split"},
        {"type": "card", "card": "3C"},
        {"type": "decision", "box": 1, "action": "double", "amount": 7.5},
        {"type": "card", "card": "TS"},
        {"type": "card", "card": "KH"},
        {"type": "decision", "box": 1, "action": "stand"},
        {"type": "decision", "box": 4, "action": "stand"},
        {"type": "card", "card": "6S"},                            # soft 17: the dealer stands
    ])
    record = [event_from_dict(d) for d in json.loads(journal)]
    state, _ = replay(profile, record)
    s = settlement(state)
    assert s["complete"] and not s["void"]
    assert s["dealer"]["cards"] == ["AD", "6S"] and s["dealer"]["total"] == 17   # §3.23
    box1, box4 = s["boxes"]["1"], s["boxes"]["4"]
    assert box1["bets"]["player_pair"] == 55                       # §4.1.1 pair 11 to 1
    assert [h["total"] for h in box1["hands"]] == [21, 18]
    assert box1["hands"][0]["doubled"] == 7.5
    assert box1["bets"]["main"] == 17.5 + 10                        # 21 beats 17, 18 beats 17
    assert box4["bets"] == {"main": 25, "insurance": -12.5}         # §3.14.2 b insurance loses
    again, _ = replay(profile, [event_from_dict(event_to_dict(e)) for e in state.history])
    assert settlement(again) == s


def test_an_accepted_event_can_always_be_journalled():
    """events.py: 'Every event round-trips ... so a round can be journalled and replayed
    exactly'. The engine takes insurance of 1/3 on a 10 bet (<= half, §3.14.2 a), and
    event_to_dict writes it as "1/3", which event_from_dict refuses."""
    profile = PROFILES["rws-blackjack"]
    state = Round.new(profile)
    for e in [BetsClosed.of({1: {"main": 10}}), CardDrawn(ALL_CARDS[4]), CardDrawn(ALL_CARDS[0]),
              CardDrawn(ALL_CARDS[5])]:
        state, _ = state.apply(e)
    d = Decision(1, Action.INSURANCE, Fraction(1, 3))
    assert "not a whole number of cents" in state.why_not(d)
    good = Decision(1, Action.INSURANCE, Fraction(5, 2))
    assert state.why_not(good) is None and through_json(good) == good
