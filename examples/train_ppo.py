"""Train one guild seat with PPO on the batched engine, against factor and magpie, on CPU.

    python examples/train_ppo.py --minutes 10 --seed 0 --out runs/ppo
    guild train --minutes 10 --seed 0 --out runs/ppo          # the same code
    python examples/train_ppo.py --config train.toml --ent-coef 0.01 --out runs/ent

The trainer is ``agents.learn.training`` (read it there: the lineups, the hyperparameters, the
paired evaluation, the files written). It runs our own PPO (``agents.learn.ppo_learn``), several
times the speed of sb3-contrib's MaskablePPO on the same batched engine
(``examples/sb3_maskable_ppo.py`` trains that one). From your own code::

    from agents.learn.ppo_config import PPOConfig
    from agents.learn.training import TrainOptions, train
    summary = train(TrainOptions(out="runs/ppo", minutes=10, ppo=PPOConfig(lr=1e-3)), say=print)
    # summary["policy"] is the spec that plays the model: make_policy(summary["policy"])

Needs torch: ``pip install torch==2.13.0`` (CPU), then ``pip install -e '.[train]'``.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from agents.learn.training import main
except ImportError:  # run from a checkout that is not installed: the repo root is one up
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from agents.learn.training import main

if __name__ == "__main__":
    sys.exit(main())
