"""The batched vector env's ``info`` keeps Gymnasium's conventions and tells a seat nothing hidden.

``make_vec(..., vectorization_mode="vector_entry_point")`` and ``"sync"`` are interchangeable
faces of ``guild/Guild-v0``, so their ``info`` must be too: the same keys in the same order,
``_``-masks, container types, dtypes and values, compared on the same seeds in both autoreset
modes.  And a seat's ``info`` holds only the documented keys: never the game seed, with which
``sim.Game(sim.GameConfig(seed=...))`` rebuilds every other seat's commissions and room.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sim  # noqa: F401  (registers guild/Guild-v0)
from agents.baselines.batched import sample_legal
from sim import Game, GameConfig
from sim.codec.action_table import to_intent
from sim.codec.encode import encode_flat
from sim.envs.vector import END_KEYS, FINAL_KEYS, INFO_KEYS, GuildSelfPlay, GuildVectorEnv
from sim.rules.scoring import RESULT_KEYS
from sim.rules.world import SEATS

MODES = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP}


def _masked(keys: tuple[str, ...]) -> set[str]:
    return {k for key in keys for k in (key, f"_{key}")}


def assert_same(a: Any, b: Any, path: str = "info") -> None:
    """``a`` and ``b`` equal in structure and value: dict keys in order, container and element
    types, array dtypes and shapes, object arrays element by element."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, np.ndarray):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), \
            f"{path}: {a.dtype} {a.shape} != {b.dtype} {b.shape}"
        if a.dtype == object:
            for i, (x, y) in enumerate(zip(a, b)):
                assert_same(x, y, f"{path}[{i}]")
        else:
            assert np.array_equal(a, b), f"{path}: {a!r:.200} != {b!r:.200}"
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: {len(a)} != {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _by_key(obs: Any) -> Any:
    """A batched observation with its keys sorted: sync concatenates into the ``Dict`` space's
    (sorted) order, the batched face keeps the layout's; a dict's order is not its value."""
    return {k: obs[k] for k in sorted(obs)} if isinstance(obs, dict) else obs


def _faces(mode: str, n: int, **kw: Any) -> tuple[Any, Any]:
    fast = gymnasium.make_vec("guild/Guild-v0", num_envs=n,
                              vectorization_mode="vector_entry_point", autoreset_mode=mode, **kw)
    sync = gymnasium.make_vec("guild/Guild-v0", num_envs=n, vectorization_mode="sync",
                              vector_kwargs={"autoreset_mode": MODES[mode]}, **kw)
    return fast, sync


class _Waiter:
    """A batched opponent that always waits (table index 0), as the scalar replay does."""

    batched = True

    def act(self, engine: Any, rows: np.ndarray, seats: np.ndarray) -> np.ndarray:
        return np.zeros(rows.size, np.int64)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("flatten", [False, True])
@pytest.mark.parametrize("seat", [4, None])
def test_info_is_the_sync_faces_info(mode: str, flatten: bool, seat: int | None) -> None:
    """Reset and every step, over three episodes: the batched face's obs, rewards, ends and
    info equal the sync face's, key by key, type by type and value by value."""
    n, turns = 3, 6
    fast, sync = _faces(mode, n, seat=seat, turns=turns, flatten=flatten)
    rng = np.random.default_rng(11)
    o1, i1 = fast.reset(seed=7)
    o2, i2 = sync.reset(seed=7)
    assert_same(_by_key(o1), _by_key(o2), "reset obs")
    assert_same(i1, i2, "reset info")
    ends = 0
    for t in range(3 * turns + 2):
        a = sample_legal(rng, i1["action_mask"].astype(bool))
        s1, s2 = fast.step(a), sync.step(a)
        assert_same(_by_key(s1[0]), _by_key(s2[0]), f"step {t} obs")
        for name, x, y in zip(("reward", "terminated", "truncated", "info"), s1[1:], s2[1:]):
            assert_same(x, y, f"step {t} {name}")
        o1, _, done, _, i1 = s1
        if done.any():
            ends += 1
            assert ("final_info" in i1) == (mode == "same_step")
            assert ("results" in i1) == (mode == "next_step")
    assert ends == 3
    fast.close()
    sync.close()


@pytest.mark.parametrize("mode", list(MODES))
def test_results_equal_the_sync_faces_when_seats_deliver_and_rob(mode: str) -> None:
    """Full-length games with the baselines delivering and robbing: every ``results`` list
    (scores, wealth, commission points, thefts...) equals the scalar games' own."""
    n, turns = 32, 14
    fast, sync = _faces(mode, n, seat=None, turns=turns)
    rng = np.random.default_rng(4)
    _, i1 = fast.reset(seed=40)
    sync.reset(seed=40)
    seen = {"questPoints": 0, "delivered": 0, "robberies": 0}
    for t in range(2 * turns + 1):
        a = sample_legal(rng, i1["action_mask"].astype(bool))
        s1, s2 = fast.step(a), sync.step(a)
        assert_same(s1[-1], s2[-1], f"step {t} info")
        i1 = s1[-1]
        results = i1.get("final_info", i1).get("results", {})
        for key in seen:
            seen[key] += sum(sum(row) for row in results.get(key, []) if row is not None)
    assert all(seen.values()), seen  # the comparison met non-zero values of each
    fast.close()
    sync.close()


def test_final_obs_is_indexed_by_env_as_sync_gives_it() -> None:
    """``info["final_obs"][i]`` is env ``i``'s last observation, a dict like a single env's."""
    n, turns = 2, 6
    env = GuildVectorEnv(n, seat=1, opponents=[_Waiter()] * 5, turns=turns,
                         autoreset_mode="same_step")
    env.reset(seed=3)
    games = [Game(GameConfig(seed=int(s), turns=turns)) for s in env.game_seeds]
    for _ in range(turns):
        *_, done, _, info = env.step(np.zeros(n, np.int64))  # everyone waits: index 0
    assert done.all() and info["_final_obs"].all() and info["final_obs"].dtype == object
    for i, g in enumerate(games):
        for _ in range(turns):
            g.play_turn([to_intent(0, g.world, s, g.state.room[s]) for s in range(SEATS)])
        last = info["final_obs"][i]
        assert last in env.single_observation_space
        flat = np.concatenate([last[k].astype(np.float32) for k in last])
        np.testing.assert_array_equal(flat, encode_flat(g.state, 1))


def _leaves(x: Any) -> list:
    """Every scalar in a nested info (dicts, lists, arrays of any dtype)."""
    if isinstance(x, dict):
        return [v for item in x.values() for v in _leaves(item)]
    if isinstance(x, np.ndarray) and x.dtype == object or isinstance(x, (list, tuple)):
        return [v for item in x for v in _leaves(item)]
    if isinstance(x, np.ndarray):
        return x.ravel().tolist()
    return [x]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 31 - 1), mode=st.sampled_from(list(MODES)),
       n=st.integers(1, 3), seat=st.sampled_from([None, 0, 3, 5]), flatten=st.booleans(),
       reward=st.sampled_from(["dense", "terminal"]))
