"""Bad input at the edges of the env faces (Gymnasium, PettingZoo, batched, SB3): each is refused
with a ValueError naming the field and the value, before anything changes (docs/api.md)."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
from conftest import needs_module

import sim
from sim.batched.engine import BatchedGuild
from sim.envs.gym import GuildEnv
from sim.envs.parallel import GuildParallelEnv
from sim.envs.vector import GuildSelfPlay, GuildVectorEnv, make_batched_policy
from sim.rules.world import MAX_TURNS, SEATS

RANDOM = ["random"] * (SEATS - 1)


def _vec(**kwargs) -> GuildVectorEnv:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gymnasium.make_vec("guild/Guild-v0", num_envs=3,
                                  vectorization_mode="vector_entry_point", **kwargs)


def _vec_scores(refuse) -> np.ndarray:
    """Scores of 14 steps of random-opponent games, after one refused step if ``refuse``."""
    v = _vec(opponents=RANDOM)
    v.reset(seed=0)
    if refuse is not None:
        with pytest.raises(ValueError):
            v.step(refuse)
    scores = []
    for _ in range(14):
        *_, info = v.step(np.zeros(3, np.int64))
        scores.append(info["score"].copy())
    return np.array(scores)


def test_vector_env_refuses_a_bad_learner_action_before_opponents_move() -> None:
    """A refused step leaves the random opponents' streams where they were."""
    clean = _vec_scores(None)
    for bad in (np.array([0, 0, 267]), np.array([0.0, 0.0, 0.0]), np.zeros(3, bool),
                np.zeros(2, np.int64)):
        assert np.array_equal(_vec_scores(bad), clean), bad


def test_vector_env_names_the_env_and_value_of_a_bad_action() -> None:
    v = _vec()
    v.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions\[2\] \(env 2\).* got -1$"):
        v.step(np.array([0, 0, -1]))
    with pytest.raises(ValueError, match=r"actions\[1\] \(env 1\).* got 267$"):
        v.step(np.array([0, 267, 0]))
    with pytest.raises(ValueError, match="int indices; got float64"):
        v.step(np.array([1.0, 0.0, 0.0]))


def test_turns_beyond_the_bound_are_refused_everywhere() -> None:
    with pytest.raises(ValueError, match=f"turns must be from 6 to {MAX_TURNS}; got 1001"):
        BatchedGuild(1, turns=MAX_TURNS + 1)
    with pytest.raises(ValueError, match="turns must be from 6 to"):
        GuildSelfPlay(1, turns=1500)
    with pytest.raises(ValueError, match="turns must be from 6 to"):
        _vec(turns=1500)
    assert BatchedGuild(1, turns=MAX_TURNS).turns == MAX_TURNS


@pytest.mark.parametrize("seat", [1.0, np.float32(3), np.float64(0.0), True])
def test_a_seat_that_is_no_int_seat_is_refused_at_construction(seat) -> None:
    with pytest.raises(ValueError, match="seat must be an int 0..5 or None"):
        GuildEnv(seat=seat)
    with pytest.raises(ValueError, match="seat must be an int 0..5 or None"):
        GuildVectorEnv(1, seat=seat)


def test_a_numpy_integer_seat_plays_as_an_int() -> None:
    env = GuildEnv(seat=np.int64(2))
    _, info = env.reset(seed=0)
    assert info["seat"] == 2 and type(info["seat"]) is int
    env.step(int(np.flatnonzero(env.action_masks())[0]))
    v = GuildVectorEnv(2, seat=np.uint8(4))
    _, info = v.reset(seed=0)
    assert (info["seat"] == 4).all()


@pytest.mark.parametrize("kwargs", [{}, {"text_mode": True}, {"opponents": RANDOM}])
def test_action_masks_before_reset_says_reset_first(kwargs: dict) -> None:
    with pytest.raises(RuntimeError, match="before reset"):
        GuildEnv(**kwargs).action_masks()


def test_vector_env_step_before_reset_says_reset_first() -> None:
    # Its learning seats and opponents' streams are drawn at reset: a step before it would
    # play towns no seed chose.
    env = GuildVectorEnv(2)
    with pytest.raises(RuntimeError, match="before reset"):
        env.step(np.zeros(2, np.int64))
    env.reset(seed=0)
    env.step(np.zeros(2, np.int64))


