"""Benchmarks: ``python -m bench [--quick]`` prints ``<name>: <value> <unit>`` lines (API.md §6).

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
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from bench import ORIGINAL_BASELINE_EPISODES_PER_S, ORIGINAL_SEAT_STEPS_PER_S
from sim import Game, GameConfig, Intent, native
from sim.language.parser import parse
from sim.language.vocab import PHRASEBOOK

TURNS = 14
SEAT_STEPS = 6 * TURNS


def random_legal_intents(game: Game, rng: random.Random) -> list[Intent]:
    """One random, usually legal, structured intent per seat, drawn from the seat's room.

    Reads the state directly: this is a load generator for the engine, not a policy.
    """
    st = game.state
    w = game.world
    out = []
    for seat in range(6):
        here = st.room[seat]
        roll = rng.random()
        keeper = w.keeper_in_room[here]
        if roll < 0.35:
            out.append(Intent("move", to_room=rng.choice(w.rooms[here].exits)))
        elif roll < 0.55 and keeper >= 0:
            good = rng.choice(w.keepers[keeper].trade)
            kind = "sell" if st.items[seat][good] and rng.random() < 0.5 else "buy"
            out.append(Intent(kind, item=good, qty=rng.randint(1, 3), npc=keeper))
        elif roll < 0.62 and keeper == w.guild:
            good = st.quest_item[seat][rng.randint(0, 1)]
            out.append(Intent("give", item=good, qty=2, npc=keeper))
        elif roll < 0.70 and any(st.floor[here]):
            good = next(g for g, n in enumerate(st.floor[here]) if n)
            out.append(Intent("take", item=good))
        elif roll < 0.85:
            others = [s for s in range(6) if s != seat and st.room[s] == here]
            if others:
                other = rng.choice(others)
                kind = rng.choice(("rob", "trade", "hire", "accept", "give"))
                held = [g for g, n in enumerate(st.items[seat]) if n]
                if kind in ("trade", "give") and not held:
                    kind = "hire"
                out.append(Intent(kind, other=other, item=held[0] if held else -1,
                                  coin=rng.randint(1, 12)))
            else:
                out.append(Intent("wait"))
        else:
            out.append(Intent("wait"))
    return out


def _rate(fn: Callable[[int], int], seconds: float) -> float:
    """Units per second of ``fn(i)`` (which returns units done), run for about ``seconds``."""
    fn(0)  # warm up
    done, i, start = 0, 1, time.perf_counter()
    while True:
        done += fn(i)
        i += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def record_structured(episodes: int, seed: int = 7) -> list[list[list[Intent]]]:
    """The random structured intents of episodes 0..``episodes``-1 (seed = episode number),
    turn by turn, as ``random_legal_intents`` drew them while the episodes were played."""
    rng = random.Random(seed)
    recorded = []
    for i in range(episodes):
        game = Game(GameConfig(seed=i, turns=TURNS))
        turns = []
        while not game.done:
            intents = random_legal_intents(game, rng)
            game.play_turn(intents)
            turns.append(intents)
        recorded.append(turns)
    return recorded


def bench_structured(seconds: float, pool: int = 64) -> float:
    """Episodes/s of the engine alone on random structured intents.

    The intents of ``pool`` episodes are drawn before the clock starts and replayed, turn by
    turn, from the same seeds (the engine is deterministic, so each replay is the recorded
    episode again): the original's figure of issue 18 likewise replays recorded sentences.
    Drawing them inside the loop (``bench_structured_live``) costs about 40% more instructions
    and 13-24% more time (callgrind; interleaved runs).
    """
    recorded = record_structured(pool)

    def episode(i: int) -> int:
        game = Game(GameConfig(seed=i % pool, turns=TURNS))
        for intents in recorded[i % pool]:
            game.play_turn(intents)
        return 1
    return _rate(episode, seconds)


def bench_structured_live(seconds: float) -> float:
    """Episodes/s with ``random_legal_intents`` drawing every turn inside the timed loop (what
    ``scalar_structured_episodes_per_s`` measured before issue 18)."""
    rng = random.Random(7)

    def episode(i: int) -> int:
        game = Game(GameConfig(seed=i, turns=TURNS))
        while not game.done:
            game.play_turn(random_legal_intents(game, rng))
        return 1
    return _rate(episode, seconds)


SENTENCE_POOL = (
    "I walk to the docks.", "I go to the Guildhall.", "I head to Tanner's Row.",
    "I pick up the rope.", "I buy two hides from Tanner Oda.", "I sell all my nails.",
    "I hand Guildmaster Vell two hides for my commission.", "I rob Gizmo.",
    "I offer Bolt one lamp for twelve coins.", "I accept the offer.", "I hire Bolt for 5 coins.",
    "I wait by the well and listen.", 'I say "anyone selling rope?"', "I walk to the market.",
    "I ask the keeper about my commissions.", "I wander over to the alley.",
)


def bench_sentences(seconds: float) -> float:
    rng = random.Random(11)

    def episode(i: int) -> int:
        game = Game(GameConfig(seed=i, turns=TURNS))
        while not game.done:
            game.play_turn([rng.choice(SENTENCE_POOL) for _ in range(6)])
        return 1
    return _rate(episode, seconds)


def bench_parse(seconds: float) -> float:
    game = Game(GameConfig(seed=3))
    st = game.state
    pool = SENTENCE_POOL + PHRASEBOOK

    def batch(i: int) -> int:
        for s in pool:
            parse(game.world, st.aliases, i % 6, st.room[i % 6], st.offers, st.turn, s)
        return len(pool)
    return _rate(batch, seconds)


# The original's own workload (issue 18): seats 0, 2, 4 factor and 1, 3, 5 magpie.
BASELINE_LINEUP = ("factor", "magpie") * 3


def bench_baselines(seconds: float) -> float | None:
    if importlib.util.find_spec("agents") is None:
        return None
    import agents

    def episode(i: int) -> int:
        agents.play_episode(GameConfig(seed=i, turns=TURNS),
                            [agents.make_policy(p) for p in BASELINE_LINEUP])
        return 1
    return _rate(episode, seconds)


def masked_random(mask, rng: random.Random) -> int:
    """A uniformly random legal action of a 0/1 ``action_mask``: the faces' benchmark driver.

    ``mask.nonzero()`` and Python's ``random`` take ~0.9 µs a draw here, against ~4.9 µs for
    ``np.flatnonzero`` and a numpy ``Generator.integers`` call (the driver before issue 18),
    so that the figures measure the environment rather than the driver.
    """
    return rng.choice(mask.nonzero()[0].tolist())


def bench_gym(seconds: float) -> float | None:
    """Gymnasium steps/s: one masked-random learning seat, five baseline opponents."""
    if importlib.util.find_spec("agents") is None:
        return None
    import gymnasium

    env = gymnasium.make("guild/Guild-v0")
    rng = random.Random(0)
    return _rate(lambda i: gym_episode(env, i, rng), seconds)


def gym_episode(env, seed: int, rng: random.Random) -> int:
    """One episode of ``bench_gym``'s driver; returns its steps."""
    obs, info = env.reset(seed=seed)
    steps, done = 0, False
    while not done:
        obs, r, done, trunc, info = env.step(masked_random(obs["action_mask"], rng))
        steps += 1
    return steps


