"""Seed -> starting town for many episodes at once: Nim's xoroshiro128+ on numpy arrays.

The batched twin of ``sim.rules.rng`` and ``sim.rules.setup.draw_town`` (RULES §3-4), held
equal to them by ``test_setup_is_seed_compatible`` and ``test_reset_equals_fresh_games``
(``tests/test_batched.py``).  Every episode has its own generator state, one row of two
``uint64`` arrays; all rows take the same sequence of draws, so each step of the scalar
generator becomes a handful of array operations.  The alias stream is not drawn: aliases only
name seats in text, and the batched engine keeps no text.

>>> rooms, quests, floor = draw_towns(np.array([0]))
>>> rooms[0].tolist(), quests[0].tolist()[:2], floor[0, 4].tolist()
([5, 3, 2, 0, 7, 8], [[0, 1], [1, 2]], [0, 0, 1, 0, 0, 1])
"""

from __future__ import annotations

import numpy as np

from ..rules.setup import EXTRA_RELIC_ROOM, GROUND_ROOMS, INT64_MAX, INT64_MIN, RELIC, draw_town
from ..rules.world import SEATS, STANDARD_TOWN, World


def check_env_seed(seed: object, name: str = "seed") -> int | None:
    """A reset seed as numpy's generators take it: None, or an int >= 0 (1.5 would be cut,
    -1 refused by numpy without naming the field)."""
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{name} must be an int >= 0 or None; got {seed!r:.40}")
    return int(seed)


