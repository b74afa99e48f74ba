"""Policies for the guild game: the interface, the original baselines, a random player.

``Factor`` and ``Magpie`` reproduce the original scripted baselines exactly (RULES §21,
SENTENCES §21); ``RandomPolicy`` plays uniformly over the legal structured actions;
``make_policy`` builds any of them (or ``"module.path:Name"``) from a spec; ``play_episode``
plays a whole episode from a config and six policies.
"""

from .baselines import Factor, Magpie
from .policy import BUILTIN, Policy, is_scripted, make_policy, play_episode
from .random_policy import RandomPolicy, legal_intents
from .view import BaselineView, SeatView

__all__ = [
    "BUILTIN", "BaselineView", "Factor", "Magpie", "Policy", "RandomPolicy", "SeatView",
    "is_scripted", "legal_intents", "make_policy", "play_episode",
]
