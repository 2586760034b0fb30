"""`betbox demo --headless --broker`: whole tables of units, each unit its own MQTT client on
a real mosquitto, the controller served separately (`betbox jackpot serve`); the
controller's accounting equals the sum of the seats' journals to the cent."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

from firmware.cli import main
from firmware.jackpot.controller import report
from firmware.jackpot.store import connect
from firmware.link.outbox import Outbox

from .helpers import POOL, Sniffer, wait_until
from .schema import validate_all
from .test_runtime_on_link import journal_totals
from .units import ROOT


def test_the_demo_on_a_broker_reports_to_a_separate_controller_exactly(broker, tmp_path, capsys):
    db = tmp_path / "jackpot.db"
    served = subprocess.Popen([sys.executable, "-m", "firmware", "jackpot", "serve", "--broker", broker.url,
                               "--db", str(db), "--link", "demo"], cwd=ROOT)
    sniffer = Sniffer(broker.url)
    try:
        wait_until(lambda: any(t == "betbox/v1/jackpot/demo/status" and json.loads(p)["state"] == "online"
                               for t, p, _ in list(sniffer.messages) if p), 30, "the controller online")
        state = tmp_path / "demo"
        assert main(["demo", "--headless", "--broker", broker.url, "--link", "demo", "--rounds", "3",
                     "--tables", "2", "--seed", "5", "--profile", "rws-blackjack-switch",
                     "--state-dir", str(state), "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["rounds"] == 6
        progressive = out["progressive"]
        assert progressive["reports"] > 0 and progressive["at_broker"] == progressive["reports"]
        outboxes = {f"table-{t}/seat-{b}": state / f"table-{t}" / f"seat-{b}" / "outbox.db"
                    for t in (1, 2) for b in range(1, 8)}
        # the dealers' alarms and round records, which the controller books the seats' reports by
        outboxes.update({f"table-{t}/dealer": state / f"table-{t}" / "dealer" / "outbox.db" for t in (1, 2)})

        def last_seqs():
            seqs = {}
            for unit, path in outboxes.items():
                o = Outbox(path, unit)
                seqs[unit] = o.last_seq
                o.close()
            return seqs
        sent = last_seqs()
        assert sum(sent.values()) == progressive["reports"]

        def held():
            c = connect(db, readonly=True)
            try:
                return report(c)
            finally:
                c.close()
        wait_until(lambda: all(held()["units"].get(u, {}).get("contiguous", 0) == n for u, n in sent.items() if n),
                   60, "every report at the controller")
        data = held()
        m = data["pools"]["main"]["meters"]
        totals = [journal_totals(state / f"table-{t}", range(1, 8)) for t in (1, 2)]
        wagers, wagers_in, hits, fixed, envy, envy_won = (sum(x[i] for x in totals) for i in range(6))
        assert wagers > 5                                    # the players did bet the progressive
        assert (m["wagers"], Fraction(m["wagers_in"])) == (wagers, wagers_in)
        assert Fraction(m["contributions"]) == wagers_in * POOL.rate
        assert (m["fixed_hits"], Fraction(m["fixed_won"])) == (hits, fixed)
        assert (m["envy"], Fraction(m["envy_won"])) == (envy, envy_won)
        assert data["pools"]["main"]["balanced"]
        assert data["integrity"]["count"] == 0 and data["held"] == {"seat": 0, "dealer": 0}
        for unit, n in sent.items():
            if n:
                u = data["units"][unit]
                assert (u["events"], u["missing"], u["duplicates"]) == (n, 0, 0), (unit, u)
        seen = validate_all(sniffer.messages)
        assert seen["tableStream"] > 50 and seen["unitReport"] == sum(sent.values()) and seen["unitSync"] > 0
    finally:
        served.terminate()
        served.wait(20)
        sniffer.close()
