"""Hostile use of two features: policy functions and ``guild train --config``.

Policy functions (``sim.policies``, ``sim.seat_view``, ``league.seat.host``): a function that
wrecks the view it gets, answers with a ``str`` that lies about itself, with 10 MB or with a lone
surrogate, raises what is no ``Exception``, sleeps, or has a shape that no view can call.  It
plays the same in-process and apart, its failures are counted faults played by the fallback,
a spec that cannot play is one line, and nothing it does stops a league.

``guild train --config`` (``agents.learn.train_args``, ``agents.learn.knobs``): every numeric
option at and past its bounds, in the file, as a flag and in the library alike; TOML's other
types; files that are no config; options given twice.  ``tests/test_train_config.py`` has the
rest.
"""

from __future__ import annotations

import io
import json
import math
import os
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from conftest import needs, needs_module
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from leagues import league_args, one_error_line, rows

from agents import play_episode
from agents.learn import training
from agents.learn.knobs import Knob
from agents.learn.ppo_config import KNOBS as PPO_KNOBS
from agents.learn.ppo_config import MAX_LAYERS, MAX_WIDTH, PPOConfig
from agents.learn.train_args import OPTIONS, build_parser, read_config
from agents.learn.train_options import KNOBS as RUN_KNOBS
from agents.learn.train_options import TrainingError, TrainOptions
from league import EpisodeSpec, Settings, play_episode_spec
from league.apart.isolated import close_all
from league.cli.guild import main
from league.seat import host
from league.seat.protocol import act_request, encode_line, parse_answer
from sim import Game, GameConfig
from sim.policies import is_policy_function, make_policy
from sim.seat_view import FunctionPolicy, turn_view

TURNS = 6
WAIT = "I wait and watch the road."
H = "hostile_view_policies:"

# The hostile policies, written to a folder of their own at the start of the session: the
# league's sandbox shows a seat its module's file, so the module must not import the tests.
HOSTILE = '''
"""Policy functions (and classes beside them) that attack whatever plays them."""

import functools
import time

from sim.rules.intents import Intent, ParsedSentence

WAIT = "I wait and watch the road."
ANSWER = WAIT   # what ``answers`` returns: set by a test
SLEEP = 1.0


def chooser(view):
    admissible = view["admissible"]
    return admissible[(7 * view["turn"] + view["seat"]) % len(admissible)]


def _wreck(x):
    if isinstance(x, dict):
        for v in x.values():
            _wreck(v)
        x.clear()
        x["wrecked"] = True
    elif isinstance(x, list):
        for v in x:
            _wreck(v)
        x[:] = ["wrecked"]


def wrecker(view):
    """Plays as ``chooser``, then empties every dict and list it was given."""
    answer = chooser(view)
    _wreck(view)
    return answer


def answers(view):
    return ANSWER


class LyingStr(str):
    """Equal to anything; its methods say it is another sentence."""

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__

    def __str__(self):
        return "I buy everything."

    def strip(self, *chars):
        return "I buy everything."

    def translate(self, table):
        return "I buy everything."


class RaisingStr(str):
    def __getattribute__(self, name):
        raise RuntimeError(f"no {name} for you")

    def __eq__(self, other):
        raise RuntimeError("no eq")

    __hash__ = str.__hash__

    def __len__(self):
        raise RuntimeError("no len")

    def __contains__(self, item):
        raise RuntimeError("no contains")


class Posing:
    """Not a str, but ``isinstance(x, str)`` says it is one (it reads ``__class__``)."""

    __class__ = property(lambda self: str)

    def __getattr__(self, name):
        raise RuntimeError(f"posing: no {name}")


def lying(view):
    return LyingStr(WAIT)


def raising_str(view):
    return RaisingStr(WAIT)


def posing(view):
    return Posing()


class PosingClass:
    def act(self, game, seat):
        return Posing()


def forged(view):
    """A sentence carrying an intent the parser never gave: a move to no room."""
    return ParsedSentence(WAIT, Intent("move", to_room=999))


def huge(view):
    return WAIT + " " + "a" * (10 << 20)


def surrogate(view):
    return '"hello \\ud800 there"'


def sleeper(view):
    time.sleep(SLEEP)
    return WAIT


def exits(view):
    raise SystemExit(0)


def closes(view):
    raise GeneratorExit


class Own(BaseException):
    pass


def own_base(view):
    raise Own("mine")


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no message")


def unprintable(view):
    raise Unprintable()


def interrupts(view):
    raise KeyboardInterrupt


class ExitsClass:
    def act(self, game, seat):
        raise SystemExit(0)


class ClosesClass:
    def act(self, game, seat):
        raise GeneratorExit


class UnprintableClass:
    def act(self, game, seat):
        raise Unprintable()


async def awaits(view):
    return WAIT


async def async_yields(view):
    yield WAIT


def yields(view):
    yield WAIT


def keyword_only(view, *, style):
    return WAIT


def star(*args):
    return WAIT


def defaults(view=None):
    return WAIT


def with_rest(view, *rest):
    return chooser(view)


partial = functools.partial(chooser)


class CallsLikeAFunction:
    def __call__(self, view):
        return WAIT


called = CallsLikeAFunction()
lam = lambda view: chooser(view)  # noqa: E731


def _inner(view):
    return chooser(view)


@functools.wraps(_inner)
def wrapped(*args, **kwargs):
    return _inner(*args, **kwargs)


class Holder:
    @staticmethod
    def decide(view):
        return chooser(view)

    @classmethod
    def decide_cls(cls, view):
        return WAIT


def shifty(view):
    """Rebinds its own name on its first call: a later build finds no policy there."""
    global shifty
    shifty = 42
    return WAIT
'''


