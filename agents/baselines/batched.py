"""The scripted baselines of RULES §21, batched: action indices for many seats at once.

``agents.Factor`` and ``agents.Magpie`` write sentences for the scalar world; here the same
rules, in the same order, choose the action-table index with the same meaning, for every
``(episode, seat)`` pair at once, straight from the batched arrays (they read the same hidden
facts as ``agents.baselines.view.BaselineView``: other shops' stock, other seats' packs).

Every choice is exact (no snapping): each index's intent has the effect of the scalar
baseline's sentence in the same state, which the table was built for (``sim.codec.action_table``
version 2): factor's delivery ``I hand Vell <n> <goods>`` is "deliver n" (n is 1 or 2, a
commission's count), magpie's hawking ``1 <good> for <base + 2> coins`` is the offer row with
markup 2, buys are 1 or 2 units (a commission needs at most 2), sells are of all held units (the
sentence names the held count), pick-ups take 1, walks and robberies name a room or a seat.
``tests/test_batched_faces.py`` plays both faces of ``guild/Guild-v0`` side by side and finds
them equal.  ``BatchedRandom`` plays uniformly over the legal actions.

The numpy ``act_numpy`` methods are the readable statement of each rule; ``act`` runs their
compiled twins (``agents.baselines.batched_kernels``), which answer a few seats in microseconds
instead of hundreds (``tests/test_batched_kernels.py`` holds the two equal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from agents.baselines.batched_kernels import KernelCall, baseline_tables
from sim.batched.observe import legal_masks
from sim.batched.tables import tables_for
from sim.codec.action_table import BUY_QTYS, DELIVER_QTYS, QTY_ALL, RELS
from sim.rules.world import World, per_world

if TYPE_CHECKING:
    from sim.batched.engine import BatchedGuild
    from sim.batched.tables import Tables

WAIT = 0


class _Index:
    """Action indices of the table entries the baselines use."""

    def __init__(self, tb: Tables) -> None:
        ix, ng = tb.index, tb.n_goods
        goods = range(ng)
        self.move = np.array([ix[("move", -1, 1, 0, 0, r)] for r in range(tb.n_rooms)])
        self.take1 = np.array([ix[("take", g, 1, 0, 0, -1)] for g in goods])
        self.deliver = np.array([[ix[("deliver", g, q, 0, 0, -1)] for q in DELIVER_QTYS[:2]]
                                 for g in goods])                      # [good, units - 1]
        self.buy = np.array([[ix[("buy", g, q, 0, 0, -1)] for q in BUY_QTYS] for g in goods])
        self.sell_all = np.array([ix[("sell", g, QTY_ALL, 0, 0, -1)] for g in goods])
        self.buy1 = self.buy[:, 0]
        self.rob = np.array([0] + [ix[("rob", -1, 1, rel, 0, -1)] for rel in RELS])
        hawk = tb.values + 2  # magpie's asking price
        self.hawk = np.array([[0] * ng] + [[ix[("offer", g, 1, rel, int(hawk[g]), -1)]
                                            for g in goods] for rel in RELS])  # [rel, good]


def _index(tb: Tables) -> _Index:
    return _index_of(tb.world)


@per_world
def _index_of(world: World) -> _Index:
    return _Index(tables_for(world))


def _first(cond: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: whether any column holds, and the first column that does."""
    return cond.any(1), cond.argmax(1)


