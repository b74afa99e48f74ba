"""SB3's conventions, kept by ``agents.learn.sb3``.

``GuildVecEnv`` seeds as SB3's ``VecEnv`` does (a seed is used by the next reset only, later
resets continue the stream of towns) and honours ``indices``; an ``sb3:`` model trained through
Gymnasium's ``FlattenObservation`` (whose columns follow ``spaces.Dict``'s sorted keys, not the
project's flat layout) is fed its own column order, in the game, from a seat's view and batched,
and a flat model of neither order is refused; a stochastic ``sb3:`` policy samples from a
generator of its own, leaving the caller's torch stream alone.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import needs_module, unlogged

from agents import make_policy
from sim import Game, GameConfig
from sim.batched.engine import BatchedGuild
from sim.codec.action_table import to_intent
from sim.codec.encode import encode_flat, split
from sim.envs.vector import GuildVectorEnv, make_batched_policy
from sim.rules.world import STANDARD_TOWN

sb3_contrib = needs_module("sb3_contrib", "torch==2.13.0, then pip install -e '.[train]'")

import gymnasium as gym  # noqa: E402
import torch  # noqa: E402
from gymnasium import spaces  # noqa: E402
from gymnasium.wrappers import FlattenObservation, NormalizeObservation  # noqa: E402
from sb3_contrib.common.maskable.utils import get_action_masks  # noqa: E402

import sim  # noqa: E402,F401  (registers guild/Guild-v0)
from agents.learn import sb3  # noqa: E402
from agents.learn.sb3 import GuildVecEnv, SB3Policy  # noqa: E402
from league.seat.host import SeatGame  # noqa: E402
from league.seat.protocol import act_request  # noqa: E402


def _towns(venv: GuildVecEnv) -> list[int]:
    return venv.env.engine.seed.tolist()


# --- GuildVecEnv: seeds -----------------------------------------------------------------------

def test_a_seed_is_used_by_the_next_reset_only() -> None:
    venv = GuildVecEnv(4, seed=0)
    assert venv.seed(999) == [999, 1000, 1001, 1002]
    venv.reset()
    first = _towns(venv)
    venv.reset()
    second = _towns(venv)
    assert second != first  # the stream goes on: not the same towns again
    ref = GuildVectorEnv(4, flatten=True, autoreset_mode="same_step")
    ref.reset(seed=999)
    assert first == ref.engine.seed.tolist()
    ref.reset()
    assert second == ref.engine.seed.tolist()


def test_the_constructors_seed_is_the_first_resets() -> None:
    seeded = GuildVecEnv(3, seed=5)
    later = GuildVecEnv(3, seed=None)
    later.seed(5)
    seeded.reset()
    later.reset()
    assert _towns(seeded) == _towns(later)
    seeded.reset()
    later.reset()
    assert _towns(seeded) == _towns(later) and _towns(seeded) != _towns(GuildVecEnv(3, seed=5))


@pytest.mark.parametrize("bad", [-1, 1.5, True, "0"])
def test_a_bad_seed_is_named(bad) -> None:
    with pytest.raises(ValueError, match="seed must be a non-negative int or None"):
        GuildVecEnv(2, seed=bad)


def test_maskable_ppo_seed_chooses_the_towns_and_each_learn_meets_new_ones() -> None:
    def towns_learned(seed: int) -> list[list[int]]:
        venv = GuildVecEnv(2, seed=0, turns=6)
        seen: list[list[int]] = []
        reset = venv.reset

        def recorded() -> np.ndarray:
            obs = reset()
            seen.append(_towns(venv))
            return obs

        venv.reset = recorded  # type: ignore[method-assign]
        model = unlogged(sb3_contrib.MaskablePPO(
            "MlpPolicy", venv, n_steps=8, batch_size=16, n_epochs=1, seed=seed, device="cpu",
            policy_kwargs=dict(net_arch=[8])))
        model.learn(16)
        model.learn(16)  # reset_num_timesteps=True: SB3 resets the env again
        return seen

    a, b = towns_learned(1), towns_learned(2)
    assert len(a) == 2 and a[0] != a[1]  # the second learn does not replay the first's towns
    ref = GuildVecEnv(2, seed=1, turns=6)
    ref.reset()
    assert a[0] == _towns(ref)  # MaskablePPO(seed=1) called venv.seed(1)
    assert b[0] != a[0]


# --- GuildVecEnv: indices ---------------------------------------------------------------------

def test_env_method_get_attr_and_set_attr_honour_indices() -> None:
    venv = GuildVecEnv(4, seed=2)
    venv.reset()
    venv.step(np.zeros(4, np.int64))  # rooms differ by now, and so do their masks
    masks = venv.action_masks()
    assert len({m.tobytes() for m in masks}) > 1  # so that the env picked shows
    one = venv.env_method("action_masks", indices=[2])
    assert len(one) == 1 and np.array_equal(one[0], masks[2])
    picked = venv.env_method("action_masks", indices=3)
    assert len(picked) == 1 and np.array_equal(picked[0], masks[3])
    both = venv.env_method("action_masks", indices=[3, 0])
    assert [m.tolist() for m in both] == [masks[3].tolist(), masks[0].tolist()]
    assert np.array_equal(get_action_masks(venv), masks)  # MaskablePPO's call: all envs
    assert venv.get_attr("render_mode", indices=[1, 2]) == [None, None]
    assert venv.env_is_wrapped(gym.Wrapper, indices=[0]) == [False]
    with pytest.raises(ValueError, match=r"indices must be env numbers 0\.\.3; got 4"):
        venv.env_method("action_masks", indices=[0, 4])
    with pytest.raises(ValueError, match="indices must be env numbers"):
        venv.get_attr("render_mode", indices=[-1])
    with pytest.raises(AttributeError, match="'seat' to set"):
        venv.set_attr("seat", 1, indices=[0])
    with pytest.raises(AttributeError, match="no method 'render'"):
        venv.env_method("render", indices=[0])


# --- a model trained through FlattenObservation -----------------------------------------------

@pytest.fixture(scope="module")
def models(tmp_path_factory) -> SimpleNamespace:
    """A tiny MaskablePPO trained through ``FlattenObservation`` (so its choices depend on its
    observation), and untrained ones of the project's flat layout and of normalised vectors."""
    tmp = tmp_path_factory.mktemp("sb3conv")
    env = FlattenObservation(gym.make("guild/Guild-v0", seat=0))
    model = unlogged(sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=128,
                                             n_epochs=1, seed=0, device="cpu",
                                             policy_kwargs=dict(net_arch=[32])))
    model.learn(128)
    wrapped = tmp / "flatten_observation.zip"
    model.save(wrapped)

    def untrained(name: str, venv) -> Path:
        path = tmp / name
        sb3_contrib.MaskablePPO("MlpPolicy", venv, n_steps=8, batch_size=8, device="cpu",
                                policy_kwargs=dict(net_arch=[8])).save(path)
        return path

    return SimpleNamespace(
        env=env, model=model, wrapped=wrapped,
        own=untrained("own.zip", GuildVecEnv(2)),
        normalised=untrained("normalised.zip", NormalizeObservation(
            gym.make("guild/Guild-v0", seat=0, flatten=True))))


