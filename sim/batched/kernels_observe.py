"""The observation and legal-mask kernels of the batched engine (compiled by ``sim.batched.jit``).

Row for row ``sim.codec.encode.encode_flat`` and ``sim.codec.action_table.legal_mask`` (RULES
§17), with the rules' own ``cheapest_source``, ``guards`` and ``robbery_succeeds``.  Plain
Python functions over a ``BatchState`` ``st`` and the town's ``KernelTables`` ``tb``; ``o`` is one
observation row, ``at`` the first column of each key (``tables.OBS_KEYS`` order).

Those two are its twins: ``test_batched_equals_scalar_turn_by_turn`` (``tests/test_batched.py``)
compares every seat's row and mask with theirs after every turn, and ``tests/test_faces_rules.py``
holds the rows to ``Game.observe`` and the masks to the rules' verdict on every action.
"""

from __future__ import annotations

from ..codec.encode import REL
from ..rules.observation import cheapest_source
from ..rules.robbery import guards, robbery_succeeds
from ..rules.world import SEATS
from .tables import HIRE_OFFER, NO_OFFER, OBS_KEYS, TRADE_OFFER

(TIME, PURSE, PACK, COMMISSIONS, HINT, ROOM, EXITS, DARK, FLOOR, COGS, KEEPER, SHOP, SHOP_COIN,
 OFFERS, STANDING, LAST, HEARD, ACTION_MASK) = range(len(OBS_KEYS))


def encode_rows(r, s, out, st, tb, turns, thievery, scratch):
    """Each pair's observation into ``out[i]`` (``sim.codec.encode.encode_flat``)."""
    f = scratch.features
    at = tb.obs_at
    for i in range(r.shape[0]):
        n, me = r[i], s[i]
        o = out[i]
        o[:] = 0
        o[at[TIME]] = st.turn[n]
        o[at[TIME] + 1] = max(0, turns - st.turns_played[n])
        o[at[PURSE]] = st.coin[n, me]
        for g in range(st.items.shape[2]):
            o[at[PACK] + g] = st.items[n, me, g]
        encode_commissions(o, at, n, me, st, tb)
        encode_room(o, at, n, me, st, tb)
        encode_offers(o, at, n, me, st)
        encode_standing(o, at, n, me, st)
        if st.last_reason[n, me] >= 0:
            o[at[LAST] + st.last_reason[n, me]] = 1
        o[at[HEARD]] = st.heard[n, st.room[n, me]]
        mask_features(f, n, me, st, tb, thievery)
        for j in range(tb.mask_src.shape[0]):
            o[at[ACTION_MASK] + j] = f[tb.mask_src[j]]


def mask_rows(r, s, out, st, tb, thievery, scratch):
    """Each pair's legal mask into ``out[i]`` (``sim.codec.action_table.legal_mask``)."""
    f = scratch.features
    for i in range(r.shape[0]):
        mask_features(f, r[i], s[i], st, tb, thievery)
        for j in range(tb.mask_src.shape[0]):
            out[i, j] = f[tb.mask_src[j]]


def encode_commissions(o, at, n, me, st, tb):
    """One-hot good, count and delivered of each commission; the hint after a quest."""
    ng, nr = st.items.shape[2], tb.adjacent.shape[0]
    for q in range(2):
        good = st.quest_item[n, me, q]
        base = at[COMMISSIONS] + q * (ng + 2)
        o[base + good] = 1
        o[base + ng] = st.quest_count[n, me, q]
        o[base + ng + 1] = st.delivered[n, me, q]
        if st.hint[n, me] and st.delivered[n, me, q] < st.quest_count[n, me, q]:
            k = cheapest_source(tb.deals, st.stock[n], tb.ask[good], good, tb.n_keepers)
            if k >= 0:
                o[at[HINT] + q * (1 + nr)] = tb.ask[good, st.stock[n, k, good]]
                o[at[HINT] + q * (1 + nr) + 1 + tb.keeper_room[k]] = 1


def encode_room(o, at, n, me, st, tb):
    """The room: one-hot, exits, darkness, floor, cogs present, the keeper and its table."""
    here = st.room[n, me]
    kp = tb.keeper_here[here]
    o[at[ROOM] + here] = 1
    for x in range(tb.adjacent.shape[0]):
        o[at[EXITS] + x] = tb.adjacent[here, x]
    o[at[DARK]] = tb.dark[here]
    for g in range(st.items.shape[2]):
        o[at[FLOOR] + g] = min(st.floor[n, here, g], tb.floor_clip)
    for rel in range(1, SEATS):
        o[at[COGS] + rel - 1] = st.room[n, (me + rel) % SEATS] == here
    if kp < tb.n_keepers:
        o[at[KEEPER] + kp] = 1
        for g in range(st.items.shape[2]):
            if tb.deals[kp, g]:
                stock = st.stock[n, kp, g]
                o[at[SHOP] + 4 * g] = 1
                o[at[SHOP] + 4 * g + 1] = stock
                o[at[SHOP] + 4 * g + 2] = tb.ask[g, stock]
                o[at[SHOP] + 4 * g + 3] = tb.bid[g, stock]
        o[at[SHOP_COIN]] = st.shop_coin[n, kp]


