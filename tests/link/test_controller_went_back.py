"""A jackpot controller that goes back: restored from an older copy of its database (a
backup, a standby that was behind), it confirms only through an older seq of a unit's
reports. The unit had deleted every report the newer controller confirmed, and it took the
lower mark silently (``seq <= confirmed``: nothing to do): the reports between the two marks
(progressive contributions, claims) were lost to the controller for good, its meter wrong,
and nobody was told.

A unit now keeps its newest confirmed reports (``KEEP_CONFIRMED``) and sends them again when
the controller's mark goes back below what it had confirmed; the controller books what it
lost and drops what it still holds as duplicates. Reports no longer kept are named in an
alarm, once the controller's mark has stayed below them for a grace period (a broker
restarted from its older persistence file repeats an older retained mark for a moment; the
controller's own mark follows)."""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time

from firmware.jackpot.service import JackpotService
from firmware.link import connect_bus, topics
from firmware.link.config import load_link_config
from firmware.link.outbox import Outbox

from .broker import Broker
from .helpers import controller, wait_until

UNIT = "table-1/seat-1"


def report(bus, rnd: int) -> None:
    bus.report("progressive_wager", {"amount": "5"}, key=f"{rnd}/progressive_wager", table="table-1",
               box=1, round=rnd)


def booked(path) -> dict[int, str]:
    db = sqlite3.connect(path)
    try:
        return dict(db.execute("SELECT seq, id FROM event WHERE unit = ?", (UNIT,)).fetchall())
    finally:
        db.close()


def six_confirmed(bus, pit) -> str:
    """Six reports acknowledged, then confirmed by a mark the test publishes: its topic."""
    for rnd in range(1, 7):
        report(bus, rnd)
    wait_until(bus.drained, 30, "six reports acknowledged")
    mark = topics.confirmed_topic(bus.link_id, UNIT)
    pit.publish_raw(mark, f'{{"unit": "{UNIT}", "through_seq": 6}}')
    wait_until(lambda: bus.outbox.stats()["confirmed"] == 6, 30, "confirmed through 6")
    return mark


def test_reports_confirmed_by_a_controller_that_went_back_are_sent_again_and_booked(tmp_path):
    b = Broker(tmp_path / "mosquitto").start()
    db_path = tmp_path / "jackpot.db"
    link = load_link_config({"broker": b.url})
    ctl = controller(db_path)
    service = JackpotService(ctl, link, tick=0.02).start()
    bus = connect_bus(b.url, UNIT, outbox_path=tmp_path / "seat" / "outbox.db")
    try:
        for rnd in range(1, 5):
            report(bus, rnd)
        wait_until(lambda: ctl.marks().get(UNIT) == 4, 30, "the first four reports confirmed")
        service.stop()
        ctl.close()
        shutil.copy(db_path, tmp_path / "backup.db")        # the controller's backup (closed: no WAL)

        ctl = controller(db_path)
        service = JackpotService(ctl, link, tick=0.02).start()
        for rnd in range(5, 11):
            report(bus, rnd)
        wait_until(lambda: ctl.marks().get(UNIT) == 10, 30, "ten reports confirmed")
        wait_until(lambda: bus.outbox.stats()["confirmed"] == 10, 30, "the unit's mark at 10")
        assert bus.outbox.pending() == []
        held = booked(db_path)
        service.stop()
        ctl.close()

        shutil.copy(tmp_path / "backup.db", db_path)        # restored from the backup
        ctl = controller(db_path)
        assert ctl.marks().get(UNIT) == 4
        service = JackpotService(ctl, link, tick=0.02).start()
        wait_until(lambda: ctl.marks().get(UNIT) == 10, 30, "the reports the controller lost, booked again")
        wait_until(lambda: bus.outbox.stats()["confirmed"] == 10, 30, "confirmed again")
        assert booked(db_path) == held                       # the same reports: ids and seqs
        assert ctl.counts["rejected"] == 0
        assert bus.controller_went_back == 1 and bus.outbox.pending() == []
    finally:
        bus.close()
        service.stop()
        ctl.close()
        b.stop()


def test_an_outbox_keeps_its_newest_confirmed_reports_and_reopens_them_for_a_lower_mark(tmp_path):
    outbox = Outbox(tmp_path / "outbox.db", UNIT, keep_confirmed=4)
    try:
        seqs = [outbox.put("t", "progressive_wager", {"amount": "5"}, key=f"{n}/w") for n in range(1, 11)]
        assert seqs == list(range(1, 11))
        ids = {p.seq: p.id for p in outbox.pending()}
        outbox.confirm_through(10)
        assert outbox.pending() == [] and outbox.kept() == 4

        went = outbox.reopen_after(3)                        # the controller holds only 1-3 now
        assert went is not None
        assert (went.through, went.confirmed, went.resent, went.lost) == (3, 10, 4, (4, 6))
        back = outbox.pending()
        assert [p.seq for p in back] == [7, 8, 9, 10] and all(ids[p.seq] == p.id for p in back)
        assert outbox.stats()["confirmed"] == 3 and outbox.kept() == 0
        assert outbox.put("t", "progressive_wager", {"amount": "5"}, key="8/w") is None   # keys stay known
        assert outbox.reopen_after(3) is None                # the same mark again: nothing more to do

        outbox.confirm_through(10)
        assert outbox.pending() == [] and outbox.kept() == 4
    finally:
        outbox.close()


