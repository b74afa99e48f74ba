"""The compiled baselines (``agents.baselines.batched_kernels``) as the batched engine calls
them: any rows and seats in any order, pickled policies, another town.  What they choose is held
to the scalar baselines by ``tests/test_batched_faces.py``."""

from __future__ import annotations

import pickle

import numpy as np

from agents.baselines.batched import BatchedFactor, BatchedMagpie
from sim.batched.engine import BatchedGuild
from sim.batched.observe import all_seats


def test_kernels_answer_any_pairs_in_any_order() -> None:
    """Rows and seats given out of order, repeated, or none: each gets its own answer."""
    e = BatchedGuild(4, seed=7)
    r, s = all_seats(e.n)
    for _ in range(5):  # a few turns in, so that the seats' answers differ
        e.step(BatchedMagpie().act(e, r, s).reshape(e.n, -1), autoreset=False)
    r = np.array([3, 0, 3, 2, 0])
    s = np.array([5, 1, 5, 0, 4])
    every, seats = all_seats(e.n)
    for policy in (BatchedFactor(), BatchedMagpie()):
        whole = policy.act(e, every, seats).reshape(e.n, -1)
        assert len(set(whole.ravel().tolist())) > 1
        np.testing.assert_array_equal(policy.act(e, r, s), whole[r, s])
        assert policy.act(e, r[:0], s[:0]).shape == (0,)


def test_policies_pickle_and_switch_engines() -> None:
    """A policy that has called its kernel pickles (without the compiled entry point), and
    answers right for another engine, town variant or set of parameters."""
    policy = BatchedMagpie()
    one, two = BatchedGuild(3, seed=1), BatchedGuild(5, thievery=False, seed=2)
    for e in (one, two, one):
        r, s = all_seats(e.n)
        fresh = BatchedMagpie(policy.hawk_period, policy.sell_margin, policy.buy_margin)
        np.testing.assert_array_equal(policy.act(e, r, s), fresh.act(e, r, s))
        policy.sell_margin -= 1
    copy = pickle.loads(pickle.dumps(policy))
    r, s = all_seats(two.n)
    fresh = BatchedMagpie(policy.hawk_period, policy.sell_margin, policy.buy_margin)
    np.testing.assert_array_equal(copy.act(two, r, s), fresh.act(two, r, s))
