"""Observations and legal masks of many seats at once: the batched twin of ``sim.codec``.

Row for row equal to ``sim.codec.encode.encode_flat(state, seat)`` and
``sim.codec.action_table.legal_mask(state, seat)`` (RULES §17): the same keys in
``layout(world)`` order, the same float32 values.  Seats are given as flat ``(rows, seats)``
pairs, so one call serves all six seats of every episode (self-play) or one learning seat per
episode (the single-seat face).  The work happens in the compiled ``kernels_observe``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..rules.world import SEATS
from .tables import Tables

if TYPE_CHECKING:
    from .engine import BatchedGuild


def all_seats(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, seats)`` listing every seat of ``n`` episodes, episode-major (``[n * 6]``)."""
    return np.repeat(np.arange(n), SEATS), np.tile(np.arange(SEATS), n)


def offsets(tables: Tables) -> tuple[dict[str, int], int]:
    """Start column of each key of ``layout(world)`` and the total width."""
    return tables.obs_offsets, tables.obs_width


def encode(e: BatchedGuild, r: np.ndarray, s: np.ndarray,
           out: np.ndarray | None = None) -> np.ndarray:
    """Observations ``[m, obs_dim]`` float32 of seats ``s`` in episodes ``r`` (mask last);
    ``out`` may be a reused buffer of that shape."""
    tb = e.tables
    m = np.size(r)
    if out is None:
        out = np.zeros((m, tb.obs_width), np.float32)
    elif out.shape != (m, tb.obs_width) or out.dtype != np.float32:
        raise ValueError(f"out must be float32 of shape {(m, tb.obs_width)}; got {out.dtype} "
                         f"{out.shape}")
    e.run_kernel("encode_rows", (_index(r), _index(s), out), e.own_args())
    return out


def legal_masks(e: BatchedGuild, r: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``legal_mask`` of seats ``s`` in episodes ``r``: ``[m, n_actions]`` bool."""
    out = np.zeros((np.size(r), e.tables.n_actions), bool)
    e.run_kernel("mask_rows", (_index(r), _index(s), out), e.own_args(turns=False))
    return out


def _index(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, np.int64)