@pytest.fixture(scope="module")
def hv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The hostile module, importable as ``hostile_view_policies`` (here and in a sandbox)."""
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "hostile_view_policies.py").write_text(HOSTILE, encoding="utf-8")
    sys.path.insert(0, str(folder))
    import hostile_view_policies

    yield hostile_view_policies
    sys.path.remove(str(folder))
    sys.modules.pop("hostile_view_policies", None)
    close_all()


def _episode(lineup: list[str], *, trust: bool, timeout: float | None = None,
             seed: int = 11) -> tuple[dict, dict]:
    """One episode of ``lineup`` (six names) as a league plays it: its row and replay."""
    spec = EpisodeSpec(0, 0, 0, seed, tuple(lineup))
    row, text = play_episode_spec(spec, Settings(policies=tuple(lineup), turns=TURNS,
                                                 trust=trust, decision_timeout=timeout))
    return row, json.loads(text)


def _by_seat(row: dict, name: str) -> list[tuple[dict, int]]:
    return [(row["faults"][s], row["fallbacks"][s]) for s, n in enumerate(row["lineup"])
            if n == name]


def _acts(payload: dict, seat: int | None = None) -> list[dict]:
    return [e for e in payload["events"]
            if e["kind"] == "act" and (seat is None or e["seat"] == seat)]


# --- what can play, and what is one line at build ------------------------------------------

@pytest.mark.parametrize("name", ["lam", "with_rest", "wrapped", "Holder.decide"])
def test_functions_of_any_plain_shape_play(hv: Any, name: str) -> None:
    """A lambda, a function with ``*rest`` after its view, one under ``functools.wraps`` and a
    staticmethod reached as ``module:Class.method`` are policy functions and play."""
    policy = make_policy(f"{H}{name}")
    assert isinstance(policy, FunctionPolicy)
    game = Game(GameConfig(seed=2, turns=TURNS))
    assert policy.act(game, 4) == hv.chooser(turn_view(game, 4))


@pytest.mark.parametrize("name, words", [
    ("keyword_only", "requires keyword-only arguments (style); a policy function is called "
                     "with the seat's view alone"),
    ("awaits", "is an async function (async def): its call returns no sentence"),
    ("async_yields", "is an async function (async def): its call returns no sentence"),
    ("yields", "is a generator function: it returns a generator, not a sentence"),
    ("partial", "a policy function is a plain function (def or lambda), not partial"),
    ("called", "a policy function is a plain function (def or lambda), not CallsLikeAFunction"),
    ("Holder.decide_cls", "a policy function is a plain function (def or lambda), not method"),
    ("star", "built str, which is not a policy"),      # requires nothing: a factory
    ("defaults", "built str, which is not a policy"),
])
def test_a_shape_that_no_view_can_call_is_one_value_error_at_build(hv: Any, name: str,
                                                                   words: str) -> None:
    """Not a fault every turn of every episode: refused once, naming what is wrong."""
    with pytest.raises(ValueError) as refused:
        make_policy(f"{H}{name}")
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_the_rule_reads_positional_arguments_only(hv: Any) -> None:
    """The rule tells a function from a factory by its positional arguments alone; the
    registry refuses the ones that cannot play (above), so none is called as a factory."""
    assert all(is_policy_function(getattr(hv, n)) for n in ("awaits", "yields", "keyword_only"))
    assert not is_policy_function(hv.partial) and not is_policy_function(hv.called)


def test_a_spec_that_cannot_play_is_exit_2_on_the_command_line(hv: Any, tmp_path: Path,
                                                               capsys) -> None:
    assert main(["evaluate", f"{H}awaits", "--seeds", "0..1", "--turns", str(TURNS)]) == 2
    assert "is an async function" in one_error_line(capsys.readouterr().err)
    out = tmp_path / "league"
    assert main(league_args(out, 1, "--turns", str(TURNS), policies=f"factor,{H}yields",
                            workers=1)) == 2  # built in a sandboxed seat, refused the same
    assert "is a generator function" in one_error_line(capsys.readouterr().err)
    assert not out.exists()


# --- the view -------------------------------------------------------------------------------

def _containers(x: Any, found: dict[int, Any]) -> dict[int, Any]:
    if isinstance(x, (dict, list)):
        found[id(x)] = x  # kept alive, so that no id is reused meanwhile
        for v in x.values() if isinstance(x, dict) else x:
            _containers(v, found)
    return found


def _advanced(seed: int, turns: int) -> Game:
    game = Game(GameConfig(seed=seed, turns=14))
    policies = [make_policy(p) for p in ("random", "factor", "magpie", "random", "factor",
                                         "magpie")]
    for p in policies:
        reset = getattr(p, "reset", None)
        if callable(reset):
            reset(seed)
    for _ in range(turns):
        game.play_turn([p.act(game, s) for s, p in enumerate(policies)])
    return game


@settings(max_examples=25)
@given(seed=st.integers(0, 2 ** 31), turns=st.integers(0, 10), seat=st.integers(0, 5))
def test_a_view_shares_nothing_and_survives_the_protocol_unchanged(seed: int, turns: int,
                                                                   seat: int) -> None:
    """Two views of one seat share no dict or list with each other, and wrecking one changes
    neither the game nor the next view; a view reads the same after the seat protocol's
    encoding (no tuple, no int key, no float that was an int: compared as JSON text)."""
    game = _advanced(seed, turns)
    before = game.snapshot()
    first, second = turn_view(game, seat), turn_view(game, seat)
    assert not set(_containers(first, {})) & set(_containers(second, {}))
    expected = json.dumps(second)
    for x in _containers(first, {}).values():
        x.clear()
    assert game.snapshot() == before and json.dumps(turn_view(game, seat)) == expected
    sent = json.loads(encode_line(second))
    assert sent == second and json.dumps(sent) == expected


def test_a_function_that_wrecks_its_view_plays_as_one_that_only_reads_it(hv: Any) -> None:
    """In ``play_episode`` and as an environment's opponent, seat beside seat: nothing the
    function does to its dict reaches the game or another seat's view."""
    config = GameConfig(seed=7, turns=TURNS)
    wrecked, read = ([f"{H}{n}", "factor", f"{H}{n}", "magpie", f"{H}{n}", "factor"]
                     for n in ("wrecker", "chooser"))
    assert play_episode(config, wrecked).events == play_episode(config, read).events
    played = []
    for name in ("wrecker", "chooser"):
        env = gymnasium.make("sim:guild/Guild-v0", seat=0, turns=TURNS,
                             opponents=[f"{H}{name}"] * 5)
        obs, _ = env.reset(seed=4)
        done = False
        while not done:
            obs, _, done, _, _ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        played.append(env.unwrapped.game.events)
        env.close()
    assert played[0] == played[1]


