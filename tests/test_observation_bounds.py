"""Every observation lies inside its space, whatever the other seats write and whatever a world
file's prices (RULES §17's numeric view, ``sim.codec.encode.layout``).

A trade offer's coin is any amount a sentence names (RULES §9.6 takes ``max(0, coin)``, the
parser and ``Intent`` stop at int64's largest), so its bound is ``OFFER_COIN_HIGH`` and it is
shown as it is (a model reads what it was trained and recorded on); a world file's base values
reach 1000, whose asks run past 1000, so the shop's bound is the town's dearest ask there.  The
scalar encoders (``encode_flat``, ``encode_view``) and the batched kernel
(``Face.observe_all``) agree on both.
"""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from towns import write_town

import sim  # noqa: F401  (registers the environments)
from sim import Game, GameConfig, load_world
from sim.codec.action_table import legal_mask
from sim.codec.encode import (
    OFFER_COIN_HIGH,
    PRICE_HIGH,
    encode_flat,
    encode_view,
    layout,
    price_high,
    slices,
)
from sim.envs.face import SeatFace
from sim.rules.world import STANDARD_TOWN


class Haggler:
    """Buys one unit, then offers it for ``price`` coin to seat 0 whenever they share a room
    (``anyone``: to the first seat it shares a room with)."""

    def __init__(self, price: int, anyone: bool = False) -> None:
        self.price, self.anyone = price, anyone

    def reset(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def act(self, game: Game, seat: int) -> str:
        me, learner = game.observe(seat), game.aliases[0]
        if self.anyone and me["room"]["cogs"]:
            learner = me["room"]["cogs"][0]
        if me["items"] and learner in me["room"]["cogs"]:
            return f"I offer {learner} 1 {me['items'][0]['item']} for {self.price} coins."
        keeper = me["room"].get("npc")
        if keeper and not me["items"]:
            for g in keeper["goods"]:
                if g["stock"] and g["ask"] <= me["coin"]:
                    return f"I buy 1 {g['item']} from {keeper['name']}."
        return f"I walk to {self.rng.choice(me['room']['exits'])['name']}."


def _offer_coins(obs: dict, world) -> np.ndarray:
    """The coin column of each rel's offer in a dict observation."""
    width = 4 + world.n_goods
    return obs["offers"].reshape(5, width)[:, -1]


@pytest.mark.parametrize("price", [5000, 10 ** 9, 2 ** 63 - 1])
def test_an_offer_of_any_price_is_shown_as_it_is_inside_the_space(price) -> None:
    env = gym.make("guild/Guild-v0", seat=0, opponents=[Haggler(price) for _ in range(5)])
    seen = 0
    for episode in range(6):
        obs, _ = env.reset(seed=episode)
        done = False
        while not done:
            obs, _, done, _, _ = env.step(0)
            assert obs in env.observation_space
            game = env.unwrapped.game
            offered = game.observe(0)["offers"]
            coins = _offer_coins(obs, game.world)
            assert sorted(coins[coins > 0]) == sorted(np.float32(o["coin"]) for o in offered)
            seen += sum(o["coin"] == price for o in offered)
    assert seen > 0, "no offer was ever made: the test shows nothing"


def test_the_scalar_and_batched_encoders_show_a_dear_offer_alike() -> None:
    """``encode_flat``, ``encode_view`` (a seat apart) and the compiled kernel give the same
    rows for a game where seats offer each other a price past every shop's."""
    game = Game(GameConfig(seed=3))
    policies = [Haggler(123_456, anyone=True) for _ in range(6)]
    for seat, p in enumerate(policies):
        p.reset(seat)
    face = SeatFace(STANDARD_TOWN, text_mode=False, flat=True)
    offers = 0
    while not game.done:
        rows = face._encode_rows(game)
        for seat in range(6):
            flat = encode_flat(game.state, seat)
            legal = [i for i, ok in enumerate(legal_mask(game.state, seat)) if ok]
            assert np.array_equal(rows[seat], flat)
            assert np.array_equal(encode_view(game.observe(seat), game.world, game.aliases,
                                              legal), flat)
            assert flat.max(initial=0) <= 2 ** 31 - 1
        offers += sum(o.coin == 123_456 for o in game.state.offers)
        game.play_turn([p.act(game, s) for s, p in enumerate(policies)])
    assert offers > 0


def _dear_town(tmp_path, value: int):
    """The standard town with every good's base value at ``value``."""
    goods = ("hide", "nails", "rope", "salt", "lamp", "relic")
    text = "".join(f"[goods.{good}]\nvalue = {value}\n" for good in goods)
    return load_world(write_town(tmp_path, text, "dear.toml"))[0]


@settings(max_examples=8, deadline=None)
@given(value=st.integers(900, 1000))
def test_a_dear_town_widens_the_prices_bound(tmp_path_factory, value) -> None:
    world = _dear_town(tmp_path_factory.mktemp("dear"), value)
    high = price_high(world)
    assert high == max(PRICE_HIGH, max(max(t) for t in world.ask_table))
    for key in ("shop", "hint"):
        assert layout(world)[key][1] == high
    assert layout(world)["offers"][1] == OFFER_COIN_HIGH
    assert price_high(STANDARD_TOWN) == PRICE_HIGH  # the standard town's space is unchanged


def test_random_play_in_the_dearest_town_stays_inside_its_space(tmp_path) -> None:
    world = _dear_town(tmp_path, 1000)
    assert price_high(world) > PRICE_HIGH
    rng = np.random.default_rng(0)
    for flatten in (False, True):
        env = gym.make("guild/Guild-v0", seat=0, world=world, opponents=["random"] * 5,
                       flatten=flatten)
        top = 0.0
        for episode in range(15):
            obs, info = env.reset(seed=episode)
            done = False
            while not done:
                legal = np.flatnonzero(info["action_mask"])
                obs, _, done, _, info = env.step(int(rng.choice(legal)))
                assert obs in env.observation_space
                shop = obs[slice(*slices(world)["shop"])] if flatten else obs["shop"]
                top = max(top, float(shop.max()))
        assert top > PRICE_HIGH, "no ask above 1000 was shown: the test shows nothing"
