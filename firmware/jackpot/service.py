"""The jackpot controller on MQTT: reports in (QoS 1, persisted before the broker gets its
PUBACK: group commit, below), meters and per-unit confirmation marks out (retained), presence with a will.

The controller's session is persistent (fixed client id, ``clean_session=False``), so
reports published while it is down wait at the broker; what a broker loses (killed before
it saved) the seats' outboxes send again, because the controller's confirmation mark for
them has not moved.

A report that arrives ahead of a missing one is logged at INFO; a hole still open after
:data:`~firmware.jackpot.controller.GAP_GRACE` seconds, or when the service stops, at WARNING
(:meth:`~firmware.jackpot.controller.JackpotController.check_gaps`, on the publisher's tick).

Group commit: paho's thread only queues a report (``manual_ack``: no PUBACK yet); the
ingest thread takes every report that has arrived, applies them in arrival order in one
transaction, commits, and only then acknowledges each. A crash between the commit and the
PUBACKs makes the broker deliver them again, and the controller drops them as duplicates.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import socket
import threading
import time
from typing import Any, Callable

from firmware import wirejson
from firmware.engine.strict import redact_url
from firmware.link import topics
from firmware.link.config import LinkConfig, config_hash
from firmware.link.mqtt import MqttBus

from .config import JackpotConfig
from .controller import JackpotController
from .database import open_store
from .store import StoreUnavailable

log = logging.getLogger("betbox.jackpot")
_failed_log = wirejson.RateLimitedLog(log, level=logging.ERROR)
MAX_NUMBER = 2 ** 53            # hit and round numbers (SQLite's integers are 64-bit)
MAX_BATCH = 512                 # reports per transaction (the broker's in-flight window bounds it too)
MAX_WAITING = 4096              # reports queued for the ingest thread; then paho's thread waits
Arrived = tuple[str, bytes, Callable[[], None]]     # topic, payload, its PUBACK


OVERLAP = True                  # PostgreSQL: the next batch worked out while the last commits (False: one at a time; the bench's A/B)
OVERLAP_RUN = 0.5               # seconds one overlapped run (PostgreSQL) may hold the controller


def _until_stop(items: list[Arrived | None]) -> tuple[list[Arrived], bool]:
    """The reports before the end (``None``: what came before it is still stored), and
    whether the end came."""
    stop = None in items
    return [item for item in items[:items.index(None) if stop else None] if item is not None], stop


class Inbox(queue.Queue[Arrived | None]):
    """The reports paho's thread has queued for the ingest thread."""

    def get_batch(self, most: int) -> list[Arrived | None]:
        """Wait for one, then take up to ``most`` in one hold of the lock (one ``get`` each
        was a lock taken and a waiter notified per report, contended with paho's thread)."""
        with self.not_empty:
            while not self._qsize():
                self.not_empty.wait()
            items = [self._get() for _ in range(min(most, self._qsize()))]
            self.not_full.notify(len(items))
            return items

    def take_waiting(self, most: int) -> list[Arrived | None]:
        """Up to ``most`` of what is queued now, without waiting (none: ``[]``)."""
        with self.not_empty:
            items = [self._get() for _ in range(min(most, self._qsize()))]
            self.not_full.notify(len(items))
            return items


