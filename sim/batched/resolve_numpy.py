"""The resolvers of RULES §9-11 over many episodes at once.

Each resolver takes the engine, the turn's decoded intents and the rows ``r`` (episodes) with
the seat ``me`` acting in each of them; one row appears at most once, so scatter writes never
collide.  Checks run in the order of the scalar resolvers in ``sim.rules.resolve`` and
``sim.rules.robbery``: the first failing one sets the reason and changes nothing.  Where an act
moves
nothing, its amounts are computed as 0 and written anyway; adding 0 changes nothing, which saves
a selection per check.  Every act that the scalar engine logs a public line for sets
``logged`` (the batched engine counts lines per room instead of keeping text, RULES §12.1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..rules.world import FINE_COIN, RETAINER_TURNS, ROB_COIN
from .tables import HIRE_OFFER, NO_OFFER, TRADE_OFFER, Kind, R

if TYPE_CHECKING:
    from .engine import BatchedGuild, TurnIntents

OK = R["ok"]


def buy(e: BatchedGuild, t: TurnIntents, r: np.ndarray, me: np.ndarray) -> None:
    """§9.1: walk the rising ask one unit at a time; partial fills are ok."""
    tb = e.tables
    npc, g, qty = t.keeper[r, me], t.item[r, me], t.qty[r, me]
    free = tb.carry_limit - e.carried[r, me]
    st = e.stock[r, npc, g]
    coin = e.coin[r, me]
    deals = tb.deals[npc, g]
    reason = np.where(~deals, R["out_of_stock"], np.where(
        free <= 0, R["carry_limit"], np.where(st <= 0, R["out_of_stock"], OK)))
    want = np.where(reason == OK, np.minimum(np.minimum(qty, st), free), 0)
    cum = tb.cum_buy.reshape(-1, tb.cum_buy.shape[2]).take(g * (tb.cap + 1) + st, axis=0)
    u = np.arange(1, cum.shape[1])
    got = ((cum[:, 1:] <= coin[:, None]) & (u <= want[:, None])).sum(1)
    reason = np.where((reason == OK) & (got == 0), R["cannot_afford"], reason)
    spent = cum[np.arange(r.size), got]
    e.coin[r, me] = coin - spent
    e.shop_coin[r, npc] += spent
    e.stock[r, npc, g] = st - got
    e.items[r, me, g] += got
    e.carried[r, me] += got
    t.reason[r, me] = reason
    t.logged[r, me] = got > 0


def sell(e: BatchedGuild, t: TurnIntents, r: np.ndarray, me: np.ndarray) -> None:
    """§9.2: walk the falling bid; the shop stops paying when its coin runs short."""
    tb = e.tables
    npc, g, qty = t.keeper[r, me], t.item[r, me], t.qty[r, me]
    held = e.items[r, me, g]
    st = e.stock[r, npc, g]
    purse = e.shop_coin[r, npc]
    reason = np.where(~tb.deals[npc, g], R["not_wanted"],
                      np.where(held <= 0, R["not_carrying"], OK))
    want = np.where(reason == OK, np.minimum(qty, held), 0)
    cum = tb.cum_sell.reshape(-1, tb.cum_sell.shape[2]).take(g * (tb.cap + 1) + st, axis=0)
    u = np.arange(1, cum.shape[1])
    sold = ((cum[:, 1:] <= purse[:, None]) & (u <= want[:, None])).sum(1)
    reason = np.where((reason == OK) & (sold == 0), R["npc_broke"], reason)
    earned = cum[np.arange(r.size), sold]
    e.shop_coin[r, npc] = purse - earned
    e.coin[r, me] += earned
    e.items[r, me, g] = held - sold
    e.carried[r, me] -= sold
    e.stock[r, npc, g] = np.where(sold > 0, np.minimum(tb.cap, st + sold), st)
    t.reason[r, me] = reason
    t.logged[r, me] = sold > 0


def deliver(e: BatchedGuild, t: TurnIntents, r: np.ndarray, me: np.ndarray) -> None:
    """§9.4 and §10: the goods leave the pack whatever happens; Vell credits commissions."""
    tb = e.tables
    npc, g, qty = t.keeper[r, me], t.item[r, me], t.qty[r, me]
    held = e.items[r, me, g]
    go = held > 0
    units = np.where(go, np.minimum(qty, held), 0)
    e.items[r, me, g] = held - units
    e.carried[r, me] -= units
    st = e.stock[r, npc, g]
    e.stock[r, npc, g] = np.where(go, np.minimum(tb.cap, st + units), st)
    credited = np.zeros(r.size, np.int64)
    at_guild = go & (npc == tb.guild)
    for q in range(e.quest_item.shape[2]):
        match = at_guild & (e.quest_item[r, me, q] == g)
        d = e.delivered[r, me, q]
        take = np.where(match, np.maximum(0, np.minimum(units - credited,
                                                        e.quest_count[r, me, q] - d)), 0)
        e.delivered[r, me, q] = d + take
        credited += take
    t.reason[r, me] = np.where(~go, R["not_carrying"],
                               np.where(credited > 0, OK, R["no_matching_commission"]))
    t.logged[r, me] = go


def take(e: BatchedGuild, t: TurnIntents, r: np.ndarray, me: np.ndarray) -> None:
    """§9.9: pick goods off the floor, up to the free slots (qty 0 is an ok take of 0)."""
    g, qty, here = t.item[r, me], t.qty[r, me], t.here[r, me]
    present = e.floor[r, here, g]
    free = e.tables.carry_limit - e.carried[r, me]
    reason = np.where(present <= 0, R["no_such_item"], np.where(free <= 0, R["carry_limit"], OK))
    units = np.where(reason == OK, np.minimum(np.minimum(qty, present), free), 0)
    e.floor[r, here, g] = present - units
    e.items[r, me, g] += units
    e.carried[r, me] += units
    t.reason[r, me] = reason
    t.logged[r, me] = reason == OK


def drop(e: BatchedGuild, t: TurnIntents, r: np.ndarray, me: np.ndarray) -> None:
    """§9.10: put carried goods on the floor."""
    g, qty, here = t.item[r, me], t.qty[r, me], t.here[r, me]
    held = e.items[r, me, g]
    go = held > 0
    units = np.where(go, np.minimum(qty, held), 0)
    e.items[r, me, g] = held - units
    e.carried[r, me] -= units
    e.floor[r, here, g] += units
    t.reason[r, me] = np.where(go, OK, R["not_carrying"])
    t.logged[r, me] = go


def _present(e: BatchedGuild, r: np.ndarray, me: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Checks 1-3 of §9.5-9.7 for table intents: ``other`` is always another valid seat."""
    return e.room[r, other] == e.room[r, me]


