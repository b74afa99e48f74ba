"""Benchmarks: ``python -m bench [--quick]`` prints ``<name>: <value> <unit>`` lines
(docs/api.md §6).

Batched figures are at N = 4096 episodes in lockstep (the compiled kernels of ``sim.batched``);
``_vs_original`` compares with the compiled original on this machine class (``bench``: 701
episodes/s replaying recorded sentences, i.e. 58,884 seat-steps/s; 695 on its baseline workload).
``train_steps_per_s`` is the whole loop of ``guild train`` (collection and learning, CPU, the
default network; ``bench/train.py``), ``train_engine_share`` the part of it spent in the engine.

Speed lives here, not in timed tests.  Figures depend on the machine; the README records the
ones measured on the project's 2-core machine class.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from bench import ORIGINAL_BASELINE_EPISODES_PER_S, ORIGINAL_SEAT_STEPS_PER_S
from bench.workloads import (
    SEAT_STEPS,
    bench_baselines,
    bench_gym,
    bench_parallel,
    bench_parse,
    bench_sentences,
    bench_structured,
    bench_structured_live,
)
from sim import native


def bench_league(episodes: int, policies: tuple[str, ...] = ("factor", "magpie"),
                 trust: bool = False) -> float | None:
    """League episodes/s: factor vs magpie (or ``policies``), replays written, 2 worker
    processes."""
    if importlib.util.find_spec("league") is None:
        return None
    import contextlib
    import io

    from league import LeagueOptions, run_league

    opts = LeagueOptions(policies=policies, episodes=episodes, out=_league_folder(), seed=1,
                         public_draw=True, workers=2, trust=trust)
    start = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):
        run_league(opts)
    return episodes / (time.perf_counter() - start)


_LEAGUES: list[str] = []  # the one folder of this process's bench leagues


def _league_folder() -> str:
    """A new folder for one bench league, inside one that goes when the bench ends.

    A bench league leaves tens of MB of replays, and on a file system mounted with ``discard``
    creating files is slow for a while after a large deletion: deleting each league's folder at
    once would make the next league's figure (and every later round's, with ``--rounds``)
    measure the last cleanup rather than the league.
    """
    if not _LEAGUES:
        _LEAGUES.append(tempfile.mkdtemp(prefix="guild-bench-"))
        atexit.register(shutil.rmtree, _LEAGUES[0], True)
    return tempfile.mkdtemp(dir=_LEAGUES[0])


def bench_feasibility() -> float | None:
    if importlib.util.find_spec("feasibility") is None:
        return None
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "feasibility"], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def _league_episodes(secs: float) -> int:
    """The bench leagues' size: 1,000 episodes, 120 with ``--quick``."""
    return 1000 if secs >= 5 else 120


def _league_figure(secs: float) -> float | None:
    return bench_league(_league_episodes(secs))


def bench_apart(n: int, name: str) -> tuple[float, float] | None:
    """League episodes/s of ``bench.policies.NAME`` against factor: in sandboxed seat
    processes, and in the league's process (``--trust``)."""
    fast = (f"bench.policies:{name}", "factor")
    apart, trusted = bench_league(n, fast), bench_league(n, fast, trust=True)
    return None if apart is None or trusted is None else (apart, trusted)


def _isolated_ratio(secs: float) -> float | None:
    """League episodes/s with the Waiter in sandboxed seat processes over the same in-process."""
    got = bench_apart(_league_episodes(secs), "Waiter")
    return None if got is None else got[0] / got[1]


def bench_sandbox_start() -> tuple[float, float] | None:
    """Seconds to a first answer from a sandboxed seat: cold (bubblewrap and the zygote start)
    and warm (a seat forked from the running zygote, in namespaces of its own)."""
    if importlib.util.find_spec("league") is None:
        return None
    from league.apart import sandbox
    from league.apart.isolated import close_all
    from league.core.episode import Settings, league_policy
    from sim import Game, GameConfig

    if sandbox.problem() is not None:
        return None
    settings = Settings(policies=("bench.policies:Waiter",))
    times = []
    for _ in range(2):
        game = Game(GameConfig(seed=len(times)))
        start = time.perf_counter()
        policy = league_policy("bench.policies:Waiter", settings)
        policy.reset(len(times))
        policy.act(game, 0)
        times.append(time.perf_counter() - start)
        policy._restart()  # the next one forks a new seat
    close_all()
    return times[0], times[1]


# The figures ``--only`` can run alone: name -> (measure(seconds), unit, decimals).
FIGURES: dict[str, tuple[Callable[[float], float | None], str, int]] = {
    "scalar_structured_episodes_per_s": (bench_structured, "episodes/s", 1),
    "scalar_structured_live_episodes_per_s": (bench_structured_live, "episodes/s", 1),
    "scalar_sentence_episodes_per_s": (bench_sentences, "episodes/s", 1),
    "parse_sentences_per_s": (bench_parse, "sentences/s", 0),
    "baseline_episodes_per_s": (bench_baselines, "episodes/s", 1),
    "gym_steps_per_s": (bench_gym, "steps/s", 0),
    "parallel_joint_steps_per_s": (bench_parallel, "joint-steps/s", 0),
    "league_episodes_per_s": (_league_figure, "episodes/s", 1),
    "league_isolated_vs_trusted": (_isolated_ratio, "x", 2),
}


def _value(name: str, value: float) -> str:
    """``value`` with figure ``name``'s decimals and unit."""
    unit, decimals = FIGURES[name][1:]
    return f"{value:.{decimals}f} {unit}"


