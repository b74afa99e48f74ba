"""A policy can be a plain function of the seat's view, wherever a spec is accepted.

The rule that tells a policy function from a class or a factory (``sim.policies``); the view
it is called with, the same in-process and in a seat that runs apart (``league.seat.host``);
the same acts in-process and in a sandboxed league; an environment's opponent, ``guild
evaluate``, ``guild play`` and ``agents.make_policy``; and a function that fails faults as a
class that fails does.  The functions are ``tests/function_policies.py``.
"""

from __future__ import annotations

import functools
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import function_policies as fp
import gymnasium
import numpy as np
import pytest
from faulty_policies import BadIntent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from leagues import TESTS, league_args, one_error_line, rows

from agents import Decision, make_policy, play_episode
from league import Settings, episode_spec, play_episode_spec
from league.apart.isolated import close_all
from league.cli import terminal
from league.cli.guild import main
from league.seat import host
from league.seat.protocol import (
    VIEW_FIELDS,
    AnswerError,
    act_request,
    encode_line,
    parse_answer,
    view,
)
from sim import Game, GameConfig, Intent
from sim.policies import BATCHED_POLICIES, is_policy_function
from sim.seat_view import FunctionPolicy, turn_view

F = "function_policies:"
T = "faulty_policies:"
TURNS = 6


def _sent(request: dict) -> dict:
    """What a seat that runs apart is sent, as it reads it: the request through JSON."""
    return json.loads(encode_line(request))


def _acts(events: list[dict]) -> list[dict]:
    return [e for e in events if e["kind"] == "act"]


def _replay(out: Path, row: dict) -> dict:
    return json.loads((out / "replays" / f"{row['id']}.json").read_text(encoding="utf-8"))


# --- the rule -----------------------------------------------------------------------------

@pytest.mark.parametrize("obj, function", [
    (fp.patient, True),
    (lambda view: fp.WAIT, True),
    (fp.with_default, True),          # one required argument, one with a default
    (fp.positional_factory, True),    # named bare, it can only be a policy function
    (fp.make_patient, False),         # a factory: requires nothing
    (fp.keyword_factory, False),
    (fp.two_args, False),             # refused when built (below)
    (fp.Patient, False),              # a class
    (fp.Patient(), False),            # a policy object
    (functools.partial(fp.patient), False),  # not a plain function
    (len, False),                     # a builtin
    (fp.Patient().act, False),        # a bound method
])
def test_the_rule_tells_a_policy_function_from_a_class_or_a_factory(obj: Any,
                                                                     function: bool) -> None:
    assert is_policy_function(obj) is function


def test_specs_build_policy_functions_and_everything_else_as_before() -> None:
    policy = make_policy(f"{F}patient")
    assert isinstance(policy, FunctionPolicy) and policy.fn is fp.patient
    assert repr(policy) == f"FunctionPolicy('{F}patient')"
    assert isinstance(make_policy(fp.chooser), FunctionPolicy)  # a function given itself
    assert make_policy(f"{F}Patient").patience == 1
    assert make_policy(f"{F}make_patient").patience == 2
    assert make_policy({"name": f"{F}keyword_factory", "patience": 3}).patience == 3
    assert make_policy({"name": f"{F}positional_factory", "patience": 4}).patience == 4
    assert make_policy(policy) is policy


@pytest.mark.parametrize("spec, words", [
    (f"{F}two_args", f"policy '{F}two_args' is a function of 2 arguments (game, seat); a "
                     "policy function takes one: the seat's view"),
    ({"name": f"{F}patient", "patience": 2},
     "a policy function (one argument: the seat's view) takes no parameters"),
])
def test_what_cannot_play_is_one_value_error_naming_the_fix(spec: Any, words: str) -> None:
    with pytest.raises(ValueError) as refused:
        make_policy(spec)
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_a_policy_function_is_no_batched_policy() -> None:
    with pytest.raises(ValueError, match="is a policy function .*not a batched policy"):
        BATCHED_POLICIES.make(f"{F}patient")


# --- the view -----------------------------------------------------------------------------