class BatchedFactor:
    """RULES §21 factor for many seats: deliver, buy for the commissions, sell spares, pick up,
    walk toward the nearest stocked shop (or the Guildhall, or the market), wait."""

    name = "factor"
    batched = True
    # In every state ``act`` picks the index with the effect of the scalar Factor's
    # sentence, and keeps no state: ``guild/Guild-v0`` may play it in the scalar one's place.
    scalar_twin = True

    def __init__(self, sell_margin: int = 0, pickup_value: int = 8) -> None:
        self.sell_margin = sell_margin
        self.pickup_value = pickup_value
        self._kernel = KernelCall("factor_rows")

    def act(self, e: BatchedGuild, r: np.ndarray, s: np.ndarray) -> np.ndarray:
        """The factor's action index for each seat ``s[i]`` of row ``r[i]`` (compiled)."""
        return self._kernel(r, s, e.state, baseline_tables(e.world), self.sell_margin,
                            self.pickup_value)

    def act_numpy(self, e: BatchedGuild, r: np.ndarray, s: np.ndarray) -> np.ndarray:
        """``act`` in numpy, rule by rule: the reference the compiled kernel is held to."""
        tb = e.tables
        ix = _index(tb)
        m = r.size
        rows = np.arange(m)
        here = e.room[r, s]
        npc = tb.keeper_here[here]
        items = e.items[r, s]
        free = tb.carry_limit - e.carried[r, s]
        coin = e.coin[r, s]
        qg = e.quest_item[r, s]
        out_q = e.quest_count[r, s] - e.delivered[r, s]
        open_q = out_q > 0
        nq = qg.shape[1]
        needed = np.zeros(items.shape, bool)
        for q in range(nq):
            needed[rows, qg[:, q]] |= open_q[:, q]
        act = np.full(m, -1, np.int64)

        def choose(cond: np.ndarray, index: np.ndarray) -> None:
            pick = cond & (act < 0)
            act[pick] = index[pick]

        # Rule 1: at the guild's keeper, hand in what an open commission needs.
        at_guild = npc == tb.guild
        for q in range(nq):
            held = items[rows, qg[:, q]]
            units = np.minimum(out_q[:, q], held)
            choose(at_guild & open_q[:, q] & (units > 0),
                   ix.deliver[qg[:, q], np.maximum(units, 1) - 1])
        # Rule 2: a keeper here: buy for the commissions, then sell a spare good.
        stock = e.stock[r, npc]
        for q in range(nq):
            g = qg[:, q]
            want = out_q[:, q] - items[rows, g]
            ok = open_q[:, q] & (want > 0) & tb.deals[npc, g] & (free > 0)
            st = stock[rows, g]
            units = np.minimum(np.minimum(want, st), free)
            cum = tb.cum_ask[g, st]
            n = ((cum[:, 1:] <= coin[:, None])
                 & (np.arange(1, cum.shape[1]) <= units[:, None])).sum(1)
            choose(ok & (n > 0), ix.buy[g, np.clip(n - 1, 0, len(BUY_QTYS) - 1)])
        bid = tb.bid[np.arange(tb.n_goods), stock]
        spare = ((items > 0) & ~needed & tb.deals[npc] & (bid >= tb.values + self.sell_margin)
                 & (e.shop_coin[r, npc][:, None] >= bid))
        anyc, first = _first(spare)
        choose(anyc, ix.sell_all[first])
        # Rule 3: pick up a needed or valuable good.
        floor = e.floor[r, here]
        wanted = (floor > 0) & (needed | (tb.values >= self.pickup_value)) & (free > 0)[:, None]
        anyc, first = _first(wanted)
        choose(anyc, ix.take1[first])
        # Rule 4: walk one step toward a target room.
        target = np.full(m, -1, np.int64)
        k = tb.n_keepers
        all_stock = e.stock[r, :k]                                   # [m, keepers, goods]
        dist = tb.dist[here][:, tb.keeper_room]                         # [m, keepers]
        for q in range(nq):
            g = qg[:, q]
            short = open_q[:, q] & (items[rows, g] < out_q[:, q]) & (target < 0)
            sells = tb.deals[:k].T[g] & (all_stock[rows, :, g] > 0)    # [m, keepers]
            d = np.where(sells, dist, np.iinfo(np.int64).max)
            best = d.argmin(1)                                        # nearest, lowest id
            found = short & sells.any(1)
            target[found] = tb.keeper_room[best[found]]
        none = target < 0
        target[none] = np.where(open_q.any(1), tb.keeper_room[tb.guild], 0)[none]
        step = tb.step_toward[here, target]
        choose(step >= 0, ix.move[np.maximum(step, 0)])
        # Rule 5.
        act[act < 0] = WAIT
        return act


