"""``betbox run --config FILE``: run one unit (dealer, seat or jackpot controller) as configured.

Hardware ports are opened by name through ``hal.backends.open_backend`` (their own options
are checked strictly there). The unit recovers from its journal, then serves its one
dispatch queue until SIGTERM/SIGINT.

With ``[link]`` the unit's bus is MQTT (:func:`firmware.link.connect_bus`): a seat reports
its box's results to the jackpot controller through a durable outbox in its state
directory (:class:`~firmware.link.reporter.SeatReporter`), the dealer its alarms through its
own (:class:`~firmware.link.reporter.DealerReporter`; both outboxes in ``journal.db``), and a
:class:`~firmware.link.presence.ControllerWatch` gives seat and dealer the controller's
link state and meter as journalled ``("controller", ...)`` inputs. Without ``[link]`` the
unit runs on the in-process bus, alone. A seat with ``[display]`` serves its dispatch queue
on a background thread and shows the seat display on the main thread (Kivy, imported only
then). ``role = "jackpot"`` runs the progressive controller.

``--drive PATH`` (bench and tests): a named pipe from which lines of the bench-script
language (``press open_bets``, ``deal AS``, ``place main 0A0B``, ``cycle 2``) drive the
unit's *mock* ports, so a unit running as its own process can be played from outside.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import queue
import signal
import sqlite3
import stat
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from firmware.config import ConfigError, UnitConfig, load_config
from firmware.engine.strict import redact_url
from firmware.preflight import check_startable
from firmware.runtime.storage import StorageError

if TYPE_CHECKING:                   # the link's types only: a unit alone never loads paho
    from firmware.link.presence import ControllerWatch
    from firmware.link.reporter import DealerReporter, SeatReporter

log = logging.getLogger("betbox.run")
#: The device name under which a unit journals its broker link's state.
BROKER_DEVICE = "broker"

DRAIN_ON_STOP = 5.0          # seconds a stopping seat waits for the broker to take its reports


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a dealer, seat or jackpot unit from its configuration file")
    p.add_argument("--config", required=True, help="the unit's TOML configuration")
    p.add_argument("--check", action="store_true", help="validate the configuration and exit")
    p.add_argument("--drive", metavar="FIFO",
                   help="drive the unit's mock ports with bench-script lines read from this named pipe")
    p.add_argument("--screenshot", metavar="PNG",
                   help="a seat with [display] (tests): write the display as a PNG once it has drawn its "
                        "first frame (PNG gets a number: shot.png -> shot0001.png)")
    p.add_argument("-v", "--verbose", action="store_true", help="log the link and the controller")
    p.set_defaults(func=run)


def open_journal(config: UnitConfig):
    """The unit's journal (``state_dir/journal.db``), as configured."""
    from firmware.runtime.journal import JOURNAL_NAME, Journal

    return Journal(config.state_dir / JOURNAL_NAME, config.bus_id, config.role, config.synchronous,
                   rotate_rounds=config.rotate_rounds, keep_segments=config.keep_segments)


