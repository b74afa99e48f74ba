"""Observations and legal masks of many seats at once: ``encode_flat`` and ``legal_mask``.

Row for row equal to ``sim.codec.encode.encode_flat(state, seat, legal_mask(state, seat))`` (RULES
§17): the same keys in ``layout(world)`` order, the same float32 values.  Seats are given as
flat ``(rows, seats)`` pairs so one call serves all six seats of every episode (self-play) or
one learning seat per episode (the single-seat face).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..codec.action_table import RELS, action_table
from ..codec.encode import FLOOR_CLIP, REL, layout
from ..rules.world import SEATS, per_world
from .tables import HIRE_OFFER, NO_OFFER, TRADE_OFFER, Tables

if TYPE_CHECKING:
    from .engine import BatchedGuild

_OFFSETS: dict[int, tuple[Tables, dict[str, int], int]] = {}


def offsets(tables: Tables) -> tuple[dict[str, int], int]:
    """Start column of each key of ``layout(world)`` and the total width."""
    hit = _OFFSETS.get(id(tables))
    if hit is not None and hit[0] is tables:
        return hit[1], hit[2]
    out, at = {}, 0
    for key, (shape, _) in layout(tables.world).items():
        out[key] = at
        at += shape[0]
    _OFFSETS[id(tables)] = (tables, out, at)
    return out, at


def all_seats(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, seats)`` listing every seat of ``n`` episodes, episode-major (``[n * 6]``)."""
    return np.repeat(np.arange(n), SEATS), np.tile(np.arange(SEATS), n)


class SeatContext:
    """Reads shared by the observation and the mask of a batch of ``(row, seat)`` pairs.

    Gathers go through flat indices into the raveled state (one ``take`` each), which is
    cheaper than multi-array fancy indexing.
    """

    def __init__(self, e: BatchedGuild, r: np.ndarray, s: np.ndarray) -> None:
        tb = e.tables
        ng, nk1 = tb.n_goods, tb.n_keepers + 1
        self.r, self.s = r, s
        rs = r * SEATS + s
        self.rs = rs
        self.here = e.room.ravel().take(rs)
        self.keeper = tb.keeper_here.take(self.here)
        self.items = e.items.reshape(-1, ng).take(rs, axis=0)           # [m, goods]
        self.coin = e.coin.ravel().take(rs)
        self.free = tb.carry_limit - e.carried.ravel().take(rs)
        rk = r * nk1 + self.keeper
        self.stock = e.stock.reshape(-1, ng).take(rk, axis=0)           # dummy keeper: zeros
        self.shop_coin = e.shop_coin.ravel().take(rk)
        self.deals = tb.deals.take(self.keeper, axis=0)
        price = self.stock + tb.price_row                              # flat [good, stock]
        self.ask = tb.ask.ravel().take(price)
        self.bid = tb.bid.ravel().take(price)
        self.others = (s[:, None] + np.array(RELS)) % SEATS      # [m, 5] seat of each rel
        ro = r[:, None] * SEATS + self.others
        self.present = e.room.ravel().take(ro) == self.here[:, None]
        # Last turn's offers to this seat, one per sender (slot (turn - 1) % 2).
        slot = (e.turn.take(r) + 1) & 1
        ko = (r * 2 + slot)[:, None] * SEATS + self.others
        kind = e.off_kind.ravel().take(ko)
        self.off_kind = np.where(e.off_to.ravel().take(ko) == s[:, None], kind, NO_OFFER)
        self.off_item = e.off_item.ravel().take(ko)
        self.off_qty = e.off_qty.ravel().take(ko)
        self.off_coin = e.off_coin.ravel().take(ko)