class JackpotService:
    def __init__(self, controller: JackpotController, link: LinkConfig, config_digest: str = "",
                 tick: float = 0.1) -> None:
        self.controller = controller
        self.link_id = controller.link_id
        self.tick = tick
        self.bus = MqttBus(link, f"jackpot/{self.link_id}", role="jackpot", config_digest=config_digest,
                           client_id=f"betbox-jackpot-{self.link_id}", clean_session=False,
                           status_topic=topics.jackpot_status_topic(self.link_id), manual_ack=True,
                           chunked_reads=True)
        self.bus.subscribe_deferred(topics.REPORT_PATTERN, self._on_report)
        self.bus.subscribe_raw(topics.command_topic(self.link_id), self._on_command)
        self.bus.subscribe_raw(topics.jackpot_status_topic(self.link_id), self._on_presence)
        self.bus.subscribe_raw(topics.bridge_state_topic("+"), self._on_bridge)
        self.bus.add_link_listener(self._on_link)
        self._meter_dirty = True
        self._all_marks = True
        self._link_back = time.monotonic()      # the last (re)connect: holds are judged a grace after
        self.failed = 0                 # reports and commands that raised (logged, dropped)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._publisher, name="jackpot-publisher", daemon=True)
        # bounded: QoS 0 reports are not held back by the broker's in-flight window, and a
        # flood of them must wait in the socket (as before group commit), not in memory
        self._inbox: Inbox = Inbox(MAX_WAITING)
        self._ingester = threading.Thread(target=self._ingest_loop, name="jackpot-ingest", daemon=True)
        self.batches = 0                # transactions committed (reports / batches: the grouping)
        # the database went away (or another controller took over): nothing more is taken
        # or acknowledged; run_controller steps down and the broker keeps the reports
        self.store_lost = threading.Event()

    def start(self, wait: float | None = 10.0) -> "JackpotService":
        self._thread.start()
        self._ingester.start()
        self.bus.start(wait)
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._inbox.put(None)       # what is queued is stored and acknowledged; later ones come again
        self._ingester.join(10)
        if not self.store_lost.is_set():
            try:
                self._publish_pending()
                self.controller.check_gaps(grace=0)       # every hole still open, warned before stopping
            except StoreUnavailable as exc:
                self._lose_store(exc)
        self.bus.close()

    def _on_link(self, up: bool) -> None:
        if up:
            self._meter_dirty = True
            self._all_marks = True
            self._link_back = time.monotonic()

    def _on_presence(self, topic: str, payload: bytes) -> None:
        """Hot standby: a controller that stepped down late (or its will) may say ``offline``
        on the shared presence topic after this one said ``online``; while this one serves,
        it says ``online`` again, so the seats' gate does not stay closed."""
        if self._stop.is_set() or self.store_lost.is_set() or not self.bus.connected:
            return
        try:
            state = wirejson.loads(payload).get("state")
        except (ValueError, AttributeError):
            return
        if state == "offline":
            self.bus.publish_raw(self.bus.status_topic, self.bus._status("online"), qos=1, retain=True)

    def _on_bridge(self, topic: str, payload: bytes) -> None:
        """A table's bridge up (``1``) or down (``0``): the controller holds that table's
        integrity grace while its records are queued behind the cut."""
        table = topic.split("/")[3]
        if payload in (b"0", b"1") and topics.UNIT_ID.match(f"{table}/bridge"):
            self.controller.bridge_state(table, payload == b"1")
        else:
            log.warning("bridge state %r on %s ignored: not 0 or 1", payload[:20], topic[:200])

    def _on_report(self, topic: str, payload: bytes, ack: Callable[[], None]) -> None:
        # paho's thread: only queue; the PUBACK goes when the ingest thread has committed it
        self._inbox.put((topic, payload, ack))

    def _ingest_loop(self) -> None:
        overlap = OVERLAP and self.controller.dialect == "postgresql"
        while True:
            batch, stop = _until_stop(self._inbox.get_batch(MAX_BATCH))
            if batch and overlap:
                stop = self._ingest_overlapped(batch, stop)
            elif batch:
                self._ingest(batch)
            if stop:
                return

    def _ingest_overlapped(self, first: list[Arrived], stop: bool) -> bool:
        """PostgreSQL: store ``first`` and what keeps arriving, the next batch worked out
        while the last one commits (:meth:`JackpotController.ingest_overlapped`), each batch
        acknowledged once its COMMIT is confirmed. For at most :data:`OVERLAP_RUN` seconds
        (the controller is held meanwhile: the meters and marks wait). When the run fails,
        every batch of it not acknowledged is handled as :meth:`_ingest` handles a failed
        batch. Returns whether the end (``stop``) was taken from the inbox."""
        if self.store_lost.is_set():
            return stop                 # not stored, not acknowledged: the broker sends it again
        taken, acked, ends = [first], 0, time.monotonic() + OVERLAP_RUN

        def take_next() -> list[tuple[str, bytes]] | None:
            nonlocal stop
            if stop or self.store_lost.is_set() or time.monotonic() > ends:
                return None
            batch, stop = _until_stop(self._inbox.take_waiting(MAX_BATCH))
            if not batch:
                return None
            taken.append(batch)
            return [(t, p) for t, p, _ in batch]

        def committed(results: list[Any]) -> None:
            nonlocal acked
            self.batches += 1
            self._stored(taken[acked], results)
            acked += 1

        try:
            self.controller.ingest_overlapped([(t, p) for t, p, _ in first], take_next, committed)
        except StoreUnavailable as exc:
            self._lose_store(exc)
        except Exception:                               # noqa: BLE001 - see _ingest
            for batch in taken[acked:]:
                if not self._ingest_each(batch):
                    break
        return stop

    def _ingest(self, batch: list[Arrived]) -> None:
        """Store ``batch`` in one transaction, then acknowledge it. Nothing may escape (it
        would end the ingest thread): when the batch cannot be stored, each report is tried
        on its own; one that still cannot be is logged and dropped (acknowledged); its unit's
        outbox still holds it (the mark has not moved) and sends it again."""
        if self.store_lost.is_set():
            return                      # not stored, not acknowledged: the broker sends it again
        try:
            results: list[Any] = self.controller.ingest_batch([(t, p) for t, p, _ in batch])
            self.batches += 1
        except StoreUnavailable as exc:
            self._lose_store(exc)
            return
        except Exception:                               # noqa: BLE001 - see above
            self._ingest_each(batch)
            return
        self._stored(batch, results)

    def _ingest_each(self, batch: list[Arrived]) -> bool:
        """A batch that failed as one, report by report; False when the store was lost
        meanwhile (then nothing more is acknowledged)."""
        results = [self._ingest_alone(t, p) for t, p, _ in batch]
        if self.store_lost.is_set():
            return False
        self._stored(batch, results)
        return True

    def _stored(self, batch: list[Arrived], results: list[Any]) -> None:
        """``batch`` is stored (``results``: None for a report dropped): acknowledge it."""
        if any(r is not None and r.meter_changed for r in results):
            self._meter_dirty = True
        self._acknowledge(batch)

    def _ingest_alone(self, topic: str, payload: bytes) -> Any:
        if self.store_lost.is_set():
            return None
        try:
            result = self.controller.ingest(topic, payload)
            self.batches += 1
            return result
        except StoreUnavailable as exc:
            self._lose_store(exc)
            return None
        except Exception as exc:                        # noqa: BLE001 - see _ingest
            self.failed += 1
            _failed_log("could not take a report on %s (dropped; the unit sends it again): %s: %.200s",
                        topic[:200], type(exc).__name__, exc)
            return None

    def _lose_store(self, exc: Exception) -> None:
        self.step_down(f"the jackpot database is gone ({exc})")

    def step_down(self, why: str) -> None:
        """Take and acknowledge nothing more, and leave the broker for good at once (said
        ``offline``; no reconnect): the controller taking over uses the same persistent
        session, and a reconnect of this one would take it back from it."""
        if not self.store_lost.is_set():
            log.error("%s: taking no more reports, stepping down", why)
        self.store_lost.set()
        self.bus.hang_up()

    def _acknowledge(self, batch: list[Arrived]) -> None:
        """The PUBACKs, after the commit ("stored before PUBACK")."""
        for _, _, ack in batch:
            try:
                ack()
            except Exception as exc:                    # noqa: BLE001 - a lost PUBACK only means a resend
                _failed_log("could not acknowledge a report: %s: %.200s", type(exc).__name__, exc)

    def _on_command(self, topic: str, payload: bytes) -> None:
        try:
            self._command(payload)
        except Exception as exc:                        # noqa: BLE001 - a command must not end paho's thread
            self.failed += 1
            _failed_log("could not answer a command %.100r: %s: %.200s", payload[:100], type(exc).__name__, exc)

    def _command(self, payload: bytes) -> None:
        tx = None
        try:
            data = wirejson.loads(payload)
            if not isinstance(data, dict):
                raise ValueError("a command is a JSON object")
            tx = data.get("tx")
            if data.get("schema") != 1 or data.get("command") != "confirm_hit":
                raise ValueError("unknown command (known: confirm_hit)")
            extra = sorted(set(data) - {"schema", "tx", "command", "hit", "unit", "round", "by"})
            if extra:
                raise ValueError(f"unknown field {extra[0]!r}")
            if "hit" in data:
                hit = data.get("hit")
                if (isinstance(hit, bool) or not isinstance(hit, int) or not 1 <= hit <= MAX_NUMBER
                        or "unit" in data or "round" in data):
                    raise ValueError(f"hit: {hit!r} is not a hit number (give a hit, or a unit and a round)")
            else:
                unit, rnd = data.get("unit"), data.get("round")
                if not isinstance(unit, str) or not topics.UNIT_ID.match(unit):
                    raise ValueError(f"unit: {unit!r} is not a unit id like table-1/seat-3 (or give a hit)")
                if isinstance(rnd, bool) or not isinstance(rnd, int) or not 1 <= rnd <= MAX_NUMBER:
                    raise ValueError(f"round: {rnd!r} is not a round number")
                hit = self.controller.pending_hit(unit, rnd)
            by = data.get("by")
            if not isinstance(by, str) or not by or len(by) > 200:
                raise ValueError("by: who confirms the hit is missing (or longer than 200 characters)")
            out: dict[str, Any] = {**self.controller.confirm(hit, f"attendant {by}"), "ok": True}
            self._meter_dirty = True
        except (ValueError, AttributeError) as exc:
            out = {"ok": False, "error": str(exc)}
        except StoreUnavailable as exc:
            self._lose_store(exc)
            out = {"ok": False, "error": "the jackpot database is unavailable; try again"}
        self.bus.publish_raw(topics.response_topic(self.link_id),
                             json.dumps({"schema": 1, "tx": tx if isinstance(tx, str) and len(tx) <= 100 else None,
                                         **out},
                                        sort_keys=True), qos=1)

    def _publisher(self) -> None:
        while not self._stop.wait(self.tick):
            if self.store_lost.is_set():
                continue
            try:
                self._publish_pending()
                self.controller.check_gaps()
                if self._holds_due():
                    self.controller.check_holds()
            except StoreUnavailable as exc:
                self._lose_store(exc)

    def _holds_due(self) -> bool:
        """While its own link is down the controller hears no table's bridge state (the
        floor broker itself may be gone, every table's records queued at its own broker):
        no claim is judged late until the hold grace has passed since the link came back."""
        return self.bus.connected and time.monotonic() - self._link_back >= self.controller.hold_grace

    def _publish_pending(self) -> None:
        if not self.bus.connected:
            return
        if self._meter_dirty:
            self._meter_dirty = False
            self.bus.publish_raw(topics.meter_topic(self.link_id), json.dumps(self.controller.meter(),
                                                                              sort_keys=True),
                                 qos=1, retain=True)
        units: set[str] | None = self.controller.take_dirty()
        if self._all_marks:
            self._all_marks = False
            units = None
        for unit, through in self.controller.marks(None if units is None else sorted(units)).items():
            self.bus.publish_raw(topics.confirmed_topic(self.link_id, unit),
                                 json.dumps({"schema": 1, "unit": unit, "through_seq": through}),
                                 qos=1, retain=True)


