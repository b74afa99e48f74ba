"""Compiled twins of ``agents.baselines.batched``'s factor and magpie: one loop per
``(row, seat)`` pair.

The rules of RULES §21 written as plain per-seat Python and compiled by numba: as numpy array
operations every rule would be a dozen small calls, too many for the handful of seats a one-row
face decides each turn.  ``tests/test_batched_faces.py`` holds their choices to the scalar
baselines' sentences; ``tests/test_batched_kernels.py`` checks how the engine calls them.

Compiled code is cached on disk next to this file.  Every function the entry points call lives
in this module and reads nothing else of the project (the tables arrive as arguments), so
numba's own cache key, this file's stamp, is enough to never load a stale kernel.  numba is
imported only when a kernel is first needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from sim.batched.jit import Compiled
from sim.batched.tables import tables_for
from sim.codec.action_table import BUY_QTYS, DELIVER_QTYS, QTY_ALL, RELS
from sim.rules.world import SEATS, World, per_world

NO_ACT = -1
WAIT = 0
FAR = np.iinfo(np.int64).max  # the distance of a shop that cannot serve (factor's rule 4)


class BaselineTables(NamedTuple):
    """What the baseline kernels read: the town (``sim.batched.tables.Tables``) and the action
    indices the baselines use, as int64 arrays unless noted."""

    keeper_here: np.ndarray  # [room] keeper id, the dummy where none
    keeper_room: np.ndarray  # [keeper]
    deals: np.ndarray        # [keeper + 1, good] bool
    ask: np.ndarray          # [good, stock]
    bid: np.ndarray
    cum_ask: np.ndarray      # [good, stock, units] cost of buying units from stock
    values: np.ndarray       # [good]
    dist: np.ndarray         # [room, room]
    step_toward: np.ndarray  # [room, room] first step, -1 for none
    exits: np.ndarray        # [room, degree] -1 padded, in stored order
    dark: np.ndarray         # [room] 0/1
    move: np.ndarray         # [room] action index of walking there
    take1: np.ndarray        # [good]
    deliver: np.ndarray      # [good, units - 1]
    buy: np.ndarray          # [good, BUY_QTYS position]
    sell_all: np.ndarray     # [good]
    rob: np.ndarray          # [rel] (rel 0 unused)
    hawk: np.ndarray         # [rel, good] magpie's offer at base + 2 (rel 0 unused)
    carry_limit: int
    guild: int
    n_keepers: int


@per_world
def baseline_tables(world: World) -> BaselineTables:
    """The kernels' tables of a town, built once per town from the batched engine's."""
    tb = tables_for(world)
    ix, ng = tb.index, tb.n_goods
    goods = range(ng)

    def table(rows: list) -> np.ndarray:
        return np.array(rows, np.int64)

    return BaselineTables(
        keeper_here=tb.keeper_here, keeper_room=tb.keeper_room, deals=tb.deals, ask=tb.ask,
        bid=tb.bid, cum_ask=tb.cum_ask, values=tb.values, dist=tb.dist,
        step_toward=tb.step_toward, exits=tb.exits, dark=tb.dark,
        move=table([ix[("move", -1, 1, 0, 0, r)] for r in range(tb.n_rooms)]),
        take1=table([ix[("take", g, 1, 0, 0, -1)] for g in goods]),
        deliver=table([[ix[("deliver", g, q, 0, 0, -1)] for q in DELIVER_QTYS[:2]]
                       for g in goods]),
        buy=table([[ix[("buy", g, q, 0, 0, -1)] for q in BUY_QTYS] for g in goods]),
        sell_all=table([ix[("sell", g, QTY_ALL, 0, 0, -1)] for g in goods]),
        rob=table([0] + [ix[("rob", -1, 1, rel, 0, -1)] for rel in RELS]),
        hawk=table([[0] * ng] + [[ix[("offer", g, 1, rel, int(tb.values[g]) + 2, -1)]
                                  for g in goods] for rel in RELS]),
        carry_limit=tb.carry_limit, guild=tb.guild, n_keepers=tb.n_keepers)


class KernelCall:
    """Calls one entry point of this module, skipping numba's dispatcher once it can.

    The dispatcher types every argument of every call, and the state and tables hold some
    fifty arrays: that costs more than deciding a few seats.  Their types never change, so
    after the first call with a given state, tables and parameters, the compiled overload's
    entry point is called directly, as long as the rows and seats are plain 1-d arrays (the
    types of that first call); anything else goes through the dispatcher.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._hit: tuple | None = None  # (state, tables, parameter key, entry point)

    def __call__(self, r: np.ndarray, s: np.ndarray, st: tuple, bt: BaselineTables,
                 *params: object) -> np.ndarray:
        """The kernel's answer for the pairs ``(r[i], s[i])``, a new int64 array."""
        r, s = np.ascontiguousarray(r, np.int64), np.ascontiguousarray(s, np.int64)
        out = np.empty(r.size, np.int64)
        plain = r.ndim == 1 and s.ndim == 1 and _plain(r) and _plain(s)
        key = (params, tuple(map(type, params)))  # True == 1, but they compile apart
        hit = self._hit
        if plain and hit is not None and hit[0] is st and hit[1] is bt and hit[2] == key:
            hit[3](r, s, out, st, bt, *params)
            return out
        disp = kernel(self.name)
        disp(r, s, out, st, bt, *params)
        if plain:
            args = (r, s, out, st, bt, *params)
            found = disp.overloads.get(tuple(disp.typeof_pyval(a) for a in args))
            if found is not None:
                self._hit = (st, bt, key, found.entry_point)
        return out

    def __getstate__(self) -> dict:
        return {"name": self.name, "_hit": None}  # compiled code does not pickle