def build(config: UnitConfig, bus: Any = None, journal: Any = None):
    """The unit and its started ports, from a validated configuration; ``bus`` (default: a
    new in-process bus) is the unit's bus, ``journal`` (default: opened here) its journal."""
    from firmware.chips import ChipRegistry
    from firmware.engine.profile import load_profile
    from firmware.runtime.bus import InProcessBus
    from firmware.runtime.dealer import DealerUnit
    from firmware.runtime.seat import SeatUnit
    from hal.backends import open_backend
    from hal.ports import Lamps

    bus = bus if bus is not None else InProcessBus()
    # the unit's id is its broker identity <table>/<id>: the sender of its messages, which
    # the dealer and the seats check (a seat speaks for its own box only)
    journal = journal if journal is not None else open_journal(config)
    ports = {name: open_backend(name, hw["backend"], hw["options"]) for name, hw in config.hardware.items()}
    unit: DealerUnit | SeatUnit
    inputs: tuple[str, ...]
    if config.role == "dealer":
        assert config.profile is not None           # parse_config: [game] profile is required
        console_lamps = ports.get("lamps")          # optional: the console's pit_call, ... lamps
        assert console_lamps is None or isinstance(console_lamps, Lamps), console_lamps
        unit = DealerUnit(config.bus_id, config.table, bus, journal, load_profile(config.profile),
                          decks=config.decks, limits=config.limits, close_wait=config.close_wait,
                          lamps=console_lamps)
        inputs = ("card_shoe", "console")
    else:
        lamps = ports["lamps"]
        assert config.box is not None and config.chips is not None     # [seat] box, chips are required
        assert isinstance(lamps, Lamps), lamps                           # hal: the lamps port's backends
        unit = SeatUnit(config.bus_id, config.table, config.box, bus, journal,
                        ChipRegistry.load(config.chips), config.spots, lamps,
                        config.confirm_cycles, config.release_cycles)
        inputs = ("chip_reader",)
    unit.storage_low_bytes, unit.storage_reserve_bytes = config.storage_low, config.storage_reserve
    unit.device_kinds = {ports[name].name: name for name in inputs}
    unit.recover()
    for name in inputs:
        ports[name].start(unit.post)
    if "lamps" in ports:                            # outputs only: they send nothing
        ports["lamps"].start(lambda e: None)
    unit.start()
    return unit, ports


TICK = 0.25                  # seconds between the dealer's clock readings
#: The interpreter's thread switch interval in a unit's process (Python's default: 5 ms). A
#: thread woken by an input (the dispatch loop by a card, the outbox's sender by a committed
#: report, paho's by a PUBACK) waits up to this long while another computes: on a card's
#: way to the seat's report that was several ms of hand-offs (issue #17.5, docs/runtime.md).
HANDOFF = 0.0005


def quick_handoffs() -> None:
    """Threads of a unit's process take turns every :data:`HANDOFF` seconds."""
    sys.setswitchinterval(HANDOFF)


def settle_heap() -> None:
    """Once the unit has started: what is alive now (its replayed state, the rules, the chip
    registry, paho, SQLite) lives for the whole run, so the collector stops walking it (a
    full collection of it was 7-11 ms on a card's way, docs/runtime.md); garbage goes first."""
    gc.collect()
    gc.freeze()


def serve(unit, stop: Callable[[], bool], clock: Callable[[], float] = time.monotonic,
          pet: Callable[[], None] | None = None) -> None:
    """The one dispatch queue: one input at a time, journal first, then act. The dealer's
    bounded wait for locks reads the clock as an input (``("tick", {"now": ...})``, only
    the readings that start or end a wait are journalled). ``pet``: the systemd watchdog,
    called from this loop only, so a stuck loop stops petting it."""
    ticks = getattr(unit, "close_wait", None) is not None
    next_tick = 0.0
    while not stop():
        if pet is not None:
            pet()
        try:
            item = unit.inbox.get(timeout=0.2)
        except queue.Empty:
            item = None
        if item is not None:
            for kind, body in unit.translate(item):
                unit.step(kind, body)
        if ticks and clock() >= next_tick:
            now = clock()
            next_tick = now + TICK
            for kind, body in unit.translate(("tick", {"now": now})):
                unit.step(kind, body)


