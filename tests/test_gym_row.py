"""``guild/Guild-v0`` on its one-row batched engine equals the scalar path it replaces.

With baseline opponents named by spec (``"factor"``, ``"magpie"``) and structured actions,
``GuildEnv`` steps a one-row ``BatchedGuild`` and asks the baselines' batched twins for the
opponents' acts; given the same baselines as policy objects it plays the scalar ``Game`` as
before.  Here both are played side by side with the same learner actions: every observation,
mask, reward, end and info must be equal, and at the end the replayed ``env.game`` must hold
the scalar game's event log (the baselines' own sentences), snapshot and replay payload.
"""

from __future__ import annotations

import numpy as np
import pytest

from agents import Factor, Magpie, RandomPolicy
from sim.envs.gym import GuildEnv

LINEUPS = [("factor", "magpie", "factor", "magpie", "factor"), ("magpie",) * 5,
           ("factor",) * 5, ("Magpie", "factor", "FACTOR", "magpie", "magpie")]
SCALAR = {"factor": Factor, "magpie": Magpie}


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
                and bool((a == b).all()))
    return type(a) is type(b) and a == b


def _pair(lineup, **kwargs) -> tuple[GuildEnv, GuildEnv]:
    fast = GuildEnv(opponents=list(lineup), **kwargs)
    slow = GuildEnv(opponents=[SCALAR[name.lower()]() for name in lineup], **kwargs)
    return fast, slow


@pytest.mark.parametrize("seat", [None, 0, 3, 5])
@pytest.mark.parametrize("flatten,reward,turns,thievery", [
    (False, "dense", 14, True), (True, "terminal", 14, True), (False, "terminal", 6, False),
    (True, "dense", 20, True)])
def test_row_path_equals_the_scalar_path(seat, flatten: bool, reward: str, turns: int,
                                         thievery: bool) -> None:
    for k, lineup in enumerate(LINEUPS):
        fast, slow = _pair(lineup, seat=seat, flatten=flatten, reward=reward, turns=turns,
                           thievery=thievery)
        rng = np.random.default_rng(k)
        for episode in range(3):
            # seeded, then unseeded resets: the np_random streams must stay in step too
            seed = 100 * k + episode if episode < 2 else None
            got, want = fast.reset(seed=seed), slow.reset(seed=seed)
            assert fast._row is not None and slow._row is None
            assert _same(got, want)
            done = False
            while not done:
                assert _same(fast.action_masks(), slow.action_masks())
                mask = got[-1]["action_mask"]
                action = int(rng.choice(np.flatnonzero(mask))) if rng.random() < 0.9 else 0
                got = fast.step(action)
                want = slow.step(np.int64(action))
                assert _same(got, want), (episode, got[1:], want[1:])
                done = got[2]
            assert "results" in got[4]
            assert fast.game.events == slow.game.events
            assert fast.game.snapshot() == slow.game.snapshot()
            names = list(lineup)
            assert (fast.game.replay_payload(names) == slow.game.replay_payload(names))
            with pytest.raises(RuntimeError):
                fast.step(0)


def test_lazy_game_mid_episode_and_render() -> None:
    """``env.game`` read mid-episode catches up, later turns still replay, render agrees."""
    fast, slow = _pair(LINEUPS[0], seat=2, render_mode="ansi")
    fast.reset(seed=9)
    slow.reset(seed=9)
    for turn in range(14):
        if turn % 4 == 1:
            assert fast.render() == slow.render()
            assert fast.game.events == slow.game.events
        fast.step(0)
        slow.step(0)
    assert fast.game.events == slow.game.events
    assert fast.render() == slow.render()


def test_scalar_path_for_random_objects_and_text() -> None:
    """Random (its own stream), policy objects and text mode keep the scalar ``Game``."""
    cases = [GuildEnv(opponents=["factor"] * 4 + ["random"]),
             GuildEnv(opponents=["factor"] * 4 + [RandomPolicy()]),
             GuildEnv(opponents=["factor"] * 4 + ["agents:Factor"]),
             GuildEnv(text_mode=True)]
    for env in cases:
        env.reset(seed=1)
        assert env._row is None and env.game is env._game
    fast = GuildEnv()
    fast.reset(seed=1)
    assert fast._row is not None


def test_bad_actions_change_nothing() -> None:
    fast, slow = _pair(LINEUPS[0], seat=1)
    for env in (fast, slow):
        env.reset(seed=4)
        env.step(0)
        for bad in (10 ** 6, 1.5, -1, True):
            with pytest.raises(ValueError):
                env.step(bad)
        env.step(0)
        assert env.game.state.turns_played == 2
    assert fast.game.events == slow.game.events


def test_a_broken_or_plain_batched_entry_keeps_the_scalar_path(monkeypatch) -> None:
    """A name whose batched policy cannot be built, or is no scalar twin, plays the scalar
    policy as before."""
    from sim.policies import BATCHED_POLICIES

    def broken() -> None:
        raise RuntimeError("no twin today")

    class Plain:
        batched = True

        def act(self, e, r, s):
            return np.zeros(len(r), np.int64)

    # the registry as it was afterwards, its resolved-class memo included (restoring only the
    # factories left "magpie" building Plain for the tests that came next)
    monkeypatch.setattr(BATCHED_POLICIES, "_factories", dict(BATCHED_POLICIES._factories))
    monkeypatch.setattr(BATCHED_POLICIES, "_classes", {})
    for factory in (broken, Plain):
        BATCHED_POLICIES.register("magpie", factory, replace=True)
        env = GuildEnv()
        env.reset(seed=0)
        assert env._row is None
        env.step(0)