# --- whatever a function returns: the same in-process and apart --------------------------------

def _played(game: Game, action: Any) -> tuple[Any, str] | str:
    """What the game plays for ``action`` in seat 0 (its intent and stored sentence)."""
    try:
        return game.intent_for(action, 0)
    except ValueError:
        return "refused"


def _apart(request: dict) -> dict:
    replies = io.BytesIO()
    host.serve(f"{H}answers", [encode_line({"type": "reset", "seed": 1, "seat": 0}),
                               encode_line(request)], replies)
    return json.loads(replies.getvalue().splitlines()[-1])


PIECES = [WAIT, "I buy", '"hi', '"', "«", "»", " ", "  ", "\n", "\t", "\r", "\u00a0",
          "\u3000", "\ud800", "\udfff", "é", "x", "rope", "to the docks"]


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=80),
       kind=st.sampled_from(["str", "LyingStr", "RaisingStr"]))
@example(pieces=[WAIT, " ", "a" * (10 << 20)], kind="str")
@example(pieces=[" " * 300, WAIT], kind="str")
@example(pieces=[WAIT, " " * 300, "x"], kind="LyingStr")
def test_a_sentence_plays_the_same_in_process_and_apart(hv: Any, pieces: list[str],
                                                         kind: str) -> None:
    """Any text (10 MB, lone surrogates, leading whitespace past 240 runes), bare or as a
    ``str`` subclass whose methods lie or raise: the game plays the same for it in-process as
    for a seat host's answer, and in-process it is handed over as a plain ``str``."""
    text = "".join(pieces)
    hv.ANSWER = text if kind == "str" else getattr(hv, kind)(text)
    game = Game(GameConfig(seed=3, turns=TURNS))
    got = make_policy(f"{H}answers").act(game, 0)
    assert type(got) is str
    if len(text) <= 240 and text.isascii():
        assert got == text
    apart = parse_answer(_apart(act_request(game, 0)), game, 0)
    assert _played(game, got) == _played(game, apart.action)


