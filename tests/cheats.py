"""Policies that cheat or attack the league, one per hole found, as fixtures.

Run apart (the default for ``module:Name``), each receives only a view of its own seat; every
cheat below must gain nothing and leave the league and the other seats untouched.
"""

from __future__ import annotations

import copy
import os
import signal
import time

WAIT = "I wait and watch the road."


class PlaysEveryone:
    """Calls ``game.play_turn`` to choose every seat's act."""

    def act(self, game, seat):
        game.play_turn([WAIT] * 6)
        return WAIT


class PatchesFactor:
    """Replaces ``agents.Factor.act`` with waiting, then waits itself."""

    def reset(self, seed=None):
        import agents

        agents.Factor.act = lambda self, game, seat: WAIT

    def act(self, game, seat):
        return WAIT


class Peeks:
    """Reads another seat's commissions and the whole state."""

    def act(self, game, seat):
        game.commissions((seat + 1) % 6)
        return str(game.state.coin)


class Edits:
    """Gives itself coin through the state."""

    def act(self, game, seat):
        game.state.coin[seat] = 10**6
        return WAIT


class LooksAhead:
    """Copies the game to search ahead, then plays the copy's turn."""

    def act(self, game, seat):
        twin = copy.deepcopy(game)
        twin.play_turn([WAIT] * 6)
        return WAIT


class EndsEarly:
    def act(self, game, seat):
        game.end_early()
        return WAIT


class Interrupts:
    def act(self, game, seat):
        raise KeyboardInterrupt


class Exits:
    def act(self, game, seat):
        os._exit(1)


class SleepsPastSignals:
    """Cancels SIGALRM and SIGTERM, then sleeps far past any decision timeout."""

    def act(self, game, seat):
        for sig in (signal.SIGALRM, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        time.sleep(60)
        return WAIT


class Hogs:
    """Allocates far beyond any sane memory cap."""

    def act(self, game, seat):
        hog = bytearray(8 * 1024**3)
        return WAIT + str(len(hog))


class Forks:
    """Forks a child that would live forever, then answers."""

    def act(self, game, seat):
        if os.fork() == 0:
            time.sleep(3600)
            os._exit(0)
        return WAIT


class Floods:
    """Prints megabytes."""

    def act(self, game, seat):
        print("x" * (4 * 1024 * 1024))
        return WAIT


class Waits:
    """Honest and dull: the control for the cheats."""

    def act(self, game, seat):
        return WAIT


class Observes:
    """Honest: reads its own observation each turn (what a seat process learns to send)."""

    def act(self, game, seat):
        return WAIT if game.observe(seat)["turn"] >= 0 else "I rest."
