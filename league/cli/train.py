"""``guild train``: the PPO trainer of ``agents.learn.training`` as a ``guild`` command.

The training code lives in the package (so the command works from a wheel); this module only
adds its options to the ``guild`` command line, and the sandbox ``sb3:`` opponents are loaded
in unless ``--trust`` (``league.apart.sb3_load.extract``: a zip is a pickle, and ``agents``
cannot reach the league's sandbox). ``examples/train_ppo.py`` runs the same code as a script,
with no sandbox: it plays ``sb3:`` opponents only with ``--trust``.
"""

from __future__ import annotations

import argparse

from agents.learn import training
from league.apart.sb3_load import extract


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``guild train`` to the ``guild`` subcommands."""
    p = sub.add_parser("train", help="train a seat with PPO on the batched engine against "
                       "factor and magpie (needs torch: the 'train' extra)",
                       description="Train one seat with our PPO on the batched engine against "
                       "factor and magpie lineups (or in self-play), its hyperparameters "
                       "from the flags below or a --config TOML file; save OUT/model.pt, "
                       "checkpoint.pt, curve.csv, curve.png, tb/ (TensorBoard), summary.json; "
                       "print the paired evaluation against factor before and after, the "
                       "summary as a JSON line and, last, the policy spec that plays the model.")
    training.add_arguments(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """``guild train``: the trainer, its ``sb3:`` opponents loaded in a sandbox."""
    return training.run(args, extract=extract)
