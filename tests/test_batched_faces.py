"""The batched faces and policies against the scalar ones: the batched baselines choose the
scalar baseline's act, ``GuildVectorEnv`` and ``GuildSelfPlay`` rows are scalar games, and
``make_vec`` builds the vector face."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from differential import N_ACTIONS, W, biased_actions, herded_game
from gymnasium.vector import AutoresetMode

from agents import Factor, Magpie
from agents.baselines.batched import BatchedFactor, BatchedMagpie, BatchedRandom, sample_legal
from sim import Game, GameConfig
from sim.batched.engine import BatchedGuild
from sim.batched.observe import all_seats, legal_masks
from sim.codec.action_table import legal_mask, semantic, to_intent
from sim.codec.encode import encode_flat
from sim.envs.vector import GuildSelfPlay, GuildVectorEnv
from sim.rules.checks import check_structured
from sim.rules.scoring import score
from sim.rules.world import SEATS


def _effect(it, game: Game, seat: int) -> tuple:
    """An intent's slots with quantities cut to what they can move (``all`` == held)."""
    sem = list(semantic(it))
    at = {"sell": 2, "drop": 2, "give": 4}.get(it.kind)
    if at is not None and (it.kind != "give" or it.npc >= 0):
        sem[at] = min(it.qty, game.state.items[seat][it.item])
    return tuple(sem)


# The defaults first, then margins that make the rarer branches fire (the same parameters on
# both faces).
FACTOR_PARAMS = [{}, {"sell_margin": -3, "pickup_value": 0}, {"sell_margin": 4, "pickup_value": 12}]
MAGPIE_PARAMS = [{}, {"hawk_period": 0}, {"hawk_period": 1, "sell_margin": -2, "buy_margin": 3},
                 {"hawk_period": 2, "sell_margin": 5, "buy_margin": -4}]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batched_baselines_choose_the_scalar_sentence(seed: int) -> None:
    """Batched factor/magpie pick, in every state and with any parameters, the index whose
    effect is the scalar baseline's sentence: no snapping (table version 2 has every amount
    they name)."""
    rng = np.random.default_rng(seed)
    lineups = [["factor", "magpie"] * 3, ["magpie"] * 6, ["factor"] * 3 + ["random"] * 3]
    pairs = {"factor": [(Factor(**p), BatchedFactor(**p)) for p in FACTOR_PARAMS],
             "magpie": [(Magpie(**p), BatchedMagpie(**p)) for p in MAGPIE_PARAMS]}
    checked = 0
    kinds = set()
    for k in range(36):
        game = herded_game(rng, 14, True, 0) if k % 2 else Game(GameConfig(seed=k + 100 * seed))
        lineup = lineups[k % 3]
        e = BatchedGuild(1)
        while not game.done:
            e.load_games([game])
            sentences = []
            for seat in range(SEATS):
                for name, variants in pairs.items():
                    for i, (scalar, batched) in enumerate(variants):
                        sentence = scalar.act(game, seat)
                        want = _effect(game.intent_for(sentence, seat)[0], game, seat)
                        index = int(batched.act(e, np.array([0]), np.array([seat]))[0])
                        it = check_structured(to_intent(index, W, seat, game.state.room[seat]),
                                              W, seat, game.state.room[seat], game.state.offers,
                                              game.state.turn)
                        got = _effect(it, game, seat)
                        checked += 1
                        kinds.add(want[0] if want[0] != "give" else want[1])
                        assert got == want, (name, vars(scalar), seat, sentence, got)
                        if name == lineup[seat] and i == 0:
                            sentences.append(sentence)
                if lineup[seat] == "random":
                    legal = np.flatnonzero(legal_mask(game.state, seat))
                    sentences.append(to_intent(int(rng.choice(legal)), W, seat,
                                               game.state.room[seat]))
            game.play_turn(sentences)
    assert checked > 10_000
    assert {"keeper", "trade", "rob", "buy", "sell", "take", "move"} <= kinds


class _Waiter:
    """A batched opponent that always waits (the same act in both engines)."""

    batched = True

    def act(self, e: BatchedGuild, r: np.ndarray, s: np.ndarray) -> np.ndarray:
        return np.zeros(r.size, np.int64)


