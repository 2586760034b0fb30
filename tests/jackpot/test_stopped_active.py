"""The active controller hung *outside* a transaction (#16 item 4): a ``betbox run``
controller stopped with SIGSTOP in the middle of a burst keeps its PostgreSQL sessions (the
kernel still answers for its sockets, so neither TCP keepalives nor ``tcp_user_timeout``
end them) and with them the advisory lock. Its lease (renewed every
:data:`~firmware.jackpot.service.LEASE_CHECK` from the lock's session) runs out after
:data:`~firmware.jackpot.pg.LEASE`; the waiting controller ends the stopped one's sessions
and takes over. Continued, the stopped one finds its sessions gone, steps down without
committing or acknowledging anything, and waits as the standby; the books are exact.

Real processes, a real PostgreSQL and a real mosquitto (the harness of test_hot_standby);
the takeover time is printed (``-s``), not asserted."""

from __future__ import annotations

import os
import signal
import threading
import time

from firmware.link import connect_bus
from tests.jackpot.test_hot_standby import _pair, _states
from tests.jackpot.test_jackpot_integration import dealer, send
from tests.link.helpers import Expected, check_accounting, seat_script, send_dealer, wait_until


def test_a_stopped_active_controller_loses_its_lease_the_standby_takes_over_and_the_stopped_one_steps_down(
        own_broker, postgres, tmp_path):
    broker = own_broker
    ctls, a, b, sniffer = _pair(broker, postgres, tmp_path)
    stopped = False
    try:
        expected = Expected()
        units = [f"table-2/seat-{n}" for n in (1, 2)]
        scripts, buses = {}, {}
        for i, unit in enumerate(units):
            scripts[unit], exp = seat_script(unit, 120, seed=700 + i, meter_hits=True)
            expected.add(exp)
            buses[unit] = connect_bus(broker.url, unit, outbox_path=tmp_path / f"{i}.db")
        table_dealer = dealer(broker.url, "table-2", tmp_path)
        send_dealer(table_dealer, {int(u[-1]): scripts[u] for u in units}, expected)
        threads = [threading.Thread(target=send, args=(buses[u], u, scripts[u])) for u in units]
        for th in threads:
            th.start()
        wait_until(lambda: ctls.events() > 100, 60, "the burst under way", step=0.005)
        epoch = ctls.epoch()
        seen = len(sniffer.messages)
        os.kill(a.pid, signal.SIGSTOP)
        stopped, at = True, time.monotonic()
        wait_until(lambda: ctls.active_pid() == b.pid, 30, "the standby active while a is stopped", step=0.01)
        took = time.monotonic() - at
        assert ctls.epoch() == epoch + 1
        wait_until(lambda: "online" in _states(sniffer, seen), 30, "the standby online")
        for th in threads:
            th.join()
        wait_until(lambda: ctls.confirmed(expected), 90, "every report confirmed by the standby")
        events = ctls.events()
        os.kill(a.pid, signal.SIGCONT)
        stopped = False
        # continued: its sessions are gone; it steps down and waits as the standby again
        wait_until(lambda: ctls.log("a").count("standby") >= 1 and "stepping down" in ctls.log("a"), 30,
                   "the stopped controller stepping down")
        assert a.poll() is None and ctls.active_pid() == b.pid and ctls.epoch() == epoch + 1
        assert "ACTIVE" not in ctls.log("a").split("stepping down", 1)[1]
        check_accounting(ctls.report(), expected)
        assert ctls.events() == events
        # the seats see one controller: b says online again after anything a or its will said
        wait_until(lambda: _states(sniffer)[-1] == "online", 10, "the controller online")
        print(f"\nstopped active controller: the standby active {took * 1000:.0f} ms after the SIGSTOP")
        for bus in [*buses.values(), table_dealer]:
            bus.close()
    finally:
        if stopped:
            os.kill(a.pid, signal.SIGCONT)
        sniffer.close()
        ctls.close()