class Link:
    """A unit's MQTT side: the bus, the controller watch, a seat's or the dealer's reporter."""

    def __init__(self, config: UnitConfig, journal: Any = None) -> None:
        from firmware.link import Outbox, connect_bus

        # a seat's or the dealer's reports: in its journal's file, committed with the step
        # that makes them (issue #17.5); an outbox.db of firmware before is moved in
        outbox = None
        if config.role in ("seat", "dealer"):
            outbox = (Outbox(config.state_dir / "outbox.db", config.bus_id, journal=journal) if journal is not None
                      else Outbox(config.state_dir / "outbox.db", config.bus_id))
        self.config = config
        self.bus = connect_bus(None, config.bus_id, link=config.link, outbox=outbox, role=config.role,
                               link_id=config.jackpot_link, config=config.raw, wait=5.0)
        self.watch: ControllerWatch | None = None
        self.reporter: SeatReporter | DealerReporter | None = None

    def attach(self, unit) -> None:
        """After the unit recovered: report what its state holds, then follow the controller."""
        from firmware.link.presence import ControllerWatch, takes_controller_input
        from firmware.link.reporter import DealerReporter, SeatReporter
        from firmware.runtime.unit import BEHIND, LOST

        if self.config.role in ("seat", "dealer"):
            reporter = (SeatReporter if self.config.role == "seat" else DealerReporter)(unit, self.bus)
            self.reporter = reporter
            reporter.sync()
            # a unit restarted from an older copy of its state refuses bets (issue #11.5);
            # the pit's reconciled command moves the outbox's held reports aside
            unit.outbox = self.bus.outbox
            self.bus.add_behind_listener(lambda behind: unit.post((BEHIND, behind)))
            # reports a controller restored from an older copy lost, no longer kept to resend
            self.bus.add_lost_listener(lambda lost: unit.post((LOST, lost)))
            self._follow_broker(unit)
        from firmware.link.challenge import answer_challenges
        answer_challenges(self.bus, self.config.verify.tree)     # a verifier's seeded check (docs/technician.md)
        self.watch = watch = ControllerWatch(self.bus, self.config.jackpot_link, self.config.table)
        if takes_controller_input(unit):
            watch.feed(unit)
        else:
            log.warning("%s: this firmware's %s unit does not take the controller's state yet; "
                        "progressive wagers are not gated by the link", self.config.bus_id, self.config.role)

    def _follow_broker(self, unit) -> None:
        """The broker link lost / back is a journalled device input like a port's (alarms
        broker_down / broker_restored to the pit, issue #12.4): paho's thread posts it, the
        unit's loop journals it. Only changes are posted; the state replayed from the
        journal is where it starts."""
        from hal.events import ConnectionLost, ConnectionRestored

        unit.device_kinds[BROKER_DEVICE] = "broker"
        down = [BROKER_DEVICE in unit.devices_down]
        link = self.config.link
        assert link is not None                     # a Link is made only for a unit with [link]

        def changed(up: bool) -> None:
            if up and down[0]:
                unit.post(ConnectionRestored(device=BROKER_DEVICE))
            elif not up and not down[0]:
                unit.post(ConnectionLost(device=BROKER_DEVICE, reason=f"no link to the MQTT broker {link.host}:{link.port}"))
            down[0] = not up

        self.bus.add_link_listener(changed)
        changed(self.bus.connected)

    def close(self) -> None:
        if self.bus.outbox is not None and not self.bus.wait_drained(DRAIN_ON_STOP):
            log.warning("%s: stopping with %d report(s) not yet at the broker; they stay in the outbox "
                        "and go at the next start", self.config.bus_id, self.bus.outbox.stats()["waiting"])
        self.bus.close()
        if self.bus.outbox is not None:
            self.bus.outbox.close()


def _verify_at_start(config: UnitConfig, unit) -> None:
    """``betbox verify`` before the first bet: the result is a journalled input; not
    verified is an alarm and the unit takes no bets (firmware.runtime.software)."""
    from firmware.verify import VerifyError, verify

    try:
        result = verify(config.verify.tree, config.verify.keyring)
        body = {"verified": result.ok, "detail": result.summary}
    except VerifyError as exc:
        body = {"verified": False, "detail": str(exc)}
    print(f"betbox: {config.bus_id} software {body['detail']}", file=sys.stderr, flush=True)
    for kind, checked in unit.translate(("software", body)):
        unit.step(kind, checked)


