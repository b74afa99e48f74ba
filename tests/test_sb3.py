"""Stable-Baselines3 on the batched engine: ``agents.learn.sb3.GuildVecEnv`` feeds MaskablePPO, and
a saved model plays the same indices scalar (``sb3:``) and batched (``make_batched_policy``)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import needs_module, unlogged

from agents import make_policy
from sim import Game, GameConfig, TurnError
from sim.batched.engine import BatchedGuild
from sim.codec.action_table import legal_mask, to_intent
from sim.envs.vector import make_batched_policy

ROOT = Path(__file__).resolve().parent.parent


_TRAINED: list[bytes] = []  # the zip _trained saved, once per test process


def _trained(tmp_path: Path) -> Path:
    """A tiny MaskablePPO model trained through GuildVecEnv and saved as the example does.

    It is trained once per test process, and each caller gets a copy of its zip in
    ``tmp_path``: the tests that use it (here and in the files that import this function) only
    read the model, and a copy of it is the model itself.
    """
    sb3_contrib = needs_module("sb3_contrib", "torch==2.13.0, then pip install -e '.[train]'")
    path = tmp_path / "model.zip"
    if _TRAINED:
        path.write_bytes(_TRAINED[0])
        return path
    from agents.learn.sb3 import GuildVecEnv, Log1pFeatures, write_meta

    venv = GuildVecEnv(8, seed=3)
    model = sb3_contrib.MaskablePPO("MlpPolicy", venv, n_steps=28, batch_size=56, n_epochs=1,
                                    seed=3, device="cpu",
                                    policy_kwargs=dict(features_extractor_class=Log1pFeatures,
                                                       net_arch=[32]))
    unlogged(model).learn(total_timesteps=8 * 28)
    assert model.num_timesteps == 224
    model.save(path)
    write_meta(path, {"flatten": True})
    _TRAINED.append(path.read_bytes())
    return path


def test_vec_env_reports_episodes_with_their_final_scores(tmp_path: Path) -> None:
    needs_module("sb3_contrib", "torch==2.13.0, then pip install -e '.[train]'")
    from agents.learn.sb3 import GuildVecEnv

    venv = GuildVecEnv(4, seed=1, turns=6)
    obs = venv.reset()
    assert obs.shape == (4, venv.observation_space.shape[0])
    total = np.zeros(4)
    for t in range(6):
        masks = venv.action_masks()
        assert masks.shape == (4, venv.action_space.n) and masks[:, 0].all()  # wait is legal
        obs, reward, done, infos = venv.step(np.zeros(4, np.int64))
        total += reward
        assert done.all() == (t == 5)
    # the return of an episode is its final score (dense score-delta reward)
    assert np.allclose([info["episode"]["r"] for info in infos], total, atol=1e-5)
    assert all(info["terminal_observation"].shape == obs[0].shape for info in infos)


def test_sb3_model_plays_the_same_index_scalar_and_batched(tmp_path: Path) -> None:
    path = _trained(tmp_path)
    scalar = make_policy(f"sb3:{path}")
    batched = make_batched_policy(f"sb3:{path}")
    compared = 0
    for seed in (0, 1):
        game = Game(GameConfig(seed=seed))
        while not game.done:
            e = BatchedGuild(1)
            e.load_games([game])
            picks = batched.act(e, np.zeros(6, np.int64), np.arange(6))
            joint = [scalar.act(game, seat) for seat in range(6)]
            for seat in range(6):  # the scalar choice is the batched index, decoded
                assert legal_mask(game.state, seat)[int(picks[seat])]
                assert to_intent(int(picks[seat]), game.world, seat,
                                 game.state.room[seat]) == joint[seat]
                compared += 1
            game.play_turn(joint)
    assert compared == 2 * 14 * 6
    for bad in (-1, 6, True):  # -1 played seat 5's move, True seat 1's
        with pytest.raises(TurnError, match="seat must be an int"):
            scalar.act(Game(GameConfig(seed=0)), bad)


def test_guild_evaluate_runs_an_sb3_model_batched(tmp_path: Path) -> None:
    """``guild evaluate`` loads the zip in a sandbox (tests/test_sb3_sandbox.py), so it needs
    one (a skip here where bubblewrap cannot start, a failure in CI)."""
    from league.apart import sandbox

    sandbox.require()
    path = _trained(tmp_path)
    out = subprocess.run([sys.executable, "-m", "league", "evaluate", f"sb3:{path}",
                          "--seeds", "0..3"], capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "batched engine" in out.stdout and "24 games per side" in out.stdout


def test_example_script_trains_saves_and_evaluates(tmp_path: Path) -> None:
    needs_module("sb3_contrib", "torch==2.13.0, then pip install -e '.[train]'")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "sb3_maskable_ppo.py"),
                          "--steps", "256", "--envs", "8", "--eval-seeds", "2",
                          "--out", str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TMPDIR": str(scratch)})
    assert out.returncode == 0, out.stderr
    spec = out.stdout.strip().splitlines()[-1]
    assert spec == f"sb3:{(tmp_path / 'run' / 'model.zip').resolve()}"
    assert "(batched engine)" in out.stdout
    # SB3's log is the run's, beside the model: one rollout of 8 x 256 steps, no stray folder.
    with open(tmp_path / "run" / "progress.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["time/total_timesteps"]) for r in rows] == [2048]
    assert not [p.name for p in scratch.iterdir() if p.name.startswith("SB3-")]
