"""The jackpot controller's core: reports in, pools and meters out. No network here (the
service in :mod:`firmware.jackpot.service` feeds it from MQTT), so tests and the bench
drive it directly.

One writer: :meth:`JackpotController.ingest` runs on one thread; each report is applied in
one SQLite transaction with everything it changes. Duplicates (same unit and seq) are
dropped and counted; a sequence number that skips ahead records a gap for that unit; a
report that fills a gap later is accepted. Rejected messages are logged and kept in the
``rejected`` table and change nothing else.

Gaps: every skip ahead is recorded in the ``gap`` table at once, exactly (first, last, the
event that revealed it), and logged at INFO as an out-of-order arrival: after a reconnect a
unit's outbox resends from its confirmed mark while the broker may still be delivering
newer reports, so a hole that closes moments later is normal. A WARNING is logged only for
a hole still open :data:`GAP_GRACE` seconds after it was seen (:meth:`check_gaps`, which the
MQTT service calls on every tick), and for every hole still open when the service stops;
a warned hole that closes later is logged at INFO. ``betbox jackpot report`` always shows
the holes open now (``missing_ranges``) and how many gaps were ever recorded.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, fields
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Sequence

from firmware.wirejson import RateLimitedLog

from . import pools as P
from .claims import BOOKED_KINDS, STAGE, Claim, dealer_claims, seat_claim, stage_of_record
from .config import MAX_HELD
from .pools import DamagedRow, PoolSpec, PoolState, cents, money, stored_money
from .store import StoreUnavailable, dialect, dumps, keep_rejected, open_held, pipeline, rejected_counts
from .store import close as close_store
from .wire import Report, ReportRejected, parse_report
from .writes import insert_rows, update_rows

log = logging.getLogger("betbox.jackpot")

LAST_HITS = 25
GAP_GRACE = 5.0             # seconds a hole in a unit's seqs may stay open before a warning
HOLD_GRACE = 30.0           # seconds a claim may wait for its counterpart before an integrity alarm
POOL_FIELDS = tuple(f.name for f in fields(PoolState))
EVENT_COLUMNS = ("n", "unit", "seq", "id", "kind", "table_id", "box", "round", "pool", "body", "effect")
CLAIM_KEY = ("table_id", "round", "box", "kind", "key", "source")
ItemKey = tuple[str, int, int, str, str]            # (table, round, box, kind, key): one claim per source
# the few statements SQLite and PostgreSQL spell differently
PATCH_POOL = {"sqlite": "UPDATE pool SET state = json_patch(state, ?) WHERE name = ?",
              "postgresql": "UPDATE pool SET state = (state::jsonb || ?::jsonb)::text WHERE name = ?"}
ALARM_OF = {"sqlite": "json_extract(body, '$.alarm')", "postgresql": "body::jsonb ->> 'alarm'"}


def _rollback(db: Any) -> None:
    """Roll back, when the connection is still there to hear it (a lost PostgreSQL
    connection has rolled the transaction back already)."""
    try:
        db.execute("ROLLBACK")
    except StoreUnavailable:
        pass


@dataclass(frozen=True)
class Ingested:
    status: str                 # accepted | duplicate | rejected
    reason: str | None = None
    unit: str | None = None
    seq: int | None = None
    meter_changed: bool = False


def spec_to_json(spec: PoolSpec) -> dict[str, Any]:
    return {"name": spec.name, "seed": money(spec.seed), "rate": money(spec.rate),
            "maximum": money(spec.maximum), "tables": list(spec.tables)}


class JackpotController:
    def __init__(self, db_path: str | Path | Any, pools: Sequence[PoolSpec], link_id: str = "main",
                 hold_grace: float = HOLD_GRACE, max_held: int | None = None) -> None:
        """``db_path``: the SQLite file, or an open store (:func:`~firmware.jackpot.database.open_store`:
        PostgreSQL). ``max_held``: claims one seat may hold at once (``[jackpot] max_held``;
        default :data:`MAX_HELD`)."""
        if not pools:
            raise ValueError("a jackpot controller needs at least one pool")
        self.link_id = link_id
        self.hold_grace = hold_grace
        self.max_held = MAX_HELD if max_held is None else max_held
        self.db: Any = open_held(db_path) if isinstance(db_path, (str, Path)) else db_path
        # a file this controller opened is closed cleanly (the file says so: a later start
        # knows its missing WAL is normal) also when the controller is dropped unclosed
        self._closer = weakref.finalize(self, close_store, self.db) if isinstance(db_path, (str, Path)) else None
        self.dialect = dialect(self.db)
        # hot standby (PostgreSQL): the epoch this controller became active in (set by the
        # service, after PgDatabase.become_active and before anything is ingested); every
        # transaction checks it is still the newest (:meth:`_fence`)
        self.epoch: int | None = None
        self._held_upper: dict[tuple[str, int], int] = {}   # (table, box) -> at most this many seat claims held
        self._stage_top: dict[tuple[str, str], int] = {}    # (table, stage) -> highest round the dealer recorded
        # the batch's reports already held (by (unit, seq) and by id) and the next ingest
        # number (:meth:`_look_up`): the active controller is the one writer
        self._known: dict[Any, str] = {}
        self._next_n: int | None = None
        # the next hit number, likewise (a hit's number read back would stall the pipeline),
        # and the one PostgreSQL's identity on hit.id was last set to follow
        self._next_hit: int | None = None
        self._identity_hit: int | None = None
        # the batch's writes, held until its end (or a read that needs them) and then sent
        # one statement a table (:meth:`_flush`)
        self._new_events: dict[int, list[Any]] = {}         # n -> the row (EVENT_COLUMNS)
        self._effects: dict[int, str] = {}                  # n -> effect, for events already written
        self._new_claims: dict[tuple[ItemKey, str], tuple[list[Any], str, float, int]] = {}
        self._changed_claims: dict[tuple[ItemKey, str], list[Any]] = {}
        self._new_bookings: list[tuple[Any, ...]] = []
        self._batch_bookings: dict[tuple[str, int, int, str], dict[str, Any]] = {}
        # during a batch: the pending meter hits of its rounds, (table, round, box) -> [(hit,
        # amount, share)], read with the claims and kept as they change
        self._batch_hits: dict[tuple[str, int, int], list[tuple[int, str, str]]] = {}
        self._new_stages: dict[tuple[str, int, str], int] = {}   # (table, round, stage) -> event
        self._dups: dict[str, int] = {}
        # during a batch: every claim of the batch's rounds, read in one query and kept as it
        # is written (the active controller is the one writer), so matching a claim needs no
        # read-back; item -> source -> [order, event, value, state]; None outside a batch
        self._batch_claims: dict[tuple[str, int, int, str, str], dict[str, list[Any]]] | None = None
        self._batch_rounds: set[tuple[str, int]] = set()
        self._round_items: dict[tuple[str, int], list[tuple[str, int, int, str, str]]] = {}
        self._claim_order = 0
        self.lock = threading.RLock()
        self.specs = {p.name: p for p in pools}
        self._pool_of: dict[str, PoolSpec | None] = {}
        self.states: dict[str, PoolState] = {}
        stored = {name: (json.loads(spec), json.loads(state))
                  for name, spec, state in self.db.execute("SELECT name, spec, state FROM pool")}
        self.db.execute("BEGIN IMMEDIATE")
        for spec in pools:
            if spec.name in stored:
                self.states[spec.name] = PoolState.from_json(stored[spec.name][1])
                if stored[spec.name][0] != spec_to_json(spec):
                    log.warning("pool %s: configuration changed (%s -> %s); meters kept",
                                spec.name, stored[spec.name][0], spec_to_json(spec))
                self.db.execute("UPDATE pool SET spec = ? WHERE name = ?", (dumps(spec_to_json(spec)), spec.name))
            else:
                self.states[spec.name] = P.new_pool(spec)
                self.db.execute("INSERT INTO pool VALUES (?, ?, ?)", (spec.name, dumps(spec_to_json(spec)),
                                                                     dumps(self.states[spec.name].to_json())))
        self.db.execute("COMMIT")
        self.dirty_units: set[str] = set()
        self._stored_pools: dict[str, PoolState] | None = None     # what the pool rows hold now
        self._unit_rows: dict[str, list[int]] = {}      # unit -> [events, highest, contiguous]
        self._rows_dirty: set[str] = set()
        self.counts = {"accepted": 0, "duplicate": 0, "rejected": 0, "repeated": 0, "integrity": 0}
        self.rejected_log = RateLimitedLog(log)     # a flood of junk: all counted, a few logged
        # what the controller says of one box's claims (a repeat, an integrity alarm), per
        # (table, box, level): a seat's flood of well-formed repeats or contradictions is
        # counted and recorded in full, logged sparsely, and never silences another box
        self._box_logs: dict[tuple[str, int, int], RateLimitedLog] = {}
        # units with a hole in their seqs (highest > contiguous): since when (monotonic, this
        # process; holes found in the database at start count from the start), and warned
        self._holes: dict[str, float] = {}
        self._warned: set[str] = set()
        # tables whose bridge to the floor is down (their records queue behind the cut), and
        # when (wall clock, as claim.held_at) each came back: their grace counts from then
        self._bridge_down: set[str] = set()
        self._bridge_back: dict[str, float] = {}
        now = time.monotonic()
        for (unit,) in self.db.execute("SELECT unit FROM unit WHERE highest > contiguous"):
            self._holes[unit] = now
        # the meter shows each pending hit's amount: a damaged one refuses the start, named
        # (DamagedRow, a ValueError), as a damaged pool state does
        self.meter()

    def _fence(self) -> None:
        if self.epoch is not None:
            self.db.fence(self.link_id, self.epoch)

    def pool_for(self, table: str) -> PoolSpec | None:
        # remembered per table: asked for every report, and the pools do not change
        if table not in self._pool_of:
            self._pool_of[table] = next((s for s in self.specs.values() if s.serves(table)), None)
        return self._pool_of[table]

    # -- reports -----------------------------------------------------------------------

    def ingest(self, topic: str, payload: bytes) -> Ingested:
        return self.ingest_batch([(topic, payload)])[0]

    def ingest_batch(self, messages: Sequence[tuple[str, bytes]]) -> list[Ingested]:
        """Apply reports in arrival order in ONE transaction (group commit: one fsync for the
        lot), each in a savepoint so a rejected one changes nothing but the ``rejected`` log.
        Returns once it is committed; the caller acknowledges the messages only then. An
        unexpected error (the disk) rolls the whole batch back and raises: nothing of it is
        held, so the caller may try the reports one by one."""
        with self.lock:
            db = self.db
            before = dict(self.states)
            results: list[Ingested] = []
            try:
                # PostgreSQL: writes whose result nothing reads go out without a round trip each
                with pipeline(db):
                    db.execute("BEGIN IMMEDIATE")
                    self._fence()
                    parsed = [self._parse(topic, payload) for topic, payload in messages]
                    self._look_up([r for r in parsed if isinstance(r, Report)])
                    self._load_claims([r for r in parsed if isinstance(r, Report)])
                    for (topic, payload), r in zip(messages, parsed, strict=True):
                        results.append(self._ingest_one(topic, payload, r))
                    self._flush()
                    self._store_units()
                    self._store_pools()
                    db.execute("COMMIT")
            except BaseException:
                self._forget(before)
                raise
            finally:
                self._batch_claims = None
                self._batch_bookings.clear()
            self._committed(results)
            return results

    def _forget(self, before: dict[str, PoolState]) -> None:
        """A batch (or a run of them) not committed: roll back and drop everything kept in
        memory since ``before`` (the pool states the database holds)."""
        _rollback(self.db)
        self.states.update(before)
        self._held_upper.clear()
        self._stage_top.clear()
        self._known, self._next_n, self._next_hit = {}, None, None
        self._drop_writes()
        self._stored_pools = None         # re-read from the database on the next store
        self._unit_rows.clear()
        self._rows_dirty.clear()

    def _committed(self, results: list[Ingested]) -> None:
        for result in results:
            self.counts[result.status] += 1
            if result.status == "rejected" or result.unit is None:
                continue
            self.dirty_units.add(result.unit)
            if result.status == "accepted":
                self._track_hole(result.unit)

    def ingest_overlapped(self, first: Sequence[tuple[str, bytes]],
                          take_next: Callable[[], Sequence[tuple[str, bytes]] | None],
                          committed: Callable[[list[Ingested]], None]) -> None:
        """PostgreSQL: ingest ``first`` and the batches ``take_next`` hands out (until it
        gives none), each in one transaction as :meth:`ingest_batch` does, but the next
        batch is worked out in memory while the server stores and commits the last one:
        one connection in pipeline mode, one writer (every transaction fenced by its epoch).

        The next batch's reads go out in the last one's transaction *before* its writes (so
        the server answers them at once), and what the last batch holds in memory that the
        reads cannot see yet (its events, its rounds' claims and bookings) is carried over.
        ``committed(results)`` is called for each batch, in order, once its COMMIT is
        confirmed (its PUBACKs may go then). Any failure (a COMMIT refused, the connection
        lost, superseded) rolls back and forgets every batch not yet confirmed, the one
        being worked out included, and raises: the caller acknowledges none of them."""
        with self.lock:
            db = self.db
            confirmed_states = dict(self.states)          # what the database holds, as far as confirmed
            sent: deque[tuple[list[Ingested], dict[str, PoolState]]] = deque()   # COMMIT sent, not confirmed
            try:
                with pipeline(db):
                    db.execute("BEGIN IMMEDIATE")
                    fence = self._fence_later()
                    batch: tuple[Sequence[tuple[str, bytes]], list[Any]] | None = (first, self._open(first))
                    while batch is not None:
                        messages, parsed = batch
                        results = [self._ingest_one(t, p, r) for (t, p), r in zip(messages, parsed, strict=True)]
                        following = take_next()
                        # its reads, in this transaction and before its writes (fetching them
                        # also takes in the answer to the last batch's COMMIT)
                        batch = (following, self._open(following)) if following else None
                        fence()                 # this transaction is ours: and the last COMMIT went through
                        if sent:
                            done, confirmed_states = sent.popleft()
                            self._committed(done)
                            committed(done)
                        self._flush()
                        self._store_units()
                        self._store_pools()
                        db.execute("COMMIT")
                        sent.append((results, dict(self.states)))
                        if batch is not None:
                            db.execute("BEGIN IMMEDIATE")
                            fence = self._fence_later()
                # leaving pipeline mode waits for every answer: the COMMITs sent are confirmed
            except BaseException:
                self._forget(confirmed_states)
                raise
            finally:
                self._batch_claims = None
                self._batch_bookings = {}
            for done, _ in sent:
                self._committed(done)
                committed(done)

    def _open(self, messages: Sequence[tuple[str, bytes]]) -> list[Any]:
        """Parse a batch and read what it needs from the database (:meth:`_look_up`,
        :meth:`_load_claims`)."""
        parsed = [self._parse(topic, payload) for topic, payload in messages]
        reports = [r for r in parsed if isinstance(r, Report)]
        self._look_up(reports)
        self._load_claims(reports)
        return parsed

    def _fence_later(self) -> Callable[[], None]:
        """The fence sent now, its answer checked by the function returned (pipeline mode)."""
        if self.epoch is None:      # no fence: a statement whose answer comes after the last COMMIT's
            cur = self.db.execute("SELECT 1")
            return lambda: cur.fetchone()
        return self.db.fence_later(self.link_id, self.epoch)  # type: ignore[no-any-return]

    @staticmethod
    def _parse(topic: str, payload: bytes) -> Report | ReportRejected:
        try:
            return parse_report(topic, payload)
        except ReportRejected as exc:
            return exc

    def _look_up(self, reports: list[Report]) -> None:
        """Which of the batch's reports the database holds already, by (unit, seq) or by
        id, in one query, and the next ingest number: the events are then written in one
        statement at the batch's end. Sound because one controller writes (the active one,
        fenced by its epoch; SQLite: one process); the UNIQUE constraints still stand
        behind it (a conflict fails the batch)."""
        self._known = {}
        if self._next_n is None:
            self._next_n, self._next_hit = (int(x) for x in self.db.execute(
                "SELECT (SELECT COALESCE(MAX(n), 0) + 1 FROM event), (SELECT COALESCE(MAX(id), 0) + 1 FROM hit)"
            ).fetchone())
        if not reports:
            return
        if self.dialect == "postgresql":
            rows = self.db.execute(
                "SELECT unit, seq, id FROM event WHERE id = ANY(?) UNION ALL SELECT e.unit, e.seq, e.id FROM event e "
                "JOIN unnest(?::text[], ?::bigint[]) AS k(unit, seq) ON e.unit = k.unit AND e.seq = k.seq",
                ([r.id for r in reports], [r.unit for r in reports], [r.seq for r in reports])).fetchall()
        else:
            rows = self.db.execute(
                "SELECT unit, seq, id FROM event WHERE id IN (SELECT value FROM json_each(?)) UNION ALL "
                "SELECT e.unit, e.seq, e.id FROM (SELECT json_extract(value, '$[0]') AS unit, "
                "json_extract(value, '$[1]') AS seq FROM json_each(?)) AS k JOIN event e "
                "ON e.unit = k.unit AND e.seq = k.seq",
                (dumps([r.id for r in reports]), dumps([[r.unit, r.seq] for r in reports]))).fetchall()
        for unit, seq, id_ in rows:
            self._known[(unit, seq)] = id_
            self._known[id_] = id_
        # the batch before's events not written yet (:meth:`ingest_overlapped`: these reads
        # go out before its writes); none otherwise
        for row in self._new_events.values():
            self._known[(row[1], row[2])] = self._known[row[3]] = row[3]

    def _load_claims(self, reports: list[Report]) -> None:
        """Every claim and booking of the batch's (table, round)s, one query each:
        :meth:`_claims` and :meth:`_booked` then answer from memory."""
        before, before_items, before_bookings = self._batch_claims, self._round_items, self._batch_bookings
        before_hits, self._batch_hits = self._batch_hits, {}
        carried = set() if before is None else self._batch_rounds
        self._batch_claims, self._round_items = {}, {}
        self._batch_bookings = {}
        self._batch_rounds = {(r.table, r.round) for r in reports if r.round is not None}
        # :meth:`ingest_overlapped`: the rounds the batch before also had are taken from its
        # memory (its writes come after these reads); its claims' order goes on counting
        carried &= self._batch_rounds
        if before is not None and carried:
            for round_ in carried:
                keys = self._round_items[round_] = before_items.get(round_, [])
                for key in keys:
                    self._batch_claims[key] = before[key]
            self._batch_bookings = {k: v for k, v in before_bookings.items() if k[:2] in carried}
            self._batch_hits = {k: v for k, v in before_hits.items() if k[:2] in carried}
        if not self._batch_rounds - carried:
            return
        params: tuple[Any, ...]
        if self.dialect == "postgresql":
            tables, rounds = zip(*sorted(self._batch_rounds - carried), strict=True)
            rounds_of, params = "unnest(?::text[], ?::bigint[]) AS k(t, r)", (list(tables), list(rounds))
        else:
            rounds_of = ("(SELECT json_extract(value, '$[0]') AS t, json_extract(value, '$[1]') AS r "
                         "FROM json_each(?)) AS k")
            params = (dumps(sorted(self._batch_rounds - carried)),)
        rows = self.db.execute("SELECT id, table_id, round, box, kind, key, source, event, value, state "
                               f"FROM {rounds_of} JOIN claim ON table_id = k.t AND round = k.r", params).fetchall()
        for cid, table, rnd, box, kind, key, source, event, value, state in rows:
            # stored claims come before the batch's new ones (the ids' order)
            self._item((table, rnd, box, kind, key))[source] = [(0, cid), event, json.loads(value), state]
        for table, rnd, box, kind, effect in self.db.execute(
                f"SELECT table_id, round, box, kind, effect FROM {rounds_of} JOIN booking "
                "ON table_id = k.t AND round = k.r", params).fetchall():
            self._batch_bookings[(table, rnd, box, kind)] = json.loads(effect) if effect else {}
        for table, rnd, box, hit, amount_, share in self.db.execute(
                f"SELECT table_id, round, box, id, amount, share FROM {rounds_of} JOIN hit ON table_id = k.t "
                "AND round = k.r WHERE kind = 'meter' AND state = 'pending' ORDER BY id", params).fetchall():
            self._batch_hits.setdefault((table, rnd, box), []).append((hit, amount_, share))

    def _cached(self, c: Claim) -> dict[str, list[Any]] | None:
        """The item's claims as the batch keeps them; None outside a batch (read the database)."""
        if self._batch_claims is None or (c.table, c.round) not in self._batch_rounds:
            return None
        return self._item((c.table, c.round, c.box, c.kind, c.key))

    def _item(self, key: tuple[str, int, int, str, str]) -> dict[str, list[Any]]:
        assert self._batch_claims is not None
        item = self._batch_claims.get(key)
        if item is None:
            item = self._batch_claims[key] = {}
            self._round_items.setdefault(key[:2], []).append(key)
        return item

    def _lacking(self, table: str, rnd: int, kinds: list[str]) -> list[tuple[int, str, Any, str]] | None:
        """(box, key, value, kind) of the seats' held claims of the round in ``kinds`` that
        the dealer's record has no counterpart for, in ``kinds``' order then the claims';
        None outside a batch."""
        if self._batch_claims is None or (table, rnd) not in self._batch_rounds:
            return None
        found = []
        for key in self._round_items.get((table, rnd), []):
            item = self._batch_claims[key]
            seat = item.get("seat")
            if key[3] in kinds and seat is not None and seat[3] == "held" and "dealer" not in item:
                found.append((kinds.index(key[3]), seat[0], key[2], key[4], seat[2], key[3]))
        return [(box, key, value, kind) for _, _, box, key, value, kind in sorted(found)]

    def _set_claims_state(self, c: Claim, state: str) -> None:
        """The item's held claims (both sides) become ``state``: in the batch's copy (written
        at the batch's end, :meth:`_flush`), or in the database outside a batch."""
        cached = self._cached(c)
        if cached is None:
            self.db.execute("UPDATE claim SET state = ? WHERE table_id = ? AND round = ? AND box = ? AND kind = ? "
                            "AND key = ? AND state = 'held'", (state, c.table, c.round, c.box, c.kind, c.key))
            return
        item = (c.table, c.round, c.box, c.kind, c.key)
        for source, claim in cached.items():
            if claim[3] == "held":
                claim[3] = state
                if (item, source) not in self._new_claims:
                    self._changed_claims[(item, source)] = claim

    def _flush(self) -> None:
        """Write what the batch holds back, one statement a table (:mod:`.writes`)."""
        db, d = self.db, self.dialect
        if self._new_events:
            for n in list(self._effects):
                if n in self._new_events:
                    self._new_events[n][-1] = self._effects.pop(n)
            insert_rows(db, d, "event", EVENT_COLUMNS, list(self._new_events.values()))
        insert_rows(db, d, "claim", (*CLAIM_KEY, "event", "value", "state", "held_at"),
                    [(*item, source, event, value, entry[3], at)
                     for (item, source), (entry, value, at, event) in self._new_claims.items()])
        update_rows(db, d, "claim", ("state",), CLAIM_KEY,
                    [(entry[3], *item, source) for (item, source), entry in self._changed_claims.items()])
        insert_rows(db, d, "booking", ("table_id", "round", "box", "kind", "key", "seat_event", "dealer_event",
                                       "effect"), self._new_bookings)
        insert_rows(db, d, "dealer_round", ("table_id", "round", "stage", "event"),
                    [(*k, n) for k, n in self._new_stages.items()], " ON CONFLICT DO NOTHING")
        update_rows(db, d, "event", ("effect",), ("n",), [(e, n) for n, e in self._effects.items()])
        update_rows(db, d, "unit", ("duplicates",), ("unit",), [(k, u) for u, k in self._dups.items()],
                    add=("duplicates",))
        self._identity_after_hits()
        self._drop_writes()

    def _identity_after_hits(self) -> None:
        """PostgreSQL: the identity on hit.id set to the highest number this controller gave
        (no answer waited for; a sequence is not rolled back, so it only ever runs ahead of
        the rows), so that a controller letting the database number its hits (an older
        version on standby during an upgrade) never draws a number in use."""
        if self.dialect != "postgresql" or self._next_hit is None or self._next_hit in (1, self._identity_hit):
            return
        self.db.execute("SELECT setval(pg_get_serial_sequence('hit', 'id'), ?)", (self._next_hit - 1,))
        self._identity_hit = self._next_hit

    def _drop_writes(self) -> None:
        self._new_events.clear()
        self._effects.clear()
        self._new_claims.clear()
        self._changed_claims.clear()
        self._new_bookings.clear()
        self._new_stages.clear()
        self._dups.clear()

    def _set_effect(self, n: int, effect: dict[str, Any]) -> None:
        self._effects[n] = dumps(effect)

    def _ingest_one(self, topic: str, payload: bytes, report: Report | ReportRejected) -> Ingested:
        if isinstance(report, ReportRejected):
            return self._reject(topic, None, report, payload)
        try:
            # _apply rejects before it changes anything (no savepoint: two round trips a
            # report on PostgreSQL)
            return self._apply(report)
        except ReportRejected as exc:
            return self._reject(topic, report.unit, exc, payload)

    def _store_pools(self) -> None:
        """Write what changed in each pool's state since the last write (only those fields),
        inside the caller's transaction: once per batch, not once per report."""
        if self._stored_pools is None:
            self._stored_pools = {name: PoolState.from_json(json.loads(state))
                                  for name, state in self.db.execute("SELECT name, state FROM pool")}
        for name, state in self.states.items():
            old = self._stored_pools.get(name)
            if old is state:
                continue
            changed = {f: getattr(state, f) for f in POOL_FIELDS if old is None or getattr(old, f) != getattr(state, f)}
            if changed:
                patch = {f: money(v) if isinstance(v, Fraction) else v for f, v in changed.items()}
                self.db.execute(PATCH_POOL[self.dialect], (dumps(patch), name))
            self._stored_pools[name] = state

    def _unit_row(self, unit: str) -> list[int]:
        """[events, highest, contiguous] of ``unit``: kept in memory, written once per batch
        (:meth:`_store_units`); a unit seen for the first time gets its row at once."""
        row = self._unit_rows.get(unit)
        if row is None:
            found = self.db.execute("SELECT events, highest, contiguous FROM unit WHERE unit = ?",
                                    (unit,)).fetchone()
            if found is None:
                self.db.execute("INSERT INTO unit (unit) VALUES (?)", (unit,))
            row = self._unit_rows[unit] = list(found or (0, 0, 0))
        return row

    def _store_units(self) -> None:
        update_rows(self.db, self.dialect, "unit", ("events", "highest", "contiguous"), ("unit",),
                    [(*self._unit_rows[u], u) for u in self._rows_dirty])
        self._rows_dirty.clear()

    def _track_hole(self, unit: str) -> None:
        _, highest, contiguous = self._unit_rows[unit]
        if highest > contiguous:
            self._holes.setdefault(unit, time.monotonic())
        elif unit in self._holes:
            del self._holes[unit]
            if unit in self._warned:
                self._warned.discard(unit)
                log.info("%s: the missing reports arrived; every report through %d is held", unit, highest)

    def check_gaps(self, grace: float = GAP_GRACE, now: float | None = None) -> list[tuple[str, list[list[int]]]]:
        """Warn (once per hole) for units whose seqs have had a hole for ``grace`` seconds or
        more; ``grace=0`` warns for every hole open now. Returns what it warned about."""
        now = time.monotonic() if now is None else now
        out = []
        with self.lock:
            for unit, since in sorted(self._holes.items()):
                if unit in self._warned or now - since < grace:
                    continue
                ranges = missing_ranges(self.db, unit)
                if not ranges:
                    continue
                self._warned.add(unit)
                out.append((unit, ranges))
                log.warning("%s: reports %s missing for %.1fs (gap)", unit,
                            ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in ranges), now - since)
        return out

    def _reject(self, topic: str, unit: str | None, exc: ReportRejected, payload: bytes) -> Ingested:
        excerpt = payload[:200].decode("utf-8", "replace")
        self.rejected_log("rejected a message on %s: %s", topic[:200], exc)
        keep_rejected(self.db, topic[:200], unit, exc.reason, exc.detail[:300], excerpt, transaction=False)
        return Ingested("rejected", exc.reason, unit)

    def _apply(self, r: Report) -> Ingested:
        """Apply one report with the batch looked up beforehand (:meth:`_look_up`); a
        ReportRejected is raised before anything of it is written."""
        spec = self.pool_for(r.table)
        known = self._known
        assert self._next_n is not None
        held = known.get((r.unit, r.seq))
        if held is not None:
            if held != r.id:
                raise ReportRejected("seq_reused", f"{r.unit} seq {r.seq} was report {held}, now {r.id}")
            self._dups[r.unit] = self._dups.get(r.unit, 0) + 1
            return Ingested("duplicate", None, r.unit, r.seq)
        if r.id in known:
            raise ReportRejected("id_reused", f"report id {r.id} was already used by another report")
        if r.kind in BOOKED_KINDS or stage_of_record(r.kind) is not None:
            self._held_bound(r)
        n = self._next_n
        self._next_n += 1
        self._new_events[n] = [n, r.unit, r.seq, r.id, r.kind, r.table, r.box, r.round,
                               spec.name if spec else None, dumps(r.body), None]
        known[(r.unit, r.seq)] = known[r.id] = r.id
        return self._accept(r, spec, n)

    def _accept(self, r: Report, spec: PoolSpec | None, n: int) -> Ingested:
        db = self.db
        row = self._unit_row(r.unit)
        events, highest, contiguous = row
        if r.seq > highest + 1:
            db.execute("INSERT INTO gap (unit, first, last, detected_at) VALUES (?, ?, ?, ?)",
                       (r.unit, highest + 1, r.seq - 1, n))
            log.info("%s: report %d arrived before %d..%d (out of order; gap recorded, a warning if "
                     "still open after %gs)", r.unit, r.seq, highest + 1, r.seq - 1, GAP_GRACE)
        if r.seq == contiguous + 1:
            contiguous = r.seq
            # later reports may be held already only when this one fills a hole
            while contiguous < highest and ((r.unit, contiguous + 1) in self._known or db.execute(
                    "SELECT 1 FROM event WHERE unit = ? AND seq = ?", (r.unit, contiguous + 1)).fetchone()):
                contiguous += 1
        row[:] = [events + 1, max(highest, r.seq), contiguous]
        self._rows_dirty.add(r.unit)
        before = list(self.states.values())
        if r.kind in BOOKED_KINDS or stage_of_record(r.kind) is not None:
            if spec is None:
                log.error("%s: %s for table %s, which no pool serves", r.unit, r.kind, r.table)
            if r.box:
                claim = seat_claim(r)
                if claim is not None:
                    self._seat_claim(n, r, claim)
            else:
                self._dealer_record(n, r)
        # the pool rows are written once per batch (:meth:`_store_pools`)
        # a pool's state is replaced whenever it changes: compared by identity, not field by field
        changed = any(new is not old for new, old in zip(self.states.values(), before, strict=True))
        return Ingested("accepted", None, r.unit, r.seq, changed)

    # -- claims: the seat's word against the dealer's record ---------------------------

    def _held_bound(self, r: Report) -> None:
        """A seat may have at most ``max_held`` claims waiting for the dealer's record
        (what a hostile seat could pile up). The dealer's record is not bounded here: it
        grows only with rounds played, and refusing it would hold its alarms back too."""
        if r.box == 0:
            return
        # an upper bound kept in memory (claims only ever leave 'held'): counted in the
        # database only when it comes near the bound
        upper = self._held_upper.get((r.table, r.box))
        if upper is not None and upper < self.max_held:
            return
        self._flush()                   # the batch's claims so far, counted too
        held = self.db.execute("SELECT COUNT(*) FROM claim WHERE state = 'held' AND table_id = ? AND source = 'seat' "
                               "AND box = ?", (r.table, r.box)).fetchone()[0]
        self._held_upper[(r.table, r.box)] = held
        if held >= self.max_held:
            raise ReportRejected("hold_full", f"{r.unit} has {held} claims no counterpart has corroborated")

    def _insert_claim(self, n: int, unit: str, c: Claim, source: str) -> dict[str, tuple] | None:
        """Store a claim: the item's claims (both sides, as :meth:`_claims`) when it is new;
        None when (table, round, box, kind, key) already has one from ``source``: a repeat
        under another seq books nothing, a different one is disputed."""
        # the UNIQUE constraint decides, in the database (no exception: PostgreSQL would
        # abort the whole transaction on one); whose claim stands is read back with its
        # counterpart, in one query (no RETURNING: one answer fewer to wait for)
        cached = self._cached(c)
        if cached is None:
            self.db.execute("INSERT INTO claim (table_id, round, box, kind, key, source, event, value, held_at) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                            (c.table, c.round, c.box, c.kind, c.key, source, n, dumps(c.value), time.time()))
        elif source not in cached:
            # written at the batch's end with the state it has then (:meth:`_flush`)
            self._claim_order += 1
            # a copy, as a read-back would give (the values are text, numbers, null: flat)
            text = dumps(c.value)
            entry = cached[source] = [(1, self._claim_order), n, dict(c.value), "held"]
            self._new_claims[((c.table, c.round, c.box, c.kind, c.key), source)] = (entry, text, time.time(), n)
        claims = self._claims(c)
        first, value = claims[source][1], claims[source][2]
        if first == n:
            if source == "seat" and (c.table, c.box) in self._held_upper:
                self._held_upper[(c.table, c.box)] += 1
            return claims
        earlier = (first, value)
        if earlier[1] == c.value:
            self.counts["repeated"] += 1
            self._set_effect(n, {"repeat_of": first})
            self._box_log(c, logging.WARNING)("%s: report %d repeats report %d (%s, round %d, box %d) under "
                                              "another seq: booked once", unit, n, first, c.kind, c.round, c.box)
        else:
            self._integrity("conflicting_report", c, earlier if source == "seat" else None,
                            earlier if source == "dealer" else None,
                            f"{unit} reported {c.kind} for round {c.round} box {c.box} twice, differently: "
                            f"report {first} {earlier[1]}, report {n} {dict(c.value)}; the first stands")
        return None

    def _seat_claim(self, n: int, r: Report, c: Claim) -> None:
        claims = self._insert_claim(n, r.unit, c, "seat")
        if claims is not None:
            self._match(c, claims)      # nothing changed them since they were read

    def _dealer_record(self, n: int, r: Report) -> None:
        stage = stage_of_record(r.kind)
        if stage is None or r.round is None:
            return
        rnd = r.round
        # a repeated record: each claim below is checked as a repeat or a conflict
        self._new_stages.setdefault((r.table, rnd, stage), n)
        if (r.table, stage) in self._stage_top:
            self._stage_top[(r.table, stage)] = max(self._stage_top[(r.table, stage)], rnd)
        # every item in first, then matched (a box's wager before its hit)
        # (the others with their claims read again: booking one item may book another)
        # (the first is matched from its read-back: nothing has been booked since)
        fresh = [(c, claims) for c in dealer_claims(r) if (claims := self._insert_claim(n, r.unit, c, "dealer"))]
        for i, (c, claims) in enumerate(fresh):
            self._match(c, claims if i == 0 else None)
        # what a seat claimed for this round and stage that the dealer's record lacks (one
        # query for the stage's kinds, in their order)
        kinds = [k for k, s in STAGE.items() if s == stage]
        lacking = self._lacking(r.table, rnd, kinds)
        if lacking is None:
            marks = ", ".join("?" * len(kinds))
            order = " ".join(f"WHEN ? THEN {i}" for i in range(len(kinds)))
            lacking = [(box, key, json.loads(value), kind) for box, key, value, kind in self.db.execute(
                f"SELECT box, key, value, kind FROM claim s WHERE table_id = ? AND round = ? AND kind IN ({marks}) "
                "AND source = 'seat' AND state = 'held' AND NOT EXISTS (SELECT 1 FROM claim d WHERE "
                "d.table_id = s.table_id AND d.round = s.round AND d.box = s.box AND d.kind = s.kind AND "
                f"d.key = s.key AND d.source = 'dealer') ORDER BY CASE kind {order} END, id",
                (r.table, r.round, *kinds, *kinds)).fetchall()]
        for box, key, value, kind in lacking:
            c = Claim(r.table, rnd, box, kind, key, value)
            self._dispute(c, "not_in_dealer_record",
                          f"the dealer's record of round {r.round} (report {n}) has no {kind} for box {box}")

    def _claims(self, c: Claim) -> dict[str, tuple[Any, int, dict[str, Any], str]]:
        """source -> (order, event, value, state) of the item's claims."""
        cached = self._cached(c)
        if cached is not None:
            return {source: (claim[0], claim[1], claim[2], claim[3]) for source, claim in cached.items()}
        return {source: (cid, event, json.loads(value), state) for cid, source, event, value, state in self.db.execute(
            "SELECT id, source, event, value, state FROM claim WHERE table_id = ? AND round = ? AND box = ? "
            "AND kind = ? AND key = ?", (c.table, c.round, c.box, c.kind, c.key))}

    def _match(self, c: Claim, claims: dict[str, tuple] | None = None) -> None:
        """Book the claim when the seat's and the dealer's are both in and agree; dispute it
        when they differ; else it stays held (the other may come later)."""
        claims = self._claims(c) if claims is None else claims
        if "seat" not in claims or "dealer" not in claims:
            if "seat" in claims and claims["seat"][3] == "held" and self._dealer_has_stage(c):
                self._dispute(c, "not_in_dealer_record",
                              f"the dealer's record of round {c.round} has no {c.kind} for box {c.box}")
            return
        seat, dealer = claims["seat"], claims["dealer"]
        if seat[3] != "held" or dealer[3] != "held":
            return
        if seat[2] != dealer[2]:
            self._dispute(c, "disagrees_with_dealer", f"box {c.box} round {c.round} {c.kind}: the seat says "
                                                      f"{seat[2]}, the dealer {dealer[2]}")
            return
        if c.kind == "progressive_hit" and self._booked(c, "progressive_wager") is None:
            # the seat's wager report may still come (a resend after a reconnect can arrive
            # after a later report): the hit waits for it, unless the wager was disputed
            wager = self._claims(Claim(c.table, c.round, c.box, "progressive_wager", "", {}))
            if any(w[3] == "disputed" for w in wager.values()) or "dealer" not in wager:
                self._dispute(c, "hit_without_wager", f"box {c.box} round {c.round}: a progressive hit "
                                                      f"without a booked progressive wager")
            return
        c = Claim(c.table, c.round, c.box, c.kind, c.key, seat[2])    # the agreed value (``c`` may name it only)
        effect, problem = self._book(c, seat[1])
        if problem is not None:
            self._dispute(c, problem[0], problem[1])
            return
        self._set_claims_state(c, "booked")         # the two held claims of this item
        self._new_bookings.append((c.table, c.round, c.box, c.kind, c.key, seat[1], dealer[1],
                                   None if effect is None else dumps(effect)))
        self._batch_bookings[(c.table, c.round, c.box, c.kind)] = {} if effect is None else effect
        self._set_effect(seat[1], {"booked": effect})
        if c.kind == "progressive_wager":        # a hit that waited for its wager
            self._match(Claim(c.table, c.round, c.box, "progressive_hit", "", {}))

    def _stage_absent(self, table: str, round_: int, stage: str) -> bool:
        """True when the dealer's record of ``stage`` for this round is surely not held: the
        round is above the highest the dealer recorded (kept in memory: this controller is
        the one writer; read from the database once per table and stage)."""
        top = self._stage_top.get((table, stage))
        if top is None:
            self._flush()               # the batch's dealer records so far, counted too
            top = self._stage_top[(table, stage)] = int(self.db.execute(
                "SELECT COALESCE(MAX(round), 0) FROM dealer_round WHERE table_id = ? AND stage = ?",
                (table, stage)).fetchone()[0])
        return round_ > top

    def _dealer_has_stage(self, c: Claim) -> bool:
        if self._stage_absent(c.table, c.round, c.stage):
            return False
        if (c.table, c.round, c.stage) in self._new_stages:
            return True
        return self.db.execute("SELECT 1 FROM dealer_round WHERE table_id = ? AND round = ? AND stage = ?",
                               (c.table, c.round, c.stage)).fetchone() is not None

    def _dispute(self, c: Claim, reason: str, detail: str) -> None:
        claims = self._claims(c)
        self._set_claims_state(c, "disputed")
        side = {s: (v[1], v[2]) for s, v in claims.items()}
        self._integrity(reason, c, side.get("seat"), side.get("dealer"), detail)

    def _integrity(self, reason: str, c: Claim, seat: tuple[int, Any] | None, dealer: tuple[int, Any] | None,
                   detail: str) -> None:
        """The integrity alarm: recorded naming both sides (report and value) and logged."""
        self.db.execute("INSERT INTO integrity (table_id, round, box, kind, key, reason, seat_event, dealer_event, "
                        "seat_value, dealer_value, detail, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (c.table, c.round, c.box, c.kind, c.key, reason,
                         seat[0] if seat else None, dealer[0] if dealer else None,
                         dumps(seat[1]) if seat else None, dumps(dealer[1]) if dealer else None,
                         detail[:500], time.time()))
        self.counts["integrity"] += 1
        self._box_log(c, logging.ERROR)("integrity: %s: %s (seat report %s, dealer report %s)", reason, detail,
                                        seat[0] if seat else "none", dealer[0] if dealer else "none")

    def _box_log(self, c: Claim, level: int) -> RateLimitedLog:
        """The rate-limited log of what ``c``'s box makes the controller say at ``level``."""
        key = (c.table, c.box, level)
        found = self._box_logs.get(key)
        if found is None:
            found = self._box_logs[key] = RateLimitedLog(log, level=level)
        return found

    def bridge_state(self, table: str, up: bool, now: float | None = None) -> None:
        """A table's bridge to the floor (its retained ``betbox/v1/bridge/<table>/state``):
        while it is down, that table's held claims wait without an alarm (the counterpart
        is queued at the table broker); once it is back, their grace counts from then."""
        with self.lock:
            if not up:
                self._bridge_down.add(table)
            elif table in self._bridge_down:
                self._bridge_down.discard(table)
                self._bridge_back[table] = time.time() if now is None else now

    @property
    def bridges_down(self) -> frozenset[str]:
        """The tables whose bridge to the floor is down now."""
        return frozenset(self._bridge_down)

    def _bridge_holds(self, table: str, since: float) -> bool:
        """Whether ``table``'s claims still wait for its bridge (down, or back after ``since``)."""
        return table in self._bridge_down or self._bridge_back.get(table, since) > since

    def check_holds(self, grace: float | None = None, now: float | None = None) -> list[dict[str, Any]]:
        """An integrity alarm (once each) for every claim still waiting for its counterpart
        ``grace`` seconds after it came: a seat's word the dealer never recorded (a round
        never played), or a dealer's record no seat reported. It stays held: should the
        counterpart come after all, it is booked then. A table whose bridge is down (or
        back for less than ``grace``) is not warned yet (:meth:`bridge_state`)."""
        now = time.time() if now is None else now
        grace = self.hold_grace if grace is None else grace
        out: list[dict[str, Any]] = []
        with self.lock:
            rows = self.db.execute("SELECT id, table_id, round, box, kind, key, source, event, value FROM claim "
                                   "WHERE state = 'held' AND warned = 0 AND held_at <= ? ORDER BY id",
                                   (now - grace,)).fetchall()
            rows = [row for row in rows if not self._bridge_holds(row[1], now - grace)]
            if not rows:
                return out
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self._fence()
                for cid, table, rnd, box, kind, key, source, event, value in rows:
                    c = Claim(table, rnd, box, kind, key, json.loads(value))
                    if source == "seat":
                        why = (f"the dealer's record of round {rnd} has not come" if not self._dealer_has_stage(c)
                               else f"the dealer's record of round {rnd} is pending")
                        detail = f"{table}/seat-{box} reported {kind} for round {rnd} (report {event}); {why}"
                    else:
                        detail = (f"the dealer recorded {kind} for box {box} in round {rnd} (report {event}); "
                                  f"{table}/seat-{box} has not reported it")
                    self.db.execute("UPDATE claim SET warned = 1 WHERE id = ?", (cid,))
                    side = (event, c.value)
                    self._integrity("uncorroborated", c, side if source == "seat" else None,
                                    side if source == "dealer" else None, detail)
                    out.append({"table": table, "round": rnd, "box": box, "kind": kind, "source": source,
                                "event": event})
                self.db.execute("COMMIT")
            except BaseException:
                _rollback(self.db)
                raise
        return out

    # -- booking ---------------------------------------------------------------------

    def _booked(self, c: Claim, kind: str) -> dict[str, Any] | None:
        if self._batch_claims is not None and (c.table, c.round) in self._batch_rounds:
            return self._batch_bookings.get((c.table, c.round, c.box, kind))      # loaded with the claims
        row = self.db.execute("SELECT effect FROM booking WHERE table_id = ? AND round = ? AND box = ? AND kind = ?",
                              (c.table, c.round, c.box, kind)).fetchone()
        return None if row is None else (json.loads(row[0]) if row[0] else {})

    def _book(self, c: Claim, seat_event: int) -> tuple[dict[str, Any] | None, tuple[str, str] | None]:
        """Apply an agreed claim to its pool: (the effect, None) or (None, (reason, why not)).
        A stored amount the controller never writes (a damaged or hostile database) books
        nothing: the claim is disputed like any that cannot be booked, with an integrity
        alarm naming the row and the field; the pool is left as it was (it is written only
        at the end), and every amount is read before anything of the booking is written."""
        try:
            return self._book_claim(c, seat_event)
        except DamagedRow as exc:
            return None, ("damaged_row", f"{c.table}/seat-{c.box} round {c.round}: {exc}")

    def _book_claim(self, c: Claim, seat_event: int) -> tuple[dict[str, Any] | None, tuple[str, str] | None]:
        spec = self.pool_for(c.table)
        if spec is None:
            return {"pool": None}, None
        s = self.states[spec.name]
        unit = f"{c.table}/seat-{c.box}"
        effect: dict[str, Any] | None = None
        # a round's result is booked only after the dealer's settlement record is held
        result = None if self._stage_absent(c.table, c.round, "settlement") else self._booked(c, "round_result")
        if c.kind == "progressive_wager":
            if result is not None and result.get("void"):
                return {"void_round": True}, None
            s, into, over = P.contribute(spec, s, stored_money(c.value["amount"], _claim_row(c, "amount")))
            effect = {"into": money(into), "over": money(over)}
        elif c.kind == "progressive_hit":
            wager = self._booked(c, "progressive_wager")
            if wager is None or wager.get("void_round"):
                return {"void_round": True}, None       # its round was voided before the wager was booked
            if result is not None and result.get("void"):
                return {"void_round": True}, None
            if c.value["award"] is not None:
                award = stored_money(c.value["award"], _claim_row(c, "award"))
                s = P.fixed_award(s, award)
                self._hit(seat_event, c, spec, "fixed", award, None, "paid")
            else:
                share = stored_money(c.value["meter_share"], _claim_row(c, "meter_share"))
                if c.value["amount"] is None:
                    why = f"{unit} round {c.round}: a meter-share hit with no amount (the round opened without a meter)"
                    return None, ("no_meter", why)
                locked = stored_money(c.value["amount"], _claim_row(c, "amount"))
                if locked > spec.maximum + spec.seed:
                    why = f"{unit} round {c.round}: {money(locked)} is more than the meter of pool {spec.name} can show"
                    return None, ("above_maximum", why)
                s = P.lock_amount(spec, s, share, locked)
                hit = self._hit(seat_event, c, spec, "meter", locked, share, "pending")
                effect = {"hit": hit, "locked": money(locked)}
                log.info("hit %d: %s box %d round %s locks %s (pending)", hit, c.table, c.box, c.round, locked)
                if result is not None:          # the round's end was booked first: pay it now
                    s = P.confirm_hit(spec, s)
                    self.db.execute("UPDATE hit SET state = 'confirmed', confirmed_by = ? WHERE id = ?",
                                    (f"round_result of round {c.round}", hit))
                else:
                    self._hit_pending(c, hit, locked, share)
        elif c.kind == "envy_bonus":
            award = stored_money(c.value["award"], _claim_row(c, "award"))
            s = P.envy_bonus(s, award)
            self._hit(seat_event, c, spec, "envy", award, None, "paid", category=f"envy_from_box_{c.key}")
        elif c.kind == "round_result":
            s, effect = self._book_result(c, spec, s)
        self.states[spec.name] = s
        return effect, None

    def _book_result(self, c: Claim, spec: PoolSpec, s: PoolState) -> tuple[PoolState, dict[str, Any]]:
        """A round's result: its pending meter hits confirmed, or released and its wager
        taken back when the round was void."""
        void = c.value["void"]
        effect: dict[str, Any] = {"void": void}
        # every stored amount read first: a damaged one raises before any hit is changed
        rows = [(hit, stored_money(locked, f"hit row {hit}: amount"), stored_money(share, f"hit row {hit}: share"))
                for hit, locked, share in self._pending_hits(c)]
        voided = self._voided_wager(c) if void else None
        for hit, locked, share in rows:
            if void:
                # the round never counted: the hit is released, not paid (see pools.py)
                other = self.db.execute("SELECT 1 FROM hit WHERE pool = ? AND kind = 'meter' AND state = "
                                        "'pending' AND share = '1' AND id != ?", (spec.name, hit)).fetchone()
                s = P.release_hit(spec, s, locked, share == 1, other is not None)
                self.db.execute("UPDATE hit SET state = 'released', confirmed_by = ? WHERE id = ?",
                                (f"void round {c.round}", hit))
                log.warning("hit %d: %s box %d round %s released (the round was voided); %s back in the pool",
                            hit, c.table, c.box, c.round, money(locked))
            else:
                s = P.confirm_hit(spec, s)
                self.db.execute("UPDATE hit SET state = 'confirmed', confirmed_by = ? WHERE id = ?",
                                (f"round_result of round {c.round}", hit))
        if voided is not None:
            text, amount_, into, over = voided
            s = P.void_wager(s, amount_, into, over)
            effect["voided_wager"] = text
        if rows:
            effect["released" if void else "confirmed"] = [h for h, _, _ in rows]
        return s, effect

    def _voided_wager(self, c: Claim) -> tuple[str, Fraction, Fraction, Fraction] | None:
        """A void round's booked wager, to take back: (its text, amount, into, over); None
        when none was booked into the pool."""
        wager = self._booked(c, "progressive_wager")
        if wager is None or "into" not in wager:
            return None
        claim = Claim(c.table, c.round, c.box, "progressive_wager", "", {})
        text = self._claims(claim)["seat"][2]["amount"]
        booking = f"booking row ({c.table} round {c.round} box {c.box} progressive_wager)"
        return (text, stored_money(text, _claim_row(claim, "amount")),
                stored_money(wager["into"], f"{booking}: into"), stored_money(wager["over"], f"{booking}: over"))

    def _in_batch(self, c: Claim) -> bool:
        return self._batch_claims is not None and (c.table, c.round) in self._batch_rounds

    def _hit_pending(self, c: Claim, hit: int, locked: Fraction, share: Fraction) -> None:
        """A meter hit left pending: its round's result finds it in the batch's memory."""
        if self._in_batch(c):
            self._batch_hits.setdefault((c.table, c.round, c.box), []).append((hit, money(locked), money(share)))

    def _pending_hits(self, c: Claim) -> list[Any]:
        """The box's pending meter hits, (hit, amount, share) in number order: read with the
        batch's claims and kept as they change (the active controller is the one writer; an
        attendant's :meth:`confirm` comes between batches), else from the database."""
        if self._in_batch(c):
            return self._batch_hits.pop((c.table, c.round, c.box), [])
        return self.db.execute(  # type: ignore[no-any-return]
            "SELECT id, amount, share FROM hit WHERE table_id = ? AND round = ? AND box = ? AND kind = 'meter' "
            "AND state = 'pending' ORDER BY id", (c.table, c.round, c.box)).fetchall()

    def _hit(self, event: int, c: Claim, spec: PoolSpec, kind: str, amount_: Fraction, share: Fraction | None,
             state: str, category: str | None = None) -> int:
        """Write a hit numbered by this controller, the next after the database's highest
        (:meth:`_look_up`; sound as the event numbers are: one writer, fenced by its epoch;
        the primary key still stands behind it): on PostgreSQL a number read back would
        stall the batch's pipeline until the batch before has committed."""
        if self._next_hit is None:
            self._next_hit = int(self.db.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM hit").fetchone()[0])
        hit, self._next_hit = self._next_hit, self._next_hit + 1
        self.db.execute(
            "INSERT INTO hit (id, event, unit, table_id, box, round, pool, kind, category, share, amount, state) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (hit, event, f"{c.table}/seat-{c.box}", c.table, c.box, c.round, spec.name, kind,
             category or c.value.get("category"), None if share is None else money(share), money(amount_),
             state))
        return hit

    # -- an attendant confirms a hit ----------------------------------------------------

    def confirm(self, hit_id: int, by: str) -> dict[str, Any]:
        """Confirm a pending meter hit by number (an attendant's hand pay); raises
        ValueError naming why not."""
        with self.lock:
            row = self.db.execute("SELECT pool, state, kind FROM hit WHERE id = ?", (hit_id,)).fetchone()
            if row is None:
                raise ValueError(f"no hit {hit_id}")
            pool, state, kind = row
            if kind != "meter" or state != "pending":
                raise ValueError(f"hit {hit_id} is not pending (it is {kind}, {state})")
            spec = self.specs[pool]
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self._fence()
                self.states[pool] = P.confirm_hit(spec, self.states[pool])
                self.db.execute("UPDATE hit SET state = 'confirmed', confirmed_by = ? WHERE id = ?",
                                (by[:100], hit_id))
                self._store_pools()
                self.db.execute("COMMIT")
            except BaseException:
                _rollback(self.db)
                self._stored_pools = None
                raise
            return {"hit": hit_id, "state": "confirmed"}

    def pending_hit(self, unit: str, round_: int) -> int:
        """The pending meter hit of ``unit`` in round ``round_`` (what an attendant names at
        the table); raises ValueError naming why there is none or more than one."""
        with self.lock:
            rows = [h for (h,) in self.db.execute(
                "SELECT id FROM hit WHERE unit = ? AND round = ? AND kind = 'meter' AND state = 'pending' "
                "ORDER BY id", (unit, round_))]
            if not rows:
                known = self.db.execute("SELECT id, state FROM hit WHERE unit = ? AND round = ? AND kind = 'meter'",
                                        (unit, round_)).fetchall()
                if known:
                    raise ValueError(f"the hit of {unit} in round {round_} is not pending "
                                     f"(hit {known[0][0]}: {known[0][1]})")
                raise ValueError(f"no meter hit of {unit} in round {round_}")
            if len(rows) > 1:
                raise ValueError(f"{unit} round {round_} has {len(rows)} pending hits ({rows}): confirm by hit")
            return rows[0]

    # -- what goes out -----------------------------------------------------------------

    def meter(self) -> dict[str, Any]:
        """The retained meter broadcast: each pool live or PENDING with its locked hits."""
        with self.lock:
            out = {}
            for name, spec in self.specs.items():
                pending = [{"hit": h, "table": t, "box": b, "amount": cents(stored_money(a, f"hit row {h}: amount"))}
                           for h, t, b, a in
                           self.db.execute("SELECT id, table_id, box, amount FROM hit WHERE pool = ? AND "
                                           "kind = 'meter' AND state = 'pending' ORDER BY id", (name,))]
                out[name] = {**P.meter_view(spec, self.states[name], pending), "tables": list(spec.tables)}
            return {"schema": 1, "link": self.link_id, "pools": out}

    def marks(self, units: Sequence[str] | None = None) -> dict[str, int]:
        with self.lock:
            rows = self.db.execute("SELECT unit, contiguous FROM unit").fetchall()
        return {u: c for u, c in rows if units is None or u in units}

    def take_dirty(self) -> set[str]:
        with self.lock:
            out, self.dirty_units = self.dirty_units, set()
            return out

    def close(self) -> None:
        with self.lock:
            if self._closer is not None:
                self._closer()
            else:
                close_store(self.db)


