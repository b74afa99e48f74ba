"""Paired, seat-rotated evaluation of a policy against the factor baseline (``guild evaluate``).

A policy's mean score depends as much on the towns and the table as on the policy, so a fair
figure compares like with like: for every seed and every seat ``k``, the policy plays seat ``k``
with the other five seats filled from ``against`` (cycling in seat order), and the *same* game
(same seed, same others) is played again with the baseline in seat ``k``.  The paired
difference of the two scores in seat ``k`` removes the town's luck; rotating through the six
seats removes the seat's.  Training uses the same function for its before/after figures.

Policies with a batched form (``sim.policies.BATCHED_POLICIES``: factor, magpie, random, champion,
``module:Name`` of a batched class...) run on :class:`sim.batched.engine.BatchedGuild`, thousands
of games a second; if any seat's policy has only a scalar form (``llm:...``, a ``module:Name``
with ``act(game, seat)``) every game runs on the scalar engine (``agents.policy.play_episode``),
which gives the same scores for the same policies (the batched baselines equal the scalar ones,
RULES §21).
"""

from __future__ import annotations

import collections
import json
import math
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from agents.policy import play_episode
from sim import GameConfig
from sim.policies import BATCHED_POLICIES, POLICIES, check_town
from sim.rules.scoring import score
from sim.rules.setup import seed_in_range
from sim.rules.world import MAX_TURNS, MIN_TURNS, SEATS, STANDARD_TOWN, World

# Game seeds are split in two: evaluations use the reserved range, training draws its towns from
# the rest (agents.learn.ppo_arena), so an evaluation never meets a town the policy trained in.
RESERVED_SEEDS = range(0, 2 ** 32)
TRAINING_SEEDS = range(2 ** 32, 2 ** 48)  # large seeds give exact towns (docs/rules.md §4)
DEFAULT_SEEDS = range(100_000, 100_500)   # inside RESERVED_SEEDS
MAX_SEEDS = 1_000_000                    # 12 million games; more is a typo, not an evaluation
CHUNK_SEEDS = 2048  # seeds per batched engine: 12,288 rows of about 2.5 kB each


class EvaluationError(ValueError):
    """A bad argument of :func:`paired_evaluation`; the message names the field and value."""


def checked_actions(answer: Any, seats: int, n_actions: int) -> np.ndarray:
    """A batched policy's answer for ``seats`` seats as action indices: integers, one per seat,
    each from 0 to ``n_actions - 1``; ValueError saying what it answered otherwise (the caller
    names the policy). numpy would broadcast one number to every seat and cut floats to
    integers, so a malformed answer would play silently, and wrongly. Training's opponents
    (``agents.learn.ppo_arena``) and the evaluation's policies are held to this one check."""
    try:
        answer = np.asarray(answer)
    except Exception as e:  # noqa: BLE001 - the policy's own object (a ragged list, ...)
        raise ValueError(f"answered a {type(answer).__name__} that is no array of action "
                         f"indices ({type(e).__name__}); it must answer one action index per "
                         "seat") from None
    if (answer.shape != (seats,) or answer.dtype.kind not in "iu"
            or (answer.size and (answer.min() < 0 or answer.max() >= n_actions))):
        raise ValueError(f"answered {answer.dtype} indices of shape {answer.shape} for {seats} "
                         f"seats; it must answer one action index from 0 to {n_actions - 1} "
                         "per seat")
    return answer


