"""Engine throughput: full 7-box rounds per second with side bets, the latency of one
``apply``, and baselines measured in the same run so the figures can be compared across
machines.

    python3 bench/bench_engine.py [--rounds N] [--seed S] [--vs-rounds N] [--runs K]
                                  [--cardsharp-python PATH | --no-cardsharp] [--wall]
                                  [--baseline TREE]

Times are each process's own CPU time (``time.process_time``), betbox's and cardsharp's
alike, so a loaded shared machine does not skew the ratio; ``--wall`` measures wall-clock
time instead.

Seeded shuffled shoe, fixed simple strategy (hit below 17, stand otherwise; a decision the
engine reports illegal is replaced by the first legal one). No assertions: it prints.

Side by side with cardsharp (the peer pure-Python engine, PyPI ``cardsharp``): it is never
a project dependency. The bench runs it in its own venv, by default
``~/.cache/betbox-bench/cardsharp`` (made on first use with the newest ``python3.N`` on PATH or
in pyenv's versions and ``pip install cardsharp``: releases after 0.1.0 need Python >= 3.12,
0.6.0 needs 3.14; a venv of 3.11 with cardsharp 0.1.0 is made again once a newer Python is found),
or the interpreter given with ``--cardsharp-python``. Both play 6 decks with basic strategy
on the same number of spots, in alternating runs (betbox, cardsharp, betbox, ...), each run
in a fresh process of its own (betbox's too: see :func:`run_betbox`); the medians are printed with the ratio and cardsharp's version. "main+side" is betbox with
``player_pair``, ``under_13``, ``over_13`` against cardsharp's bonus payouts (>= 0.2; 0.1.0
has none and rebuilds its shoe every round).

``--baseline TREE`` measures another checkout's engine (e.g. ``git worktree add /tmp/old
<commit>``) in the same side-by-side run, alternating with this one and cardsharp, played by
this file's harness in its own process; it prints this engine / baseline per figure.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

CARDSHARP = "cardsharp"        # the newest release the venv's Python can install
# the clocks of the betbox figures: the process's own CPU time unless --wall (on a shared,
# loaded machine wall-clock time measures the other processes as much as this one)
CLOCK, CLOCK_NS = time.process_time, time.process_time_ns
CARDSHARP_VENV = Path.home() / ".cache" / "betbox-bench" / "cardsharp"


# --- cardsharp's side: runs in its own interpreter (no betbox import) ----------------------

def cardsharp_worker(boxes: int, rounds: int, seed: int, side: int, cpu: int = 1) -> dict:
    """Plays ``rounds`` cardsharp rounds with ``boxes`` basic-strategy players on 6 decks.
    cardsharp >= 0.2 (Python >= 3.12): its own 6-deck shoe (75% penetration), S17, DAS,
    late surrender, and with ``side`` its bonus payouts (suited 6-7-8, 7-7-7, five-card 21).
    cardsharp 0.1.0 (the only release for Python 3.11): async, no side bets, a 52-card deck
    rebuilt every round, so the bench gives it a 6-deck one (rebuilt and shuffled per round)."""
    from importlib.metadata import version

    from cardsharp.blackjack.actor import Player
    from cardsharp.blackjack.blackjack import BlackjackGame
    from cardsharp.blackjack.state import PlacingBetsState
    from cardsharp.blackjack.strategy import BasicStrategy
    from cardsharp.common.io_interface import DummyIOInterface

    random.seed(seed)
    clock = time.process_time if cpu else time.perf_counter
    io = DummyIOInterface()
    out = {"version": version("cardsharp"), "side": False}
    try:
        from cardsharp.blackjack.rules import Rules
        from cardsharp.common.shoe import Shoe  # noqa: F401  (>= 0.2 only)
    except ImportError:
        Rules = None
    if Rules is not None:
        bonus = {"suited-6-7-8": 2.0, "7-7-7": 3.0, "five-card-21": 1.5} if side else {}
        out["side"] = bool(side)
        rules = Rules(blackjack_payout=1.5, dealer_hit_soft_17=False, dealer_peek=True, allow_split=True,
                      allow_double_down=True, allow_double_after_split=True, allow_insurance=False,
                      allow_surrender=True, allow_late_surrender=True, num_decks=6, min_bet=10,
                      max_bet=1000, bonus_payouts=bonus)
        game = BlackjackGame(rules, io)
        for i in range(boxes):
            game.add_player(Player(f"p{i}", io, BasicStrategy(), initial_money=10**15))
        hands = 0
        t0 = clock()
        for _ in range(rounds):
            game.set_state(PlacingBetsState())
            game.play_round()
            hands += sum(len(p.hands) for p in game.players)
            game.reset()
        dt = clock() - t0
        return {**out, "rounds_s": rounds / dt, "hands_s": hands / dt}

    from cardsharp.common.deck import Deck

    class SixDecks(Deck):
        def initialize_default_deck(self):
            return super().initialize_default_deck() * 6

    async def run() -> dict:
        game = BlackjackGame({"blackjack_payout": 1.5, "allow_insurance": False, "min_players": 1,
                              "min_bet": 10, "max_players": boxes}, io)
        game.deck = SixDecks()
        for i in range(boxes):
            await game.add_player(Player(f"p{i}", io, BasicStrategy(), initial_money=10**15))
        await game.set_state(PlacingBetsState())
        hands = 0
        t0 = clock()
        for _ in range(rounds):
            await game.play_round()
            hands += sum(len(p.hands) for p in game.players)
            game.reset()
            game.deck = SixDecks()
        dt = clock() - t0
        return {**out, "rounds_s": rounds / dt, "hands_s": hands / dt}

    return asyncio.run(run())


if __name__ == "__main__" and sys.argv[1:2] == ["--cardsharp-worker"]:
    print(json.dumps(cardsharp_worker(*map(int, sys.argv[2:7]))))
    sys.exit(0)

# the engine measured: this checkout's, or (the --baseline worker) another checkout's, played by
# this file's harness so both engines are measured the same way
sys.path.insert(0, os.environ.get("BETBOX_BENCH_TREE") or str(Path(__file__).resolve().parents[1]))

from firmware.engine.cards import ALL_CARDS  # noqa: E402
from firmware.engine.errors import RuleError  # noqa: E402
from firmware.engine.events import Action, BetsClosed, CardDrawn, Decision  # noqa: E402
from firmware.engine.hand import hand_total  # noqa: E402
from firmware.engine.profile import load_profile  # noqa: E402
from firmware.engine.round import Round  # noqa: E402
from firmware.engine.settlement import settlement  # noqa: E402

TABLES = {
    "rws-blackjack": {"main": 10, "player_pair": 5, "under_13": 5, "over_13": 5},
    "uk-4-deck": {"main": 10, "super_pairs": 5, "twenty_one_plus_three": 5, "top_3": 5},
    "rws-blackjack-switch": {"main": 10, "progressive": 5},
}


def _betbox_worker(argv: list[str]) -> None:
    boxes, rounds, seed, side, cpu = map(int, argv)
    print(json.dumps(betbox_vs(boxes, bool(side), rounds, seed, bool(cpu))))


def machine() -> str:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"nproc {os.cpu_count()}, CPU {model}, Python {platform.python_version()} "
            f"({platform.python_implementation()}), {platform.machine()}")


class Shoe:
    def __init__(self, decks: int, rng: random.Random):
        self.decks, self.rng = decks, rng
        self.full = [c for c in ALL_CARDS for _ in range(decks)]    # a fresh shoe, listed once
        self.cards: list = []

    def draw(self):
        if len(self.cards) < 60:      # reshuffle well before the end, like a cut card
            self.refill()
        return self.cards.pop()

    def refill(self) -> list:
        """A freshly shuffled shoe (its cards, drawn from the end)."""
        self.cards = self.full[:]
        # random.shuffle itself, as cardsharp shuffles its shoe: the shuffle is the
        # harness's, not the engine's, and a hand-inlined copy of the library's loop would
        # count against the peer a speed-up that is no part of either engine
        self.rng.shuffle(self.cards)
        return self.cards


class EventShoe(Shoe):
    """The shoe as the table's card reader delivers it: each card as its ``CardDrawn`` event
    (made once per card of the shoe: an event is an immutable value; the engine still
    applies every one). Shuffled and drawn as :class:`Shoe`, so the same seed deals the
    same cards."""

    def __init__(self, decks: int, rng: random.Random):
        super().__init__(decks, rng)
        self.full = [CardDrawn(c) for c in self.full]


def play_round(profile, wagers, shoe, timings=None, meter=100000):
    """One round: returns (state, events applied)."""
    state = Round.new(profile, meter=meter if profile.progressive else None)
    clock = CLOCK_NS
    n = 0

    def apply(event):
        nonlocal state, n
        if timings is None:
            state, _ = state.apply(event)
        else:
            t0 = clock()
            state, _ = state.apply(event)
            timings.append(clock() - t0)
        n += 1

    apply(BetsClosed.of({box: wagers for box in range(1, 8)}))
    while not state.is_over:
        expect = state.expecting()
        if expect.kind == "card":
            apply(CardDrawn(shoe.draw()))
            continue
        _, hand = state.hand_in_play()
        want = Action.HIT if hand.total < 17 else Action.STAND
        d = Decision(expect.box, want)
        if state.why_not(d) is not None:             # legal-checked
            legal = [a for a, why in state.legal_decisions(expect.box).items()
                     if why is None and a in (Action.STAND, Action.HIT)]
            d = Decision(expect.box, legal[0])
        apply(d)
    return state, n


# --- basic strategy for the side-by-side run (6 decks, S17, DAS, late surrender) ---------

def _chart(rows: str) -> dict[int, str]:
    """``"16: HHHHHSSSSS"``-style rows: one letter per dealer up card 2..9, T, A."""
    out = {}
    for row in rows.strip().splitlines():
        key, _, acts = row.partition(":")
        out[int(key)] = acts.strip()
    return out


HARD = _chart("""
8: HHHHHHHHHH
9: HDDDDHHHHH
10: DDDDDDDDHH
11: DDDDDDDDDH
12: HHSSSHHHHH
13: SSSSSHHHHH
14: SSSSSHHHHH
15: SSSSSHHHRH
16: SSSSSHHRRR
17: SSSSSSSSSS""")
SOFT = _chart("""
13: HHHDDHHHHH
14: HHHDDHHHHH
15: HHDDDHHHHH
16: HHDDDHHHHH
17: HDDDDHHHHH
18: SDDDDSSHHH
19: SSSSSSSSSS""")
PAIRS = _chart("""
1: PPPPPPPPPP
2: PPPPPPHHHH
3: PPPPPPHHHH
4: HHHPPHHHHH
6: PPPPPHHHHH
7: PPPPPPHHHH
8: PPPPPPPPPP
9: PPPPPSPPSS""")


def basic_action(hand, up, first_two: bool) -> Action:
    """Total-dependent basic strategy; the caller falls back when the engine refuses.
    (Read from tables made once from the charts: the first two cards' action by their ranks
    and the up card's, later ones by total and column; :func:`chart_action` reads the charts.)"""
    cards = hand.cards
    if first_two and len(cards) == 2:
        return _FIRST_TWO[cards[0].rank, cards[1].rank, up.rank]
    total, soft = hand_total(cards)          # (hand.total and hand.soft: one count, not two)
    return (_SOFT_BY_TOTAL if soft else _HARD_BY_TOTAL)[total][_UP_COLUMN[up.rank]]


def chart_action(cards, up, first_two: bool) -> Action:
    """The charts read as written (the tables of :func:`basic_action` are made from this)."""
    col = _UP_COLUMN[up.rank]
    if first_two and len(cards) == 2:
        value = _RANK_VALUE[cards[0].rank]
        if value == _RANK_VALUE[cards[1].rank] and PAIRS.get(value, "H" * 10)[col] == "P":
            return _SPLIT
    total, soft = hand_total(cards)
    if soft:
        return _SOFT_ACTIONS[min(max(total, 13), 19)][col]
    return _HARD_ACTIONS[min(max(total, 8), 17)][col]


#: made once: an Enum member read from its class costs ~0.3 us, which the bench would
#: otherwise count against the engine on every decision
_CODES = {"H": Action.HIT, "S": Action.STAND, "D": Action.DOUBLE, "R": Action.SURRENDER}
_SPLIT, _SURRENDER, _HIT, _STAND, _DOUBLE = Action.SPLIT, Action.SURRENDER, Action.HIT, Action.STAND, Action.DOUBLE
_FALLBACK = {Action.DOUBLE: Action.HIT, Action.SURRENDER: Action.HIT, Action.SPLIT: Action.HIT}
#: the charts' letters as actions, each dealer up-card rank's column, each rank's value
_HARD_ACTIONS = {total: [_CODES[c] for c in row] for total, row in HARD.items()}
_SOFT_ACTIONS = {total: [_CODES[c] for c in row] for total, row in SOFT.items()}
_RANK_VALUE = {c.rank: c.value for c in ALL_CARDS}
_UP_COLUMN = {rank: (v if v > 1 else 11) - 2 for rank, v in _RANK_VALUE.items()}
#: the charts by total (every total a hand can have, clamped as the charts are read) and the
#: first two cards' action by ranks (two cards and the up card's)
_HARD_BY_TOTAL = [_HARD_ACTIONS[min(max(total, 8), 17)] for total in range(32)]
_SOFT_BY_TOTAL = [_SOFT_ACTIONS[min(max(total, 13), 19)] for total in range(32)]
_FIRST_TWO = {(a.rank, b.rank, up.rank): chart_action([a, b], up, True)
              for a in ALL_CARDS[:13] for b in ALL_CARDS[:13] for up in ALL_CARDS[:13]}


def play_basic(profile, bets: BetsClosed, shoe: EventShoe):
    """One round of basic strategy, every event through ``Round.apply`` as at the table:
    (state, hands played). ``bets`` is the round's "no more bets" (the same wagers every
    round), ``shoe`` deals ``CardDrawn`` events. A decision the engine refuses (apply raises
    and leaves the round as it was) is replaced by the fallback, asked with ``why_not``."""
    state = Round.new(profile)
    state, _ = state.apply(bets)
    cards = shoe.cards          # (Shoe.draw written out: a card is drawn per event)
    while True:
        # what the round expects and the hand in play, in one query (expecting + hand_in_play)
        expect, _, hand = state.expecting_hand()
        kind = expect.kind
        if kind == "card":
            if len(cards) < 60:
                cards = shoe.refill()
            state, _ = state.apply(cards.pop())
            continue
        if kind != "decision":                      # "nothing": the round is over
            break
        up = state.dealer[0]
        want = basic_action(hand, up, not hand.decided)
        if want is _SURRENDER or want is _DOUBLE:
            # what the seat's screen shows the player (the button greyed out) is not tried: a
            # surrender against an Ace, on a split hand or after a card has been dealt after
            # the initial deal (rws-blackjack-v5 §3.16), a double after the first two cards
            # (§3.22). The fallback below is the one a refusal would bring: the same play.
            if (hand.decided or (len(hand.cards) != 2 if want is _DOUBLE else
                                 (hand.from_split or up.rank == "A" or not state.offers_open))):
                want = _FALLBACK[want]
                if want is _HIT and hand.total >= 17:
                    want = _STAND
        d = _DECISIONS.get((expect.box, want)) or _decision(expect.box, want)
        try:
            state, _ = state.apply(d)
        except RuleError:
            while state.why_not(d) is not None:
                want = _FALLBACK.get(want, _STAND)
                if want is _HIT and hand.total >= 17:
                    want = _STAND
                d = _decision(expect.box, want)
            state, _ = state.apply(d)
    return state, sum([len(b.hands) for b in state.boxes])


if not hasattr(Round, "expecting_hand"):
    # an engine from before Round.expecting_hand (a --baseline tree): the query as this
    # engine has it, so that both engines are played by the same harness
    from firmware.engine.round import _DEALER_CARD, _EXPECTS, _INITIAL_DEAL, _PLAY, _expect  # noqa: E402

    def _expecting_hand(self):
        phase = self.phase
        if phase is _PLAY:
            bi, hi = self.cursor
            box = self.boxes[bi]
            hand = box.hands[hi]
            key = ("card" if hand.wants_card else "decision", box.number, hi + 1)
            return _EXPECTS.get(key) or _expect(*key), box, hand
        if phase is _INITIAL_DEAL:
            target = self.deal_order[self.deal_pos]
            if isinstance(target, str):
                return _DEALER_CARD_NO_HAND
            key = ("card", self.boxes[target[0]].number, target[1] + 1)
            return _EXPECTS.get(key) or _expect(*key), None, None
        return self.expecting(), None, None

    _DEALER_CARD_NO_HAND = (_DEALER_CARD, None, None)

    Round.expecting_hand = _expecting_hand


#: the decisions of the basic-strategy player, made once per (box, action): a decision is an
#: immutable value, as the seat's buttons would send it (surrender names the first hand)
_DECISIONS: dict = {}


def _decision(box: int, action: Action) -> Decision:
    d = _DECISIONS.get((box, action))
    if d is None:
        d = _DECISIONS[(box, action)] = Decision(box, action, None, 1 if action is _SURRENDER else None)
    return d


def betbox_vs(boxes, side_bets, rounds, seed, cpu=True) -> dict:
    profile = load_profile("rws-blackjack")
    wagers = TABLES["rws-blackjack"] if side_bets else {"main": 10}
    shoe = EventShoe(6, random.Random(seed))
    bets = BetsClosed.of({box: wagers for box in range(1, boxes + 1)})
    hands = 0
    clock = time.process_time if cpu else time.perf_counter
    t0 = clock()
    for _ in range(rounds):
        state, n = play_basic(profile, bets, shoe)
        settlement(state)
        hands += n
    dt = clock() - t0
    return {"rounds_s": rounds / dt, "hands_s": hands / dt}


def run_betbox(tree: str | None, boxes: int, rounds: int, seed: int, side: bool, cpu: bool,
               python: str | None = None) -> dict | None:
    """``betbox_vs`` in a fresh process of its own, as cardsharp is run: this checkout's
    engine (``tree`` None) or another checkout's (``--baseline``). Not in the bench's own
    process: after its other figures (three profiles' rounds, the latency run, the deepcopy
    baseline) the same rounds ran 5-14% slower there than in a fresh process (docs/engine.md,
    session 10), a handicap cardsharp's side never had. ``python``: another interpreter
    (cardsharp's, for the two engines on the same one); the engine needs nothing beyond the
    standard library."""
    env = dict(os.environ)
    if tree is not None:
        env["BETBOX_BENCH_TREE"] = tree
    else:
        env.pop("BETBOX_BENCH_TREE", None)
    try:
        done = subprocess.run([python or sys.executable, __file__, "--betbox-worker", str(boxes), str(rounds),
                               str(seed), str(int(side)), str(int(cpu))], env=env,
                              capture_output=True, text=True, timeout=1200, check=True)
        return json.loads(done.stdout)
    except (subprocess.SubprocessError, OSError, ValueError) as exc:
        print(f"  {'baseline' if tree else 'betbox'} run failed: {exc}")
        return None


def _pythons() -> list[str]:
    """Pythons 3.12 and newer on this machine, newest first: on PATH, or pyenv's (installed,
    not selected: its shims of them fail), each one that can make a venv."""
    found: list[str] = []
    for v in range(20, 11, -1):
        candidates = [shutil.which(f"python3.{v}")]
        candidates += sorted(str(p) for p in (Path.home() / ".pyenv" / "versions").glob(f"3.{v}.*/bin/python3.{v}"))[::-1]
        for p in candidates:
            if p and p not in found and subprocess.run([p, "-c", "import venv"], capture_output=True).returncode == 0:
                found.append(p)
                break
    return found


def cardsharp_python(given: str | None) -> str | None:
    """The interpreter of a venv with cardsharp: given, or the bench's own (made on first use
    with the newest Python found, so with the newest cardsharp release it can install)."""
    if given:
        return given
    python = CARDSHARP_VENV / "bin" / "python"

    def runs(code: str) -> bool:
        return python.exists() and subprocess.run([str(python), "-c", code], capture_output=True).returncode == 0
    if runs("import sys, cardsharp; sys.exit(sys.version_info < (3, 12))"):
        return str(python)
    newer = _pythons()
    if not newer and runs("import cardsharp"):
        return str(python)                  # 3.11's cardsharp 0.1.0, and nothing newer to make it with
    # recent cardsharp needs Python >= 3.12 (0.1.0, the last for 3.11, is async and has no side bets)
    base = newer[0] if newer else sys.executable
    print(f"making {CARDSHARP_VENV} with {base} and {CARDSHARP} (once) ...", flush=True)
    if not newer:
        print("  no Python 3.12 or newer found: cardsharp 0.1.0, an old release, is what pip can install; "
              "give --cardsharp-python for a venv with the newest", flush=True)
    try:
        subprocess.run([base, "-m", "venv", "--clear", str(CARDSHARP_VENV)], check=True, timeout=300)
        subprocess.run([str(python), "-m", "pip", "install", "-q", CARDSHARP], check=True, timeout=600)
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"cardsharp could not be installed ({exc}); only betbox is measured")
        return None
    return str(python)