def test_the_layouts_differ_and_the_wrapped_order_is_gymnasiums(models) -> None:
    """What the recognition rests on: same width, other bounds, and the columns fed are
    ``gymnasium.spaces.flatten`` of the ``Dict`` observation."""
    own = gym.make("guild/Guild-v0", flatten=True).observation_space
    parts = gym.make("guild/Guild-v0").observation_space
    wrapped = spaces.flatten_space(parts)
    assert own.shape == wrapped.shape and not np.array_equal(own.high, wrapped.high)
    assert sb3.flat_columns("own.zip", SimpleNamespace(observation_space=own),
                            STANDARD_TOWN) is None
    columns = sb3.flat_columns("fo.zip", models.model, STANDARD_TOWN)
    game = Game(GameConfig(seed=3))
    flat = encode_flat(game.state, 2)
    assert np.array_equal(flat[columns], spaces.flatten(parts, split(flat, STANDARD_TOWN)))


def _agreement(models, policy, episodes: int, seat_view: bool = False) -> tuple[int, int]:
    """(turns where ``policy`` chose the model's own act, turns), the model playing seat 0 of
    ``episodes`` games through ``FlattenObservation``; with ``seat_view`` the policy must
    choose it from the seat's view too."""
    env, model = models.env, models.model
    agree = turns = 0
    for ep in range(episodes):
        obs, _ = env.reset(seed=ep)
        done = False
        while not done:
            a, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(),
                                 deterministic=True)
            game = env.unwrapped.game
            chosen = to_intent(int(a), game.world, 0, game.state.room[0])
            same = policy.act(game, 0) == chosen
            if seat_view:
                same = same and policy.act(SeatGame(act_request(game, 0), speech=True), 0) == chosen
            agree += same
            turns += 1
            obs, _, done, _, _ = env.step(int(a))
    return agree, turns