def encode(e: BatchedGuild, r: np.ndarray, s: np.ndarray,
           out: np.ndarray | None = None) -> np.ndarray:
    """Observations ``[m, obs_dim]`` float32 of seats ``s`` in episodes ``r`` (mask last)."""
    tb = e.tables
    off, width = offsets(tb)
    m = r.size
    if out is None:
        out = np.zeros((m, width), np.float32)
    elif out.shape != (m, width) or out.dtype != np.float32:
        raise ValueError(f"out must be float32 of shape {(m, width)}; got {out.dtype} "
                         f"{out.shape}")
    if e.backend == "numba":
        from . import observe_kernel

        observe_kernel.encode(e, r, s, out)
        return out
    mask_at = off["action_mask"]
    out[:, :mask_at] = 0  # the mask columns are all written below
    c = SeatContext(e, r, s)
    ng, nr = tb.n_goods, tb.n_rooms
    rows = np.arange(m)
    rs = c.rs
    out[:, 0] = e.turn.take(r)
    out[:, 1] = np.maximum(0, e.turns - e.turns_played.take(r))
    out[:, off["purse"]] = c.coin
    out[:, off["pack"]:off["pack"] + ng] = c.items
    # Commissions and the hint of a successful quest (cheapest current ask, §17).
    qi = e.quest_item.reshape(-1, 2).take(rs, axis=0)
    qc = e.quest_count.reshape(-1, 2).take(rs, axis=0)
    qd = e.delivered.reshape(-1, 2).take(rs, axis=0)
    hinted = e.hint.ravel().take(rs)
    if hinted.any():
        cheap_k, cheap_ask = _cheapest(e, tb)
    for q in range(2):
        base = off["commissions"] + q * (ng + 2)
        out[rows, base + qi[:, q]] = 1
        out[:, base + ng] = qc[:, q]
        out[:, base + ng + 1] = qd[:, q]
        show = np.flatnonzero(hinted & (qd[:, q] < qc[:, q]))
        if show.size:
            k = cheap_k[r[show], qi[show, q]]
            show, k = show[k >= 0], k[k >= 0]
            hb = off["hint"] + q * (1 + nr)
            out[show, hb] = cheap_ask[r[show], qi[show, q]]
            out[show, hb + 1 + tb.keeper_room[k]] = 1
    out[rows, off["room"] + c.here] = 1
    out[:, off["exits"]:off["dark"] + 1] = tb.room_block.take(c.here, axis=0)  # exits, dark
    floor = e.floor.reshape(-1, ng).take(r * nr + c.here, axis=0)
    out[:, off["floor"]:off["floor"] + ng] = np.minimum(floor, FLOOR_CLIP)
    out[:, off["cogs"]:off["cogs"] + REL] = c.present
    with_keeper = np.flatnonzero(c.keeper < tb.n_keepers)
    out[with_keeper, off["keeper"] + c.keeper[with_keeper]] = 1
    shop = out[:, off["shop"]:off["shop"] + 4 * ng].reshape(m, ng, 4)
    shop[:, :, 0] = c.deals
    shop[:, :, 1] = np.where(c.deals, c.stock, 0)
    shop[:, :, 2] = np.where(c.deals, c.ask, 0)
    shop[:, :, 3] = np.where(c.deals, c.bid, 0)
    out[:, off["shop_coin"]] = c.shop_coin
    w = 4 + ng
    offered = np.flatnonzero((c.off_kind != NO_OFFER).any(1))
    for k in range(REL):
        ok = c.off_kind[offered, k]
        base = off["offers"] + k * w
        trade = offered[ok == TRADE_OFFER]
        out[trade, base] = 1
        out[trade, base + 2 + c.off_item[trade, k]] = 1
        out[trade, base + 2 + ng] = c.off_qty[trade, k]
        out[offered[ok == HIRE_OFFER], base + 1] = 1
        out[offered, base + 3 + ng] = np.where(ok != NO_OFFER, c.off_coin[offered, k], 0)
    st = off["standing"]
    rt_all = e.retainer_turns.ravel()
    rt = rt_all.take(rs)
    bound = np.flatnonzero(rt > 0)
    if bound.size:
        employer = e.retainer_of.ravel().take(rs[bound])
        out[bound, st + (employer - s[bound]) % SEATS - 1] = 1
        out[:, st + REL] = rt
    ro = r[:, None] * SEATS + c.others
    ort = rt_all.take(ro)
    mine = (e.retainer_of.ravel().take(ro) == s[:, None]) & (ort > 0)
    if mine.any():
        out[:, st + REL + 1:st + 2 * REL + 1] = np.where(mine, ort, 0)
    last = e.last_reason.ravel().take(rs)
    acted = np.flatnonzero(last >= 0)
    out[acted, off["last"] + last[acted]] = 1
    out[:, off["heard"]] = e.heard.ravel().take(r * nr + c.here)
    legal_masks(e, r, s, c, np.float32, out[:, mask_at:])
    return out