@dataclass(frozen=True)
class PairedResult:
    """The figures of one paired evaluation (scores as ``sim.rules.scoring.score``, RULES §13).

    ``mean`` and ``baseline_mean`` average the evaluated seat's final score over every game of
    each side; ``diff`` is their difference, the mean paired difference; ``low`` and ``high``
    bound its 95% interval; ``per_seat[k]`` is the mean difference in seat ``k``; ``games``
    counts the games of each side (seeds x 6).
    """

    spec: str
    baseline: str
    against: tuple[str, ...]
    seeds: tuple[int, int]
    n_seeds: int
    turns: int
    games: int
    mean: float
    baseline_mean: float
    diff: float
    low: float
    high: float
    per_seat: tuple[float, ...]
    engine: str
    seconds: float
    interval: str = "Student t, 95%, per-seed means of the six seats' differences"

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON types (tuples become lists)."""
        d = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def is_result_json(raw: bytes) -> bool:
    """Whether ``raw`` is the JSON of a :class:`PairedResult` (every field, as ``guild
    evaluate --json`` writes it): such a file may be replaced by new figures, any other file
    is someone's and is kept."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # not UTF-8, not JSON, nested too deeply
        return False
    return isinstance(data, dict) and all(f.name in data for f in fields(PairedResult))


def paired_evaluation(policy: Any, *, against: Sequence[Any] = ("factor", "magpie"),
                      seeds: Iterable[int] = DEFAULT_SEEDS, baseline: Any = "factor",
                      turns: int = 14, world: World | None = None) -> PairedResult:
    """Play ``policy`` and ``baseline`` in every seat of the same games; compare them in pairs.

    For each seed and each seat ``k`` in 0..5 two games are played from the same seed: one with
    ``policy`` in seat ``k``, one with ``baseline`` there; the other five seats ``j = 0..4`` (in
    seat order) get ``against[j % len(against)]`` in both.  The interval treats the seeds as the
    independent units: each seed's mean over its six seats of ``policy - baseline`` is one
    sample, and the interval is their mean +- Student t (0.975, n - 1 degrees of freedom) times
    their standard error (sample standard deviation, ``n - 1``).  The six seats of one seed
    share a town, so they are not counted as six samples.

    Stochastic batched policies (``random``) are reset before each side of each chunk of
    seeds with the same stream seed (the evaluated policy and the baseline share one, each
    opponent has its own), so the opponents draw the same numbers in the same places on both
    sides and a random policy evaluated against itself gives a difference of exactly 0.  Scalar
    policies are reset with the game seed by ``play_episode``, which pairs them the same way.

    Args:
        policy: a spec for ``sim.policies`` (``"magpie"``, ``"module:Name"``, ``"llm:..."``) or a
            policy object (batched: ``batched = True`` and ``act(engine, rows, seats)``;
            scalar: ``act(game, seat)``).
        against: the specs filling the other seats, cycling in seat order (one to five).
        seeds: game seeds (as ``GameConfig(seed=...)``), at least 2 and at most 1,000,000.
        baseline: what ``policy`` is compared with (factor).
        turns: the horizon of every game (RULES §6.7).
        world: the town (default the standard one).

    Returns:
        a :class:`PairedResult`; ``engine`` says whether the batched or the scalar engine ran.

    Raises:
        EvaluationError (a ``ValueError``): a bad argument, naming it, or a policy that raised
        ``ValueError`` while playing (a ``ppo:`` model trained for another town's sizes); the
        policy's own error is its ``__cause__``.
    """
    seed_list = _check_seeds(seeds)
    _check_turns(turns)
    if world is not None and not isinstance(world, World):
        raise EvaluationError(f"world must be a World; got {type(world).__name__}")
    specs = _check_against(against)
    for field, spec in (("policy", policy), ("baseline", baseline)):
        if isinstance(spec, str) and not spec.strip():
            raise EvaluationError(f"{field} is an empty policy name")
    lineup = _lineup(specs)
    start = time.perf_counter()
    batched = _resolve_all(BATCHED_POLICIES, policy, baseline, specs, lineup)
    town = STANDARD_TOWN if world is None else world
    try:
        if batched is not None:
            engine = "batched"
            check_town([*batched[0], *batched[1]], town)
            names = [f"against[{specs.index(s)}] {_name(s)!r:.80}" for s in _distinct(specs)]
            got, base = _play_batched(batched, lineup, seed_list, turns, world,
                                      ([f"policy {_name(policy)!r:.80}", *names],
                                       [f"baseline {_name(baseline)!r:.80}", *names]))
        else:
            engine = "scalar"
            # a policy object of its own in every seat, as in a league: one object playing
            # several seats of a game would mix their state (resets, memories)
            copies = [_resolve_all(POLICIES, policy, baseline, specs, lineup, strict=True)
                      for _ in range(_most_seats(lineup))]
            check_town([p for c in copies for side in c for p in side], town)
            got, base = _play_scalar(copies, lineup, seed_list, turns, world)
    except EvaluationError:
        raise
    except ValueError as e:  # a policy that cannot play this town (a model of another size)
        raise EvaluationError(f"a policy refused to play: {e}") from e
    seconds = time.perf_counter() - start
    diffs = got - base                                      # [seeds, seat]
    mean, low, high = mean_interval(diffs.mean(axis=1))
    return PairedResult(
        spec=_name(policy), baseline=_name(baseline), against=tuple(_name(s) for s in specs),
        seeds=(seed_list[0], seed_list[-1]), n_seeds=len(seed_list), turns=turns,
        games=diffs.size, mean=float(got.mean()), baseline_mean=float(base.mean()),
        diff=mean, low=low, high=high,
        per_seat=tuple(float(x) for x in diffs.mean(axis=0)), engine=engine, seconds=seconds)