def test_a_lower_mark_the_controller_corrects_raises_no_alarm(tmp_path):
    """An older retained mark (a broker restarted from its persistence file) sends the kept
    reports again (duplicates at the controller) and raises nothing when the controller's
    own mark comes back above those not kept within the grace."""
    b = Broker(tmp_path / "mosquitto").start()
    bus = connect_bus(b.url, UNIT, outbox=Outbox(tmp_path / "outbox.db", UNIT, keep_confirmed=2))
    pit = connect_bus(b.url, "table-1/pit")
    lost: list[dict] = []
    try:
        bus.lost_grace = 2.0
        bus.add_lost_listener(lost.append)
        mark = six_confirmed(bus, pit)
        pit.publish_raw(mark, f'{{"unit": "{UNIT}", "through_seq": 2}}')
        wait_until(lambda: bus.outbox.stats()["confirmed"] == 2, 30, "the lower mark taken")
        wait_until(lambda: bus.outbox.stats()["waiting"] == 0 and len(bus.outbox.pending()) == 2, 30,
                   "reports 5 and 6 (those kept) sent again")
        pit.publish_raw(mark, f'{{"unit": "{UNIT}", "through_seq": 6}}')     # within the grace
        wait_until(lambda: bus.outbox.stats()["confirmed"] == 6, 30, "confirmed through 6 again")
        time.sleep(2.5)
        assert lost == [] and bus.controller_went_back == 1
    finally:
        pit.close()
        bus.close()
        b.stop()


def test_reports_no_longer_kept_are_alarmed_once_the_lower_mark_stands(tmp_path):
    b = Broker(tmp_path / "mosquitto").start()
    outbox = Outbox(tmp_path / "outbox.db", UNIT, keep_confirmed=2)
    bus = connect_bus(b.url, UNIT, outbox=outbox)
    pit = connect_bus(b.url, "table-1/pit")
    lost: list[dict] = []
    called = threading.Event()
    try:
        bus.lost_grace = 0.5
        bus.add_lost_listener(lambda body: (lost.append(body), called.set()))
        mark = six_confirmed(bus, pit)
        pit.publish_raw(mark, f'{{"unit": "{UNIT}", "through_seq": 1}}')
        assert called.wait(10), "the reports the unit no longer keeps are alarmed"
        assert lost == [{"controller": 1, "confirmed": 6, "first": 2, "last": 4}]
        time.sleep(1.0)
        assert len(lost) == 1                                # once
    finally:
        pit.close()
        bus.close()
        b.stop()


def test_hostile_marks_reopen_nothing_and_stop_nothing(tmp_path):
    """Marks nobody's controller sends (nested 10,000 deep, NaN, 1e400, an integer of 400
    digits, negative, a boolean) are refused and counted; a repeated mark is nothing new;
    the outbox keeps its mark and its sender runs on."""
    b = Broker(tmp_path / "mosquitto").start()
    bus = connect_bus(b.url, UNIT, outbox=Outbox(tmp_path / "outbox.db", UNIT, keep_confirmed=2))
    pit = connect_bus(b.url, "table-1/pit")
    try:
        mark = six_confirmed(bus, pit)
        hostile = ["[" * 10_000 + "]" * 10_000, f'{{"unit": "{UNIT}", "through_seq": NaN}}',
                   f'{{"unit": "{UNIT}", "through_seq": 1e400}}', f'{{"unit": "{UNIT}", "through_seq": {"9" * 400}}}',
                   f'{{"unit": "{UNIT}", "through_seq": -3}}', f'{{"unit": "{UNIT}", "through_seq": true}}']
        for payload in hostile:
            pit.publish_raw(mark, payload)
        wait_until(lambda: bus.bad_marks >= len(hostile), 30, "every hostile mark refused")
        pit.publish_raw(mark, f'{{"unit": "{UNIT}", "through_seq": 6}}')                 # the same again
        report(bus, 7)
        wait_until(bus.drained, 30, "the next report sent: the sender runs on")
        assert bus.outbox.confirmed == 6 and bus.controller_went_back == 0 and bus.outbox.went_back is None
        assert bus.outbox.kept() == 2 and bus._sender is not None and bus._sender.is_alive()
    finally:
        pit.close()
        bus.close()
        b.stop()
