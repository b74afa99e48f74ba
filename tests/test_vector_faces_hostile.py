"""The batched faces against what a hostile caller gives them: a partial reset
(``options["reset_mask"]``), ``max_episode_steps``, champion opponents over several episodes,
baseline parameters outside the rules, a batched opponent whose answer is malformed, and bad
``GuildSelfPlay`` arguments. Each either plays the sync face's games exactly or is refused
with a ValueError naming what is wrong."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import pytest
from test_vector_conventions import MODES, _by_key, _faces, assert_same

import sim  # noqa: F401  (registers guild/Guild-v0)
from agents.baselines.batched import sample_legal
from sim.envs.vector import GuildSelfPlay, GuildVectorEnv


def _same_step(fast: Any, sync: Any, a: np.ndarray, label: str) -> Any:
    s1, s2 = fast.step(a), sync.step(a)
    assert_same(_by_key(s1[0]), _by_key(s2[0]), f"{label} obs")
    for name, x, y in zip(("reward", "terminated", "truncated", "info"), s1[1:], s2[1:]):
        assert_same(x, y, f"{label} {name}")
    return s1


def _same_reset(fast: Any, sync: Any, label: str, **kw: Any) -> Any:
    options = kw.pop("options", None)
    # SyncVectorEnv pops reset_mask out of the options it is given: each face gets its own
    r1 = fast.reset(**kw, options=None if options is None else dict(options))
    r2 = sync.reset(**kw, options=None if options is None else dict(options))
    assert_same(_by_key(r1[0]), _by_key(r2[0]), f"{label} obs")
    assert_same(r1[1], r2[1], f"{label} info")
    return r1


@pytest.mark.parametrize("mode", list(MODES))
def test_a_reset_mask_restarts_only_its_envs_as_sync_does(mode: str) -> None:
    """Partial resets, seeded and not, between steps and while an env waits for its autoreset:
    every observation, reward, end and info equals the sync face's."""
    n, turns = 3, 6
    fast, sync = _faces(mode, n, seat=None, turns=turns, flatten=True)
    rng = np.random.default_rng(3)
    _, info = _same_reset(fast, sync, "reset", seed=5)
    plan = {2: ([True, False, False], [100, 101, 102]),   # mid-episode, seeded
            5: ([False, True, True], None),                # env 0 is one step from its end
            6: ([False, False, True], 7),                  # env 0 may wait for its autoreset
            11: ([True, True, False], None)}
    for t in range(4 * turns):
        if t in plan:
            mask, seed = plan[t]
            _, info = _same_reset(fast, sync, f"reset at {t}", seed=seed,
                                  options={"reset_mask": np.array(mask), "ignored": 1})
        a = sample_legal(rng, info["action_mask"].astype(bool))
        _, _, _, _, info = _same_step(fast, sync, a, f"step {t}")
    # the envs did drift apart: their games no longer start on the same step
    assert len(set(fast.unwrapped.engine.state.turn.tolist())) > 1


@pytest.mark.parametrize("mask, why", [
    ([True, False], "numpy bool array of shape"),
    (np.array([1, 0]), "numpy bool array of shape"),
    (np.array([True]), "numpy bool array of shape"),
    (np.array([[True, False]]), "numpy bool array of shape"),
    (np.array([False, False]), "at least one True"),
])
def test_a_bad_reset_mask_is_refused_before_any_env_restarts(mask: Any, why: str) -> None:
    env = GuildVectorEnv(2, seat=0, turns=6)
    env.reset(seed=1)
    env.step(np.zeros(2, np.int64))
    before = env.game_seeds
    with pytest.raises(ValueError, match=f"reset_mask.*{why}"):
        env.reset(seed=9, options={"reset_mask": mask})
    assert np.array_equal(env.game_seeds, before)
    assert env.engine.state.turn.tolist() == [1, 1]


