"""Gymnasium and PettingZoo faces (docs/api.md §2): checkers, determinism, masks, no hidden leaks,
and the canonical sentence of every action parsing back to the same intent."""

from __future__ import annotations

import copy
import importlib.util
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from conftest import needs_module, unlogged
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, parallel_api_test

import sim
from sim import Game, GameConfig, parse_sentence
from sim.codec.action_table import action_table, canonical, legal_mask, semantic, to_intent
from sim.codec.encode import encode
from sim.rules.checks import check_structured
from sim.rules.world import STANDARD_TOWN

N = len(action_table(STANDARD_TOWN))


@pytest.mark.parametrize("kwargs", [{}, {"flatten": True}, {"text_mode": True},
                                    {"reward": "terminal", "seat": 2}])
def test_gymnasium_checker_passes(kwargs: dict) -> None:
    env = gymnasium.make("guild/Guild-v0", **kwargs)
    check_env(env.unwrapped, skip_render_check=True)


@pytest.mark.parametrize("kwargs", [{}, {"flatten": True}, {"text_mode": True}])
def test_pettingzoo_parallel_api_test_passes(kwargs: dict) -> None:
    parallel_api_test(sim.parallel_env(**kwargs), num_cycles=40)


@pytest.mark.parametrize("kwargs", [{}, {"flatten": True}])
def test_pettingzoo_aec_api_test_passes(kwargs: dict) -> None:
    api_test(sim.env(**kwargs), num_cycles=60)


