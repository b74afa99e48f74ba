"""Training speed: the whole loop of ``guild train`` (collection and learning), and the same
engine under sb3-contrib's MaskablePPO for comparison.

``bench_train`` runs :class:`agents.learn.ppo_learn.Learner` with ``guild train``'s defaults
(network, envs, torch threads) on the CPU and returns learning-seat steps per second and the share
of the time spent in the engine (the step, the batched baselines, the encoder) rather than the
learner (the network's forward passes during collection, advantages, the PPO epochs).

``bench_sb3`` trains MaskablePPO through ``agents.learn.sb3.GuildVecEnv``, a Stable-Baselines3
``VecEnv`` over ``sim.envs.vector.GuildVectorEnv`` (the same batched engine and opponents), with the
network and settings the old sb3 trainer used, or ours with ``small=True``.

``python -m bench.train [--quick] [--sb3]`` prints the figures (the sb3 ones on request: they
need sb3-contrib and take longer).
"""

from __future__ import annotations

import argparse
import importlib.util
import time


def bench_train(seconds: float) -> tuple[float, float] | None:
    """``(steps/s, engine share)`` of the whole training loop on CPU; None without torch."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    from agents.learn.ppo_learn import Learner
    from agents.learn.training import TrainOptions

    o = TrainOptions()
    threads = torch.get_num_threads()
    torch.set_num_threads(o.threads)
    try:
        learner = Learner(o.ppo, o.envs, False, 0, "cpu")
        learner.update()  # warm up: kernels loaded, buffers allocated
        steps, engine, learn = learner.steps, learner.engine_seconds, learner.learner_seconds
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            learner.update()
        elapsed = time.perf_counter() - start
    finally:
        torch.set_num_threads(threads)
    in_engine = learner.engine_seconds - engine
    return (learner.steps - steps) / elapsed, in_engine / (in_engine + learner.learner_seconds
                                                           - learn)


def bench_sb3(seconds: float, envs: int = 64, small: bool = False) -> float | None:
    """Steps/s of MaskablePPO learning on the batched engine; None without sb3-contrib."""
    if importlib.util.find_spec("sb3_contrib") is None:
        return None
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import Logger

    from agents.learn.sb3 import GuildVecEnv, Log1pFeatures

    arch = dict(pi=[128, 128], vf=[128, 128]) if small else dict(pi=[256, 256], vf=[256, 256])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    venv = GuildVecEnv(envs)
    model = MaskablePPO("MlpPolicy", venv, n_steps=max(64, 2048 // envs), batch_size=256,
                        n_epochs=5, learning_rate=3e-4, seed=0, device="cpu", verbose=0,
                        policy_kwargs=dict(features_extractor_class=Log1pFeatures,
                                           net_arch=arch))

    class Stop(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.start = time.perf_counter()

        def _on_step(self) -> bool:
            return time.perf_counter() - self.start < seconds

    model.set_logger(Logger(folder=None, output_formats=[]))  # no SB3-<time> folder in /tmp
    try:
        model.learn(total_timesteps=10 ** 9, callback=(stop := Stop()))
    finally:
        torch.set_num_threads(threads)
    return model.num_timesteps / (time.perf_counter() - stop.start)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.train", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="about 3 s per figure")
    ap.add_argument("--sb3", action="store_true", help="also MaskablePPO on the same engine")
    args = ap.parse_args(argv)
    secs = 3.0 if args.quick else 20.0
    ours = bench_train(secs)
    if ours is not None:
        print(f"train_steps_per_s: {ours[0]:.0f} steps/s")
        print(f"train_engine_share: {100 * ours[1]:.0f} %")
    if args.sb3:
        for envs in (8, 64):
            for small in (False, True):
                rate = bench_sb3(secs, envs, small)
                if rate is not None:
                    net = "128x128" if small else "256x256"
                    print(f"train_sb3_steps_per_s: {rate:.0f} steps/s (envs={envs}, {net})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
