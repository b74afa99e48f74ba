"""Batched faces of the guild game: a Gymnasium ``VectorEnv`` and a six-seat self-play API.

Both run on :class:`sim.batched.BatchedGuild`; observations, masks and rewards equal those of
``sim.envs.gym.GuildEnv`` (one seat) and ``sim.envs.parallel`` (all seats) row for row.

**Autoreset.**  ``GuildVectorEnv`` follows Gymnasium's default, ``NEXT_STEP``, like
``make_vec(..., vectorization_mode="sync")``, so the two faces of ``guild/Guild-v0`` play the
same games step for step: the step that ends an episode returns its last observation with
``terminated=True``, and the next step ignores that env's action and returns the first
observation of its next episode with reward 0.  ``autoreset_mode="same_step"`` (Gymnasium's
``SAME_STEP``; ``vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP}`` for the sync face)
wastes no step: the ending step returns ``terminated=True`` together with the *first*
observation of the next episode; the last observation of the finished one is in
``info["final_obs"]`` (valid where ``info["_final_obs"]``) and its score in
``info["final_info"]["score"]``.  ``GuildSelfPlay`` is always ``SAME_STEP``.  Episodes
truncate only by ``max_episode_steps``, as ``gymnasium.make``'s ``TimeLimit`` truncates the sync
face's (``truncated`` from that step on, and autoreset as at a game's end, without ``results``).
``reset(options={"reset_mask": mask})`` starts only the envs where ``mask`` is True, as
``SyncVectorEnv`` does.

**Info.**  In both modes ``GuildVectorEnv``'s ``info`` is what ``SyncVectorEnv`` builds from
``GuildEnv``'s (``VectorEnv._add_info``): the same keys in the same order, ``_``-masks, container
types, dtypes and values, so code written for one face reads the other.  It holds only what
the seat may know (RULES §17) and, at an episode's end, the §13 results; never the game seed,
which rebuilds every seat's commissions and rooms (the operator reads
``GuildVectorEnv.game_seeds``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..batched.engine import SEED_HIGH, BatchedGuild, check_env_count
from ..batched.observe import all_seats, encode, offsets
from ..batched.setup import check_env_seed
from ..codec.encode import slices
from ..game import GameConfig
from ..policies import BATCHED_POLICIES, POLICIES, check_town
from ..rules.commissions import points_of
from ..rules.scoring import RESULT_KEYS, wealth_of
from ..rules.world import SEATS, World
from .face import check_flags, check_seat, opponent_specs, seat_spaces

# The keys of GuildVectorEnv's ``info``, each beside its ``_``-mask (no others, ever): what
# GuildEnv's info holds every step, what it adds at an episode's end, and what SAME_STEP adds.
INFO_KEYS = ("seat", "score", "action_mask")
END_KEYS = ("results",)
FINAL_KEYS = ("final_obs", "final_info")


def make_batched_policy(spec):
    """A batched policy from a spec (``sim.policies.BATCHED_POLICIES``): ``"factor"``,
    ``"magpie"``, ``"random"``, a mapping ``{"name": ..., **params}``, ``"module:Name"``, or an
    object marked ``batched = True`` with ``act(engine, rows, seats) -> indices``.

    Scalar policies (``act(game, seat)``) are refused: calling them once per episode would undo
    the batching.  So is a spec of a kind with no batched form (``"llm:..."``), by name: read
    as ``"module:Name"`` it would blame a module of that name instead.
    """
    name = spec.get("name") if isinstance(spec, Mapping) else spec
    if isinstance(name, str):
        kind = name.strip().partition(":")[0].lower()
        if ("." not in kind and kind not in BATCHED_POLICIES.names()
                and kind in POLICIES.names()):
            raise ValueError(f"policy {name!r:.80}: {kind}: policies have no batched form "
                             f"(batched: {', '.join(BATCHED_POLICIES.names())}, or a batched "
                             "'module:Name'); the scalar GuildEnv plays it "
                             "(vectorization_mode='sync')")
    return BATCHED_POLICIES.make(spec)


class GuildVectorEnv(VectorEnv):
    """``num_envs`` single-seat guild games in one batched engine (``guild/Guild-v0``'s twin).

    Same spaces, observations, masks and rewards as ``sim.envs.gym.GuildEnv``; the five opponents
    are batched policies (``agents.baselines.batched``; default factor, magpie, factor, magpie,
    factor as ``DEFAULT_OPPONENTS``).  Autoreset ``NEXT_STEP``, as Gymnasium's default, or
    ``SAME_STEP`` by ``autoreset_mode`` (module docstring).

    ``info`` (:data:`INFO_KEYS`, :data:`END_KEYS`, :data:`FINAL_KEYS`, each with its
    ``_``-mask, as ``SyncVectorEnv`` batches ``GuildEnv``'s): ``seat`` and ``score`` per env,
    ``action_mask`` (``[n, actions]`` int8); ``results`` (RULES §13) of the envs whose episode
    ended this step (``NEXT_STEP``); with ``SAME_STEP``, ``final_obs`` (an object array: the
    finished envs' last observations, None elsewhere) and ``final_info`` (their last ``seat``,
    ``score``, ``action_mask`` and ``results``).  No game seed: :attr:`game_seeds` is the
    operator's view.

    Args:
        num_envs: number of episodes in lockstep, 1 to ``MAX_ENVS`` (``sim.batched.engine``).
        seat: the learning seat (0..5), or None to draw one per episode.
        opponents: five batched policy specs (see :func:`make_batched_policy`); an
            ``"sb3:model.zip"`` is loaded in this process (a pickle: it runs the zip's code;
            ``GuildEnv``'s docstring says how to load one in a sandbox instead).
        turns, thievery, world, flatten, reward: as ``GuildEnv``.  ``speech`` is accepted and
            has no effect (table actions never speak); ``text_mode`` needs the scalar engine.
        max_episode_steps: truncate each episode after this many steps, as the ``TimeLimit``
            that ``gymnasium.make`` puts on the sync face's envs (None: never; a game ends
            after ``turns`` steps anyway).
        autoreset_mode: ``"next_step"`` (default, as Gymnasium's sync face) or ``"same_step"``
            (or the ``AutoresetMode`` itself; module docstring).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, seat: int | None = None,
                 opponents: Sequence | None = None, turns: int = 14, thievery: bool = True,
                 speech: bool = True, world: World | None = None, text_mode: bool = False,
                 flatten: bool = False, reward: str = "dense", render_mode: str | None = None,
                 max_episode_steps: int | None = None,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP) -> None:
        check_env_count(num_envs, "num_envs")
        if max_episode_steps is not None and (
                isinstance(max_episode_steps, (bool, np.bool_))
                or not isinstance(max_episode_steps, (int, np.integer)) or max_episode_steps < 1):
            raise ValueError(f"max_episode_steps must be a positive int or None; got "
                             f"{max_episode_steps!r:.40}")
        modes = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP}
        mode = next((m for name, m in modes.items() if autoreset_mode in (m, m.value, name)),
                    None)
        if mode is None:
            raise ValueError(f"autoreset_mode must be 'next_step' or 'same_step'; got "
                             f"{autoreset_mode!r}")
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        self.same_step = mode == AutoresetMode.SAME_STEP
        check_flags(text_mode=text_mode, flatten=flatten, thievery=thievery, speech=speech)
        if text_mode:
            raise ValueError("text_mode needs the scalar engine: use vectorization_mode='sync'")
        if render_mode is not None:
            raise ValueError("the batched env does not render; use the scalar GuildEnv")
        seat = check_seat(seat)
        if reward not in ("dense", "terminal"):
            raise ValueError(f"reward must be 'dense' or 'terminal'; got {reward!r}")
        specs = opponent_specs(opponents)
        self.opponent_specs = specs
        self.engine = BatchedGuild(num_envs, turns=turns, thievery=thievery, world=world)
        self.world = self.engine.world
        self.num_envs = int(num_envs)
        self.fixed_seat = seat
        self.max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        self.reward_mode = reward
        self.flatten = flatten
        self.opponents = [make_batched_policy(s) for s in specs]
        check_town(self.opponents, self.world)
        self.single_observation_space, self.single_action_space = seat_spaces(
            self.world, False, flatten)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._slices = slices(self.world)
        self._rngs: list[np.random.Generator] | None = None
        self.seat = np.zeros(num_envs, np.int64)
        self._score = np.zeros(num_envs)
        self._obs = np.zeros((num_envs, offsets(self.engine.tables)[1]), np.float32)
        self._rows = np.arange(num_envs)
        self._others = np.zeros((num_envs, SEATS - 1), np.int64)
        self._pending = np.zeros(num_envs, bool)  # NEXT_STEP: ended, restart on the next step
        self._steps = np.zeros(num_envs, np.int64)  # steps of each env's episode (TimeLimit's)
        self._names = GameConfig().names  # GuildEnv's games name no players: results' names

    @property
    def game_seeds(self) -> np.ndarray:
        """Each env's current game seed (a copy): the operator's view, for replaying or
        auditing a game with ``sim.Game(sim.GameConfig(seed=...))``.  Never put it in a seat's
        ``info`` or observation: it rebuilds every seat's commissions and starting room."""
        return self.engine.seed.copy()

    def reset(self, *, seed: int | Sequence[int] | None = None, options: dict | None = None):
        """Start every env anew, or only those of ``options["reset_mask"]``.

        Seeding follows ``SyncVectorEnv`` of ``GuildEnv``: env ``i`` gets its own generator,
        seeded ``seed + i`` (or ``seed[i]`` for a list), and draws each episode's game seed,
        learning seat and opponent seeds from it exactly as ``GuildEnv.reset`` does, so the
        same seed gives the same towns and seats as ``make_vec(..., "sync")``.  A
        ``reset_mask`` (a bool array of ``num_envs``, one True at least) restarts, and reseeds,
        only its envs; the others keep their episodes (and a pending autoreset), and ``info``
        holds only the restarted envs, as ``SyncVectorEnv``'s.  Other options are ignored, as
        ``GuildEnv`` ignores them.
        """
        mask = self._reset_mask(options)
        n = self.num_envs
        if seed is None:
            seeds: list = [None] * n
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [check_env_seed(seed) + i for i in range(n)]
        else:
            if isinstance(seed, (str, bytes)) or not isinstance(seed, (Sequence, np.ndarray)):
                raise ValueError(f"seed must be an int or {n} ints; got {seed!r:.40}")
            seeds = [check_env_seed(x, f"seed[{i}]") for i, x in enumerate(seed)]
            if len(seeds) != n:
                raise ValueError(f"seed must be an int or {n} ints; got {len(seeds)}")
        if mask is not None:
            if self._rngs is None:  # the others would have no episode to keep
                raise ValueError("options['reset_mask'] restarts some envs of a running vector "
                                 "env: call reset() without it first")
            rows = np.flatnonzero(mask)
            if seed is not None:
                for i in rows.tolist():
                    self._rngs[i] = seeding.np_random(seeds[i])[0]
            self._start(rows)
            self._pending[rows] = False
            return self._observe(), self._info(mask)
        if seed is not None or self._rngs is None:
            self._rngs = [seeding.np_random(x)[0] for x in seeds]
            opp = seeding.np_random(None if seed is None else seeds[0])[0]
            for k, p in enumerate(self.opponents):
                if hasattr(p, "reset"):
                    p.reset(int(opp.integers(0, SEED_HIGH)) + k)
        self._start(self._rows)
        self._pending[:] = False
        return self._observe(), self._info()

    def _reset_mask(self, options: object) -> np.ndarray | None:
        """``options["reset_mask"]`` checked as ``SyncVectorEnv`` checks it (a ValueError
        here), or None; options that are no mapping, or hold other keys, are ignored."""
        if not isinstance(options, Mapping) or "reset_mask" not in options:
            return None
        mask = options["reset_mask"]
        n = self.num_envs
        if (not isinstance(mask, np.ndarray) or mask.dtype != np.bool_
                or mask.shape != (n,)):
            what = (f"{mask.dtype} array of shape {mask.shape}" if isinstance(mask, np.ndarray)
                    else type(mask).__name__)
            raise ValueError(f"options['reset_mask'] must be a numpy bool array of shape "
                             f"({n},); got a {what}")
        if not mask.any():
            raise ValueError("options['reset_mask'] must hold at least one True (the envs to "
                             "reset); got none")
        return mask.copy()

    def check_actions(self, actions) -> np.ndarray:
        """``actions`` as an array of ``num_envs`` table indices, or ValueError naming the
        first env whose action is none; ``step`` checks before any seat (an opponent's random
        stream included) moves."""
        a = np.asarray(actions)
        if a.shape != (self.num_envs,) or a.dtype.kind not in "iu":  # no floats, no bools
            raise ValueError(f"actions must be {self.num_envs} int indices; got "
                             f"{a.dtype} {a.shape}: {a!r:.80}")
        bad = (a < 0) | (a >= self.single_action_space.n)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"actions[{i}] (env {i}) must be a table index between 0 and "
                             f"{self.single_action_space.n - 1}; got {int(a[i])}")
        return a

    def step(self, actions):
        return self.step_checked(self.check_actions(actions))

    def step_checked(self, a: np.ndarray):
        """``step`` with actions :meth:`check_actions` returned (a caller that checked them
        already, as SB3's ``step_async`` does, need not pay for it twice a step)."""
        if self._rngs is None:  # as GuildEnv: its seats and opponents are drawn at reset
            raise RuntimeError("step() called before reset(); call reset() first")
        e = self.engine
        joint = np.empty((self.num_envs, SEATS), np.int64)
        joint[self._rows, self.seat] = a
        for j, policy in enumerate(self.opponents):
            joint[self._rows, self._others[:, j]] = self._opponent_act(j, policy)
        pending = self._pending  # NEXT_STEP: ended, so skipped by the engine; start anew now
        rewards, done = e.step(joint, autoreset=False, skip_done=True)
        self._steps += 1
        new = e.scores()[self._rows, self.seat]
        if self.reward_mode == "dense":
            reward = rewards[self._rows, self.seat]
        else:
            reward = np.where(done, new, 0.0)
        if pending.any():  # these rows ignore their action and start anew
            self._start(np.flatnonzero(pending))
            new = np.where(pending, 0.0, new)
            pending[:] = False
        truncated = np.zeros(self.num_envs, bool)
        if self.max_episode_steps is not None:  # TimeLimit: also on a game's last step
            truncated = self._steps >= self.max_episode_steps
        self._score = new
        obs = self._observe()
        info = self._info()
        over = done | truncated
        if not self.same_step:
            pending[:] = over
            # a row cut short stays as it is until its restart: the engine skips ended rows
            e.state.done[truncated] = True
        if not over.any():
            return obs, reward, done, truncated, info
        ended = np.flatnonzero(done)
        results = self._results(ended) if ended.size else {}
        if not self.same_step:
            info.update(results)
            return obs, reward, done, truncated, info
        final = {"final_obs": _rows_of(obs, np.flatnonzero(over), self.num_envs),
                 "_final_obs": over.copy(),
                 "final_info": {**self._info(over), **results}, "_final_info": over.copy()}
        self._start(np.flatnonzero(over))
        obs = self._observe()
        # SyncVectorEnv's key order: the final keys come where the first env that ended adds
        # them, before the others' info when it is env 0
        info = {**final, **self._info()} if over[0] else {**self._info(), **final}
        return obs, reward, done, truncated, info

    def _opponent_act(self, j: int, policy) -> np.ndarray:
        """Opponent ``j``'s indices for its seat of every env, or a ValueError naming it: one
        index for several envs would be broadcast, 0.5 cut to 0, an index outside the table
        blamed on an episode and seat."""
        got = policy.act(self.engine, self._rows, self._others[:, j])
        a = np.asarray(got)
        n, k = self.num_envs, self.single_action_space.n
        if a.shape != (n,) or a.dtype.kind not in "iu":
            raise ValueError(f"{self._opponent_name(j)}: act() must return {n} int table "
                             f"indices, one per env; got {a.dtype} {a.shape}: {got!r:.60}")
        bad = (a < 0) | (a >= k)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"{self._opponent_name(j)}: act() returned {int(a[i])} for env {i} "
                             f"(seat {int(self._others[i, j])}); a table index is between 0 "
                             f"and {k - 1}")
        return a

    def _opponent_name(self, j: int) -> str:
        spec = self.opponent_specs[j]
        shown = f"{spec!r:.80}" if isinstance(spec, (str, Mapping)) else type(spec).__name__
        return f"opponent {j} ({shown})"

    def action_masks(self) -> np.ndarray:
        """``[num_envs, actions]`` bool: the legal actions of each learning seat."""
        off = offsets(self.engine.tables)[0]["action_mask"]
        return self._obs[:, off:] > 0

    def _start(self, rows: np.ndarray) -> None:
        """New episodes in ``rows``: the draws of ``GuildEnv.reset``, row by row."""
        seeds = np.empty(rows.size, np.int64)
        fixed = self.fixed_seat
        for j, i in enumerate(rows.tolist()):
            rng = self._rngs[i]
            seeds[j] = rng.integers(0, SEED_HIGH)
            self.seat[i] = rng.integers(0, SEATS) if fixed is None else fixed
            rng.integers(0, SEED_HIGH, size=SEATS - 1)  # GuildEnv's opponent reset seeds
        self.engine.reset(seeds, rows)
        self._score[rows] = 0.0
        self._steps[rows] = 0
        self._others[rows] = (self.seat[rows, None] + np.arange(1, SEATS)) % SEATS
        self._others[rows] = np.sort(self._others[rows], axis=1)  # others in seat order

    def _observe(self):
        encode(self.engine, self._rows, self.seat, self._obs)
        if self.flatten:
            return self._obs.copy()
        return {k: self._obs[:, a:b].astype(np.int8 if k == "action_mask" else np.float32)
                for k, (a, b) in self._slices.items()}

    def _info(self, where: np.ndarray | None = None) -> dict:
        """``GuildEnv``'s per-step info batched as ``SyncVectorEnv`` batches it; with a bool
        ``where``, only those envs filled (zeros and False masks elsewhere, as ``final_info``)."""
        off = offsets(self.engine.tables)[0]["action_mask"]
        seat, score = self.seat.copy(), self._score.copy()
        mask = self._obs[:, off:].astype(np.int8)
        if where is None:
            where = np.ones(self.num_envs, bool)
        else:
            seat[~where], score[~where], mask[~where] = 0, 0.0, 0
        return {"seat": seat, "_seat": where.copy(), "score": score, "_score": where.copy(),
                "action_mask": mask, "_action_mask": where.copy()}

    def _results(self, ended: np.ndarray) -> dict:
        """``{"results": ..., "_results": ...}`` of the envs in ``ended``: each one's
        ``Game.results()`` (RULES §13), batched as ``VectorEnv._add_info`` batches a sync env's.

        The rules' own formulas (``sim.rules.scoring``), on the finished rows: ``wealth_of`` on
        whole columns at once (numpy), the engine's ``scores()`` and ``points_of`` per env.
        """
        e, st, n = self.engine, self.engine.state, self.num_envs
        coin = st.coin[ended]
        # a copy: wealth_of adds to its first argument, which for an array is in place
        wealth = wealth_of(coin.copy(), np.moveaxis(st.items[ended], -1, 0), self.world.values)
        per_env = {"names": [list(self._names) for _ in range(ended.size)],
                   "scores": e.scores()[ended].tolist(), "coin": coin.tolist(),
                   "wealth": wealth.tolist(),
                   "questPoints": [[points_of(c, d) for c, d in zip(counts, delivered)]
                                   for counts, delivered in zip(st.quest_count[ended].tolist(),
                                                                st.delivered[ended].tolist())],
                   "delivered": st.delivered[ended].sum(axis=-1).tolist(),
                   "robberies": st.robberies[ended].tolist(), "robbed": st.robbed[ended].tolist(),
                   "reason": ["complete"] * ended.size}  # games end only when turns run out
        have = np.zeros(n, bool)
        have[ended] = True
        results: dict = {}
        for key in RESULT_KEYS:  # int for Python ints, object for the rest, as _add_info
            if key in per_env:
                column = np.full(n, None, dtype=object)
                for i, value in zip(ended.tolist(), per_env[key]):
                    column[i] = value
            else:
                column = np.zeros(n, int)
                column[ended] = st.turns_played[ended] if key == "turns" else e.turns
            results[key], results[f"_{key}"] = column, have.copy()
        return {"results": results, "_results": have}


