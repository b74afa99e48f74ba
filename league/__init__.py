"""Leagues of the guild game: run many episodes fairly, rank policies, replay and verify.

``guild league`` (``league.cli``) plays duplicate-style groups of six seat rotations
(``league.lineups``), falls back to ``factor`` for faulty decisions (``league.episode``), writes
every finished episode durably and resumes (``league.store``), runs on worker processes or Ray
(``league.backends``), ranks by mean score with a bootstrap interval (``league.ladder``) and
re-derives every replay on ``guild verify`` (``league.verify``).
"""

from .episode import RESULT_KEYS, Settings
from .episode import play as play_episode_spec
from .errors import LeagueError
from .ladder import build as build_ladder
from .ladder import table as ladder_table
from .lineups import EpisodeSpec, episode_spec, group_draw, schedule
from .tournament import LeagueOptions, LeagueRun, run_league
from .verify import Report, verify_dir

__all__ = [
    "RESULT_KEYS", "EpisodeSpec", "LeagueError", "LeagueOptions", "LeagueRun", "Report",
    "Settings", "build_ladder", "episode_spec", "group_draw", "ladder_table", "play_episode_spec",
    "run_league", "schedule", "verify_dir",
]
