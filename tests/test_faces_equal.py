"""The two faces of ``guild/Guild-v0`` play identical games (RULES §21).

``make_vec(..., vectorization_mode="vector_entry_point")`` runs the batched engine with the
batched factor and magpie; ``vectorization_mode="sync"`` runs scalar ``GuildEnv`` copies whose
opponents write sentences that the parser reads.  For the same seed, seat, opponents, turns
and flatten, every env's observation, mask, reward and end must be equal at every step, over
more than 10,000 episodes of mixed factor/magpie lineups with every seat learning in turn (the
learning seat plays uniformly random legal actions, so gifts, offers, hires and robberies meet
the baselines).  There is one batched backend (compiled kernels), so this covers all of them.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import sim  # noqa: F401  (registers guild/Guild-v0)
from agents.baselines.batched import sample_legal

# Few envs, each playing many episodes in a row: making an env costs more than playing an
# episode in it, and every chunk still batches several envs and autoresets each of them.
N_ENVS = 16
EPISODES_PER_ENV = 12
CHUNKS = 54  # 54 chunks x 16 envs x 12 episodes = 10,368 episodes


def _equal(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    return np.array_equal(a, b)


def play_both(chunk: int) -> int:
    """Play one chunk on both faces in lockstep; return the episodes finished (asserting)."""
    rng = np.random.default_rng(chunk)
    seat = None if chunk % 7 == 6 else chunk % 6
    lineup = [str(x) for x in rng.choice(["factor", "magpie"], size=5)]
    turns = (14, 14, 6, 20)[chunk % 4]
    flatten = bool(chunk % 2)
    same_step = chunk % 3 == 0
    kw = dict(seat=seat, opponents=lineup, turns=turns, flatten=flatten)
    fast = gymnasium.make_vec("guild/Guild-v0", num_envs=N_ENVS,
                              vectorization_mode="vector_entry_point", **kw,
                              **({"autoreset_mode": "same_step"} if same_step else {}))
    sync = gymnasium.make_vec("guild/Guild-v0", num_envs=N_ENVS, vectorization_mode="sync",
                              vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP}
                              if same_step else {}, **kw)
    assert fast.metadata["autoreset_mode"] == sync.metadata["autoreset_mode"]
    where = f"chunk {chunk} (seat {seat}, {lineup}, turns {turns}, same_step {same_step})"
    o1, i1 = fast.reset(seed=1000 * chunk)
    o2, i2 = sync.reset(seed=1000 * chunk)
    ended = 0
    steps = turns * EPISODES_PER_ENV + (0 if same_step else EPISODES_PER_ENV - 1)
    for t in range(steps):
        assert _equal(o1, o2), f"{where}: observations differ at step {t}"
        assert np.array_equal(i1["action_mask"], i2["action_mask"]), f"{where}: masks, step {t}"
        assert np.array_equal(i1["seat"], i2["seat"]), f"{where}: seats differ at step {t}"
        a = sample_legal(rng, i1["action_mask"].astype(bool))
        o1, r1, d1, u1, i1 = fast.step(a)
        o2, r2, d2, u2, i2 = sync.step(a)
        assert np.array_equal(r1, r2), f"{where}: rewards differ at step {t}"
        assert np.array_equal(d1, d2) and np.array_equal(u1, u2), f"{where}: ends, step {t}"
        if same_step and d1.any():
            assert np.array_equal(i1["_final_obs"], i2["_final_obs"])
            for k in np.flatnonzero(d1):
                assert _equal(i1["final_obs"][k], i2["final_obs"][k]), where
        ended += int(d1.sum())
    assert _equal(o1, o2)
    fast.close()
    sync.close()
    return ended


@pytest.mark.parametrize("part", range(6))
def test_vector_and_sync_faces_play_identical_games(part: int) -> None:
    assert CHUNKS * N_ENVS * EPISODES_PER_ENV >= 10_000  # the docstring's floor, over all parts
    episodes = sum(play_both(chunk) for chunk in range(part, CHUNKS, 6))
    assert episodes == N_ENVS * EPISODES_PER_ENV * len(range(part, CHUNKS, 6))


def test_vector_face_refuses_an_unknown_autoreset_mode() -> None:
    with pytest.raises(ValueError, match="autoreset_mode"):
        gymnasium.make_vec("guild/Guild-v0", num_envs=2, vectorization_mode="vector_entry_point",
                           autoreset_mode="disabled")