def test_a_reset_mask_needs_a_full_reset_first() -> None:
    env = GuildVectorEnv(2, seat=0, turns=6)
    with pytest.raises(ValueError, match="reset_mask.*reset\\(\\) without it first"):
        env.reset(options={"reset_mask": np.array([True, False])})


def test_other_option_keys_are_ignored() -> None:
    """Beside a reset_mask, or alone (or options that are no dict, as PettingZoo's checker
    passes): they change nothing; without a mask every env restarts."""
    env = GuildVectorEnv(2, seat=0, turns=6)
    first = env.reset(seed=4)[0]
    env.step(np.zeros(2, np.int64))
    env.reset(seed=4, options={"other": 1, "reset_mask": np.array([False, True])})
    assert env.engine.state.turn.tolist() == [1, 0]
    for options in ({"other": 1}, 1, "x"):
        env.step(np.zeros(2, np.int64))
        again = env.reset(seed=4, options=options)[0]
        assert_same(_by_key(again), _by_key(first), f"obs after options={options!r}")
        assert env.engine.state.turn.tolist() == [0, 0]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("limit", [3, 6])
def test_max_episode_steps_truncates_as_sync_does(mode: str, limit: int) -> None:
    """Cut short (3 of 6 turns) or on the game's last step (6: terminated and truncated
    together, as TimeLimit says), over several episodes, with a partial reset in between."""
    n, turns = 2, 6
    fast, sync = _faces(mode, n, seat=1, turns=turns, max_episode_steps=limit)
    rng = np.random.default_rng(8)
    _, info = _same_reset(fast, sync, "reset", seed=2)
    cut = 0
    for t in range(4 * turns):
        if t == 4:
            _, info = _same_reset(fast, sync, "partial reset", seed=None,
                                  options={"reset_mask": np.array([False, True])})
        a = sample_legal(rng, info["action_mask"].astype(bool))
        _, _, _, truncated, info = _same_step(fast, sync, a, f"step {t}")
        cut += int(truncated.sum())
    assert cut >= 4


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3"])
def test_a_bad_max_episode_steps_is_named(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_episode_steps must be a positive int"):
        GuildVectorEnv(1, max_episode_steps=bad)


@pytest.mark.parametrize("mode", list(MODES))
def test_champion_opponents_play_the_sync_faces_games_episode_after_episode(mode: str) -> None:
    """Autoreset and an unseeded reset draw each episode's seeds from the env's stream: the
    champion's scalar form must draw its opponent seed there as the batched face does."""
    turns = 6
    opponents = ["champion", "factor", "champion", "magpie", "champion"]
    fast, sync = _faces(mode, 2, seat=None, turns=turns, opponents=opponents, flatten=True)
    rng = np.random.default_rng(1)
    _, info = _same_reset(fast, sync, "reset", seed=3)
    for t in range(3 * turns + 1):
        a = sample_legal(rng, info["action_mask"].astype(bool))
        _, _, _, _, info = _same_step(fast, sync, a, f"step {t}")
    _, info = _same_reset(fast, sync, "unseeded reset")
    for t in range(turns):
        a = sample_legal(rng, info["action_mask"].astype(bool))
        _, _, _, _, info = _same_step(fast, sync, a, f"after reset, step {t}")


@pytest.mark.parametrize("spec, message", [
    ({"name": "factor", "sell_margin": "x"}, "sell_margin must be an int"),
    ({"name": "factor", "sell_margin": None}, "sell_margin must be an int"),
    ({"name": "factor", "pickup_value": 1.5}, "pickup_value must be an int"),
    ({"name": "magpie", "hawk_period": -1}, "hawk_period must be >= 0"),
    ({"name": "magpie", "hawk_period": 10 ** 30}, "hawk_period must fit in 64 bits"),
    ({"name": "magpie", "buy_margin": -(2 ** 63) - 1}, "buy_margin must fit in 64 bits"),
])
def test_baseline_parameters_are_checked_alike_by_both_faces(spec: dict, message: str) -> None:
    for face in ("vector_entry_point", "sync"):
        with pytest.raises(ValueError, match=message):
            env = gymnasium.make_vec("guild/Guild-v0", num_envs=1, vectorization_mode=face,
                                     opponents=[spec] + ["factor"] * 4, seat=0, turns=6)
            env.reset(seed=0)  # the sync face builds its opponents here


def test_extreme_baseline_parameters_play_as_the_scalar_baselines_do() -> None:
    """At the ends of int64, ``value + margin`` would wrap in a kernel: a magpie that buys
    everything and sells everything, hawking on turn 0 only, plays the scalar one's games."""
    huge = {"name": "magpie", "hawk_period": 2 ** 63 - 1, "buy_margin": 2 ** 63 - 1,
            "sell_margin": -(2 ** 63)}
    factor = {"name": "factor", "sell_margin": -(2 ** 63), "pickup_value": -(2 ** 63)}
    fast, sync = _faces("next_step", 4, seat=None, turns=10, flatten=True,
                        opponents=[huge, factor, huge, factor, huge])
    rng = np.random.default_rng(5)
    _, info = _same_reset(fast, sync, "reset", seed=11)
    for t in range(20):
        a = sample_legal(rng, info["action_mask"].astype(bool))
        _, _, _, _, info = _same_step(fast, sync, a, f"step {t}")


class _Answers:
    """A batched opponent answering ``make(n)`` for ``n`` rows."""

    batched = True

    def __init__(self, make: Any) -> None:
        self.make = make

    def act(self, engine: Any, rows: np.ndarray, seats: np.ndarray) -> Any:
        return self.make(rows.size)


@pytest.mark.parametrize("make, message", [
    (lambda n: np.zeros(1, np.int64), "must return 2 int table indices.*int64 \\(1,\\)"),
    (lambda n: np.full(n, 0.5), "must return 2 int table indices.*float64"),
    (lambda n: 0, "must return 2 int table indices.*\\(\\)"),
    (lambda n: np.full(n, 10 ** 6), "returned 1000000 for env 0 \\(seat 2\\)"),
    (lambda n: np.array([0, -1]), "returned -1 for env 1 \\(seat 2\\)"),
])
def test_a_batched_opponents_bad_answer_names_it(make: Any, message: str) -> None:
    env = GuildVectorEnv(2, seat=0, turns=6, opponents=["factor", _Answers(make)] + ["factor"] * 3)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=f"^opponent 1 \\(_Answers\\): .*{message}"):
        env.step(np.zeros(2, np.int64))
    assert env.engine.state.turn.tolist() == [0, 0]  # no turn was played


def test_a_spec_opponent_is_named_by_its_spec() -> None:
    env = GuildVectorEnv(1, seat=0, turns=6, opponents=["factor"] * 5)
    env.opponents[4] = _Answers(lambda n: np.full(n, 0.5))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="^opponent 4 \\('factor'\\): act\\(\\) must return"):
        env.step(np.zeros(1, np.int64))


@pytest.mark.parametrize("kw, message", [
    ({"num_envs": 0}, "num_envs must be a positive int; got 0"),
    ({"num_envs": 2.0}, "num_envs must be a positive int"),
    ({"num_envs": 2, "seed": -1}, "seed must be an int >= 0 or None; got -1"),
    ({"num_envs": 2, "seed": "a"}, "seed must be an int >= 0 or None; got 'a'"),
    ({"num_envs": 2, "seed": 1.5}, "seed must be an int >= 0 or None"),
])
def test_self_play_names_a_bad_argument(kw: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GuildSelfPlay(**kw)


def test_self_play_reset_names_a_bad_seed() -> None:
    env = GuildSelfPlay(1, seed=0)
    with pytest.raises(ValueError, match="seed must be an int >= 0 or None; got -3"):
        env.reset(seed=-3)
