"""What ``guild train`` leaves in ``OUT``: checkpoints, ``curve.csv``, ``curve.png`` and the
TensorBoard log.

A checkpoint (``OUT/checkpoint.pt``) is written atomically (``agents.learn.ppo.atomic_save``: a
temporary file, then ``os.replace``), so a run killed at any moment, even by SIGKILL, leaves
the previous checkpoint whole; it is read back like a model file, since it is as untrusted:
a regular file of at most ``MAX_MODEL_BYTES``, its zip directory bounded before anything is
unpacked (``agents.learn.ppo.check_archive``), then ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import math
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.learn.ppo import (
    MAX_MODEL_BYTES,
    ModelError,
    atomic_save,
    atomic_write,
    check_archive,
    load_error,
)
from agents.learn.train_options import TENSORBOARD
from sim.codec.action_table import TABLE_VERSION

CHECKPOINT_NAME = "checkpoint.pt"
CHECKPOINT_FORMAT = "guild-ppo-checkpoint"
CURVE_COLUMNS = ("steps", "seconds", "mean_score", "episodes", "entropy", "approx_kl")
CHECKPOINT_KEYS = ("format", "table_version", "run", "learner", "curve", "seconds", "before")


class CheckpointError(ValueError):
    """``--resume`` found no checkpoint, or one it cannot continue from."""


def save_checkpoint(out: Path, record: dict) -> None:
    """Write ``OUT/checkpoint.pt`` atomically (``record`` holds :data:`CHECKPOINT_KEYS`)."""
    atomic_save({"format": CHECKPOINT_FORMAT, "table_version": TABLE_VERSION, **record},
                out / CHECKPOINT_NAME)


def no_checkpoint(out: Path) -> str:
    """What ``--resume`` says when ``out`` holds no checkpoint."""
    return f"--resume: no checkpoint {str(out / CHECKPOINT_NAME)!r} to continue from"


def load_checkpoint(out: Path) -> dict:
    """The checkpoint of the run in ``out``, checked; :class:`CheckpointError` otherwise."""
    import torch

    path = out / CHECKPOINT_NAME
    if not path.is_file():
        raise CheckpointError(no_checkpoint(out))
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise CheckpointError(f"--resume: checkpoint {str(path)!r} is not a regular "
                                      "file")
            if st.st_size > MAX_MODEL_BYTES:
                raise CheckpointError(f"--resume: checkpoint {str(path)!r} is larger than "
                                      f"{MAX_MODEL_BYTES >> 20} MB ({st.st_size:,} bytes): not "
                                      "a checkpoint of this trainer")
            check_archive(f, path, kind="checkpoint")  # from its zip directory, unpacked: none
            f.seek(0)
            data = torch.load(f, map_location="cpu", weights_only=True)
    except CheckpointError:
        raise
    except ModelError as e:
        raise CheckpointError(f"--resume: {e}") from None
    except Exception as e:  # truncated, foreign, or pickled code weights_only refuses
        raise CheckpointError(f"--resume: checkpoint {str(path)!r} is corrupt or not a "
                              f"checkpoint ({load_error(e)})") from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"--resume: {str(path)!r} is not a guild training checkpoint")
    missing = [k for k in CHECKPOINT_KEYS if k not in data]
    if missing:
        raise CheckpointError(f"--resume: checkpoint {str(path)!r} lacks {missing}")
    if data["table_version"] != TABLE_VERSION:
        raise CheckpointError(f"--resume: checkpoint {str(path)!r} is of action table version "
                              f"{data['table_version']!r}; this game's is {TABLE_VERSION}")
    return data


def write_curve(path: Path, curve: Sequence[Sequence[float]]) -> None:
    text = io.StringIO(newline="")
    w = csv.writer(text)
    w.writerow(CURVE_COLUMNS)
    w.writerows(curve)
    write_text(path, text.getvalue())


def write_text(path: Path, text: str) -> None:
    """Write ``path`` atomically (:func:`agents.learn.ppo.atomic_write`), as UTF-8."""
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def plot_curve(path: Path, curve: Sequence[Sequence[float]], factor: float,
               trained: float) -> None:
    """The training lineups' mean score per update, with the held-out means of factor and
    of the trained model in the same seats. Raises ImportError without matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    if curve:
        ax.plot([c[0] for c in curve], [c[2] for c in curve], color="tab:blue", lw=1,
                label="training episodes (mean per update)")
    if not math.isnan(factor):
        ax.axhline(factor, ls="--", color="tab:green", label=f"factor (held-out) {factor:+.2f}")
    if not math.isnan(trained):
        ax.axhline(trained, color="tab:red", label=f"trained (held-out) {trained:+.2f}")
    ax.set_xlabel("environment steps (learning seats)")
    ax.set_ylabel("final score")
    ax.set_title("PPO on the batched guild engine")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# The evaluation's figures logged as eval/<name> (agents.learn.evaluation: the paired difference
# with factor, its 95% interval, the model's mean score and factor's in the same seats).
EVAL_SCALARS = ("diff", "low", "high", "mean", "baseline_mean")


class Board:
    """TensorBoard scalars in ``OUT/tb`` when the ``tensorboard`` package is importable."""

    def __init__(self, out: Path, start_step: int) -> None:
        self.writer: Any = None
        if importlib.util.find_spec("tensorboard") is not None:
            from torch.utils.tensorboard import SummaryWriter

            # purge_step: a resumed run drops what the killed one logged past its checkpoint
            # (the checkpoint's own step stays: the update that reached it is in the run)
            self.writer = SummaryWriter(str(out / TENSORBOARD),
                                        purge_step=start_step + 1 if start_step else None)

    @property
    def enabled(self) -> bool:
        return self.writer is not None

    def add(self, step: int, figures: dict[str, float]) -> None:
        if self.writer is not None:
            for name, value in figures.items():
                self.writer.add_scalar(name, value, step)

    def add_evaluation(self, step: int, evaluation: dict) -> None:
        """The paired evaluation's figures (:data:`EVAL_SCALARS`) at the step it measured."""
        self.add(step, {f"eval/{name}": evaluation[name] for name in EVAL_SCALARS})

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
