"""The turn of RULES §6 for many episodes: the step kernel of the batched engine.

Each episode is a plain loop that follows the scalar turn (``sim.rules.turn``): decode and check
the six actions, resolve classes 2 to 7 in initiative order, count the public lines, settle or
open the next turn.  Every formula comes from the rules themselves, not a copy: the price
walks, robbery odds, guards, loot, commission credit, score points, initiative and the retainer
tick are the functions of ``sim.rules``, which ``sim.batched.jit`` compiles together with this
module.  What remains here is the bookkeeping of the arrays: the check order of each resolver
(RULES §9, §11) and which acts leave a public line (§12.1).  Its twin is the scalar turn
(``sim.rules.turn``, ``resolve``, ``robbery``): ``tests/test_batched.py``'s
``test_batched_equals_scalar_turn_by_turn`` (and ``..._in_a_variant_town``) compares the two
states after every turn, and ``test_tables_are_the_rules_checks_and_classes`` the decoding.

These are plain Python functions: ``sim.batched.jit`` compiles them (``NUMBA_DISABLE_JIT=1``
runs them as Python, for debugging).  Arguments: ``st`` is a ``BatchState``, ``tb`` the
town's ``KernelTables``, ``n`` an episode (row), ``s`` a seat.
"""

from __future__ import annotations

from ..rules.commissions import credit
from ..rules.prices import STOCK_CAP, buy_walk, sell_walk
from ..rules.resolve import hire_fee, offer_units
from ..rules.robbery import guards, loot, robbery_succeeds
from ..rules.scoring import score_points
from ..rules.turn import LAST_CLASS, SPEECH_CLASS, acting_seat, tick_retainers
from ..rules.world import FINE_COIN, MAX_ROOM_LOG, RETAINER_TURNS, ROB_COIN, SEATS
from .tables import HIRE_OFFER, NO_OFFER, REASON_CODE, TRADE_OFFER, Kind

# Codes frozen into the compiled code.
WAIT, NONE, QUEST, MOVE = int(Kind.WAIT), int(Kind.NONE), int(Kind.QUEST), int(Kind.MOVE)
BUY, SELL, DELIVER, TAKE, DROP = (int(Kind.BUY), int(Kind.SELL), int(Kind.DELIVER),
                                  int(Kind.TAKE), int(Kind.DROP))
GIFT, PAY, OFFER, HIRE, ACCEPT, ROB = (int(Kind.GIFT), int(Kind.PAY), int(Kind.OFFER),
                                       int(Kind.HIRE), int(Kind.ACCEPT), int(Kind.ROB))
OK, WAITED = REASON_CODE["ok"], REASON_CODE["waited"]
NO_TARGET, NO_SUCH_EXIT = REASON_CODE["no_target"], REASON_CODE["no_such_exit"]
NO_SUCH_ITEM, NOT_CARRYING = REASON_CODE["no_such_item"], REASON_CODE["not_carrying"]
CARRY_LIMIT, NOT_WANTED = REASON_CODE["carry_limit"], REASON_CODE["not_wanted"]
OUT_OF_STOCK, CANNOT_AFFORD = REASON_CODE["out_of_stock"], REASON_CODE["cannot_afford"]
NPC_BROKE, NO_MATCH = REASON_CODE["npc_broke"], REASON_CODE["no_matching_commission"]
NOT_IN_ROOM, NO_SUCH_OFFER = REASON_CODE["not_in_room"], REASON_CODE["no_such_offer"]
OFFER_EXPIRED, BOUND = REASON_CODE["offer_expired"], REASON_CODE["bound_by_contract"]
ROB_FAILED, NOTHING = REASON_CODE["robbery_failed"], REASON_CODE["nothing_to_take"]
FORBIDDEN = REASON_CODE["thievery_forbidden"]


