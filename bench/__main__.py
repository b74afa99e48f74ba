"""Benchmarks: ``python -m bench [--quick]`` prints ``<name>: <value> <unit>`` lines
(docs/api.md §6).

Batched figures are at N = 4096 episodes in lockstep (the compiled kernels of ``sim.batched``);
``_vs_original`` compares with the compiled original on this machine class (``bench``: 701
episodes/s replaying recorded sentences, i.e. 58,884 seat-steps/s; 695 on its baseline workload).
``train_steps_per_s`` is the whole loop of ``guild train`` (collection and learning, CPU, the
default network; ``bench/train.py``), ``train_engine_share`` the part of it spent in the engine.

``--only NAME`` (repeatable) runs any figure a whole run prints on its own: the same measurement
at the same sizes, the same line (``MEASUREMENTS``).  Figures read from one measurement (a rate
and its ``_vs_original``, say) share its run.

A figure this machine cannot measure (no bubblewrap sandbox for the seats apart, a package not
installed) is not printed: a ``bench: NAME not measured: WHY`` line on stderr says so, and the
other figures go on.  A whole run still exits 0; ``--only`` exits 1 when a figure it asked for
was not measured, so that a comparison never takes a missing figure for a measured one.

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
from dataclasses import dataclass
from typing import Any, NamedTuple

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


class NotMeasuredError(Exception):
    """A measurement this machine cannot run; the message says why (``no bubblewrap sandbox
    (...)``)."""


def _need(package: str) -> None:
    """:class:`NotMeasuredError` unless ``package`` is installed."""
    if importlib.util.find_spec(package) is None:
        raise NotMeasuredError(f"the {package} package is not installed")


def _need_sandbox() -> None:
    """:class:`NotMeasuredError` unless seats apart can run here (``league.apart.sandbox``)."""
    _need("league")
    from league.apart import sandbox

    why = sandbox.problem()
    if why is not None:
        raise NotMeasuredError(f"no bubblewrap sandbox ({why})")


def bench_league(episodes: int, policies: tuple[str, ...] = ("factor", "magpie"),
                 trust: bool = False) -> float:
    """League episodes/s: factor vs magpie (or ``policies``), replays written, 2 worker
    processes."""
    _need("league")
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


def bench_feasibility() -> float:
    """Seconds of a whole ``python -m feasibility`` (the gate at its defaults), a fresh
    process included."""
    _need("feasibility")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "feasibility"], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def bench_apart(n: int, name: str) -> tuple[float | NotMeasuredError, float]:
    """League episodes/s of ``bench.policies.NAME`` against factor: in sandboxed seat
    processes (or the :class:`NotMeasuredError` saying why they cannot run here), and in the
    league's process (``--trust``), which needs no sandbox."""
    fast = (f"bench.policies:{name}", "factor")
    try:
        _need_sandbox()
    except NotMeasuredError as e:
        isolated: float | NotMeasuredError = e
    else:
        isolated = bench_league(n, fast)
    return isolated, bench_league(n, fast, trust=True)


def _known(part: float | NotMeasuredError) -> float:
    """A part of a measurement's result, or the :class:`NotMeasuredError` it holds raised."""
    if isinstance(part, NotMeasuredError):
        raise part
    return part


def bench_sandbox_start() -> tuple[float, float]:
    """Seconds to a first answer from a sandboxed seat: cold (bubblewrap and the zygote start)
    and warm (a seat forked from the running zygote, in namespaces of its own)."""
    _need_sandbox()
    from league.apart.isolated import close_all
    from league.core.episode import Settings, league_policy
    from sim import Game, GameConfig

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


class Sizes(NamedTuple):
    """How much each measurement does: a whole run's, or ``--quick``'s."""

    seconds: float  # each timed loop (the scalar, faces' and batched figures)
    league_episodes: int  # each bench league
    batched_n: int  # the batched figures' episodes in lockstep
    train_seconds: float  # the training loop


FULL = Sizes(seconds=5.0, league_episodes=1000, batched_n=4096, train_seconds=20.0)
QUICK = Sizes(seconds=1.0, league_episodes=120, batched_n=4096, train_seconds=2.0)


def _same(got: float) -> float:
    return got


@dataclass(frozen=True)
class Figure:
    """One printed figure: ``<name>: <of(result)> <unit>``, ``decimals`` after the point."""

    name: str
    unit: str
    decimals: int
    of: Callable[[Any], float] = _same  # the figure from its measurement's result