def run_cardsharp(python: str, boxes: int, rounds: int, seed: int, side: bool, cpu: bool) -> dict | None:
    try:
        done = subprocess.run([python, __file__, "--cardsharp-worker", str(boxes), str(rounds), str(seed),
                               str(int(side)), str(int(cpu))],
                              capture_output=True, text=True, timeout=1200, check=True)
        return json.loads(done.stdout)
    except (subprocess.SubprocessError, OSError, ValueError) as exc:
        print(f"  cardsharp run failed: {exc}")
        return None


def instructions(python: str, worker: str, boxes: int, side: bool, tree: str | None = None,
                 rounds: tuple[int, int] = (100, 400)) -> float | None:
    """Instructions a round under valgrind's callgrind (the machine's speed does not enter):
    the worker run for two round counts, the difference over the rounds between (the start-up,
    imports and shuffles before the first round cancel). None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    env = dict(os.environ)
    env.pop("BETBOX_BENCH_TREE", None)
    if tree is not None:
        env["BETBOX_BENCH_TREE"] = tree
    counts = []
    for n in rounds:
        done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python, __file__,
                               f"--{worker}-worker", str(boxes), str(n), "1", str(int(side)), "1"],
                              env=env, capture_output=True, text=True, timeout=3600)
        found = [line.rsplit(":", 1)[1].strip() for line in done.stderr.splitlines() if "Collected :" in line]
        if done.returncode != 0 or not found:
            print(f"  callgrind of the {worker} worker failed: {done.stderr.strip()[-300:]}")
            return None
        counts.append(int(found[-1]))
    return (counts[1] - counts[0]) / (rounds[1] - rounds[0])


def side_by_side_instructions(python: str | None, baseline: str | None) -> None:
    """7 boxes with side bets by instructions a round: betbox under its own Python and under
    cardsharp's (the same interpreter for both engines), cardsharp, the baseline engine."""
    print("side by side by instructions (valgrind callgrind, 7 boxes with side bets, rounds 101-400 of a "
          "worker; the host's speed does not enter; the same harnesses as above):")
    ours = instructions(sys.executable, "betbox", 7, True)
    if ours is None:
        print("  (valgrind not found: apt-get install valgrind)")
        return
    print(f"  betbox, Python {platform.python_version()}{'':10s} {ours / 1000:9.0f}k instructions a round")
    if baseline:
        old = instructions(sys.executable, "betbox", 7, True, tree=baseline)
        if old:
            print(f"  baseline ({baseline}), same Python  {old / 1000:9.0f}k   this engine / baseline "
                  f"{old / ours:4.2f}x fewer")
    if not python:
        return
    theirs = instructions(python, "cardsharp", 7, True)
    same = instructions(python, "betbox", 7, True)
    version = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True).stdout.strip()
    if theirs and same:
        print(f"  betbox, cardsharp's Python {version}{'':4s} {same / 1000:9.0f}k")
        print(f"  cardsharp, Python {version}{'':13s} {theirs / 1000:9.0f}k   cardsharp / betbox: "
              f"{theirs / same:4.2f}x on the same Python, {theirs / ours:4.2f}x each on its own")