def _cheapest(e: BatchedGuild, tb: Tables) -> tuple[np.ndarray, np.ndarray]:
    """Per episode and good: the keeper with stock and the lowest current ask (ties: lowest
    id), or -1, and that ask (``sim.rules.observation.cheapest_source``)."""
    k = tb.n_keepers
    stock = e.stock[:, :k]                                       # [n, keepers, goods]
    ask = tb.ask[np.arange(tb.n_goods), stock]
    ok = tb.deals[:k] & (stock > 0)
    big = np.iinfo(np.int64).max
    masked = np.where(ok, ask, big)
    best = np.argmin(masked, axis=1)                             # first minimum: lowest id
    best_ask = np.take_along_axis(masked, best[:, None, :], axis=1)[:, 0]
    return np.where(best_ask == big, -1, best), best_ask


def legal_masks(e: BatchedGuild, r: np.ndarray, s: np.ndarray, c: SeatContext | None = None,
                dtype: type = bool, out: np.ndarray | None = None) -> np.ndarray:
    """``legal_mask`` of seats ``s`` in episodes ``r``: ``[m, n_actions]`` of ``dtype``.

    The table's 261 columns repeat a few conditions (e.g. every offer price of a good to a
    seat): the distinct conditions are computed once into a narrow feature matrix, then spread
    over the columns by one ``take`` (``mask_features`` gives each column's feature).  ``out``
    (any ``[m, n_actions]`` array or view of ``dtype``, e.g. the mask columns of an
    observation batch) receives the result instead of a new array.
    """
    tb = e.tables
    if c is None:
        c = SeatContext(e, r, s)
    m = r.size
    ng, nr = tb.n_goods, tb.n_rooms
    f = np.empty((m, _n_features(tb)), bool)
    held = c.items > 0
    has_room = c.free > 0
    f[:, 0] = True                                               # wait
    f[:, 1] = c.keeper < tb.n_keepers                             # quest
    f[:, 2:2 + nr] = tb.adjacent[c.here]                          # move
    at = 2 + nr
    floor = e.floor.reshape(-1, ng).take(r * nr + c.here, axis=0)
    f[:, at:at + ng] = (floor > 0) & has_room[:, None]           # take
    f[:, at + ng:at + 2 * ng] = held                             # drop
    f[:, at + 2 * ng:at + 3 * ng] = (c.deals & has_room[:, None] & (c.stock > 0)
                                     & (c.coin[:, None] >= c.ask))          # buy
    f[:, at + 3 * ng:at + 4 * ng] = c.deals & held & (c.shop_coin[:, None] >= c.bid)  # sell
    qi = e.quest_item.reshape(-1, 2).take(c.rs, axis=0)
    outstanding = (e.quest_count.reshape(-1, 2).take(c.rs, axis=0)
                   - e.delivered.reshape(-1, 2).take(c.rs, axis=0))
    need = np.zeros((m, ng), np.int64)
    rows = np.arange(m)
    for q in range(qi.shape[1]):
        need[rows, qi[:, q]] += outstanding[:, q]
    f[:, at + 4 * ng:at + 5 * ng] = (c.keeper == tb.guild)[:, None] & held & (need > 0)
    at += 5 * ng
    pres = c.present
    f[:, at:at + REL * ng] = (pres[:, :, None] & held[:, None, :]).reshape(m, REL * ng)  # gift
    at += REL * ng
    f[:, at:at + REL] = pres & (c.coin > 0)[:, None]             # pay, hire
    takeable = (c.off_kind == HIRE_OFFER) | ((c.off_kind == TRADE_OFFER)
                                             & (c.coin[:, None] >= c.off_coin)
                                             & (c.free[:, None] >= c.off_qty))
    f[:, at + REL:at + 2 * REL] = pres & takeable                # accept
    # Robbery: assume the victim has no hidden guards (sim.codec.action_table.legal_mask).
    dark = tb.dark.take(c.here)
    rt = e.retainer_turns.take(r, axis=0)
    ret = e.retainer_of.take(r, axis=0)
    mine = ((ret == s[:, None]) & (rt > 0) & (e.room.take(r, axis=0) == c.here[:, None])).sum(1)
    strong = (1 + mine + dark) > (1 + 2 * (1 - dark))
    bound_to = np.where(rt[np.arange(m), s] > 0, ret[np.arange(m), s], -1)
    f[:, at + 2 * REL:at + 3 * REL] = (e.thievery & strong[:, None] & pres
                                       & (c.others != bound_to[:, None]))
    src = mask_features(tb)
    if out is None:
        return np.take(f.astype(dtype, copy=False), src, axis=1)
    # Spread chunk by chunk through a small buffer that stays in cache: a take straight into
    # a strided view, or through one big temporary, costs several times more.
    feats = f.astype(dtype, copy=False)
    step = _CHUNK
    buf = _scratch(("mask", step, src.size, np.dtype(dtype).str), (step, src.size), dtype)
    for a in range(0, m, step):
        b = min(m, a + step)
        np.take(feats[a:b], src, axis=1, out=buf[:b - a], mode="clip")
        out[a:b] = buf[:b - a]
    return out