@pytest.mark.parametrize("name", ["forged", "lying", "raising_str"])
def test_a_str_that_is_more_than_its_text_plays_its_text(hv: Any, name: str) -> None:
    """A ``ParsedSentence`` with an intent the parser never gave, or a subclass whose methods
    lie or raise: the game parses its text (``wait``), as apart, and nothing raises."""
    game = Game(GameConfig(seed=3, turns=TURNS))
    played = _played(game, make_policy(f"{H}{name}").act(game, 0))
    assert played == _played(game, WAIT)
    assert played == _played(game, parse_answer(_apart_of(name, game), game, 0).action)


def _apart_of(name: str, game: Game) -> dict:
    replies = io.BytesIO()
    host.serve(f"{H}{name}", [encode_line({"type": "reset", "seed": 1, "seat": 0}),
                              encode_line(act_request(game, 0))], replies)
    return json.loads(replies.getvalue().splitlines()[-1])


def test_an_object_posing_as_a_str_is_a_fault_not_a_crash(hv: Any) -> None:
    """``isinstance`` believes its ``__class__``: a function's is a ``raised`` fault in-process
    and apart, a class's is ``garbage`` apart (not a seat process dying as it encodes it)."""
    game = Game(GameConfig(seed=3, turns=TURNS))
    with pytest.raises(TypeError, match="returned Posing, which poses as a str"):
        make_policy(f"{H}posing").act(game, 0)
    reply = _apart_of("posing", game)
    assert reply["error"].startswith("TypeError: returned Posing, which poses as a str")
    assert _apart_of("PosingClass", game) == {
        "garbage": "returned Posing, not a sentence or an Intent"}


# --- leagues: every failure counted, nothing stops the league -----------------------------------

# name -> (faults, fallbacks) of each of its seats in a 6-turn episode
IN_PROCESS = {
    f"{H}lying": ({}, 0), f"{H}raising_str": ({}, 0), f"{H}forged": ({}, 0),
    f"{H}huge": ({}, 0), f"{H}surrogate": ({}, 0),
    f"{H}posing": ({"raised": TURNS}, TURNS), f"{H}exits": ({"raised": TURNS}, TURNS),
    f"{H}closes": ({"raised": TURNS}, TURNS), f"{H}own_base": ({"raised": TURNS}, TURNS),
    f"{H}unprintable": ({"raised": TURNS}, TURNS),
    f"{H}ExitsClass": ({"raised": TURNS}, TURNS), f"{H}ClosesClass": ({"raised": TURNS}, TURNS),
    f"{H}UnprintableClass": ({"raised": TURNS}, TURNS),
}


@pytest.mark.parametrize("lineup", [
    [f"{H}lying", f"{H}raising_str", f"{H}forged", f"{H}huge", f"{H}surrogate", "factor"],
    [f"{H}posing", f"{H}exits", f"{H}closes", f"{H}own_base", f"{H}unprintable", "factor"],
    [f"{H}ExitsClass", f"{H}ClosesClass", f"{H}UnprintableClass", f"{H}exits", f"{H}closes",
     f"{H}unprintable"],
], ids=["answers", "function-raises", "class-and-function-raise"])
def test_in_process_every_hostile_seat_is_counted_and_the_episode_ends(hv: Any,
                                                                        lineup: list[str]) -> None:
    """``SystemExit``, ``GeneratorExit``, a ``BaseException`` of the policy's own, an
    exception whose message raises, an object posing as a str: a ``raised`` fault each
    decision, classes and functions alike; the episode is played to its end."""
    row, payload = _episode(lineup, trust=True)
    assert row["turns"] == TURNS
    for seat, name in enumerate(lineup):
        if name in IN_PROCESS:
            assert (row["faults"][seat], row["fallbacks"][seat]) == IN_PROCESS[name], name
    if f"{H}unprintable" in lineup:
        note = row["faultNotes"][lineup.index(f"{H}unprintable")]
        assert "raised Unprintable: (its message cannot be shown)" in note
    if f"{H}forged" in lineup:  # it waited: its text, not the move it carried
        acts = _acts(payload, lineup.index(f"{H}forged"))
        assert {(e["intent"], e["sentence"]) for e in acts} == {("wait", WAIT)}