def _claim_row(c: Claim, field: str) -> str:
    """Where a claim's stored amount is, for the message naming a damaged one."""
    return f"claim row ({c.table} round {c.round} box {c.box} {c.kind}{' ' + c.key if c.key else ''}): {field}"


def _as_stored(text: Any, where: str) -> Any:
    """A stored amount's text, once it reads as an amount (:func:`stored_money`)."""
    stored_money(text, where)
    return text


def missing_ranges(db: sqlite3.Connection, unit: str, limit: int = 20) -> list[list[int]]:
    """The seqs of ``unit`` below its highest that the controller does not hold, as
    ``[first, last]`` ranges (at most ``limit``)."""
    missing = [[a, b] for a, b in db.execute(
        "SELECT seq + 1, nxt - 1 FROM (SELECT seq, LEAD(seq) OVER (ORDER BY seq) AS nxt "
        "FROM event WHERE unit = ?) AS s WHERE nxt > seq + 1 LIMIT ?", (unit, limit))]
    first = db.execute("SELECT MIN(seq) FROM event WHERE unit = ?", (unit,)).fetchone()[0]
    if first and first > 1:
        missing.insert(0, [1, first - 1])
    return missing[:limit]


def report(db: sqlite3.Connection) -> dict[str, Any]:
    """Meters, the last hits and per-unit counts, from a controller's database."""
    pools = {}
    for name, spec, state in db.execute("SELECT name, spec, state FROM pool ORDER BY name"):
        s = PoolState.from_json(json.loads(state))
        spec = json.loads(spec)
        pools[name] = {
            "spec": spec, "meter": cents(s.amount), "state": "pending" if s.pending else "live",
            "overflow": cents(s.overflow), "balanced": P.balanced(s),
            "meters": {"wagers": s.wagers, "wagers_in": money(s.wagers_in),
                       "contributions": money(s.contributions), "seeds": money(s.seeds),
                       "reseeds": s.reseeds, "hits": s.hits, "won": money(s.won),
                       "pending": s.pending, "overflow_in": money(s.overflow_in),
                       "fixed_hits": s.fixed_hits, "fixed_won": money(s.fixed_won),
                       "envy": s.envy, "envy_won": money(s.envy_won), "voided": s.voided,
                       "released": s.released, "shortfall": money(s.shortfall)},
            "exact": {"amount": money(s.amount), "overflow": money(s.overflow)},
        }
    # each amount as stored, read strictly: a damaged row is bad input naming it (DamagedRow)
    hits = [{"hit": h, "unit": u, "table": t, "box": b, "round": r, "pool": p, "kind": k, "category": c,
             "share": sh if sh is None else _as_stored(sh, f"hit row {h}: share"),
             "amount": _as_stored(a, f"hit row {h}: amount"), "state": st, "confirmed_by": cb}
            for h, u, t, b, r, p, k, c, sh, a, st, cb in db.execute(
                "SELECT id, unit, table_id, box, round, pool, kind, category, share, amount, state, confirmed_by "
                "FROM hit ORDER BY id DESC LIMIT ?", (LAST_HITS,))]
    units = {}
    for unit, events, highest, contiguous, dups in db.execute(
            "SELECT unit, events, highest, contiguous, duplicates FROM unit ORDER BY unit"):
        missing = missing_ranges(db, unit)
        kinds = dict(db.execute("SELECT kind, COUNT(*) FROM event WHERE unit = ? GROUP BY kind ORDER BY kind",
                                (unit,)))
        alarms = dict(db.execute(f"SELECT {ALARM_OF[dialect(db)]}, COUNT(*) FROM event "
                                 "WHERE unit = ? AND kind = 'alarm' GROUP BY 1 ORDER BY 1", (unit,)))
        gaps = db.execute("SELECT COUNT(*) FROM gap WHERE unit = ?", (unit,)).fetchone()[0]
        units[unit] = {"events": events, "highest_seq": highest, "contiguous": contiguous,
                       "missing": highest - events, "missing_ranges": missing, "gaps_recorded": gaps,
                       "duplicates": dups, "kinds": kinds, "alarms": alarms}
    integrity = {"count": db.execute("SELECT COUNT(*) FROM integrity").fetchone()[0],
                 "by_reason": dict(db.execute("SELECT reason, COUNT(*) FROM integrity GROUP BY reason")),
                 "last": [{"table": t, "round": r, "box": b, "kind": k, "reason": why, "seat_report": se,
                           "dealer_report": de, "detail": d} for t, r, b, k, why, se, de, d in db.execute(
                     "SELECT table_id, round, box, kind, reason, seat_event, dealer_event, detail FROM integrity "
                     "ORDER BY id DESC LIMIT ?", (LAST_HITS,))]}
    held = dict(db.execute("SELECT source, COUNT(*) FROM claim WHERE state = 'held' GROUP BY source"))
    reasons = rejected_counts(db)
    rejected = sum(reasons.values())
    return {"schema": 1, "pools": pools, "last_hits": hits, "units": units,
            "rejected": {"count": rejected, "by_reason": reasons}, "integrity": integrity,
            "held": {"seat": held.get("seat", 0), "dealer": held.get("dealer", 0)}}
