"""A town's constants as arrays for the batched engine, derived once from the rules' sources.

Nothing here restates a rule: the action table comes from ``sim.codec.action_table``, the
structured checks of each action in each room from ``sim.rules.checks.check_structured``, the
resolution class of each kind from ``sim.rules.turn.resolution_class``, prices from
``sim.rules.prices`` (asks, bids and the cumulative cost of a purchase from ``buy_walk``),
restock order from ``sim.rules.turn.restock_good``, the observation layout from
``sim.codec.encode.layout``.

Keeper id ``n_keepers`` is a *dummy keeper* that stands in every room without one: it deals in
nothing and holds nothing, so "the keeper here" is always a valid index.
"""

from __future__ import annotations

from enum import IntEnum
from math import lcm
from typing import NamedTuple

import numpy as np

from ..codec.action_table import action_table, to_intent
from ..codec.encode import FLOOR_CLIP, REL, layout
from ..rules.checks import check_structured
from ..rules.intents import REASONS
from ..rules.prices import STOCK_CAP, buy_walk
from ..rules.turn import resolution_class, restock_good
from ..rules.world import MAX_TURNS, World, per_world


class Kind(IntEnum):
    """What an action of the table does, after the structured checks (one code per resolver)."""

    WAIT = 0
    NONE = 1      # failed a structured check; the reason is already set
    QUEST = 2
    BUY = 3
    SELL = 4
    DELIVER = 5   # give to the keeper here (class 2)
    TAKE = 6
    DROP = 7
    GIFT = 8      # give goods to a seat (class 4)
    PAY = 9       # give coin to a seat (class 4)
    OFFER = 10    # trade offer
    HIRE = 11
    ACCEPT = 12
    ROB = 13
    MOVE = 14


REASON_CODE = {name: i for i, name in enumerate(REASONS)}  # reason -> code; -1: no act yet
NO_OFFER, TRADE_OFFER, HIRE_OFFER = 0, 1, 2
BLOCK_KIND = {"wait": Kind.WAIT, "quest": Kind.QUEST, "move": Kind.MOVE, "take": Kind.TAKE,
              "drop": Kind.DROP, "buy": Kind.BUY, "sell": Kind.SELL, "deliver": Kind.DELIVER,
              "gift": Kind.GIFT, "pay": Kind.PAY, "offer": Kind.OFFER, "hire": Kind.HIRE,
              "accept": Kind.ACCEPT, "rob": Kind.ROB}
# The intent kind of RULES §15.1 behind each code (NONE resolves as "none", class 7).
RULES_KIND = {Kind.WAIT: "wait", Kind.NONE: "none", Kind.QUEST: "quest", Kind.BUY: "buy",
              Kind.SELL: "sell", Kind.DELIVER: "give", Kind.TAKE: "take", Kind.DROP: "drop",
              Kind.GIFT: "give", Kind.PAY: "give", Kind.OFFER: "trade", Kind.HIRE: "hire",
              Kind.ACCEPT: "accept", Kind.ROB: "rob", Kind.MOVE: "move"}
# The observation keys in layout order, as the observation kernel addresses them.
OBS_KEYS = ("time", "purse", "pack", "commissions", "hint", "room", "exits", "dark", "floor",
            "cogs", "keeper", "shop", "shop_coin", "offers", "standing", "last", "heard",
            "action_mask")


class KernelTables(NamedTuple):
    """What the compiled kernels read (int64 arrays unless noted); see :class:`Tables`."""

    kind: np.ndarray         # [action, room] Kind after the structured checks
    reason: np.ndarray       # [action, room] reason code when kind is NONE, else -1
    item: np.ndarray         # [action]
    qty: np.ndarray
    rel: np.ndarray
    coin: np.ndarray
    to_room: np.ndarray
    kind_class: np.ndarray   # [Kind] resolution class 2..7
    keeper_here: np.ndarray  # [room] keeper id, the dummy where none
    keeper_room: np.ndarray  # [keeper]
    deals: np.ndarray        # [keeper + 1, good] bool
    ask: np.ndarray          # [good, stock 0..12]
    bid: np.ndarray
    dark: np.ndarray         # [room] bool
    adjacent: np.ndarray     # [room, room] bool
    values: np.ndarray       # [good]
    restock: np.ndarray      # [keeper, turn % period] good, -1 for none
    mask_src: np.ndarray     # [action] column of the mask feature vector it reads
    obs_at: np.ndarray       # [key] first column of each OBS_KEYS key
    obs_width: int
    n_features: int
    carry_limit: int
    guild: int
    n_keepers: int
    floor_clip: int


