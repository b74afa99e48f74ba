"""Imported by the workers' fork server (``league.procs.workers``): one short episode of our
baselines.

A fresh process fills per-town caches on its first episode (the baselines' phrasebook and
phrases, the parser's memo), which makes that episode slower than the rest. Played once here,
before the fork server forks the workers, every worker starts with them filled. The caches are
memos of pure functions, so no episode's result can depend on them. Importing this module
anywhere else only costs that episode; nothing it raises may stop the fork server, so nothing
is raised.
"""

from __future__ import annotations

import logging

from league.core.episode import BASELINES, Settings, play
from league.core.lineups import episode_spec
from sim.rules.world import MIN_TURNS


def warm() -> None:
    try:
        play(episode_spec(BASELINES, 0, 0), Settings(policies=BASELINES, turns=MIN_TURNS))
    except Exception:  # a broken engine shows in the league's own episodes, not here
        logging.getLogger(__name__).debug("warm-up episode failed", exc_info=True)


warm()
