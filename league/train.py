"""``guild train``: the MaskablePPO trainer of ``agents.training`` as a ``guild`` command.

The training code lives in the package (so the command works from a wheel); this module only
adds its options to the ``guild`` command line. ``examples/train_maskable_ppo.py`` runs the
same code as a script.
"""

from __future__ import annotations

import argparse

from agents import training


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``guild train`` to the ``guild`` subcommands."""
    p = sub.add_parser("train", help="train a seat with MaskablePPO against factor and magpie "
                       "(needs the 'train' extra)",
                       description="Train one seat with sb3-contrib MaskablePPO against factor "
                       "and magpie; save OUT/model.zip, curve.png, summary.json; print held-out "
                       "mean scores before and after.")
    training.add_arguments(p)
    p.set_defaults(handler=training.run)
