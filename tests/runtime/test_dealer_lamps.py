"""The dealer unit's console lamps (issue #14.4, staff side): a pit alarm at the table (past
posting, pinching, an unknown chip, the shoe's door opened, ...) flashes the dealer's
``pit_call`` lamp while the seat shows the player only "Please wait for the dealer"; the call
ends when the pit acknowledges it (``betbox pit ack``), not when the dealer opens the next
round (or, for a lasting condition, when it ends); a restarted dealer
lights it again from its journal (and its checkpoint), never wrongly. Real in-process units,
lamps on the mock backend and on the gpio backend with gpiozero's MockFactory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory

from firmware.config import ConfigError, parse_config
from firmware.engine.profile import load_profile
from firmware.runtime.dealer import DEALER_LAMPS, PIT_CALL_BLINK
from firmware.sim import chipset
from firmware.sim.table import InProcessTable, TableSpec
from hal.backends import open_backend
from hal.mock import MockLamps
from hal.ports import LAMP_OFF, LAMP_ON, Lamps
from tests.runtime.test_pit_and_keypad import Pit
from tests.tables import place_bet
from ui.i18n import tr
from ui.model import SeatSnapshot
from ui.presenter import present

PINS = {"pit_call": 17, "round_open": 27, "no_more_bets": 22}


def make_lamps(backend: str) -> Lamps:
    if backend == "mock":
        lamps: Lamps = MockLamps("dealer-lamps", list(PINS))
    else:
        port = open_backend("lamps", "gpio", {"pin_factory": MockFactory(), "lamps": PINS}, device="dealer-lamps")
        assert isinstance(port, Lamps)
        lamps = port
    lamps.start(lambda e: None)
    return lamps


def shown(lamps: Lamps, lamp: str) -> str:
    """What the lamp does: the port's state and, on gpiozero, the LED itself."""
    state = lamps.state(lamp)
    if hasattr(lamps, "led"):
        led = lamps.led(lamp)
        # gpiozero runs a blink in its own thread: a blinking LED has one, a steady one not
        blinking = getattr(led, "_blink_thread", None) is not None
        assert (state.mode == "blink") == blinking, (lamp, state, blinking)
        if not blinking:
            assert led.value == (1 if state.mode == "on" else 0), (lamp, state, led.value)
    return "blink" if state == PIT_CALL_BLINK else state.mode


class Table:
    """Table ``t`` at ``state_dir`` with the dealer's console lamps on ``backend``."""

    def __init__(self, state_dir: Path, backend: str, rotate_rounds: int | None = None,
                 decks: int | None = None) -> None:
        fresh = not (state_dir / "dealer").exists()
        p = load_profile("rws-blackjack")
        spec = TableSpec("t", p, 0, state_dir, boxes=2, rotate_rounds=rotate_rounds, decks=decks)
        self.t = InProcessTable(spec, chipset.registry(2, 5))
        self.lamps = make_lamps(backend)
        self.t.dealer.lamps = self.lamps
        self.t.boot()
        if fresh:                       # a shuffle in a round is an interruption: only the first time
            self.t.shoe.shuffle()
            self.t.settle()

    def press(self, button: str) -> None:
        self.t.console.press(button)
        self.t.settle()

    def lamp(self, name: str) -> str:
        return shown(self.lamps, name)

    def close(self) -> None:
        self.lamps.close()
        self.t.close()


@pytest.fixture(params=["mock", "gpio"])
def backend(request: Any) -> str:
    return str(request.param)


@pytest.fixture
def tables(tmp_path: Path) -> Iterator[list[Table]]:
    made: list[Table] = []
    yield made
    for t in made:
        t.close()