def gift(e: BatchedGuild, t: TurnIntents, r: np.ndarray, me: np.ndarray) -> None:
    """§9.5 with goods: into the other seat's free slots; no consent needed."""
    g, qty, other = t.item[r, me], t.qty[r, me], t.other[r, me]
    here = _present(e, r, me, other)
    held = e.items[r, me, g]
    free = e.tables.carry_limit - e.carried[r, other]
    units = np.where(here, np.maximum(0, np.minimum(np.minimum(qty, held), free)), 0)
    e.items[r, me, g] = held - units
    e.carried[r, me] -= units
    e.items[r, other, g] += units
    e.carried[r, other] += units
    t.reason[r, me] = np.where(~here, R["not_in_room"], np.where(
        units > 0, OK, np.where(held <= 0, R["not_carrying"], R["carry_limit"])))
    t.logged[r, me] = units > 0


def pay(e: BatchedGuild, t: TurnIntents, r: np.ndarray, me: np.ndarray) -> None:
    """§9.5 with coin only: up to the purse."""
    other = t.other[r, me]
    here = _present(e, r, me, other)
    purse = e.coin[r, me]
    c = np.where(here, np.minimum(t.coin[r, me], purse), 0)
    e.coin[r, me] = purse - c
    e.coin[r, other] += c
    t.reason[r, me] = np.where(~here, R["not_in_room"], np.where(c > 0, OK, R["no_target"]))
    t.logged[r, me] = c > 0


