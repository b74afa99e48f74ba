"""One resolver per intent, each with its checks in the order of RULES §9.

A resolver takes the state, the act record (already holding the blank result) and the intent;
the first failing check sets ``a.reason`` and changes nothing.  Public lines (RULES §14) go to
the actor's start-of-turn room ``a.room``.

Twin: ``sim.batched.kernels_step`` repeats each resolver's check order on arrays, for speed;
``tests/test_batched.py::test_batched_equals_scalar_turn_by_turn`` holds the two equal.
"""

from __future__ import annotations

from .commissions import credit_commissions
from .intents import Intent
from .offers import Offer
from .outcome import Outcome
from .prices import STOCK_CAP, buy_walk, sell_walk
from .speech import log_room
from .state import GameState
from .world import RETAINER_TURNS, SEATS


def offer_units(qty: int, held: int) -> int:
    """§9.6: a trade offer's quantity, clamped to what is held (at least one unit)."""
    return max(1, min(qty, max(1, held)))


def hire_fee(fee: int, purse: int) -> int:
    """§9.7: a hire offer's fee, at least 1 and at most the purse (0 means unaffordable)."""
    return min(max(1, fee), purse)


def _keeper_here(st: GameState, npc: int, room: int) -> bool:
    return 0 <= npc < len(st.world.keepers) and st.world.keepers[npc].room == room


def buy(st: GameState, a: Outcome, it: Intent) -> None:
    """§9.1: walk the rising ask one unit at a time; partial fills are ok."""
    w, me, npc, good = st.world, a.seat, a.npc, a.item
    if not _keeper_here(st, npc, st.room[me]):
        a.reason = "no_npc_here"
        return
    if not w.deals[npc][good]:
        a.reason = "out_of_stock"  # not "not_wanted": the original's choice
        return
    free = st.free(me)
    if free <= 0:
        a.reason = "carry_limit"
        return
    stock = st.stock[npc]
    if stock[good] <= 0:
        a.reason = "out_of_stock"
        return
    want = min(it.qty, stock[good], free)
    got, spent = buy_walk(w.ask_table[good], stock[good], want, st.coin[me])
    st.coin[me] -= spent
    st.shop_coin[npc] += spent
    stock[good] -= got
    st.items[me][good] += got
    if got == 0:
        a.reason = "cannot_afford"
        return
    a.qty, a.coin = got, spent
    log_room(st, a.room, f"{st.aliases[me]} bought {w.item_name(good, got)} from "
                         f"{w.keepers[npc].name} for {spent} coin.")


def sell(st: GameState, a: Outcome, it: Intent) -> None:
    """§9.2: walk the falling bid; the shop stops paying when its coin runs short."""
    w, me, npc, good = st.world, a.seat, a.npc, a.item
    if not _keeper_here(st, npc, st.room[me]):
        a.reason = "no_npc_here"
        return
    if not w.deals[npc][good]:
        a.reason = "not_wanted"
        return
    held = st.items[me][good]
    if held <= 0:
        a.reason = "not_carrying"
        return
    want = min(it.qty, held)
    stock = st.stock[npc]
    sold, earned = sell_walk(w.bid_table[good], stock[good], want, st.shop_coin[npc])
    st.shop_coin[npc] -= earned
    st.coin[me] += earned
    st.items[me][good] -= sold
    stock[good] = min(STOCK_CAP, stock[good] + sold)
    if sold == 0:
        a.reason = "npc_broke"
        return
    a.qty, a.coin = sold, earned
    log_room(st, a.room, f"{st.aliases[me]} sold {w.item_name(good, sold)} to "
                         f"{w.keepers[npc].name} for {earned} coin.")


def quest(st: GameState, a: Outcome, it: Intent) -> None:
    """§9.3: set the hint flag read by the next observation; no state change."""
    if not _keeper_here(st, a.npc, st.room[a.seat]):
        a.reason = "no_npc_here"
        return
    st.hint[a.seat] = True
    log_room(st, a.room, f"{st.aliases[a.seat]} asked {st.world.keepers[a.npc].name} "
                         "about a commission.")


