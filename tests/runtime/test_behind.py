"""A unit told it is behind the jackpot controller's confirmed mark (restarted from an
older copy of its state; issue #11.5) raises an alarm naming itself, the seqs and what to
do, refuses bets (a seat offers nothing, the dealer opens no round), shows the condition
``behind_confirmed`` on the seat's screen, and stays so across a restart (journalled)."""

from __future__ import annotations

from pathlib import Path

from firmware.engine.profile import load_profile
from firmware.runtime.unit import BEHIND, CHECKPOINT_FORMAT
from firmware.sim import chipset
from firmware.sim.driver import TableDriver
from firmware.sim.table import InProcessTable, TableSpec, seat_spots
from tests.tables import boxes_with_a_bet_on


def driver(state_dir: Path, boxes: int = 2) -> TableDriver:
    spec = TableSpec("t", load_profile("rws-blackjack-switch"), seed=5, state_dir=state_dir, boxes=boxes)
    d = TableDriver(InProcessTable(spec, chipset.registry(spec.boxes, len(seat_spots(spec.profile)))), spec.seed)
    d.boot()
    return d



def test_a_seat_behind_its_confirmed_mark_alarms_and_refuses_bets(tmp_path):
    d = driver(tmp_path)
    t = d.table
    try:
        d.play_round()
        seat = t.seats[1]
        assert seat.view.conditions == ()
        assert not seat.step(BEHIND, {"outbox_seq": 9, "confirmed": 9})      # not behind: refused
        assert seat.rejected == 1 and seat.behind is None
        assert seat.step(BEHIND, {"outbox_seq": 7, "confirmed": 12})
        assert not seat.step(BEHIND, {"outbox_seq": 7, "confirmed": 12})     # told again: nothing new
        alarm = [a for a in seat.alarms if a["alarm"] == "behind_confirmed"]
        assert len(alarm) == 1 and (alarm[0]["outbox_seq"], alarm[0]["confirmed"]) == (7, 12)
        assert "t/seat-1" in alarm[0]["detail"] and "seq 7" in alarm[0]["detail"] and "seq 12" in alarm[0]["detail"]
        assert "Restore" in alarm[0]["detail"]
        seat.after_step()
        assert seat.view.conditions == ("behind_confirmed",)
        for _ in range(3):
            assert 1 not in boxes_with_a_bet_on(d, 1)      # chips down: not taken
        again = t.restart_seat(1)
        assert again.behind == {"outbox_seq": 7, "confirmed": 12}
        assert again.view.conditions == ("behind_confirmed",)
    finally:
        t.close()


def test_a_dealer_behind_its_confirmed_mark_opens_no_round(tmp_path):
    d = driver(tmp_path)
    t = d.table
    try:
        d.play_round()
        n = t.dealer.round_no
        assert t.dealer.step(BEHIND, {"outbox_seq": 3, "confirmed": 5})
        t.console.press("open_bets")
        t.settle()
        assert t.dealer.round_no == n and t.dealer.phase == "idle"
        assert "behind its confirmed mark" in t.dealer.refusals[-1]["reason"]
        assert [a["alarm"] for a in t.dealer.alarms][-1] == "behind_confirmed"
    finally:
        t.close()


def test_a_format_2_checkpoint_still_reads(tmp_path):
    d = driver(tmp_path)
    t = d.table
    try:
        d.play_round()
        for unit in (t.dealer, t.seats[1]):
            data = unit.checkpoint()
            assert data["format"] == CHECKPOINT_FORMAT
            new = {"behind", "missed_rounds", "past_rounds", "table_faults"} if unit is t.dealer else \
                {"behind", "missed_rounds"}
            old = {**data, "format": 2, "state": {k: v for k, v in data["state"].items() if k not in new}}
            unit.restore(old)
            assert unit.behind is None
    finally:
        t.close()