def _drive(path: str, ports: dict[str, Any], stop: threading.Event) -> threading.Thread:
    """Read bench-script lines from a named pipe and run them on the unit's mock ports."""
    from hal.mock import MockCardShoe, MockChipReader, MockConsole
    from hal.mock_keys import MockDriver

    def mock(cls):
        return next((p for p in ports.values() if isinstance(p, cls)), None)

    driver = MockDriver(mock(MockCardShoe), mock(MockChipReader), mock(MockConsole))
    if not driver.commands():
        raise ValueError(f"--drive {path}: this unit has no mock port to drive")
    if not os.path.exists(path):
        os.mkfifo(path, 0o600)
    elif not stat.S_ISFIFO(os.stat(path).st_mode):
        raise ValueError(f"--drive {path}: exists and is not a named pipe")
    fd = os.open(path, os.O_RDWR)              # never sees end-of-file between writers

    def loop() -> None:
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as pipe:
            for line in pipe:
                if stop.is_set():
                    return
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                try:
                    driver.run(line, source=f"--drive {path}")
                except Exception as exc:  # noqa: BLE001 - a bad line is told, the unit goes on
                    print(f"betbox run: --drive: {line!r}: {exc}", file=sys.stderr, flush=True)

    thread = threading.Thread(target=loop, name="drive", daemon=True)
    thread.start()
    return thread


def _first_frame(label: str, screenshot: str | None, stopping: threading.Event,
                 on_first_frame: Callable[[], None] | None = None) -> threading.Thread:
    """Say on stderr when the seat display has drawn its first frame (``<label> display
    showing``) and, with ``screenshot``, have the UI thread write the window as a PNG."""

    def watch() -> None:
        app = None
        while app is None and not stopping.is_set():
            # imported by the display, never here first (and maybe still being imported)
            app_class = getattr(sys.modules.get("kivy.app"), "App", None)
            app = app_class.get_running_app() if app_class is not None else None
            if app is None or not hasattr(app, "first_frame"):
                app = None
                stopping.wait(0.05)
        while app is not None and not stopping.is_set():
            if app.first_frame.wait(0.5):
                print(f"betbox: {label} display showing (first frame)", file=sys.stderr, flush=True)
                if on_first_frame is not None:
                    on_first_frame()
                if screenshot:
                    from kivy.clock import Clock

                    def shoot(_dt: float) -> None:
                        from kivy.core.window import Window
                        print(f"betbox: screenshot {Window.screenshot(name=screenshot)}", file=sys.stderr,
                              flush=True)
                    Clock.schedule_once(shoot)
                return

    thread = threading.Thread(target=watch, name="first-frame", daemon=True)
    thread.start()
    return thread