def test_info_holds_only_the_documented_keys(seed: int, mode: str, n: int, seat: int | None,
                                            flatten: bool, reward: str) -> None:
    """Each info's keys are exactly the documented ones for its step, and each value is the
    seat's own: its seat, its score, the mask of its observation; no game seed anywhere."""
    turns = 6
    env = GuildVectorEnv(n, seat=seat, turns=turns, flatten=flatten, reward=reward,
                         autoreset_mode=mode)
    rng = np.random.default_rng(seed)
    every = _masked(INFO_KEYS)
    obs, info = env.reset(seed=seed)
    seeds = set(env.game_seeds.tolist())
    ret = np.zeros(n)  # the episode's return so far: its score, with dense rewards
    played, restart = 0, False  # turns of this episode; NEXT_STEP's restart step due
    for t in range(2 * turns + 2):
        assert set(info) == every | (_masked(END_KEYS) if "results" in info else set()) \
            | (_masked(FINAL_KEYS) if "final_info" in info else set()), f"step {t}: {set(info)}"
        mask = obs["action_mask"] if not flatten else obs[:, -env.single_action_space.n:]
        np.testing.assert_array_equal(info["action_mask"], mask)
        assert all(info[f"_{k}"].all() for k in INFO_KEYS)
        if seat is not None:
            assert (info["seat"] == seat).all()
        if reward == "dense":
            np.testing.assert_allclose(info["score"], ret, atol=1e-12)
        assert not seeds & set(_leaves(info)), f"step {t}: a game seed in info"
        obs, r, done, _, info = env.step(sample_legal(rng, info["action_mask"].astype(bool)))
        seeds |= set(env.game_seeds.tolist())
        if restart:  # the step ignored the actions and started the next episode
            assert (r == 0.0).all() and not done.any()
            ret[:], played, restart = 0.0, 0, False
            continue
        ret += r
        played += 1
        assert done.any() == (played == turns), f"step {t}"
        assert ("results" in info) == (done.any() and mode == "next_step")
        assert ("final_info" in info) == (done.any() and mode == "same_step")
        if done.any():
            assert done.all()  # one horizon, reset together: every env ends on the same step
            ended = info["final_info"] if mode == "same_step" else info
            assert set(ended) == every | _masked(END_KEYS)
            assert list(ended["results"]) == [k for key in RESULT_KEYS
                                              for k in (key, f"_{key}")]
            np.testing.assert_allclose(ended["score"], ret, atol=1e-12)
            for i, scores in enumerate(ended["results"]["scores"]):
                assert scores[int(ended["seat"][i])] == pytest.approx(ret[i])
            if mode == "same_step":
                assert (info["score"] == 0.0).all()  # the next episode's first observation
                ret[:], played = 0.0, 0
            else:
                restart = True


