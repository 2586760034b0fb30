"""``betbox demo``: a simulated table with one seat's display in a window, or (``--headless``)
whole tables of simulated players on mock hardware.

Each table is a dealer unit and seven seat units talking over the in-process bus, every
unit journalling to ``--state-dir``; players play basic strategy for the table's profile,
bet side bets and progressives at random and sometimes misbehave. Deterministic for a seed.
The seats report to a jackpot controller in the same process (its meters end the summary).
With ``--broker`` every unit has its own MQTT client on that broker and the seats report to
the controller served there (``betbox jackpot serve``); the demo waits for quiet through the
broker between steps.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import sys
import tempfile
from pathlib import Path

from firmware.commands.limits import bounded_float, bounded_int
from firmware.engine.profile import ProfileError, load_profile, profile_names
from firmware.engine.strict import redact_url
from firmware.runtime.storage import StorageError  # a journal or outbox that cannot be used (named)
from firmware.sim.summary import Summary

MAX_DEMO_ROUNDS = 1_000_000       # rounds per table
MAX_DEMO_TABLES = 64              # tables in one process

def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run whole tables of simulated players on mock hardware",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("--headless", action="store_true", help="no window: progress and summary on the terminal")
    p.add_argument("--rounds", type=bounded_int("--rounds", 1, MAX_DEMO_ROUNDS), default=None,
                   help="rounds per table (headless: default 20); with the window: auto play closes it after N rounds")
    p.add_argument("--seed", type=bounded_int("--seed", 0, 2**63 - 1), default=1, help="random seed (default 1)")
    p.add_argument("--tables", type=bounded_int("--tables", 1, MAX_DEMO_TABLES), default=1, help="number of tables (default 1)")
    p.add_argument("--state-dir", help="where the units keep their journals (default: a temporary directory)")
    p.add_argument("--profile", nargs="+", action="extend", dest="profiles", metavar="NAME",
                   help="profile of each table, cycled (default: every shipped profile in turn)")
    p.add_argument("--direct", action="store_true",
                   help="drive the rules engine directly, without units (reference mode)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--broker", metavar="URL",
                   help="run the units on this MQTT broker (mqtt://HOST:PORT); the jackpot controller is "
                        "served separately (betbox jackpot serve). Default: in-process bus and controller")
    p.add_argument("--link", default="main", help="the jackpot controller's link id (default main)")
    p.add_argument("--rotate-rounds", type=bounded_int("--rotate-rounds", 1, 1_000_000), metavar="N",
                   help="headless: rotate every unit's journal into a segment every N rounds (default: never)")
    p.add_argument("--keep-segments", type=bounded_int("--keep-segments", 0, 1_000_000), metavar="K",
                   help="headless, with --rotate-rounds: keep the K newest segments (default: all)")
    w = p.add_argument_group("the window (without --headless)")
    w.add_argument("--box", type=bounded_int("--box", 1, 7), default=1, help="the seat whose display is shown, 1-7 (default 1)")
    w.add_argument("--lang", default="en", help="the display's language: en, zh or ms (default en)")
    w.add_argument("--size", default="800x480", help="window size: 800x480, 1024x600 or 1280x800")
    w.add_argument("--manual", action="store_true",
                   help="start driven by a person (keyboard and on-screen dealer controls)")
    w.add_argument("--pace", type=bounded_float("--pace", 0, 3), default=0.8,
                   help="seconds between the table's steps in auto play, 0 to 3 (default 0.8; keys + and -)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not args.headless:
        return _window(args)
    if args.rounds is None:
        args.rounds = 20
    if args.rounds < 1 or args.tables < 1:
        print("betbox demo: --rounds and --tables must be at least 1", file=sys.stderr)
        return 2
    if (args.rotate_rounds is not None and args.rotate_rounds < 1) or (
            args.keep_segments is not None and (args.keep_segments < 0 or args.rotate_rounds is None)):
        print("betbox demo: --rotate-rounds must be at least 1; --keep-segments at least 0 and only "
              "with --rotate-rounds", file=sys.stderr)
        return 2
    try:
        profiles = [load_profile(n) for n in (args.profiles or profile_names())]
    except ProfileError as exc:
        print(f"betbox demo: {exc}", file=sys.stderr)
        return 2
    if args.broker:
        from firmware.link.config import LinkConfigError, config_from_url
        try:
            config_from_url(args.broker)
        except LinkConfigError as exc:
            print(f"betbox demo: --broker: {exc}", file=sys.stderr)
            return 2
        if args.direct:
            print("betbox demo: --direct has no units to put on a broker", file=sys.stderr)
            return 2
    rng = random.Random(args.seed)
    total = Summary()
    if args.state_dir:
        state_dir = Path(args.state_dir)
        state_dir.mkdir(parents=True, exist_ok=True)
        return _play(args, profiles, rng, total, state_dir)
    with tempfile.TemporaryDirectory(prefix="betbox-demo-") as tmp:
        return _play(args, profiles, rng, total, Path(tmp))


def _window(args: argparse.Namespace) -> int:
    """The windowed demo; Kivy is imported only here, so the headless demo never needs it."""
    if not 1 <= args.box <= 7:
        print(f"betbox demo: --box must be 1 to 7, not {args.box}", file=sys.stderr)
        return 2
    if not 0 <= args.pace <= 3:
        print(f"betbox demo: --pace must be 0 to 3 seconds, not {args.pace:g}", file=sys.stderr)
        return 2
    from ui.i18n import LANGUAGES
    if args.lang not in LANGUAGES:
        print(f"betbox demo: --lang must be one of {', '.join(LANGUAGES)}, not {args.lang!r}", file=sys.stderr)
        return 2
    from ui.app import run_demo_window
    mode = "you deal with the on-screen controls" if args.manual else "the simulated table plays by itself"
    print(f"demo: box {args.box}'s seat display in a window ({args.size}, {args.lang}); {mode}; "
          f"keys: a auto play on/off, o open bets, b bet, n no more bets, space deal, h/s/d/p/r decisions "
          f"(docs/ui.md); " + (f"closes after {args.rounds} round(s)" if args.rounds and not args.manual else
                               "close the window or press Ctrl-C to stop"), file=sys.stderr, flush=True)
    return run_demo_window(args)


class _Links:
    """Where the seats report and the units learn the controller's state: the in-process
    controller, or (``--broker``) one MQTT client per unit."""

    def __init__(self, args, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.url = args.broker
        self.link_id = args.link
        self.buses: list = []
        self.local = None
        if not self.url:
            from firmware.jackpot.config import DEFAULT_POOLS, load_pools
            from firmware.jackpot.local import LocalController
            self.local = LocalController(state_dir / "jackpot.db", load_pools(DEFAULT_POOLS),
                                         self.link_id)

    def bus_factory(self):
        if not self.url:
            return None
        from firmware.link import connect_bus

        def make(unit_id: str, role: str):
            outbox = self.state_dir / unit_id / "outbox.db" if role in ("seat", "dealer") else None
            bus = connect_bus(self.url, unit_id, outbox_path=outbox, role=role, link_id=self.link_id,
                              config={"demo": unit_id, "broker": self.url}, wait=10.0)
            if not bus.connected:
                bus.close()
                raise OSError(f"no broker at {redact_url(self.url)}")
            self.buses.append(bus)
            return bus
        return make

    def on_unit(self, unit, bus) -> None:
        from firmware.link.reporter import DealerReporter, SeatReporter

        reporter = {"seat": SeatReporter, "dealer": DealerReporter}.get(unit.role)
        if self.local is not None:
            if reporter is not None:
                reporter(unit, self.local.link(unit.unit_id, self.state_dir / unit.unit_id / "outbox.db"))
            self.local.feed(unit, unit.table)
            return
        from firmware.link.presence import ControllerWatch, takes_controller_input
        if reporter is not None:
            reporter(unit, bus)
        if takes_controller_input(unit):
            ControllerWatch(bus, self.link_id, unit.table).feed(unit)

    def finish(self, timeout: float = 30.0, confirm_timeout: float = 10.0) -> dict:
        """Every report at the broker (bounded wait), then (bounded again) at the
        controller; how far each got. What is not confirmed stays in the outboxes."""
        import time

        if self.local is not None:
            from firmware.jackpot.controller import report
            data = report(self.local.controller.db)
            self.local.close()
            return data
        deadline = time.monotonic() + timeout
        for bus in self.buses:
            bus.wait_drained(max(0.0, deadline - time.monotonic()))
        seats = [b for b in self.buses if b.outbox is not None]
        deadline = min(deadline, time.monotonic() + confirm_timeout)
        while time.monotonic() < deadline and not all(b.outbox.stats()["confirmed"] == b.outbox.last_seq
                                                      for b in seats):
            time.sleep(0.05)
        out = {"broker": redact_url(self.url), "reports": sum(b.outbox.last_seq for b in seats),
               "at_broker": sum(b.outbox.last_seq - b.outbox.stats()["waiting"] for b in seats),
               "confirmed_by_controller": sum(b.outbox.stats()["confirmed"] for b in seats)}
        for bus in self.buses:
            bus.close()
            if bus.outbox is not None:
                bus.outbox.close()
        return out


def _progressive_lines(data: dict) -> list[str]:
    if "pools" not in data:
        return [f"reports {data['reports']}, at the broker {data['at_broker']}, confirmed by the controller "
                f"{data['confirmed_by_controller']} ({data['broker']}; betbox jackpot report --db ...)"]
    out = []
    for name, pool in data["pools"].items():
        m = pool["meters"]
        out.append(f"pool {name}: meter {pool['meter']} ({pool['state']}), wagers {m['wagers']} "
                   f"({m['wagers_in']} in), contributions {m['contributions']}, meter hits {m['hits']} "
                   f"won {m['won']}, fixed awards {m['fixed_hits']} won {m['fixed_won']}, "
                   f"envy bonuses {m['envy']} won {m['envy_won']}")
    return out


def _play(args, profiles, rng, total: Summary, state_dir: Path) -> int:
    try:
        links = _Links(args, state_dir)
    except (OSError, ValueError, StorageError) as exc:
        print(f"betbox demo: {exc}", file=sys.stderr)
        return 2
    try:
        _tables(args, profiles, rng, total, state_dir, links)
    except (OSError, StorageError) as exc:
        print(f"betbox demo: {exc}", file=sys.stderr)
        links.finish(timeout=1.0)
        return 2
    progressive = links.finish()
    if args.json:
        json.dump({**total.as_dict(), "progressive": progressive}, sys.stdout, indent=2)
        print()
    else:
        print(f"== all tables ({args.tables})")
        for line in total.lines():
            print("   " + line)
        print("== progressive (jackpot controller)")
        if "pools" in progressive and not any(p.progressive for p in profiles[:args.tables]):
            print("   none: no table here plays a profile with a progressive (rws-blackjack-switch has one)")
        else:
            for line in _progressive_lines(progressive):
                print("   " + line)
        print("== what the figures mean")
        for line in total.legend():
            print("   " + line)
    return 0


def _tables(args, profiles, rng, total: Summary, state_dir: Path, links: "_Links") -> None:
    for t in range(args.tables):
        profile = profiles[t % len(profiles)]
        table_seed = rng.randrange(2 ** 32)
        label = f"table {t + 1} ({profile.name})"
        summary = Summary()
        if args.direct:
            from firmware.sim.direct import play_direct
            for i, state in enumerate(play_direct(profile, args.rounds, random.Random(table_seed)), 1):
                summary.add_round(state)
                _progress(label, i, args.rounds)
        else:
            from firmware.sim.driver import run_demo_table
            from firmware.sim.table import TableSpec
            spec = TableSpec(table_id=f"table-{t + 1}", profile=profile, seed=table_seed,
                             state_dir=state_dir / f"table-{t + 1}", rotate_rounds=args.rotate_rounds,
                             keep_segments=args.keep_segments)
            summary = run_demo_table(spec, args.rounds,
                                     progress=functools.partial(_progress, label, rounds=args.rounds),
                                     bus_factory=links.bus_factory(), on_unit=links.on_unit)
        if sys.stderr.isatty():
            print(file=sys.stderr)
        total.merge(summary)
        if not args.json:
            print(f"== {label}")
            for line in summary.lines():
                print("   " + line)


def _progress(label: str, done: int, rounds: int) -> None:
    """A live counter on a terminal; every tenth of the way in a log."""
    if sys.stderr.isatty():
        print(f"\r{label}: round {done}/{rounds}", end="", file=sys.stderr, flush=True)
    elif done == rounds or done % max(1, rounds // 10) == 0:
        print(f"{label}: round {done}/{rounds}", file=sys.stderr, flush=True)


