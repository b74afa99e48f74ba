"""Policies for the guild game: the interface, the original baselines, a random player.

``Factor`` and ``Magpie`` reproduce the original scripted baselines exactly (RULES §21,
SENTENCES §21); ``RandomPolicy`` plays uniformly over the legal structured actions;
``make_policy`` builds any of them (or ``"module.path:Name"``) from a spec; ``play_episode``
plays a whole episode from a config and six policies; ``LLMPolicy`` plays a seat through an
OpenAI-compatible chat model and answers with a ``Decision`` (sentence, say, notes);
``paired_evaluation`` compares a policy with factor, seat by seat, on the same games.
"""

from .baselines import Factor, Magpie
from .evaluation import PairedResult, paired_evaluation
from .llm import LLMPolicy
from .policy import (
    Decision,
    Policy,
    as_decision,
    decide_turn,
    is_scripted,
    make_policy,
    play_episode,
)
from .random_policy import RandomPolicy, legal_intents
from .seat_view import BaselineView, SeatView

__all__ = [
    "BaselineView", "Decision", "Factor", "LLMPolicy", "Magpie", "PairedResult", "Policy",
    "RandomPolicy", "SeatView", "as_decision", "decide_turn", "is_scripted", "legal_intents",
    "make_policy", "paired_evaluation", "play_episode",
]
