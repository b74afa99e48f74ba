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

try:
    from agents.learn.sb3 import GuildVecEnv, Log1pFeatures, write_meta
except ImportError:  # run from a checkout that is not installed: the repo root is one up
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from agents.learn.sb3 import GuildVecEnv, Log1pFeatures, write_meta


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200_000, help="environment steps (200000)")
    ap.add_argument("--envs", type=int, default=64, help="episodes in lockstep (64)")
    ap.add_argument("--seed", type=int, default=0, help="seed (0)")
    ap.add_argument("--out", default="runs/sb3", help="output directory (runs/sb3)")
    ap.add_argument("--eval-seeds", type=int, default=100, help="held-out seeds to evaluate on")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.envs < 1 or args.eval_seeds < 2:
        ap.error("--steps and --envs must be positive, --eval-seeds at least 2")
    if GuildVecEnv is None:
        print("needs the 'train' extra: pip install -e '.[train]'", file=sys.stderr)
        return 2
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import configure

    from agents.learn.evaluation import paired_evaluation

    venv = GuildVecEnv(args.envs, seed=args.seed)
    model = MaskablePPO("MlpPolicy", venv, n_steps=max(16, 2048 // args.envs), batch_size=256,
                        n_epochs=4, seed=args.seed, device="cpu", verbose=0,
                        policy_kwargs=dict(features_extractor_class=Log1pFeatures,
                                           net_arch=dict(pi=[128, 128], vf=[128, 128])))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
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
    print(f"after {model.num_timesteps} steps: mean score {result.mean:+.3f}, factor "
          f"{result.baseline_mean:+.3f}, paired difference {result.diff:+.3f} "
          f"[{result.low:+.3f}, {result.high:+.3f}] ({result.engine} engine)")
    print(spec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