class Tables:
    """Every constant the batched engine and its policies read, built once per town."""

    def __init__(self, world: World) -> None:
        self.world = w = world
        g, r, k = w.n_goods, w.n_rooms, w.n_keepers
        self.n_goods, self.n_rooms, self.n_keepers = g, r, k
        self.carry_limit = w.carry_limit
        self.guild = w.guild
        self._actions(w)
        self._town(w)
        self._prices(w)
        self.mask_src = mask_features(w)
        self.n_features = n_mask_features(w)
        lay = layout(w)
        starts = np.cumsum([0] + [shape[0] for shape, _ in lay.values()])
        self.obs_offsets = dict(zip(lay, starts[:-1].tolist()))
        self.obs_width = int(starts[-1])
        self.kernel = KernelTables(
            kind=self.checked_kind, reason=self.checked_reason, item=self.item, qty=self.qty,
            rel=self.rel, coin=self.coin, to_room=self.to_room, kind_class=self.kind_class,
            keeper_here=self.keeper_here, keeper_room=self.keeper_room, deals=self.deals,
            ask=self.ask, bid=self.bid, dark=self.dark.astype(bool), adjacent=self.adjacent,
            values=self.values, restock=self.restock, mask_src=self.mask_src,
            obs_at=np.array([self.obs_offsets[key] for key in OBS_KEYS], np.int64),
            obs_width=self.obs_width, n_features=self.n_features, carry_limit=w.carry_limit,
            guild=w.guild, n_keepers=k, floor_clip=FLOOR_CLIP)

    def _actions(self, w: World) -> None:
        """The action table as arrays, and each action's checked kind in each room."""
        table = action_table(w)
        self.n_actions = len(table)
        self.item = np.array([a.item for a in table], np.int64)
        self.qty = np.array([a.qty for a in table], np.int64)
        self.rel = np.array([a.rel for a in table], np.int64)
        self.coin = np.array([a.coin for a in table], np.int64)
        self.to_room = np.array([a.to_room for a in table], np.int64)
        self.index = {(a.block, a.item, a.qty, a.rel, a.coin, a.to_room): i
                      for i, a in enumerate(table)}
        # §12 for every action in every room.  A table action names another seat (rel >= 1)
        # whenever it names one, so the checks do not depend on the seat or the offers.
        self.checked_kind = np.empty((len(table), w.n_rooms), np.int64)
        self.checked_reason = np.full((len(table), w.n_rooms), -1, np.int64)
        for i, a in enumerate(table):
            for room in range(w.n_rooms):
                it = check_structured(to_intent(i, w, 0, room), w, 0, room, (), 0)
                self.checked_kind[i, room] = BLOCK_KIND[a.block] if it.kind != "none" else Kind.NONE
                if it.kind == "none":
                    self.checked_reason[i, room] = REASON_CODE[it.reason]
        self.kind_class = np.array([resolution_class(RULES_KIND[kind], kind == Kind.DELIVER)
                                    for kind in Kind], np.int64)

    def _town(self, w: World) -> None:
        """Rooms, exits and keepers (RULES §2)."""
        g, r, k = w.n_goods, w.n_rooms, w.n_keepers
        self.adjacent = np.array(w.adjacent, bool)
        self.dist = np.array(w.dist, np.int64)
        self.dark = np.array([rm.dark for rm in w.rooms], np.int64)
        kir = np.array(w.keeper_in_room, np.int64)
        self.keeper_here = np.where(kir < 0, k, kir)  # the dummy keeper k in rooms without one
        self.keeper_room = np.array([kp.room for kp in w.keepers], np.int64)
        self.step_toward = np.array([[w.step_toward(a, b) for b in range(r)] for a in range(r)],
                                    np.int64)
        deg = max(len(rm.exits) for rm in w.rooms)
        self.exits = np.full((r, deg), -1, np.int64)
        for rm in w.rooms:
            self.exits[rm.id, :len(rm.exits)] = rm.exits
        self.deals = np.zeros((k + 1, g), bool)
        self.deals[:k] = np.array(w.deals, bool)
        self.opening_stock = np.zeros((k + 1, g), np.int64)
        for kp in w.keepers:
            for good, s in zip(kp.trade, kp.opening):
                self.opening_stock[kp.id, good] = s
        # Restock cycles with the lcm of the trade-list lengths, which for up to MAX_GOODS
        # lengths can be astronomic; no turn exceeds MAX_TURNS, so a table of MAX_TURNS + 1
        # turns indexed by ``turn % period`` is exact whenever the lcm is larger.
        period = min(lcm(*[len(kp.trade) for kp in w.keepers if kp.trade] or [1]),
                     MAX_TURNS + 1)
        self.restock = np.array([[restock_good(kp.trade, t) for t in range(period)]
                                 for kp in w.keepers], np.int64).reshape(k, period)

    def _prices(self, w: World) -> None:
        """Asks and bids by stock (§7), and what buying u units from stock s costs (§9.1)."""
        self.values = np.array(w.values, np.int64)
        self.ask = np.array(w.ask_table, np.int64)   # [good, stock 0..12]
        self.bid = np.array(w.bid_table, np.int64)
        units = max(w.carry_limit, STOCK_CAP)
        never = 1 << 40  # beyond the stock a purchase is impossible: a cost no purse reaches
        self.cum_ask = np.full((w.n_goods, STOCK_CAP + 1, units + 1), never, np.int64)
        for good in range(w.n_goods):
            for s in range(STOCK_CAP + 1):
                for u in range(min(s, units) + 1):
                    self.cum_ask[good, s, u] = buy_walk(w.ask_table[good], s, u, never)[1]


@per_world
def tables_for(world: World) -> Tables:
    """The batched tables of a town, built once per town."""
    return Tables(world)


def n_mask_features(world: World) -> int:
    """Width of the mask feature vector: the distinct conditions the table's columns read."""
    return 2 + world.n_rooms + 5 * world.n_goods + REL * world.n_goods + 3 * REL


@per_world
def mask_features(world: World) -> np.ndarray:
    """For each action index, the column of the mask feature vector it reads.

    The table's columns repeat a few conditions (every offer price of a good to a seat, say):
    the kernels compute the distinct conditions once per seat, in this order: wait, quest,
    move (room), take, drop, buy, sell, deliver (good each), gift (rel x good), pay and hire
    (rel), accept (rel), rob (rel).
    """
    ng, nr = world.n_goods, world.n_rooms
    goods_at = {"take": 0, "drop": 1, "buy": 2, "sell": 3, "deliver": 4}
    gift, pay = 2 + nr + 5 * ng, 2 + nr + 5 * ng + REL * ng
    src = []
    for a in action_table(world):
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
