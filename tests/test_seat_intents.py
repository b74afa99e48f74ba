"""A hand-built ``Intent`` plays the same in a seat apart as in the league's process.

In-process the rules play an ``Intent`` as given: a move may carry a spoken line (RULES §12,
SENTENCES §13: heard in the seat's room), and a ``none`` keeps its parser reason.  A seat apart
(``league.seat.host``) sends it as an intent object (``Intent.to_json`` form), which
``league.seat.protocol.parse_answer`` reads back; an ``exec:`` program may answer one too.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from leagues import league_args, policy_module, rows

from league.cli.guild import main
from league.seat.host import as_answer
from league.seat.protocol import (
    INTENT_KEYS,
    ProtocolError,
    encode_line,
    parse_answer,
    read_line,
)
from sim import Game, GameConfig, Intent
from sim.rules.intents import KINDS, REASONS

SEED, TURNS = 2, 6


def _together(seed: int = SEED) -> Game:
    """A game whose seat 1 stands in seat 0's room, to hear what seat 0 says there."""
    game = Game(GameConfig(seed=seed, turns=TURNS))
    state = game.snapshot()
    state["cogs"][1]["room"] = state["cogs"][0]["room"]
    game.restore(state)
    return game


class _View:
    """What ``as_answer`` reads of a seat's view: the town and the aliases."""

    def __init__(self, game: Game) -> None:
        self.world, self.aliases = game.world, game.aliases


def _apart(game: Game, got: Any) -> Any:
    """The action the league plays for a seat host's answer ``got``, through the wire."""
    return parse_answer(read_line(encode_line(as_answer(got, _View(game)))), game, 0).action


def _turn(action: Any) -> tuple[list[dict], list[dict], list[str]]:
    """Seat 0 plays ``action`` beside five waits: the acts, every seat's next observation and
    seat 1's text view."""
    game = _together()
    if not isinstance(action, Intent | str):
        action = action(game)
    acts = game.play_turn([action] + ["I wait and watch the road."] * 5)
    return acts, [game.observe(s) for s in range(6)], [game.observation_text(1)]


def _move(game: Game) -> Intent:
    """A move to seat 0's first exit, with a spoken line holding quote marks."""
    exit_ = game.world.rooms[game.state.room[0]].exits[0]
    return Intent("move", to_room=exit_, text='meet "me" at the docks')


@pytest.mark.parametrize("made, heard", [
    (_move, "meet 'me' at the docks"),
    (Intent("wait", text="the alley is clear"), "the alley is clear"),
    (Intent("none", reason="no_verb", text="hmm, rope"), "hmm, rope"),
    (Intent("none", reason="no_such_cog"), None),
    (Intent("say", text='he said "hi"'), "he said 'hi'"),
    (Intent("say"), "I say."),
    (Intent("say", text="\u00abx\u00bb y"), "'x' y"),
])
def test_a_hand_built_intent_plays_and_is_heard_the_same_apart(made: Any, heard: str | None
                                                              ) -> None:
    """Sent as a sentence, a move's or a wait's spoken line was lost (``I walk to ...``) and a
    ``none`` became ``unparsed``: the other seats heard nothing, the record said otherwise."""
    in_process = _turn(made)
    apart = _turn(lambda g: _apart(g, made if isinstance(made, Intent) else made(g)))
    assert apart == in_process
    acts, _, (text,) = in_process
    assert acts[0]["structured"]["spoken"] == (heard or "")
    assert heard is None or f'says: "{heard}"' in text
    if isinstance(made, Intent):  # a none keeps its reason, as the rules play it
        assert acts[0]["intent"] == made.kind
        assert made.kind != "none" or acts[0]["reason"] == made.reason


def test_the_host_refuses_an_intent_no_sentence_could_be() -> None:
    """A ``none`` whose reason no parse gives, or a kind with a reason not ``ok``: garbage
    at the host, as ``play_turn`` refuses it in-process."""
    game = Game(GameConfig(seed=SEED, turns=TURNS))
    for made in (Intent("none", reason="ok"), Intent("move", to_room=1, reason="waited")):
        assert as_answer(made, _View(game))["garbage"].startswith(
            "returned an Intent the rules refuse (IntentError: a hand-built")
        with pytest.raises(ValueError, match="a hand-built"):
            game.intent_for(made, 0)


IDS = st.integers(-1, 12)
TEXTS = st.lists(st.sampled_from(["hi", '"', "\u00ab", " ", "\n", "\ud800", "rope", "x" * 200]),
                 max_size=6).map("".join)


@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(KINDS), room=IDS, item=IDS, npc=IDS, other=st.integers(-1, 6),
       qty=st.sampled_from([0, 1, 2, 999]), coin=st.sampled_from([0, 1, 5, 2**63 - 1]),
       reason=st.sampled_from(REASONS), text=TEXTS)
def test_any_hand_built_intent_plays_the_same_apart_or_is_refused_both_ways(
        kind: str, room: int, item: int, npc: int, other: int, qty: int, coin: int,
        reason: str, text: str) -> None:
    """Whatever the slots (ids the town lacks, reasons a sentence cannot give, quotes, lone
    surrogates, 200 runes): the rules refuse it in both places, or play it the same."""
    made = Intent(kind, to_room=room, item=item, qty=qty, npc=npc, other=other, coin=coin,
                  reason=reason, text=text)
    game = _together()
    try:
        game.intent_for(made, 0)
    except ValueError:
        in_process: Any = "refused"
    else:
        in_process = _turn(made)
    reply = as_answer(made, _View(game))
    try:  # as the league judges an answer: read, then checked by the rules when played
        action = parse_answer(read_line(encode_line(reply)), game, 0).action
        game.intent_for(action, 0)
    except ValueError:
        apart: Any = "refused"
    else:
        apart = _turn(action)
    assert apart == in_process
    if in_process == "refused" and kind != "none" and reason == "ok":
        assert "garbage" not in reply  # ids the town lacks: the rules refuse it, not the host