@pytest.mark.parametrize("kwargs", [{}, {"text_mode": True}])
def test_parallel_action_masks_before_reset_says_reset_first(kwargs: dict) -> None:
    with pytest.raises(RuntimeError, match="before reset"):
        GuildParallelEnv(**kwargs).action_masks("seat_0")


def test_sb3_vec_env_refuses_non_integer_actions() -> None:
    needs_module("stable_baselines3", "torch==2.13.0, then pip install -e '.[train]'")
    from agents.learn.sb3 import GuildVecEnv

    venv = GuildVecEnv(2, seed=0, turns=6)
    venv.reset()
    for bad in (np.array([2.7, 0.0]), np.array([True, False]), np.array([0.0, 0.0])):
        with pytest.raises(ValueError, match="int indices"):
            venv.step_async(bad)
    before = venv.env.engine.state.turns_played.copy()
    obs, reward, done, infos = venv.step(np.array([0, 0], np.int64))  # MaskablePPO's kind
    assert (venv.env.engine.state.turns_played == before + 1).all()
    assert obs.shape[0] == 2 and reward.dtype == np.float32


@pytest.mark.parametrize("spec", ["llm:local", {"name": "llm:local"}, "llm", "exec:x"])
def test_a_kind_without_a_batched_form_is_named_so(spec) -> None:
    with pytest.raises(ValueError, match="policies have no batched form") as err:
        make_batched_policy(spec)
    assert "has no" not in str(err.value)  # not read as a module named llm or exec
    assert getattr(make_batched_policy("factor"), "batched", False) is True


def test_parallel_env_refuses_an_action_of_no_live_agent() -> None:
    env = sim.parallel_env(seed=0)
    env.reset()
    actions = dict.fromkeys(env.agents, 0)
    with pytest.raises(ValueError, match="unknown agents \\['seat_9'\\]"):
        env.step({**actions, "seat_9": 0})
    assert env.game.state.turns_played == 0
    env.step(actions)
    assert env.game.state.turns_played == 1


@pytest.mark.parametrize("make", [lambda **k: GuildEnv(**k), sim.parallel_env])
def test_flatten_and_text_mode_are_refused_together(make) -> None:
    with pytest.raises(ValueError, match="flatten=True and text_mode=True"):
        make(flatten=True, text_mode=True)


def test_a_sentence_longer_than_the_text_space_is_refused_unplayed() -> None:
    """Refused with its length, and the random opponents have not drawn: the two envs go on
    alike."""
    refused, clean = (GuildEnv(text_mode=True, seat=0, opponents=RANDOM) for _ in range(2))
    refused.reset(seed=4)
    clean.reset(seed=4)
    most = refused.action_space.max_length
    long = "I wait." + " " * (most - 6)
    assert not refused.action_space.contains(long)
    with pytest.raises(ValueError, match=f"at most {most} .* of {len(long)}$"):
        refused.step(long)
    assert refused.game.state.turns_played == 0
    fits = long[:most]
    assert refused.action_space.contains(fits)
    for env in (refused, clean):
        env.step(fits)
        env.step("I wait.")
    assert refused.game.snapshot() == clean.game.snapshot()


def _state(e: BatchedGuild) -> list:
    return [a.copy() for a in e.state] + [e.seed_rng.bit_generator.state]


@pytest.mark.parametrize("rows, match", [
    ([-1], "from 0 to 3; got row -1"),
    ([4], "from 0 to 3; got row 4"),
    ([2, 0, 2], "distinct; got row 2"),
    ([0.7], "1-d array of ints; got float64"),
    ([[0]], "1-d array of ints"),
    (np.array([True]), "1-d array of ints; got bool"),
])
def test_batched_reset_refuses_bad_rows_before_anything_changes(rows, match) -> None:
    e = BatchedGuild(4, seed=0)
    e.reset(np.arange(4))
    e.step(np.zeros((4, SEATS), np.int64))
    before = _state(e)
    with pytest.raises(ValueError, match=match):
        e.reset(rows=rows)  # seeds drawn from the stream: the stream must not move either
    after = _state(e)
    assert all(np.array_equal(a, b) for a, b in zip(before[:-1], after[:-1]))
    assert before[-1] == after[-1]


