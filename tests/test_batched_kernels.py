"""The compiled baselines (``agents.baselines.batched_kernels``) against their numpy reference
(``act_numpy`` of ``agents.baselines.batched``): the same index for every seat in every state
reached."""

from __future__ import annotations

import numpy as np
import pytest
from differential import herded_game

from agents.baselines.batched import BatchedFactor, BatchedMagpie, sample_legal
from sim.batched.engine import BatchedGuild
from sim.batched.observe import all_seats, legal_masks
from sim.rules.world import SEATS

ROWS = 48
# Default parameters first, then margins that make the rarer branches fire.
FACTORS = [BatchedFactor(), BatchedFactor(sell_margin=-3, pickup_value=0),
           BatchedFactor(sell_margin=4, pickup_value=12)]
MAGPIES = [BatchedMagpie(), BatchedMagpie(hawk_period=0), BatchedMagpie(1, -2, 3),
           BatchedMagpie(2, 5, -4)]


@pytest.mark.parametrize("thievery", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernels_equal_numpy_in_every_state(seed: int, thievery: bool) -> None:
    rng = np.random.default_rng(seed)
    e = BatchedGuild(ROWS, turns=14, thievery=thievery, seed=seed)
    # A third of the rows start crowded (seats herded into one or two rooms, full packs, odd
    # purses and stocks), where robbery, hawking and the keepers' limits come into play.
    crowded = np.arange(0, ROWS, 3)
    e.load_games([herded_game(rng, 14, thievery, int(rng.integers(0, 10)))
                  for _ in crowded], crowded)
    r, s = all_seats(ROWS)
    compared, seen = 0, set()
    for _ in range(14):
        live = ~e.state.done[r]
        rr, ss = r[live], s[live]
        for policy in FACTORS + MAGPIES:
            got = policy.act(e, rr, ss)
            want = policy.act_numpy(e, rr, ss)
            np.testing.assert_array_equal(got, want, err_msg=repr(vars(policy)))
            compared += got.size
            seen.update(got.tolist())
        # Next turn: each seat plays factor, magpie or a random legal act.
        acts = sample_legal(rng, legal_masks(e, r, s))
        pick = rng.integers(0, 3, size=r.size)
        acts = np.where(pick == 0, FACTORS[0].act(e, r, s), acts)
        acts = np.where(pick == 1, MAGPIES[0].act(e, r, s), acts)
        e.step(acts.reshape(ROWS, SEATS), autoreset=False, skip_done=True)
    assert compared > 10_000
    assert len(seen) > 40  # many distinct acts, not a few repeated ones


def test_kernels_answer_any_pairs_in_any_order() -> None:
    """Rows and seats given out of order, repeated, or empty."""
    e = BatchedGuild(4, seed=7)
    r = np.array([3, 0, 3, 2, 0])
    s = np.array([5, 1, 5, 0, 4])
    for policy in (BatchedFactor(), BatchedMagpie()):
        np.testing.assert_array_equal(policy.act(e, r, s), policy.act_numpy(e, r, s))
        assert policy.act(e, r[:0], s[:0]).shape == (0,)


def test_policies_pickle_and_switch_engines() -> None:
    """A policy that has called its kernel pickles (without the compiled entry point), and
    answers right for another engine, town variant or set of parameters."""
    import pickle

    policy = BatchedMagpie()
    one, two = BatchedGuild(3, seed=1), BatchedGuild(5, thievery=False, seed=2)
    for e in (one, two, one):
        r, s = all_seats(e.n)
        np.testing.assert_array_equal(policy.act(e, r, s), policy.act_numpy(e, r, s))
        policy.sell_margin -= 1
    copy = pickle.loads(pickle.dumps(policy))
    r, s = all_seats(two.n)
    np.testing.assert_array_equal(copy.act(two, r, s), policy.act_numpy(two, r, s))