@pytest.mark.parametrize("reward", ["dense", "terminal"])
def test_vector_env_equals_scalar_games(reward: str) -> None:
    """GuildVectorEnv rows are scalar games: same obs, rewards, ends and next episodes."""
    n, turns = 12, 6
    env = GuildVectorEnv(n, opponents=[_Waiter()] * 5, turns=turns, flatten=True,
                         reward=reward, autoreset_mode="same_step")
    obs, info = env.reset(seed=5)
    rng = np.random.default_rng(5)
    games = [Game(GameConfig(seed=int(x), turns=turns)) for x in env.game_seeds]
    seats = info["seat"].tolist()
    assert len(set(seats)) > 1
    episodes = 0
    for _ in range(2 * turns):
        for i, g in enumerate(games):
            np.testing.assert_array_equal(obs[i], encode_flat(g.state, seats[i]))
            assert info["action_mask"][i].tolist() == legal_mask(g.state, seats[i])
        acts = np.array([biased_actions(rng, g)[seats[i]] for i, g in enumerate(games)])
        obs, rewards, term, trunc, info = env.step(acts)
        assert not trunc.any()
        for i, g in enumerate(games):
            before = score(g.state, seats[i])
            joint = [to_intent(0, W, s, g.state.room[s]) for s in range(SEATS)]
            joint[seats[i]] = to_intent(int(acts[i]), W, seats[i], g.state.room[seats[i]])
            g.play_turn(joint)
            after = score(g.state, seats[i])
            assert rewards[i] == (after - before if reward == "dense" else
                                  (after if g.done else 0.0))
            assert bool(term[i]) == g.done
            if g.done:
                episodes += 1
                assert info["_final_obs"][i]
                np.testing.assert_array_equal(info["final_obs"][i],
                                              encode_flat(g.state, seats[i]))
                assert info["final_info"]["score"][i] == after
                games[i] = Game(GameConfig(seed=int(env.game_seeds[i]), turns=turns))
                seats[i] = int(info["seat"][i])
    assert episodes == 2 * n


def test_make_vec_with_vector_entry_point() -> None:
    gymnasium.register(id="guild/GuildBatchedTest-v0", entry_point="sim.envs.gym:GuildEnv",
                       vector_entry_point="sim.envs.vector:GuildVectorEnv")
    try:
        env = gymnasium.make_vec("guild/GuildBatchedTest-v0", num_envs=4,
                                 vectorization_mode="vector_entry_point", seat=1)
        assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP  # Gymnasium's default
        obs, info = env.reset(seed=0)
        assert obs in env.observation_space
        assert env.single_action_space.n == N_ACTIONS
        for _ in range(15):
            obs, r, term, trunc, info = env.step(env.unwrapped.action_masks().argmax(1))
            assert obs in env.observation_space and r.dtype == np.float64
        assert (info["seat"] == 1).all()
        with pytest.raises(ValueError, match="batched"):
            GuildVectorEnv(2, opponents=[Factor()] * 5)
    finally:
        del gymnasium.registry["guild/GuildBatchedTest-v0"]


def test_self_play_rows_are_seats() -> None:
    n, turns = 3, 6
    sp = GuildSelfPlay(n, turns=turns, seed=2)
    obs, _ = sp.reset()
    assert obs.shape == (n * SEATS, sp.single_observation_space.shape[0])
    rng = np.random.default_rng(2)
    games = [Game(GameConfig(seed=int(x), turns=turns)) for x in sp.engine.seed]
    for _ in range(turns):
        for i, g in enumerate(games):
            for seat in range(SEATS):
                np.testing.assert_array_equal(obs[SEATS * i + seat], encode_flat(g.state, seat))
        assert (sp.masks == (obs[:, -N_ACTIONS:] > 0)).all()
        acts = sample_legal(rng, sp.masks)
        obs, rewards, term, trunc, infos = sp.step(acts)
        for i, g in enumerate(games):
            before = [score(g.state, s) for s in range(SEATS)]
            g.play_turn([to_intent(int(acts[SEATS * i + s]), W, s, g.state.room[s])
                         for s in range(SEATS)])
            expect = [score(g.state, s) - before[s] for s in range(SEATS)]
            np.testing.assert_allclose(rewards[SEATS * i:SEATS * (i + 1)], expect, rtol=1e-6)
            assert term[SEATS * i] == g.done
            if g.done:
                np.testing.assert_array_equal(infos["final_obs"][SEATS * i],
                                              encode_flat(g.state, 0))
    assert term.all() and (sp.engine.turn == 0).all()
    fresh = [Game(GameConfig(seed=int(x), turns=turns)) for x in sp.engine.seed]
    np.testing.assert_array_equal(obs[SEATS], encode_flat(fresh[1].state, 0))


def test_batched_random_plays_legal_actions() -> None:
    e = BatchedGuild(64, seed=1)
    r, s = all_seats(64)
    policy = BatchedRandom(3)
    for _ in range(14):
        acts = policy.act(e, r, s)
        assert legal_masks(e, r, s)[np.arange(r.size), acts].all()
        e.step(acts.reshape(64, SEATS))
