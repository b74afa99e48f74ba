"""The speed-ups of the one-row faces change nothing a caller can see.

``BatchedGuild.run_kernel`` calls a kernel's compiled entry point directly after its first
call: the state it leaves and the rows it encodes equal those of numba's dispatcher.  The
parallel face cuts every seat's arrays from one fresh copy a step: observations and infos a
caller keeps are not overwritten by later steps.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import sim
from sim.batched import jit
from sim.batched.engine import BatchedGuild
from sim.batched.observe import all_seats, encode


def test_entry_points_equal_the_dispatcher() -> None:
    fast, slow = (BatchedGuild(3, seed=7) for _ in range(2))
    rng = np.random.default_rng(0)
    r, s = all_seats(3)
    for _ in range(10):
        acts = rng.integers(0, fast.tables.n_actions, size=(3, 6))
        fast.step(acts, autoreset=False)
        jit.kernel("step_rows")(acts, *slow.own_args())
        assert all((a == b).all() for a, b in zip(fast.state, slow.state))
        want = np.zeros((r.size, slow.tables.obs_width), np.float32)
        jit.kernel("encode_rows")(r, s, want, *slow.own_args())
        assert (encode(fast, r, s) == want).all()
    assert {"step_rows", "encode_rows"} <= set(fast._entries)  # the fast path was taken


def test_bound_kernels_equal_the_dispatcher() -> None:
    """``bind``: the arrays are read at each call (new contents, same buffers), and the
    engine's state and encoded rows move as ``step`` and ``encode`` move them."""
    fast, slow = (BatchedGuild(2, seed=3) for _ in range(2))
    rng = np.random.default_rng(1)
    acts = np.zeros((2, 6), np.int64)
    r, s = all_seats(2)
    out = np.zeros((r.size, fast.tables.obs_width), np.float32)
    step, observe = fast.bind("step_rows", (acts,)), fast.bind("encode_rows", (r, s, out))
    for _ in range(14):
        acts[:] = rng.integers(0, fast.tables.n_actions, size=(2, 6))
        step()
        slow.step(acts.copy(), autoreset=False)
        assert all((a == b).all() for a, b in zip(fast.state, slow.state))
        observe()
        assert (out == encode(slow, r, s)).all()
    assert fast.state.done.all()


def test_kept_observations_survive_later_steps() -> None:
    for flatten in (False, True):
        env = sim.parallel_env(seed=5, flatten=flatten)
        obs, infos = env.reset()
        acts = {a: 0 for a in env.agents}
        kept = []
        while env.agents:
            kept.append((obs, infos, copy.deepcopy((obs, infos))))
            obs, _, _, _, infos = env.step(acts)
        for got, got_infos, (want, want_infos) in kept:
            for a in env.possible_agents:
                if flatten:
                    assert (got[a] == want[a]).all()
                else:
                    assert all((got[a][k] == want[a][k]).all() for k in want[a])
                    assert got_infos[a]["action_mask"] is got[a]["action_mask"]  # as before
                assert (got_infos[a]["action_mask"] == want_infos[a]["action_mask"]).all()


@pytest.mark.parametrize("copier", [copy.deepcopy, lambda x: pickle.loads(pickle.dumps(x))],
                         ids=["deepcopy", "pickle"])
def test_a_copy_of_a_face_plays_on_its_own_state(copier) -> None:
    """``copy.deepcopy`` or a pickle of a face mid-episode (tree search, checkpoints): the
    copy's bound kernels act on the copy's engine and buffers, the original is untouched, and
    both go on to the same observations and rewards from the same actions."""
    import gymnasium

    def same(a, b) -> bool:
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, np.ndarray):
            return a.dtype == b.dtype and (a == b).all()
        return a == b

    env = sim.parallel_env(seed=2)
    env.reset()
    acts = {a: 0 for a in env.agents}
    env.step(acts)
    twin = copier(env)
    twin.step(acts)
    assert env._row.engine.state.turns_played[0] == 1  # the copy's step left the original
    assert twin._row.engine.state.turns_played[0] == 2
    env.step(acts)  # the original catches up: the same turn, the same state
    assert all((a == b).all() for a, b in zip(env._row.engine.state, twin._row.engine.state))
    while twin.agents:
        got, want = env.step(acts), twin.step(acts)
        assert same(got[0], want[0]) and got[1] == want[1] and got[2] == want[2]

    gym = gymnasium.make("guild/Guild-v0")
    gym.reset(seed=3)
    gym.step(0)
    other = copier(gym)
    for _ in range(13):
        got, want = gym.step(0), other.step(0)
        assert same(got[0], want[0]) and got[1:4] == want[1:4]
