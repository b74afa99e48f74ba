"""Leagues of the guild game: run many episodes fairly, rank policies, replay and verify.

The wings, lowest first (each imports only from those below it, checked by import-linter):
``league.seat`` (what runs inside a sandbox: the seat host, its zygote and their protocol),
``league.apart`` (running other people's policies: the sandbox, seat processes, bounded calls),
``league.core`` (episodes, lineups and the secret draw, the store, the ladder, signing and
verification), ``league.procs`` (worker processes, Ray, lifelines), ``league.tournament``
(a whole league), and ``league.cli`` (the ``guild`` command line and its tools for people).

The names below load on first use, so that a seat in a sandbox imports ``league.seat`` without
the rest of the league.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> (module, attribute)
_EXPORTS = {
    "RESULT_KEYS": ("league.core.episode", "RESULT_KEYS"),
    "Settings": ("league.core.episode", "Settings"),
    "play_episode_spec": ("league.core.episode", "play"),
    "LeagueError": ("league.core.errors", "LeagueError"),
    "build_ladder": ("league.core.ladder", "build"),
    "ladder_table": ("league.core.ladder", "table"),
    "EpisodeSpec": ("league.core.lineups", "EpisodeSpec"),
    "episode_spec": ("league.core.lineups", "episode_spec"),
    "group_draw": ("league.core.lineups", "group_draw"),
    "schedule": ("league.core.lineups", "schedule"),
    "LeagueOptions": ("league.tournament", "LeagueOptions"),
    "LeagueRun": ("league.tournament", "LeagueRun"),
    "run_league": ("league.tournament", "run_league"),
    "Report": ("league.core.verify", "Report"),
    "verify_dir": ("league.core.verify", "verify_dir"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'league' has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