def _line(name: str, value: float) -> str:
    return f"{name}: {_value(name, value)}"


def _only_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--only", choices=sorted(FIGURES), action="append",
                    help="run only this figure (repeatable)")
    ap.add_argument("--rounds", type=int, default=1, metavar="N",
                    help="with --only: run the figures N times, round-robin, and print each "
                         "one's median (the range goes to stderr); for shared machines whose "
                         "speed drifts between minutes")
    ap.add_argument("--no-parse-memo", action="store_true",
                    help="turn the engine's cross-episode parse memo off "
                         "(sim.game.PARSE_MEMO; also GUILD_PARSE_MEMO=0)")


def _only(args: argparse.Namespace, secs: float) -> bool:
    """Apply ``--no-parse-memo``; run the ``--only`` figures and say whether that was all."""
    if args.no_parse_memo:
        import sim.game

        sim.game.PARSE_MEMO = False
    names = list(dict.fromkeys(args.only or ()))
    values: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name in names:
            value = FIGURES[name][0](secs)
            if value is not None:  # None: its package is not installed
                values[name].append(value)
    for name, got in values.items():
        if got:
            print(_line(name, statistics.median(got)))
            if len(got) > 1:
                print(f"{name}: {_value(name, min(got))} to {_value(name, max(got))} over "
                      f"{len(got)} rounds", file=sys.stderr)
    return bool(names)


def _builds() -> str:
    """Which compiled groups run (stderr's first line): the figures depend on it."""
    groups = [("the rules", native.active, "sim.native")]
    if importlib.util.find_spec("agents") is not None:
        import agents
        groups.append(("the baselines", agents.baselines.native.active, "agents.baselines.native"))
    return "bench: " + "; ".join(
        f"{name} run " + (f"compiled (mypyc; {where})" if on else
                          "as pure Python (GUILD_PURE=1, a stale or no compiled build)")
        for name, on, where in groups)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="about 1 s per figure (< 60 s)")
    _only_options(ap)
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1; got {args.rounds}")
    if args.rounds > 1 and not args.only:
        ap.error("--rounds needs --only (the figures to repeat)")
    secs = 1.0 if args.quick else 5.0
    print(_builds(), file=sys.stderr)
    if _only(args, secs):
        return 0
    eps = bench_structured(secs)
    print(_line("scalar_structured_episodes_per_s", eps))
    print(f"scalar_structured_seat_steps_per_s: {eps * SEAT_STEPS:.0f} seat-steps/s")
    print(f"scalar_structured_vs_original: {eps * SEAT_STEPS / ORIGINAL_SEAT_STEPS_PER_S:.2f} x")
    print(_line("scalar_structured_live_episodes_per_s", bench_structured_live(secs)))
    eps = bench_sentences(secs)
    print(_line("scalar_sentence_episodes_per_s", eps))
    print(f"scalar_sentence_seat_steps_per_s: {eps * SEAT_STEPS:.0f} seat-steps/s")
    print(_line("parse_sentences_per_s", bench_parse(secs)))
    eps = bench_baselines(secs)
    if eps is not None:
        print(_line("baseline_episodes_per_s", eps))
        print(f"baseline_vs_original: {eps / ORIGINAL_BASELINE_EPISODES_PER_S:.2f} x")
    steps = bench_gym(secs)
    if steps is not None:
        print(_line("gym_steps_per_s", steps))
    print(_line("parallel_joint_steps_per_s", bench_parallel(secs)))
    # The leagues before training: a league of our baselines forks its workers from this
    # process, and after the train bench (torch loaded, a network trained) they start from a
    # heavier process and run slower.
    n = _league_episodes(secs)
    rate = bench_league(n)
    if rate is not None:
        print(_line("league_episodes_per_s", rate))
        # a policy that answers at once, and one that reads its observation first, vs factor
        for label, name in (("", "Waiter"), ("_observing", "Observer")):
            got = bench_apart(n, name)
            if got is None:  # the league package is there (rate above), so it is not
                continue
            apart, trusted = got
            print(f"league_isolated{label}_episodes_per_s: {apart:.1f} episodes/s")
            print(f"league_trusted{label}_episodes_per_s: {trusted:.1f} episodes/s")
            print(f"league_isolated{label}_vs_trusted: {apart / trusted:.2f} x")
        start = bench_sandbox_start()
        if start is not None:
            print(f"sandbox_seat_cold_start_s: {start[0]:.3f} s")
            print(f"sandbox_seat_warm_start_s: {start[1]:.3f} s")
    from bench import batched

    n = 4096
    engine = batched.bench_engine(secs, n)
    full = batched.bench_full(secs, n)
    print(f"batched_engine_seat_steps_per_s: {engine:.0f} seat-steps/s")
    print(f"batched_engine_vs_original: {engine / ORIGINAL_SEAT_STEPS_PER_S:.1f} x")
    print(f"batched_full_seat_steps_per_s: {full:.0f} seat-steps/s")
    print(f"batched_full_vs_original: {full / ORIGINAL_SEAT_STEPS_PER_S:.1f} x")
    print(f"batched_vector_env_steps_per_s: {batched.bench_vector_env(secs, n):.0f} steps/s")
    from bench import train

    figures = train.bench_train(2.0 if args.quick else 20.0)
    if figures is not None:  # nothing without torch
        print(f"train_steps_per_s: {figures[0]:.0f} steps/s")
        print(f"train_engine_share: {100 * figures[1]:.0f} %")
    gate = bench_feasibility()
    if gate is not None:
        print(f"feasibility_gate_s: {gate:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