def test_batched_reset_takes_good_rows_in_any_order() -> None:
    e = BatchedGuild(4, seed=0)
    e.reset(np.arange(4))
    e.reset(np.array([50, 70]), rows=np.array([3, 1], np.uint8))
    assert e.seed.tolist() == [0, 70, 2, 50]
    e.reset(np.array([], np.int64), rows=[])
    assert e.seed.tolist() == [0, 70, 2, 50]


@pytest.mark.parametrize("said", ["hello \U0001f600 world", "ring \x07 the bell",
                                  "caf\u00e9 \u2603"])
def test_text_mode_holds_any_speech_in_its_spaces(said: str) -> None:
    # What a seat says comes back in every listener's view as it was said (the rules flatten
    # line breaks only): the observation stays in its space, the sentence was in the action's.
    env = GuildEnv(text_mode=True, seat=0, opponents=RANDOM)
    env.reset(seed=1)
    sentence = f'I say "{said}"'
    assert env.action_space.contains(sentence)
    obs, *_ = env.step(sentence)
    assert said.split()[1] in obs["observation_text"]
    assert env.observation_space.contains(obs)
    assert not env.action_space.contains("I say \ud800")  # a lone surrogate is no text
    penv = GuildParallelEnv(text_mode=True)
    penv.reset(seed=1)
    obs, *_ = penv.step({a: sentence for a in penv.agents})
    assert all(penv.observation_space(a).contains(o) for a, o in obs.items())


def test_a_policy_of_another_town_is_refused_when_the_env_is_made() -> None:
    """``gymnasium.make`` with a ``champion`` opponent in a world file's town is refused by the
    constructor, as ``make_vec`` is, with the same message: Gymnasium users make the env first
    and reset it later."""
    from sim.rules.worldfile import world_from_dict

    poorer, _ = world_from_dict({"start_coin": 30})
    lineup = ["factor", "champion", "magpie", "factor", "magpie"]
    messages = []
    for make in (lambda: gymnasium.make("guild/Guild-v0", world=poorer, opponents=lineup),
                 lambda: GuildEnv(world=poorer, opponents=lineup),
                 lambda: gymnasium.make_vec("guild/Guild-v0", num_envs=2, world=poorer,
                                            opponents=lineup),
                 lambda: gymnasium.make_vec("guild/Guild-v0", num_envs=2, world=poorer,
                                            opponents=lineup, vectorization_mode="sync")):
        with pytest.raises(ValueError) as e:
            make()
        messages.append(str(e.value))
    assert len(set(messages)) == 1
    assert messages[0].startswith("champion: it was trained in the standard town and plays "
                                  "only there")
    # named opponents are built with the env (their twins too); the same lineup plays the
    # standard town
    env = GuildEnv(opponents=lineup, turns=6)
    assert [type(p).__name__ for p in env.opponents] == ["Factor", "Champion", "Magpie",
                                                         "Factor", "Magpie"]
    twins = GuildEnv(opponents=["factor", "magpie"] * 2 + ["factor"], turns=6)
    assert twins._twins is not None and twins.opponents is not None
    for e in (env, twins):
        _, info = e.reset(seed=2)
        done = False
        while not done:
            _, _, done, _, info = e.step(int(np.flatnonzero(info["action_mask"])[0]))
        assert len(info["results"]["scores"]) == SEATS
    # the default lineup (factor and magpie, any town) is built at the first reset
    env = GuildEnv(world=poorer, turns=6)
    assert env.opponents is None
    env.reset(seed=0)
    assert [type(p).__name__ for p in env.opponents] == ["Factor", "Magpie"] * 2 + ["Factor"]


@pytest.mark.parametrize("opponents", ["factor", b"factor", {"name": "factor"}, 5])
def test_opponents_that_are_no_sequence_are_refused_naming_what_they_are(opponents) -> None:
    """A single spec is not read as its characters ("got 6" for "factor")."""
    with pytest.raises(ValueError, match=r"opponents must be a sequence of 5 policies \(for "
                                         r"example \[.*\] \* 5\); got the (str|bytes|dict|int)"):
        GuildEnv(opponents=opponents)
    with pytest.raises(ValueError, match="opponents must be a sequence of 5 policies"):
        GuildVectorEnv(1, opponents=opponents)