@pytest.mark.parametrize("action, named", [
    ({"toRoom": 1}, "no kind"),
    ({"kind": "move", "where": 1}, "'where'"),
    ({"kind": "fly"}, "kind must be one of"),
    ({"kind": ["move"]}, "kind must be one of"),
    ({"kind": "move", "toRoom": True}, "to_room must be an int"),
    ({"kind": "move", "toRoom": 1.0}, "to_room must be an int"),
    ({"kind": "move", "toRoom": "1"}, "to_room must be an int"),
    ({"kind": "move", "toRoom": -2}, "to_room must be -1"),
    ({"kind": "buy", "item": 1, "qty": -1}, "qty must be between"),
    ({"kind": "give", "coin": 2**63}, "coin must be between"),
    ({"kind": "move", "reason": "maybe"}, "reason must be one of"),
    ({"kind": "say", "spoken": 5}, "text must be a str"),
])
def test_an_answers_intent_object_that_is_no_intent_is_refused_naming_what(
        action: dict, named: str) -> None:
    game = Game(GameConfig(seed=SEED, turns=TURNS))
    with pytest.raises(ProtocolError, match="answered an intent") as e:
        parse_answer({"action": action}, game, 0)
    assert named in str(e.value) and len(str(e.value)) < 400


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(action=st.dictionaries(st.sampled_from([*INTENT_KEYS, "x"]), JSON, max_size=10))
def test_any_intent_object_is_an_intent_or_a_protocol_error(action: dict) -> None:
    game = Game(GameConfig(seed=SEED, turns=TURNS))
    try:
        got = parse_answer(read_line(json.dumps({"action": action}).encode()), game, 0)
    except ProtocolError:
        return
    assert isinstance(got.action, Intent) and got.action.to_json() == {
        **Intent(got.action.kind).to_json(), **action,
        "reason": action.get("reason") or ("unparsed" if action["kind"] == "none" else "ok")}


# --- in a league -------------------------------------------------------------------------------

POLICIES = textwrap.dedent("""
    from sim import Intent

    class Talker:
        def act(self, game, seat):
            if game.turn % 3 == 0:
                return Intent("wait", text=f"turn {game.turn}, all quiet")
            if game.turn % 3 == 1:
                return Intent("none", reason="no_verb", text="hmm")
            return Intent("say", text='rope "cheap" here')
""")
MODULE = "intent_talker"
TALKER = f"{MODULE}:Talker"

EXEC = textwrap.dedent("""
    import json, sys
    for line in sys.stdin:
        r = json.loads(line)
        answer = {} if r["type"] != "act" else {
            "action": {"kind": "wait", "spoken": "from elsewhere"}}
        sys.stdout.write(json.dumps(answer) + "\\n"); sys.stdout.flush()
""")


def _events(out: Path) -> list[list[dict]]:
    return [json.loads((out / "replays" / f"{r['id']}.json").read_text(encoding="utf-8"))
            ["events"] for r in rows(out)]


@pytest.mark.parametrize("apart", [["--sandbox", "none"], []])
def test_a_sandboxed_policys_intents_play_as_trusted_and_verify(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, apart: list[str]) -> None:
    policy_module(tmp_path, monkeypatch, MODULE, POLICIES, apart)
    policies = f"{TALKER},factor"
    runs = {}
    for name, extra in (("trusted", ["--trust"]), ("apart", apart)):
        assert main(league_args(tmp_path / name, 4, "--turns", str(TURNS), *extra,
                                policies=policies, workers=1)) == 0
        runs[name] = _events(tmp_path / name)
    assert runs["apart"] == runs["trusted"]
    talked = [e for ev in runs["apart"] for e in ev if e["kind"] == "act"
              and e.get("structured", {}).get("spoken") == "turn 0, all quiet"]
    assert talked and all(e["intent"] == "wait" for e in talked)
    assert all(r["faults"] == [{}] * 6 for r in rows(tmp_path / "apart"))
    assert main(["verify", str(tmp_path / "apart")]) == 0


def test_an_exec_program_may_answer_an_intent_object(tmp_path: Path) -> None:
    bot = tmp_path / "bot.py"
    bot.write_text(EXEC, encoding="utf-8")
    spec = f"exec:{sys.executable} {bot}"
    out = tmp_path / "league"
    assert main(league_args(out, 2, "--turns", str(TURNS), "--sandbox", "none",
                            policies=f"{spec},factor", workers=1)) == 0
    got = rows(out)
    seats = [(r, s) for r in got for s, n in enumerate(r["lineup"]) if n == spec]
    assert seats and all(r["faults"][s] == {} and r["fallbacks"][s] == 0 for r, s in seats)
    acts = [e for r, ev in zip(got, _events(out)) for e in ev if e["kind"] == "act"
            and r["lineup"][e["seat"]] == spec]
    assert acts and all(e["intent"] == "wait" and e["structured"]["spoken"] == "from elsewhere"
                        for e in acts)
    assert main(["verify", str(out)]) == 0
