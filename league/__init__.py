"""Leagues of the guild game: run many episodes fairly, rank policies, replay and verify.

``guild league`` (``league.cli``) runs a whole league (``league.tournament``): duplicate-style
groups of six seat rotations (``league.lineups``), each episode played with its faults falling
back (to waiting, or ``factor``) and its time bounded (``league.episode``), every finished
episode written durably and resumed (``league.store``, ``league.atomic``), on worker processes
or Ray (``league.backends``), ranked by mean score with a bootstrap interval
(``league.ladder``), and every replay re-derived on ``guild verify`` (``league.verify``). The
other commands: ``guild view`` (``league.html_viewer``), ``guild play`` (``league.terminal``),
``guild train`` (``league.train``, running ``agents.training``) and ``guild export-sft``
(``league.export_sft``).
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
