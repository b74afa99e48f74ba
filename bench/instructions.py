"""Workloads for instruction counts: ``python -m bench.instructions WORKLOAD EPISODES``.

Wall-clock figures on a shared machine drift more than a change moves them; instruction counts
do not. Run a workload under callgrind for two episode counts and divide the difference, so
that start-up (imports, the town's caches) cancels out::

    PYTHONHASHSEED=0 valgrind --tool=callgrind python -m bench.instructions baseline 60
    PYTHONHASHSEED=0 valgrind --tool=callgrind python -m bench.instructions baseline 20

(per episode: the difference of the two totals over 40). ``baseline`` is
``baseline_episodes_per_s``'s workload (3 factor + 3 magpie, ``agents.play_episode``);
``league`` one league worker's (``league.core.episode.play``, factor against magpie, replays
written to a temporary folder); ``parallel`` and ``gym`` the drivers of
``parallel_joint_steps_per_s`` and ``gym_steps_per_s`` (an episode is 14 steps).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile

from bench.workloads import BASELINE_LINEUP, TURNS


def baseline(episodes: int) -> None:
    import agents
    from sim import GameConfig

    for seed in range(episodes):
        agents.play_episode(GameConfig(seed=seed, turns=TURNS), list(BASELINE_LINEUP))


def league(episodes: int) -> None:
    from league.core.episode import Settings, play
    from league.core.lineups import episode_spec

    folder = tempfile.mkdtemp()
    try:
        settings = Settings(policies=("factor", "magpie"), replay_dir=folder)
        for index in range(episodes):
            play(episode_spec(("factor", "magpie"), 1, index), settings)
    finally:
        shutil.rmtree(folder)


def parallel(episodes: int) -> None:
    import random

    import sim
    from bench.workloads import parallel_episode

    env, rng = sim.parallel_env(), random.Random(0)
    for seed in range(episodes):
        parallel_episode(env, seed, rng)


def gym(episodes: int) -> None:
    import random

    import gymnasium

    import sim  # noqa: F401  (registers guild/Guild-v0)
    from bench.workloads import gym_episode

    env, rng = gymnasium.make("guild/Guild-v0"), random.Random(0)
    for seed in range(episodes):
        gym_episode(env, seed, rng)


WORKLOADS = {"baseline": baseline, "league": league, "parallel": parallel, "gym": gym}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    ap.add_argument("episodes", type=int)
    args = ap.parse_args(argv)
    if not 1 <= args.episodes <= 100_000:
        ap.error(f"episodes must be from 1 to 100000; got {args.episodes}")
    WORKLOADS[args.workload](args.episodes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