def test_a_past_posting_calls_the_pit_at_the_dealer_and_asks_the_player_to_wait(tmp_path, backend, tables):
    tables.append(table := Table(tmp_path, backend, rotate_rounds=1))
    assert [table.lamp(x) for x in PINS] == ["off", "off", "off"]
    table.press("open_bets")
    assert (table.lamp("round_open"), table.lamp("no_more_bets")) == ("on", "off")
    place_bet(table.t, 1, 25)
    table.press("no_more_bets")
    assert (table.lamp("round_open"), table.lamp("no_more_bets"), table.lamp("pit_call")) == ("off", "on", "off")
    place_bet(table.t, 1, 5, "player_pair", layer=1)              # a chip added after no more bets
    assert table.lamp("pit_call") == "blink"
    assert table.t.dealer.pit_calls == {"past_posting": 1}
    # the player: only the neutral words, in every language
    screen = present(SeatSnapshot(table.t.seats[1].view))
    assert [b.text for b in screen.banners if b.kind == "fault"] == [tr("en", "fault.tamper")]
    assert tr("en", "fault.tamper") == "Please wait for the dealer."
    table.press("void_round")                                    # the round ends: the pit is still called
    assert table.t.dealer.phase == "idle"
    assert (table.lamp("pit_call"), table.lamp("no_more_bets")) == ("blink", "off")
    table.close()
    tables.remove(table)

    # a restart (from the checkpoint: the journal rotated at the round's end) lights it again
    tables.append(table := Table(tmp_path, backend, rotate_rounds=1))
    assert table.t.dealer.journal.checkpoint() is not None
    assert table.t.dealer.pit_calls == {"past_posting": 1}
    assert table.lamp("pit_call") == "blink"
    table.press("open_bets")                                     # the dealer cannot dismiss the call
    assert (table.lamp("pit_call"), table.lamp("round_open")) == ("blink", "on")
    pit = Pit(table.t)
    answer = pit.send("acknowledge")                             # the supervisor came: only the pit ends it
    assert answer["ok"] and answer["verdict"] == "acknowledged: past_posting x1", answer
    assert (table.lamp("pit_call"), table.lamp("round_open")) == ("off", "on")
    assert table.t.dealer.pit_calls == {}
    assert table.t.dealer.alarms[-1]["alarm"] == "pit_acknowledged" and table.t.dealer.alarms[-1]["by"] == "Ann"
    # the seat journals the dealer's acknowledgement; the player is not told of it
    screen = present(SeatSnapshot(table.t.seats[1].view))
    assert not [b for b in screen.banners if b.kind == "fault"], screen.banners
    assert pit.send("acknowledge")["verdict"] == "no pit call was in force"
    assert pit.send("acknowledge", sender="seat-1") == {}         # only the pit may: not even answered
    table.close()
    tables.remove(table)

    # and a restart after that never lights it wrongly
    tables.append(table := Table(tmp_path, backend, rotate_rounds=1))
    assert (table.lamp("pit_call"), table.lamp("round_open")) == ("off", "on")


def test_the_journal_alone_brings_the_call_back(tmp_path, tables):
    """No rotation: the restarted dealer replays its journal to the same lamp."""
    tables.append(table := Table(tmp_path, "mock"))
    table.press("open_bets")
    place_bet(table.t, 2, 25)
    table.press("no_more_bets")
    reader = table.t.readers[2]
    reader.remove_chips("main", sorted(reader.chips_on("main"))[:1])     # pinching
    table.t.cycle_readers(3, [2])
    assert table.t.dealer.pit_calls == {"pinching": 1} and table.lamp("pit_call") == "blink"
    table.close()
    tables.remove(table)
    tables.append(table := Table(tmp_path, "mock"))
    assert table.t.dealer.journal.checkpoint() is None
    assert table.lamp("pit_call") == "blink" and table.lamp("no_more_bets") == "on"


def test_the_shoe_door_calls_the_pit_while_it_is_open(tmp_path, tables):
    tables.append(table := Table(tmp_path, "mock"))
    table.t.shoe.open_door()
    table.t.settle()
    assert table.lamp("pit_call") == "blink" and table.t.dealer.pit_calls == {}
    table.press("open_bets")                                     # a new round does not end a lasting condition
    assert table.lamp("pit_call") == "blink"
    table.t.shoe.close_door()
    table.t.settle()
    assert table.lamp("pit_call") == "off"


def test_an_alarm_for_the_technician_does_not_call_the_pit(tmp_path, tables):
    tables.append(table := Table(tmp_path, "mock"))
    table.t.shoe.jam()
    table.t.settle()
    table.t.dealer.step("button", {"button": "technician_key"})      # the technician's key turned
    assert table.lamp("pit_call") == "off" and table.t.dealer.pit_calls == {}


# -- configuration: [hardware.lamps] on the dealer ---------------------------------------------

def dealer_config(tmp_path: Path, lamps: dict[str, Any] | None) -> dict[str, Any]:
    hardware: dict[str, Any] = {"card_shoe": {"backend": "mock"}, "console": {"backend": "mock"}}
    if lamps is not None:
        hardware["lamps"] = lamps
    return {"unit": {"role": "dealer", "id": "dealer", "table": "t", "state_dir": str(tmp_path / "d")},
            "game": {"profile": "rws-blackjack"}, "hardware": hardware}


def test_the_dealer_takes_an_optional_lamps_port(tmp_path):
    from firmware.commands.run import build

    assert "lamps" not in parse_config(dealer_config(tmp_path, None)).hardware
    config = parse_config(dealer_config(tmp_path, {"backend": "gpio", "pin_factory": "mock", "lamps": PINS}))
    assert config.hardware["lamps"] == {"backend": "gpio", "options": {"pin_factory": "mock", "lamps": PINS}}
    unit, ports = build(config)
    try:
        assert unit.lamps is ports["lamps"]
        assert [shown(ports["lamps"], x) for x in PINS] == ["off", "off", "off"]
        unit.step("button", {"button": "open_bets"})
        assert shown(ports["lamps"], "round_open") == "on"
        assert ports["lamps"].state("round_open") == LAMP_ON and ports["lamps"].state("pit_call") == LAMP_OFF
    finally:
        for port in ports.values():
            port.close()
        unit.journal.close()