def _display(config: UnitConfig, unit, link: Link | None, stopping: threading.Event,
             screenshot: str | None = None, on_first_frame: Callable[[], None] | None = None) -> None:
    """The seat display on this (main) thread until it is closed or the unit is stopped."""
    from firmware.diag import LiveDiag
    from firmware.engine.money import parse_amount
    from firmware.link.config import config_hash
    from ui.app import run_seat_display
    from ui.source import ControllerFeed

    feed = ControllerFeed()
    if link is not None and link.watch is not None:
        link.watch.on_state(lambda s: feed.set(link=s.link, pending=s.pending,
                                               meter=None if s.meter is None else parse_amount(s.meter)))

    def stop_window(*_: Any) -> None:
        stopping.set()
        from kivy.app import App
        app = App.get_running_app()
        if app is not None:
            app.stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop_window)
    _first_frame(config.bus_id, screenshot, stopping, on_first_frame)
    d = config.display
    assert d is not None                            # the display runs only with [display]
    run_seat_display(unit, controller=feed, bus=link.bus if link else None, lang=d.lang, pin=d.pin,
                     size=d.size, fullscreen=d.fullscreen, config_digest=config_hash(config.raw),
                     diag=LiveDiag.of(config))


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"betbox run: {exc}", file=sys.stderr)
        return 2
    where = f" on {config.link.url} as {config.bus_id if config.role != 'jackpot' else 'jackpot/' + config.unit_id}" \
        if config.link else " (in-process bus)"
    if getattr(args, "screenshot", None) and (config.role != "seat" or config.display is None):
        print(f"betbox run: --screenshot: {args.config} has no [display] to take it of", file=sys.stderr)
        return 2
    try:
        # the one list of what a start needs: --check stops here, a start goes on
        check_startable(config, args.config)
    except ConfigError as exc:
        print(f"betbox run: {exc}", file=sys.stderr)
        return 2
    if args.check:
        at = f" at table {config.table!r}" if config.role != "jackpot" else ""
        print(f"{args.config}: {config.role} {config.unit_id!r}{at}{where}: configuration OK")
        return 0
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if config.role == "jackpot":
        from firmware.jackpot.service import run_controller
        assert config.jackpot is not None           # parse_config: role jackpot has its section
        stop = threading.Event()         # SIGTERM during start-up stops it cleanly too
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        store = config.jackpot.store        # PostgreSQL (hot standby): its URL holds no password
        print(f"betbox: jackpot controller {config.unit_id}{where}, database "
              f"{redact_url(store.url) if store is not None else config.jackpot.db}",
              file=sys.stderr, flush=True)
        try:
            return run_controller(config.jackpot, stop=stop)
        except (ValueError, OSError, RuntimeError, sqlite3.Error) as exc:   # RuntimeError: StoreError
            print(f"betbox run: {exc}", file=sys.stderr)
            return 2
    quick_handoffs()
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    link = None
    ports: dict[str, Any] = {}
    try:
        journal = open_journal(config)
        if config.link is not None:
            link = Link(config, journal)
        unit, ports = build(config, link.bus if link else None, journal)
        if link is not None:
            link.attach(unit)
        if config.verify.at_start:
            _verify_at_start(config, unit)
        if args.drive:
            _drive(args.drive, ports, stopping)
    except (ValueError, OSError, RuntimeError, sqlite3.Error, StorageError) as exc:
        where = "" if isinstance(exc, StorageError) else f"{args.config}: "   # StorageError names its file
        print(f"betbox run: {where}{exc}", file=sys.stderr)
        for port in ports.values():
            port.close()
        if link is not None:
            link.close()
        return 2
    print(f"betbox: {config.role} {config.unit_id} running{where} (journal {unit.journal.path}, "
          f"{unit.replayed_steps} steps replayed)", file=sys.stderr, flush=True)
    settle_heap()
    failed: list[BaseException] = []
    # systemd: READY once recovered (a seat with a display: at its first frame), the
    # watchdog petted by the dispatch loop only (firmware.runtime.notify)
    from firmware.runtime.notify import Notifier
    notifier = Notifier()
    ready = f"{config.bus_id} running, {unit.replayed_steps} journal steps replayed" + (
        "" if link is None else f", broker {'connected' if link.bus.connected else 'not connected'}")
    shows = config.role == "seat" and config.display is not None
    if not shows:
        notifier.ready(ready)

    def dispatch() -> None:
        try:
            serve(unit, stopping.is_set, pet=notifier.pet)
        except Exception as exc:  # noqa: BLE001 - a unit that cannot go on stops, saying why
            log.exception("%s: the dispatch loop failed", config.unit_id)
            failed.append(exc)
            stopping.set()

    try:
        if config.role == "seat" and config.display is not None:
            worker = threading.Thread(target=dispatch, name=f"dispatch:{config.unit_id}", daemon=True)
            worker.start()
            try:
                _display(config, unit, link, stopping, getattr(args, "screenshot", None),
                         on_first_frame=lambda: notifier.ready(ready + ", display showing"))
            except RuntimeError as exc:
                # ui.app.DisplayUnavailable: no screen to draw on, said in one sentence
                if type(exc).__name__ != "DisplayUnavailable":
                    raise
                log.error("%s: %s", config.unit_id, exc)
                print(f"betbox run: {config.unit_id}: {exc}", file=sys.stderr, flush=True)
                failed.append(exc)
            finally:
                stopping.set()
                worker.join(10)
        else:
            dispatch()
    finally:
        notifier.stopping()
        for port in ports.values():
            port.close()
        if link is not None:
            link.close()
        unit.journal.close()
        notifier.close()
    if failed:
        print(f"betbox run: {config.unit_id} stopped: {failed[0]!r}", file=sys.stderr)
        return 1
    return 0