def test_it_plays_its_own_choices_in_the_game_and_from_a_seat_view(models) -> None:
    policy = make_policy(f"sb3:{models.wrapped}")
    assert _agreement(models, policy, 5, seat_view=True) == (70, 70)


def test_it_plays_the_same_index_batched(models) -> None:
    scalar = make_policy(f"sb3:{models.wrapped}")
    batched = make_batched_policy(f"sb3:{models.wrapped}")
    parts = gym.make("guild/Guild-v0").observation_space
    compared = 0
    game = Game(GameConfig(seed=11))
    while not game.done:
        e = BatchedGuild(1)
        e.load_games([game])
        picks = batched.act(e, np.zeros(6, np.int64), np.arange(6))
        for seat in range(6):
            flat = encode_flat(game.state, seat)
            obs = spaces.flatten(parts, split(flat, game.world))
            mask = flat[-e.tables.n_actions:] > 0
            a, _ = models.model.predict(obs, action_masks=mask, deterministic=True)
            assert int(picks[seat]) == int(a)
            compared += 1
        game.play_turn([scalar.act(game, s) for s in range(6)])
    assert compared == 14 * 6


def test_a_flat_model_of_its_own_layout_keeps_it(models) -> None:
    policy = SB3Policy(str(models.own))
    policy.check_world(STANDARD_TOWN)
    assert policy.columns(STANDARD_TOWN) is None
    wrapped = SB3Policy(str(models.wrapped))
    wrapped.check_world(STANDARD_TOWN)
    assert wrapped.columns(STANDARD_TOWN) is not None


def test_a_flat_model_of_neither_layout_is_refused(models) -> None:
    """A model trained on normalised vectors (bounds -inf..inf) would be fed raw ones."""
    path = str(models.normalised)
    policy = make_policy(f"sb3:{path}")
    with pytest.raises(ValueError) as e:
        policy.act(Game(GameConfig(seed=0)), 0)
    assert str(e.value) == (
        f"sb3 model {path!r} observes a flat vector of neither this town's layout "
        "(flatten=True) nor FlattenObservation's: its column 0 is bounded below by -inf, where "
        "both have 0")
    with pytest.raises(ValueError, match="neither this town's layout"):
        SB3Policy(path).check_world(STANDARD_TOWN)
    uneven = _box(np.zeros(460), np.arange(1.0, 461.0))  # one bound per column, not per key
    with pytest.raises(ValueError) as e:
        sb3.check_spaces("m.zip", uneven, STANDARD_TOWN)
    assert str(e.value) == ("sb3 model 'm.zip' observes a flat vector of neither this town's "
                            "layout (flatten=True) nor FlattenObservation's: its bounds vary "
                            "within flatten=True's 'time' (columns 0..1) and within "
                            "FlattenObservation's 'action_mask'")


def test_a_sandboxed_model_reads_its_columns_as_the_model_in_this_process(models) -> None:
    """The description made in the sandbox keeps the flat model's bounds: a
    ``FlattenObservation`` model played from it chooses the model's own actions, and one of
    neither order is refused there too."""
    from conftest import needs

    from league.apart import sandbox
    from league.apart.sb3_load import extract

    why = sandbox.problem()
    needs(why is None, f"a bubblewrap sandbox ({why}; apt-get install bubblewrap)")
    policy = make_policy({"name": f"sb3:{models.wrapped}", "extract": extract})
    assert _agreement(models, policy, 2) == (28, 28)
    assert not isinstance(policy._model().model, sb3_contrib.MaskablePPO)  # rebuilt
    normalised = make_policy({"name": f"sb3:{models.normalised}", "extract": extract})
    with pytest.raises(ValueError, match="neither this town's layout"):
        normalised.check_world(STANDARD_TOWN)


