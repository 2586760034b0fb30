"""Scripted rounds: a round written as JSON (wagers, shoe, decisions) played through the
engine, for pit supervisors reconstructing a disputed hand and for tests.

Pure: takes the parsed JSON, returns the settlement dict. Every problem raises
:class:`ScriptError` saying what and where (``decisions["1"][2]: ...``).
"""

from __future__ import annotations

from collections import deque
from fractions import Fraction
from typing import Any, Mapping

from firmware.engine.cards import Card, CardError, parse_card
from firmware.engine.errors import RuleError
from firmware.engine.events import Action, BetsClosed, CardDrawn, Decision, VoidRound, WalkedAway
from firmware.engine.hand import describe
from firmware.engine.money import parse_amount
from firmware.engine.profile import ProfileError, load_profile
from firmware.engine.round import Phase, Round
from firmware.engine.settlement import settlement
from firmware.runtime.config import MAX_BOX

KEYS = {"profile", "decks", "wagers", "shoe", "decisions", "insurance", "even_money", "switch",
        "meter", "limits", "walked_away"}
DECISIONS = "hit, stand, double, double:AMOUNT, split, surrender"


class ScriptError(ValueError):
    """A script that is malformed or asks for something the rules refuse."""


class MalformedScript(ScriptError):
    """A script that is not one: a wrong type, box, amount, card or decision word, an unknown
    key or profile (``betbox settle`` exits 2, bad input; a round the rules refuse exits 1)."""


MAX_AMOUNT = Fraction(10**9)   # no bet, limit or meter on a table comes near a thousand million
MAX_AMOUNT_TEXT = 32           # characters in an amount written as text


def _box_key(key: Any, where: str) -> int:
    text = str(key).strip() if isinstance(key, (str, int)) and not isinstance(key, bool) else None
    if text is None or len(text) > 3 or not text.isdigit():
        raise MalformedScript(f"{where}: {_short(key)} is not a box number (boxes are 1 to {MAX_BOX} from the "
                          "dealer's left)")
    n = int(text)
    if not 1 <= n <= MAX_BOX or str(n) != text:
        raise MalformedScript(f"{where}: {_short(key)} is not a box number (boxes are 1 to {MAX_BOX} from the "
                          "dealer's left)")
    return n


