"""Small misbehaving policies for the league tests (importable as ``faulty_policies:Name``)."""

from __future__ import annotations

import json
import os
import time

from sim import Game, Intent

WAIT = "I wait and watch the road."


class Raiser:
    """Raises on every decision."""

    def act(self, game: Game, seat: int) -> str:
        raise RuntimeError("boom")


class Shouter:
    """Raises with terminal escapes and a line of its own in the message (clear the screen,
    retitle the window, forge a verdict)."""

    def act(self, game: Game, seat: int) -> str:
        raise RuntimeError("\x1b[2J\x1b[H\x1b]0;owned\x07\nverify: OK, all episodes verify")


class Garbage:
    """Returns something that is neither a sentence nor an Intent."""

    def act(self, game: Game, seat: int) -> object:
        return 42


class BadIntent:
    """Returns an Intent naming a room that does not exist (the rules refuse it)."""

    def act(self, game: Game, seat: int) -> Intent:
        return Intent("move", to_room=99)


class Sleeper:
    """Sleeps far past any decision timeout, and tries to swallow the interruption."""

    def act(self, game: Game, seat: int) -> str:
        try:
            time.sleep(30)
        except Exception:
            pass
        return WAIT


class BadReset:
    """Its ``reset`` raises; its act would be fine."""

    def reset(self, seed: int | None = None) -> None:
        raise ValueError("cannot reset")

    def act(self, game: Game, seat: int) -> str:
        return WAIT


class Slow:
    """A well-behaved but slow policy: waits ``GUILD_TEST_SLOW`` seconds (default 0.01)."""

    def act(self, game: Game, seat: int) -> str:
        time.sleep(float(os.environ.get("GUILD_TEST_SLOW", "0.01")))
        return WAIT


class Exiter:
    """Ends its process outright (as crashed C code would) on turn 1."""

    def act(self, game: Game, seat: int) -> str:
        if game.turn == 1:
            os._exit(3)
        return WAIT


class Unbuildable:
    """Cannot even be constructed."""

    def __init__(self) -> None:
        raise RuntimeError("no model file")

    def act(self, game: Game, seat: int) -> str:
        return WAIT


class BadRecords:
    """Plays fine, but its ``take_records`` (the replay's ``llm`` log) raises."""

    def act(self, game: Game, seat: int) -> str:
        return WAIT

    def take_records(self) -> list[dict]:
        raise RuntimeError("lost the log")


class Waiter:
    """A well-behaved policy that only ever waits (what a failing seat plays by default)."""

    def act(self, game: Game, seat: int) -> str:
        return WAIT


class DeepRaiser:
    """Fails inside the standard library (``json``), called from its own code."""

    def act(self, game: Game, seat: int) -> str:
        return json.loads("{not json")


class LongRaiser:
    """Raises with a message longer than any fault note."""

    def act(self, game: Game, seat: int) -> str:
        raise KeyError("k" * 500)


class Reader:
    """Well-behaved and quick, but reads its view each turn: a seat apart asks the league for
    it (a ``need``), and waits until the league serves it."""

    def act(self, game: Game, seat: int) -> str:
        legal = game.admissible
        legal = legal() if callable(legal) else legal
        return legal[-1] if legal else WAIT
