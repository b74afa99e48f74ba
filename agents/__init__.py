"""Policies for the guild game: the interface, the original baselines, a random player.

``Factor`` and ``Magpie`` reproduce the original scripted baselines exactly (RULES §21,
SENTENCES §21); ``RandomPolicy`` plays uniformly over the legal structured actions;
``make_policy`` builds any of them (or ``"module.path:Name"``: a class, a factory, or a plain
function of the seat's view) from a spec; ``play_episode`` plays a whole episode from a config
and six policies; ``LLMPolicy`` plays a seat through an OpenAI-compatible chat model and
answers with a ``Decision`` (sentence, say, notes);
``paired_evaluation`` compares a policy with factor, seat by seat, on the same games.
"""

from agents.baselines import Factor, Magpie
from agents.baselines.random_policy import RandomPolicy, legal_intents
from agents.baselines.view import BaselineView, SeatView
from agents.llm import LLMPolicy
from agents.policy import (
    Decision,
    Policy,
    as_decision,
    decide_turn,
    is_scripted,
    make_policy,
    play_episode,
)

__all__ = [
    "BaselineView", "Decision", "Factor", "LLMPolicy", "Magpie", "PairedResult", "Policy",
    "RandomPolicy", "SeatView", "as_decision", "decide_turn", "is_scripted", "legal_intents",
    "make_policy", "paired_evaluation", "play_episode",
]


def __getattr__(name: str):
    """``PairedResult`` and ``paired_evaluation`` need numpy, which is slow to import and which
    playing a seat never needs: their module loads on first use."""
    if name in ("PairedResult", "paired_evaluation"):
        from agents.learn import evaluation

        return getattr(evaluation, name)
    raise AttributeError(f"module 'agents' has no attribute {name!r}")