def test_betbox_runs_dealer_lights_pit_call_for_a_seats_alarm_and_again_after_a_restart(tmp_path):
    """The wiring `betbox run` uses (run.build: ports from [hardware], recover, start): a
    seat's past-posting alarm on the bus flashes pit_call; a new process on the same state
    lights it again before any input."""
    from firmware.commands.run import build
    from firmware.runtime.bus import InProcessBus, Message, up_topic

    config = parse_config(dealer_config(tmp_path, {"backend": "gpio", "pin_factory": "mock", "lamps": PINS}))
    for start in range(2):
        bus = InProcessBus()
        unit, ports = build(config, bus=bus)
        try:
            if start == 0:
                assert shown(ports["lamps"], "pit_call") == "off"
                unit.step("button", {"button": "open_bets"})
                bus.publish(Message(up_topic("t", 1), "alarm", "t/seat-1", 1, {
                    "box": 1, "round": 1, "unit": "t/seat-1", "alarm": "past_posting",
                    "detail": "5 added to player_pair after no more bets (§3.10)"}))
                unit.pump()
            assert shown(ports["lamps"], "pit_call") == "blink", start
            assert unit.pit_calls == {"past_posting": 1}
        finally:
            for port in ports.values():
                port.close()
            unit.journal.close()


@pytest.mark.parametrize("lamps, words", [
    ({"backend": "mock", "lamps": ["pit_call", "pitcall"]}, ["pitcall", "pit_call", "round_open"]),
    ({"backend": "gpio", "lamps": {"service": 4}}, ["service"]),
    ({"backend": "mock"}, ["lamps"]),
])
def test_a_lamp_the_dealer_does_not_drive_is_refused_by_name(tmp_path, lamps, words):
    with pytest.raises(ConfigError) as err:
        parse_config(dealer_config(tmp_path, lamps))
    assert "hardware.lamps" in str(err.value) and all(w in str(err.value) for w in words), err.value


def test_the_dealer_lamps_are_the_documented_ones():
    assert set(DEALER_LAMPS) == set(PINS)
    text = (Path(__file__).parents[2] / "docs" / "technician.md").read_text(encoding="utf-8")
    assert all(f"`{lamp}`" in text for lamp in DEALER_LAMPS)


def test_the_lamp_test_covers_the_dealers_lamps(tmp_path):
    from firmware.diag import OK, check_ports

    config = parse_config(dealer_config(tmp_path, {"backend": "gpio", "pin_factory": "mock", "lamps": PINS}))
    checks = [c for c in check_ports(config, 0.0) if "lamp" in c.name]
    assert [(c.status, c.name) for c in checks] == [(OK, "lamps lamp test")], checks
    assert all(lamp in checks[0].detail for lamp in PINS)


@pytest.mark.parametrize("path", ["image/config/dealer.toml", "docs/examples/dealer.toml"])
def test_the_shipped_dealer_configurations_fit_the_lamps_and_survive_provisioning(path):
    """The image's template (what `betbox provision` merges a unit's identity into, written
    back with its own TOML writer) and the example both carry the dealer's lamps."""
    import tomllib

    from firmware.commands.provision import dump_toml

    data = tomllib.loads((Path(__file__).parents[2] / path).read_text(encoding="utf-8"))
    data.pop("link", None)                        # the example's TLS files are the site's
    config = parse_config(tomllib.loads(dump_toml(data)), path)
    assert set(config.hardware["lamps"]["options"]["lamps"]) == set(DEALER_LAMPS)


def test_a_foreign_card_voiding_the_round_calls_the_pit(tmp_path, tables):
    """§5.5.1: a card this shoe cannot hold (a fifth ace of spades in four decks) voids the
    round; the dealer raises no alarm of its own for it, the lamp still calls the pit."""
    tables.append(table := Table(tmp_path, "mock", decks=4))
    for _ in range(4):
        table.t.shoe.deal("AS")                                  # burn cards: out of the shoe
    table.t.settle()
    assert table.lamp("pit_call") == "off"
    table.press("open_bets")
    place_bet(table.t, 1, 25)
    table.press("no_more_bets")
    table.t.shoe.deal("AS")
    table.t.settle()
    assert table.t.dealer.past_rounds[table.t.dealer.round_no].void_reason.startswith("foreign_card")
    assert table.t.dealer.pit_calls == {"foreign_card": 1} and table.lamp("pit_call") == "blink"
