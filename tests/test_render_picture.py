"""``render_mode="rgb_array"``: a picture of the seat's view (``sim.envs.picture``), which
Gymnasium's checker, ``RecordVideo`` and Stable-Baselines3's ``make_vec_env`` (it asks for
``rgb_array`` unless told otherwise) take; it shows what ``Game.observe(seat)`` shows and
nothing hidden (RULES §17)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from conftest import needs_module
from gymnasium.utils.env_checker import check_env

import sim  # noqa: F401  (registers the environments)
from sim.codec.action_table import action_table
from sim.envs.picture import HEIGHT, WIDTH, seat_picture
from sim.rules.world import SEATS


def test_the_checker_passes_with_pictures() -> None:
    env = gym.make("guild/Guild-v0", seat=0, render_mode="rgb_array")
    check_env(env.unwrapped)
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (HEIGHT, WIDTH, 3) and frame.dtype == np.uint8


def _move_to(env, room: int) -> int:
    table = action_table(env.unwrapped.world)
    return next(i for i, a in enumerate(table) if a.kind == "move" and a.to_room == room)


def test_the_picture_follows_the_seat_and_its_purse() -> None:
    """Walking to another room moves the outline; buying changes the purse's bar and the
    pack's row: pictures of different views differ, and one view gives one picture."""
    env = gym.make("guild/Guild-v0", seat=0, render_mode="rgb_array", opponents=["random"] * 5)
    _, info = env.reset(seed=1)
    game = env.unwrapped.game
    first = env.render()
    assert np.array_equal(first, seat_picture(game.world, game.observe(0)))
    exit_room = game.observe(0)["room"]["exits"][0]["id"]
    env.step(_move_to(env, exit_room))
    assert game.observe(0)["room"]["id"] == exit_room
    assert not np.array_equal(env.render(), first)


def test_the_picture_hides_what_the_seat_cannot_see() -> None:
    """Other seats' purses and packs, other rooms' floors and shops' stock: changing them
    leaves the picture as it was."""
    env = gym.make("guild/Guild-v0", seat=0, render_mode="rgb_array")
    env.reset(seed=2)
    for _ in range(4):
        env.step(0)
    game = env.unwrapped.game
    before = env.render()
    st = game.state  # changed in place: the env is not stepped again
    here = st.room[0]
    for s in range(1, SEATS):
        st.coin[s] += 37
        st.items[s][0] += 2
    for room, floor in enumerate(st.floor):
        if room != here:
            floor[1] += 3
    for stock in st.stock:
        stock[0] = 0
    assert np.array_equal(env.render(), before)
    st.coin[0] += 37  # the seat's own purse is shown
    assert not np.array_equal(env.render(), before)


def test_stable_baselines3_make_vec_env_takes_the_env() -> None:
    needs_module("stable_baselines3", "pip install -e '.[train]'")
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env("guild/Guild-v0", n_envs=2, seed=0, env_kwargs={"seat": 0})
    obs = venv.reset()
    assert set(obs) >= {"action_mask", "purse"}
    frames = venv.get_images()
    assert len(frames) == 2 and all(f.shape == (HEIGHT, WIDTH, 3) for f in frames)
    venv.close()


@pytest.mark.parametrize("mode", ["ansi", "human", "rgb_array"])
def test_every_listed_mode_renders(mode, capsys) -> None:
    env = gym.make("guild/Guild-v0", seat=0, render_mode=mode)
    env.reset(seed=0)
    got = env.render()
    if mode == "ansi":
        assert isinstance(got, str) and got
    elif mode == "human":
        assert got is None and capsys.readouterr().out
    else:
        assert isinstance(got, np.ndarray)
