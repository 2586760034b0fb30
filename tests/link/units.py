"""Units as `betbox run` processes on a real mosquitto: configuration files, simulated
devices on ptys (the shoe and the RFID reader, through the serial backend), the dealer's
console through ``--drive`` (a named pipe into its mock console), and a table watcher that
mirrors the dealer's stream through the engine to know what the round waits for."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from firmware.engine.events import Action, Decision, event_from_dict
from firmware.engine.money import parse_amount
from firmware.engine.profile import Profile
from firmware.engine.round import Round
from firmware.runtime.bus import stream_topic
from firmware.runtime.spots import seat_spots
from firmware.runtime.wire import shoe_from_json
from hal.sim.rfid import RfidSimulator
from hal.sim.shoe import ShoeSimulator
from hal.sim.transport import PtyTransport

from .helpers import Sniffer, wait_until

ROOT = Path(__file__).resolve().parents[2]

# chips: UID -> denomination
CHIPS = {"0A01": "5", "0A02": "5", "0A03": "5", "0A04": "5", "0B01": "5", "0B02": "5"}


def toml_value(v: Any) -> str:
    return json.dumps(v) if not isinstance(v, bool) else ("true" if v else "false")


def write_toml(path: Path, sections: dict[str, dict[str, Any]]) -> Path:
    lines = []
    for name, body in sections.items():
        lines.append(f"[{name}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in body.items()]
        lines.append("")
    path.write_text("\n".join(lines))
    return path


def jackpot_config(tmp: Path, url: str, link_id: str) -> Path:
    return write_toml(tmp / "jackpot.toml", {
        "unit": {"role": "jackpot", "id": link_id, "state_dir": str(tmp / "jackpot")},
        "link": {"broker": url},
        "jackpot.pools.main": {"seed": "1000", "rate": "15%", "maximum": "250000", "tables": ["*"]}})


def dealer_config(tmp: Path, url: str | None, table: str, profile: Profile, shoe_port: str,
                  link_id: str = "main") -> Path:
    sections: dict[str, dict[str, Any]] = {
        "unit": {"role": "dealer", "id": "dealer", "table": table, "state_dir": str(tmp / "dealer")},
        "game": {"profile": profile.name},
        "hardware.card_shoe": {"backend": "serial", "port": shoe_port},
        "hardware.console": {"backend": "mock"}}
    if url:
        sections["link"] = {"broker": url, "jackpot": link_id}
    return write_toml(tmp / "dealer.toml", sections)


def seat_config(tmp: Path, url: str | None, table: str, box: int, profile: Profile, reader_port: str,
                link_id: str = "main") -> Path:
    spots = list(seat_spots(profile))
    chips = tmp / "chips.csv"
    chips.write_text("uid,denomination,status\n" + "".join(f"{u},{d},valid\n" for u, d in CHIPS.items()))
    sections: dict[str, dict[str, Any]] = {
        "unit": {"role": "seat", "id": f"seat-{box}", "table": table, "state_dir": str(tmp / f"seat-{box}")},
        "seat": {"box": box, "spots": spots, "chips": str(chips)},
        "hardware.chip_reader": {"backend": "serial", "port": reader_port, "spots": spots},
        "hardware.lamps": {"backend": "mock", "lamps": ["progressive", "bets_locked"]}}
    if url:
        sections["link"] = {"broker": url, "jackpot": link_id}
    return write_toml(tmp / f"seat-{box}.toml", sections)


class UnitProcess:
    def __init__(self, name: str, config: Path, tmp: Path, drive: Path | None = None) -> None:
        self.name = name
        self.log_path = tmp / f"{name}.log"
        self.log = open(self.log_path, "wb")
        args = [sys.executable, "-m", "firmware", "run", "--config", str(config)]
        if drive is not None:
            args += ["--drive", str(drive)]
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)
        self.drive_path = drive
        self._drive_fd: int | None = None

    def send(self, line: str) -> None:
        """A bench-script line into the unit's --drive pipe."""
        assert self.drive_path is not None
        wait_until(lambda: self.drive_path.exists() or self.proc.poll() is not None, 30,
                   f"{self.name}'s --drive pipe")
        assert self.proc.poll() is None, self.output()
        if self._drive_fd is None:
            self._drive_fd = os.open(self.drive_path, os.O_WRONLY)
        os.write(self._drive_fd, (line + "\n").encode())

    def terminate(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            if self._drive_fd is not None:
                os.close(self._drive_fd)
                self._drive_fd = None
            self.log.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if not self.log.closed:
            self.log.close()

    def output(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(errors="replace")


class Devices:
    """The shoe and one seat's RFID reader, simulated on ptys."""

    def __init__(self, spots) -> None:
        self.shoe = ShoeSimulator(PtyTransport(), heartbeat=0.5).start()
        self.reader = RfidSimulator(PtyTransport(), spots, heartbeat=0.5).start()

    def close(self) -> None:
        self.shoe.close()
        self.reader.close()


class TableWatch:
    """Reads the table's traffic from a sniffer; mirrors the round through the engine."""

    def __init__(self, sniffer: Sniffer, table: str, profiles: dict[str, Profile]) -> None:
        self.sniffer = sniffer
        self.table = table
        self.profiles = profiles
        self.round: Round | None = None
        self.round_no = 0
        self.results: dict[int, dict] = {}
        self._read = 0

    def messages(self, suffix: str) -> list[dict]:
        return [json.loads(p) for t, p, _ in list(self.sniffer.messages)
                if t.startswith(f"betbox/v1/table/{self.table}/") and t.endswith(suffix) and p]

    def update(self) -> int:
        """Apply the stream messages seen since the last call; how many."""
        stream = stream_topic(self.table)
        snapshot = list(self.sniffer.messages)
        new = [json.loads(p) for t, p, _ in snapshot[self._read:] if t == stream]
        self._read = len(snapshot)
        for m in new:
            body = m["body"]
            if m["kind"] == "round_open":
                self.round_no = body["round"]
                meter = body.get("meter")
                self.round = Round.new(self.profiles[body["profile"]], decks=body["decks"],
                                       limits=body.get("limits") or {}, shoe=shoe_from_json(body["shoe"]),
                                       meter=None if meter is None else parse_amount(meter))
            elif m["kind"] == "event" and body["round"] == self.round_no and self.round is not None:
                self.round, _ = self.round.apply(event_from_dict(body["event"]))
            elif m["kind"] == "round_result":
                self.results[body["round"]] = body["settlement"]
        return len(new)

    def events(self) -> int:
        self.update()
        return len(self.round.history) if self.round is not None else 0

    def wait_event(self, before: int, what: str, timeout: float = 30) -> None:
        wait_until(lambda: self.events() > before or (self.round is not None and self.round.is_over
                                                       and self.round_no in self.results), timeout, what)


def stand_or_next(state: Round, box: int) -> str:
    """The console button for a decision that needs no chips: stand where it is legal."""
    for action in (Action.STAND, Action.SWITCH, Action.HIT):
        if state.why_not(Decision(box, action, None)) is None:
            return str(action)
    raise AssertionError(f"no chip-free decision for box {box}: {state.legal_decisions(box)}")


def play_round(watch: TableWatch, dealer: UnitProcess, devices: Devices, cards, bets: dict[str, list[str]],
               box: int, timeout: float = 30) -> dict:
    """One round: open bets, chips on the reader, no more bets, cards and decisions until the
    dealer's round result. ``cards``: an iterator of card texts. Returns the settlement."""
    watch.update()
    before = watch.round_no
    dealer.send("press open_bets")
    wait_until(lambda: watch.update() is not None and watch.round_no > before, timeout, "the round opened")
    rnd = watch.round_no
    for spot in devices.reader.spots:
        devices.reader.remove(spot)
    for spot, uids in bets.items():
        devices.reader.place(spot, *uids)
    want = {s for s in bets}

    def offered() -> bool:
        devices.reader.cycle(1)
        offers = [m for m in watch.messages(f"/seat/{box}/up") if m["kind"] == "offer" and m["body"]["round"] == rnd]
        return bool(offers) and set(offers[-1]["body"]["bets"] or {}) == want
    wait_until(offered, timeout, f"the seat's offer of {sorted(want)}", step=0.1)
    dealer.send("press no_more_bets")
    watch.wait_event(0, "bets closed", timeout)
    while not (watch.round.is_over and rnd in watch.results):
        state = watch.round
        n = len(state.history)
        if state.is_over:                # its round_result is on its way
            wait_until(lambda: watch.update() is not None and rnd in watch.results, timeout, "the round's result")
            continue
        expect = state.expecting()
        if expect.kind == "card":
            devices.shoe.deal(str(next(cards)))
        elif expect.kind == "decision":
            dealer.send(f"press {stand_or_next(state, expect.box)}")
        elif state.is_over:          # the last event is in, the round_result message follows it
            wait_until(lambda: watch.update() is not None and rnd in watch.results, timeout, f"round {rnd}'s result")
            continue
        else:
            raise AssertionError(f"round {rnd} waits for {expect}")
        watch.wait_event(n, f"round {rnd}: the dealer taking {expect}", timeout)
    return watch.results[rnd]