def bench_parallel(seconds: float) -> float:
    """PettingZoo joint steps/s (one step = all six seats), masked-random actions."""
    import sim

    env = sim.parallel_env()
    rng = random.Random(0)
    return _rate(lambda i: parallel_episode(env, i, rng), seconds)


def parallel_episode(env, seed: int, rng: random.Random) -> int:
    """One episode of ``bench_parallel``'s driver; returns its joint steps."""
    obs, infos = env.reset(seed=seed)
    steps = 0
    while env.agents:
        acts = {}
        for a in env.agents:
            acts[a] = masked_random(obs[a]["action_mask"], rng)
        obs, rewards, terms, truncs, infos = env.step(acts)
        steps += 1
    return steps


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
                         workers=2, trust=trust)
    start = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):
        run_league(opts)
    return episodes / (time.perf_counter() - start)


_LEAGUES: list[str] = []  # the one folder of this process's bench leagues


def _league_folder() -> str:
    """A new folder for one bench league, inside one that goes when the bench ends.

    A league of 1,000 episodes leaves 36 MB of replays. Deleting them at once made the next
    league slow (on this project's disk, ext4 mounted with ``discard``, creating files is slow
    for a minute after a large deletion): with ``--rounds`` the league figure fell round after
    round, 508 to 219 episodes/s, measuring the last round's cleanup rather than the league.
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
        groups.append(("the baselines", agents.native.active, "agents.native"))
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
    n = _league_episodes(secs)
    rate = bench_league(n)
    if rate is not None:
        print(_line("league_episodes_per_s", rate))
        # a policy that answers at once, and one that reads its observation first, vs factor
        for label, name in (("", "Waiter"), ("_observing", "Observer")):
            fast = (f"bench.policies:{name}", "factor")
            apart, trusted = bench_league(n, fast), bench_league(n, fast, trust=True)
            print(f"league_isolated{label}_episodes_per_s: {apart:.1f} episodes/s")
            print(f"league_trusted{label}_episodes_per_s: {trusted:.1f} episodes/s")
            print(f"league_isolated{label}_vs_trusted: {apart / trusted:.2f} x")
    gate = bench_feasibility()
    if gate is not None:
        print(f"feasibility_gate_s: {gate:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