def test_the_aec_face_plays_the_parallel_faces_games() -> None:
    """Seats asked one by one, the same masked-random choices: the same observations, rewards
    and results as all six at once."""
    rng = np.random.default_rng(4)
    choices = rng.random((14, 6))
    parallel, aec = sim.parallel_env(), sim.env()
    obs, infos = parallel.reset(seed=9)
    aec.reset(seed=9)
    for turn in range(14):
        acts = {}
        for seat, agent in enumerate(parallel.agents):
            legal = np.flatnonzero(infos[agent]["action_mask"])
            acts[agent] = int(legal[int(choices[turn, seat] * legal.size)])
        for agent in aec.agent_iter(len(parallel.agents)):
            seen = aec.observe(agent)
            np.testing.assert_equal(seen, obs[agent])
            aec.step(acts[agent])
        obs, rewards, terms, truncs, infos = parallel.step(acts)
        for agent, reward in rewards.items():
            assert aec.rewards[agent] == reward, (turn, agent)
        if not parallel.agents:
            break
    assert not aec.agents or all(aec.terminations.values())
    assert {a: i["results"] for a, i in infos.items()} == {
        a: aec.infos[a]["results"] for a in infos}

    code = ("import gymnasium; env = gymnasium.make('sim:guild/Guild-v0'); "
            "obs, info = env.reset(seed=1); print(env.action_space.n, info['seat'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == str(N)


def _rollout(env, seed: int, choose) -> list:
    obs, info = env.reset(seed=seed)
    trace, done = [], False
    while not done:
        a = choose(info["action_mask"])
        obs, r, done, trunc, info = env.step(a)
        trace.append((a, r, {k: v.tolist() for k, v in obs.items()}, info["score"]))
    return trace


def test_whole_episodes_are_deterministic_for_a_seed() -> None:
    def first_legal(mask):
        return int(np.flatnonzero(mask)[-1])
    for seed in (0, 5):
        a = _rollout(gymnasium.make("guild/Guild-v0"), seed, first_legal)
        b = _rollout(gymnasium.make("guild/Guild-v0"), seed, first_legal)
        assert a == b and len(a) == 14


def test_dense_return_equals_final_score_and_info_carries_results() -> None:
    env = gymnasium.make("guild/Guild-v0", seat=1)
    obs, info = env.reset(seed=9)
    total, done = 0.0, False
    rng = np.random.default_rng(0)
    while not done:
        legal = np.flatnonzero(env.unwrapped.action_masks())
        obs, r, done, trunc, info = env.step(int(rng.choice(legal)))
        total += r
    assert total == pytest.approx(info["results"]["scores"][1])
    assert info["score"] == info["results"]["scores"][1] and info["seat"] == 1


def test_terminal_reward_is_zero_until_the_end() -> None:
    env = gymnasium.make("guild/Guild-v0", reward="terminal", opponents=["random"] * 5)
    env.reset(seed=4)
    rewards = [env.step(0)[1] for _ in range(14)]
    assert rewards[:-1] == [0.0] * 13


def test_bad_env_arguments_are_clear() -> None:
    with pytest.raises(ValueError, match="opponents"):
        gymnasium.make("guild/Guild-v0", opponents=["factor"])
    with pytest.raises(ValueError, match="seat"):
        gymnasium.make("guild/Guild-v0", seat=6)
    with pytest.raises(ValueError, match="turns"):
        gymnasium.make("guild/Guild-v0", turns=3)
    env = gymnasium.make("guild/Guild-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action index"):
        env.step(N)


# --- one codec: canonical sentences parse back to the same intent ------------------------------
def _states():
    """Games part-way through, with mixed tables so that offers, goods and cogs appear."""
    agents = needs_module("agents", "-e .")
    out = []
    for seed in range(6):
        game = Game(GameConfig(seed=seed))
        pols = [agents.make_policy(p) for p in ("factor", "magpie", "random", "factor",
                                                 "magpie", "random")]
        for p in pols:
            if hasattr(p, "reset"):
                p.reset(seed)
        for t in range(13):
            game.play_turn([p.act(game, s) for s, p in enumerate(pols)])
            if t % 3 == seed % 3:
                out.append(copy.deepcopy(game))
    return out


def test_every_action_sentence_parses_back_to_its_intent() -> None:
    for game in _states():
        s = game.state
        for seat in range(6):
            room = s.room[seat]
            for i in range(N):
                structured = check_structured(to_intent(i, game.world, seat, room), game.world,
                                              seat, room, s.offers, s.turn)
                sentence = canonical(i, game.world, s.aliases, seat, room)
                parsed = parse_sentence(sentence, game, seat)
                assert semantic(parsed) == semantic(structured), (sentence, i)


# --- masks ---------------------------------------------------------------------------------------
# What a seat cannot foresee from its own view (documented in sim.codec.action_table.legal_mask).
UNFORESEEABLE = {
    "take": {"no_such_item"}, "buy": {"out_of_stock", "cannot_afford"}, "sell": {"npc_broke"},
    "gift": {"carry_limit", "not_carrying"}, "offer": {"not_carrying"},
    "pay": {"no_target"}, "hire": {"cannot_afford"},
    "accept": {"offer_expired"}, "rob": {"robbery_failed", "nothing_to_take"},
}


@pytest.mark.parametrize("seed", range(40))
def test_masked_random_play_never_fails_where_the_mask_could_know(seed: int) -> None:
    env = sim.parallel_env(seed=seed)
    obs, infos = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    table = action_table(STANDARD_TOWN)
    while env.agents:
        picks = {a: int(rng.choice(np.flatnonzero(infos[a]["action_mask"])))
                 for a in env.agents}
        start = len(env.game.events)
        obs, rewards, terms, truncs, infos = env.step(picks)
        for ev in env.game.events[start:start + 6]:
            block = table[picks[f"seat_{ev['seat']}"]].block
            if ev["reason"] not in ("ok", "waited"):
                assert ev["reason"] in UNFORESEEABLE.get(block, set()), (block, ev)


def test_fast_mask_equals_a_row_by_row_reading() -> None:
    for game in _states():
        for seat in range(6):
            assert legal_mask(game.state, seat) == reference_mask(game.state, seat)


def reference_mask(st, seat: int) -> list[bool]:
    """Row-by-row reading of the rules, kept as the reference for the fast mask."""
    w = st.world
    table = action_table(w)
    rels = (1, 2, 3, 4, 5)
    here = st.room[seat]
    keeper = w.keeper_in_room[here]
    pack = st.items[seat]
    coin = st.coin[seat]
    free = w.carry_limit - sum(pack)
    floor = st.floor[here]
    present = [((seat + r) % 6) for r in range(6)]
    present_rel = [False] + [st.room[present[r]] == here for r in rels]
    dark = w.rooms[here].dark
    mine = sum(1 for s in range(6)
               if st.retainer_of[s] == seat and st.retainer_turns[s] > 0 and st.room[s] == here)
    offers = {}
    for o in st.offers:
        if o.to == seat and o.posted_turn == st.turn - 1:
            rel = (o.sender - seat) % 6
            offers.setdefault(rel, o)  # the oldest one from that seat is the one accepted
    open_need = [0] * w.n_goods
    for q, good in enumerate(st.quest_item[seat]):
        open_need[good] += st.quest_count[seat][q] - st.delivered[seat][q]
    mask = []
    for a in table:
        b = a.block
        if b == "wait":
            ok = True
        elif b == "quest":
            ok = keeper >= 0
        elif b == "move":
            ok = w.adjacent[here][a.to_room]
        elif b == "take":
            ok = floor[a.item] > 0 and free > 0
        elif b == "drop":
            ok = pack[a.item] > 0
        elif b == "buy":
            ok = (keeper >= 0 and w.deals[keeper][a.item] and free > 0
                  and st.stock[keeper][a.item] > 0
                  and coin >= w.ask_table[a.item][st.stock[keeper][a.item]])
        elif b == "sell":
            ok = (keeper >= 0 and w.deals[keeper][a.item] and pack[a.item] > 0
                  and st.shop_coin[keeper] >= w.bid_table[a.item][st.stock[keeper][a.item]])
        elif b == "deliver":
            ok = keeper == w.guild and pack[a.item] > 0 and open_need[a.item] > 0
        elif b == "gift":
            ok = present_rel[a.rel] and pack[a.item] > 0
        elif b in ("pay", "hire"):
            ok = present_rel[a.rel] and coin > 0
        elif b == "offer":
            ok = present_rel[a.rel] and pack[a.item] > 0
        elif b == "accept":
            o = offers.get(a.rel)
            ok = o is not None and present_rel[a.rel] and (
                o.kind == "hire" or (coin >= o.coin and free >= o.qty))
        else:  # rob: assume the victim has no hidden guards
            other = present[a.rel]
            bound = st.retainer_of[seat] == other and st.retainer_turns[seat] > 0
            attack = 1 + mine + (1 if dark else 0)
            defence = 1 + (0 if dark else 2)
            ok = st.thievery and present_rel[a.rel] and not bound and attack > defence
        mask.append(bool(ok))
    return mask


def test_wait_is_always_legal_and_masks_match_info() -> None:
    env = gymnasium.make("guild/Guild-v0")
    obs, info = env.reset(seed=2)
    assert obs["action_mask"][0] == 1
    assert (obs["action_mask"] == env.unwrapped.action_masks()).all()
    assert (info["action_mask"] == obs["action_mask"]).all()


# --- no hidden information -----------------------------------------------------------------------
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10 ** 6), st.integers(0, 12), st.integers(0, 5), st.data())
def test_numeric_observation_hides_other_seats(seed: int, turns: int, seat: int,
                                                data: st.DataObject) -> None:
    game = Game(GameConfig(seed=seed))
    rng = np.random.default_rng(seed)
    for _ in range(turns):
        game.play_turn([to_intent(int(rng.choice(np.flatnonzero(legal_mask(game.state, s)))),
                                  game.world, s, game.state.room[s]) for s in range(6)])
    before = encode(game.state, seat)
    other = data.draw(st.sampled_from([s for s in range(6) if s != seat]))
    snap = game.snapshot()
    snap["cogs"][other]["coin"] += 11
    snap["cogs"][other]["items"] = [0, 0, 0, 0, 0, data.draw(st.integers(0, 8))]
    snap["cogs"][other]["delivered"] = [1, 1]
    game.restore(snap)
    game.state.notes[other] = "hidden"
    after = encode(game.state, seat)
    assert all((before[k] == after[k]).all() for k in before)