def spread(runs: list[dict], key: str) -> str:
    """``min/median/max`` of one figure over the runs."""
    if not runs:
        return "-"
    values = sorted(r[key] for r in runs)
    return f"{values[0]:.0f}/{statistics.median(values):.0f}/{values[-1]:.0f}"


def side_by_side(python: str | None, rounds: int, runs: int, seed: int, cpu: bool = True,
                 baseline: str | None = None) -> None:
    print(f"side by side, rws-blackjack vs cardsharp: 6 decks, basic strategy, {rounds} rounds "
          f"a run, {runs} alternating runs, each in a fresh process; min/median/max, ratio of the medians; per "
          + ("second of the process's own CPU time (a shared machine's load does not count)" if cpu
             else "second of wall-clock time"))
    print(f"  {'spots':5s} {'bets':10s} {'betbox rounds/s':>18s} {'hands/s':>18s}   "
          f"{'cardsharp rounds/s':>18s} {'hands/s':>18s}   ratio")
    # cardsharp's interpreter, when not betbox's own (recent cardsharp needs a newer Python):
    # betbox is run on it too, in the table's last line, for the two engines on one interpreter
    theirs_py = None
    if python:
        theirs_py = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                                   capture_output=True, text=True).stdout.strip() or None
        if theirs_py == platform.python_version():
            theirs_py = None
    for boxes in (1, 7):
        for side in (False, True):
            _side_by_side_row(python, theirs_py, boxes, side, rounds, runs, seed, cpu, baseline)


