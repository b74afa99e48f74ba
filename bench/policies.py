"""A policy that answers at once, to measure what running a seat apart costs a league."""

from __future__ import annotations

WAIT = "I wait and watch the road."


class Waiter:
    """Waits every turn: the fastest possible answer, in-process or in a seat process."""

    def act(self, game: object, seat: int) -> str:
        return WAIT


class Observer:
    """Reads its own observation every turn, then waits: what running apart costs a policy
    that looks at its seat (the observation is built, sent and parsed in its process)."""

    def act(self, game: object, seat: int) -> str:
        obs = game.observe(seat)  # type: ignore[attr-defined]
        return WAIT if obs["coin"] >= 0 else "I wait."
