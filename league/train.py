"""``guild train``: the MaskablePPO example (``examples/train_maskable_ppo.py``) as a command.

The example stays a plain script people can read and copy; this module finds it next to the
package (a checkout or an editable install) and runs its ``main`` with the same options, so the
two cannot drift apart.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "train_maskable_ppo.py"


def _load_script() -> ModuleType | None:
    if not SCRIPT.is_file():
        return None
    spec = importlib.util.spec_from_file_location("guild_train_example", SCRIPT)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``guild train`` to the ``guild`` subcommands."""
    p = sub.add_parser("train", help="train a seat with MaskablePPO against factor and magpie "
                       "(needs the 'train' extra)",
                       description="Train one seat with sb3-contrib MaskablePPO against factor "
                       "and magpie; save OUT/model.zip, curve.png, summary.json; print held-out "
                       "mean scores before and after.")
    module = _load_script()
    if module is not None:
        module.add_arguments(p)
    p.set_defaults(handler=_handler, train_module=module)


def _handler(args: argparse.Namespace) -> int:
    module = args.train_module
    if module is None:
        print(f"guild train: error: {SCRIPT} is missing (guild train needs a checkout or an "
              "editable install: pip install -e '.[train]')", file=sys.stderr)
        return 2
    return int(module.run(args))