def test_guild_league_trust_finishes_whatever_exception_a_policy_raises(hv: Any,
                                                                         tmp_path: Path) -> None:
    """``GeneratorExit`` and a policy's own ``BaseException`` are faults of their seats, as
    ``SystemExit`` is, not a traceback that ends the league."""
    out = tmp_path / "trusted"
    policies = f"factor,{H}closes,{H}own_base,{H}ClosesClass"
    assert main(league_args(out, 6, "--turns", str(TURNS), "--trust", policies=policies,
                            workers=1)) == 0
    seen = set()
    for r in rows(out):
        for name in policies.split(",")[1:]:
            seats = _by_seat(r, name)
            assert seats == [({"raised": TURNS}, TURNS)] * len(seats)
            seen.update([name] if seats else [])
    assert seen == set(policies.split(",")[1:])


def test_a_policys_ctrl_c_stops_a_trusted_league_as_ctrl_c_does(hv: Any, tmp_path: Path,
                                                                 capsys) -> None:
    """In-process a ``KeyboardInterrupt`` cannot be told from the user's Ctrl-C: the league
    stops as interrupted (resumable), without a traceback."""
    out = tmp_path / "interrupted"
    assert main(league_args(out, 6, "--turns", str(TURNS), "--trust",
                            policies=f"factor,{H}interrupts", workers=1)) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "Traceback" not in err


APART = {
    f"{H}exits": ({"raised": TURNS}, TURNS), f"{H}closes": ({"raised": TURNS}, TURNS),
    f"{H}own_base": ({"raised": TURNS}, TURNS), f"{H}unprintable": ({"raised": TURNS}, TURNS),
    f"{H}posing": ({"raised": TURNS}, TURNS), f"{H}huge": ({}, 0), f"{H}surrogate": ({}, 0),
    f"{H}raising_str": ({}, 0), f"{H}lying": ({}, 0),
}


@pytest.mark.parametrize("lineup", [
    [f"{H}exits", f"{H}closes", f"{H}own_base", f"{H}unprintable", f"{H}posing", "factor"],
    [f"{H}huge", f"{H}surrogate", f"{H}raising_str", f"{H}lying", f"{H}chooser", "magpie"],
], ids=["raises", "answers"])
def test_apart_a_hostile_function_faults_and_plays_as_in_process(hv: Any,
                                                                  lineup: list[str]) -> None:
    """In a sandboxed seat the same functions are the same faults (``raised``, not a crashed
    process: ``sys.exit`` included), and those that play play the same acts as in-process."""
    try:
        row, payload = _episode(lineup, trust=False)
        trusted_row, trusted = _episode(lineup, trust=True)
    finally:
        close_all()
    assert payload["sandbox"] == ["bwrap" if n.startswith(H) else None for n in lineup]
    for seat, name in enumerate(lineup):
        if name in APART:
            assert (row["faults"][seat], row["fallbacks"][seat]) == APART[name], name
            assert (trusted_row["faults"][seat], trusted_row["fallbacks"][seat]) == APART[name]
    assert _acts(payload) == _acts(trusted)


@pytest.mark.parametrize("trust", [False, True], ids=["sandboxed", "trusted"])
def test_a_function_past_its_decision_timeout_is_played_by_the_fallback_and_counted(
        hv: Any, trust: bool) -> None:
    started = time.perf_counter()
    try:
        row, _ = _episode([f"{H}sleeper", "factor", "magpie", "factor", "magpie", "factor"],
                          trust=trust, timeout=0.2)
    finally:
        close_all()
    (faults, fallbacks), = _by_seat(row, f"{H}sleeper")
    assert set(faults) == {"timeout"} and fallbacks == TURNS
    assert "took over 0.2 s" in row["faultNotes"][0]
    assert time.perf_counter() - started < 30