MASK64 = (1 << 64) - 1
_JUMP = (0xBEAC0467EBA5FACB, 0xD86B048B86AA9922)
_U = np.uint64
# Below this many rows the scalar ``draw_town`` is quicker than the array generator, whose
# 128-step jump costs a few dozen numpy calls whatever the row count (one-row faces reset often).
SCALAR_ROWS = 8
# Seeds whose main-stream seed ``seed * 7919 + 17`` fits in int64 (RULES §4).
SEED_MIN = -((17 - INT64_MIN) // 7919)
SEED_MAX = (INT64_MAX - 17) // 7919


class BatchedNimRand:
    """One Nim ``Rand`` per row; ``next``/``rand``/``shuffle`` advance every row in lockstep.

    >>> BatchedNimRand(np.array([2019, 17])).next().tolist()
    [13223559681708962501, 751950629452020849]
    """

    def __init__(self, seeds: np.ndarray) -> None:
        s = np.asarray(seeds, np.int64)
        s = np.where(s == 0, np.int64(2147483647), s)
        # Arithmetic shift of the signed value, then reinterpretation as unsigned (RULES §3).
        self.a0 = (s >> np.int64(16)).view(np.uint64).copy()
        self.a1 = (s & np.int64(0xFFFF)).astype(np.uint64)
        self._jump()
        self.next()

    def next(self) -> np.ndarray:
        """The next output of every row (uint64 arithmetic wraps, as the C code does)."""
        out, self.a0, self.a1 = _step(self.a0, self.a1)
        return out

    def _next_rows(self, idx: np.ndarray) -> np.ndarray:
        out, a0, a1 = _step(self.a0[idx], self.a1[idx])
        self.a0[idx] = a0
        self.a1[idx] = a1
        return out

    def _jump(self) -> None:
        a0, a1 = self.a0, self.a1
        s0 = np.zeros_like(a0)
        s1 = np.zeros_like(a1)
        for h in _JUMP:
            for b in range(64):
                if (h >> b) & 1:
                    s0 ^= a0
                    s1 ^= a1
                _, a0, a1 = _step(a0, a1)
        self.a0, self.a1 = s0, s1

    def rand(self, n: int) -> np.ndarray:
        """Uniform integers in 0..n for every row; ``rand(0)`` consumes nothing (RULES §3)."""
        if n == 0:
            return np.zeros(self.a0.shape, np.int64)
        bound = _U(MASK64 - (MASK64 % n))  # Nim's bound uses n, the result n + 1
        x = self.next()
        bad = np.flatnonzero(x > bound)
        while bad.size:  # rows that drew a rejected value draw again, alone
            x[bad] = self._next_rows(bad)
            bad = bad[x[bad] > bound]
        return (x % _U(n + 1)).astype(np.int64)

    def shuffle(self, xs: np.ndarray) -> None:
        """Fisher-Yates from the end on each row of ``xs`` (shape ``[rows, k]``), in place."""
        rows = np.arange(xs.shape[0])
        for i in range(xs.shape[1] - 1, 0, -1):
            j = self.rand(i)
            tmp = xs[rows, j]
            xs[rows, j] = xs[:, i]
            xs[:, i] = tmp


def _step(a0: np.ndarray, a1: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    out = a0 + a1
    t = a1 ^ a0
    n0 = ((a0 << _U(55)) | (a0 >> _U(9))) ^ t ^ (t << _U(14))
    n1 = (t << _U(36)) | (t >> _U(28))
    return out, n0, n1


def int_vector(a: object, name: str) -> np.ndarray:
    """``a`` as a 1-d array of ints (signed or not), or ValueError naming ``name``: a float
    would be cut, a bool taken for 0 or 1.  Python ints that fit no one 64-bit type together
    (numpy makes them float64 or objects) stay Python ints, in an object array, so that the
    caller's range check names the value as given."""
    arr = np.asarray(a)
    if arr.ndim == 1 and not isinstance(a, np.ndarray):  # a list or tuple: read its items
        items = list(a)
        at = next((i for i, x in enumerate(items) if isinstance(x, (bool, np.bool_))), None)
        if at is not None and arr.dtype.kind != "b":  # np.asarray([True, 1]) is int64
            raise ValueError(f"{name} must be a 1-d array of ints; got {items[at]!r} "
                             f"({name}[{at}])")
        if arr.dtype.kind in "fO" and all(isinstance(x, (int, np.integer)) for x in items):
            return np.array([int(x) for x in items], dtype=object)
    if arr.ndim != 1 or not (arr.dtype.kind in "iu" or arr.size == 0):
        raise ValueError(f"{name} must be a 1-d array of ints; got {arr.dtype} {arr.shape}")
    return arr


def check_seeds(seeds: np.ndarray) -> np.ndarray:
    """``seeds`` as int64, refusing any whose ``seed * 7919 + 17`` overflows (RULES §4)."""
    arr = int_vector(seeds, "seeds")
    bad = (arr < SEED_MIN) | (arr > SEED_MAX)
    if bad.any():
        raise ValueError(f"seed {int(arr[np.argmax(bad)])} is out of range: seed * 7919 + 17 "
                         "must fit in a signed 64-bit integer")
    return arr.astype(np.int64, copy=False)


def draw_towns(seeds: np.ndarray, world: World = STANDARD_TOWN
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Starting rooms ``[n, 6]``, commission goods ``[n, 6, 2]`` and floors ``[n, rooms, goods]``.

    The same draws, in the same order, as ``sim.rules.setup.draw_town`` for each seed.
    """
    return towns_of(check_seeds(seeds), world)


def towns_of(seeds: np.ndarray, world: World) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``draw_towns`` of seeds that ``check_seeds`` has returned (the engine checks them
    once, for its own use too)."""
    n = seeds.shape[0]
    if n <= SCALAR_ROWS:
        return _draw_towns_scalar(seeds, world)
    r = BatchedNimRand(seeds * 7919 + 17)
    rooms = np.tile(np.arange(world.n_rooms, dtype=np.int64), (n, 1))
    r.shuffle(rooms)
    quests = np.empty((n, SEATS, 2), np.int64)
    for s in range(SEATS):
        pool = np.tile(np.array(world.quest_items, np.int64), (n, 1))
        r.shuffle(pool)
        quests[:, s] = pool[:, :2]
    floor = np.zeros((n, world.n_rooms, world.n_goods), np.int64)
    rows = np.arange(n)
    for room in GROUND_ROOMS:
        floor[rows, room, r.rand(5)] += 1
    floor[:, EXTRA_RELIC_ROOM, RELIC] += 1
    return rooms[:, :SEATS].copy(), quests, floor


def _draw_towns_scalar(seeds: np.ndarray, world: World
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``draw_towns`` row by row with the rules' own ``draw_town`` (few rows)."""
    towns = [draw_town(int(seed), world) for seed in seeds]
    shape = (len(towns),)
    return (np.array([t[0] for t in towns], np.int64).reshape(shape + (SEATS,)),
            np.array([t[1] for t in towns], np.int64).reshape(shape + (SEATS, 2)),
            np.array([t[2] for t in towns], np.int64).reshape(
                shape + (world.n_rooms, world.n_goods)))
