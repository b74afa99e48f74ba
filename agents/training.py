"""Training one guild seat with sb3-contrib MaskablePPO against the baselines, on CPU.

``guild train`` and ``examples/train_maskable_ppo.py`` both run :func:`main` here, so the
command works from an installed wheel and the two cannot drift apart::

    guild train --minutes 10 --seed 0 --out runs/ppo

One learning seat (drawn per episode, so the model plays any seat) against factor and magpie,
alternating, on ``guild/Guild-v0`` with the flat observation and the dense score-delta reward
(an episode's return is its final score).  Illegal actions are masked.  Training stops at
``--steps`` or after ``--minutes`` of wall time, whichever comes first.

Before and after training it plays the same held-out seeds (100000.. by default, never drawn
for training in practice: training seeds come from a 31-bit generator) in seat 0 against
factor, magpie, factor, magpie, factor, and prints the mean true score of the model and of
``random``, ``magpie`` and ``factor`` in that seat, so the figures compare like with like.

Writes to ``--out``: ``model.zip`` (play it with ``make_policy("sb3:OUT/model.zip")`` or
``guild league --policies sb3:OUT/model.zip,factor,magpie``), ``curve.png`` (training episode
scores against steps, with the baselines' held-out means), ``curve.csv`` and ``summary.json``
(the figures, and under ``"policy"`` the spec that plays the model).

torch, stable-baselines3 and sb3-contrib are the optional ``train`` extra: they are imported
inside the functions that need them, so importing this module (and ``guild --help``) never
needs them. :func:`train` is the library entry point and prints nothing; :func:`run` is the
command around it.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import sim  # noqa: F401  (registers guild/Guild-v0)
from sim import GameConfig
from sim.rules.scoring import score

from .policy import make_policy, play_episode

OPPONENTS = ("factor", "magpie", "factor", "magpie", "factor")
BASELINES = ("random", "magpie", "factor")
EVAL_SEED0 = 100_000
EVAL_SEAT = 0


class _Parser(argparse.ArgumentParser):
    """Report a usage mistake in one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected minutes, got {text!r}") from None
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"expected a positive number of minutes, got {text!r}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options, shared by this script and ``guild train``."""
    p.add_argument("--steps", type=_positive_int, default=1_000_000, metavar="N",
                   help="environment steps at most (1000000; --minutes usually stops first)")
    p.add_argument("--minutes", type=_minutes, default=10.0, metavar="M",
                   help="wall-time budget for training, evaluation excluded (10)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="training seed (0)")
    p.add_argument("--out", default="runs/train", metavar="DIR",
                   help="output directory (runs/train)")
    p.add_argument("--n-envs", type=_positive_int, default=8, metavar="K",
                   help="environments stepped together (8)")
    p.add_argument("--eval-episodes", type=_positive_int, default=60, metavar="E",
                   help=f"held-out seeds {EVAL_SEED0}.. played before and after (60)")
    p.add_argument("--no-plot", action="store_true", help="skip curve.png")
    p.add_argument("--quiet", action="store_true", help="print only the summary lines")


def build_parser(prog: str = "train_maskable_ppo.py") -> argparse.ArgumentParser:
    """The command's parser (``prog`` names it in usage and error lines)."""
    p = _Parser(prog=prog,
                description="Train a guild seat with MaskablePPO against factor and magpie.")
    add_arguments(p)
    return p


# --- evaluation ------------------------------------------------------------------------------
def eval_seeds(n: int) -> list[int]:
    return list(range(EVAL_SEED0, EVAL_SEED0 + n))


def evaluate(policy: Any, seeds: Sequence[int], seat: int = EVAL_SEAT,
             opponents: Sequence[str] = OPPONENTS) -> list[float]:
    """True final scores of ``policy`` in ``seat`` (the others in ``opponents`` order)."""
    out = []
    for s in seeds:
        others = iter(opponents)
        lineup = [policy if k == seat else next(others) for k in range(6)]
        game = play_episode(GameConfig(seed=s), lineup)
        out.append(score(game.state, seat))
    return out


def _mean(xs: Sequence[float]) -> float:
    return statistics.fmean(xs) if xs else float("nan")


# --- training --------------------------------------------------------------------------------
def make_env(seed: int) -> Any:
    """A flat, masked training env; seat drawn per episode, opponents alternate."""
    import gymnasium
    from stable_baselines3.common.monitor import Monitor

    env = gymnasium.make("guild/Guild-v0", seat=None, opponents=list(OPPONENTS), flatten=True,
                         reward="dense")
    env = Monitor(env)
    env.reset(seed=seed)
    return env


def hyperparameters(n_envs: int) -> dict:
    """PPO settings that learn within minutes here (see README, 'Train a policy')."""
    from agents.sb3 import Log1pFeatures

    return dict(n_steps=max(64, 2048 // n_envs), batch_size=256, n_epochs=5,
                learning_rate=3e-4, gamma=0.99, gae_lambda=0.95, ent_coef=0.01,
                clip_range=0.2,
                policy_kwargs=dict(features_extractor_class=Log1pFeatures,
                                   net_arch=dict(pi=[256, 256], vf=[256, 256])))


def _curve_callback(budget_s: float, log: Any) -> Any:
    from stable_baselines3.common.callbacks import BaseCallback

    class Curve(BaseCallback):
        """Records each finished training episode's score and stops at the time budget."""

        def __init__(self) -> None:
            super().__init__()
            self.points: list[tuple[int, float]] = []
            self.started = time.perf_counter()
            self.next_log = 0

        def _on_step(self) -> bool:
            for info in self.locals.get("infos", ()):
                ep = info.get("episode")
                if ep is not None:
                    self.points.append((self.num_timesteps, float(ep["r"])))
            elapsed = time.perf_counter() - self.started
            if self.num_timesteps >= self.next_log and self.points:
                recent = [r for _, r in self.points[-400:]]
                log(f"  {self.num_timesteps:>8} steps  {elapsed:6.0f} s  "
                    f"{self.num_timesteps / max(elapsed, 1e-9):6.0f} steps/s  "
                    f"mean score (last {len(recent)} episodes) {_mean(recent):+.3f}")
                self.next_log += 25_000
            return elapsed < budget_s

    return Curve()


def write_meta(path: Path, meta: dict) -> None:
    """Store how the model observes inside its own zip, so the file is self-describing."""
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("guild.json", json.dumps(meta, indent=1))


def plot_curve(points: list[tuple[int, float]], baselines: dict[str, float], after: float,
               path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    if points:
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        w = max(1, min(400, len(ys) // 20))
        roll = [_mean(ys[max(0, i - w + 1):i + 1]) for i in range(len(ys))]
        ax.plot(xs, ys, ".", ms=1, alpha=0.15, color="tab:blue")
        ax.plot(xs, roll, color="tab:blue", label=f"training episodes (mean of {w})")
    colors = {"random": "tab:gray", "magpie": "tab:orange", "factor": "tab:green"}
    for name, v in baselines.items():
        ax.axhline(v, ls="--", color=colors.get(name, "k"), label=f"{name} (held-out) {v:+.2f}")
    ax.axhline(after, ls="-", color="tab:red", label=f"trained (held-out) {after:+.2f}")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("final score of the learning seat")
    ax.set_title("MaskablePPO vs factor/magpie on guild/Guild-v0")
    ax.set_ylim(-1.5, 4.0)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


class TrainingError(ValueError):
    """Training cannot start: a bad option, the ``train`` extra missing, ``--out`` unusable."""


@dataclass(frozen=True)
class TrainOptions:
    """What :func:`train` does; the defaults are those of ``guild train``."""

    out: str = "runs/train"
    steps: int = 1_000_000
    minutes: float = 10.0
    seed: int = 0
    n_envs: int = 8
    eval_episodes: int = 60
    plot: bool = True

    def __post_init__(self) -> None:
        for name in ("steps", "n_envs", "eval_episodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TrainingError(f"{name} must be a positive whole number; got {value!r}")
        if not (isinstance(self.minutes, (int, float)) and 0 < self.minutes < math.inf):
            raise TrainingError(f"minutes must be a positive number; got {self.minutes!r}")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> TrainOptions:
        """The options parsed by :func:`add_arguments`."""
        return cls(out=args.out, steps=args.steps, minutes=args.minutes, seed=args.seed,
                   n_envs=args.n_envs, eval_episodes=args.eval_episodes, plot=not args.no_plot)


Say = Callable[[str], None]


def _quiet(message: str) -> None:
    """The default for messages nobody asked to see."""


def train(options: TrainOptions, *, say: Say = _quiet, log: Say = _quiet,
          warn: Say = _quiet) -> dict:
    """Train, save, evaluate; return the summary (also written to ``OUT/summary.json``).

    Nothing is printed: ``say`` gets the
    result lines (baselines, before, after), ``log`` the progress lines during training and
    ``warn`` what was left out (no matplotlib, no ``curve.png``). Raises
    :class:`TrainingError` (one line) before any work when the ``train`` extra is missing or
    ``--out`` cannot be a directory.
    """
    try:
        import sb3_contrib  # noqa: F401
        import torch
    except ImportError as e:
        raise TrainingError(f"needs the 'train' extra (pip install torch==2.13.0, then pip "
                            f"install -e '.[train]'): {e}") from None
    out = Path(options.out)
    if out.exists() and not out.is_dir():
        raise TrainingError(f"--out {options.out!r} is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TrainingError(f"cannot create --out {options.out!r} ({e.strerror})") from None
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small MLP: extra threads only contend on a shared 2-core box
    try:
        return _train(options, out, say, log, warn)
    finally:
        torch.set_num_threads(threads)


def _train(o: TrainOptions, out: Path, say: Say, log: Say, warn: Say) -> dict:
    """Baselines, the untrained model, training, saving, the trained model, the files."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    from .sb3 import SB3Policy

    torch.manual_seed(o.seed)  # MaskablePPO(seed=) seeds it again; this covers setup
    seeds = eval_seeds(o.eval_episodes)
    base = {name: _mean(evaluate(name, seeds)) for name in BASELINES}

    venv = DummyVecEnv([lambda k=k: make_env(o.seed * 1000 + k) for k in range(o.n_envs)])
    hp = hyperparameters(o.n_envs)
    model = MaskablePPO("MlpPolicy", venv, seed=o.seed, device="cpu", verbose=0, **hp)
    before = _mean(evaluate(SB3Policy.from_model(model), seeds))
    say(f"held-out seeds {seeds[0]}..{seeds[-1]}, seat {EVAL_SEAT}, opponents "
        f"{','.join(OPPONENTS)}")
    say("baselines: " + ", ".join(f"{k} {v:+.3f}" for k, v in base.items()))
    say(f"before training: mean score {before:+.3f}")

    curve = _curve_callback(o.minutes * 60.0, log)
    t0 = time.perf_counter()
    model.learn(total_timesteps=o.steps, callback=curve, progress_bar=False)
    train_s = time.perf_counter() - t0
    steps = int(model.num_timesteps)

    path = out / "model.zip"
    model.save(path)
    write_meta(path, {"env": "guild/Guild-v0", "flatten": True, "reward": "dense",
                      "opponents": list(OPPONENTS), "seed": o.seed, "steps": steps,
                      "train_seconds": round(train_s, 1), "hyperparameters":
                      {k: v for k, v in hp.items() if k != "policy_kwargs"}})
    trained = make_policy(f"sb3:{path}")  # the saved file, as the league will play it
    after_scores = evaluate(trained, seeds)
    after = _mean(after_scores)
    say(f"after training:  mean score {after:+.3f} ({steps} steps in {train_s:.0f} s, "
        f"{steps / max(train_s, 1e-9):.0f} steps/s)")
    factor = base["factor"]
    share = after / factor if factor > 0 else float("nan")
    say(f"trained / factor: {share:.0%}; model: {path}")

    with open(out / "curve.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["steps", "episode_score"])
        w.writerows(curve.points)
    summary = {"seeds": [seeds[0], seeds[-1]], "seat": EVAL_SEAT, "opponents": list(OPPONENTS),
               "baselines": base, "before": before, "after": after,
               "after_stdev": statistics.pstdev(after_scores), "share_of_factor": share,
               "steps": steps, "train_seconds": round(train_s, 1),
               "steps_per_second": round(steps / max(train_s, 1e-9), 1), "seed": o.seed,
               "n_envs": o.n_envs, "model": str(path),
               "policy": f"sb3:{path.resolve()}"}  # API.md §3: the spec that plays the model
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    if o.plot:
        try:
            plot_curve(curve.points, base, after, out / "curve.png")
        except ImportError:
            warn("train: matplotlib missing; no curve.png (pip install matplotlib)")
    return summary


# --- the command (guild train, examples/train_maskable_ppo.py) ---------------------------------

def run(args: argparse.Namespace) -> int:
    """Train with the parsed options, printing as the command does; returns the exit code."""
    def say(message: str) -> None:
        print(message, flush=True)

    def warn(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        train(TrainOptions.from_args(args), say=say, log=_quiet if args.quiet else say,
              warn=warn)
    except TrainingError as e:
        print(f"train: error: {e}", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None, prog: str = "train_maskable_ppo.py") -> int:
    """Command-line entry point; returns the exit code."""
    try:
        args = build_parser(prog).parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    return run(args)