def offer(e: BatchedGuild, t: TurnIntents, r: np.ndarray, me: np.ndarray) -> None:
    """§9.6: post a trade offer (nothing escrowed); qty is clamped to what is held."""
    g, other = t.item[r, me], t.other[r, me]
    here = _present(e, r, me, other)
    held = e.items[r, me, g]
    units = np.maximum(1, np.minimum(t.qty[r, me], np.maximum(1, held)))
    ok = here & (held >= units)
    t.reason[r, me] = np.where(~here, R["not_in_room"], np.where(ok, OK, R["not_carrying"]))
    t.logged[r, me] = ok
    _post(e, r[ok], me[ok], TRADE_OFFER, other[ok], g[ok], units[ok],
          np.maximum(0, t.coin[r[ok], me[ok]]))


def hire(e: BatchedGuild, t: TurnIntents, r: np.ndarray, me: np.ndarray) -> None:
    """§9.7: post a hire offer; a fee above the purse is clamped to the purse."""
    other = t.other[r, me]
    here = _present(e, r, me, other)
    fee = np.minimum(np.maximum(1, t.coin[r, me]), e.coin[r, me])
    ok = here & (fee >= 1)
    t.reason[r, me] = np.where(~here, R["not_in_room"], np.where(ok, OK, R["cannot_afford"]))
    t.logged[r, me] = ok
    n = int(ok.sum())
    _post(e, r[ok], me[ok], HIRE_OFFER, other[ok], np.full(n, -1), np.zeros(n, np.int64),
          fee[ok])


def _post(e: BatchedGuild, r: np.ndarray, me: np.ndarray, kind: int, to: np.ndarray,
          item: np.ndarray, qty: np.ndarray, coin: np.ndarray) -> None:
    """Append an offer: slot ``turn % 2`` holds this turn's offers, one per sender."""
    slot = e.turn[r] & 1
    e.off_kind[r, slot, me] = kind
    e.off_to[r, slot, me] = to
    e.off_item[r, slot, me] = item
    e.off_qty[r, slot, me] = qty
    e.off_coin[r, slot, me] = coin


def accept(e: BatchedGuild, t: TurnIntents, r: np.ndarray, me: np.ndarray) -> None:
    """§9.8: take the named seat's offer posted last turn; consumed even if it then fails.

    Each seat posts at most one offer a turn, so "the oldest matching offer from that seat" is
    the only one in the sender's slot.
    """
    tb = e.tables
    frm = t.other[r, me]
    slot = (e.turn[r] + 1) & 1  # last turn's slot
    kind = e.off_kind[r, slot, frm]
    found = (kind != NO_OFFER) & (e.off_to[r, slot, frm] == me)
    e.off_kind[r[found], slot[found], frm[found]] = NO_OFFER
    here = found & _present(e, r, me, frm)
    g = np.maximum(0, e.off_item[r, slot, frm])  # hire offers carry item -1: read good 0
    qty, price = e.off_qty[r, slot, frm], e.off_coin[r, slot, frm]
    purse_me, purse_frm = e.coin[r, me], e.coin[r, frm]
    trade_ok = here & (kind == TRADE_OFFER) & (e.items[r, frm, g] >= qty) & (purse_me >= price) \
        & (tb.carry_limit - e.carried[r, me] >= qty)
    hire_ok = here & (kind == HIRE_OFFER) & (purse_frm >= price)
    units = np.where(trade_ok, qty, 0)
    pay_me = np.where(trade_ok, price, np.where(hire_ok, -price, 0))  # coin me -> frm
    e.items[r, frm, g] -= units
    e.carried[r, frm] -= units
    e.items[r, me, g] += units
    e.carried[r, me] += units
    e.coin[r, me] = purse_me - pay_me
    e.coin[r, frm] = purse_frm + pay_me
    hr, hm = r[hire_ok], me[hire_ok]
    e.retainer_of[hr, hm] = frm[hire_ok]
    e.retainer_turns[hr, hm] = RETAINER_TURNS
    ok = trade_ok | hire_ok
    t.reason[r, me] = np.where(~found, R["no_such_offer"], np.where(ok, OK, R["offer_expired"]))
    t.logged[r, me] = ok