def test_a_function_is_called_with_what_a_seat_apart_is_sent() -> None:
    """Each turn: the act request without its type, whose view fields are the protocol's
    ``view``; a fresh dict, which survives JSON unchanged (so a seat apart reads the same)."""
    fp.SEEN.clear()
    config = GameConfig(seed=5, turns=TURNS)
    game = Game(config)
    policies = [make_policy(p) for p in (f"{F}recording", "factor", "magpie", "factor",
                                         "magpie", "factor")]
    while not game.done:
        sent = {k: v for k, v in act_request(game, 0).items() if k != "type"}
        answers = [p.act(game, s) for s, p in enumerate(policies)]
        got = fp.SEEN[-1]
        assert got == sent == turn_view(game, 0) == _sent(got)
        assert {k: got[k] for k in VIEW_FIELDS} == view(game, 0, VIEW_FIELDS)
        assert list(got) == ["turn", "seat", "turns", "aliases", "commissions", *VIEW_FIELDS]
        got["observation"]["coin"] = -1  # what the function does with its view stays there
        assert game.observe(0)["coin"] != -1
        game.play_turn(answers)
    assert len(fp.SEEN) == TURNS


def _serve(lines: list[dict]) -> list[dict]:
    """``league.seat.host`` answering ``lines`` in this process (as in a seat process)."""
    replies = io.BytesIO()
    host.serve(f"{F}recording", [encode_line(x) for x in lines], replies)
    return [json.loads(x) for x in replies.getvalue().splitlines()]


def test_the_seat_host_calls_a_function_with_the_act_request_without_its_type() -> None:
    """It asks for every view field at reset; an act that lacks them (the first, in a process
    that had not said so yet) fetches them all with one need."""
    game = Game(GameConfig(seed=8, turns=TURNS))
    fp.SEEN.clear()
    bare = act_request(game, 3, ())
    full = act_request(game, 3)
    fetched = {"type": "view", **view(game, 3, VIEW_FIELDS)}
    replies = _serve([{"type": "reset", "seed": 1, "seat": 3}, bare, fetched, full])
    assert replies[0] == {"ok": True, "fields": list(VIEW_FIELDS)}
    assert replies[1] == {"need": list(VIEW_FIELDS)}
    expected = {k: v for k, v in _sent(full).items() if k != "type"}
    assert fp.SEEN == [expected, expected]
    assert replies[2] == replies[3] == {"action": fp.chooser(expected), "say": "", "notes": ""}


# --- in-process and apart -----------------------------------------------------------------

def _in_process_acts(payload: dict) -> list[dict]:
    """The acts of the replay's episode played again here, by ``agents.play_episode``."""
    config = GameConfig.from_dict(payload["config"])
    return _acts(play_episode(config, payload["policyNames"]).replay_payload()["events"])


def test_a_function_plays_the_same_acts_in_process_and_in_a_sandboxed_league(
        tmp_path: Path) -> None:
    """``fingerprint`` writes a digest of its whole view into each sentence, so equal acts
    also say that the sandboxed seat was called with the view it gets in-process."""
    policies = f"{F}chooser,{F}fingerprint,factor,magpie"
    out = tmp_path / "apart"
    assert main(league_args(out, 6, "--turns", str(TURNS), policies=policies)) == 0
    trusted = tmp_path / "trusted"
    assert main(league_args(trusted, 6, "--turns", str(TURNS), "--trust",
                            policies=policies)) == 0
    for r, t in zip(rows(out), rows(trusted)):
        payload = _replay(out, r)
        assert payload["sandbox"] == ["bwrap" if n.startswith(F) else None
                                      for n in payload["policyNames"]]
        assert r["faults"] == [{}] * 6 and r["fallbacks"] == [0] * 6
        acts = _acts(payload["events"])
        assert acts == _in_process_acts(payload) == _acts(_replay(trusted, t)["events"])
    seat = payload["policyNames"].index(f"{F}fingerprint")
    digests = {e["sentence"] for e in acts if e["seat"] == seat}
    assert len(digests) == TURNS and all(d.startswith(f"{fp.WAIT} view ") for d in digests)
    close_all()


# --- wherever a spec is accepted ------------------------------------------------------------

def test_a_function_is_an_environments_opponent() -> None:
    fp.SEEN.clear()
    env = gymnasium.make("sim:guild/Guild-v0", seat=0, turns=TURNS,
                         opponents=[f"{F}recording", f"{F}chooser", "factor", "magpie", "random"])
    obs, info = env.reset(seed=3)
    done = False
    while not done:
        action = int(np.flatnonzero(obs["action_mask"])[0])
        obs, _, done, _, info = env.step(action)
    game = env.unwrapped.game
    played = [e["sentence"] for e in _acts(game.replay_payload()["events"]) if e["seat"] == 1]
    assert played == [fp.chooser(v) for v in fp.SEEN] and len(played) == TURNS
    assert all(v["seat"] == 1 for v in fp.SEEN)
    env.close()