def step_rows(actions, st, tb, turns, thievery, scratch):
    """Resolve one turn of every row from ``actions`` (``[rows, 6]`` table indices); rows
    whose episode has ended are left as they are.

    ``scratch`` holds the per-seat work arrays (the kernels allocate nothing, see
    ``sim.batched.jit``).
    """
    kind, reason, logged, here = scratch.kind, scratch.reason, scratch.logged, scratch.here
    order = scratch.order
    for n in range(actions.shape[0]):
        if st.done[n]:
            continue
        decode(actions[n], n, st, tb, kind, reason, logged, here)
        for k in range(SEATS):
            order[k] = acting_seat(st.turn[n], k)
        for cls in range(SPEECH_CLASS + 1, LAST_CLASS + 1):  # §6.3; table acts never speak
            for s in order:
                if tb.kind_class[kind[s]] == cls:
                    reason[s], logged[s] = resolve(kind[s], actions[n, s], n, s, st, tb,
                                                   thievery, reason[s])
        close_turn(n, st, tb, turns, reason, logged, here)


def decode(acts, n, st, tb, kind, reason, logged, here):
    """The checked kind of each seat's action in its start-of-turn room (``tb.kind``)."""
    for s in range(SEATS):
        here[s] = st.room[n, s]
        kind[s] = tb.kind[acts[s], here[s]]
        reason[s] = tb.reason[acts[s], here[s]]
        logged[s] = False
        st.hint[n, s] = False


def resolve(kd, a, n, s, st, tb, thievery, checked):
    """One act: ``(reason code, whether it leaves a public line)``."""
    g, qty, coin = tb.item[a], tb.qty[a], tb.coin[a]
    other = (s + tb.rel[a]) % SEATS
    npc = tb.keeper_here[st.room[n, s]]
    if kd == NONE:
        return checked, False
    if kd == WAIT:
        return WAITED, True
    if kd == QUEST:
        st.hint[n, s] = True
        return OK, True
    if kd == MOVE:
        return move(n, s, tb.to_room[a], st, tb)
    if kd == BUY:
        return buy(n, s, npc, g, qty, st, tb)
    if kd == SELL:
        return sell(n, s, npc, g, qty, st, tb)
    if kd == DELIVER:
        return deliver(n, s, npc, g, qty, st, tb)
    if kd == TAKE:
        return take(n, s, g, qty, st, tb)
    if kd == DROP:
        return drop(n, s, g, qty, st)
    if kd == ACCEPT:
        return accept(n, s, other, st, tb)
    if st.room[n, other] != st.room[n, s]:  # gift, pay, offer, hire, rob: §9.5-9.7, §11
        return NOT_IN_ROOM, False
    if kd == GIFT or kd == PAY:
        return give_to_cog(n, s, other, g, qty, coin, st, tb)
    if kd == OFFER:
        return post_trade(n, s, other, g, qty, coin, st)
    if kd == HIRE:
        return post_hire(n, s, other, coin, st)
    return rob(n, s, other, st, tb, thievery)


def buy(n, s, npc, g, qty, st, tb):
    """§9.1 (``sim.rules.resolve.buy``)."""
    free = tb.carry_limit - st.carried[n, s]
    stock = st.stock[n, npc, g]
    if not tb.deals[npc, g]:
        return OUT_OF_STOCK, False
    if free <= 0:
        return CARRY_LIMIT, False
    if stock <= 0:
        return OUT_OF_STOCK, False
    got, spent = buy_walk(tb.ask[g], stock, min(qty, stock, free), st.coin[n, s])
    if got == 0:
        return CANNOT_AFFORD, False
    st.coin[n, s] -= spent
    st.shop_coin[n, npc] += spent
    st.stock[n, npc, g] = stock - got
    _move_goods(st.items[n, s], st.carried[n], s, g, got)
    return OK, True


def sell(n, s, npc, g, qty, st, tb):
    """§9.2 (``sim.rules.resolve.sell``)."""
    held = st.items[n, s, g]
    if not tb.deals[npc, g]:
        return NOT_WANTED, False
    if held <= 0:
        return NOT_CARRYING, False
    stock = st.stock[n, npc, g]
    sold, earned = sell_walk(tb.bid[g], stock, min(qty, held), st.shop_coin[n, npc])
    if sold == 0:
        return NPC_BROKE, False
    st.shop_coin[n, npc] -= earned
    st.coin[n, s] += earned
    _move_goods(st.items[n, s], st.carried[n], s, g, -sold)
    st.stock[n, npc, g] = min(STOCK_CAP, stock + sold)
    return OK, True