@dataclass(eq=False)
class Measurement:
    """One timed run and the figures read from its result; ``measure`` raises
    :class:`NotMeasuredError` (or returns None: a package it needs is not installed) when this
    machine cannot run it, and then none of its figures is printed.  A figure's ``of`` raises
    it when only its part of the run could not be made (the sandboxed league of a pair)."""

    measure: Callable[[Sizes], Any]
    figures: tuple[Figure, ...]


def _measured(measurement: Measurement, sizes: Sizes) -> tuple[Any, str | None]:
    """``(result, None)``, or ``(None, why)`` when this machine cannot run the measurement."""
    try:
        got = measurement.measure(sizes)
    except NotMeasuredError as e:
        return None, str(e)
    if got is None:
        return None, "a package it needs is not installed"
    return got, None


def _read(figure: Figure, got: Any) -> tuple[float | None, str | None]:
    """``(value, None)``, or ``(None, why)`` when the figure's part was not measured."""
    try:
        return figure.of(got), None
    except NotMeasuredError as e:
        return None, str(e)


def _not_measured(figure: Figure, why: str) -> None:
    print(f"bench: {figure.name} not measured: {why}", file=sys.stderr, flush=True)


def _seat_steps(episodes_per_s: float) -> float:
    return episodes_per_s * SEAT_STEPS


def _vs_original(seat_steps_per_s: float) -> float:
    return seat_steps_per_s / ORIGINAL_SEAT_STEPS_PER_S


def _apart(label: str, name: str) -> Measurement:
    """A policy apart (sandboxed seats) and trusted (in the league's process) vs factor; the
    trusted figure is measured without a sandbox too."""
    return Measurement(lambda z: bench_apart(z.league_episodes, name), (
        Figure(f"league_isolated{label}_episodes_per_s", "episodes/s", 1,
               lambda got: _known(got[0])),
        Figure(f"league_trusted{label}_episodes_per_s", "episodes/s", 1, lambda got: got[1]),
        Figure(f"league_isolated{label}_vs_trusted", "x", 2,
               lambda got: _known(got[0]) / got[1])))


def _batched_engine(z: Sizes) -> float:
    from bench import batched

    return batched.bench_engine(z.seconds, z.batched_n)


def _batched_full(z: Sizes) -> float:
    from bench import batched

    return batched.bench_full(z.seconds, z.batched_n)


def _batched_vector_env(z: Sizes) -> float:
    from bench import batched

    return batched.bench_vector_env(z.seconds, z.batched_n)


def _train(z: Sizes) -> tuple[float, float] | None:
    from bench import train

    _need("torch")
    return train.bench_train(z.train_seconds)


# Every figure, in the order of a whole run; ``--only`` runs one measurement (once a round for
# all the figures asked of it) and prints the figures asked.  The leagues come before training:
# a league of our baselines forks its workers from this process, and after the train bench
# (torch loaded, a network trained) they start from a heavier process and run slower.
MEASUREMENTS: tuple[Measurement, ...] = (
    Measurement(lambda z: bench_structured(z.seconds), (
        Figure("scalar_structured_episodes_per_s", "episodes/s", 1),
        Figure("scalar_structured_seat_steps_per_s", "seat-steps/s", 0, _seat_steps),
        Figure("scalar_structured_vs_original", "x", 2,
               lambda eps: _vs_original(_seat_steps(eps))))),
    Measurement(lambda z: bench_structured_live(z.seconds), (
        Figure("scalar_structured_live_episodes_per_s", "episodes/s", 1),)),
    Measurement(lambda z: bench_sentences(z.seconds), (
        Figure("scalar_sentence_episodes_per_s", "episodes/s", 1),
        Figure("scalar_sentence_seat_steps_per_s", "seat-steps/s", 0, _seat_steps))),
    Measurement(lambda z: bench_parse(z.seconds), (
        Figure("parse_sentences_per_s", "sentences/s", 0),)),
    Measurement(lambda z: bench_baselines(z.seconds), (
        Figure("baseline_episodes_per_s", "episodes/s", 1),
        Figure("baseline_vs_original", "x", 2,
               lambda eps: eps / ORIGINAL_BASELINE_EPISODES_PER_S))),
    Measurement(lambda z: bench_gym(z.seconds), (Figure("gym_steps_per_s", "steps/s", 0),)),
    Measurement(lambda z: bench_parallel(z.seconds), (
        Figure("parallel_joint_steps_per_s", "joint-steps/s", 0),)),
    Measurement(lambda z: bench_league(z.league_episodes), (
        Figure("league_episodes_per_s", "episodes/s", 1),)),
    # a policy that answers at once, and one that reads its observation first
    _apart("", "Waiter"),
    _apart("_observing", "Observer"),
    Measurement(lambda z: bench_sandbox_start(), (
        Figure("sandbox_seat_cold_start_s", "s", 3, lambda got: got[0]),
        Figure("sandbox_seat_warm_start_s", "s", 3, lambda got: got[1]))),
    Measurement(_batched_engine, (
        Figure("batched_engine_seat_steps_per_s", "seat-steps/s", 0),
        Figure("batched_engine_vs_original", "x", 1, _vs_original))),
    Measurement(_batched_full, (
        Figure("batched_full_seat_steps_per_s", "seat-steps/s", 0),
        Figure("batched_full_vs_original", "x", 1, _vs_original))),
    Measurement(_batched_vector_env, (
        Figure("batched_vector_env_steps_per_s", "steps/s", 0),)),
    Measurement(_train, (
        Figure("train_steps_per_s", "steps/s", 0, lambda got: got[0]),
        Figure("train_engine_share", "%", 0, lambda got: 100 * got[1]))),
    Measurement(lambda z: bench_feasibility(), (Figure("feasibility_gate_s", "s", 2),)),
)