_CHUNK = 1024

_SCRATCH: dict[tuple, np.ndarray] = {}


def _scratch(key: tuple, shape: tuple[int, ...], dtype) -> np.ndarray:
    """A buffer kept between calls (one per key; the last few keys only)."""
    buf = _SCRATCH.get(key)
    if buf is None:
        if len(_SCRATCH) > 8:
            _SCRATCH.clear()
        buf = _SCRATCH[key] = np.empty(shape, dtype)
    return buf


def _n_features(tb: Tables) -> int:
    return 2 + tb.n_rooms + 5 * tb.n_goods + REL * tb.n_goods + 3 * REL


@per_world  # keyed by the Tables object's identity, like a World's
def mask_features(tb: Tables) -> np.ndarray:
    """For each action index, the column of the feature matrix of ``legal_masks`` it reads."""
    ng, nr = tb.n_goods, tb.n_rooms
    goods_at = {"take": 0, "drop": 1, "buy": 2, "sell": 3, "deliver": 4}
    gift, pay = 2 + nr + 5 * ng, 2 + nr + 5 * ng + REL * ng
    src = []
    for a in action_table(tb.world):
        b = a.block
        if b == "wait":
            src.append(0)
        elif b == "quest":
            src.append(1)
        elif b == "move":
            src.append(2 + a.to_room)
        elif b in goods_at:
            src.append(2 + nr + goods_at[b] * ng + a.item)
        elif b in ("gift", "offer"):
            src.append(gift + (a.rel - 1) * ng + a.item)
        elif b in ("pay", "hire"):
            src.append(pay + a.rel - 1)
        elif b == "accept":
            src.append(pay + REL + a.rel - 1)
        else:
            src.append(pay + 2 * REL + a.rel - 1)
    return np.array(src, np.int64)
