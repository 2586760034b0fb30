"""A unit's diagnostics: every port, the link, the clock, storage, journal, outbox, software.

Each check gives one :class:`Check` (name, status ``ok`` | ``warn`` | ``fail`` | ``skip``, a
detail a technician can act on). Nothing here writes to the unit's journal, outbox or bus:
the journal is checked on a snapshot copy (SQLite's backup API), the outbox read-only, the
broker with a separate client that only subscribes. The ports are opened for the test, so
the unit's service is stopped first (a serial port is opened exclusively).

:func:`run_checks` is what ``betbox diag`` prints and what a service menu can show.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from firmware import __version__
from firmware.config import UnitConfig

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
MIN_FREE_BYTES = 64 * 1024 * 1024          # the state partition: below this, storage is low
MIN_FREE_SHARE = 0.05


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str

    def line(self) -> str:
        return f"{self.status.upper():4} {self.name}: {self.detail}"

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def verdict(checks: list[Check]) -> tuple[bool, str]:
    failed = [c.name for c in checks if c.status == FAIL]
    if failed:
        return False, f"FAIL: {len(failed)} of {len(checks)} checks failed ({', '.join(failed)})"
    warned = sum(c.status == WARN for c in checks)
    return True, f"PASS: {len(checks)} checks" + (f", {warned} warning(s)" if warned else "")


# --- ports ------------------------------------------------------------------------------

def _collect(port: Any, wait: float, done: Callable[[list[Any]], bool]) -> list[Any]:
    events: list[Any] = []
    lock = threading.Lock()

    def sink(event: Any) -> None:
        with lock:
            events.append(event)

    port.start(sink)
    from hal.mock import MockChipReader
    if isinstance(port, MockChipReader):
        port.cycle(1)                       # a mock reads only when driven: one inventory cycle
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        with lock:
            if done(events):
                break
        time.sleep(0.05)
    with lock:
        return list(events)


def _where(hw: Mapping[str, Any]) -> str:
    port = hw["options"].get("port")
    return f"{hw['backend']}{' ' + port if port else ''}"


def _shoe(name: str, hw: Mapping[str, Any], wait: float) -> Iterator[Check]:
    from hal.backends import open_backend
    from hal.events import ConnectionLost
    port = open_backend(name, hw["backend"], hw["options"])
    try:
        frames = lambda: getattr(port, "stats", {}).get("frames", 1) if hw["backend"] == "serial" else 1  # noqa: E731
        events = _collect(port, wait, lambda ev: frames() > 0)
        lost = [e for e in events if isinstance(e, ConnectionLost)]
        if frames() == 0 or lost or not port.connected:
            why = lost[-1].reason if lost else f"no frame within {wait:g} s"
            yield Check(f"{name} link", FAIL, f"{_where(hw)}: {why}")
            return
        tracker = getattr(port, "tracker", None)
        counter = getattr(port, "counter", None) if tracker is None else getattr(tracker, "counter", None)
        yield Check(f"{name} link", OK, f"{_where(hw)}: answering")
        yield Check(f"{name} counter", OK, f"card counter {counter if counter is not None else 'not reported yet'}")
    finally:
        port.close()


def _reader(name: str, hw: Mapping[str, Any], wait: float) -> Iterator[Check]:
    from hal.backends import open_backend
    from hal.events import ConnectionLost, InventoryCycle, ReaderFault
    from hal.ports import ChipReader
    port = open_backend(name, hw["backend"], hw["options"])
    try:
        assert isinstance(port, ChipReader), f"{name}: {type(port).__name__} is not a chip reader"
        # two cycles from a real reader: an antenna fault reported between cycles is seen too
        enough = 1 if hw["backend"] == "mock" else 2
        events = _collect(port, wait, lambda ev: sum(isinstance(e, InventoryCycle) for e in ev) >= enough)
        cycles = [e for e in events if isinstance(e, InventoryCycle)]
        lost = [e for e in events if isinstance(e, ConnectionLost)]
        faults = {e.spot: e.code for e in events if isinstance(e, ReaderFault)}
        if not cycles:
            why = lost[-1].reason if lost else f"no inventory cycle within {wait:g} s"
            yield Check(f"{name}", FAIL, f"{_where(hw)}: {why}")
            return
        if None in faults:
            yield Check(f"{name}", FAIL, f"{_where(hw)}: the reader reports fault {faults[None]}")
        seen = cycles[-1].as_mapping()
        for i, spot in enumerate(port.spots):
            label = f"{name} antenna {i} ({spot})"
            if spot in faults:
                yield Check(label, FAIL, f"fault {faults[spot]}")
            elif spot not in seen:
                yield Check(label, FAIL, "missing from the inventory cycle")
            else:
                yield Check(label, OK, f"reading ({len(seen[spot])} tag(s) on the spot)")
    finally:
        port.close()


def _console(name: str, hw: Mapping[str, Any], wait: float) -> Iterator[Check]:
    from hal.backends import open_backend
    from hal.ports import DealerConsole
    port = open_backend(name, hw["backend"], hw["options"])
    try:
        assert isinstance(port, DealerConsole), f"{name}: {type(port).__name__} is not a console"
        port.start(lambda e: None)
        time.sleep(min(wait / 4, 0.5))      # past the debounce: a button down now is held down
        fitted = [str(b) for b in port.buttons]
        stuck = [b for b in fitted if port.is_pressed(b)]
        if stuck:
            yield Check(f"{name} buttons", FAIL, f"held down (stuck?): {', '.join(stuck)}")
        else:
            yield Check(f"{name} buttons", OK, f"{len(fitted)} fitted, none held down: {', '.join(fitted)}")
    finally:
        port.close()


def _lamps(name: str, hw: Mapping[str, Any], wait: float) -> Iterator[Check]:
    """The lamp test: each lamp on, then off, in order (the technician watches them)."""
    from hal.backends import open_backend
    from hal.ports import LAMP_OFF, LAMP_ON, Lamps
    port = open_backend(name, hw["backend"], hw["options"])
    try:
        assert isinstance(port, Lamps), f"{name}: {type(port).__name__} is not a lamp port"
        port.start(lambda e: None)
        wrong = []
        for lamp in port.lamps:
            port.on(lamp)
            if port.state(lamp) != LAMP_ON:
                wrong.append(f"{lamp} did not turn on")
            time.sleep(min(wait / 10, 0.3))
            port.off(lamp)
            if port.state(lamp) != LAMP_OFF:
                wrong.append(f"{lamp} did not turn off")
        if wrong:
            yield Check(f"{name} lamp test", FAIL, "; ".join(wrong))
        else:
            yield Check(f"{name} lamp test", OK, f"on and off in turn: {', '.join(port.lamps)}")
    finally:
        port.close()


PORT_CHECKS = {"card_shoe": _shoe, "chip_reader": _reader, "console": _console, "lamps": _lamps}
PORT_LABELS = {"card_shoe": "card_shoe link", "console": "console buttons", "lamps": "lamps lamp test"}


def check_ports(config: UnitConfig, wait: float) -> Iterator[Check]:
    from hal.errors import HalError
    for name, hw in config.hardware.items():
        try:
            yield from PORT_CHECKS[name](name, hw, wait)
        except (HalError, ValueError, OSError) as exc:
            yield Check(PORT_LABELS.get(name, name), FAIL, f"{_where(hw)}: {exc}")


# --- the link ---------------------------------------------------------------------------

def check_link(config: UnitConfig, wait: float) -> Iterator[Check]:
    """The broker (connect and subscribe: a round trip) and the controller (its retained
    status). A separate client id; it publishes nothing."""
    if config.link is None:
        yield Check("broker", SKIP, "no [link]: this unit runs alone on the in-process bus")
        return
    import json

    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    from firmware.link import topics

    link = config.link
    connected, subscribed, heard = threading.Event(), threading.Event(), threading.Event()
    result: dict[str, Any] = {}
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"{config.bus_id.replace('/', ':')}:diag",
                    clean_session=True, protocol=mqtt.MQTTv311)
    if link.username:
        c.username_pw_set(link.username, link.password)
    if link.tls:
        c.tls_set(ca_certs=str(link.tls.ca), certfile=str(link.tls.cert) if link.tls.cert else None,
                  keyfile=str(link.tls.key) if link.tls.key else None)
    status_topic = topics.jackpot_status_topic(config.jackpot_link)

    def on_connect(client, userdata, flags, reason, properties=None):
        result["connack"] = str(reason)
        if not reason.is_failure:
            connected.set()
            client.subscribe(status_topic, qos=1)
        else:
            heard.set()

    def on_subscribe(client, userdata, mid, reasons, properties=None):
        subscribed.set()

    def on_message(client, userdata, msg):
        try:
            result["status"] = json.loads(msg.payload)
        except ValueError:
            result["status"] = {"state": f"unreadable ({len(msg.payload)} bytes)"}
        heard.set()

    c.on_connect, c.on_subscribe, c.on_message = on_connect, on_subscribe, on_message
    started = time.monotonic()
    try:
        c.connect_async(link.host, link.port, keepalive=max(link.keepalive, 5))
        c.loop_start()
        if not connected.wait(wait):
            why = result.get("connack", f"no answer within {wait:g} s")
            yield Check("broker", FAIL, f"{link.url} as {link.username or '(anonymous)'}: {why}")
            yield Check("controller", SKIP, "the broker is not reachable")
            return
        if not subscribed.wait(wait):
            yield Check("broker", FAIL, f"{link.url}: connected, but no answer to a subscribe")
            return
        ms = (time.monotonic() - started) * 1000
        yield Check("broker", OK, f"{link.url} as {link.username or '(anonymous)'}: round trip {ms:.0f} ms")
        heard.wait(wait)
        status = result.get("status")
        if status is None:
            yield Check("controller", FAIL, f"jackpot/{config.jackpot_link}: no status on {status_topic}")
        elif status.get("state") != "online":
            yield Check("controller", FAIL, f"jackpot/{config.jackpot_link}: {status.get('state')}")
        else:
            yield Check("controller", OK, f"jackpot/{config.jackpot_link} online "
                                          f"(firmware {status.get('firmware', '?')})")
    finally:
        c.loop_stop()
        c.disconnect()


# --- the unit's own state -------------------------------------------------------------

def check_clock() -> Check:
    """NTP: timedatectl (systemd-timesyncd or chrony behind timedated), else chronyc."""
    for cmd, good in ((["timedatectl", "show", "-p", "NTPSynchronized", "--value"], lambda o: o.strip() == "yes"),
                      (["chronyc", "-n", "tracking"], lambda o: "Leap status     : Normal" in o)):
        if shutil.which(cmd[0]) is None:
            continue
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
        except subprocess.TimeoutExpired:
            continue
        if done.returncode != 0:
            continue
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if good(done.stdout):
            return Check("clock", OK, f"NTP synchronised ({cmd[0]}); UTC {now}")
        return Check("clock", FAIL, f"NTP not synchronised ({cmd[0]}): journal times may not match "
                                    f"the surveillance recording; UTC {now}")
    return Check("clock", WARN, "cannot tell the NTP state (no answer from timedatectl or chronyc)")


def check_storage(state_dir: Path) -> Check:
    try:
        usage = shutil.disk_usage(state_dir)
    except OSError as exc:
        return Check("storage", FAIL, f"{state_dir}: {exc.strerror}")
    free = usage.free
    detail = f"{state_dir}: {free // (1024 * 1024)} MiB free of {usage.total // (1024 * 1024)} MiB"
    if free < MIN_FREE_BYTES or free < usage.total * MIN_FREE_SHARE:
        return Check("storage", FAIL, detail + " (low)")
    return Check("storage", OK, detail)


def _integrity(path: Path) -> str:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return "; ".join(r[0] for r in db.execute("PRAGMA integrity_check").fetchall())
    finally:
        db.close()


def check_journal(config: UnitConfig) -> Iterator[Check]:
    """``PRAGMA integrity_check`` on every journal file, then a replay of the journal (its
    last round included) on a snapshot copy, as a restarting unit would."""
    from firmware.runtime.journal import JOURNAL_NAME, segments
    active = config.state_dir / JOURNAL_NAME
    if not active.exists():
        yield Check("journal", WARN, f"{active}: no journal yet (a unit that never ran)")
        return
    bad = []
    files = [*segments(active), active]
    for f in files:
        try:
            result = _integrity(f)
        except sqlite3.DatabaseError as exc:
            result = str(exc)
        if result != "ok":
            bad.append(f"{f.name}: {result}")
    if bad:
        yield Check("journal integrity", FAIL, "; ".join(bad))
        return
    yield Check("journal integrity", OK, f"PRAGMA integrity_check ok on {len(files)} file(s)")
    yield _replay(config, active)


def _replay(config: UnitConfig, active: Path) -> Check:
    from firmware.runtime.journal import JOURNAL_NAME, Journal, segments
    with tempfile.TemporaryDirectory(prefix="betbox-diag-") as tmp:
        copy = Path(tmp) / JOURNAL_NAME
        src = sqlite3.connect(f"file:{active}?mode=ro", uri=True)
        dst = sqlite3.connect(copy)
        try:
            src.backup(dst)                 # a consistent snapshot, even of a running unit's journal
        finally:
            src.close()
            dst.close()
        for seg in segments(active):
            shutil.copy2(seg, Path(tmp) / seg.name)
        try:
            unit = _unit(config, Journal(copy, config.bus_id, config.role, "FULL"))
            steps = unit.recover()
            last = unit.current_round()
            unit.journal.close()
        except Exception as exc:  # noqa: BLE001 - whatever stops a replay is the finding
            return Check("journal replay", FAIL, f"{type(exc).__name__}: {exc}")
    return Check("journal replay", OK, f"{steps} step(s) replayed identically; last round {last or '-'}")


def _unit(config: UnitConfig, journal: Any) -> Any:
    """The unit as ``betbox run`` builds it, on an in-process bus and without its ports."""
    from firmware.chips import ChipRegistry
    from firmware.engine.profile import load_profile
    from firmware.runtime.bus import InProcessBus
    from firmware.runtime.dealer import DealerUnit
    from firmware.runtime.seat import SeatUnit
    if config.role == "dealer":
        if config.profile is None:
            raise ValueError(f"{config.bus_id}: a dealer's configuration names its profile")
        return DealerUnit(config.bus_id, config.table, InProcessBus(), journal, load_profile(config.profile),
                          decks=config.decks, limits=config.limits, close_wait=config.close_wait)
    if config.box is None or config.chips is None:
        raise ValueError(f"{config.bus_id}: a seat's configuration names its box and chip registry")
    return SeatUnit(config.bus_id, config.table, config.box, InProcessBus(), journal,
                    ChipRegistry.load(config.chips), config.spots, None,
                    config.confirm_cycles, config.release_cycles)


def check_outbox(config: UnitConfig) -> Check:
    # the outbox lives in the journal's file (issue #17.5); an outbox.db beside it is one of
    # firmware before, not yet moved in
    old = config.state_dir / "outbox.db"
    path = old if old.exists() else config.state_dir / "journal.db"
    if config.link is None:
        return Check("outbox", SKIP, "no [link]: no reports to send")
    if not path.exists():
        return Check("outbox", OK, "empty (no outbox yet)")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'outbox'").fetchone() is None:
                return Check("outbox", OK, "empty (no outbox yet)")
            total, acked = db.execute("SELECT COUNT(*), COALESCE(SUM(acked), 0) FROM outbox").fetchone()
            kept, lost, behind, aside = _outbox_marks(db, "meta" if path == old else "outbox_meta")
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        return Check("outbox", FAIL, f"{path}: {exc}")
    waiting = total - acked
    status = OK if waiting == 0 and lost is None and not behind and not aside else WARN
    detail = (f"{waiting} report(s) not yet at the broker, {acked} awaiting the controller's confirmation, "
              f"{kept} confirmed kept to send again should the controller go back")
    if lost is not None:
        detail += (f"; the controller went back to seq {lost['controller']} and does not hold reports "
                   f"{lost['first']}-{lost['last']}, no longer kept here: a supervisor reconciles them "
                   "from this unit's journal")
    if behind:
        detail += (f"; behind the controller's mark ({behind}): its reports up to it are held (docs/runtime.md: "
                   "restore the newest state, or the pit reconciles it: betbox pit reconciled)")
    if aside:
        detail += (f"; {aside} report(s) set aside at a reconciliation (held under the controller's mark; "
                   "the supervisor's to reconcile from the journal: table set_aside)")
    return Check("outbox", status, detail)


def _outbox_marks(db: sqlite3.Connection, meta: str) -> tuple[int, dict[str, int] | None, str | None, int]:
    """The confirmed reports kept (for a controller that goes back), the reports such a
    controller lost (if any), the outbox's behind mark (as stored) and how many reports a
    reconciliation set aside; an outbox of firmware before has none of the tables."""
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    marks = dict(db.execute(f"SELECT key, value FROM {meta} WHERE key IN ('went_back', 'behind')")) \
        if meta in tables else {}
    kept = db.execute("SELECT COUNT(*) FROM kept").fetchone()[0] if "kept" in tables else 0
    aside = db.execute("SELECT COUNT(*) FROM set_aside").fetchone()[0] if "set_aside" in tables else 0
    lost = json.loads(marks["went_back"]) if "went_back" in marks else None
    return kept, lost, marks.get("behind"), aside


def check_software(config: UnitConfig) -> Iterator[Check]:
    from firmware.verify import VerifyError, verify
    tree = config.verify.tree
    release = os.path.realpath(tree)
    if os.path.isdir(tree):
        yield Check("firmware", OK, f"betbox {__version__} ({tree} -> {release})")
    else:
        import sys
        yield Check("firmware", OK, f"betbox {__version__} (not an installed release: {sys.prefix})")
    if not config.verify.at_start:
        yield Check("verify", SKIP, "[verify] at_start is off in this configuration (development)")
        return
    try:
        result = verify(tree, config.verify.keyring)
    except VerifyError as exc:
        yield Check("verify", FAIL, str(exc))
        return
    yield Check("verify", OK if result.ok else FAIL, result.summary)


def run_checks(config: UnitConfig, wait: float = 3.0) -> list[Check]:
    """Every check of this unit, in the order a technician reads them."""
    checks: list[Check] = []
    checks += check_software(config)
    checks += check_ports(config, wait)
    checks += check_link(config, wait)
    checks.append(check_clock())
    checks.append(check_storage(config.state_dir))
    checks += check_journal(config)
    checks.append(check_outbox(config))
    return checks


def live_checks(config: UnitConfig, wait: float = 3.0) -> list[Check]:
    """The checks that can run beside the running unit (its service menu): all of
    :func:`run_checks` but the ports, which the unit holds open (a serial port is
    exclusive); its screen shows their live state instead."""
    checks: list[Check] = []
    checks += check_software(config)
    checks.append(Check("ports", SKIP, "in use by the running unit (its state is above); "
                                       "betbox diag with the unit stopped tests them"))
    checks += check_link(config, wait)
    checks.append(check_clock())
    checks.append(check_storage(config.state_dir))
    checks += check_journal(config)
    checks.append(check_outbox(config))
    return checks


class LiveDiag:
    """The service menu's diagnostics: :func:`live_checks` on a thread of its own (it
    hashes the release and waits for the broker: seconds), the last results kept.
    ``on_done`` runs on that thread when a run ends."""

    def __init__(self, checks: Callable[[], list[Check]]) -> None:
        self._checks = checks
        self._lock = threading.Lock()
        self.results: list[Check] | None = None
        self.running = False
        self.finished_at: float | None = None          # time.time() of the last run's end

    @classmethod
    def of(cls, config: UnitConfig, wait: float = 3.0) -> "LiveDiag":
        return cls(lambda: live_checks(config, wait))

    def start(self, on_done: Callable[[], None] | None = None) -> bool:
        """Run the checks again (False: a run is under way already)."""
        with self._lock:
            if self.running:
                return False
            self.running = True
        threading.Thread(target=self._run, args=(on_done,), name="service-diag", daemon=True).start()
        return True

    def _run(self, on_done: Callable[[], None] | None) -> None:
        try:
            results = self._checks()
        except Exception as exc:  # noqa: BLE001 - the screen says what stopped the checks
            results = [Check("diagnostics", FAIL, f"{type(exc).__name__}: {exc}")]
        with self._lock:
            self.results, self.running, self.finished_at = results, False, time.time()
        if on_done is not None:
            on_done()