def _plain(a: np.ndarray) -> bool:
    """C-contiguous, writeable and aligned: the array type a cached entry point takes."""
    f = a.flags
    return f.c_contiguous and f.writeable and f.aligned


# --- the kernels (plain Python; numba compiles them) ----------------------------------------
def factor_rows(r, s, out, st, bt, sell_margin, pickup_value):
    """``BatchedFactor.act`` of each pair ``(r[i], s[i])`` into ``out[i]``."""
    for i in range(r.shape[0]):
        out[i] = factor_one(r[i], s[i], st, bt, sell_margin, pickup_value)


def magpie_rows(r, s, out, st, bt, thievery, hawk_period, sell_margin, buy_margin):
    """``BatchedMagpie.act`` of each pair ``(r[i], s[i])`` into ``out[i]``."""
    for i in range(r.shape[0]):
        out[i] = magpie_one(r[i], s[i], st, bt, thievery, hawk_period, sell_margin, buy_margin)


def factor_one(n, s, st, bt, sell_margin, pickup_value):
    """RULES §21 factor for seat ``s`` of row ``n``: the first rule that applies."""
    here = st.room[n, s]
    npc = bt.keeper_here[here]
    free = bt.carry_limit - st.carried[n, s]
    coin = st.coin[n, s]
    ng, nq = st.items.shape[2], st.quest_item.shape[2]
    # Rule 1: at the guild's keeper, hand in what an open commission needs.
    if npc == bt.guild:
        for q in range(nq):
            g = st.quest_item[n, s, q]
            units = min(_outstanding(n, s, q, st), st.items[n, s, g])
            if units > 0:
                return bt.deliver[g, units - 1]
    # Rule 2: a keeper here: buy for the commissions, then sell a spare good.
    for q in range(nq):
        g = st.quest_item[n, s, q]
        out_q = _outstanding(n, s, q, st)
        want = out_q - st.items[n, s, g]
        if out_q > 0 and want > 0 and bt.deals[npc, g] and free > 0:
            stock = st.stock[n, npc, g]
            units = min(want, stock, free)
            bought = 0  # the most units the purse affords, up to ``units``
            for u in range(1, bt.cum_ask.shape[2]):
                if bt.cum_ask[g, stock, u] <= coin and u <= units:
                    bought += 1
            if bought > 0:
                return bt.buy[g, min(bought, bt.buy.shape[1]) - 1]
    for g in range(ng):
        bid = bt.bid[g, st.stock[n, npc, g]]
        if (st.items[n, s, g] > 0 and not _needed(n, s, g, st) and bt.deals[npc, g]
                and bid >= bt.values[g] + sell_margin and st.shop_coin[n, npc] >= bid):
            return bt.sell_all[g]
    # Rule 3: pick up a needed or valuable good.
    if free > 0:
        for g in range(ng):
            if st.floor[n, here, g] > 0 and (_needed(n, s, g, st)
                                             or bt.values[g] >= pickup_value):
                return bt.take1[g]
    # Rule 4: walk one step toward the nearest shop stocking a short good, else a default.
    target = -1
    any_open = False
    for q in range(nq):
        g = st.quest_item[n, s, q]
        out_q = _outstanding(n, s, q, st)
        any_open = any_open or out_q > 0
        if out_q > 0 and st.items[n, s, g] < out_q and target < 0:
            best, best_d = -1, FAR
            for k in range(bt.n_keepers):  # nearest reachable (distance >= 0), lowest id
                if bt.deals[k, g] and st.stock[n, k, g] > 0:
                    d = bt.dist[here, bt.keeper_room[k]]
                    if d >= 0 and (best < 0 or d < best_d):
                        best, best_d = k, d
            if best >= 0:
                target = bt.keeper_room[best]
    if target < 0:
        target = bt.keeper_room[bt.guild] if any_open else 0
    step = bt.step_toward[here, target]
    if step >= 0:
        return bt.move[step]
    # Rule 5.
    return WAIT