def give_to_keeper(st: GameState, a: Outcome, it: Intent) -> None:
    """§9.4: goods handed to a keeper leave the pack whatever happens; Vell credits them."""
    w, me, npc, good = st.world, a.seat, a.npc, a.item
    if not _keeper_here(st, npc, st.room[me]):
        a.reason = "no_npc_here"
        return
    if good < 0:
        a.reason = "no_target"  # keepers never take coin
        return
    held = st.items[me][good]
    if held <= 0:
        a.reason = "not_carrying"
        return
    units = min(it.qty, held)
    st.items[me][good] -= units
    st.stock[npc][good] = min(STOCK_CAP, st.stock[npc][good] + units)
    a.qty = units
    alias, keeper = st.aliases[me], w.keepers[npc].name
    if npc != w.guild:
        a.reason = "no_matching_commission"
        log_room(st, a.room, f"{alias} handed {w.item_name(good, units)} to {keeper} "
                             "for nothing.")
        return
    credited, points = credit_commissions(st, me, good, units)
    if credited == 0:
        a.reason = "no_matching_commission"
        log_room(st, a.room, f"{alias} handed {w.item_name(good, units)} to {keeper}, "
                             "who had no commission for it.")
        return
    a.qty, a.coin = credited, points  # the coin field carries points
    log_room(st, a.room, f"{alias} delivered {w.item_name(good, credited)} to {keeper} "
                         f"for {points} commission points.")


def give_to_cog(st: GameState, a: Outcome, it: Intent) -> None:
    """§9.5: goods and/or coin to another seat in the room; no consent needed."""
    w, me, other, good = st.world, a.seat, a.other, a.item
    if not 0 <= other < SEATS:
        a.reason = "no_such_cog"
        return
    if other == me:
        a.reason = "self_target"
        return
    if st.room[other] != st.room[me]:
        a.reason = "not_in_room"
        return
    units = 0
    held = st.items[me][good] if good >= 0 else 0
    if good >= 0:
        units = min(it.qty, held, st.free(other))
        if units > 0:
            st.items[me][good] -= units
            st.items[other][good] += units
    c = min(it.coin, st.coin[me])
    if c > 0:
        st.coin[me] -= c
        st.coin[other] += c
    if units <= 0 and c <= 0:
        if good >= 0:
            a.reason = "not_carrying" if held <= 0 else "carry_limit"
        else:
            a.reason = "no_target"
        return
    a.qty, a.coin = max(units, 0), max(c, 0)
    parts = []
    if units > 0:
        parts.append(w.item_name(good, units))
    if c > 0:
        parts.append(f"{c} coin")
    log_room(st, a.room, f"{st.aliases[me]} gave {' and '.join(parts)} to {st.aliases[other]}.")


def _offer_checks(st: GameState, a: Outcome) -> bool:
    """Checks 1-3 shared by trade and hire offers (§9.6, §9.7)."""
    me, other = a.seat, a.other
    if not 0 <= other < SEATS:
        a.reason = "no_such_cog"
    elif other == me:
        a.reason = "self_target"
    elif st.room[other] != st.room[me]:
        a.reason = "not_in_room"
    else:
        return True
    return False


def trade(st: GameState, a: Outcome, it: Intent) -> None:
    """§9.6: post a trade offer (nothing escrowed); qty is clamped to what is held."""
    if not _offer_checks(st, a):
        return
    me, good = a.seat, a.item
    if good < 0:
        a.reason = "no_target"
        return
    held = st.items[me][good]
    units = offer_units(it.qty, held)
    if held < units:
        a.reason = "not_carrying"
        return
    price = max(0, it.coin)
    st.offers.append(Offer("trade", me, a.other, good, units, price, st.turn))
    a.qty, a.coin = units, price
    log_room(st, a.room, f"{st.aliases[me]} offered {st.aliases[a.other]} "
                         f"{st.world.item_name(good, units)} for {price} coin.")


