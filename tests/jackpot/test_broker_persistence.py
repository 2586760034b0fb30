"""The broker persists on a time basis (``autosave_interval``, as docs/mqtt/mosquitto.conf),
not after every message: a SIGKILLed broker loses what it queued since its last save, and
the seats' outboxes send it again (nothing is confirmed until the controller holds it), so
the controller's books still equal what the seats' outboxes held, each report once."""

from __future__ import annotations

import threading

from firmware.jackpot.controller import report
from firmware.jackpot.service import JackpotService
from firmware.link import connect_bus
from firmware.link.config import config_from_url
from tests.jackpot.test_jackpot_integration import all_confirmed, dealer, send
from tests.link.broker import Broker
from tests.link.helpers import Expected, check_accounting, controller, seat_script, send_dealer, wait_until


def test_a_broker_killed_mid_burst_before_its_autosave_loses_nothing_the_outboxes_hold(tmp_path):
    b = Broker(tmp_path / "mosquitto").start()
    db = tmp_path / "jackpot.db"
    ctl = controller(db)
    svc = JackpotService(ctl, config_from_url(b.url)).start()
    svc.stop()                                  # the controller is down: reports queue at the broker
    ctl.close()
    b.stop()                                    # a clean stop saves: the controller's session is on
    b.start()                                   # disk, as on a broker up longer than its interval
    saved = (b.dir / "mosquitto.db").stat()

    expected = Expected()
    units = [f"table-1/seat-{n}" for n in (1, 2, 3)]
    scripts, buses = {}, {}
    for i, unit in enumerate(units):
        scripts[unit], exp = seat_script(unit, 150, seed=300 + i, meter_hits=True)
        expected.add(exp)
        buses[unit] = connect_bus(b.url, unit, outbox_path=tmp_path / f"{i}.db")
    table_dealer = dealer(b.url, "table-1", tmp_path)
    send_dealer(table_dealer, {int(u[-1]): scripts[u] for u in units}, expected)
    threads = [threading.Thread(target=send, args=(buses[u], u, scripts[u])) for u in units]
    for th in threads:
        th.start()
    # mid-burst: the broker has acknowledged some of every seat's reports, not all
    wait_until(lambda: all(bus.outbox.sent_through() >= 20 for bus in buses.values()), 30,
               "the broker's first PUBACKs")
    # persisted on a time basis: none of what it acknowledged is on its disk yet
    now = (b.dir / "mosquitto.db").stat()
    assert (now.st_mtime_ns, now.st_size) == (saved.st_mtime_ns, saved.st_size)
    b.kill()
    for th in threads:
        th.join()
    everything = {bus.unit_id: {(p.seq, p.id) for p in bus.outbox.pending(limit=100000)}
                  for bus in [*buses.values(), table_dealer]}
    assert all(len(v) == expected.events[u] for u, v in everything.items())

    b.start()
    ctl = controller(db)
    svc = JackpotService(ctl, config_from_url(b.url)).start()
    wait_until(lambda: all_confirmed(ctl, expected), 90, "every report after the broker's restart")
    data = report(ctl.db)
    check_accounting(data, expected)
    held = {}
    for unit, seq, rid in ctl.db.execute("SELECT unit, seq, id FROM event"):
        held.setdefault(unit, set()).add((seq, rid))
    assert held == everything                   # the books: exactly what the outboxes held
    assert data["integrity"]["count"] == 0 and data["held"] == {"seat": 0, "dealer": 0}
    for u in units:
        assert data["units"][u]["missing_ranges"] == []
    # and the seats' outboxes are emptied by the controller's marks
    wait_until(lambda: all(bus.outbox.pending() == [] for bus in [*buses.values(), table_dealer]), 30,
               "the confirmation marks at every unit")
    for bus in [*buses.values(), table_dealer]:
        bus.close()
    svc.stop()
    ctl.close()
    b.stop()