def test_a_function_object_is_an_opponent_as_its_spec_is() -> None:
    """Given as an object, a policy function is played from the view too, as by its spec
    (not called as ``fn(game, seat)``, the older form of a callable opponent)."""
    played = [_seat_one_plays(chooser)[0] for chooser in (fp.chooser, f"{F}chooser")]
    assert played[0] == played[1] and len(played[0]) == TURNS


def _seat_one_plays(opponent: Any) -> tuple[list[str], Any]:
    """Seat 1's sentences in an env episode (seed 5) where ``opponent`` is seat 1 and seat 0
    plays its last legal action each turn; and the opponent object the env built."""
    env = gymnasium.make("sim:guild/Guild-v0", seat=0, turns=TURNS,
                         opponents=[opponent, "factor", "magpie", "factor", "magpie"])
    obs, _ = env.reset(seed=5)
    done = False
    while not done:
        obs, _, done, _, _ = env.step(int(np.flatnonzero(obs["action_mask"])[-1]))
    events = env.unwrapped.game.replay_payload()["events"]
    built = env.unwrapped.opponents[0]
    env.close()
    return [e["sentence"] for e in _acts(events) if e["seat"] == 1], built


@pytest.mark.parametrize("opponent", [fp.Patient, fp.make_patient, fp.keyword_factory,
                                      f"{F}Patient", f"{F}make_patient", fp.two_args],
                         ids=["class", "factory", "keyword-factory", "class-spec",
                              "factory-spec", "act-function"])
def test_a_class_or_factory_is_an_opponent_as_its_spec_is(opponent: Any) -> None:
    """Given as an object, a class or a factory builds the opponent as ``make_policy`` and its
    ``module:Name`` spec do (README, "Write a policy"); a function of ``(game, seat)`` plays as
    ``act``.  Each waits every turn."""
    played, built = _seat_one_plays(opponent)
    assert played == [fp.WAIT] * TURNS
    if isinstance(opponent, type):
        assert isinstance(built, fp.Patient)


def test_a_callable_that_cannot_be_an_opponent_is_refused_when_the_env_is_made() -> None:
    """Neither a factory nor a function of ``(game, seat)``: a ValueError naming it, before
    any turn, not a TypeError on the first step."""
    def three(game: Any, seat: int, extra: int) -> str:
        return fp.WAIT

    with pytest.raises(ValueError, match=r"three.*cannot be called as fn\(game, seat\)"):
        gymnasium.make("sim:guild/Guild-v0", seat=0, turns=TURNS,
                       opponents=[three, "factor", "magpie", "factor", "magpie"])


def test_an_environment_resolves_a_function_without_agents_or_league() -> None:
    code = f"""
import sys, gymnasium
env = gymnasium.make("sim:guild/Guild-v0", text_mode=True, turns={TURNS},
                     opponents=["{F}chooser"] * 5)
env.reset(seed=1)
done = False
while not done:
    _, _, done, _, _ = env.step("I wait and watch the road.")
assert not any(m.split(".")[0] in ("agents", "league") for m in sys.modules), "imported"
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr


def test_guild_evaluate_plays_a_function(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", f"{F}chooser", "--against", f"{F}patient,factor",
                 "--seeds", "0..3", "--turns", str(TURNS)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("evaluate: ") and "paired difference" in out


def test_guild_play_takes_functions_as_opponents(tmp_path: Path, monkeypatch) -> None:
    """A person who only waits against functions: the same game as ``patient`` in their seat."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{fp.WAIT}\n" * TURNS))
    opponents = f"{F}chooser,{F}fingerprint,factor"
    assert main(["play", "--seed", "4", "--turns", str(TURNS), "--seat", "2", "--opponents",
                 opponents, "--replay", str(tmp_path / "r.json")]) == 0
    names = terminal.lineup(2, terminal.opponent_specs(opponents))
    game = play_episode(GameConfig(seed=4, turns=TURNS, players=tuple(names)),
                        [f"{F}patient" if n == terminal.HUMAN else n for n in names])
    saved = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert _acts(saved["events"]) == _acts(game.events)


# --- faults -------------------------------------------------------------------------------