def test_a_name_that_stops_naming_a_policy_is_never_credited(hv: Any,
                                                             monkeypatch) -> None:
    """``shifty`` rebinds its module's name when first called: the next episode in the same
    process cannot build it, and the fallback's play is counted as not its own."""
    monkeypatch.setattr(hv, "shifty", hv.shifty)  # put back afterwards
    lineup = [f"{H}shifty", "factor", "magpie", "factor", "magpie", "factor"]
    first, _ = _episode(lineup, trust=True)
    second, _ = _episode(lineup, trust=True)
    assert _by_seat(first, f"{H}shifty") == [({}, 0)]
    assert _by_seat(second, f"{H}shifty") == [({"raised": 1}, TURNS)]
    assert "could not be built" in second["faultNotes"][0]


def test_guild_evaluate_says_a_policy_exited(hv: Any, capsys) -> None:
    """A policy's sys.exit(0) once ended guild evaluate with status 0 and no figures."""
    try:
        code: Any = main(["evaluate", f"{H}exits", "--seeds", "0..1", "--turns", str(TURNS)])
    except SystemExit as e:  # what the command's process would end with
        code = ("exited", e.code)
    assert code == 2 and "SystemExit" in one_error_line(capsys.readouterr().err)


def test_an_exec_program_saying_a_lone_surrogate_cannot_stop_the_league(tmp_path: Path) -> None:
    """A lone surrogate said by a program (a JSON escape) once reached the next act request,
    which orjson could not encode, in the league's process: the game's door (``one_line``)
    now turns it into U+FFFD."""
    program = tmp_path / "sayer.py"
    program.write_text(textwrap.dedent('''\
        import json, sys
        for line in sys.stdin:
            kind = json.loads(line).get("type")
            if kind == "act":
                sys.stdout.write('{"action": "I wait and watch the road.", '
                                 '"say": "hi \\\\ud800"}\\n')
            else:
                sys.stdout.write('{"ok": true}\\n')
            sys.stdout.flush()
        '''), encoding="utf-8")
    try:
        code = main(league_args(tmp_path / "out", 1, "--turns", str(TURNS), workers=1,
                                policies=f"exec:{sys.executable} {program},factor"))
    finally:
        close_all()
    assert code == 0
    said = [e.get("say") for path in (tmp_path / "out" / "replays").glob("*.json")
            for e in json.loads(path.read_text(encoding="utf-8"))["events"]]
    assert "hi \ufffd" in said


# --- guild train --config --------------------------------------------------------------------

NUMERIC = {**{n: k for n, k in PPO_KNOBS.items()}, **{n: k for n, k in RUN_KNOBS.items()}}
OPTION = {o.name: o for o in OPTIONS}