def rob(e: BatchedGuild, t: TurnIntents, r: np.ndarray, me: np.ndarray) -> None:
    """§11, checks in order; a failed robber pays a fine of up to 8 coin to the victim."""
    tb = e.tables
    victim = t.other[r, me]
    room = e.room[r, me]
    present = e.room[r, victim] == room
    bound = (e.retainer_of[r, me] == victim) & (e.retainer_turns[r, me] > 0)
    reason = np.where(~present, R["not_in_room"], np.where(
        not e.thievery, R["thievery_forbidden"], np.where(bound, R["bound_by_contract"], OK)))
    go = reason == OK
    # Strength from the current state (§11 step 6): hirelings present on each side.
    hired = e.retainer_turns[r] > 0
    here = e.room[r] == room[:, None]
    ret = e.retainer_of[r]
    dark = tb.dark[room]
    attack = 1 + ((ret == me[:, None]) & hired & here).sum(1) + dark
    defence = 1 + ((ret == victim[:, None]) & hired & here).sum(1) + 2 * (1 - dark)
    fail = go & (attack <= defence)
    win = go & ~fail
    purse_me, purse_v = e.coin[r, me], e.coin[r, victim]
    fine = np.where(fail, np.minimum(purse_me, FINE_COIN), 0)
    # Loot: the victim's most valuable held good, ties to the lowest id (argmax takes the first).
    pack = e.items[r, victim]
    loot = np.argmax(np.where(pack > 0, tb.values, -1), axis=1)
    by_item = win & (e.carried[r, victim] > 0) & (e.carried[r, me] < tb.carry_limit)
    by_coin = win & ~by_item
    taken = np.where(by_coin, np.minimum(purse_v, ROB_COIN), 0)
    one = by_item.astype(np.int64)
    e.items[r, victim, loot] -= one
    e.carried[r, victim] -= one
    e.items[r, me, loot] += one
    e.carried[r, me] += one
    e.coin[r, me] = purse_me - fine + taken
    e.coin[r, victim] = purse_v + fine - taken
    robbed = (by_item | (taken > 0)).astype(np.int64)
    e.robberies[r, me] += robbed
    e.robbed[r, victim] += robbed
    t.reason[r, me] = np.where(fail, R["robbery_failed"], np.where(
        by_coin & (taken == 0), R["nothing_to_take"], reason))
    t.logged[r, me] = go


def move_all(e: BatchedGuild, t: TurnIntents) -> None:
    """§9.12 for every seat at once: a walk changes only the walker, so order cannot matter."""
    mover = t.kind == Kind.MOVE
    if not mover.any():
        return
    ok = mover & e.tables.adjacent[t.here, np.maximum(t.to_room, 0)] & (t.to_room >= 0)
    np.copyto(e.prev_room, t.here, where=ok)
    np.copyto(e.room, t.to_room, where=ok)
    np.copyto(t.reason, np.where(ok, OK, R["no_such_exit"]), where=mover)
    t.logged |= ok


def quiet_all(e: BatchedGuild, t: TurnIntents) -> None:
    """§9.3 quest, §9.13 wait and none, for every seat at once (no shared state changes)."""
    asked = t.kind == Kind.QUEST
    e.hint |= asked
    waited = t.kind == Kind.WAIT
    np.copyto(t.reason, OK, where=asked)
    np.copyto(t.reason, R["waited"], where=waited)
    t.logged |= asked | waited


# The classes whose acts can touch another seat's state (shop, floor, packs, purses, offers):
# resolved position by position in initiative order (RULES §6.3).
SEQUENTIAL = {2: (Kind.BUY, Kind.SELL, Kind.DELIVER), 3: (Kind.TAKE, Kind.DROP),
              4: (Kind.GIFT, Kind.PAY, Kind.OFFER, Kind.HIRE, Kind.ACCEPT), 5: (Kind.ROB,)}
RESOLVERS = {Kind.BUY: buy, Kind.SELL: sell, Kind.DELIVER: deliver, Kind.TAKE: take,
             Kind.DROP: drop, Kind.GIFT: gift, Kind.PAY: pay, Kind.OFFER: offer,
             Kind.HIRE: hire, Kind.ACCEPT: accept, Kind.ROB: rob}