def test_info_does_not_change_with_the_game_seed() -> None:
    """Two envs that differ only in the engines' record of the game seed (hidden; play never
    reads it) give the same observations and infos, in both modes."""
    for mode in MODES:
        a = GuildVectorEnv(3, turns=6, autoreset_mode=mode)
        b = GuildVectorEnv(3, turns=6, autoreset_mode=mode)
        results = [a.reset(seed=2), b.reset(seed=2)]
        rng = np.random.default_rng(2)
        for t in range(14):
            b.engine.seed[:] = np.arange(3) + 12345 + t
            assert not np.array_equal(a.game_seeds, b.game_seeds)
            assert_same(results[0], results[1], f"{mode} step {t}")
            acts = sample_legal(rng, results[0][-1]["action_mask"].astype(bool))
            results = [a.step(acts), b.step(acts)]


def test_game_seeds_is_a_copy_for_the_operator() -> None:
    env = GuildVectorEnv(2, seat=0, turns=6)
    obs, _ = env.reset(seed=0)
    seeds = env.game_seeds
    seeds[:] = 0
    assert not (env.game_seeds == 0).all()
    for i, s in enumerate(env.game_seeds.tolist()):  # the operator rebuilds each game
        g = Game(GameConfig(seed=s, turns=6))
        flat = np.concatenate([obs[k][i].astype(np.float32) for k in obs])
        np.testing.assert_array_equal(flat, encode_flat(g.state, 0))


@pytest.mark.parametrize("bad", [0, -2, 2.0, True, "2", None])
def test_num_envs_is_named(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"^num_envs must be a positive int; got "):
        gymnasium.make_vec("guild/Guild-v0", num_envs=bad,
                           vectorization_mode="vector_entry_point")
    with pytest.raises(ValueError, match=r"^num_envs must be a positive int; got "):
        GuildVectorEnv(bad)


def test_self_plays_constructor_seed_is_its_first_resets() -> None:
    made = GuildSelfPlay(3, seed=5)
    made.reset()
    given = GuildSelfPlay(3)
    given.reset(seed=5)
    assert np.array_equal(made.engine.seed, given.engine.seed)
    made.reset()  # later resets continue the stream: new towns
    assert not np.array_equal(made.engine.seed, given.engine.seed)
