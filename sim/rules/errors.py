"""The project's errors: one small hierarchy, all ``ValueError`` subclasses.

A failed *intent* is never an exception (it is an outcome with a reason, RULES §9); these are for
caller mistakes only, and each message names the field and the value that is wrong.
"""

from __future__ import annotations


def shown(v: object, width: int = 40) -> str:
    """``repr(v)`` cut to ``width`` characters for an error message; a huge int is described
    by its size (its repr could be megabytes, or refused by Python's digit limit)."""
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 64:
        return f"an integer of about {int(v.bit_length() * 0.30103) + 1} digits"
    try:
        text = repr(v)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not hide the real error
        text = f"<{type(v).__name__}>"
    return text if len(text) <= width else text[:width - 3] + "..."


def printable(text: str) -> str:
    """``text`` (a path, a name a user gave) with every non-printing character, a newline or
    an ANSI escape's ESC, as its escape: it prints as one inert line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class GuildError(ValueError):
    """Base class of every error this project raises on bad input."""


class ConfigError(GuildError):
    """A ``GameConfig`` field is out of range."""


class IntentError(GuildError):
    """A hand-built ``Intent`` names an unknown kind or an id out of range."""


class StateError(GuildError):
    """A state given to ``Game.restore`` is malformed or impossible."""


class TurnError(GuildError):
    """``play_turn`` was called wrongly (wrong number of actions, game already over)."""


class ReplayMismatch(GuildError):  # noqa: N818 - the API name (docs/api.md §1)
    """A recorded episode differs from what the rules produce; names the first differing event."""

    def __init__(self, message: str, index: int = -1) -> None:
        super().__init__(message)
        self.index = index
