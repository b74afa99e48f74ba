"""Optional numba accelerator of the batched engine: the whole step and the encoder compiled.

Selected with ``BatchedGuild(..., backend="numba")`` (or ``"auto"``: numba when installed).
The numpy path stays the reference and the default.  Here every episode is a plain loop that
follows the scalar resolvers of ``sim.rules.resolve`` and ``sim.rules.robbery`` line by line
(unit-by-unit
price walks included), so it is a second, independent transcription of RULES §6-§13; the
differential tests run both backends against the scalar engine.  All arithmetic is on
integers, so "bit-identical" needs no care beyond following the rules.

Compiled functions are cached on disk (``cache=True``): the first use in a fresh checkout
compiles for a few seconds.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

import numpy as np

from ..rules.world import (
    COMPLETION_BONUS,
    FINE_COIN,
    MAX_ROOM_LOG,
    POINT_VALUE,
    POINTS_PER_UNIT,
    RETAINER_TURNS,
    ROB_COIN,
)
from .tables import HIRE_OFFER, NO_OFFER, TRADE_OFFER, Kind, R

if TYPE_CHECKING:
    from .engine import BatchedGuild


def available() -> bool:
    """Whether numba is installed (it is imported only when a kernel first runs)."""
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError, AttributeError):  # e.g. sys.modules["numba"] = None
        return False


def _jit(fn):
    """Compile ``fn`` with numba on its first call (importing numba costs a fraction of a
    second, which numpy-only users should not pay); compiled code is cached on disk."""
    compiled = None

    def call(*args):
        nonlocal compiled
        if compiled is None:
            import numba

            compiled = numba.njit(cache=True, nogil=True)(fn)
        return compiled(*args)

    call.__doc__, call.__name__, call.py_func = fn.__doc__, fn.__name__, fn
    return call


# Constants frozen into the compiled code.
WAIT, NONE, QUEST, BUY, SELL, DELIVER = (int(Kind.WAIT), int(Kind.NONE), int(Kind.QUEST),
                                         int(Kind.BUY), int(Kind.SELL), int(Kind.DELIVER))
TAKE, DROP, GIFT, PAY, OFFER = (int(Kind.TAKE), int(Kind.DROP), int(Kind.GIFT), int(Kind.PAY),
                                int(Kind.OFFER))
HIRE, ACCEPT, ROB, MOVE = int(Kind.HIRE), int(Kind.ACCEPT), int(Kind.ROB), int(Kind.MOVE)
CLASS = np.array([7, 7, 2, 2, 2, 2, 3, 3, 4, 4, 4, 4, 4, 5, 6], np.int64)  # by Kind
OK, WAITED = R["ok"], R["waited"]
R_NO_TARGET, R_NO_NPC_HERE, R_NO_SUCH_EXIT = R["no_target"], R["no_npc_here"], R["no_such_exit"]
R_NO_SUCH_ITEM, R_NOT_CARRYING, R_CARRY = R["no_such_item"], R["not_carrying"], R["carry_limit"]
R_NOT_WANTED, R_OUT_OF_STOCK, R_CANNOT_AFFORD = (R["not_wanted"], R["out_of_stock"],
                                                 R["cannot_afford"])
R_NPC_BROKE, R_NO_MATCH, R_NOT_IN_ROOM = (R["npc_broke"], R["no_matching_commission"],
                                          R["not_in_room"])
R_NO_SUCH_OFFER, R_OFFER_EXPIRED, R_BOUND = (R["no_such_offer"], R["offer_expired"],
                                             R["bound_by_contract"])
R_ROB_FAILED, R_NOTHING, R_FORBIDDEN = (R["robbery_failed"], R["nothing_to_take"],
                                        R["thievery_forbidden"])
MAX_LOG, RET_TURNS, FINE, ROB_MAX = MAX_ROOM_LOG, RETAINER_TURNS, FINE_COIN, ROB_COIN
PPU, BONUS, PVAL = POINTS_PER_UNIT, COMPLETION_BONUS, POINT_VALUE


def step(e: BatchedGuild, actions: np.ndarray) -> None:
    """Resolve one turn of every row of ``e`` in place (clock, open turn and points too)."""
    tb = e.tables
    _step_rows(actions, e.turns, e.thievery,
               tb.kind, tb.item, tb.qty, tb.rel, tb.coin, tb.to_room, tb.to_keeper,
               tb.keeper_here, tb.deals, tb.ask, tb.bid, tb.dark, tb.adjacent, tb.values,
               tb.restock, tb.carry_limit, tb.guild, tb.cap, tb.n_keepers,
               e.room, e.prev_room, e.coin, e.carried, e.items, e.quest_item, e.quest_count,
               e.delivered, e.retainer_of, e.retainer_turns, e.robberies, e.robbed, e.hint,
               e.last_reason, e.floor, e.stock, e.shop_coin, e.off_kind, e.off_to,
               e.off_item, e.off_qty, e.off_coin, e.room_log, e.heard, e.turn,
               e.turns_played, e.done, e.points)


@_jit
def _step_rows(actions, turns, thievery,
               t_kind, t_item, t_qty, t_rel, t_coin, t_to_room, t_to_keeper,
               keeper_here, deals, ask, bid, dark, adjacent, values, restock, carry_limit,
               guild, cap, nk,
               room, prev_room, coin, carried, items, quest_item, quest_count, delivered,
               retainer_of, retainer_turns, robberies, robbed, hint, last_reason, floor, stock,
               shop_coin, off_kind, off_to, off_item, off_qty, off_coin, room_log, heard, turn,
               turns_played, done, points):
    n_rows, seats = actions.shape
    ng = items.shape[2]
    kind = np.empty(seats, np.int64)
    reason = np.empty(seats, np.int64)
    logged = np.empty(seats, np.bool_)
    here = np.empty(seats, np.int64)
    for n in range(n_rows):
        # Decode and check (sim.codec.action_table.to_intent, sim.rules.checks.check_structured).
        for s in range(seats):
            a = actions[n, s]
            here[s] = room[n, s]
            kd = t_kind[a]
            reason[s] = -1
            if t_to_keeper[a] and keeper_here[here[s]] == nk:
                reason[s] = R_NO_NPC_HERE if kd == QUEST else R_NO_TARGET
                kd = NONE
            kind[s] = kd
            logged[s] = False
            hint[n, s] = False
        for s in range(seats):  # quest, wait: no shared state
            if kind[s] == QUEST:
                hint[n, s] = True
                reason[s] = OK
                logged[s] = True
            elif kind[s] == WAIT:
                reason[s] = WAITED
                logged[s] = True
        for cls in range(2, 6):
            for k in range(seats):
                s = (k + turn[n]) % seats
                kd = kind[s]
                if CLASS[kd] != cls or kd == QUEST:
                    continue
                a = actions[n, s]
                g = t_item[a]
                qty = t_qty[a]
                other = (s + t_rel[a]) % seats
                npc = keeper_here[here[s]]
                r = OK
                log = False
                if kd == BUY:
                    free = carry_limit - carried[n, s]
                    if not deals[npc, g]:
                        r = R_OUT_OF_STOCK
                    elif free <= 0:
                        r = R_CARRY
                    elif stock[n, npc, g] <= 0:
                        r = R_OUT_OF_STOCK
                    else:
                        want = min(qty, stock[n, npc, g], free)
                        got = 0
                        while got < want:
                            p = ask[g, stock[n, npc, g]]
                            if coin[n, s] < p:
                                break
                            coin[n, s] -= p
                            shop_coin[n, npc] += p
                            stock[n, npc, g] -= 1
                            items[n, s, g] += 1
                            carried[n, s] += 1
                            got += 1
                        if got == 0:
                            r = R_CANNOT_AFFORD
                        else:
                            log = True
                elif kd == SELL:
                    held = items[n, s, g]
                    if not deals[npc, g]:
                        r = R_NOT_WANTED
                    elif held <= 0:
                        r = R_NOT_CARRYING
                    else:
                        want = min(qty, held)
                        sold = 0
                        while sold < want:
                            p = bid[g, stock[n, npc, g]]
                            if shop_coin[n, npc] < p:
                                break
                            shop_coin[n, npc] -= p
                            coin[n, s] += p
                            items[n, s, g] -= 1
                            carried[n, s] -= 1
                            if stock[n, npc, g] < cap:
                                stock[n, npc, g] += 1
                            sold += 1
                        if sold == 0:
                            r = R_NPC_BROKE
                        else:
                            log = True
                elif kd == DELIVER:
                    held = items[n, s, g]
                    if held <= 0:
                        r = R_NOT_CARRYING
                    else:
                        units = min(qty, held)
                        items[n, s, g] -= units
                        carried[n, s] -= units
                        stock[n, npc, g] = min(cap, stock[n, npc, g] + units)
                        log = True
                        credited = 0
                        if npc == guild:
                            for q in range(quest_item.shape[2]):
                                if quest_item[n, s, q] != g:
                                    continue
                                tk = min(units - credited,
                                         quest_count[n, s, q] - delivered[n, s, q])
                                if tk > 0:
                                    delivered[n, s, q] += tk
                                    credited += tk
                        if credited == 0:
                            r = R_NO_MATCH
                elif kd == TAKE:
                    present = floor[n, here[s], g]
                    free = carry_limit - carried[n, s]
                    if present <= 0:
                        r = R_NO_SUCH_ITEM
                    elif free <= 0:
                        r = R_CARRY
                    else:
                        units = min(qty, present, free)
                        floor[n, here[s], g] -= units
                        items[n, s, g] += units
                        carried[n, s] += units
                        log = True
                elif kd == DROP:
                    held = items[n, s, g]
                    if held <= 0:
                        r = R_NOT_CARRYING
                    else:
                        units = min(qty, held)
                        items[n, s, g] -= units
                        carried[n, s] -= units
                        floor[n, here[s], g] += units
                        log = True
                elif kd == ACCEPT:
                    slot = (turn[n] + 1) & 1
                    frm = other
                    if off_kind[n, slot, frm] == NO_OFFER or off_to[n, slot, frm] != s:
                        r = R_NO_SUCH_OFFER
                    else:
                        okind = off_kind[n, slot, frm]
                        off_kind[n, slot, frm] = NO_OFFER
                        price = off_coin[n, slot, frm]
                        if room[n, frm] != room[n, s]:
                            r = R_OFFER_EXPIRED
                        elif okind == TRADE_OFFER:
                            og, oq = off_item[n, slot, frm], off_qty[n, slot, frm]
                            if (items[n, frm, og] < oq or coin[n, s] < price
                                    or carry_limit - carried[n, s] < oq):
                                r = R_OFFER_EXPIRED
                            else:
                                items[n, frm, og] -= oq
                                carried[n, frm] -= oq
                                items[n, s, og] += oq
                                carried[n, s] += oq
                                coin[n, s] -= price
                                coin[n, frm] += price
                                log = True
                        else:
                            if coin[n, frm] < price:
                                r = R_OFFER_EXPIRED
                            else:
                                coin[n, frm] -= price
                                coin[n, s] += price
                                retainer_of[n, s] = frm
                                retainer_turns[n, s] = RET_TURNS
                                log = True
                elif room[n, other] != room[n, s]:  # gift, pay, offer, hire, rob
                    r = R_NOT_IN_ROOM
                elif kd == GIFT or kd == PAY:
                    units = 0
                    held = 0
                    if g >= 0:
                        held = items[n, s, g]
                        units = min(qty, held, carry_limit - carried[n, other])
                        if units > 0:
                            items[n, s, g] -= units
                            carried[n, s] -= units
                            items[n, other, g] += units
                            carried[n, other] += units
                    c = min(t_coin[a], coin[n, s])
                    if c > 0:
                        coin[n, s] -= c
                        coin[n, other] += c
                    if units <= 0 and c <= 0:
                        if g >= 0:
                            r = R_NOT_CARRYING if held <= 0 else R_CARRY
                        else:
                            r = R_NO_TARGET
                    else:
                        log = True
                elif kd == OFFER:
                    held = items[n, s, g]
                    units = max(1, min(qty, max(1, held)))
                    if held < units:
                        r = R_NOT_CARRYING
                    else:
                        slot = turn[n] & 1
                        off_kind[n, slot, s] = TRADE_OFFER
                        off_to[n, slot, s] = other
                        off_item[n, slot, s] = g
                        off_qty[n, slot, s] = units
                        off_coin[n, slot, s] = max(0, t_coin[a])
                        log = True
                elif kd == HIRE:
                    fee = min(max(1, t_coin[a]), coin[n, s])
                    if fee < 1:
                        r = R_CANNOT_AFFORD
                    else:
                        slot = turn[n] & 1
                        off_kind[n, slot, s] = HIRE_OFFER
                        off_to[n, slot, s] = other
                        off_item[n, slot, s] = -1
                        off_qty[n, slot, s] = 0
                        off_coin[n, slot, s] = fee
                        log = True
                else:  # ROB (§11)
                    victim = other
                    rm = room[n, s]
                    if not thievery:
                        r = R_FORBIDDEN
                    elif retainer_of[n, s] == victim and retainer_turns[n, s] > 0:
                        r = R_BOUND
                    else:
                        log = True
                        att = 1 + dark[rm]
                        dfn = 1 + 2 * (1 - dark[rm])
                        for x in range(seats):
                            if retainer_turns[n, x] > 0 and room[n, x] == rm:
                                if retainer_of[n, x] == s:
                                    att += 1
                                if retainer_of[n, x] == victim:
                                    dfn += 1
                        if att <= dfn:
                            fine = min(coin[n, s], FINE)
                            coin[n, s] -= fine
                            coin[n, victim] += fine
                            r = R_ROB_FAILED
                        else:
                            loot = -1
                            best = -1
                            for gg in range(ng):
                                if items[n, victim, gg] > 0 and values[gg] > best:
                                    loot, best = gg, values[gg]
                            if loot >= 0 and carried[n, s] < carry_limit:
                                items[n, victim, loot] -= 1
                                carried[n, victim] -= 1
                                items[n, s, loot] += 1
                                carried[n, s] += 1
                                robberies[n, s] += 1
                                robbed[n, victim] += 1
                            else:
                                taken = min(coin[n, victim], ROB_MAX)
                                if taken == 0:
                                    r = R_NOTHING
                                else:
                                    coin[n, victim] -= taken
                                    coin[n, s] += taken
                                    robberies[n, s] += 1
                                    robbed[n, victim] += 1
                reason[s] = r
                logged[s] = log
        for s in range(seats):  # class 6: a walk changes only the walker
            if kind[s] == MOVE:
                dest = t_to_room[actions[n, s]]
                if dest < 0 or not adjacent[here[s], dest]:
                    reason[s] = R_NO_SUCH_EXIT
                else:
                    prev_room[n, s] = here[s]
                    room[n, s] = dest
                    reason[s] = OK
                    logged[s] = True
        for s in range(seats):
            last_reason[n, s] = reason[s]
            if logged[s]:
                room_log[n, here[s]] = min(MAX_LOG, room_log[n, here[s]] + 1)
        # Settle or open the next turn (RULES §6.2, §6.4).
        turns_played[n] += 1
        turn[n] += 1
        if turns_played[n] >= turns:
            done[n] = True
        else:
            t = turn[n]
            for s in range(seats):
                off_kind[n, t & 1, s] = NO_OFFER
                if retainer_turns[n, s] > 0:
                    retainer_turns[n, s] -= 1
                    if retainer_turns[n, s] == 0:
                        retainer_of[n, s] = -1
            if t > 0:
                for kp in range(restock.shape[0]):
                    g = restock[kp, t % restock.shape[1]]
                    if g >= 0 and stock[n, kp, g] < cap:
                        stock[n, kp, g] += 1
            for rm in range(room_log.shape[1]):
                heard[n, rm] = room_log[n, rm]
                room_log[n, rm] = 0
        for s in range(seats):
            p = coin[n, s]
            for g in range(ng):
                p += values[g] * items[n, s, g]
            for q in range(quest_item.shape[2]):
                d = delivered[n, s, q]
                p += PVAL * (PPU * d + (BONUS if d >= quest_count[n, s, q] else 0))
            points[n, s] = p