def mean_interval(samples: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """The mean of ``samples`` and its two-sided Student t interval (``n - 1`` d.o.f.).

    >>> [round(x, 4) for x in mean_interval(np.array([1.0, 2.0, 3.0]))]
    [2.0, -0.4841, 4.4841]
    """
    n = samples.size
    mean = float(samples.mean())
    half = t_quantile((1 + level) / 2, n - 1) * float(samples.std(ddof=1)) / math.sqrt(n)
    return mean, mean - half, mean + half


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (``p > 0.5``) of Student's t with ``df`` degrees of freedom.

    Exact (bisection on the closed-form distribution for integer ``df``, Abramowitz and Stegun
    26.7.3-4) up to 1000 degrees of freedom, the Cornish-Fisher series beyond (error < 1e-10);
    numpy alone, since scipy is not a dependency.

    >>> round(t_quantile(0.975, 1), 3), round(t_quantile(0.975, 10), 3)
    (12.706, 2.228)
    """
    if not 0.5 < p < 1 or df < 1:
        raise ValueError(f"t_quantile needs 0.5 < p < 1 and df >= 1; got p={p}, df={df}")
    if df > 1000:
        z = statistics.NormalDist().inv_cdf(p)
        return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
                + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))
    lo, hi = 0.0, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        if _central(mid, df) < 2 * p - 1:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# --- the two engines ---------------------------------------------------------------------------

def _play_batched(roles: tuple[list, list], lineup: np.ndarray, seeds: list[int], turns: int,
                  world: World | None, names: tuple[list[str], list[str]],
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Final scores ``[seeds, 6]`` of the evaluated seat, policy side and baseline side.

    Seeds go in chunks of ``CHUNK_SEEDS``; each chunk is one engine of ``chunk x 6`` rows (row
    ``6 i + k``: seed ``i``, evaluated seat ``k``) that plays the policy side, then the
    baseline side.  Each role's policy acts once per turn on every (row, seat) it holds; an
    answer that is not one action index per seat (:func:`checked_actions`; an illegal one
    plays as the engine plays it) raises
    :class:`EvaluationError` naming the policy (``names``: each role's, per side).
    """
    from sim.batched.engine import BatchedGuild  # the compiled kernels load only when needed

    sides = (np.empty((len(seeds), SEATS)), np.empty((len(seeds), SEATS)))
    for lo in range(0, len(seeds), CHUNK_SEEDS):
        chunk = np.asarray(seeds[lo:lo + CHUNK_SEEDS], np.int64)
        n = chunk.size * SEATS
        held = np.tile(lineup, (chunk.size, 1))              # [row, seat] -> role
        places = [np.nonzero(held == r) for r in range(lineup.max() + 1)]
        engine = BatchedGuild(n, turns=turns, world=world)
        for side, (out, policies) in enumerate(zip(sides, roles)):
            for r, p in enumerate(policies):
                if callable(getattr(p, "reset", None)):
                    p.reset(_stream_seed(int(chunk[0]), r))
            engine.reset(np.repeat(chunk, SEATS))
            joint = np.zeros((n, SEATS), np.int64)
            n_actions = engine.tables.n_actions
            while not engine.done.all():
                for r, ((rows, seats), p) in enumerate(zip(places, policies)):
                    answer = p.act(engine, rows, seats)
                    try:
                        joint[rows, seats] = checked_actions(answer, rows.size, n_actions)
                    except ValueError as e:
                        raise EvaluationError(f"{names[side][r]} {e}") from None
                engine.step(joint, autoreset=False)
            final = engine.scores().reshape(chunk.size, SEATS, SEATS)
            out[lo:lo + chunk.size] = np.diagonal(final, axis1=1, axis2=2)
    return sides


def _play_scalar(copies: list[tuple[list, list]], lineup: np.ndarray, seeds: list[int],
                 turns: int, world: World | None) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`_play_batched`, one ``play_episode`` per game; ``copies[j]`` holds the
    objects (role order, per side) of the ``j``-th seat, in seat order, that a role holds."""
    sides = (np.empty((len(seeds), SEATS)), np.empty((len(seeds), SEATS)))
    for side, out in enumerate(sides):
        for i, seed in enumerate(seeds):
            config = GameConfig(seed=seed, turns=turns, world=world or STANDARD_TOWN)
            for k in range(SEATS):
                roles = list(lineup[k])
                seated = [copies[roles[:s].count(r)][side][r] for s, r in enumerate(roles)]
                game = play_episode(config, seated)
                out[i, k] = score(game.state, k)
    return sides


def _most_seats(lineup: np.ndarray) -> int:
    """The most seats one role holds in a game."""
    return max(int(np.bincount(row).max()) for row in lineup)


def _stream_seed(first_seed: int, role: int) -> int:
    """The reset seed of a role's stream for the chunk starting at ``first_seed``."""
    return int(np.random.SeedSequence([abs(first_seed), first_seed < 0, role])
               .generate_state(1)[0])


# --- arguments ---------------------------------------------------------------------------------

def _lineup(specs: list[Any]) -> np.ndarray:
    """``[k, seat]``: the role in ``seat`` when seat ``k`` is evaluated (0 the evaluated
    policy, ``1 + d`` the ``d``-th distinct spec of ``against``)."""
    keys = list(dict.fromkeys(_key(s) for s in specs))
    table = np.zeros((SEATS, SEATS), np.int64)
    for k in range(SEATS):
        others = [s for s in range(SEATS) if s != k]
        for j, seat in enumerate(others):
            table[k, seat] = 1 + keys.index(_key(specs[j % len(specs)]))
    return table


def _resolve_all(registry: Any, policy: Any, baseline: Any, specs: list[Any],
                 lineup: np.ndarray, strict: bool = False) -> tuple[list, list] | None:
    """The policies of both sides (role order), one object per role and side; None when some
    spec has no form in ``registry`` (unless ``strict``, which raises naming the field)."""
    opponents = [(f"against[{specs.index(s)}]", s) for s in _distinct(specs)]
    sides: tuple[list, list] = ([], [])
    for side, (field, own) in enumerate((("policy", policy), ("baseline", baseline))):
        for name, spec in [(field, own), *opponents]:
            try:
                sides[side].append(registry.make(spec))
            except ValueError as e:
                if not strict:
                    return None
                raise EvaluationError(f"{name}: {_better_error(spec, e)}") from e
    return sides


def _distinct(specs: list[Any]) -> list[Any]:
    """The roles of ``against`` after the evaluated one, in role order (one per distinct
    spec, as :func:`_lineup` numbers them)."""
    return list({_key(s): s for s in specs}.values())


def _better_error(spec: Any, scalar_error: ValueError) -> str:
    """A batched name that failed to build says why, not that it is no scalar policy."""
    if isinstance(spec, str):
        name = spec.strip().partition(":")[0]
        if name and "." not in name and BATCHED_POLICIES.factory(name) is not None:
            try:
                BATCHED_POLICIES.make(spec)
            except ValueError as e:
                return str(e)
    return str(scalar_error)


def _check_seeds(seeds: Iterable[int]) -> list[int]:
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise EvaluationError(f"seeds must be a range or a list of ints; got {seeds!r:.60}")
    if isinstance(seeds, Sequence) and len(seeds) > MAX_SEEDS:
        raise EvaluationError(f"seeds: at most {MAX_SEEDS:,} seeds; got {len(seeds):,}")
    out = []
    for s in seeds:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
            raise EvaluationError(f"seeds must be ints; got {s!r:.40}")
        if not seed_in_range(int(s)):
            raise EvaluationError(f"seed {s} is out of range: seed * 7919 + 17 must fit in a "
                                  "signed 64-bit integer")
        out.append(int(s))
        if len(out) > MAX_SEEDS:
            raise EvaluationError(f"seeds: at most {MAX_SEEDS:,} seeds")
    if len(out) < 2:
        raise EvaluationError(f"seeds: at least 2 seeds are needed for an interval; got "
                              f"{len(out)}")
    if len(set(out)) < len(out):  # the same games twice would be counted as independent
        twice = next(s for s, n in collections.Counter(out).items() if n > 1)
        raise EvaluationError(f"seeds: each seed once (the seeds are the interval's independent "
                              f"samples); {twice} is given more than once")
    return out


def _check_turns(turns: int) -> None:
    if isinstance(turns, bool) or not isinstance(turns, int) or not (
            MIN_TURNS <= turns <= MAX_TURNS):
        raise EvaluationError(f"turns must be an int from {MIN_TURNS} to {MAX_TURNS}; got "
                              f"{turns!r}")


def _check_against(against: Sequence[Any]) -> list[Any]:
    if isinstance(against, (str, bytes)) or not isinstance(against, Iterable):
        raise EvaluationError(f"against must be a list of policy specs; got {against!r:.60}")
    specs = list(against)
    if not specs:
        raise EvaluationError("against must name at least one policy; got none")
    if len(specs) > SEATS - 1:  # the rest would never be seated, yet be named in the figures
        raise EvaluationError(f"against names {len(specs)} policies; there are only "
                              f"{SEATS - 1} other seats")
    for j, s in enumerate(specs):
        if isinstance(s, str) and not s.strip():
            raise EvaluationError(f"against[{j}] is an empty policy name")
    return specs


def _key(spec: Any) -> Any:
    """Equal for specs that build the same policy, as a league reads them (``Registry.key``:
    ``Magpie`` is ``magpie``, ``casey:Bot`` is not ``casey:bot``)."""
    return POLICIES.key(spec) if isinstance(spec, str) else id(spec)


def _name(spec: Any) -> str:
    if isinstance(spec, str):
        return spec.strip()
    if isinstance(spec, Mapping):
        return _name(spec.get("name", "?"))
    return str(getattr(spec, "name", None) or type(spec).__name__)


def _central(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with integer ``df`` (Abramowitz and Stegun 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:
        term = total = 1.0
        for k in range(1, (df - 2) // 2 + 1):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        return s * total
    if df == 1:
        return 2 * theta / math.pi
    term = total = math.cos(theta)
    for k in range(1, (df - 3) // 2 + 1):
        term *= c2 * (2 * k) / (2 * k + 1)
        total += term
    return 2 / math.pi * (theta + s * total)