@pytest.mark.parametrize("trust", [False, True], ids=["sandboxed", "trusted"])
def test_a_failing_function_faults_as_a_failing_class_does(tmp_path: Path, trust: bool) -> None:
    """Raising is ``raised``, anything but a sentence (a number, the protocol's JSON answer)
    ``garbage``, each decision played by the fallback and counted, as for a class."""
    same_as = {f"{F}raises": f"{T}Raiser", f"{F}not_a_sentence": f"{T}Garbage",
               f"{F}protocol_answer": f"{T}Garbage"}
    policies = ",".join(["factor", *same_as, *sorted(set(same_as.values()))])
    out = tmp_path / "faults"
    assert main(league_args(out, 6, "--turns", str(TURNS), *(["--trust"] if trust else []),
                            policies=policies)) == 0
    for r in rows(out):
        by_name = dict(zip(r["lineup"], zip(r["faults"], r["fallbacks"])))
        for function, cls in same_as.items():
            assert by_name[function] == by_name[cls] != ({}, 0)
        notes = {n: r["faultNotes"][r["lineup"].index(n)] for n in (f"{F}raises", f"{T}Raiser")}
        said, at = notes[f"{F}raises"].split(" (at ")
        assert said == notes[f"{T}Raiser"].split(" (at ")[0] and "RuntimeError: boom" in said
        assert at.startswith("function_policies.py:")  # the function's own line, either way
    close_all()


@pytest.mark.parametrize("extra", [(), ("--trust",)], ids=["sandboxed", "trusted"])
def test_a_league_refuses_a_function_of_two_arguments_in_one_line(
        tmp_path: Path, capsys, extra: tuple[str, ...]) -> None:
    argv = league_args(tmp_path / "two", 6, *extra, policies=f"factor,{F}two_args")
    assert main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "is a function of 2 arguments (game, seat); a policy function takes one" in line
    assert not (tmp_path / "two").exists()


def test_guild_evaluate_refuses_a_function_of_two_arguments_in_one_line(capsys) -> None:
    assert main(["evaluate", f"{F}two_args", "--seeds", "0..3"]) == 2
    assert "a policy function takes one: the seat's view" in one_error_line(
        capsys.readouterr().err)


# --- whatever a function returns ------------------------------------------------------------

ANSWERS = st.one_of(
    st.text(max_size=300), st.integers(), st.floats(), st.none(), st.booleans(),
    st.binary(max_size=8), st.lists(st.text(max_size=8), max_size=3),
    st.dictionaries(st.sampled_from(["action", "say", "notes"]), st.text(max_size=20)),
    st.builds(Decision, st.text(max_size=60), st.text(max_size=60)),
    st.sampled_from([Intent("wait"), BadIntent().act(None, 0), object()]),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=ANSWERS)
def test_whatever_a_function_returns_is_played_or_a_counted_fallback(answer: Any) -> None:
    """In a league's process and in a seat host alike: a sentence (or an Intent, or a
    Decision, as from a class) is played as its own decision; anything else is one ``garbage``
    fault a decision, played by the fallback; nothing crashes the seat."""
    fp.ANSWER = answer
    spec = episode_spec([f"{F}answers", "factor"], 0, 0)
    row, _ = play_episode_spec(spec, Settings(policies=spec.lineup, turns=TURNS, trust=True))
    seats = [s for s, n in enumerate(row["lineup"]) if n == f"{F}answers"]
    in_process = {(str(row["faults"][s]), row["fallbacks"][s]) for s in seats}
    assert in_process <= {("{}", 0), (str({"garbage": TURNS}), TURNS)}
    game = Game(GameConfig(seed=spec.seed, turns=TURNS))
    request = act_request(game, 0)
    reply = _host_reply(request)
    assert "error" not in reply
    try:  # as the league judges an answer: read, then checked by the rules when played
        played = parse_answer(reply, game, 0)
        game.intent_for(played.action, 0)
    except (AnswerError, ValueError):
        apart = "garbage"
    else:
        apart = "played"
        assert type(played.action) is (Intent if isinstance(answer, Intent) else str)
    assert in_process == ({(str({"garbage": TURNS}), TURNS)} if apart == "garbage"
                          else {("{}", 0)})


def _host_reply(request: dict) -> dict:
    replies = io.BytesIO()
    host.serve(f"{F}answers", [encode_line({"type": "reset", "seed": 1, "seat": 0}),
                               encode_line(request)], replies)
    return json.loads(replies.getvalue().splitlines()[-1])