def test_a_seat_whose_journal_ends_below_what_the_dealer_heard_is_behind(tmp_path):
    """The dealer's catch-up says the highest seq it heard from the seat; a seat restored
    from an older copy of its journal finds it past its own newest message."""
    import shutil

    d = driver(tmp_path)
    t = d.table
    try:
        d.play_round()
        t.stop_seat(1)
        shutil.copytree(tmp_path / "seat-1", tmp_path / "seat-1.old")
        seat = t.restart_seat(1)
        for _ in range(2):
            d.play_round()
        assert seat.behind is None
        t.stop_seat(1)
        shutil.rmtree(tmp_path / "seat-1")
        shutil.copytree(tmp_path / "seat-1.old", tmp_path / "seat-1")
        seat = t.restart_seat(1)
        assert seat.behind is not None and seat.behind["heard"] > seat.behind["unit_seq"]
        alarm = [a for a in seat.alarms if a["alarm"] == "behind_confirmed"]
        assert len(alarm) == 1 and "dealer has heard" in alarm[0]["detail"]
        assert seat.view.conditions == ("behind_confirmed",)
        d.play_round()
        assert 1 not in {b.number for b in d.rounds[-1].boxes}
        # a seat restarted from its own newest journal is not behind
        t.stop_seat(2)
        assert t.restart_seat(2).behind is None
    finally:
        t.close()


def restart_dealer(t: InProcessTable, restore: Path | None = None):
    """Power the dealer off and on again (``restore``: its state directory replaced by that
    copy first)."""
    import shutil

    old = t.dealer
    t.bus.unsubscribe(old.unit_id)
    old.journal.close()
    if restore is not None:
        shutil.rmtree(old.journal.path.parent)
        shutil.copytree(restore, old.journal.path.parent)
    t.dealer = t._make_dealer()
    t.shoe.start(t.dealer.post)
    t.console.start(t.dealer.post)
    t.dealer.recover()
    t.dealer.start()
    t.settle()
    return t.dealer


def older_dealer_copy(tmp_path: Path) -> TableDriver:
    """A table that played a round, copied the dealer's state directory (``dealer.old``),
    then played two more: the copy is behind what the seats heard."""
    import shutil

    d = driver(tmp_path)
    d.play_round()
    shutil.copytree(tmp_path / "dealer", tmp_path / "dealer.old")
    for _ in range(2):
        d.play_round()
    return d


def test_a_dealer_restored_from_an_older_copy_is_behind_what_its_seats_heard(tmp_path):
    """A dealer restarted from an older copy of its journal numbers its stream again from
    where the copy ends: its seats drop those messages as heard already (its dealer_boot
    too), so it dealt rounds nobody took, silently. A seat's hello says the last stream
    message it holds: past the dealer's own, the dealer is behind."""
    import shutil

    d = driver(tmp_path)
    t = d.table
    try:
        d.play_round()
        restart_dealer(t)
        assert t.dealer.behind is None                   # restarted from its own journal
        shutil.copytree(tmp_path / "dealer", tmp_path / "dealer.old")
        for _ in range(2):
            d.play_round()
        heard = t.seats[1].last_stream
        dealer = restart_dealer(t, tmp_path / "dealer.old")
        assert dealer.stream_seq < heard
        assert dealer.behind is not None and dealer.behind["seat_heard"] == heard
        assert dealer.behind["stream_seq"] < heard
        alarm = [a for a in dealer.alarms if a["alarm"] == "behind_confirmed"]
        assert len(alarm) == 1 and "t/dealer" in alarm[0]["detail"] and "Restore" in alarm[0]["detail"]
        # both seats' hellos said so (one seat's word alone is a stream_claimed pit call)
        assert "box" not in alarm[0] and "credentials" not in alarm[0]["detail"]
        assert [a["alarm"] for a in dealer.alarms].count("stream_claimed") == 1
        n = dealer.round_no
        t.console.press("open_bets")
        t.settle()
        assert dealer.round_no == n and "behind" in dealer.refusals[-1]["reason"]
        assert restart_dealer(t).behind is not None      # journalled: it stays so
    finally:
        t.close()