def _box(low: np.ndarray, high: np.ndarray) -> SimpleNamespace:
    return SimpleNamespace(observation_space=spaces.Box(low.astype(np.float32),
                                                        high.astype(np.float32)),
                           action_space=spaces.Discrete(267))


def test_bounds_that_fit_both_orders_are_refused() -> None:
    """Were every key's bound alike, the two orders could not be told apart: refused, not
    guessed."""
    with pytest.raises(ValueError, match=r"'m.zip' observes a flat vector whose bounds fit both "
                                         r"this town's layout \(flatten=True\) and "
                                         "FlattenObservation's"):
        sb3.check_spaces("m.zip", _box(np.zeros(460), np.ones(460)), STANDARD_TOWN)


def test_a_model_of_another_town_of_the_same_shapes_is_read_in_its_order(tmp_path) -> None:
    """Its bounds' values are its town's (a larger pack here), not this one's: the order is
    still told, by which keys' columns share one bound."""
    from towns import write_town

    from sim.envs.face import seat_spaces
    from sim.rules.worldfile import load_world, world_to_dict

    data = world_to_dict(STANDARD_TOWN)
    data["carry_limit"] += 4
    other, _ = load_world(write_town(tmp_path, data))
    own = seat_spaces(other, False, True)[0]
    wrapped = spaces.flatten_space(seat_spaces(other, False, False)[0])
    assert not np.array_equal(own.high, seat_spaces(STANDARD_TOWN, False, True)[0].high)
    assert sb3.flat_columns("own.zip", _box(own.low, own.high), STANDARD_TOWN) is None
    columns = sb3.flat_columns("fo.zip", _box(wrapped.low, wrapped.high), STANDARD_TOWN)
    flat = encode_flat(Game(GameConfig(seed=2)).state, 1)
    parts = gym.make("guild/Guild-v0").observation_space
    assert np.array_equal(flat[columns], spaces.flatten(parts, split(flat, STANDARD_TOWN)))


# --- a stochastic policy's own generator ------------------------------------------------------

def _choices(policy, seed: int) -> list:
    policy.reset(seed)
    game = Game(GameConfig(seed=4))
    out = []
    while not game.done:
        joint = [policy.act(game, s) for s in range(6)]
        out.append(joint)
        game.play_turn(joint)
    return out


def test_a_stochastic_policy_leaves_torchs_stream_alone_and_repeats_per_seed(models) -> None:
    policy = SB3Policy(str(models.wrapped), deterministic=False)
    torch.manual_seed(123)
    expected = torch.rand(4)
    torch.manual_seed(123)
    first = torch.rand(2)
    a = _choices(policy, 7)
    b = _choices(policy, 7)
    rest = torch.rand(2)
    assert torch.equal(torch.cat([first, rest]), expected)  # the caller's draws, undisturbed
    assert a == b  # the same reset seed, the same sampled choices
    assert _choices(policy, 8) != a


def test_a_stochastic_opponent_leaves_the_learners_torch_stream_alone(models) -> None:
    env = gym.make("guild/Guild-v0", seat=0, opponents=[
        {"name": f"sb3:{models.wrapped}", "deterministic": False}] + ["factor"] * 4)
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    drawn = []
    for _ in range(3):
        env.reset(seed=7)
        env.step(0)  # the opponent samples here
        drawn.append(torch.rand(1))
    assert torch.equal(torch.cat(drawn), expected)


def test_a_stochastic_batched_policy_repeats_per_seed_and_leaves_torch_alone(models) -> None:
    policy = make_batched_policy({"name": f"sb3:{models.wrapped}", "deterministic": False})
    e = BatchedGuild(16, seed=1)
    rows, seats = np.arange(16), np.zeros(16, np.int64)
    torch.manual_seed(5)
    expected = torch.rand(1)
    torch.manual_seed(5)
    policy.reset(3)
    a = policy.act(e, rows, seats)
    policy.reset(3)
    b = policy.act(e, rows, seats)
    assert torch.equal(torch.rand(1), expected)
    assert np.array_equal(a, b)
    policy.reset(4)
    assert not np.array_equal(policy.act(e, rows, seats), a)