def test_the_aec_face_refuses_a_bad_action_when_it_is_given_and_goes_on() -> None:
    """parallel_to_aec only stores an action: 999 from seat_0 surfaced at seat_5's valid step,
    naming no agent, and every later step raised it again."""
    aec = sim.env(seed=0)
    aec.reset(seed=0)
    with pytest.raises(ValueError, match="^seat_0: action index must be between 0 and 266"):
        aec.step(999)
    assert aec.agent_selection == "seat_0"
    for _ in range(6):
        aec.step(0)  # the turn resolves, and the next begins
    assert aec.agent_selection == "seat_0"
    text = sim.env(seed=0, text_mode=True)
    text.reset(seed=0)
    with pytest.raises(ValueError, match="^seat_0: text mode takes a sentence"):
        text.step(3)
    par = sim.parallel_env(seed=0)
    par.reset(seed=0)
    with pytest.raises(ValueError, match="^seat_3: action index"):
        par.step({a: 999 if a == "seat_3" else 0 for a in par.agents})


@pytest.mark.parametrize("make", [
    lambda: gymnasium.make("guild/Guild-v0", flatten="no"),
    lambda: gymnasium.make("guild/Guild-v0", text_mode="false"),
    lambda: sim.parallel_env(flatten="no"),
    lambda: gymnasium.make_vec("guild/Guild-v0", num_envs=2,
                               vectorization_mode="vector_entry_point", thievery="x"),
    lambda: gymnasium.make_vec("guild/Guild-v0", num_envs=2,
                               vectorization_mode="vector_entry_point", speech=None),
    lambda: BatchedGuild(1, thievery="no"),
])
def test_a_flag_is_true_or_false_not_a_truthy_value(make) -> None:
    """'no' is truthy: flatten='no' flattened, thievery='no' allowed robbery."""
    with pytest.raises(ValueError, match="must be True or False"):
        make()


def test_the_batched_engines_rows_are_checked_where_games_go_in_and_out() -> None:
    """A negative row wrapped to the last one (load_games overwrote row 2 for row -1; export
    gave row 2's state), and what was not a Game raised AttributeError."""
    engine = BatchedGuild(3, seed=0)
    before = engine.export(2)
    game = sim.Game(sim.GameConfig(seed=42))
    for rows in ([-1], [3], [0.7], [0, 0]):
        with pytest.raises(ValueError, match="rows"):
            engine.load_games([game] * len(rows), rows=rows)
    with pytest.raises(ValueError, match=r"games\[0\] must be a sim.Game"):
        engine.load_games(["x"])
    for row in (-1, 3, 1.0, True):
        with pytest.raises(ValueError, match="row must be an int from 0 to 2"):
            engine.export(row)
        with pytest.raises(ValueError, match="row must be an int from 0 to 2"):
            engine.offers(row)
    assert engine.export(2) == before


def test_reset_seeds_are_ints_from_zero_named_when_not() -> None:
    """1.5 raised numpy's TypeError (or was cut to 1 in a vector env's list), -1 numpy's
    ValueError naming no field."""
    for call in (lambda: sim.parallel_env(seed=1.5), lambda: sim.parallel_env().reset(seed=-1)):
        with pytest.raises(ValueError, match="seed must be an int >= 0 or None"):
            call()
    vec = gymnasium.make_vec("guild/Guild-v0", num_envs=3,
                             vectorization_mode="vector_entry_point")
    with pytest.raises(ValueError, match="seed must be an int or 3 ints"):
        vec.reset(seed=1.5)
    with pytest.raises(ValueError, match=r"seed\[0\] must be an int >= 0"):
        vec.reset(seed=[1.5, 2.5, 3.5])
    first = vec.reset(seed=np.arange(3))[0]
    again = vec.reset(seed=[0, 1, 2])[0]
    assert all((first[k] == again[k]).all() for k in first)


def test_a_world_that_is_no_town_is_refused_not_taken_for_the_standard_one() -> None:
    """``world or STANDARD_TOWN`` took world=0 (falsy) for the standard town."""
    for make in (lambda: sim.GameConfig.from_dict({}, world=0),
                 lambda: gymnasium.make("guild/Guild-v0", world=0),
                 lambda: sim.parallel_env(world=0)):
        with pytest.raises(ValueError, match="world must be a World; got int"):
            make()