# name -> (its measurement, the figure): what ``--only NAME`` runs and prints
FIGURES: dict[str, tuple[Measurement, Figure]] = {
    f.name: (m, f) for m in MEASUREMENTS for f in m.figures}
assert len(FIGURES) == sum(len(m.figures) for m in MEASUREMENTS), "a figure name twice"


def _value(figure: Figure, value: float) -> str:
    """``value`` with the figure's decimals and unit."""
    return f"{value:.{figure.decimals}f} {figure.unit}"


def _line(figure: Figure, value: float) -> str:
    return f"{figure.name}: {_value(figure, value)}"


def _only_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--only", choices=list(FIGURES), action="append", metavar="NAME",
                    help="run only this figure (repeatable), with a whole run's sizes (or "
                         "--quick's); figures of one measurement share its run: "
                         + ", ".join(FIGURES))
    ap.add_argument("--rounds", type=int, default=1, metavar="N",
                    help="with --only: run the figures N times, round-robin, and print each "
                         "one's median (the range goes to stderr); for shared machines whose "
                         "speed drifts between minutes")
    ap.add_argument("--no-parse-memo", action="store_true",
                    help="turn the engine's cross-episode parse memo off "
                         "(sim.game.PARSE_MEMO; also GUILD_PARSE_MEMO=0)")


def _only(names: list[str], sizes: Sizes, rounds: int) -> bool:
    """Run the measurements of the figures ``names``, ``rounds`` times round-robin (each
    measurement once a round), and print each figure's median (its range to stderr), or why
    it was not measured; whether every figure asked for was measured."""
    asked = [FIGURES[name] for name in dict.fromkeys(names)]
    values: dict[str, list[float]] = {figure.name: [] for _, figure in asked}
    unable: dict[Measurement, str] = {}  # a measurement this machine cannot run: why
    missing: dict[str, str] = {}  # a figure whose part of its measurement was not made: why
    for _ in range(rounds):
        for measurement in dict.fromkeys(m for m, _ in asked):
            if measurement in unable:
                continue
            got, why = _measured(measurement, sizes)
            if why is not None:
                unable[measurement] = why
                continue
            for m, figure in asked:
                if m is measurement:
                    value, why = _read(figure, got)
                    if why is None:
                        values[figure.name].append(value)
                    else:
                        missing[figure.name] = why
    for m, figure in asked:
        why = unable.get(m) or missing.get(figure.name)
        if why is not None:
            _not_measured(figure, why)
            continue
        got = values[figure.name]
        print(_line(figure, statistics.median(got)))
        if len(got) > 1:
            print(f"{figure.name}: {_value(figure, min(got))} to "
                  f"{_value(figure, max(got))} over {len(got)} rounds", file=sys.stderr)
    return not unable and not missing


def _whole_run(sizes: Sizes) -> None:
    for measurement in MEASUREMENTS:
        got, why = _measured(measurement, sizes)
        for figure in measurement.figures:
            value, why_not = _read(figure, got) if why is None else (None, why)
            if why_not is None:
                print(_line(figure, value), flush=True)
            else:
                _not_measured(figure, why_not)


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
    sizes = QUICK if args.quick else FULL
    print(_builds(), file=sys.stderr)
    if args.no_parse_memo:
        import sim.game

        sim.game.PARSE_MEMO = False
    if args.only:
        return 0 if _only(args.only, sizes, args.rounds) else 1
    _whole_run(sizes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
