"""A policy that answers at once, to measure what running a seat apart costs a league."""

from __future__ import annotations

WAIT = "I wait and watch the road."


class Waiter:
    """Waits every turn: the fastest possible answer, in-process or in a seat process."""

    def act(self, game: object, seat: int) -> str:
        return WAIT
