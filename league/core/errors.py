"""The league's one error type: a user mistake that the command line turns into exit code 2."""

from __future__ import annotations


class LeagueError(ValueError):
    """Bad options or files (unknown policy, unwritable directory, foreign results file).

    The message is one sentence naming the option or file and the value; ``guild`` prints it on
    one line and exits 2, never with a traceback.
    """
