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
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

from firmware.wirejson import RateLimitedLog

from . import pools as P
from .pools import PoolSpec, PoolState, cents, money
from .store import connect, dumps, keep_rejected, rejected_counts
from .wire import Report, ReportRejected, amount, parse_report

log = logging.getLogger("betbox.jackpot")

LAST_HITS = 25
GAP_GRACE = 5.0             # seconds a hole in a unit's seqs may stay open before a warning


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
    def __init__(self, db_path: str | Path, pools: Sequence[PoolSpec], link_id: str = "main") -> None:
        if not pools:
            raise ValueError("a jackpot controller needs at least one pool")
        self.link_id = link_id
        self.db = connect(db_path)
        self.lock = threading.RLock()
        self.specs = {p.name: p for p in pools}
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
        self.counts = {"accepted": 0, "duplicate": 0, "rejected": 0}
        self.rejected_log = RateLimitedLog(log)     # a flood of junk: all counted, a few logged
        # units with a hole in their seqs (highest > contiguous): since when (monotonic, this
        # process; holes found in the database at start count from the start), and warned
        self._holes: dict[str, float] = {}
        self._warned: set[str] = set()
        now = time.monotonic()
        for (unit,) in self.db.execute("SELECT unit FROM unit WHERE highest > contiguous"):
            self._holes[unit] = now

    def pool_for(self, table: str) -> PoolSpec | None:
        return next((s for s in self.specs.values() if s.serves(table)), None)

    # -- reports -----------------------------------------------------------------------

    def ingest(self, topic: str, payload: bytes) -> Ingested:
        with self.lock:
            try:
                report = parse_report(topic, payload)
            except ReportRejected as exc:
                return self._reject(topic, None, exc, payload)
            db = self.db
            db.execute("BEGIN IMMEDIATE")
            try:
                result = self._apply(report)
            except ReportRejected as exc:
                db.execute("ROLLBACK")
                return self._reject(topic, report.unit, exc, payload)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            self.counts[result.status] += 1
            self.dirty_units.add(report.unit)
            if result.status == "accepted":
                self._track_hole(report.unit)
            return result

    def _track_hole(self, unit: str) -> None:
        highest, contiguous = self.db.execute("SELECT highest, contiguous FROM unit WHERE unit = ?",
                                              (unit,)).fetchone()
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
        keep_rejected(self.db, topic[:200], unit, exc.reason, exc.detail[:300], excerpt)
        self.counts["rejected"] += 1
        return Ingested("rejected", exc.reason, unit)

    def _apply(self, r: Report) -> Ingested:
        db = self.db
        row = db.execute("SELECT id FROM event WHERE unit = ? AND seq = ?", (r.unit, r.seq)).fetchone()
        if row is not None:
            if row[0] != r.id:
                raise ReportRejected("seq_reused", f"{r.unit} seq {r.seq} was report {row[0]}, now {r.id}")
            db.execute("UPDATE unit SET duplicates = duplicates + 1 WHERE unit = ?", (r.unit,))
            return Ingested("duplicate", None, r.unit, r.seq)
        if db.execute("SELECT 1 FROM event WHERE id = ?", (r.id,)).fetchone():
            raise ReportRejected("id_reused", f"report id {r.id} was already used by another report")
        spec = self.pool_for(r.table)
        cur = db.execute("INSERT INTO event (unit, seq, id, kind, table_id, box, round, pool, body) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (r.unit, r.seq, r.id, r.kind, r.table, r.box, r.round,
                          spec.name if spec else None, dumps(r.body)))
        n = cur.lastrowid
        db.execute("INSERT OR IGNORE INTO unit (unit) VALUES (?)", (r.unit,))
        events, highest, contiguous = db.execute(
            "SELECT events, highest, contiguous FROM unit WHERE unit = ?", (r.unit,)).fetchone()
        if r.seq > highest + 1:
            db.execute("INSERT INTO gap (unit, first, last, detected_at) VALUES (?, ?, ?, ?)",
                       (r.unit, highest + 1, r.seq - 1, n))
            log.info("%s: report %d arrived before %d..%d (out of order; gap recorded, a warning if "
                     "still open after %gs)", r.unit, r.seq, highest + 1, r.seq - 1, GAP_GRACE)
        if r.seq == contiguous + 1:
            contiguous = r.seq
            while db.execute("SELECT 1 FROM event WHERE unit = ? AND seq = ?",
                             (r.unit, contiguous + 1)).fetchone():
                contiguous += 1
        db.execute("UPDATE unit SET events = ?, highest = ?, contiguous = ? WHERE unit = ?",
                   (events + 1, max(highest, r.seq), contiguous, r.unit))
        changed = False
        if spec is not None and r.kind in ("progressive_wager", "progressive_hit", "envy_bonus", "round_result"):
            effect, changed = self._effect(spec, r, n)
            if effect:
                db.execute("UPDATE event SET effect = ? WHERE n = ?", (dumps(effect), n))
            db.execute("UPDATE pool SET state = ? WHERE name = ?",
                       (dumps(self.states[spec.name].to_json()), spec.name))
        elif spec is None and r.kind.startswith(("progressive", "envy")):
            log.error("%s: %s for table %s, which no pool serves", r.unit, r.kind, r.table)
        return Ingested("accepted", None, r.unit, r.seq, changed)

    def _effect(self, spec: PoolSpec, r: Report, n: int) -> tuple[dict[str, Any] | None, bool]:
        s = self.states[spec.name]
        db = self.db
        effect: dict[str, Any] | None = None
        if r.kind == "progressive_wager":
            wager = amount(r.body, "amount")
            s, into, over = P.contribute(spec, s, wager)
            effect = {"into": money(into), "over": money(over)}
        elif r.kind == "progressive_hit":
            award = amount(r.body, "award", nullable=True)
            if award is not None:
                s = P.fixed_award(s, award)
                self._hit(n, r, spec, "fixed", award, None, "paid")
            else:
                share = Fraction(r.body["meter_share"])
                s, locked = P.lock_hit(spec, s, share)
                hit = self._hit(n, r, spec, "meter", locked, share, "pending")
                effect = {"hit": hit, "locked": money(locked)}
                log.info("hit %d: %s box %d round %s locks %s (pending)", hit, r.table, r.box, r.round, locked)
        elif r.kind == "envy_bonus":
            award = amount(r.body, "award")
            s = P.envy_bonus(s, award)
            self._hit(n, r, spec, "envy", award, None, "paid", category=f"envy_from_box_{r.body['from_box']}")
        elif r.kind == "round_result":
            rows = db.execute("SELECT id, amount, share FROM hit WHERE unit = ? AND round = ? AND kind = 'meter' "
                              "AND state = 'pending' ORDER BY id", (r.unit, r.round)).fetchall()
            hits = [h for h, _, _ in rows]
            for hit, locked, share in rows:
                if r.body["void"]:
                    # the round never counted: the hit is released, not paid (see pools.py)
                    other = db.execute("SELECT 1 FROM hit WHERE pool = ? AND kind = 'meter' AND state = 'pending' "
                                       "AND share = '1' AND id != ?", (spec.name, hit)).fetchone()
                    s = P.release_hit(spec, s, Fraction(locked), Fraction(share) == 1, other is not None)
                    db.execute("UPDATE hit SET state = 'released', confirmed_by = ? WHERE id = ?",
                               (f"void round_result {r.id}", hit))
                    log.warning("hit %d: %s box %d round %s released (the round was voided); %s back in the pool",
                                hit, r.table, r.box, r.round, locked)
                else:
                    s = P.confirm_hit(spec, s)
                    db.execute("UPDATE hit SET state = 'confirmed', confirmed_by = ? WHERE id = ?",
                               (f"round_result {r.id}", hit))
            if r.body["void"]:
                w = db.execute("SELECT effect, body FROM event WHERE unit = ? AND round = ? AND "
                               "kind = 'progressive_wager' AND effect IS NOT NULL", (r.unit, r.round)).fetchone()
                if w is not None:
                    e, body = json.loads(w[0]), json.loads(w[1])
                    s = P.void_wager(s, Fraction(body["amount"]), Fraction(e["into"]), Fraction(e["over"]))
                    effect = {"voided_wager": body["amount"]}
            if hits:
                effect = {**(effect or {}), ("released" if r.body["void"] else "confirmed"): hits}
        changed = s != self.states[spec.name]
        self.states[spec.name] = s
        return effect, changed

    def _hit(self, n: int, r: Report, spec: PoolSpec, kind: str, amount_: Fraction, share: Fraction | None,
             state: str, category: str | None = None) -> int:
        cur = self.db.execute(
            "INSERT INTO hit (event, unit, table_id, box, round, pool, kind, category, share, amount, state) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (n, r.unit, r.table, r.box, r.round, spec.name, kind, category or r.body.get("category"),
             None if share is None else money(share), money(amount_), state))
        return int(cur.lastrowid)

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
                self.states[pool] = P.confirm_hit(spec, self.states[pool])
                self.db.execute("UPDATE hit SET state = 'confirmed', confirmed_by = ? WHERE id = ?",
                                (by[:100], hit_id))
                self.db.execute("UPDATE pool SET state = ? WHERE name = ?",
                                (dumps(self.states[pool].to_json()), pool))
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
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
                pending = [{"hit": h, "table": t, "box": b, "amount": cents(Fraction(a))} for h, t, b, a in
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
            self.db.close()


def missing_ranges(db: sqlite3.Connection, unit: str, limit: int = 20) -> list[list[int]]:
    """The seqs of ``unit`` below its highest that the controller does not hold, as
    ``[first, last]`` ranges (at most ``limit``)."""
    missing = [[a, b] for a, b in db.execute(
        "SELECT seq + 1, nxt - 1 FROM (SELECT seq, LEAD(seq) OVER (ORDER BY seq) AS nxt "
        "FROM event WHERE unit = ?) WHERE nxt > seq + 1 LIMIT ?", (unit, limit))]
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
                       "released": s.released},
            "exact": {"amount": money(s.amount), "overflow": money(s.overflow)},
        }
    hits = [{"hit": h, "unit": u, "table": t, "box": b, "round": r, "pool": p, "kind": k, "category": c,
             "share": sh, "amount": a, "state": st, "confirmed_by": cb}
            for h, u, t, b, r, p, k, c, sh, a, st, cb in db.execute(
                "SELECT id, unit, table_id, box, round, pool, kind, category, share, amount, state, confirmed_by "
                "FROM hit ORDER BY id DESC LIMIT ?", (LAST_HITS,))]
    units = {}
    for unit, events, highest, contiguous, dups in db.execute(
            "SELECT unit, events, highest, contiguous, duplicates FROM unit ORDER BY unit"):
        missing = missing_ranges(db, unit)
        kinds = dict(db.execute("SELECT kind, COUNT(*) FROM event WHERE unit = ? GROUP BY kind ORDER BY kind",
                                (unit,)))
        alarms = dict(db.execute("SELECT json_extract(body, '$.alarm'), COUNT(*) FROM event "
                                 "WHERE unit = ? AND kind = 'alarm' GROUP BY 1 ORDER BY 1", (unit,)))
        gaps = db.execute("SELECT COUNT(*) FROM gap WHERE unit = ?", (unit,)).fetchone()[0]
        units[unit] = {"events": events, "highest_seq": highest, "contiguous": contiguous,
                       "missing": highest - events, "missing_ranges": missing, "gaps_recorded": gaps,
                       "duplicates": dups, "kinds": kinds, "alarms": alarms}
    reasons = rejected_counts(db)
    rejected = sum(reasons.values())
    return {"schema": 1, "pools": pools, "last_hits": hits, "units": units,
            "rejected": {"count": rejected, "by_reason": reasons}}
