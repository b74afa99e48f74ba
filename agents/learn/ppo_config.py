"""The hyperparameters of ``guild train``'s PPO, importable without torch (``guild --help``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


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
    snapshot_every: int = 25       # self-play: updates between snapshots of the learner

    def __post_init__(self) -> None:
        for name in ("episodes", "minibatch", "epochs", "snapshot_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ppo {name} must be a positive whole number; got {value!r}")
        for name in ("lr", "gamma", "gae_lambda", "clip", "ent_coef", "vf_coef",
                     "max_grad_norm"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ValueError(f"ppo {name} must be a number >= 0; got {value!r}")

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
