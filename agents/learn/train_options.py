"""What a training run is asked to do (``TrainOptions``, checked when built) and what a
checkpoint keeps of it, below both the command (``agents.learn.training``) and the loop
(``agents.learn.training_loop``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from agents.learn.evaluation import MAX_SEEDS
from agents.learn.ppo_config import PPOConfig

Say = Callable[[str], None]

DEVICES = ("auto", "cpu", "cuda")
EVAL_SEED0 = 100_000
EVAL_OPPONENTS = ("factor", "magpie")
# One torch thread: the network is small, so on a CPU more threads add synchronisation to
# every pass rather than speed, and the engine shares the same cores (README, 'Train a policy').
DEFAULT_THREADS = 1
# Bounds that turn typos into errors before anything is allocated: a row of the engine holds an
# episode's observations (about 26 kB per learning seat, up to six seats in self-play), torch
# crashes (SIGSEGV) asked for 10**8 threads, and the seeds feed numpy and torch generators.
MAX_ENVS = 16_384
MAX_THREADS = 256
MAX_SEED = 2 ** 63 - 1


class TrainingError(ValueError):
    """Training cannot start: a bad option, torch missing, no GPU for ``cuda``, ``--out``
    unusable, or ``--resume`` with no usable checkpoint."""


@dataclass(frozen=True)
class TrainOptions:
    """What :func:`train` does; the defaults are those of ``guild train``."""

    out: str = "runs/train"
    steps: int = 100_000_000
    minutes: float = 10.0
    seed: int = 0
    envs: int = 1024
    device: str = "auto"
    threads: int = DEFAULT_THREADS
    self_play: bool = False
    checkpoint_minutes: float = 2.0
    resume: bool = False
    eval_episodes: int = 500
    plot: bool = True
    ppo: PPOConfig = field(default_factory=PPOConfig)

    def __post_init__(self) -> None:
        for name, low, high in (("steps", 1, None), ("envs", 1, MAX_ENVS),
                                ("threads", 1, MAX_THREADS), ("eval_episodes", 2, MAX_SEEDS),
                                ("seed", 0, MAX_SEED)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low or (
                    high is not None and value > high):
                span = f"from {low:,} to {high:,}" if high else f"of at least {low}"
                raise TrainingError(f"{name} must be a whole number {span}; got {value!r:.40}")
        for name in ("minutes", "checkpoint_minutes"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value < math.inf):
                raise TrainingError(f"{name} must be a positive number; got {value!r}")
        if self.device not in DEVICES:
            raise TrainingError(f"device must be one of {', '.join(DEVICES)}; got "
                                f"{self.device!r}")
        if not isinstance(self.ppo, PPOConfig):
            raise TrainingError(f"ppo must be a PPOConfig; got {type(self.ppo).__name__}")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> TrainOptions:
        """The options parsed by :func:`add_arguments`."""
        return cls(out=args.out, steps=args.steps, minutes=args.minutes, seed=args.seed,
                   envs=args.envs, device=args.device, threads=args.threads,
                   self_play=args.self_play, checkpoint_minutes=args.checkpoint_minutes,
                   resume=args.resume, eval_episodes=args.eval_episodes,
                   plot=not args.no_plot)


def run_options(options: TrainOptions, checkpoint: dict | None, warn: Say) -> TrainOptions:
    """The options a resumed run continues with: the run's own seed, envs, self-play,
    hyperparameters and evaluation seeds (its "before" figures were played on them), a
    different value on the command line is named and ignored."""
    if checkpoint is None:
        return options
    run = checkpoint["run"]
    kept = {"seed": run["seed"], "envs": run["envs"], "self_play": run["self_play"],
            "ppo": PPOConfig.from_dict(run["ppo"]),
            "eval_episodes": checkpoint["before"]["n_seeds"]}
    for name in ("seed", "envs", "self_play", "eval_episodes"):
        if getattr(options, name) != kept[name] and getattr(options, name) != getattr(
                TrainOptions(), name):
            warn(f"train: --resume keeps the run's {name} {kept[name]!r} (not "
                 f"{getattr(options, name)!r})")
    threads = run.get("threads", options.threads)
    if threads != options.threads:  # float sums differ with the thread count
        warn(f"train: the run used {threads} torch threads, this resume {options.threads}: "
             f"the weights will not equal those of an uninterrupted run (--threads {threads})")
    return replace(options, **kept)


def run_record(options: TrainOptions) -> dict:
    """What a checkpoint keeps of the options (plain values)."""
    return {"seed": options.seed, "envs": options.envs, "self_play": options.self_play,
            "threads": options.threads, "ppo": options.ppo.to_dict()}
