"""MockCardShoe's counter is the shoe's own: it goes on across a restart (of the shoe or
of the host) and starts again only at a shuffle."""

from __future__ import annotations

import pytest

from hal.events import CardDrawn, ShoeSignal, ShoeSignalKind
from hal.mock import MockCardShoe


def started(shoe: MockCardShoe) -> list:
    got: list = []
    shoe.start(got.append)
    return got


def test_a_shoe_made_after_a_restart_goes_on_from_its_count():
    shoe = MockCardShoe("shoe", counter=41)
    got = started(shoe)
    shoe.deal("AS")
    assert [e.counter for e in got if isinstance(e, CardDrawn)] == [42]


def test_a_restart_of_the_shoe_keeps_its_counter_and_a_shuffle_starts_it_again():
    shoe = MockCardShoe("shoe")
    got = started(shoe)
    shoe.deal_many("AS KD")
    shoe.restart()
    shoe.deal("5C")
    shoe.shuffle()
    shoe.deal("6C")
    assert [e.counter for e in got if isinstance(e, CardDrawn)] == [1, 2, 3, 1]
    assert any(isinstance(e, ShoeSignal) and e.kind == ShoeSignalKind.SHUFFLED for e in got)


@pytest.mark.parametrize("bad", [-1, "3", 2.0, True])
def test_a_counter_that_is_not_a_count_is_refused(bad):
    with pytest.raises(ValueError, match="shoe counter"):
        MockCardShoe("shoe", counter=bad)