def _short(value: Any) -> str:
    """``repr`` for a message, cut short: a 5,000-digit number is named, not printed."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else f"a {len(str(abs(value)))}-digit number"
    return text if len(text) <= 40 else text[:37] + "..."


def _amount(value: Any, where: str) -> Fraction:
    """An amount, bounded: 0 to MAX_AMOUNT (10**400, 1e308 and 5,000-digit strings are refused)."""
    if isinstance(value, str) and len(value) > MAX_AMOUNT_TEXT:
        raise MalformedScript(f"{where}: {_short(value)} is not an amount (at most {MAX_AMOUNT_TEXT} characters)")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_AMOUNT:
        raise MalformedScript(f"{where}: {_short(value)} is above the largest amount {MAX_AMOUNT}")
    try:
        amount = parse_amount(value)
    except ValueError as exc:
        raise MalformedScript(f"{where}: {exc}") from None
    if not -MAX_AMOUNT <= amount <= MAX_AMOUNT:
        raise MalformedScript(f"{where}: {_short(value)} is above the largest amount {MAX_AMOUNT}")
    return amount


def _mapping(script: Mapping[str, Any], key: str, default: Any) -> Any:
    value = script.get(key, default)
    if not isinstance(value, type(default)):
        kind = "an object" if isinstance(default, dict) else "a list"
        raise MalformedScript(f"{key}: expected {kind}, got {type(value).__name__}")
    return value


def _parse_decision(text: Any, where: str, box: int) -> Decision:
    if not isinstance(text, str):
        raise MalformedScript(f"{where}: {text!r} is not a decision ({DECISIONS})")
    word, _, amount_text = text.strip().lower().partition(":")
    if word not in ("hit", "stand", "double", "split", "surrender"):
        raise MalformedScript(f"{where}: {text!r} is not a decision ({DECISIONS})")
    amount = None
    if amount_text:
        if word != "double":
            raise MalformedScript(f"{where}: only a double takes an amount ({text!r})")
        amount = _amount(amount_text, where)
    return Decision(box, Action(word), amount)


def run_script(script: Any) -> dict[str, Any]:
    """Play a scripted round and return its settlement."""
    return settlement(play_script(script))


def play_script(script: Any) -> Round:
    """Play a scripted round and return the finished round (its ``history`` is the record)."""
    if not isinstance(script, dict):
        raise MalformedScript("the script must be a JSON object")
    unknown = sorted(set(script) - KEYS)
    if unknown:
        raise MalformedScript(f"unknown key {unknown[0]!r} (keys: {', '.join(sorted(KEYS))})")
    if "profile" not in script:
        raise MalformedScript("profile: missing")
    try:
        profile = load_profile(str(script["profile"]))
    except ProfileError as exc:
        raise MalformedScript(f"profile: {exc}") from None

    decks = script.get("decks", profile.default_decks)
    if isinstance(decks, bool) or not isinstance(decks, int):
        raise MalformedScript(f"decks: expected a whole number, got {decks!r}")
    meter = None
    if script.get("meter") is not None:
        meter = _amount(script["meter"], "meter")
    limits = _mapping(script, "limits", {})
    for bet, pair in limits.items():
        if isinstance(pair, list):
            for i, value in enumerate(pair):
                _amount(value, f"limits[{_short(bet)}][{i}]")
    try:
        state = Round.new(profile, decks=decks, limits=limits, meter=meter)
    except ValueError as exc:
        raise ScriptError(str(exc)) from None

    wagers_raw = _mapping(script, "wagers", {})
    if "wagers" not in script:
        raise MalformedScript("wagers: missing")
    wagers: dict[int, dict[str, Fraction]] = {}
    for key, bets in wagers_raw.items():
        box = _box_key(key, "wagers")
        if not isinstance(bets, dict):
            raise MalformedScript(f"wagers[{key!r}]: expected an object of bet name -> amount")
        wagers[box] = {str(name): _amount(amount, f"wagers[{key!r}]") for name, amount in bets.items()}

    shoe: deque[Card] = deque()
    for i, text in enumerate(_mapping(script, "shoe", [])):
        try:
            shoe.append(parse_card(text))
        except CardError as exc:
            raise MalformedScript(f"shoe[{i}]: {exc}") from None

    decisions: dict[int, deque[tuple[str, Decision]]] = {}
    for key, items in _mapping(script, "decisions", {}).items():
        box = _box_key(key, "decisions")
        if not isinstance(items, list):
            raise MalformedScript(f"decisions[{key!r}]: expected a list of decisions")
        decisions[box] = deque((f"decisions[{key!r}][{i}]", _parse_decision(t, f"decisions[{key!r}][{i}]", box))
                               for i, t in enumerate(items))

    insurance: list[tuple[str, Decision]] = []
    for key, amount in _mapping(script, "insurance", {}).items():
        box = _box_key(key, "insurance")
        amounts = amount if isinstance(amount, list) else [amount]
        for hand, value in enumerate(amounts, start=1):
            if value in (None, 0):
                continue
            a = _amount(value, f"insurance[{key!r}]")
            insurance.append((f"insurance[{key!r}]", Decision(box, Action.INSURANCE, a, hand)))
    even_money = [(f"even_money[{i}]", Decision(_box_key(k, "even_money"), Action.EVEN_MONEY))
                  for i, k in enumerate(_mapping(script, "even_money", []))]
    walked = [(f"walked_away[{i}]", WalkedAway(_box_key(k, "walked_away")))
              for i, k in enumerate(_mapping(script, "walked_away", []))]
    switches = {_box_key(k, "switch"): f"switch[{i}]" for i, k in enumerate(_mapping(script, "switch", []))}

    def apply(event, where: str) -> None:
        nonlocal state
        try:
            state, _ = state.apply(event)
        except RuleError as exc:
            raise ScriptError(f"{where}: {exc}") from None

    apply(BetsClosed.of(wagers), "wagers")
    offers_done = False
    while not state.is_over:
        if not offers_done and state.phase not in (Phase.BETTING, Phase.INITIAL_DEAL):
            # The offer window: insurance, even money and surrender come after the second
            # card to each box and before any further card (§3.14, §3.16).
            offers_done = True
            for where, event in [*insurance, *even_money, *walked]:
                apply(event, where)
            for box, queue in decisions.items():
                for family in range(profile.hands_per_box):
                    if queue and queue[0][1].action == Action.SURRENDER:
                        where, d = queue.popleft()
                        apply(Decision(box, Action.SURRENDER, hand=family + 1), where)
                    else:
                        break
            continue
        expect = state.expecting()
        if expect.kind == "card":
            if not shoe:
                # §5.5.3: insufficient cards in the shoe to complete the round
                apply(VoidRound("insufficient_cards"), "shoe")
                break
            apply(CardDrawn(shoe.popleft()), "shoe")
        elif expect.kind == "decision":
            assert expect.box is not None           # a decision is expected of a box
            box = expect.box
            if box in switches:
                apply(Decision(box, Action.SWITCH), switches.pop(box))
                continue
            waiting = decisions.get(box)
            if not waiting:
                in_play = state.hand_in_play()
                cards = describe(in_play[1].cards) if in_play is not None else "no hand"
                raise ScriptError(f"decisions[{str(box)!r}]: ran out while box {box} hand {expect.hand} "
                                  f"({cards}) needs a decision")
            where, d = waiting.popleft()
            apply(d, where)
        else:  # pragma: no cover - expecting() only says bets/card/decision/nothing
            raise ScriptError(f"the round is waiting for {expect}")
    if not offers_done and state.phase != Phase.VOID:
        # A round that ends at the initial deal (a dealer or player Blackjack) asks nothing of a
        # box: a player who walked away from it changes nothing; an offer never made is an error.
        for where, _ in [*insurance, *even_money]:
            raise ScriptError(f"{where}: the round ended before the initial deal was complete")
        for where, event in walked:
            if event.box not in wagers:
                raise ScriptError(f"{where}: box {event.box} has no bet in this round")
    if state.phase != Phase.VOID:
        for box, queue in decisions.items():
            if queue:
                where, d = queue[0]
                raise ScriptError(f"{where}: {d.action} was never asked for: box {box}'s hands were complete")
        for box, where in switches.items():
            raise ScriptError(f"{where}: box {box} was never asked to play, so it could not switch")
        for played in state.boxes:
            if played.progressive_pending and played.progressive_award is None:
                raise ScriptError(f"meter: box {played.number} hit {played.progressive_hand}, which pays a share of "
                                  "the progressive meter; give the meter to settle it")
    return state