def configured_controller(cfg: JackpotConfig, db: Any) -> JackpotController:
    """The controller ``cfg`` describes, on ``db`` (the SQLite file or an open store)."""
    return JackpotController(db, cfg.pools, cfg.link_id, max_held=cfg.max_held)


def run_controller(cfg: JackpotConfig, stop: threading.Event | None = None) -> int:
    """``betbox run --config FILE`` for ``role = "jackpot"``: serve until SIGTERM/SIGINT
    (or ``stop`` is set). The configuration comes from :func:`firmware.config.load_jackpot_config`.
    With ``[store] url`` (PostgreSQL) it runs as a hot standby pair member (:func:`run_standby`)."""
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    if cfg.store is not None:
        return run_standby(cfg, stop)
    controller = configured_controller(cfg, cfg.db)
    service = JackpotService(controller, cfg.link, config_hash(cfg.raw))
    service.start(wait=None)
    log.info("jackpot controller %s on %s, database %s", cfg.link_id, cfg.link.url, cfg.db)
    try:
        stop.wait()
    finally:
        service.stop()
        controller.close()
    return 0


class LeaseWatch:
    """The active controller's own clock on its lease. A renewal that hangs (the database
    unreachable, not refused: no error comes) must not keep this controller serving once
    the standby may take over (the lease unrenewed for :data:`~firmware.jackpot.pg.LEASE`
    by the server's clock): when no renewal has succeeded for ``limit`` seconds (less than
    the lease), the service steps down (:meth:`JackpotService.step_down`) by itself."""

    def __init__(self, service: JackpotService, limit: float, since: float, check: float = 0.05) -> None:
        self.service, self.limit, self.check = service, limit, check
        self._last = since                      # when the renewal that made it active began
        self._done = threading.Event()
        threading.Thread(target=self._watch, name="jackpot-lease-watch", daemon=True).start()

    def renewed(self, tried: float) -> None:
        """A renewal begun at ``tried`` (monotonic) succeeded: the server's ``renewed`` is no earlier."""
        if not self.service.store_lost.is_set():
            self._last = tried

    def stop(self) -> None:
        self._done.set()

    def _watch(self) -> None:
        while not self._done.wait(self.check):
            if time.monotonic() - self._last > self.limit:
                self.service.step_down(f"jackpot controller {self.service.link_id}: the lease not renewed for "
                                       f"{self.limit:g}s (the database does not answer)")
                return


