"""Constant tables of one town for the batched engine, built once from a ``World``.

Action index -> intent slots (``sim.codec.action_table``), prices by stock and the cumulative
cost of
walking them unit by unit (RULES §7, §9.1-9.2), rooms, exits, keepers and restock order
(RULES §2, §6.2).  Keeper id ``n_keepers`` is a *dummy keeper* that stands in every room without
one: it deals in nothing and holds nothing, so "the keeper here" is always a valid index.
"""

from __future__ import annotations

from enum import IntEnum
from math import lcm

import numpy as np

from ..codec.action_table import action_table
from ..rules.intents import REASONS
from ..rules.prices import STOCK_CAP
from ..rules.world import SEATS, World


class Kind(IntEnum):
    """Intent kinds of the action table after the structured checks (``sim.rules.checks``)."""

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


R = {name: i for i, name in enumerate(REASONS)}  # reason name -> code; -1 is "no act yet"
NO_OFFER, TRADE_OFFER, HIRE_OFFER = 0, 1, 2
_BLOCK_KIND = {"wait": Kind.WAIT, "quest": Kind.QUEST, "move": Kind.MOVE, "take": Kind.TAKE,
               "drop": Kind.DROP, "buy": Kind.BUY, "sell": Kind.SELL, "deliver": Kind.DELIVER,
               "gift": Kind.GIFT, "pay": Kind.PAY, "offer": Kind.OFFER, "hire": Kind.HIRE,
               "accept": Kind.ACCEPT, "rob": Kind.ROB}


class Tables:
    """Every constant the batched engine reads, as numpy arrays (int64 unless noted)."""

    def __init__(self, world: World) -> None:
        self.world = world
        w = world
        g, r, k = w.n_goods, w.n_rooms, w.n_keepers
        self.n_goods, self.n_rooms, self.n_keepers = g, r, k
        self.carry_limit = w.carry_limit
        self.guild = w.guild
        self.cap = STOCK_CAP
        # --- the action table -------------------------------------------------------------
        table = action_table(w)
        self.n_actions = len(table)
        self.kind = np.array([_BLOCK_KIND[a.block] for a in table], np.int64)
        self.item = np.array([a.item for a in table], np.int64)
        self.qty = np.array([a.qty for a in table], np.int64)
        self.rel = np.array([a.rel for a in table], np.int64)
        self.coin = np.array([a.coin for a in table], np.int64)
        self.to_room = np.array([a.to_room for a in table], np.int64)
        self.to_keeper = np.array([a.to_keeper for a in table], bool)
        self.block_start = {}
        for i, a in enumerate(table):
            self.block_start.setdefault(a.block, i)
        self.index = {(a.block, a.item, a.qty, a.rel, a.coin, a.to_room): i
                      for i, a in enumerate(table)}
        # --- rooms --------------------------------------------------------------------------
        self.adjacent = np.array(w.adjacent, bool)
        self.dist = np.array(w.dist, np.int64)
        self.dark = np.array([rm.dark for rm in w.rooms], np.int64)
        # The observation's "exits" and "dark" keys of each room, side by side (sim.codec.encode).
        self.room_block = np.concatenate([self.adjacent, self.dark[:, None]], 1).astype(
            np.float32)
        kir = np.array(w.keeper_in_room, np.int64)
        self.keeper_here = np.where(kir < 0, k, kir)  # dummy keeper k in rooms without one
        self.step_toward = np.array([[w.step_toward(a, b) for b in range(r)] for a in range(r)],
                                    np.int64)
        deg = max(len(rm.exits) for rm in w.rooms)
        self.exits = np.full((r, deg), -1, np.int64)
        for rm in w.rooms:
            self.exits[rm.id, :len(rm.exits)] = rm.exits
        # --- keepers and goods --------------------------------------------------------------
        self.deals = np.zeros((k + 1, g), bool)
        self.deals[:k] = np.array(w.deals, bool)
        self.keeper_room = np.array([kp.room for kp in w.keepers], np.int64)
        self.values = np.array(w.values, np.int64)
        self.ask = np.array(w.ask_table, np.int64)   # [good, stock 0..12]
        self.bid = np.array(w.bid_table, np.int64)
        self.price_row = np.arange(g) * (STOCK_CAP + 1)  # flat offset of each good's row
        self.opening_stock = np.zeros((k + 1, g), np.int64)
        for kp in w.keepers:
            for good, s in zip(kp.trade, kp.opening):
                self.opening_stock[kp.id, good] = s
        period = lcm(*[len(kp.trade) for kp in w.keepers if kp.trade] or [1])
        self.restock_period = period
        self.restock = np.full((k, period), -1, np.int64)  # [keeper, turn % period] -> good
        for kp in w.keepers:
            if kp.trade:
                self.restock[kp.id] = [kp.trade[t % len(kp.trade)] for t in range(period)]
        # --- unit-by-unit price walks (RULES §7) --------------------------------------------
        # cum_ask[g, s, u]: cost of buying u units from stock s (stock falls as it sells);
        # cum_bid[g, s, u]: pay for selling u units into stock s (stock rises, capped at 12).
        # Beyond the stock a purchase is impossible: a cost no purse reaches.
        units = max(w.carry_limit, STOCK_CAP)
        self.max_units = units
        cap = STOCK_CAP
        self.cum_ask = np.zeros((g, cap + 1, units + 1), np.int64)
        self.cum_bid = np.zeros((g, cap + 1, units + 1), np.int64)
        for good in range(g):
            for s in range(cap + 1):
                for u in range(1, units + 1):
                    step_ask = self.ask[good, s - u + 1] if u <= s else 1 << 40
                    self.cum_ask[good, s, u] = self.cum_ask[good, s, u - 1] + step_ask
                    self.cum_bid[good, s, u] = (self.cum_bid[good, s, u - 1]
                                                + self.bid[good, min(cap, s + u - 1)])
        # The columns the table's actions can reach: a buy is of at most max(BUY qty) units,
        # a sale of at most a full pack.
        most = int(max((a.qty for a in table if a.block == "buy"), default=1))
        self.cum_buy = np.ascontiguousarray(self.cum_ask[:, :, :min(most, units) + 1])
        self.cum_sell = np.ascontiguousarray(self.cum_bid[:, :, :w.carry_limit + 1])
        self.seats = SEATS
