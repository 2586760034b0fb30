"""`betbox pit reconciled` on real parts: `betbox run` dealer and seat processes on a real
mosquitto with the documented ACL. A unit restarted from an older copy of its state is
behind its confirmed mark and refuses bets (the dealer opens no round, the seat offers
nothing) until a supervisor has reconciled its rounds and says so with the pit's command:
then it plays again, the alarm ``reconciled`` names the supervisor, and a restart (its
journal replayed) keeps it so. A unit not behind is refused with the reason; nobody but the
pit may send the command."""

from __future__ import annotations

import shutil

from tests.link.broker import Broker
from tests.link.helpers import Sniffer, wait_until
from tests.link.schema import validate_all
from tests.link.units import UnitProcess

from .test_pit_commands import DOCS, OBSERVER, USERS, Table, configs, pit


def test_the_pit_clears_a_dealer_and_a_seat_restarted_behind(tmp_path):
    b = Broker(tmp_path / "mosquitto", acl=(DOCS / "acl").read_text() + OBSERVER, users=USERS).start()
    dealer_toml, seat_toml = configs(tmp_path, b.url)
    sniffer = Sniffer(b.url, "betbox/v1/#", username="observer", password="pwo")
    procs: list[UnitProcess] = []
    t = Table(sniffer)

    def start(name: str, toml) -> UnitProcess:
        p = UnitProcess(name, toml, tmp_path, drive=tmp_path / f"{name}.fifo")
        procs.append(p)
        return p

    def hellos() -> int:
        return len([m for m in t.on("/seat/1/up") if m["kind"] == "hello"])

    def catchups() -> int:
        return len([m for m in t.on("/seat/1/down") if m["kind"] == "catchup"])

    def seat_alarms(code: str) -> list[dict]:
        return [m["body"] for m in t.on("/seat/1/up") if m["kind"] == "alarm" and m["body"]["alarm"] == code]

    def offers(round_no: int) -> list:
        return [m["body"]["bets"] for m in t.on("/seat/1/up") if m["kind"] == "offer"
                and m["body"]["round"] == round_no]

    def restart_dealer(name: str, old: UnitProcess) -> UnitProcess:
        assert old.terminate() == 0, old.output()
        seen = catchups()
        new = start(name, dealer_toml)
        wait_until(lambda: catchups() > seen or new.proc.poll() is not None, 60, f"{name}'s catch-up of the seat")
        assert new.proc.poll() is None, new.output()
        return new

    try:
        dealer = start("dealer", dealer_toml)
        seat = start("seat", seat_toml)
        wait_until(lambda: catchups() or any(p.proc.poll() is not None for p in procs), 60, "the seat caught up")
        for p in procs:
            assert p.proc.poll() is None, p.output()

        # nobody is behind: the command is refused, with the reason
        refused = pit(b.url, "reconciled", "--dealer")
        assert refused.returncode == 1 and "table-1/dealer is not behind" in refused.stderr, refused
        refused = pit(b.url, "reconciled", "--box", "1")
        assert refused.returncode == 1 and "table-1/seat-1 is not behind" in refused.stderr, refused

        # -- the dealer restarted from an older copy of its state ----------------------
        assert dealer.terminate() == 0
        shutil.copytree(tmp_path / "dealer", tmp_path / "dealer.old")
        dealer = start("dealer-b", dealer_toml)                  # each start streams a dealer_boot:
        wait_until(lambda: hellos() >= 3, 60, "the seat's hello to the restarted dealer")
        dealer = restart_dealer("dealer-c", dealer)              # the seat heard past the copy
        assert dealer.terminate() == 0
        shutil.rmtree(tmp_path / "dealer")
        shutil.copytree(tmp_path / "dealer.old", tmp_path / "dealer")
        dealer = start("dealer-old", dealer_toml)
        # its lone seat's word (no second seat, no report confirmed since the copy): a pit call
        # naming the seat, not a stopped table (one seat's credentials could say as much)
        claimed = wait_until(lambda: t.alarms("stream_claimed"), 60, "the seat's word that the dealer lost stream")
        assert claimed[0]["box"] == 1 and "seat 1 says it heard stream seq" in claimed[0]["detail"], claimed
        assert not t.alarms("behind_confirmed") and not t.stream("round_open")
        # a seat's credentials cannot command the table: the broker drops it, nobody answers
        forged = pit(b.url, "reconciled", "--dealer", user="table-1/seat-1", password="pw1")
        assert forged.returncode == 2 and "no answer" in forged.stderr, forged.stderr
        cleared = pit(b.url, "reconciled", "--dealer", "--by", "Bob")
        assert cleared.returncode == 0, cleared.stderr
        assert "table-1/dealer: reconciled" in cleared.stdout, cleared.stdout
        wait_until(lambda: [a["by"] for a in t.alarms("reconciled")] == ["Bob"], 30, "the dealer's reconciled alarm")
        dealer.send("press open_bets")                          # it deals again, and the seat takes it
        wait_until(lambda: any(m["round"] == 1 for m in t.stream("round_open")), 30, "round 1 open")
        seat.send("place main 0A01 0A02")

        def offered() -> bool:
            seat.send("cycle 1")
            return bool(offers(1)) and set(offers(1)[-1] or {}) == {"main"}
        wait_until(offered, 30, "the seat's offer in round 1", step=0.2)
        dealer = restart_dealer("dealer-replayed", dealer)     # replayed: no claim again
        assert len(t.alarms("stream_claimed")) == 1 and not t.alarms("behind_confirmed")
        again = pit(b.url, "reconciled", "--dealer")
        assert again.returncode == 1 and "not behind" in again.stderr, again

        # -- the seat restarted from an older copy of its state ------------------------
        assert seat.terminate() == 0
        shutil.copytree(tmp_path / "seat-1", tmp_path / "seat-1.old")
        seen = catchups()
        seat = start("seat-b", seat_toml)
        wait_until(lambda: catchups() > seen, 60, "seat-b's catch-up")
        seat.send("place main 0A01")
        sent = len(offers(1))

        def offered_again() -> bool:
            seat.send("cycle 1")
            return len(offers(1)) > sent
        wait_until(offered_again, 30, "seat-b's offer", step=0.2)   # the dealer heard more of it
        assert seat.terminate() == 0
        shutil.rmtree(tmp_path / "seat-1")
        shutil.copytree(tmp_path / "seat-1.old", tmp_path / "seat-1")
        seat = start("seat-old", seat_toml)
        wait_until(lambda: seat_alarms("behind_confirmed"), 60, "the restored seat behind what the dealer heard")
        seat.send("place main 0A01 0A02")
        for _ in range(5):
            seat.send("cycle 1")
        wait_until(lambda: offers(1) and offers(1)[-1] in (None, {}), 30, "the offer withdrawn")
        forged = pit(b.url, "reconciled", "--box", "1", user="table-1/seat-1", password="pw1")
        assert forged.returncode == 2 and not seat_alarms("reconciled"), forged.stderr
        cleared = pit(b.url, "reconciled", "--box", "1", "--by", "Ann")
        assert cleared.returncode == 0, cleared.stderr
        assert "table-1/seat-1: reconciled" in cleared.stdout, cleared.stdout
        assert [a["by"] for a in seat_alarms("reconciled")] == ["Ann"]
        assert "Ann" in seat_alarms("reconciled")[0]["detail"]
        wait_until(offered, 30, "the seat's offer once reconciled", step=0.2)     # bets taken again
        again = pit(b.url, "reconciled", "--box", "1")
        assert again.returncode == 1 and "not behind" in again.stderr, again
        assert seat.terminate() == 0
        said = hellos()
        seat = start("seat-replayed", seat_toml)               # its journal replayed: not behind,
        hello = wait_until(lambda: hellos() > said and [m["body"] for m in t.on("/seat/1/up")
                                                         if m["kind"] == "hello"][-1], 60, "the restarted seat")
        assert set(hello["bets"] or {}) == {"main"}, hello      # its offer stands (said in its hello)
        wait_until(lambda: catchups() and seat.proc.poll() is None, 60, "the restarted seat's catch-up")
        assert len(seat_alarms("behind_confirmed")) == 1

        answers = [m["body"] for m in t.on("/pit/response")]
        assert [a["ok"] for a in answers] == [False, False, True, False, True, False]
        codes = {p.name: p.terminate() for p in (dealer, seat)}
        assert codes == {"dealer-replayed": 0, "seat-replayed": 0}, [p.output() for p in procs]
        seen = validate_all(sniffer.messages)                  # the traffic is the documented interface
        assert seen["pitResponse"] == 6, seen
    finally:
        for p in procs:
            p.kill()
        sniffer.close()
        b.kill()