def _toml(value: Any) -> str:
    """``value`` as a TOML literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") \
            if math.isinf(value) else repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def _from_file(folder: Path, name: str, key: str, value: Any) -> Any:
    """The value of option ``name`` that a file ``key = value`` sets, or its one-line
    error."""
    path = folder / "train.toml"
    path.write_text(f"{key} = {_toml(value)}\n", encoding="utf-8")
    try:
        return read_config(str(path))[0][name]
    except TrainingError as e:
        line = str(e)
        assert "\n" not in line and f"--config {str(path)!r}: {key} must be" in line, line
        return "refused"


def _from_flag(name: str, text: str) -> Any:
    try:
        return OPTION[name].parse(text)
    except ValueError as e:
        assert "\n" not in str(e)
        return "refused"


def _from_library(name: str, value: Any) -> str:
    try:
        if name in PPO_KNOBS:
            PPOConfig(**{name: value})
        else:
            TrainOptions(**{name: value})
    except ValueError as e:  # TrainingError is one
        assert "\n" not in str(e)
        return "refused"
    return "accepted"


def _edges(knob: Knob) -> list[Any]:
    """The bounds and their nearest neighbours outside and in."""
    out: list[Any] = []
    for bound in (knob.low, knob.high):
        if bound is None:
            continue
        if knob.kind is int:
            out += [int(bound) - 1, int(bound), int(bound) + 1]
        else:
            out += [math.nextafter(bound, -math.inf), float(bound),
                    math.nextafter(bound, math.inf)]
    return out


VALUES = st.one_of(
    st.booleans(), st.integers(-10 ** 400, 10 ** 400), st.integers(-100, 100),
    st.floats(), st.sampled_from([-0.0, 1e309, 1e308, -1e-320, 5e-324]),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(NUMERIC)), value=VALUES, data=st.data())
def test_every_numeric_option_is_read_alike_from_a_file_a_flag_and_code(
        tmp_path: Path, name: str, value: Any, data: st.DataObject) -> None:
    """Booleans (``lr = true`` is no number, though Python's ``True == 1``), NaN, infinities,
    -0.0, 1e309, whole numbers of 400 digits, and every bound with its neighbours: the file,
    the flag (the same text) and the library accept exactly the same values, as the same
    number (-0.0 as 0.0), and refuse the others in one line."""
    knob = NUMERIC[name]
    if data.draw(st.booleans()):
        value = data.draw(st.sampled_from(_edges(knob)))
    key = data.draw(st.sampled_from(OPTION[name].keys))
    from_file = _from_file(tmp_path, name, key, value)
    from_flag = _from_flag(name, _toml(value))
    assert (from_file == "refused") == (from_flag == "refused") == (
        _from_library(name, value) == "refused") == (not knob.accepts(value)), (from_file,
                                                                                 from_flag)
    if from_file != "refused":
        assert from_file == from_flag == value and type(from_file) is type(from_flag) is knob.kind
        assert knob.kind is int or math.copysign(1.0, from_file) == 1.0


WIDTHS = st.one_of(st.integers(-2, MAX_WIDTH + 2), st.sampled_from([1e9, 128.0, True]),
                   st.text("0123456789", max_size=3), st.lists(st.integers(1, 8), max_size=2))


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hidden=st.lists(WIDTHS, max_size=MAX_LAYERS + 3))
@example(hidden=[])
@example(hidden=[1e9])
@example(hidden=[1] * 10_000)
@example(hidden=[True])
def test_hidden_in_a_file_is_a_list_of_widths_or_one_line(tmp_path: Path,
                                                          hidden: list[Any]) -> None:
    accepted = 0 < len(hidden) <= MAX_LAYERS and all(
        type(w) is int and 0 < w <= MAX_WIDTH for w in hidden)
    path = tmp_path / "train.toml"
    path.write_text(f"hidden = {_toml(hidden)}\n", encoding="utf-8")
    try:
        got = read_config(str(path))[0]["hidden"]
    except TrainingError as e:
        assert not accepted and "\n" not in str(e) and "hidden must list 1 to 16 layer" in str(e)
        assert len(str(e)) < 300
    else:
        assert accepted and got == tuple(hidden)


@pytest.mark.parametrize("text, words", [
    ("lr = true\n", "lr must be a number in (0, 1]; got True"),
    ("epochs = false\n", "epochs must be a whole number from 1 to 100; got False"),
    ("minutes = 1" + "0" * 400 + "\n", "minutes must be a number > 0"),
    ("checkpoint-minutes = 1" + "0" * 400 + "\n", "checkpoint-minutes must be a number > 0"),
    ("lr = 1979-05-27\n", "lr must be a number in (0, 1]; got datetime.date(1979, 5, 27)"),
    ("seed = 1979-05-27T07:32:00Z\n", "seed must be a whole number"),
    ("minutes = 07:32:00\n", "minutes must be a number > 0; got datetime.time(7, 32)"),
    ("envs = 1979-05-27T07:32:00\n", "envs must be a whole number"),
    ("lr = {a = 1}\n", "lr must be a number in (0, 1]; got {'a': 1}"),
    ("lr.x = 1\n", "lr must be a number in (0, 1]; got {'x': 1}"),
    ("[[lr]]\nx = 1\n", "lr must be a number in (0, 1]; got [{'x': 1}]"),
    ("hidden = [[32], 16]\n", "hidden must list 1 to 16 layer widths"),
    ("device = [\"cpu\"]\n", "device must be one of auto, cpu, cuda"),
    ("plot = [true]\n", "plot must be true or false"),
    ("out = \"runs/a\\u0000b\"\n", "out must be a folder's path; got 'runs/a\\x00b'"),
    ("out = \"\"\n", "out must be a folder's path"),
    ("\"ｌｒ\" = 0.1\n", "unknown key 'ｌｒ'"),            # fullwidth letters
    ("\"lr\\u200b\" = 0.1\n", "unknown key 'lr\\u200b'"),  # a zero-width space, shown
    ("\"l\\u0433\" = 0.1\n", "unknown key 'lг'"),          # a Cyrillic letter
    ("quiet = true\n", "'quiet' is not a key: --quiet is a flag of this command only"),
    ("config = \"other.toml\"\n", "'config' is not a key: --config is a flag"),
])
def test_a_value_or_key_of_another_kind_is_one_line(text: str, words: str, tmp_path: Path,
                                                    capsys) -> None:
    config = tmp_path / "train.toml"
    config.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["train", "--out", str(out), "--config", str(config)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"train: error: --config {str(config)!r}") and words in line, line
    assert not out.exists()


def test_a_flag_takes_minus_zero_as_zero(tmp_path: Path) -> None:
    args = build_parser().parse_args(["--ent-coef", "-0.0", "--gamma", "-0.0"])
    from agents.learn.train_args import options_from_args

    ppo = options_from_args(args).ppo
    assert (math.copysign(1, ppo.ent_coef), math.copysign(1, ppo.gamma)) == (1, 1)


def test_out_in_a_file_is_checked_as_the_flag_is(tmp_path: Path, capsys) -> None:
    """``out = "/"`` is refused as ``--out /`` is, before anything is written; a NUL in a
    library's ``out`` is one ``TrainingError``, not Python's ``embedded null byte``."""
    needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")
    config = tmp_path / "train.toml"
    config.write_text('out = "/"\nsteps = 1\n', encoding="utf-8")
    assert main(["train", "--config", str(config), "--quiet"]) == 2
    assert "is the root of a filesystem" in one_error_line(capsys.readouterr().err)
    with pytest.raises(TrainingError, match="out must be a folder's path"):
        TrainOptions(out="runs/a\0b")
    assert TrainOptions(out=Path("runs")).out == Path("runs")  # a Path still works


def test_a_config_files_opponent_models_are_beside_the_file(tmp_path: Path,
                                                            monkeypatch) -> None:
    """``against = ["ppo:snap.pt"]`` in a config file names the model beside the file, as
    ``world`` does (it was read from the folder the command ran in, so a shipped recipe played
    another model, or none); a flag's path is still the current folder's."""
    folder = tmp_path / "configs"
    folder.mkdir()
    config = folder / "train.toml"
    config.write_text('against = ["factor", "ppo:snap.pt", "sb3:~/m.zip"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    values, _ = read_config("configs/train.toml")
    assert values["against"] == ("factor", f"ppo:{folder.resolve() / 'snap.pt'}",
                                 f"sb3:{Path('~/m.zip').expanduser().resolve()}")
    from agents.learn.train_args import options_from_args

    flagged = options_from_args(build_parser().parse_args(["--against", "ppo:snap.pt"]))
    assert flagged.against == (f"ppo:{tmp_path.resolve() / 'snap.pt'}",)


@pytest.mark.parametrize("target, words", [
    ("/dev/zero", "is not a regular file"), ("/dev/urandom", "is not a regular file"),
    ("/proc/self/mem", "cannot read it"),  # a regular file whose read fails
])
def test_a_config_that_is_a_device_or_unreadable_is_refused_at_once(
        target: str, words: str, tmp_path: Path, capsys) -> None:
    needs(os.path.exists(target), f"{target} (Linux)")
    link = tmp_path / "train.toml"
    link.symlink_to(target)
    started = time.perf_counter()
    for run in (main, training.main):  # guild train and the example script
        argv = ["train"] if run is main else []
        assert run([*argv, "--out", str(tmp_path / "out"), "--config", str(link)]) == 2
        assert words in one_error_line(capsys.readouterr().err)
    assert time.perf_counter() - started < 10 and not (tmp_path / "out").exists()


def test_config_given_twice_is_refused_not_half_read(tmp_path: Path, capsys) -> None:
    """Argparse keeps the last of a repeated option: the first file's keys would be dropped
    without a word."""
    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    first.write_text("lr = 0.5\n", encoding="utf-8")
    second.write_text("ent-coef = 0.1\n", encoding="utf-8")
    argv = ["--out", str(tmp_path / "out"), "--config", str(first), "--config", str(second)]
    assert main(["train", *argv]) == 2
    assert "argument --config: given twice" in one_error_line(capsys.readouterr().err)
    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)
    capsys.readouterr()


def test_a_bad_value_in_the_file_is_refused_even_where_a_flag_overrides_it(
        tmp_path: Path, capsys) -> None:
    """The file is checked whole: a broken key is named though ``--lr`` would replace it."""
    config = tmp_path / "train.toml"
    config.write_text("lr = 5\n", encoding="utf-8")
    assert main(["train", "--out", str(tmp_path / "out"), "--config", str(config),
                 "--lr", "0.001"]) == 2
    assert "lr must be a number in (0, 1]; got 5" in one_error_line(capsys.readouterr().err)
    config.write_text("lr = 0.5\n", encoding="utf-8")
    from agents.learn.train_args import options_from_args

    parsed = build_parser().parse_args(["--config", str(config), "--lr", "0.001"])
    assert options_from_args(parsed).ppo.lr == 0.001
