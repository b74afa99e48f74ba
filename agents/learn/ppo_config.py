"""The hyperparameters of ``guild train``'s PPO and their accepted ranges, importable without
torch (``guild --help`` lists them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from agents.learn.knobs import Knob
from agents.learn.ppo_pool import FIXED_SHARE

MAX_WIDTH = 4096  # a sanity bound on the layers a network (or a model file) may ask for
MAX_LAYERS = 16   # ... and on their number

# The numeric hyperparameters' ranges: the bounds turn typos into errors before anything is
# allocated or trained (a minibatch of one has no spread to normalise its advantages by).
KNOBS: dict[str, Knob] = {
    "episodes": Knob(int, 1, 1024),
    "minibatch": Knob(int, 8, 1 << 24),
    "epochs": Knob(int, 1, 100),
    "lr": Knob(float, 0, 1, open_low=True),
    "gamma": Knob(float, 0, 1),
    "gae_lambda": Knob(float, 0, 1),
    "clip": Knob(float, 0, 1, open_low=True),
    "ent_coef": Knob(float, 0, 1),
    "vf_coef": Knob(float, 0, 10),
    "max_grad_norm": Knob(float, 0, 1000, open_low=True),
    "snapshot_every": Knob(int, 1, 1_000_000),
    "anneal_steps": Knob(int, 0),
    "fixed_share": Knob(float, 0, 1),
}


@dataclass(frozen=True)
class PPOConfig:
    """Hyperparameters, chosen by comparing whole training runs (README, 'Train a policy')."""

    hidden: tuple[int, ...] = (128, 128)
    shared: bool = True
    episodes: int = 1              # whole episodes of every row per update
    minibatch: int = 4096
    epochs: int = 4
    lr: float = 3e-4
    gamma: float = 1.0             # the score counts at the end, undiscounted
    gae_lambda: float = 0.95
    clip: float = 0.2
    ent_coef: float = 0.02         # keeps the policy exploring through a short run
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    snapshot_every: int = 25       # self-play, league: updates between snapshots of the learner
    anneal_steps: int = 0          # lr falls linearly to 0 at this step (0: constant lr)
    fixed_share: float = FIXED_SHARE  # league: the fixed opponents' guaranteed share of seats

    def __post_init__(self) -> None:
        for name, knob in KNOBS.items():
            try:
                knob.check(getattr(self, name))
            except ValueError as e:
                raise ValueError(f"ppo {name} {e}") from None
        check_network(self.network)

    @property
    def network(self) -> dict:
        """The network's shape as a model file records it (``agents.learn.ppo``)."""
        return {"hidden": list(self.hidden), "shared": self.shared}

    def to_dict(self) -> dict:
        """Plain values (checkpoints, summary.json)."""
        return {**asdict(self), "hidden": list(self.hidden)}

    @classmethod
    def from_dict(cls, d: dict) -> PPOConfig:
        return cls(**{**d, "hidden": tuple(d["hidden"])})

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The hyperparameters' names, in the order of the fields."""
        return tuple(f.name for f in fields(cls))


def check_hidden(hidden: Any) -> tuple[int, ...]:
    """The hidden layers' widths, checked (ValueError saying what is accepted)."""
    if (not isinstance(hidden, (list, tuple)) or not 0 < len(hidden) <= MAX_LAYERS or
            not all(type(h) is int and 0 < h <= MAX_WIDTH for h in hidden)):
        raise ValueError(f"must list 1 to {MAX_LAYERS} layer widths from 1 to {MAX_WIDTH:,}; "
                         f"got {hidden!r:.80}")
    return tuple(hidden)


def check_network(network: Any) -> dict:
    """The network config ``{"hidden": [...], "shared": bool}``, checked (ValueError)."""
    if not isinstance(network, Mapping) or set(network) != {"hidden", "shared"}:
        raise ValueError(f"network must be {{'hidden': [...], 'shared': bool}}; got {network!r}")
    try:
        hidden = check_hidden(network["hidden"])
    except ValueError as e:
        raise ValueError(f"network hidden {e}") from None
    if not isinstance(network["shared"], bool):
        raise ValueError(f"network shared must be a bool; got {network['shared']!r}")
    return {"hidden": list(hidden), "shared": network["shared"]}