def deliver(n, s, npc, g, qty, st, tb):
    """§9.4 and §10: the goods leave the pack whatever happens; Vell credits commissions."""
    held = st.items[n, s, g]
    if held <= 0:
        return NOT_CARRYING, False
    units = min(qty, held)
    _move_goods(st.items[n, s], st.carried[n], s, g, -units)
    st.stock[n, npc, g] = min(STOCK_CAP, st.stock[n, npc, g] + units)
    credited = 0
    if npc == tb.guild:
        credited = credit(st.quest_item[n, s], st.quest_count[n, s], st.delivered[n, s], g,
                          units)[0]
    return (OK if credited > 0 else NO_MATCH), True


def take(n, s, g, qty, st, tb):
    """§9.9: pick goods off the floor, up to the free slots."""
    here = st.room[n, s]
    present = st.floor[n, here, g]
    free = tb.carry_limit - st.carried[n, s]
    if present <= 0:
        return NO_SUCH_ITEM, False
    if free <= 0:
        return CARRY_LIMIT, False
    units = min(qty, present, free)
    st.floor[n, here, g] -= units
    _move_goods(st.items[n, s], st.carried[n], s, g, units)
    return OK, True


def drop(n, s, g, qty, st):
    """§9.10: put carried goods on the floor."""
    held = st.items[n, s, g]
    if held <= 0:
        return NOT_CARRYING, False
    units = min(qty, held)
    _move_goods(st.items[n, s], st.carried[n], s, g, -units)
    st.floor[n, st.room[n, s], g] += units
    return OK, True


def give_to_cog(n, s, other, g, qty, coin, st, tb):
    """§9.5: goods (up to the other's free slots) and/or coin to a seat in the room."""
    units = held = 0
    if g >= 0:
        held = st.items[n, s, g]
        units = min(qty, held, tb.carry_limit - st.carried[n, other])
        if units > 0:
            _move_goods(st.items[n, s], st.carried[n], s, g, -units)
            _move_goods(st.items[n, other], st.carried[n], other, g, units)
    paid = min(coin, st.coin[n, s])
    if paid > 0:
        st.coin[n, s] -= paid
        st.coin[n, other] += paid
    if units <= 0 and paid <= 0:
        if g >= 0:
            return (NOT_CARRYING if held <= 0 else CARRY_LIMIT), False
        return NO_TARGET, False
    return OK, True


def post_trade(n, s, other, g, qty, price, st):
    """§9.6: post a trade offer (nothing escrowed); qty is clamped to what is held."""
    held = st.items[n, s, g]
    units = offer_units(qty, held)
    if held < units:
        return NOT_CARRYING, False
    _post(n, s, TRADE_OFFER, other, g, units, max(0, price), st)
    return OK, True


def post_hire(n, s, other, fee, st):
    """§9.7: post a hire offer; a fee above the purse is clamped to the purse."""
    fee = hire_fee(fee, st.coin[n, s])
    if fee < 1:
        return CANNOT_AFFORD, False
    _post(n, s, HIRE_OFFER, other, -1, 0, fee, st)
    return OK, True


def accept(n, s, frm, st, tb):
    """§9.8: take the named seat's offer posted last turn; consumed even if it then fails.

    A seat posts at most one offer a turn, so "the oldest matching offer from that seat" is
    the only one in the sender's slot of last turn.
    """
    slot = (st.turn[n] + 1) & 1
    okind = st.off_kind[n, slot, frm]
    if okind == NO_OFFER or st.off_to[n, slot, frm] != s:
        return NO_SUCH_OFFER, False
    st.off_kind[n, slot, frm] = NO_OFFER
    price = st.off_coin[n, slot, frm]
    if st.room[n, frm] != st.room[n, s]:
        return OFFER_EXPIRED, False
    if okind == TRADE_OFFER:
        g, units = st.off_item[n, slot, frm], st.off_qty[n, slot, frm]
        if (st.items[n, frm, g] < units or st.coin[n, s] < price
                or tb.carry_limit - st.carried[n, s] < units):
            return OFFER_EXPIRED, False
        _move_goods(st.items[n, frm], st.carried[n], frm, g, -units)
        _move_goods(st.items[n, s], st.carried[n], s, g, units)
        st.coin[n, s] -= price
        st.coin[n, frm] += price
        return OK, True
    if st.coin[n, frm] < price:
        return OFFER_EXPIRED, False
    st.coin[n, frm] -= price
    st.coin[n, s] += price
    st.retainer_of[n, s] = frm
    st.retainer_turns[n, s] = RETAINER_TURNS
    return OK, True