class GuildSelfPlay:
    """All six seats of ``num_envs`` episodes as ``num_envs * 6`` agent rows (self-play).

    The layout PufferLib-style trainers expect: row ``6 * i + seat`` is seat ``seat`` of
    episode ``i``; preallocated buffers ``observations`` (``[rows, obs_dim]`` float32, the
    flat observation of ``GuildEnv(flatten=True)``, mask in the last ``n_actions`` columns),
    ``masks`` (``[rows, n_actions]`` bool), ``rewards`` (float32), ``terminals`` and
    ``truncations`` (bool).  ``step(actions)`` takes ``[rows]`` indices and returns
    ``(observations, rewards, terminals, truncations, infos)``; autoreset ``SAME_STEP``:
    ``infos["final_obs"]`` holds the last observations of rows that just ended
    (``infos["_final_obs"]``) and ``infos["final_score"]`` their scores.  The returned arrays
    are the buffers themselves, overwritten by the next step (copy them to keep them).

    Args:
        num_envs: episodes, 1 to ``MAX_ENVS``; ``num_agents = 6 * num_envs``.
        turns, thievery, world: as ``GuildEnv``.
        reward: ``"dense"`` (score change each turn) or ``"terminal"``; float32 here (the
            engine's float64 rewards are ``engine.step``'s).
        seed: seeds the game seeds of every episode (reset and autoreset).
    """

    def __init__(self, num_envs: int, turns: int = 14, thievery: bool = True,
                 world: World | None = None, reward: str = "dense",
                 seed: int | None = None) -> None:
        check_env_count(num_envs, "num_envs")
        seed = check_env_seed(seed)
        if reward not in ("dense", "terminal"):
            raise ValueError(f"reward must be 'dense' or 'terminal'; got {reward!r}")
        self.engine = BatchedGuild(num_envs, turns=turns, thievery=thievery, world=world,
                                   seed=seed)
        # the engine drew its first towns when made: the seed starts over for the first
        # reset, which then plays the towns reset(seed=seed) plays
        self.engine.seed_rng = np.random.default_rng(seed)
        self.num_envs = int(num_envs)
        self.num_agents = self.num_envs * SEATS
        self.reward_mode = reward
        self.single_observation_space, self.single_action_space = seat_spaces(
            self.engine.world, False, True)
        off, width = offsets(self.engine.tables)
        self._mask_at = off["action_mask"]
        self.observations = np.zeros((self.num_agents, width), np.float32)
        self.masks = np.zeros((self.num_agents, self.engine.tables.n_actions), bool)
        self.rewards = np.zeros(self.num_agents, np.float32)
        self.terminals = np.zeros(self.num_agents, bool)
        self.truncations = np.zeros(self.num_agents, bool)
        self._r, self._s = all_seats(num_envs)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict]:
        """New episodes everywhere; ``seed`` reseeds the stream of game seeds."""
        seed = check_env_seed(seed)
        if seed is not None:
            self.engine.seed_rng = np.random.default_rng(seed)
        self.engine.reset()
        self.rewards[:] = 0
        self.terminals[:] = False
        self._observe()
        return self.observations, {}

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        a = np.asarray(actions)
        if a.shape != (self.num_agents,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"actions must be {self.num_agents} int indices; got "
                             f"{a.dtype} {a.shape}")
        n = self.engine.tables.n_actions
        bad = (a < 0) | (a >= n)
        if bad.any():  # named by agent row, as the caller holds them
            i = int(np.argmax(bad))
            raise ValueError(f"actions[{i}] (episode {i // SEATS}, seat {i % SEATS}) must be a "
                             f"table index between 0 and {n - 1}; got {int(a[i])}")
        e = self.engine
        rewards, done = e.step_checked(a.reshape(self.num_envs, SEATS), autoreset=False)
        if self.reward_mode == "terminal":
            rewards = np.where(done[:, None], e.scores(), 0.0)
        self.rewards[:] = rewards.ravel()
        self.terminals[:] = np.repeat(done, SEATS)
        infos: dict = {}
        if done.any():
            self._observe()
            infos = {"final_obs": self.observations.copy(), "_final_obs": self.terminals.copy(),
                     "final_score": e.scores().ravel(), "_final_score": self.terminals.copy()}
            e.reset_done()
        self._observe()
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def _observe(self) -> None:
        encode(self.engine, self._r, self._s, self.observations)
        np.greater(self.observations[:, self._mask_at:], 0, out=self.masks)


def _rows_of(obs: dict | np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """``SyncVectorEnv``'s ``final_obs``: an object array of ``n``, env ``i``'s own observation
    (row ``i`` of the fresh batch ``obs``) at each of ``rows``, None elsewhere."""
    out = np.full(n, None, dtype=object)
    for i in rows.tolist():
        out[i] = {k: v[i] for k, v in obs.items()} if isinstance(obs, dict) else obs[i]
    return out

