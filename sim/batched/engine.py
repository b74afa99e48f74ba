"""``BatchedGuild``: thousands of episodes in lockstep, stepped by compiled kernels.

For the same seeds and action indices every row's state after every turn equals what
``Game.play_turn`` gives with the intents of ``sim.codec.action_table`` (the differential tests
of ``tests/test_batched.py``).  The state is a :class:`~sim.batched.state.BatchState` of
``[episode, ...]`` arrays; ``sim.batched.kernels_step`` resolves a turn of every row, calling
the rules' own formulas (``sim.batched.jit``).

Autoreset: :meth:`BatchedGuild.step` with ``autoreset=True`` starts a new episode (next seed of
the engine's seed stream) in every row that just ended, in the same call (Gymnasium's
``SAME_STEP`` mode).  Faces that need the last observation call ``step(autoreset=False)``,
read it, then :meth:`reset_done`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ..rules.offers import Offer
from ..rules.world import (
    COMMISSION_COUNT,
    MAX_TURNS,
    MIN_TURNS,
    SEATS,
    STANDARD_TOWN,
    World,
)
from . import jit, source
from .observe import all_seats, check_index, check_out, encode, legal_masks
from .setup import check_env_seed, check_seeds, towns_of
from .state import BatchState, allocate, export_row, load_game, row_offers, scratch_for
from .tables import Tables, tables_for

SEED_HIGH = 2 ** 31 - 1  # game seeds drawn for new episodes: 0 <= seed < 2**31 - 1, as GuildEnv
# The most episodes one engine (and so one batched face, and ``guild train``) holds: a row of
# the standard town's state is about 2.5 kB and each seat's observation 1.8 kB; a larger batch
# is a typo, refused before numpy is asked for gigabytes.
MAX_ENVS = 16_384


def check_env_count(n: object, name: str = "n") -> None:
    """ValueError naming ``name`` unless ``n`` is an int from 1 to :data:`MAX_ENVS`."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{name} must be a positive int; got {n!r:.40}")
    if n > MAX_ENVS:
        raise ValueError(f"{name} must be at most {MAX_ENVS:,} (MAX_ENVS); got {n!r:.40}")


