"""What a saved Stable-Baselines3 model names beyond SB3 itself: the feature extractor its
pickles refer to, and the metadata file the trainer writes into its zip.

Apart from ``agents.learn.sb3`` (playing a model) and ``agents.learn.sb3_extract`` (reading a
zip in a sandbox), which both need them and import each other's work only one way.
"""

from __future__ import annotations

# Written into the model zip by the trainer: how to rebuild the observation, and provenance.
META_NAME = "guild.json"

try:  # the feature extractor must be importable wherever a model is loaded
    import torch
    from gymnasium import spaces
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    class Log1pFeatures(BaseFeaturesExtractor):
        """Flat guild observation squashed with ``log1p``.

        The raw vector mixes 0/1 flags with coin counts in the hundreds; ``log1p`` brings them
        to one scale inside the network, so the model stays a plain zip with no separate
        normalisation statistics to ship (unlike ``VecNormalize``).
        """

        def __init__(self, observation_space: spaces.Box) -> None:
            super().__init__(observation_space, features_dim=int(observation_space.shape[0]))

        def forward(self, observations: torch.Tensor) -> torch.Tensor:
            return torch.log1p(torch.clamp(observations, min=0.0))

except ImportError:  # pragma: no cover - only without the train extra
    Log1pFeatures = None  # type: ignore[assignment,misc]
