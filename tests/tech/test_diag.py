"""``betbox diag``: one line per part, a verdict, non-zero exit on any failure; real serial
traffic through pseudo-terminals, a real mosquitto, real journals."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from firmware.cli import main
from firmware.commands.run import build
from firmware.config import load_config
from firmware.link import topics
from hal.sim.rfid import RfidSimulator
from hal.sim.shoe import ShoeSimulator
from hal.sim.transport import PtyTransport

from ..link.broker import Broker, free_port
from . import configs


def seat_config(tmp_path: Path, reader: str, link: str = "") -> Path:
    return configs.seat_config(tmp_path, reader=reader, link=link, spots=("main", "insurance"))


def diag(config: Path, capsys, *extra: str) -> tuple[int, dict]:
    code = main(["diag", "--config", str(config), "--json", "--wait", "2", *extra])
    return code, json.loads(capsys.readouterr().out)


def by_name(report: dict) -> dict[str, tuple[str, str]]:
    return {c["name"]: (c["status"], c["detail"]) for c in report["checks"]}


def run_once(config: Path) -> None:
    """The unit as ``betbox run`` builds it (its journal gets its first steps), then stopped."""
    unit, ports = build(load_config(config))
    for port in ports.values():
        port.close()
    unit.journal.close()


@pytest.fixture
def rfid():
    sim = RfidSimulator(PtyTransport(), ["main", "insurance"], period=0.1, heartbeat=0.2).start()
    yield sim
    sim.close()


def test_a_seat_on_a_working_reader_passes_with_one_line_per_antenna(tmp_path, rfid, capsys):
    rfid.place("main", "0A0B0C0D")
    config = seat_config(tmp_path, f'backend = "serial"\nport = "{rfid.transport.path}"')
    run_once(config)
    code, report = diag(config, capsys)
    checks = by_name(report)
    assert code == 0 and report["passed"], report
    assert checks["chip_reader antenna 0 (main)"] == ("ok", "reading (1 tag(s) on the spot)")
    assert checks["chip_reader antenna 1 (insurance)"][0] == "ok"
    assert checks["lamps lamp test"] == ("ok", "on and off in turn: progressive, bets_locked")
    assert checks["journal integrity"][0] == "ok"
    assert checks["journal replay"][0] == "ok" and "replayed identically" in checks["journal replay"][1]
    assert checks["storage"][0] == "ok"
    assert checks["firmware"][0] == "ok" and checks["verify"][0] == "skip"
    assert "clock" in checks


def test_a_broken_antenna_fails_that_antenna_and_the_verdict(tmp_path, rfid, capsys):
    config = seat_config(tmp_path, f'backend = "serial"\nport = "{rfid.transport.path}"')
    stop = threading.Event()

    def broken_antenna() -> None:                    # antenna 1 reports its fault again and again
        rfid.wait_for_host(10)
        while not stop.wait(0.03):
            rfid.fault("insurance", "antenna_open")

    t = threading.Thread(target=broken_antenna, daemon=True)
    t.start()
    try:
        code, report = diag(config, capsys)
    finally:
        stop.set()
        t.join(5)
    checks = by_name(report)
    assert code == 1 and not report["passed"]
    assert checks["chip_reader antenna 1 (insurance)"][0] == "fail", checks
    assert checks["chip_reader antenna 0 (main)"][0] == "ok"
    assert "chip_reader antenna 1 (insurance)" in report["verdict"]


def test_a_reader_that_never_answers_is_a_failed_port_in_plain_text(tmp_path, capsys):
    master, slave = os.openpty()                     # a cable with nothing at the other end
    try:
        config = seat_config(tmp_path, f'backend = "serial"\nport = "{os.ttyname(slave)}"')
        assert main(["diag", "--config", str(config), "--wait", "1.5"]) == 1
    finally:
        os.close(master)
        os.close(slave)
    out = capsys.readouterr().out.splitlines()
    line = next(x for x in out if x.startswith("FAIL chip_reader"))
    assert "no inventory cycle within 1.5 s" in line or "no frame" in line, line
    assert out[-1].startswith("verdict: FAIL: 1 of ") and out[-1].endswith("(chip_reader)")


def test_a_missing_serial_device_is_named(tmp_path, capsys):
    config = configs.dealer_config(tmp_path, 'backend = "serial"\nport = "/dev/ttyBETBOX-none"')
    code, report = diag(config, capsys)
    checks = by_name(report)
    assert code == 1
    status, detail = checks["card_shoe link"]
    assert status == "fail" and "/dev/ttyBETBOX-none" in detail


def test_a_dealer_with_its_shoe_answering(tmp_path, capsys):
    sim = ShoeSimulator(PtyTransport(), heartbeat=0.2).start()
    try:
        config = configs.dealer_config(tmp_path, f'backend = "serial"\nport = "{sim.transport.path}"')
        code, report = diag(config, capsys)
    finally:
        sim.close()
    checks = by_name(report)
    assert checks["card_shoe link"][0] == "ok", checks
    assert checks["card_shoe counter"][0] == "ok"
    assert checks["console buttons"][0] == "ok" and "none held down" in checks["console buttons"][1]
    assert code == 0


def test_a_corrupt_or_diverging_journal_fails(tmp_path, capsys):
    config = seat_config(tmp_path, 'backend = "mock"')
    run_once(config)
    journal = tmp_path / "state" / "journal.db"
    db = sqlite3.connect(journal)
    db.execute("UPDATE record SET body = json_set(body, '$.body.box', 9) WHERE dir = 'out'")  # an altered record
    db.commit()
    db.close()
    code, report = diag(config, capsys)
    assert code == 1 and by_name(report)["journal replay"][0] == "fail"
    journal.write_bytes(journal.read_bytes()[:4096] + b"\xde\xad" * 4096)      # a torn page
    code, report = diag(config, capsys)
    assert code == 1
    assert by_name(report)["journal integrity"][0] == "fail"


def test_broker_controller_and_outbox_under_mosquitto(tmp_path, capsys):
    b = Broker(tmp_path / "mosquitto").start()
    try:
        link = f'[link]\nbroker = "{b.url}"\n'
        config = seat_config(tmp_path, 'backend = "mock"', link)
        code, report = diag(config, capsys)
        checks = by_name(report)
        assert checks["broker"][0] == "ok" and "round trip" in checks["broker"][1]
        assert checks["controller"][0] == "fail" and "no status" in checks["controller"][1]
        assert code == 1
        # the controller's retained birth message: now it answers
        c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="fake-controller")
        c.connect("127.0.0.1", b.port)
        c.loop_start()
        c.publish(topics.jackpot_status_topic("main"), json.dumps(
            {"schema": 1, "unit": "jackpot/main", "role": "jackpot", "state": "online", "firmware": "0.1.0"}),
            qos=1, retain=True).wait_for_publish(10)
        c.loop_stop()
        c.disconnect()
        code, report = diag(config, capsys)
        checks = by_name(report)
        assert checks["controller"] == ("ok", "jackpot/main online (firmware 0.1.0)")
        assert checks["outbox"][0] == "ok"
        assert code == 0
    finally:
        b.stop()
    code, report = diag(config, capsys)
    assert by_name(report)["broker"][0] == "fail" and code == 1


def test_no_broker_listening_is_a_failed_broker(tmp_path, capsys):
    config = seat_config(tmp_path, 'backend = "mock"', f'[link]\nbroker = "mqtt://127.0.0.1:{free_port()}"\n')
    code, report = diag(config, capsys)
    assert code == 1 and by_name(report)["broker"][0] == "fail"


def test_gpio_lamps_and_a_stuck_console_button_under_gpiozeros_mock_factory(tmp_path, capsys, monkeypatch):
    from gpiozero import Device
    from gpiozero.pins.mock import MockFactory

    monkeypatch.setenv("GPIOZERO_PIN_FACTORY", "mock")
    factory = MockFactory()
    monkeypatch.setattr(Device, "pin_factory", factory)
    lamps = seat_config(tmp_path, 'backend = "mock"').read_text().replace(
        'backend = "mock"\nlamps = ["progressive", "bets_locked"]',
        'backend = "gpio"\nlamps = { progressive = 17, bets_locked = 27 }')
    (tmp_path / "seat.toml").write_text(lamps)
    code, report = diag(tmp_path / "seat.toml", capsys)
    assert by_name(report)["lamps lamp test"] == ("ok", "on and off in turn: progressive, bets_locked")
    assert [s.state for s in factory.pin(17).states] == [False, True, False]      # the lamp went on, then off
    dealer = configs.dealer_config(tmp_path, 'backend = "mock"').read_text().replace(
        '[hardware.console]\nbackend = "mock"',
        '[hardware.console]\nbackend = "gpio"\nbuttons = { open_bets = 5, no_more_bets = 6 }')
    (tmp_path / "dealer.toml").write_text(dealer)
    pin = factory.pin(6)

    def hold_down() -> None:                         # no_more_bets held down (pull-up: pressed is low)
        deadline = time.monotonic() + 20
        while pin.pull != "up" and time.monotonic() < deadline:
            time.sleep(0.01)
        pin.drive_low()

    t = threading.Thread(target=hold_down, daemon=True)
    t.start()
    code, report = diag(tmp_path / "dealer.toml", capsys)
    t.join(20)
    assert by_name(report)["console buttons"] == ("fail", "held down (stuck?): no_more_bets")
    assert code == 1


def test_the_outbox_check_names_reports_a_controller_that_went_back_lost(tmp_path):
    from firmware.diag import check_outbox
    from firmware.link.outbox import Outbox

    config = load_config(seat_config(tmp_path, 'backend = "mock"',
                                     f'[link]\nbroker = "mqtt://127.0.0.1:{free_port()}"\n'))
    outbox = Outbox(config.state_dir / "outbox.db", config.bus_id, keep_confirmed=2)
    try:
        for n in range(1, 7):
            outbox.put("t", "progressive_wager", {"amount": "5"}, key=f"{n}/w")
        outbox.confirm_through(6)
        check = check_outbox(config)
        assert check.status == "ok" and "2 confirmed kept" in check.detail, check
        outbox.reopen_after(1)                      # the controller went back to 1: 2-4 no longer kept
    finally:
        outbox.close()
    check = check_outbox(config)
    assert check.status == "warn" and "reports 2-4" in check.detail and "seq 1" in check.detail, check
