"""The envs' faces at their edges: the AEC face checks a live seat's None at once and pickles,
``GuildVecEnv`` reports ``max_episode_steps`` cuts as SB3 does, a world file's town has a text
space its views fit, and bad seeds, actions and agents are ``ValueError``s naming them."""

from __future__ import annotations

import json
import pickle
import random
import string
import types
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from conftest import needs_module

import sim
from sim.envs.face import TEXT_VIEW_LENGTH, text_view_bound
from sim.envs.gym import GuildEnv

SB3 = "torch==2.13.0, then pip install -e '.[train]'"


def _same(a: object, b: object) -> bool:
    """Observations (dicts of arrays, arrays or text) equal, key for key."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return np.array_equal(np.asarray(a), np.asarray(b))


def _choice(aec, agent: str, k: int, text_mode: bool):
    """A legal action that varies with the step count ``k``: the same for two equal envs."""
    if text_mode:
        return ("I wait.", "I walk.")[k % 2]
    legal = np.flatnonzero(aec.observe(agent)["action_mask"])
    return int(legal[k % legal.size])


def _play_out(envs: list, text_mode: bool, start: int = 0) -> int:
    """Step every env in ``envs`` alike to the end, asserting they stay equal; the steps."""
    k = start
    while envs[0].agents:
        agent = envs[0].agent_selection
        lasts = [e.last() for e in envs]
        for e, last in zip(envs, lasts):
            assert e.agent_selection == agent
            assert _same(last[0], lasts[0][0]) and last[1:4] == lasts[0][1:4]
        dead = lasts[0][2] or lasts[0][3]
        action = None if dead else _choice(envs[0], agent, k, text_mode)
        for e in envs:
            e.step(action)
        k += 1
    assert all(not e.agents for e in envs)
    return k


# --- the AEC face: a live seat's None is refused at once ----------------------------------------

@pytest.mark.parametrize("text_mode", [False, True], ids=["structured", "text"])
def test_aec_refuses_none_from_a_live_seat_at_its_own_step(text_mode: bool) -> None:
    aec, twin = sim.env(seed=0, text_mode=text_mode), sim.env(seed=0, text_mode=text_mode)
    aec.reset(seed=0)
    twin.reset(seed=0)
    with pytest.raises(ValueError, match="^seat_0: "):
        aec.step(None)
    assert aec.agent_selection == "seat_0"  # nothing stored: the seat steps again
    # the refused step changed nothing: both play the same games to the end, the dead seats
    # stepping with None as PettingZoo's convention has them
    assert _play_out([aec, twin], text_mode) > 6


# --- the AEC face pickles ------------------------------------------------------------------------

@pytest.mark.parametrize("text_mode", [False, True], ids=["structured", "text"])
def test_aec_env_pickles_mid_episode_and_the_copy_plays_on_as_the_original(
        text_mode: bool) -> None:
    aec = sim.env(seed=1, text_mode=text_mode)
    aec.reset()
    for k in range(8):  # one whole turn and two seats of the next
        aec.step(_choice(aec, aec.agent_selection, k, text_mode))
    copy = pickle.loads(pickle.dumps(aec))
    assert copy.agent_selection == aec.agent_selection == "seat_2"
    _play_out([aec, copy], text_mode, start=8)
    copy.reset(seed=2)
    with pytest.raises(ValueError, match="^seat_0: "):  # the copy checks as the original does
        copy.step(None)


# --- GuildVecEnv: max_episode_steps, as SB3 reads it ---------------------------------------------

def test_sb3_vec_env_ends_a_cut_episode_as_dummy_vec_env_does() -> None:
    needs_module("stable_baselines3", SB3)
    from agents.learn.sb3 import GuildVecEnv

    venv = GuildVecEnv(2, seed=0, seat=0, max_episode_steps=3)
    venv.reset()
    total = np.zeros(2)
    for t in range(3):
        obs, reward, done, infos = venv.step(np.zeros(2, np.int64))
        total += reward
        assert done.tolist() == [t == 2] * 2
        assert [i["TimeLimit.truncated"] for i in infos] == [t == 2] * 2
    for i, info in enumerate(infos):
        assert info["episode"]["l"] == 3
        assert info["episode"]["r"] == pytest.approx(total[i])
        last = info["terminal_observation"]
        assert last.shape == obs[i].shape and last[0] == 3  # three turns played
        assert obs[i][0] == 0  # and the env started anew
    # the next episode is counted from its own start
    for _ in range(3):
        _, _, done, infos = venv.step(np.zeros(2, np.int64))
    assert done.all() and [i["episode"]["l"] for i in infos] == [3, 3]


def test_sb3_vec_env_game_end_is_no_truncation_even_at_the_step_limit() -> None:
    needs_module("stable_baselines3", SB3)
    from agents.learn.sb3 import GuildVecEnv

    venv = GuildVecEnv(2, seed=0, seat=0, turns=6, max_episode_steps=6)
    venv.reset()
    for t in range(6):
        _, _, done, infos = venv.step(np.zeros(2, np.int64))
        assert done.tolist() == [t == 5] * 2
    assert [i["TimeLimit.truncated"] for i in infos] == [False, False]
    assert [i["episode"]["l"] for i in infos] == [6, 6]


# --- the text observation space of a large town --------------------------------------------------

def _largest_town(path: Path) -> Path:
    """A world file at the loader's limits: 64 rooms of 16 exits, 32 goods, 64 keepers trading
    every good, names of 40 characters, the largest pack."""
    rnd = random.Random(1)

    def word(n: int, cap: bool = True) -> str:
        w = "".join(rnd.choice(string.ascii_lowercase) for _ in range(n))
        return w.capitalize() if cap else w

    rooms = [{"name": word(40), "x": i % 8 * 14, "y": i // 8 * 14, "dark": i % 5 == 0,
              "exits": sorted({(i + d) % 64 for d in [*range(1, 9), *range(-8, 0)]}),
              "desc": ("A " + " ".join(word(8, False) for _ in range(40)))[:300]}
             for i in range(64)]
    goods = [{"name": word(40, False), "plural": word(40, False),
              "value": rnd.randint(1, 1000)} for _ in range(32)]
    keepers = [{"name": word(40), "room": i, "trade": list(range(32)), "opening": [12] * 32}
               for i in range(64)]
    path.write_text(json.dumps({"rooms": rooms, "goods": goods, "keepers": keepers,
                                "quest_items": [0, 1, 2, 3], "guild": 0, "turns": 14,
                                "carry_limit": 999}))
    return path


class _Talker:
    """An opponent that waits and says as much as a seat may say."""

    def act(self, game, seat):
        return types.SimpleNamespace(action="I wait.", say="Hear ye " + "lorem ipsum " * 20)


def test_a_large_towns_text_view_lies_in_its_space(tmp_path: Path) -> None:
    world, _ = sim.load_world(_largest_town(tmp_path / "town.json"))
    env = GuildEnv(world=world, text_mode=True, seat=0, turns=100,
                   opponents=[_Talker() for _ in range(5)])
    env.reset(seed=0)
    game = env.game
    snap = game.snapshot()
    room = snap["cogs"][0]["room"]
    snap["rooms"][room] = [5] * world.n_goods  # every good on the ground, and in the pack
    snap["cogs"][0]["items"] = [1] * world.n_goods
    for cog in snap["cogs"]:  # everyone here, to be heard
        cog["room"] = room
    game.restore(snap)
    obs, *_ = env.step("I wait.")
    text = obs["observation_text"]
    assert len(text) > TEXT_VIEW_LENGTH  # longer than the standard town's space holds
    assert env.observation_space.contains(obs)
    assert len(text) <= text_view_bound(world) == env.observation_space[
        "observation_text"].max_length


def test_the_standard_towns_text_space_is_unchanged() -> None:
    space = GuildEnv(text_mode=True).observation_space["observation_text"]
    assert space.max_length == TEXT_VIEW_LENGTH == 60_000
    assert text_view_bound(sim.STANDARD_TOWN) < TEXT_VIEW_LENGTH
    penv = sim.parallel_env(text_mode=True)
    assert penv.observation_space("seat_0")["observation_text"].max_length == TEXT_VIEW_LENGTH


# --- seeds, actions and agents: ValueErrors that name them ---------------------------------------

def test_guild_env_reset_takes_a_numpy_seed_and_refuses_a_negative_one() -> None:
    env, twin = gym.make("guild/Guild-v0", seat=0), gym.make("guild/Guild-v0", seat=0)
    obs, _ = env.reset(seed=np.int64(3))
    assert _same(obs, twin.reset(seed=3)[0])
    with pytest.raises(ValueError, match="seed must be an int >= 0 or None; got -1"):
        env.reset(seed=-1)
    # the refused reset changed nothing: the episode goes on as the twin's
    assert _same(env.step(0)[0], twin.step(0)[0])
    sync = gym.make_vec("guild/Guild-v0", num_envs=2, vectorization_mode="sync", seat=0)
    batched = gym.make_vec("guild/Guild-v0", num_envs=2, vectorization_mode="vector_entry_point",
                           seat=0)
    seeds = [np.int64(3), np.int64(4)]
    assert _same(sync.reset(seed=seeds)[0], batched.reset(seed=seeds)[0])


def test_a_structured_action_is_one_index() -> None:
    env, twin = GuildEnv(seat=0), GuildEnv(seat=0)
    env.reset(seed=0)
    twin.reset(seed=0)
    for bad in (np.array([1, 2]), np.array([], np.int64)):
        with pytest.raises(ValueError, match=rf"^action must be one int index; got an array of "
                                             rf"shape \({bad.size},\)$"):
            env.step(bad)
    assert _same(env.step(np.array([[0]]))[0], twin.step(0)[0])  # one index, as its array


def test_parallel_step_and_action_masks_name_what_is_wrong() -> None:
    penv, twin = sim.parallel_env(seed=0), sim.parallel_env(seed=0)
    penv.reset()
    twin.reset()
    for bad in (None, [0] * 6, 0):
        with pytest.raises(ValueError, match=r"^actions must be a dict of an action per agent "
                                             r"\(seat_0\.\.seat_5\); got the "):
            penv.step(bad)
    for bad in ("seat_9", 0, None):
        with pytest.raises(ValueError, match=r"agent must be one of seat_0\.\.seat_5; "
                                             rf"got {bad!r}$"):
            penv.action_masks(bad)
    assert np.array_equal(penv.action_masks("seat_3"), twin.action_masks("seat_3"))
    actions = dict.fromkeys(penv.possible_agents, 0)
    assert all(_same(a, b) for a, b in zip(penv.step(actions)[0].values(),
                                           twin.step(actions)[0].values()))
