"""Policies whose ``reset`` is slow or never returns: fixtures of ``test_seat_reset_limits.py``.

A reset that stalls must cost only its own seat: it is charged a ``timeout``, its fallback plays
its episode, and the other seats play every turn, within the episode's deadline.  Every policy
here acts as the league's default fallback does (it waits), so a league where it fails and one
where :class:`Waits` plays its seats are the same games.  Nothing here imports anything but the
standard library, so the sandbox shows all it needs.
"""

from __future__ import annotations

import os
import time

WAIT = "I wait and watch the road."
STALL = 10_000.0  # seconds: as good as forever
SLOW = 1.0        # seconds: a slow reset that still answers within its limit
SLOWER = 3.0      # seconds: longer than a tight --episode-timeout leaves beyond the turns
MARK = "GUILD_TEST_RESET_MARK"  # a file: a seat whose reset finds it stalls (set by a test)


class Waits:
    """The control: waits every turn, resets at once."""

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, game: object, seat: int) -> str:
        return WAIT


class StallsReset(Waits):
    """Its reset never returns: it would turn every table it sits at into a no-contest."""

    def reset(self, seed: int | None = None) -> None:
        time.sleep(STALL)


class SlowReset(Waits):
    """Its reset takes ``SLOW`` seconds: slow, but within any start allowance of the tests."""

    def reset(self, seed: int | None = None) -> None:
        time.sleep(SLOW)


class SlowerReset(Waits):
    """Its reset takes ``SLOWER`` seconds, as a policy that loads a large model may."""

    def reset(self, seed: int | None = None) -> None:
        time.sleep(SLOWER)


class CrashesThenStallsReset(Waits):
    """Resets at once the first time, then crashes its process on every decision; the reset of
    each process started afresh for it (the file ``$GUILD_TEST_RESET_MARK`` exists by then)
    stalls, so a restart costs whatever time the league allows a restart's reset."""

    def reset(self, seed: int | None = None) -> None:
        mark = os.environ[MARK]
        if os.path.exists(mark):
            time.sleep(STALL)
        with open(mark, "w", encoding="utf-8") as f:
            f.write(str(os.getpid()))

    def act(self, game: object, seat: int) -> str:
        os._exit(3)