STANDBY_POLL = 0.25         # seconds between a waiting controller's tries for the lock
LEASE_CHECK = 0.5           # seconds between the active controller's checks that it still holds it
                            # (and renewals of its lease: pg.LEASE)


def run_standby(cfg: JackpotConfig, stop: threading.Event) -> int:
    """One of two (or more) controllers on one PostgreSQL database: wait for the advisory
    lock, then serve as the active one from what the database holds; step down (MQTT closed,
    nothing more acknowledged) when the lock or the database is lost, and wait again.

    A waiting controller is not on the broker at all: the active one's presence is the
    controller's presence (its will says ``offline`` the moment it dies), and the one taking
    over says ``online`` on the same topic with the same persistent session, so the reports
    the dead one had not acknowledged come to it."""
    from .pg import LEASE, ActiveLock

    store = cfg.store
    assert store is not None                    # run_controller: only with [store] url
    lock = ActiveLock(store, cfg.link_id)
    holder = f"{socket.gethostname()}:{os.getpid()}"
    waiting_logged = False
    while not stop.is_set():
        if not lock.try_take():
            ended = lock.end_stale(cfg.link_id, LEASE)
            if ended:
                log.warning("jackpot controller %s: the active controller has not renewed its lease for %gs "
                            "(hung or stopped): ended its database sessions %s; taking over", cfg.link_id,
                            LEASE, ended)
                stop.wait(0.05)             # the ended sessions' lock goes as their backends exit
                continue
            if not waiting_logged:
                log.info("jackpot controller %s: standby (another controller is active, or the database "
                         "is unreachable)", cfg.link_id)
                waiting_logged = True
            stop.wait(STANDBY_POLL)
            continue
        waiting_logged = False
        try:
            db = open_store(cfg.db, store.url, store.password_file)
            epoch = db.become_active(cfg.link_id, holder)
            controller = configured_controller(cfg, db)
            controller.epoch = epoch
            sessions = [db.conn.info.backend_pid]       # ended with the lock's, should the lease run out
            first = time.monotonic()
            if not lock.renew(cfg.link_id, epoch, sessions):
                raise StoreUnavailable("could not write the lease")
        except StoreUnavailable as exc:
            log.error("jackpot controller %s: cannot open the database: %s", cfg.link_id, exc)
            lock.release()
            stop.wait(STANDBY_POLL)
            continue
        service = JackpotService(controller, cfg.link, config_hash(cfg.raw))
        service.start(wait=None)
        log.info("jackpot controller %s: ACTIVE (epoch %d) on %s, database %s", cfg.link_id, epoch,
                 cfg.link.url, redact_url(store.url))
        watch = LeaseWatch(service, LEASE - LEASE_CHECK, since=first)
        try:
            while not stop.wait(LEASE_CHECK) and not service.store_lost.is_set():
                tried = time.monotonic()
                if not lock.held() or not lock.renew(cfg.link_id, epoch, sessions):
                    service.step_down(f"jackpot controller {cfg.link_id}: lost the active lock or its lease")
                watch.renewed(tried)
        finally:
            watch.stop()
            service.stop()
            try:
                controller.close()
            except Exception:                           # noqa: BLE001 - a dead connection
                pass
            lock.release()
    return 0
