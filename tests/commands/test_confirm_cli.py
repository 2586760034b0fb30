"""`betbox jackpot confirm`: the attendant's confirmation of a pending hit by unit and round,
authenticated as `attendant` under the documented ACL; a seat's credentials cannot do it."""

from __future__ import annotations

from pathlib import Path

from firmware.cli import main
from firmware.jackpot.controller import report
from firmware.jackpot.service import JackpotService
from firmware.link import connect_bus
from firmware.link.config import config_from_url
from tests.link.broker import Broker
from tests.link.helpers import controller, send_dealer, wait_until
from tests.link.test_acl_tls import USERS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "mqtt"


def test_the_attendant_confirms_a_pending_hit_by_unit_and_round(tmp_path, capsys):
    b = Broker(tmp_path / "mosquitto", acl=(DOCS / "acl").read_text(), users=USERS).start()
    try:
        ctl = controller(tmp_path / "jackpot.db")
        svc = JackpotService(ctl, config_from_url(b.url, username="jackpot/main", password="pwj", allow_insecure=True), tick=0.02).start()
        seat = connect_bus(b.url, "table-1/seat-1", outbox_path=tmp_path / "s.db", username="table-1/seat-1",
                           password="pw1", allow_insecure=True)
        hit = {"category": "suited_four_of_a_kind", "award": None, "meter_share": "1", "amount": "1000"}
        seat.report("progressive_wager", {"amount": "5"}, key="1/w", table="table-1", box=1, round=1)
        seat.report("progressive_hit", hit, key="1/h", table="table-1", box=1, round=1)
        # the dealer's record of the round, which the controller books the seat's word by
        dealer = connect_bus(b.url, "table-1/dealer", outbox_path=tmp_path / "d.db", role="dealer",
                             username="table-1/dealer", password="pwd", allow_insecure=True)
        send_dealer(dealer, {1: [("progressive_wager", {"amount": "5"}, 1, "1/w"), ("progressive_hit", hit, 1, "1/h")]})
        wait_until(lambda: report(ctl.db)["last_hits"], 20, "the hit at the controller")
        (tmp_path / "attendant.pw").write_text("pwa\n")
        (tmp_path / "seat-2.pw").write_text("pw2\n")
        confirm = ["jackpot", "confirm", "--broker", b.url, "--password-file", str(tmp_path / "attendant.pw"),
                   "--allow-insecure", "--by", "pit boss 7",
                   "--unit", "table-1/seat-1", "--round", "1", "--timeout", "10"]
        # nothing pending in round 2: refused, naming why
        assert main([a if a != "1" else "2" for a in confirm]) == 1
        assert "no meter hit of table-1/seat-1 in round 2" in capsys.readouterr().err
        # a seat's credentials: the ACL drops its command; no answer
        assert main(["jackpot", "confirm", "--broker", b.url, "--username", "table-1/seat-2",
                     "--password-file", str(tmp_path / "seat-2.pw"), "--allow-insecure",
                     "--unit", "table-1/seat-1", "--round", "1", "--timeout", "1.5"]) == 2
        assert "no answer" in capsys.readouterr().err
        assert report(ctl.db)["last_hits"][0]["state"] == "pending"
        assert main(confirm) == 0
        hit = report(ctl.db)["last_hits"][0]
        assert capsys.readouterr().out.strip() == f"hit {hit['hit']}: confirmed"
        assert (hit["state"], hit["confirmed_by"]) == ("confirmed", "attendant pit boss 7")
        assert main(confirm) == 1
        assert "not pending" in capsys.readouterr().err
        assert main(["jackpot", "confirm", "--broker", b.url, "--unit", "table-1/seat-1"]) == 2
        seat.close()
        dealer.close()
        svc.stop()
        ctl.close()
    finally:
        b.stop()