def rob(n, s, victim, st, tb, thievery):
    """§11 (``sim.rules.robbery.rob``); a failed robber pays a fine of up to 8 coin."""
    if not thievery:
        return FORBIDDEN, False
    if st.retainer_of[n, s] == victim and st.retainer_turns[n, s] > 0:
        return BOUND, False
    room = st.room[n, s]
    mine = guards(st.retainer_of[n], st.retainer_turns[n], st.room[n], s, room)
    theirs = guards(st.retainer_of[n], st.retainer_turns[n], st.room[n], victim, room)
    if not robbery_succeeds(mine, theirs, tb.dark[room]):
        fine = min(st.coin[n, s], FINE_COIN)
        st.coin[n, s] -= fine
        st.coin[n, victim] += fine
        return ROB_FAILED, True
    good = loot(st.items[n, victim], tb.values)
    if good >= 0 and st.carried[n, s] < tb.carry_limit:
        _move_goods(st.items[n, victim], st.carried[n], victim, good, -1)
        _move_goods(st.items[n, s], st.carried[n], s, good, 1)
    else:
        taken = min(st.coin[n, victim], ROB_COIN)
        if taken == 0:
            return NOTHING, True
        st.coin[n, victim] -= taken
        st.coin[n, s] += taken
    st.robberies[n, s] += 1
    st.robbed[n, victim] += 1
    return OK, True


def move(n, s, dest, st, tb):
    """§9.12: walk to an adjacent room."""
    here = st.room[n, s]
    if dest < 0 or not tb.adjacent[here, dest]:
        return NO_SUCH_EXIT, False
    st.prev_room[n, s] = here
    st.room[n, s] = dest
    return OK, True


def close_turn(n, st, tb, turns, reason, logged, here):
    """Record the acts, count their public lines in each actor's start-of-turn room (§12.1:
    at most 12 kept), advance the clock, open the next turn or settle (§6.2, §6.4), and keep
    each seat's score points."""
    for s in range(SEATS):
        st.last_reason[n, s] = reason[s]
        if logged[s]:
            st.room_log[n, here[s]] = min(MAX_ROOM_LOG, st.room_log[n, here[s]] + 1)
    st.turns_played[n] += 1
    st.turn[n] += 1
    if st.turns_played[n] >= turns:
        st.done[n] = True
    else:
        open_turn(n, st, tb)
    for s in range(SEATS):
        st.points[n, s] = score_points(st.coin[n, s], st.items[n, s], tb.values,
                                       st.quest_count[n, s], st.delivered[n, s])


def open_turn(n, st, tb):
    """§6.2: expire offers, tick retainers, restock (never on turn 0), rotate the logs."""
    t = st.turn[n]
    for s in range(SEATS):
        st.off_kind[n, t & 1, s] = NO_OFFER  # posted two turns ago
    tick_retainers(st.retainer_of[n], st.retainer_turns[n])
    if t > 0:
        for kp in range(tb.restock.shape[0]):
            g = tb.restock[kp, t % tb.restock.shape[1]]
            if g >= 0 and st.stock[n, kp, g] < STOCK_CAP:
                st.stock[n, kp, g] += 1
    for rm in range(st.room_log.shape[1]):
        st.heard[n, rm] = st.room_log[n, rm]
        st.room_log[n, rm] = 0


def _move_goods(pack, carried, s, g, units):
    """Add ``units`` (negative: remove) of good ``g`` to seat ``s``'s pack and pack size."""
    pack[g] += units
    carried[s] += units


def _post(n, s, kind, to, g, units, coin, st):
    """Post an offer in this turn's slot (one per sender)."""
    slot = st.turn[n] & 1
    st.off_kind[n, slot, s] = kind
    st.off_to[n, slot, s] = to
    st.off_item[n, slot, s] = g
    st.off_qty[n, slot, s] = units
    st.off_coin[n, slot, s] = coin