def hire(st: GameState, a: Outcome, it: Intent) -> None:
    """§9.7: post a hire offer; a fee above the purse is clamped to the purse."""
    if not _offer_checks(st, a):
        return
    me = a.seat
    fee = hire_fee(it.coin, st.coin[me])
    if fee < 1:
        a.reason = "cannot_afford"
        return
    st.offers.append(Offer("hire", me, a.other, -1, 0, fee, st.turn))
    a.coin, a.item = fee, -1
    log_room(st, a.room, f"{st.aliases[me]} offered to hire {st.aliases[a.other]} "
                         f"for {fee} coin.")


def accept(st: GameState, a: Outcome, it: Intent) -> None:
    """§9.8: take the oldest matching offer posted last turn; it is consumed even if it fails."""
    me, want_from = a.seat, a.other
    offer = None
    for i, o in enumerate(st.offers):
        if o.to == me and o.posted_turn == st.turn - 1 and (want_from < 0
                                                             or o.sender == want_from):
            offer = st.offers.pop(i)
            break
    if offer is None:
        a.reason = "no_such_offer"
        return
    frm = a.other = offer.sender
    if st.room[frm] != st.room[me]:
        a.reason = "offer_expired"
        return
    alias, offerer = st.aliases[me], st.aliases[frm]
    if offer.kind == "trade":
        good, qty, price = offer.item, offer.qty, offer.coin
        if st.items[frm][good] < qty or st.coin[me] < price or st.free(me) < qty:
            a.reason = "offer_expired"
            return
        st.items[frm][good] -= qty
        st.items[me][good] += qty
        st.coin[me] -= price
        st.coin[frm] += price
        a.item, a.qty, a.coin = good, qty, price
        log_room(st, a.room, f"{alias} accepted {offerer}'s offer: "
                             f"{st.world.item_name(good, qty)} for {price} coin.")
        return
    fee = offer.coin
    if st.coin[frm] < fee:
        a.reason = "offer_expired"
        return
    st.coin[frm] -= fee
    st.coin[me] += fee
    st.retainer_of[me] = frm
    st.retainer_turns[me] = RETAINER_TURNS
    a.item, a.qty, a.coin = -1, 0, fee
    log_room(st, a.room, f"{alias} took {offerer}'s coin and is hired for "
                         f"{RETAINER_TURNS} turns.")


def take(st: GameState, a: Outcome, it: Intent) -> None:
    """§9.9: pick goods off the floor, up to the free slots (qty 0 is an ok take of 0)."""
    me, good = a.seat, a.item
    floor = st.floor[st.room[me]]
    if floor[good] <= 0:
        a.reason = "no_such_item"
        return
    free = st.free(me)
    if free <= 0:
        a.reason = "carry_limit"
        return
    units = min(it.qty, floor[good], free)
    floor[good] -= units
    st.items[me][good] += units
    a.qty = units
    log_room(st, a.room, f"{st.aliases[me]} picked up {st.world.item_name(good, units)}.")


def drop(st: GameState, a: Outcome, it: Intent) -> None:
    """§9.10: put carried goods on the floor."""
    me, good = a.seat, a.item
    held = st.items[me][good]
    if held <= 0:
        a.reason = "not_carrying"
        return
    units = min(it.qty, held)
    st.items[me][good] -= units
    st.floor[st.room[me]][good] += units
    a.qty = units
    log_room(st, a.room, f"{st.aliases[me]} dropped {st.world.item_name(good, units)}.")


def move(st: GameState, a: Outcome, it: Intent) -> None:
    """§9.12: walk to an adjacent room; the departure line is logged in the room left."""
    me, dest = a.seat, a.to_room
    here = st.room[me]
    if dest < 0 or not st.world.adjacent[here][dest]:
        a.reason = "no_such_exit"
        return
    st.prev_room[me] = here
    st.room[me] = dest
    log_room(st, a.room, f"{st.aliases[me]} left for {st.world.rooms[dest].name}.")


def wait(st: GameState, a: Outcome, it: Intent) -> None:
    """§9.13: waiting is an act with a public line."""
    a.reason = "waited"
    log_room(st, a.room, f"{st.aliases[a.seat]} waited and watched.")


def none(st: GameState, a: Outcome, it: Intent) -> None:
    """§9.13: an unreadable sentence costs the turn and nothing else."""
    a.reason = it.reason
