"""Observations and legal masks of many seats at once: the batched twin of ``sim.codec``.

Row for row equal to ``sim.codec.encode.encode_flat(state, seat)`` and
``sim.codec.action_table.legal_mask(state, seat)`` (RULES §17): the same keys in
``layout(world)`` order, the same float32 values.  Seats are given as flat ``(rows, seats)``
pairs, so one call serves all six seats of every episode (self-play) or one learning seat per
episode (the single-seat face).  The work happens in the compiled ``kernels_observe``, which
index without bounds checks: every entry point checks its pairs first (:func:`check_pairs`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..rules.world import SEATS
from .setup import int_vector
from .tables import Tables

if TYPE_CHECKING:
    from .engine import BatchedGuild

FEW = 32  # check_index's short arrays (see there)
_INT64 = np.dtype(np.int64)


def all_seats(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, seats)`` listing every seat of ``n`` episodes, episode-major (``[n * 6]``)."""
    return np.repeat(np.arange(n), SEATS), np.tile(np.arange(SEATS), n)


def offsets(tables: Tables) -> tuple[dict[str, int], int]:
    """Start column of each key of ``layout(world)`` and the total width."""
    return tables.obs_offsets, tables.obs_width


def encode(e: BatchedGuild, r: np.ndarray, s: np.ndarray,
           out: np.ndarray | None = None) -> np.ndarray:
    """Observations ``[m, obs_dim]`` float32 of seats ``s`` in episodes ``r`` (mask last);
    ``out`` may be a reused, writeable buffer of that shape.  The pairs are checked
    (:func:`check_pairs`)."""
    r, s = check_pairs(e, r, s)
    width = e.tables.obs_width
    if out is None:
        out = np.zeros((r.size, width), np.float32)
    else:
        check_out(out, (r.size, width))
    e.run_kernel("encode_rows", (r, s, out), e.own_args())
    return out


def legal_masks(e: BatchedGuild, r: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``legal_mask`` of seats ``s`` in episodes ``r``: ``[m, n_actions]`` bool.  The pairs
    are checked (:func:`check_pairs`)."""
    r, s = check_pairs(e, r, s)
    out = np.zeros((r.size, e.tables.n_actions), bool)
    e.run_kernel("mask_rows", (r, s, out), e.own_args(turns=False))
    return out


def check_pairs(e: BatchedGuild, rows: object, seats: object) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, seats)``, the ``(episode, seat)`` pairs asked of ``e``, as C-contiguous int64
    arrays of one length, or ValueError naming the argument and the bad value.

    The compiled kernels index without bounds checks: a row past ``e.n`` or a seat past 5
    reads, or writes, memory that is not the engine's (a crash, or another row's data), and a
    float would be cut to another row.
    """
    r = check_index(rows, "rows", e.n, "row")
    s = check_index(seats, "seats", SEATS, "seat")
    if r.size != s.size:
        raise ValueError(f"rows and seats must be of the same length (one seat per row); got "
                         f"{r.size} rows and {s.size} seats")
    return r, s


def check_index(a: object, name: str, high: int, unit: str) -> np.ndarray:
    """``a`` as a C-contiguous int64 array of indices from 0 to ``high - 1``, or ValueError
    naming ``name`` and its first value out of range (a negative one would wrap).

    Cheap on what the faces pass every turn: a short plain int64 array is taken as it is
    and ranged in Python (numpy's calls cost more than Python's ``min`` on a handful).
    """
    plain = (type(a) is np.ndarray and a.dtype is _INT64 and a.ndim == 1
             and a.flags.c_contiguous)
    arr = a if plain else int_vector(a, name)
    if arr.size <= FEW:
        items = arr.tolist()
        bad = bool(items) and (min(items) < 0 or max(items) >= high)
    else:
        bad = arr.min() < 0 or arr.max() >= high
    if bad:
        i = int(np.argmax((arr < 0) | (arr >= high)))
        raise ValueError(f"{name} must be from 0 to {high - 1}; got {unit} {int(arr[i])} "
                         f"({name}[{i}])")
    return arr if plain else np.ascontiguousarray(arr, np.int64)


def check_out(out: object, shape: tuple[int, ...]) -> None:
    """ValueError naming ``out`` unless it is a writeable float32 array of ``shape``: the
    kernel writes into it in place."""
    if not isinstance(out, np.ndarray) or out.dtype != np.float32 or out.shape != shape:
        what = (f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray)
                else type(out).__name__)
        raise ValueError(f"out must be a float32 array of shape {shape}; got {what}")
    if not out.flags.writeable:
        raise ValueError("out must be writeable; got a read-only array")