class BatchedMagpie:
    """RULES §21 magpie for many seats: rob in the dark, hawk goods, trade with the keeper,
    ramble (dark exits first with an empty pack)."""

    name = "magpie"
    batched = True
    # In every state ``act`` picks the index with the effect of the scalar Magpie's
    # sentence, and keeps no state: ``guild/Guild-v0`` may play it in the scalar one's place.
    scalar_twin = True

    def __init__(self, hawk_period: int = 3, sell_margin: int = 1, buy_margin: int = -1) -> None:
        self.hawk_period = hawk_period
        self.sell_margin = sell_margin
        self.buy_margin = buy_margin
        self._kernel = KernelCall("magpie_rows")

    def act(self, e: BatchedGuild, r: np.ndarray, s: np.ndarray) -> np.ndarray:
        """The magpie's action index for each seat ``s[i]`` of row ``r[i]`` (compiled)."""
        return self._kernel(r, s, e.state, baseline_tables(e.world), e.thievery,
                            self.hawk_period, self.sell_margin, self.buy_margin)

    def act_numpy(self, e: BatchedGuild, r: np.ndarray, s: np.ndarray) -> np.ndarray:
        """``act`` in numpy, rule by rule: the reference the compiled kernel is held to."""
        tb = e.tables
        ix = _index(tb)
        m = r.size
        here = e.room[r, s]
        npc = tb.keeper_here[here]
        items = e.items[r, s]
        carried = e.carried[r, s]
        free = tb.carry_limit - carried
        coin = e.coin[r, s]
        act = np.full(m, -1, np.int64)

        def choose(cond: np.ndarray, index: np.ndarray) -> None:
            pick = cond & (act < 0)
            act[pick] = index[pick]

        seats = np.arange(6)
        cogs = (e.room[r] == here[:, None]) & (seats[None, :] != s[:, None])  # seat order
        employer = np.where(e.retainer_turns[r, s] > 0, e.retainer_of[r, s], -1)
        # Rule 1: rob the first other seat here that carries goods (not its employer).
        if e.thievery:
            prey = cogs & (seats[None, :] != employer[:, None]) & (e.carried[r] > 0)
            anyc, first = _first(prey)
            choose(anyc & (tb.dark[here] == 1), ix.rob[(first - s) % 6])
        # Rule 2: hawk the lowest-id held good to the first other seat here.
        if self.hawk_period > 0:
            anyc, first = _first(cogs)
            good = (items > 0).argmax(1)
            choose((e.turn[r] % self.hawk_period == 0) & (carried > 0) & anyc,
                   ix.hawk[(first - s) % 6, good])
        # Rule 3: trade with the keeper here.
        stock = e.stock[r, npc]
        g = np.arange(tb.n_goods)
        bid, ask = tb.bid[g, stock], tb.ask[g, stock]
        deals = tb.deals[npc]
        sell = ((items > 0) & deals & (bid >= tb.values + self.sell_margin)
                & (e.shop_coin[r, npc][:, None] >= bid))
        anyc, first = _first(sell)
        choose(anyc, ix.sell_all[first])
        buy = (deals & (stock > 0) & (free > 0)[:, None] & (ask <= tb.values + self.buy_margin)
               & (coin[:, None] >= ask))
        anyc, first = _first(buy)
        choose(anyc, ix.buy1[first])
        # Rule 4: ramble.
        exits = tb.exits[here]                                   # [m, degree], -1 padded
        real = exits >= 0
        fresh = real & (exits != e.prev_room[r, s][:, None])
        dark_exit = fresh & (tb.dark[np.maximum(exits, 0)] == 1) & (carried == 0)[:, None]
        anyd, first_d = _first(dark_exit)
        anyf, first_f = _first(fresh)
        col = np.where(anyd, first_d, np.where(anyf, first_f, 0))
        choose(np.ones(m, bool), ix.move[exits[np.arange(m), col]])
        return act


class BatchedRandom:
    """Uniform over the legal actions of each seat (``legal_masks``), from its own stream."""

    name = "random"
    batched = True

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, e: BatchedGuild, r: np.ndarray, s: np.ndarray) -> np.ndarray:
        return sample_legal(self.rng, legal_masks(e, r, s))


def sample_legal(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """One uniformly drawn legal index per row of a boolean mask (wait is always legal)."""
    cum = np.cumsum(mask, axis=1)
    pick = (rng.random(mask.shape[0]) * cum[:, -1]).astype(np.int64)
    return (cum > pick[:, None]).argmax(1)