def magpie_one(n, s, st, bt, thievery, hawk_period, sell_margin, buy_margin):
    """RULES §21 magpie for seat ``s`` of row ``n``: the first rule that applies."""
    here = st.room[n, s]
    npc = bt.keeper_here[here]
    carried = st.carried[n, s]
    free = bt.carry_limit - carried
    coin = st.coin[n, s]
    ng = st.items.shape[2]
    employer = st.retainer_of[n, s] if st.retainer_turns[n, s] > 0 else -1
    # Rule 1: in the dark, rob the first other seat here carrying goods (not its employer).
    if thievery and bt.dark[here] == 1:
        for other in range(SEATS):
            if (other != s and st.room[n, other] == here and other != employer
                    and st.carried[n, other] > 0):
                return bt.rob[(other - s) % SEATS]
    # Rule 2: hawk the lowest-id held good to the first other seat here.
    if hawk_period > 0 and st.turn[n] % hawk_period == 0 and carried > 0:
        for other in range(SEATS):
            if other != s and st.room[n, other] == here:
                return bt.hawk[(other - s) % SEATS, _first_held(n, s, st)]
    # Rule 3: trade with the keeper here: sell, else buy one cheap good.
    for g in range(ng):
        bid = bt.bid[g, st.stock[n, npc, g]]
        if (st.items[n, s, g] > 0 and bt.deals[npc, g] and bid >= bt.values[g] + sell_margin
                and st.shop_coin[n, npc] >= bid):
            return bt.sell_all[g]
    for g in range(ng):
        stock = st.stock[n, npc, g]
        ask = bt.ask[g, stock]
        if (bt.deals[npc, g] and stock > 0 and free > 0 and ask <= bt.values[g] + buy_margin
                and coin >= ask):
            return bt.buy[g, 0]
    # Rule 4: ramble: a dark exit not just come from (empty pack), else any such, else the
    # first; in a room without exits (``exits`` is -1 padded, and 0 wide if no room has one),
    # wait, as the scalar magpie does.
    if bt.exits.shape[1] == 0 or bt.exits[here, 0] < 0:
        return WAIT
    col = -1
    if carried == 0:
        col = _fresh_exit(n, s, here, st, bt, True)
    if col < 0:
        col = _fresh_exit(n, s, here, st, bt, False)
    return bt.move[bt.exits[here, max(col, 0)]]


def _outstanding(n, s, q, st):
    """Units commission ``q`` of the seat still needs."""
    return st.quest_count[n, s, q] - st.delivered[n, s, q]


def _needed(n, s, g, st):
    """Whether an open commission of the seat names good ``g``."""
    for q in range(st.quest_item.shape[2]):
        if st.quest_item[n, s, q] == g and _outstanding(n, s, q, st) > 0:
            return True
    return False


def _first_held(n, s, st):
    """The seat's lowest-id held good (0 if none, as numpy's ``argmax`` of a false row)."""
    for g in range(st.items.shape[2]):
        if st.items[n, s, g] > 0:
            return g
    return 0


def _fresh_exit(n, s, here, st, bt, dark_only):
    """The first exit column of ``here`` not leading back to the seat's last room (and dark,
    if ``dark_only``), or -1."""
    for col in range(bt.exits.shape[1]):
        x = bt.exits[here, col]
        if x >= 0 and x != st.prev_room[n, s] and (not dark_only or bt.dark[x] == 1):
            return col
    return NO_ACT


# --- compilation ------------------------------------------------------------------------------
_ENTRY_POINTS = (factor_rows, magpie_rows)
_HELPERS = (factor_one, magpie_one, _outstanding, _needed, _first_held, _fresh_exit)


def _build() -> dict[str, Callable]:
    import numba
    from numba.extending import register_jitable

    for fn in _HELPERS:
        # Inlined: a call that passes the whole state costs more than these few reads.
        register_jitable(inline="always")(fn)
    return {fn.__name__: numba.njit(cache=True, nogil=True, _nrt=False)(fn)
            for fn in _ENTRY_POINTS}


kernel = Compiled(_build)
"""``kernel(name)``: the compiled ``factor_rows`` or ``magpie_rows``."""