def test_reports_a_controller_lost_are_alarmed_and_play_goes_on(tmp_path):
    """The jackpot controller went back (restored from an older copy) below reports this unit
    no longer keeps (the link sent again those it kept): an alarm naming the seqs and what
    to do, journalled (a restart recovers it); the unit is not behind: bets are taken."""
    from firmware.runtime.unit import LOST

    d = driver(tmp_path)
    t = d.table
    try:
        d.play_round()
        seat = t.seats[1]
        for bad in ({"controller": 5, "first": 4, "last": 6, "confirmed": 9},       # first not after it
                    {"controller": 3, "first": 4, "last": 10, "confirmed": 9},      # past what was confirmed
                    {"controller": 3, "first": 4, "last": 6},                       # a key missing
                    {"controller": True, "first": 4, "last": 6, "confirmed": 9}):
            assert not seat.step(LOST, bad)
        assert seat.rejected == 4
        lost = {"controller": 3, "first": 4, "last": 6, "confirmed": 9}
        assert seat.step(LOST, lost)
        alarm = [a for a in seat.alarms if a["alarm"] == LOST]
        assert len(alarm) == 1 and {k: alarm[0][k] for k in lost} == lost
        assert "seq 3" in alarm[0]["detail"] and "4-6" in alarm[0]["detail"] and "reconciles" in alarm[0]["detail"]
        assert seat.behind is None
        assert 1 in boxes_with_a_bet_on(d, 1)      # bets still taken
        again = t.restart_seat(1)
        assert [a for a in again.alarms if a["alarm"] == LOST] == alarm
        assert LOST in t.dealer.pit_calls                   # the seat's alarm calls the pit
        assert t.dealer.step(LOST, lost)
        assert [a["alarm"] for a in t.dealer.alarms][-1] == LOST and t.dealer.pit_calls[LOST] == 2
    finally:
        t.close()


def test_one_seats_word_does_not_stop_the_table(tmp_path):
    """With one seat's credentials a hello saying it heard more of the dealer's stream than
    the dealer holds flagged the dealer behind: no round opened until the pit reconciled it,
    and the same hello again stopped the table again. One seat's word is a pit call naming the
    seat; the table plays on; a second seat saying so (a dealer really restored) flags it."""
    from firmware.runtime.bus import Message, up_topic

    d = driver(tmp_path, boxes=3)
    t = d.table
    try:
        d.play_round()
        dealer = t.dealer
        head = dealer.stream_seq

        def hello(box: int, heard: int) -> None:
            seat, now = t.seats[box], t.dealer
            m = Message(up_topic("t", box), "hello", seat.unit_id, seat.seq + 1000 + heard,
                        {"box": box, "round": now.round_no, "phase": "over", "bets": None,
                         "last_stream_seq": heard})
            assert now.step("msg", m.to_dict())
            t.settle()

        hello(1, head + 50)                                  # forged: one seat's word
        assert dealer.behind is None and dealer.stream_claims == {1: head + 50}
        alarm = [a for a in dealer.alarms if a["alarm"] == "stream_claimed"]
        assert len(alarm) == 1 and alarm[0]["box"] == 1 and "credentials are misused" in alarm[0]["detail"]
        assert dealer.pit_calls.get("stream_claimed") == 1
        assert 2 in boxes_with_a_bet_on(d, 2)                # the table plays on
        hello(1, head + 60)                                  # said again: no second alarm
        assert [a["alarm"] for a in dealer.alarms].count("stream_claimed") == 1
        again = restart_dealer(t)
        assert again.stream_claims == {1: head + 60} and again.behind is None      # journalled
        hello(3, again.stream_seq + 5)                       # a second seat says so: behind
        assert again.behind == {"stream_seq": again.stream_seq, "seat_heard": head + 60}
    finally:
        t.close()