def encode_offers(o, at, n, me, st):
    """Last turn's offer to this seat from each other seat, by rel."""
    ng = st.items.shape[2]
    slot = (st.turn[n] + 1) & 1
    for rel in range(1, SEATS):
        other = (me + rel) % SEATS
        kind = offer_to(n, me, other, slot, st)
        base = at[OFFERS] + (rel - 1) * (4 + ng)
        if kind == TRADE_OFFER:
            o[base] = 1
            o[base + 2 + st.off_item[n, slot, other]] = 1
            o[base + 2 + ng] = st.off_qty[n, slot, other]
        elif kind == HIRE_OFFER:
            o[base + 1] = 1
        if kind != NO_OFFER:
            o[base + 3 + ng] = st.off_coin[n, slot, other]


def encode_standing(o, at, n, me, st):
    """The seat's employer (by rel) and turns left; its own hirelings' turns by rel."""
    if st.retainer_turns[n, me] > 0:
        o[at[STANDING] + (st.retainer_of[n, me] - me) % SEATS - 1] = 1
        o[at[STANDING] + REL] = st.retainer_turns[n, me]
    for rel in range(1, SEATS):
        other = (me + rel) % SEATS
        if st.retainer_of[n, other] == me and st.retainer_turns[n, other] > 0:
            o[at[STANDING] + REL + rel] = st.retainer_turns[n, other]


def offer_to(n, me, other, slot, st):
    """The kind of ``other``'s offer to ``me`` in ``slot``, or ``NO_OFFER``."""
    if st.off_to[n, slot, other] != me:
        return NO_OFFER
    return st.off_kind[n, slot, other]


def mask_features(f, n, me, st, tb, thievery):
    """The distinct conditions of the seat's legal mask, in ``tables.mask_features`` order."""
    ng, nr = st.items.shape[2], tb.adjacent.shape[0]
    here = st.room[n, me]
    kp = tb.keeper_here[here]
    free = tb.carry_limit - st.carried[n, me]
    purse = st.coin[n, me]
    f[0] = True
    f[1] = kp < tb.n_keepers
    for x in range(nr):
        f[2 + x] = tb.adjacent[here, x]
    fa = 2 + nr
    for g in range(ng):
        held = st.items[n, me, g] > 0
        stock = st.stock[n, kp, g]
        f[fa + g] = st.floor[n, here, g] > 0 and free > 0
        f[fa + ng + g] = held
        f[fa + 2 * ng + g] = (tb.deals[kp, g] and free > 0 and stock > 0
                              and purse >= tb.ask[g, stock])
        f[fa + 3 * ng + g] = (tb.deals[kp, g] and held
                              and st.shop_coin[n, kp] >= tb.bid[g, stock])
        f[fa + 4 * ng + g] = kp == tb.guild and held and _needed(n, me, g, st) > 0
    seat_features(f, fa + 5 * ng, n, me, st, tb, thievery)


def seat_features(f, fa, n, me, st, tb, thievery):
    """The conditions about each other seat, by rel: gift, pay or hire, accept, rob."""
    ng = st.items.shape[2]
    here = st.room[n, me]
    free = tb.carry_limit - st.carried[n, me]
    purse = st.coin[n, me]
    fp = fa + REL * ng
    slot = (st.turn[n] + 1) & 1
    # Robbery: the victim's guards are hidden from the robber, so assume none.
    mine = guards(st.retainer_of[n], st.retainer_turns[n], st.room[n], me, here)
    strong = robbery_succeeds(mine, 0, tb.dark[here])
    bound_to = st.retainer_of[n, me] if st.retainer_turns[n, me] > 0 else -1
    for rel in range(1, SEATS):
        other = (me + rel) % SEATS
        present = st.room[n, other] == here
        for g in range(ng):
            f[fa + (rel - 1) * ng + g] = present and st.items[n, me, g] > 0
        f[fp + rel - 1] = present and purse > 0
        kind = offer_to(n, me, other, slot, st)
        f[fp + REL + rel - 1] = present and (kind == HIRE_OFFER or (
            kind == TRADE_OFFER and purse >= st.off_coin[n, slot, other]
            and free >= st.off_qty[n, slot, other]))
        f[fp + 2 * REL + rel - 1] = thievery and strong and present and other != bound_to


def _needed(n, me, g, st):
    """Units of good ``g`` the seat's open commissions still need."""
    need = 0
    for q in range(st.quest_item.shape[2]):
        if st.quest_item[n, me, q] == g:
            need += st.quest_count[n, me, q] - st.delivered[n, me, q]
    return need