def _side_by_side_row(python: str | None, theirs_py: str | None, boxes: int, side: bool, rounds: int,
                      runs: int, seed: int, cpu: bool, baseline: str | None) -> None:
    """One line of the side-by-side table: the alternating runs, then their figures."""
    ours, theirs, before, same = [], [], [], []
    also = theirs_py is not None and boxes == 7 and side
    for run in range(runs):
        if baseline:
            old = run_betbox(baseline, boxes, rounds, seed + run, side, cpu)
            if old:
                before.append(old)
        got = run_betbox(None, boxes, rounds, seed + run, side, cpu)
        if got:
            ours.append(got)
        if python:
            got = run_cardsharp(python, boxes, rounds, seed + run, side, cpu)
            if got:
                theirs.append(got)
        if also:
            got = run_betbox(None, boxes, rounds, seed + run, side, cpu, python=python)
            if got:
                same.append(got)
    med = lambda rs, k: statistics.median(r[k] for r in rs) if rs else float("nan")   # noqa: E731
    b_r, c_r = med(ours, "rounds_s"), med(theirs, "rounds_s")
    ratio = b_r / c_r if theirs else float("nan")
    peer = (f"cardsharp {theirs[0]['version']}" + (" with its bonus payouts" if theirs[0]["side"]
            else " main only")) if theirs else "no cardsharp"
    print(f"  {boxes:5d} {'main+side' if side else 'main':10s} {spread(ours, 'rounds_s'):>18s} "
          f"{spread(ours, 'hands_s'):>18s}   {spread(theirs, 'rounds_s'):>18s} "
          f"{spread(theirs, 'hands_s'):>18s}   {ratio:5.2f}x  ({peer})", flush=True)
    if len(ours) == len(theirs) == runs > 1:
        # a host whose speed drifts moves both runs of a pair alike (same seed, run back to
        # back): the ratio of each pair, beside the ratio of the medians
        pairs = sorted(o["rounds_s"] / t["rounds_s"] for o, t in zip(ours, theirs, strict=True))
        print(f"  {'':5s} {'pairs':10s} each run's betbox / cardsharp: median {statistics.median(pairs):.2f}x, "
              f"{pairs[0]:.2f}-{pairs[-1]:.2f}x, betbox ahead in {sum(r >= 1 for r in pairs)} of {runs}",
              flush=True)
    if same and theirs:
        b_same = med(same, "rounds_s")
        pairs = sorted(o["rounds_s"] / t["rounds_s"] for o, t in zip(same, theirs, strict=False))
        print(f"  {'':5s} {'same Py':10s} {spread(same, 'rounds_s'):>18s} {spread(same, 'hands_s'):>18s}"
              f"   betbox on cardsharp's Python {theirs_py} / cardsharp {b_same / c_r:4.2f}x, pairs median "
              f"{statistics.median(pairs):.2f}x, betbox ahead in {sum(r >= 1 for r in pairs)} of {len(pairs)}",
              flush=True)
    if before:
        b_old = med(before, "rounds_s")
        print(f"  {'':5s} {'baseline':10s} {spread(before, 'rounds_s'):>18s} {spread(before, 'hands_s'):>18s}"
              f"   this engine / baseline {b_r / b_old:4.2f}x, baseline / cardsharp "
              f"{b_old / c_r if theirs else float('nan'):4.2f}x  ({baseline})", flush=True)


