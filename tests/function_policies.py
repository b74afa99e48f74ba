"""Policy functions for the tests (importable as ``function_policies:name``): plain functions of
the seat's view, told apart from classes and factories by ``sim.policies.is_policy_function``;
and, beside them, the objects the rule must not take for one."""

from __future__ import annotations

import hashlib
import json
from typing import Any

WAIT = "I wait and watch the road."
SEEN: list[dict] = []  # what ``recording`` was called with, in order (in this process)
ANSWER: Any = WAIT     # what ``answers`` returns: set by a test


def patient(view: dict) -> str:
    return WAIT


def chooser(view: dict) -> str:
    """Hands in or buys when it can, else one of its legal sentences picked by the turn and its
    seat: varied play, decided from the view alone."""
    admissible = view["admissible"]
    for start in ("I hand", "I buy"):
        for sentence in admissible:
            if sentence.startswith(start):
                return sentence
    return admissible[(7 * view["turn"] + view["seat"]) % len(admissible)]


def fingerprint(view: dict) -> str:
    """Waits, saying in its sentence a digest of the whole view (its keys in order): a replay
    then shows what a seat that ran apart was given."""
    digest = hashlib.sha256(json.dumps(view).encode()).hexdigest()[:16]
    return f"{WAIT} view {digest}"


def recording(view: dict) -> str:
    SEEN.append(view)
    return chooser(view)


def answers(view: dict) -> Any:
    return ANSWER


def with_default(view: dict, patience: int = 1) -> str:
    """Still one required argument: a policy function."""
    return WAIT


def two_args(game: Any, seat: int) -> str:
    """``act(game, seat)`` written as a function: neither a policy function nor a factory."""
    return WAIT


def not_a_sentence(view: dict) -> int:
    return 42


def raises(view: dict) -> str:
    raise RuntimeError("boom")


def protocol_answer(view: dict) -> dict:
    """The seat protocol's JSON answer: a program's, not what a policy function returns."""
    return {"action": WAIT, "say": "hello"}


class Patient:
    """A policy class, as ever."""

    def __init__(self, patience: int = 1) -> None:
        self.patience = patience

    def act(self, game: Any, seat: int) -> str:
        return WAIT


def make_patient() -> Patient:
    """A factory: it requires no argument, and builds a policy."""
    return Patient(2)


def keyword_factory(*, patience: int = 1) -> Patient:
    return Patient(patience)


def positional_factory(patience: int) -> Patient:
    """One required argument: a policy function when named bare; a factory given its
    parameter (``{"name": ..., "patience": 3}``), as before."""
    return Patient(patience)