class BatchedGuild:
    """``n`` episodes of the guild game stepped together from ``[n, 6]`` action indices.

    Every field of :class:`~sim.batched.state.BatchState` reads as an attribute (``e.room``,
    ``e.items``...): the arrays themselves, changed in place by each step.

    Args:
        n: number of episodes (rows), 1 to :data:`MAX_ENVS`.
        turns: the horizon of every episode (RULES §6.7; 6 to ``MAX_TURNS``, as ``GameConfig``).
        thievery: False plays the honest-town variant (§6.8).
        world: the town (default the standard one).
        seed: seeds the stream of game seeds drawn for new episodes (``reset()`` without
            explicit seeds, and autoreset): None or an int >= 0, as the faces' seeds.
    """

    def __init__(self, n: int, turns: int = 14, thievery: bool = True,
                 world: World | None = None, seed: int | None = None) -> None:
        check_env_count(n)
        seed = check_env_seed(seed)
        if isinstance(turns, bool) or not isinstance(turns, int):
            raise ValueError(f"turns must be an int; got {turns!r}")
        if not MIN_TURNS <= turns <= MAX_TURNS:  # GameConfig's bound: the observation's too
            raise ValueError(f"turns must be from {MIN_TURNS} to {MAX_TURNS}; got {turns!r}")
        if world is not None and not isinstance(world, World):
            raise ValueError(f"world must be a World; got {type(world).__name__}")
        self.n = int(n)
        self.turns = turns
        if not isinstance(thievery, (bool, np.bool_)):
            raise ValueError(f"thievery must be True or False; got {thievery!r:.40}")
        self.thievery = bool(thievery)
        self.world = world or STANDARD_TOWN
        self.tables: Tables = tables_for(self.world)
        self.seed_rng = np.random.default_rng(seed)
        self.rows = np.arange(self.n)
        self.state: BatchState = allocate(self.n, self.tables)
        self.scratch = scratch_for(self.tables)  # the kernels' work arrays, this engine's own
        self._entries: dict[str, tuple[Callable, tuple]] = {}
        self.reset()

    # --- episodes -----------------------------------------------------------------------------
    def reset(self, seeds: np.ndarray | None = None, rows: np.ndarray | None = None) -> None:
        """Start new episodes in ``rows`` (default all) from game ``seeds`` (default: drawn).

        Seed-compatible with ``Game(GameConfig(seed=s))``: the same town, turn 0 open.
        ``rows`` are distinct ints from 0 to ``n - 1``, checked before anything changes (the
        seed stream included).
        """
        self._reset(seeds, self.rows if rows is None else self._check_rows(rows))

    def _reset(self, seeds: np.ndarray | None, rows: np.ndarray) -> None:
        """``reset`` of rows known to be good (checked, or ``reset_done``'s own)."""
        if seeds is None:
            seeds = self.seed_rng.integers(0, SEED_HIGH, size=rows.size)
        seeds = check_seeds(seeds)
        if seeds.shape != rows.shape:
            raise ValueError(f"need one seed per row: {seeds.shape[0]} seeds, {rows.size} rows")
        if rows.size == 0:
            return
        st, tb = self.state, self.tables
        starts, quests, floor = towns_of(seeds, self.world)
        at = rows
        if rows is self.rows:  # every row (each reset of a one-row face): fill, not indexing
            at = slice(None)
            for a in st:
                a.fill(0)
        else:
            if rows.size == 1:  # a slice: cheaper than a list
                at = slice(int(rows[0]), int(rows[0]) + 1)
            for a in st:
                a[at] = 0
        st.seed[at] = seeds
        st.room[at] = starts
        st.prev_room[at] = -1
        st.coin[at] = self.world.start_coin
        st.quest_item[at] = quests
        st.quest_count[at] = COMMISSION_COUNT
        st.retainer_of[at] = -1
        st.last_reason[at] = -1
        st.floor[at] = floor
        st.stock[at] = tb.opening_stock
        st.shop_coin[at, :tb.n_keepers] = self.world.keeper_start_coin
        st.points[at] = source.scoring.score_points(
            self.world.start_coin, [0] * tb.n_goods, tb.values, [COMMISSION_COUNT] * 2, [0, 0])

    def _check_rows(self, rows: object) -> np.ndarray:
        """``rows`` as int64, or ValueError: a negative row would wrap to the end, a float be
        cut, a repeated row start twice (the last seed winning)."""
        r = check_index(rows, "rows", self.n, "row")
        if r.size > 1 and not (r[1:] > r[:-1]).all():  # increasing rows are distinct: no sort
            s = np.sort(r)
            twice = s[1:] == s[:-1]
            if twice.any():
                raise ValueError(f"rows must be distinct; got row {int(s[1:][twice][0])} "
                                 "more than once")
        return r

    def reset_done(self) -> np.ndarray:
        """Start new episodes in the rows that have ended; returns those rows."""
        rows = np.flatnonzero(self.state.done)
        if rows.size:
            self._reset(None, rows)
        return rows

    # --- the turn (RULES §6) ------------------------------------------------------------------
    def step(self, actions: np.ndarray, autoreset: bool = True,
             skip_done: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Resolve one turn of every episode from ``actions`` (``[n, 6]`` table indices).

        Returns ``(rewards, done)``: the change of each seat's score (RULES §13; ``[n, 6]``
        float64, equal to the scalar env's dense reward) and whether the episode just ended.
        Any index of the table is allowed, legal or not; indices outside it raise.  Episodes
        that have already ended raise unless ``skip_done``, which leaves them as they are (their
        rewards 0, ``done`` False: nothing ended this turn); Gymnasium's ``NEXT_STEP`` autoreset
        needs that.
        """
        a = np.asarray(actions)
        if not self._is_action_array(a):
            raise ValueError(f"actions must be an int array of shape ({self.n}, {SEATS}); "
                             f"got {a.dtype} {a.shape}")
        if not self._in_table(a):  # the first bad one, by episode then seat
            bad = (a < 0) | (a >= self.tables.n_actions)
            row, seat = (int(i) for i in np.unravel_index(int(np.argmax(bad)), bad.shape))
            raise ValueError(f"actions[{row}, {seat}] (episode {row}, seat {seat}) must be a "
                             f"table index between 0 and {self.tables.n_actions - 1}; got "
                             f"{int(a[row, seat])}")
        return self._step(a, autoreset, skip_done)

    def _is_action_array(self, a: np.ndarray) -> bool:
        """``a`` is an int array of shape ``[n, 6]`` (its values aside: :meth:`_in_table`)."""
        return a.shape == (self.n, SEATS) and a.dtype.kind in "iu"

    def _in_table(self, a: np.ndarray) -> bool:
        """Every index of the int array ``a`` is in the action table (one min and one max)."""
        return not a.size or (a.min() >= 0 and a.max() < self.tables.n_actions)

    def step_checked(self, a: np.ndarray, autoreset: bool = True,
                     skip_done: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`step` of actions a caller has already checked (an int ``[n, 6]`` array of
        table indices), so a face that names a bad action its own way checks it once. A last
        guard still refuses a shape, kind or index the compiled kernel would read past its
        tables with (ValueError; :meth:`step` names the first bad action)."""
        a = np.asarray(a)
        if not (self._is_action_array(a) and self._in_table(a)):
            raise ValueError(f"step_checked: actions must be an int array of shape "
                             f"({self.n}, {SEATS}) of table indices from 0 to "
                             f"{self.tables.n_actions - 1}; step() names the first bad one")
        return self._step(a, autoreset, skip_done)

    def _step(self, a: np.ndarray, autoreset: bool, skip_done: bool
              ) -> tuple[np.ndarray, np.ndarray]:
        """The turn itself, of actions that fit the table (checked by the two above)."""
        ended = self.state.done.copy()
        if ended.any() and not skip_done:
            raise ValueError("step: some episodes have ended; call reset_done() first")
        old = self.scores()
        self.run_kernel("step_rows", (np.ascontiguousarray(a, np.int64),), self.own_args())
        rewards = self.scores() - old
        done = self.state.done & ~ended
        if autoreset and done.any():
            self.reset_done()
        return rewards, done

    def own_args(self, turns: bool = True) -> tuple:
        """The kernels' trailing arguments: state, tables, (turns,) thievery, work arrays."""
        if turns:
            return self.state, self.tables.kernel, self.turns, self.thievery, self.scratch
        return self.state, self.tables.kernel, self.thievery, self.scratch

    def run_kernel(self, name: str, arrays: tuple[np.ndarray, ...], own: tuple) -> None:
        """Kernel ``name`` (``sim.batched.jit``) on the caller's ``arrays``, then ``own``.

        numba's dispatcher types every argument of every call: for the fifty-odd arrays of the
        state and tables that costs more than a one-row turn.  Those never change type, so
        after the first call the compiled overload's entry point is called directly, as long
        as the caller's arrays have the dtypes and ranks of that call and the numba type's
        flags (:func:`_plain`); any other call goes through the dispatcher.
        """
        entry = self._entries.get(name)
        if entry is not None:
            fn, kinds = entry
            for a, (dt, nd) in zip(arrays, kinds):
                if a.dtype is not dt or a.ndim != nd or not _plain(a):
                    break
            else:
                fn(*arrays, *own)
                return
        disp = jit.kernel(name)
        disp(*arrays, *own)
        if entry is None and all(_plain(a) for a in arrays):
            found = disp.overloads.get(tuple(disp.typeof_pyval(a) for a in arrays + own))
            if found is not None:
                self._entries[name] = (found.entry_point,
                                       tuple((a.dtype, a.ndim) for a in arrays))

    def __getstate__(self) -> dict:
        """The state to pickle or copy, without ``run_kernel``'s entry points (compiled
        code does not pickle; the copy finds them again at its first call)."""
        return {**self.__dict__, "_entries": {}}

    def bind(self, name: str, arrays: tuple[np.ndarray, ...]) -> Callable[[], None]:
        """Kernel ``name`` on these very ``arrays`` (then this engine's own), as a call without
        arguments: ``run_kernel``'s checks made once, here, instead of at every call.

        For callers that own ``arrays``, keep them and run the kernel on them every turn (the
        one-row faces, where those checks cost as much as encoding a row): they change the
        arrays' contents only, never their dtype, shape or flags. Compiles without running.
        A ``functools.partial`` (C-fast to call) holds the arguments, not a closure, so that
        ``copy.deepcopy`` of a face (its engine, its buffers and this) binds the copy to the
        copied arrays, never the original's; the compiled entry point is shared, as functions
        are by a copy.
        """
        args = arrays + self.own_args(turns=name != "mask_rows")
        if not all(_plain(a) for a in arrays):
            return functools.partial(_dispatch, name, *args)
        disp = jit.kernel(name)
        return functools.partial(disp.compile(tuple(disp.typeof_pyval(a) for a in args)), *args)

    def scores(self) -> np.ndarray:
        """Every seat's score, ``[n, 6]`` float64, exactly as ``sim.rules.scoring.score``."""
        return source.scoring.score_of(self.state.points, self.world.start_coin)

    # --- views ----------------------------------------------------------------------------------
    def observe(self, out: np.ndarray | None = None) -> np.ndarray:
        """Every seat's observation, ``[n, 6, obs_dim]`` float32, row for row equal to
        ``sim.codec.encode.encode_flat``; ``out`` may be a reused buffer of that shape,
        C-contiguous (anything else would be reshaped into a copy, and stay unfilled)."""
        r, s = all_seats(self.n)
        flat = None
        if out is not None:
            check_out(out, (self.n, SEATS, self.tables.obs_width))
            if not out.flags.c_contiguous:
                raise ValueError("out must be C-contiguous (filled through a flat view of it); "
                                 "got a strided or Fortran-order array")
            flat = out.reshape(self.n * SEATS, -1)
        return encode(self, r, s, flat).reshape(self.n, SEATS, -1)

    def masks(self) -> np.ndarray:
        """Every seat's legal mask, ``[n, 6, n_actions]`` bool, equal to ``legal_mask``."""
        r, s = all_seats(self.n)
        return legal_masks(self, r, s).reshape(self.n, SEATS, -1)

    # --- conversion to and from the scalar engine (tests, curricula) ----------------------------
    def load_games(self, games: list, rows: np.ndarray | None = None) -> None:
        """Copy the states of scalar ``Game`` objects into ``rows`` (default ``0..len-1``).

        Every game is checked before any row changes: a refusal leaves the engine as it was.
        """
        from ..game import Game  # here: the engine itself needs no scalar game

        games = list(games)
        rows = np.arange(len(games)) if rows is None else self._check_rows(rows)
        if len(rows) != len(games):
            raise ValueError(f"load_games: {len(games)} games for {len(rows)} rows")
        if len(games) > self.n:
            raise ValueError(f"load_games: {len(games)} games for an engine of {self.n} rows")
        for k, game in enumerate(games):
            if not isinstance(game, Game):
                raise ValueError(f"load_games: games[{k}] must be a sim.Game; got "
                                 f"{type(game).__name__}")
            gs = game.state
            for field, theirs, ours in (("turns", gs.turns, self.turns),
                                        ("thievery", gs.thievery, self.thievery)):
                if theirs != ours:
                    raise ValueError(f"load_games: games[{k}] has {field}={theirs!r}; this "
                                     f"engine plays {field}={ours!r}")
            if gs.world != self.world:
                raise ValueError(f"load_games: games[{k}] is played in another world than "
                                 "this engine's")
        for i, game in zip(rows.tolist(), games):
            load_game(self.state, self.tables, i, game)

    def export(self, i: int) -> dict:
        """Row ``i`` in the scalar engine's terms (``sim.batched.state.export_row``)."""
        return export_row(self.state, self.tables, self._row(i))

    def offers(self, i: int) -> list[Offer]:
        """Row ``i``'s live offers as the scalar list (``sim.batched.state.row_offers``)."""
        return row_offers(self.state, self._row(i))

    def _row(self, i: object) -> int:
        """``i`` as a row, or ValueError (a negative one would wrap to another row)."""
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.n:
            raise ValueError(f"row must be an int from 0 to {self.n - 1}; got {i!r:.40}")
        return int(i)


def _dispatch(name: str, *args) -> None:
    """Kernel ``name`` through numba's dispatcher (what ``bind`` gives for arrays its entry
    points cannot take)."""
    jit.kernel(name)(*args)


def _plain(a: np.ndarray) -> bool:
    """C-contiguous, writeable and aligned: the array type the cached entry points take."""
    f = a.flags
    return f.c_contiguous and f.writeable and f.aligned


def _field(name: str) -> property:
    return property(lambda self: getattr(self.state, name),
                    doc=f"The ``{name}`` array of the state (``sim.batched.state``).")


for _name in BatchState._fields:
    setattr(BatchedGuild, _name, _field(_name))