def bench_rounds(name, wagers, rounds, seed):
    profile = load_profile(name)
    shoe = Shoe(profile.default_decks, random.Random(seed))
    events = 0
    t0 = CLOCK()
    for _ in range(rounds):
        state, n = play_round(profile, wagers, shoe)
        settlement(state)
        events += n
    dt = CLOCK() - t0
    return rounds / dt, events / rounds, dt


def bench_latency(rounds, seed):
    profile = load_profile("rws-blackjack")
    shoe = Shoe(profile.default_decks, random.Random(seed))
    timings: list[int] = []
    states = []
    for i in range(rounds):
        state, _ = play_round(profile, TABLES["rws-blackjack"], shoe, timings)
        if i < 200:
            states.append(state)
    timings.sort()
    q = statistics.quantiles(timings, n=100)
    return len(timings), q[49] / 1000, q[98] / 1000, states


def bench_baselines(states, applies):
    """Same-run baselines: deepcopy of a finished 7-box round; hand_total over the same
    number of calls as ``applies`` events, on the round's own hands."""
    t0 = time.perf_counter_ns()
    for s in states:
        copy.deepcopy(s)
    deepcopy_us = (time.perf_counter_ns() - t0) / len(states) / 1000
    hands = [h.cards for s in states for b in s.boxes for h in b.hands] + [s.dealer for s in states]
    t0 = time.perf_counter_ns()
    i = 0
    for _ in range(applies):
        hand_total(hands[i])
        i = i + 1 if i + 1 < len(hands) else 0
    total_ns = time.perf_counter_ns() - t0
    t0 = time.perf_counter_ns()
    for _ in range(applies):
        pass
    loop_ns = time.perf_counter_ns() - t0
    return deepcopy_us, total_ns / applies / 1000, loop_ns / applies / 1000


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--vs-rounds", type=int, default=1000, help="rounds per side-by-side run")
    ap.add_argument("--runs", type=int, default=3, help="alternating side-by-side runs per figure")
    ap.add_argument("--cardsharp-python", help="python of a venv that has cardsharp installed")
    ap.add_argument("--no-cardsharp", action="store_true", help="skip the side-by-side run")
    ap.add_argument("--baseline", metavar="TREE",
                    help="also measure the engine of another checkout (e.g. a git worktree of an older "
                         "commit) in the side-by-side run, alternating, played by this file's harness")
    ap.add_argument("--instructions", action="store_true",
                    help="also the side-by-side by instructions a round under valgrind (steady on a noisy host)")
    ap.add_argument("--vs-only", action="store_true",
                    help="only the side-by-side run (not the profiles' rounds, apply latency and baselines)")
    ap.add_argument("--wall", action="store_true",
                    help="side by side in wall-clock time (default: each process's own CPU time)")
    args = ap.parse_args(argv)
    global CLOCK, CLOCK_NS
    if args.wall:
        CLOCK, CLOCK_NS = time.perf_counter, time.perf_counter_ns
    print(f"machine: {machine()}")
    print("load average (1, 5, 15 min) at the start: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    print(f"rounds per profile: {args.rounds}, seed {args.seed}, 7 boxes, "
          "strategy: hit below 17 else stand; times: " + ("wall clock" if args.wall else "process CPU"))
    print()
    if args.vs_only:
        side_by_side(cardsharp_python(args.cardsharp_python), args.vs_rounds, args.runs, args.seed, not args.wall,
                     args.baseline)
        if args.instructions:
            side_by_side_instructions(cardsharp_python(args.cardsharp_python), args.baseline)
        print("load average (1, 5, 15 min) at the end:   " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
        return
    print("full 7-box rounds with side bets:")
    for name, wagers in TABLES.items():
        rps, epr, dt = bench_rounds(name, wagers, args.rounds, args.seed)
        bets = "+".join(wagers)
        print(f"  {name:22s} {bets:44s} {rps:9.0f} rounds/s  "
              f"({epr:.1f} events/round, {dt:.2f} s)")
    print()
    n, p50, p99, states = bench_latency(args.rounds // 2, args.seed + 1)
    print(f"apply one event (rws-blackjack, {n} events): p50 {p50:.1f} us, p99 {p99:.1f} us")
    deepcopy_us, total_us, loop_us = bench_baselines(states, n)
    print("baselines (same run):")
    print(f"  copy.deepcopy of a finished 7-box round: {deepcopy_us:.1f} us")
    print(f"  hand_total(), one call:                  {total_us:.3f} us")
    print(f"  empty Python for-loop iteration:         {loop_us:.3f} us")
    print(f"  => one apply p50 = {p50 / deepcopy_us:.2f} deepcopies = {p50 / total_us:.0f} hand_total calls")
    if not args.no_cardsharp:
        print()
        side_by_side(cardsharp_python(args.cardsharp_python), args.vs_rounds, args.runs, args.seed, not args.wall,
                     args.baseline)
        if args.instructions:
            side_by_side_instructions(cardsharp_python(args.cardsharp_python), args.baseline)
    print("load average (1, 5, 15 min) at the end:   " + " ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__" and sys.argv[1:2] == ["--betbox-worker"]:
    _betbox_worker(sys.argv[2:7])
elif __name__ == "__main__":
    main()
