"""Drive the mock backend with the bench-script language or single keys (desktop demo).

Plain Python, no UI toolkit: the demo maps a key press to a script line and runs it.
"""

from __future__ import annotations

from typing import Callable, Mapping

from hal.mock import MockCardShoe, MockChipReader, MockConsole
from hal.sim.script import parse_script, run_script

#: Default keys: console buttons on letters, a few cards and chip moves on digits.
DEFAULT_KEYS: dict[str, str] = {
    "o": "press open_bets", "n": "press no_more_bets", "s": "press stand",
    "h": "press hit", "d": "press double", "p": "press split", "r": "press surrender",
    "i": "press insurance", "e": "press even_money", "w": "press switch",
    "v": "press void_round", "x": "press walked_away", "k": "key toggle",
    "1": "deal AS", "2": "deal KH", "3": "deal 7D", "4": "deal 8C",
    "0": "shuffle", "j": "jam", "u": "unjam",
}


class MockDriver:
    """Script commands for a set of mock devices (any of them may be absent)."""

    def __init__(self, shoe: MockCardShoe | None = None, reader: MockChipReader | None = None,
                 console: MockConsole | None = None) -> None:
        self.shoe, self.reader, self.console = shoe, reader, console

    def commands(self) -> dict[str, Callable[..., None]]:
        cmds: dict[str, Callable[..., None]] = {}
        if self.shoe is not None:
            s = self.shoe
            cmds |= {"deal": lambda *cards: s.deal_many(cards), "shuffle": s.shuffle,
                     "cut": s.cut_card, "misread": s.misread,
                     "skip": lambda n="1": s.skip(int(n)), "jam": s.jam, "unjam": s.clear_jam,
                     "door": lambda state: s.open_door() if state == "open" else s.close_door()}
        if self.reader is not None:
            r = self.reader
            reader_cmds: dict[str, Callable[..., None]] = {"place": lambda spot, *uids: r.place_chips(spot, uids),
                     "remove": lambda spot, *uids: r.remove_chips(spot, uids or None),
                     "cycle": lambda n="1": r.cycle(int(n)),
                     "drop": lambda n="1": r.drop_reads(int(n)),
                     "fault": lambda where, code: r.fault(code, None if where == "reader"
                                                          else where)}
            cmds |= reader_cmds
        if self.console is not None:
            c = self.console
            cmds |= {"press": c.press, "hold": c.hold, "release": c.release,
                     "stick": c.stick, "unstick": c.unstick,
                     "key": lambda state: c.turn_key(not c.technician_key if state == "toggle"
                                                     else state == "on"),
                     "keycard": c.key_card, "keypad": lambda *keys: c.keypad_press(*keys)}
        return cmds

    def run(self, text: str, source: str = "<script>") -> None:
        run_script(parse_script(text, source), self.commands())


class KeyboardDriver:
    """Maps single keys to script lines; unknown keys are ignored (returns None)."""

    def __init__(self, driver: MockDriver, keys: Mapping[str, str] = DEFAULT_KEYS) -> None:
        self.driver, self.keys = driver, dict(keys)

    def key(self, key: str) -> str | None:
        line = self.keys.get(key)
        if line is not None:
            self.driver.run(line, source=f"key {key!r}")
        return line