def test_maskable_ppo_runs_a_few_hundred_steps() -> None:
    MaskablePPO = needs_module("sb3_contrib", "-e '.[train]'").MaskablePPO  # noqa: N806

    env = gymnasium.make("guild/Guild-v0", flatten=True)
    model = MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, seed=0, verbose=0,
                        device="cpu")
    unlogged(model).learn(total_timesteps=256)
    obs, _ = env.reset(seed=1)
    action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks())
    assert env.unwrapped.action_masks()[int(action)]


def test_make_vec_sync_runs_whole_episodes() -> None:
    envs = gymnasium.make_vec("guild/Guild-v0", num_envs=3, vectorization_mode="sync")
    obs, infos = envs.reset(seed=5)
    assert obs["action_mask"].shape == (3, N)
    for _ in range(14):
        obs, rewards, terms, truncs, infos = envs.step(np.zeros(3, dtype=np.int64))
    assert terms.all()
    envs.close()


@pytest.mark.parametrize("kwargs", [{}, {"flatten": True}])
def test_all_seats_fast_path_equals_six_python_observations(kwargs: dict) -> None:
    # numba is a core dependency; without it observe_all is six observe calls and this test
    # would compare the Python path with itself
    assert importlib.util.find_spec("numba") is not None, "numba (a core dependency) is missing"
    env = sim.parallel_env(**kwargs)
    for seed in range(6):
        obs, infos = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        while env.agents:
            game = env.game
            fast = env.face.observe_all(game)
            slow = [env.face.observe(game, s) for s in range(6)]
            for (fo, fi), (so, si) in zip(fast, slow):
                if isinstance(fo, dict):
                    assert fo.keys() == so.keys()
                    assert all((fo[k] == so[k]).all() and fo[k].dtype == so[k].dtype
                               for k in fo)
                else:
                    assert (fo == so).all() and fo.dtype == so.dtype
                assert (fi["action_mask"] == si["action_mask"]).all()
            picks = {a: int(rng.choice(np.flatnonzero(infos[a]["action_mask"])))
                     for a in env.agents}
            obs, rewards, terms, truncs, infos = env.step(picks)


def test_text_mode_observes_the_seats_text_view_and_lists_the_legal_sentences() -> None:
    # docs/python.md: the observation is {"observation_text": the text view}, no mask; the
    # legal acts are info["admissible"], the canonical sentences of the mask's rows.
    from sim.codec.action_table import canonical, legal_mask

    env = gymnasium.make("guild/Guild-v0", text_mode=True)
    obs, info = env.reset(seed=21)
    game, seat = env.unwrapped.game, info["seat"]
    assert set(obs) == {"observation_text"}
    assert obs["observation_text"] == game.observation_text(seat)
    assert env.observation_space.contains(obs)
    room = game.state.room[seat]
    assert info["admissible"] == [canonical(i, game.world, game.state.aliases, seat, room)
                                  for i, ok in enumerate(legal_mask(game.state, seat)) if ok]
    obs, _, _, _, info = env.step(info["admissible"][-1])
    assert obs["observation_text"] == game.observation_text(seat)
