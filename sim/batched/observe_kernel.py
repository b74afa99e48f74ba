"""The compiled twin of ``sim.batched.observe.encode`` (optional numba accelerator).

One loop per ``(episode, seat)`` pair that follows ``sim.codec.encode.encode_flat`` and
``sim.codec.action_table.legal_mask`` field by field (RULES §17); the mask's repeated conditions are
computed once per pair into a feature vector and spread over the table's columns with
``mask_features``, as the numpy path does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .step_kernel import _jit
from .tables import HIRE_OFFER, NO_OFFER, TRADE_OFFER

if TYPE_CHECKING:
    from .engine import BatchedGuild


_KEYS = ("time", "purse", "pack", "commissions", "hint", "room", "exits", "dark", "floor", "cogs",
         "keeper", "shop", "shop_coin", "offers", "standing", "last", "heard", "action_mask")


def encode(e: BatchedGuild, r: np.ndarray, s: np.ndarray, out: np.ndarray) -> None:
    """``sim.batched.observe.encode`` compiled: rows of seats ``s`` in episodes ``r``."""
    from ..codec.encode import FLOOR_CLIP
    from .observe import _n_features, mask_features, offsets

    tb = e.tables
    off, _ = offsets(tb)
    at = np.array([off[k] for k in _KEYS], np.int64)
    _encode_rows(np.ascontiguousarray(r, np.int64), np.ascontiguousarray(s, np.int64), out, at,
                 mask_features(tb), _n_features(tb), e.turns, e.thievery, tb.keeper_here,
                 tb.deals, tb.ask, tb.bid, tb.dark, tb.adjacent, tb.keeper_room, tb.carry_limit,
                 tb.guild, tb.n_keepers, FLOOR_CLIP, e.room, e.coin, e.carried, e.items,
                 e.quest_item, e.quest_count, e.delivered, e.retainer_of, e.retainer_turns,
                 e.hint, e.last_reason, e.floor, e.stock, e.shop_coin, e.off_kind, e.off_to,
                 e.off_item, e.off_qty, e.off_coin, e.heard, e.turn, e.turns_played)


@_jit
def _encode_rows(r, s, out, at, src, n_features, turns, thievery, keeper_here, deals, ask, bid,
                 dark, adjacent, keeper_room, carry_limit, guild, nk, floor_clip, room, coin,
                 carried, items, quest_item, quest_count, delivered, retainer_of,
                 retainer_turns, hint, last_reason, floor, stock, shop_coin, off_kind, off_to,
                 off_item, off_qty, off_coin, heard, turn, turns_played):
    seats = room.shape[1]
    ng = items.shape[2]
    nr = adjacent.shape[0]
    rel_n = seats - 1
    f = np.empty(n_features, np.bool_)
    need = np.empty(ng, np.int64)
    for i in range(r.shape[0]):
        n, me = r[i], s[i]
        o = out[i]
        o[:] = 0
        here = room[n, me]
        kp = keeper_here[here]
        free = carry_limit - carried[n, me]
        purse = coin[n, me]
        o[at[0]] = turn[n]
        o[at[0] + 1] = max(0, turns - turns_played[n])
        o[at[1]] = purse
        for g in range(ng):
            o[at[2] + g] = items[n, me, g]
        for q in range(2):
            good = quest_item[n, me, q]
            base = at[3] + q * (ng + 2)
            o[base + good] = 1
            o[base + ng] = quest_count[n, me, q]
            o[base + ng + 1] = delivered[n, me, q]
            if hint[n, me] and delivered[n, me, q] < quest_count[n, me, q]:
                best, best_ask = -1, 0
                for k in range(nk):
                    if deals[k, good] and stock[n, k, good] > 0:
                        a = ask[good, stock[n, k, good]]
                        if best < 0 or a < best_ask:
                            best, best_ask = k, a
                if best >= 0:
                    o[at[4] + q * (1 + nr)] = best_ask
                    o[at[4] + q * (1 + nr) + 1 + keeper_room[best]] = 1
        o[at[5] + here] = 1
        for x in range(nr):
            o[at[6] + x] = adjacent[here, x]
        o[at[7]] = dark[here]
        for g in range(ng):
            o[at[8] + g] = min(floor[n, here, g], floor_clip)
        for rel in range(1, seats):
            o[at[9] + rel - 1] = room[n, (me + rel) % seats] == here
        if kp < nk:
            o[at[10] + kp] = 1
            for g in range(ng):
                if deals[kp, g]:
                    st = stock[n, kp, g]
                    o[at[11] + 4 * g] = 1
                    o[at[11] + 4 * g + 1] = st
                    o[at[11] + 4 * g + 2] = ask[g, st]
                    o[at[11] + 4 * g + 3] = bid[g, st]
            o[at[12]] = shop_coin[n, kp]
        width = 4 + ng
        slot = (turn[n] + 1) & 1
        # Mask features, in the order of sim.batched.observe.legal_masks.
        f[0] = True
        f[1] = kp < nk
        for x in range(nr):
            f[2 + x] = adjacent[here, x]
        fa = 2 + nr
        for g in range(ng):
            need[g] = 0
        for q in range(quest_item.shape[2]):
            need[quest_item[n, me, q]] += quest_count[n, me, q] - delivered[n, me, q]
        for g in range(ng):
            held = items[n, me, g] > 0
            f[fa + g] = floor[n, here, g] > 0 and free > 0
            f[fa + ng + g] = held
            st = stock[n, kp, g]
            f[fa + 2 * ng + g] = deals[kp, g] and free > 0 and st > 0 and purse >= ask[g, st]
            f[fa + 3 * ng + g] = deals[kp, g] and held and shop_coin[n, kp] >= bid[g, st]
            f[fa + 4 * ng + g] = kp == guild and held and need[g] > 0
        fa += 5 * ng
        fp = fa + rel_n * ng
        mine = 0
        for x in range(seats):
            if retainer_of[n, x] == me and retainer_turns[n, x] > 0 and room[n, x] == here:
                mine += 1
        strong = (1 + mine + dark[here]) > (1 + 2 * (1 - dark[here]))
        bound_to = retainer_of[n, me] if retainer_turns[n, me] > 0 else -1
        for rel in range(1, seats):
            other = (me + rel) % seats
            present = room[n, other] == here
            for g in range(ng):
                f[fa + (rel - 1) * ng + g] = present and items[n, me, g] > 0
            f[fp + rel - 1] = present and purse > 0
            kind = off_kind[n, slot, other]
            if off_to[n, slot, other] != me:
                kind = NO_OFFER
            base = at[13] + (rel - 1) * width
            if kind == TRADE_OFFER:
                o[base] = 1
                o[base + 2 + off_item[n, slot, other]] = 1
                o[base + 2 + ng] = off_qty[n, slot, other]
            elif kind == HIRE_OFFER:
                o[base + 1] = 1
            if kind != NO_OFFER:
                o[base + 3 + ng] = off_coin[n, slot, other]
            f[fp + rel_n + rel - 1] = present and (kind == HIRE_OFFER or (
                kind == TRADE_OFFER and purse >= off_coin[n, slot, other]
                and free >= off_qty[n, slot, other]))
            f[fp + 2 * rel_n + rel - 1] = (thievery and strong and present
                                           and other != bound_to)
            if retainer_of[n, other] == me and retainer_turns[n, other] > 0:
                o[at[14] + rel_n + rel] = retainer_turns[n, other]
        if retainer_turns[n, me] > 0:
            o[at[14] + (retainer_of[n, me] - me) % seats - 1] = 1
            o[at[14] + rel_n] = retainer_turns[n, me]
        if last_reason[n, me] >= 0:
            o[at[15] + last_reason[n, me]] = 1
        o[at[16]] = heard[n, here]
        for j in range(src.shape[0]):
            o[at[17] + j] = f[src[j]]
