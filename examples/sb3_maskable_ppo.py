"""Stable-Baselines3 MaskablePPO on the batched engine, for users who prefer SB3 to our trainer.

    python examples/sb3_maskable_ppo.py --steps 200000 --out runs/sb3

``agents.learn.sb3.GuildVecEnv`` is ``guild/Guild-v0``'s batched twin as an SB3 ``VecEnv`` (one
learning seat, batched factor and magpie opponents, masks through ``action_masks()``).  The
model is saved with the action table's version (``agents.learn.sb3.write_meta``), so the spec
``sb3:OUT/model.zip`` plays it in leagues and, batched, in ``guild evaluate``; SB3's training
log is ``OUT/progress.csv``.  Our own trainer
(``guild train``, ``agents.learn.ppo_learn``) is several times faster on the same engine; the README
says by how much.

Needs the ``train`` extra: ``pip install torch==2.13.0`` (CPU), then ``pip install -e '.[train]'``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

try:
    import agents  # noqa: F401
except ImportError:  # run from a checkout that is not installed: the repo root is one up
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agents.learn.evaluation import MAX_SEEDS
from agents.learn.train_options import MAX_ENVS
from sim.commandline import OneLineParser

MAX_SEED = 2 ** 32 - 1  # SB3 seeds numpy's global generator, which takes no more
RUN_FILES = ("model.zip", "progress.csv")  # what a run writes in --out, refused if there


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="sb3_maskable_ppo.py", description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200_000, help="environment steps (200000)")
    ap.add_argument("--envs", type=int, default=64, help="episodes in lockstep (64)")
    ap.add_argument("--seed", type=int, default=0, help="seed (0)")
    ap.add_argument("--out", default="runs/sb3", help="output directory (runs/sb3)")
    ap.add_argument("--eval-seeds", type=int, default=100, help="held-out seeds to evaluate on")
    args = ap.parse_args(argv)
    if args.steps < 1:
        ap.error(f"--steps must be positive; got {args.steps}")
    if not 1 <= args.envs <= MAX_ENVS:  # guild train's bound: each env holds its episodes
        ap.error(f"--envs must be 1 to {MAX_ENVS:,}; got {args.envs}")
    if not 0 <= args.seed <= MAX_SEED:
        ap.error(f"--seed must be 0 to {MAX_SEED:,}; got {args.seed}")
    if not 2 <= args.eval_seeds <= MAX_SEEDS:
        ap.error(f"--eval-seeds must be 2 to {MAX_SEEDS:,}; got {args.eval_seeds}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        ap.error(f"--out {args.out!r} exists and is not a folder")
    kept = [name for name in RUN_FILES if (out / name).exists()]
    if kept:  # a finished run's model is not overwritten by a new one
        ap.error(f"--out {args.out!r} holds another run ({', '.join(kept)}): choose a new "
                 "--out, or delete its files")
    # torch and SB3 load only now, so a mistyped flag is refused at once
    from agents.learn.sb3 import GuildVecEnv

    if GuildVecEnv is None:
        print("needs the 'train' extra: pip install -e '.[train]'", file=sys.stderr)
        return 2
    try:
        spec, result, steps = train(args, out)
    except (ValueError, OSError) as e:  # a bad town, a full disk, an unwritable --out
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"sb3_maskable_ppo.py: {why}", file=sys.stderr)
        return 2
    print(f"after {steps} steps: mean score {result.mean:+.3f}, factor "
          f"{result.baseline_mean:+.3f}, paired difference {result.diff:+.3f} "
          f"[{result.low:+.3f}, {result.high:+.3f}] ({result.engine} engine)")
    print(spec)
    return 0


def train(args: argparse.Namespace, out: Path) -> tuple[str, Any, int]:
    """Train, save and evaluate: the model's spec, its paired evaluation and the steps taken."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import configure

    from agents.learn.evaluation import paired_evaluation
    from agents.learn.sb3 import GuildVecEnv, Log1pFeatures, write_meta

    out.mkdir(parents=True, exist_ok=True)  # before the work: a bad --out fails at once
    venv = GuildVecEnv(args.envs, seed=args.seed)
    model = MaskablePPO("MlpPolicy", venv, n_steps=max(16, 2048 // args.envs), batch_size=256,
                        n_epochs=4, seed=args.seed, device="cpu", verbose=0,
                        policy_kwargs=dict(features_extractor_class=Log1pFeatures,
                                           net_arch=dict(pi=[128, 128], vf=[128, 128])))
    # The training log (progress.csv: rewards, losses) beside the model, not in a new
    # temporary folder of SB3's own each run.
    model.set_logger(configure(str(out), ["csv"]))
    model.learn(total_timesteps=args.steps)
    path = out / "model.zip"
    model.save(path)
    write_meta(path, {"env": "guild/Guild-v0", "flatten": True, "steps": args.steps,
                      "seed": args.seed})
    spec = f"sb3:{path.resolve()}"
    result = paired_evaluation(spec, seeds=range(100_000, 100_000 + args.eval_seeds))
    return spec, result, model.num_timesteps


if __name__ == "__main__":
    raise SystemExit(main())
