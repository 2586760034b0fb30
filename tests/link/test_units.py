"""The link's and the controller's pure parts: strict configuration, exact pools, the
outbox's numbering and pruning, the report reader."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware.config import load_jackpot_config
from firmware.jackpot import pools as P
from firmware.jackpot.config import JackpotConfigError
from firmware.jackpot.controller import report
from firmware.jackpot.wire import ReportRejected, parse_report
from firmware.link.config import LinkConfigError, load_link_config
from firmware.link.outbox import Outbox, OutboxError

from .helpers import POOL, controller

# -- configuration -----------------------------------------------------------------------


@pytest.mark.parametrize("data, named", [
    ({"broker": "mqtt://h:1883", "pasword": "x"}, "[link] pasword: unknown key"),
    ({"broker": "mqtt://h:1", "max_payload": 100}, "[link] max_payload: 100 is out of range"),
    ({"broker": "http://h:1"}, "mqtt://"),
    ({"broker": "mqtt://h:99999"}, "broker"),
    ({"broker": "mqtts://h:8883"}, "[link.tls]"),
    ({"broker": "mqtt://h:1", "tls": {"ca": "/nonexistent/ca.pem"}}, "[link.tls] ca"),
    ({"broker": "mqtt://h:1", "keepalive": 0}, "keepalive"),
    ({"broker": "mqtt://h:1", "keepalive": True}, "keepalive"),
    ({"broker": "mqtt://h:1", "password": "x"}, "password"),
    ({"broker": "mqtt://user:pw@h:1"}, "username/password"),
    ({}, "[link] broker: missing"),
])
def test_link_configuration_errors_name_the_key(data, named):
    with pytest.raises(LinkConfigError) as err:
        load_link_config(data)
    assert named in str(err.value)


def test_tls_configuration_needs_key_and_cert_together(tmp_path):
    for name in ("ca.pem", "c.pem"):
        (tmp_path / name).write_text("x")
    with pytest.raises(LinkConfigError, match=r"\[link.tls\] key: missing"):
        load_link_config({"broker": "mqtts://h:8883", "tls": {"ca": "ca.pem", "cert": "c.pem"}}, base=tmp_path)
    cfg = load_link_config({"broker": "mqtts://h", "tls": {"ca": "ca.pem"}, "username": "u", "password": "p"},
                           base=tmp_path)
    assert (cfg.port, cfg.tls.ca, cfg.username) == (8883, tmp_path / "ca.pem", "u")


@pytest.mark.parametrize("pool, named", [
    ({"seed": "1000", "rate": "1.5", "maximum": "5000"}, "rate"),
    ({"seed": "1000", "rate": "0.1", "maximum": "500"}, "maximum"),
    ({"seed": "10.001", "rate": "0.1", "maximum": "500"}, "seed"),
    ({"seed": "1000", "rate": "0.1"}, "maximum is missing"),
    ({"seed": "1000", "rate": "0.1", "maximum": "5000", "colour": "red"}, "'colour'"),
    ({"seed": "1000", "rate": "0.1", "maximum": "5000", "tables": "table-1"}, "tables"),
    # a meter above 10**9 is one no unit takes from the controller (runtime.wire.wire_amount)
    ({"seed": "1000", "rate": "0.1", "maximum": "1e100"}, "maximum: '1e100' must be a positive amount in whole cents, "
                                                          "at most 1000000000"),
    ({"seed": "2000000000", "rate": "0.1", "maximum": "3000000000"}, "seed: '2000000000'"),
    ({"seed": "1000", "rate": "0.1", "maximum": "9" * 5000}, "maximum: '99999"),
])
def test_jackpot_configuration_errors_name_the_key(pool, named):
    data = {"unit": {"role": "jackpot", "id": "main", "state_dir": "j"}, "link": {"broker": "mqtt://h:1"},
            "jackpot": {"db": "j.db", "pools": {"main": pool}}}
    with pytest.raises(JackpotConfigError) as err:
        load_jackpot_config(data)
    assert named in str(err.value) and "jackpot.pools.main" in str(err.value)
    assert len(str(err.value)) < 300              # a 5,000-digit value is named, not printed


def test_a_rate_in_percent():
    data = {"unit": {"role": "jackpot", "id": "main", "state_dir": "j"}, "link": {"broker": "mqtt://h:1"},
            "jackpot": {"db": "j.db", "pools": {"main": {"seed": 1000, "rate": "15%", "maximum": 250000}}}}
    assert load_jackpot_config(data).pools[0].rate == Fraction(15, 100)


def test_the_jackpot_configuration_has_one_format(tmp_path):
    """The unit format of docs/examples/jackpot.toml; the old top-level role/[jackpot] link
    form is refused naming what is wrong."""
    import tomllib

    from tests.runtime.test_config import example_text

    cfg = load_jackpot_config(tomllib.loads(example_text("jackpot.toml")), source="jackpot.toml")
    assert (cfg.link_id, cfg.link.username, cfg.pools[0].name) == ("main", "jackpot/main", "main")
    old = {"role": "jackpot", "link": {"broker": "mqtt://h:1"}, "jackpot": {"db": "j.db", "link": "main"}}
    with pytest.raises(JackpotConfigError, match=r"^old.toml: unit: missing$"):
        load_jackpot_config(old, source="old.toml")


# -- pools -------------------------------------------------------------------------------

ops = st.lists(st.one_of(
    st.tuples(st.just("wager"), st.integers(1, 2000).map(lambda c: Fraction(c, 100) * 5)),
    st.tuples(st.just("hit"), st.sampled_from([Fraction(1), Fraction(1, 10), Fraction(1, 2)])),
    st.tuples(st.just("confirm"), st.just(None)),
), max_size=60)


@settings(max_examples=200, deadline=None)
@given(ops)
def test_pools_never_create_or_lose_money(sequence):
    spec = P.PoolSpec("p", Fraction(1000), Fraction(15, 100), Fraction(1100), ("*",))
    s = P.new_pool(spec)
    locked_total = Fraction(0)
    for op, x in sequence:
        if op == "wager":
            s, into, over = P.contribute(spec, s, x)
            assert into + over == x * spec.rate
        elif op == "hit":
            s, locked = P.lock_hit(spec, s, x)
            assert locked == P.round_down_to_cent(locked) and locked >= 0
            locked_total += locked
        elif s.pending:
            s = P.confirm_hit(spec, s)
        assert P.balanced(s)
        assert s.amount <= spec.maximum + spec.seed and s.amount >= 0 and s.overflow >= 0
        assert s.won == locked_total


def test_a_full_hit_leaves_the_pool_pending_and_reseeds_with_the_overflow_at_confirmation():
    spec = P.PoolSpec("p", Fraction(1000), Fraction(1, 10), Fraction(1050), ("*",))
    s = P.new_pool(spec)
    s, into, over = P.contribute(spec, s, Fraction(1000))          # 100 in: 50 fits, 50 overflows
    assert (s.amount, s.overflow, into, over) == (1050, 50, 50, 50)
    s, locked = P.lock_hit(spec, s, Fraction(1))
    assert (locked, s.amount, s.pending, s.needs_seed) == (1050, 0, 1, True)
    s, _, _ = P.contribute(spec, s, Fraction(10))                   # 1 while pending
    s = P.confirm_hit(spec, s)
    assert (s.amount, s.overflow, s.pending, s.seeds) == (1050, 1, 0, 2000)   # 1 + 1000 + 49 of 50
    assert P.balanced(s)


def test_a_second_full_hit_while_the_first_is_pending_is_paid_from_the_reseeded_pool():
    spec = P.PoolSpec("p", Fraction(1000), Fraction(1, 10), Fraction(100000), ("*",))
    s = P.new_pool(spec)
    s, _, _ = P.contribute(spec, s, Fraction(5000))                 # 1500
    s, first = P.lock_hit(spec, s, Fraction(1))
    s, second = P.lock_hit(spec, s, Fraction(1))
    assert (first, second, s.pending) == (1500, 1000, 2)
    s = P.confirm_hit(spec, s)
    assert s.needs_seed and s.amount == 0                           # still one pending
    s = P.confirm_hit(spec, s)
    assert (s.amount, s.pending, s.reseeds) == (1000, 0, 2)


# -- the outbox --------------------------------------------------------------------------


def test_the_outbox_numbers_gap_free_is_idempotent_by_key_and_survives_reopening(tmp_path):
    ob = Outbox(tmp_path / "o.db", "table-1/seat-1")
    assert [ob.put("t", "alarm", {"n": i}, key=f"k{i % 5}") for i in range(8)] == [1, 2, 3, 4, 5, None, None, None]
    ob.mark_acked_many([1, 2])
    ob.close()
    ob = Outbox(tmp_path / "o.db", "table-1/seat-1")
    assert [(p.seq, p.acked) for p in ob.pending()] == [(1, True), (2, True), (3, False), (4, False), (5, False)]
    ids = {json.loads(p.payload)["id"] for p in ob.pending()}
    assert len(ids) == 5
    assert ob.confirm_through(3) == 3
    assert ob.put("t", "alarm", {}, key="k1") is None                # pruned, still remembered
    assert ob.put("t", "alarm", {}) == 6
    assert [p.seq for p in ob.pending()] == [4, 5, 6]
    assert ob.confirm_through(2) == 0                                # a stale mark changes nothing
    with pytest.raises(OutboxError, match="table-1/seat-1"):
        Outbox(tmp_path / "o.db", "table-1/seat-2")


# -- reading reports ---------------------------------------------------------------------


def _report(**kw):
    r = {"schema": 1, "id": "abcdefgh-1", "unit": "t1/seat-1", "table": "t1", "box": 1, "seq": 1,
         "kind": "progressive_wager", "round": 1, "body": {"amount": "5"}}
    r.update(kw)
    return json.dumps(r).encode()


@pytest.mark.parametrize("payload, reason", [
    (_report(body={"amount": 5}), "bad_amount"),
    (_report(body={"amount": "5.001"}), "bad_amount"),
    (_report(body={"amount": "1e3"}), "bad_amount"),
    (_report(seq=0), "bad_field"),
    (_report(seq=True), "bad_field"),
    (_report(box="1"), "bad_field"),
    (_report(unit="t1/seat-2"), "forged"),
    (_report(kind="progressive_hit", body={"category": "x", "award": None, "meter_share": None}), "bad_field"),
    (_report(kind="progressive_hit", body={"category": "x", "award": None, "meter_share": "1.5"}), "bad_field"),
    (_report(kind="round_result", body={"void": "no", "net": "0"}), "bad_field"),
    (b"{" * 20000, "oversized"),
])
def test_the_report_reader_names_what_is_wrong(payload, reason):
    with pytest.raises(ReportRejected) as err:
        parse_report("betbox/v1/unit/t1/seat-1/report", payload)
    assert err.value.reason == reason


DEALER = "betbox/v1/unit/t1/dealer/report"


def _dealer(seq: int, round_: int, kind: str, body: dict) -> bytes:
    """The dealer's record of a round (the authority the controller books the seats' word by)."""
    return json.dumps({"schema": 1, "id": f"dealer-{seq:04d}", "unit": "t1/dealer", "table": "t1", "seq": seq,
                       "kind": kind, "round": round_, "body": body}).encode()


def _wagers(seq: int, round_: int, *boxes: tuple[int, str, dict | None]) -> bytes:
    return _dealer(seq, round_, "round_progressive", {"meter": "1000", "boxes": [
        {"box": b, "wager": w, "hit": h} for b, w, h in boxes]})


FULL = {"category": "suited_four_of_a_kind", "award": None, "meter_share": "1", "amount": "1000"}


def test_gaps_are_recorded_and_filled_duplicates_dropped(tmp_path):
    ctl = controller(tmp_path / "j.db")
    topic = "betbox/v1/unit/t1/seat-1/report"
    for seq in (1, 2, 5, 6, 2):
        ctl.ingest(topic, _report(seq=seq, id=f"report-{seq}", round=seq))
    data = report(ctl.db)
    u = data["units"]["t1/seat-1"]
    assert (u["events"], u["highest_seq"], u["contiguous"], u["missing_ranges"], u["gaps_recorded"],
            u["duplicates"]) == (4, 6, 2, [[3, 4]], 1, 1)
    for seq in (4, 3):
        assert ctl.ingest(topic, _report(seq=seq, id=f"report-{seq}", round=seq)).status == "accepted"
    u = report(ctl.db)["units"]["t1/seat-1"]
    assert (u["events"], u["contiguous"], u["missing_ranges"]) == (6, 6, [])
    for rnd in range(1, 7):
        ctl.ingest(DEALER, _wagers(rnd, rnd, (1, "5", None)))
    assert Fraction(report(ctl.db)["pools"]["main"]["meters"]["contributions"]) == 6 * 5 * POOL.rate
    ctl.close()


def test_a_voided_round_takes_its_contribution_back(tmp_path):
    ctl = controller(tmp_path / "j.db")
    topic = "betbox/v1/unit/t1/seat-1/report"
    ctl.ingest(topic, _report(seq=1, id="report-1", body={"amount": "10"}))
    ctl.ingest(topic, _report(seq=2, id="report-2", kind="round_result", body={"void": True, "net": "0"}))
    ctl.ingest(DEALER, _wagers(1, 1, (1, "10", None)))
    assert report(ctl.db)["pools"]["main"]["meters"]["wagers"] == 1
    ctl.ingest(DEALER, _dealer(2, 1, "round_settlement", {"void": True, "boxes": [
        {"box": 1, "net": "0", "envy": [], "side_bets": []}]}))
    m = report(ctl.db)["pools"]["main"]
    assert (m["meters"]["wagers"], m["meters"]["contributions"], m["meters"]["voided"], m["exact"]["amount"]) == \
        (0, "0", 1, "1000")
    ctl.close()


def _hit(seq: int, round_: int, share: str = "1") -> bytes:
    return _report(seq=seq, id=f"report-{seq}", round=round_, kind="progressive_hit",
                   body={**FULL, "meter_share": share})


def test_a_full_hit_in_a_round_then_voided_is_released_not_paid(tmp_path):
    """Switch §3.7 pays a 100% win at the end of the round; a round voided instead (§5.1)
    returns its bets: the locked hit goes back to the pool, nothing is reseeded."""
    ctl = controller(tmp_path / "j.db")
    topic = "betbox/v1/unit/t1/seat-1/report"
    ctl.ingest(topic, _report(seq=1, id="report-1", round=1, body={"amount": "100"}))
    ctl.ingest(topic, _hit(2, 1))
    ctl.ingest(DEALER, _wagers(1, 1, (1, "100", FULL)))
    assert ctl.meter()["pools"]["main"]["state"] == "pending"
    ctl.ingest(topic, _report(seq=3, id="report-3", round=2, body={"amount": "20"}))     # meanwhile
    ctl.ingest(DEALER, _wagers(2, 2, (1, "20", None)))
    ctl.ingest(topic, _report(seq=4, id="report-4", round=1, kind="round_result", body={"void": True, "net": "0"}))
    ctl.ingest(DEALER, _dealer(3, 1, "round_settlement", {"void": True, "boxes": [
        {"box": 1, "net": "0", "envy": [], "side_bets": []}]}))
    data = report(ctl.db)
    pool = data["pools"]["main"]
    m = pool["meters"]
    # the first wager's contribution went back with its void round; the second stays
    assert (pool["state"], pool["exact"]["amount"]) == ("live", "1003")
    assert (m["hits"], m["won"], m["pending"], m["released"], m["reseeds"], m["seeds"]) == (0, "0", 0, 1, 0, "1000")
    assert pool["balanced"]
    assert data["last_hits"][0]["state"] == "released"
    assert ctl.meter()["pools"]["main"]["state"] == "live"
    ctl.close()


def test_a_released_hit_after_a_second_hit_reseeded_comes_back_on_top(tmp_path):
    ctl = controller(tmp_path / "j.db")
    t1, t2 = "betbox/v1/unit/t1/seat-1/report", "betbox/v1/unit/t1/seat-2/report"
    ctl.ingest(t1, _report(seq=1, id="report-a1", round=1, body={"amount": "100"}))
    ctl.ingest(t1, _hit(2, 1))
    ctl.ingest(t2, _report(seq=1, id="report-b1", unit="t1/seat-2", box=2, round=1, body={"amount": "100"}))
    ctl.ingest(t2, _report(seq=2, id="report-b2", unit="t1/seat-2", box=2, round=1, kind="progressive_hit",
                           body=FULL))
    ctl.ingest(DEALER, _wagers(1, 1, (1, "100", FULL), (2, "100", FULL)))     # both lock the round's 1000
    ctl.ingest(t1, _report(seq=3, id="report-a3", round=1, kind="round_result", body={"void": True, "net": "0"}))
    ctl.ingest(DEALER, _dealer(2, 1, "round_settlement", {"void": True, "boxes": [
        {"box": 1, "net": "0", "envy": [], "side_bets": []}, {"box": 2, "net": "0", "envy": [], "side_bets": []}]}))
    pool = report(ctl.db)["pools"]["main"]
    assert pool["balanced"] and pool["meters"]["released"] == 1 and pool["meters"]["pending"] == 1
    assert pool["state"] == "pending"                 # seat 2 has not reported the round's end: still locked
    ctl.close()
