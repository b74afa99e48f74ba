"""The parallel face on its one-row batched engine equals the scalar game it replays.

``sim.parallel_env`` steps a one-row ``BatchedGuild`` and rebuilds ``env.game`` from the
recorded turns only when asked.  Here a scalar ``Game`` is played beside it with the same
intents, and every observation (the Python encoder), mask, reward, end and result the env
returns is compared with what the scalar game gives, for masked-random episodes of several
lengths, both observation forms and both town variants.
"""

from __future__ import annotations

import numpy as np
import pytest

import sim
from sim import Game, GameConfig
from sim.codec.action_table import to_intent
from sim.codec.encode import encode, encode_flat
from sim.rules.errors import IntentError
from sim.rules.scoring import score


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a.dtype == b.dtype and a.shape == b.shape and bool((a == b).all())


@pytest.mark.parametrize("flatten", [False, True])
@pytest.mark.parametrize("turns,thievery", [(14, True), (6, False), (20, True)])
def test_parallel_face_equals_the_scalar_game(flatten: bool, turns: int, thievery: bool) -> None:
    env = sim.parallel_env(flatten=flatten, turns=turns, thievery=thievery)
    for episode in range(15):
        obs, infos = env.reset(seed=1000 * turns + episode)
        game = Game(GameConfig(seed=env.game.config.seed, turns=turns, thievery=thievery))
        rng = np.random.default_rng(episode)
        last = [0.0] * 6
        while env.agents:
            for s, a in enumerate(env.possible_agents):
                want = (encode_flat(game.state, s) if flatten else encode(game.state, s))
                assert _same(obs[a], want)
                assert (infos[a]["action_mask"] == np.asarray(
                    want[-env.face.n_actions:] if flatten else want["action_mask"])).all()
                assert (env.action_masks(a) == (infos[a]["action_mask"] > 0)).all()
                assert infos[a]["score"] == last[s]
            picks = {a: int(rng.choice(np.flatnonzero(infos[a]["action_mask"])))
                     for a in env.agents}
            obs, rewards, terms, truncs, infos = env.step(picks)
            game.play_turn([to_intent(picks[a], game.world, s, game.state.room[s])
                            for s, a in enumerate(env.possible_agents)])
            now = [score(game.state, s) for s in range(6)]
            assert [rewards[a] for a in env.possible_agents] == [
                float(n - o) for n, o in zip(now, last)]
            last = now
            assert all(t == game.done for t in terms.values()) and not any(truncs.values())
        assert infos["seat_0"]["results"] == game.results()
        assert env.game.events == game.events  # the replayed game is the same game


def test_lazy_game_catches_up_when_read_late_and_bad_actions_change_nothing() -> None:
    env = sim.parallel_env(seed=3)
    obs, infos = env.reset()
    acts = {a: 0 for a in env.agents}
    for _ in range(5):
        env.step(acts)
    with pytest.raises(IntentError):
        env.step({**acts, "seat_2": 10 ** 6})
    with pytest.raises(ValueError, match="int index"):
        env.step({**acts, "seat_4": 1.5})
    assert env.game.state.turns_played == 5
    env.step(acts)
    assert env.game.state.turns_played == 6 and len(env.game.events) > 6
