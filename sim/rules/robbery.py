"""Robbery and the strength of hirelings (RULES §11).

Strength is recomputed for every robbery from the state left by earlier resolutions, so a bond
accepted earlier in the same turn already counts.

Twin: ``sim.batched.kernels_step.rob`` repeats ``rob``'s check order on arrays (calling
``guards``, ``robbery_succeeds`` and ``loot`` from here);
``tests/test_batched.py::test_batched_equals_scalar_turn_by_turn`` (seats start herded, and
its draw of acts favours robbery) holds the two equal.
"""

from __future__ import annotations

from .intents import Intent
from .outcome import Outcome
from .speech import log_room
from .state import GameState
from .world import FINE_COIN, ROB_COIN, SEATS


def guards(retainer_of, retainer_turns, rooms, employer: int, room: int) -> int:
    """Seats hired to ``employer`` standing in ``room``; they count even if acting this turn.

    Takes the seat rows (lists here, array rows in the batched kernels).
    """
    n = 0
    for s in range(len(rooms)):
        if retainer_of[s] == employer and retainer_turns[s] > 0 and rooms[s] == room:
            n += 1
    return n


def robbery_succeeds(robber_guards: int, victim_guards: int, dark: bool) -> bool:
    """The strengths of §11: attack 1 + guards, +1 in the dark; defence 1 + guards, +2 in a lit
    room; the robber needs strictly more.  The one definition the rules, the legal mask and the
    batched kernels all use.

    >>> robbery_succeeds(0, 0, True), robbery_succeeds(0, 0, False), robbery_succeeds(2, 0, False)
    (True, False, False)
    """
    attack = 1 + robber_guards + (1 if dark else 0)
    defence = 1 + victim_guards + (0 if dark else 2)
    return attack > defence


def loot(items, values) -> int:
    """The most valuable good held (ties: the lowest id), or -1 for an empty pack."""
    best, best_value = -1, -1
    for g in range(len(items)):
        if items[g] > 0 and values[g] > best_value:
            best, best_value = g, values[g]
    return best


def rob(st: GameState, a: Outcome, it: Intent) -> None:
    """§11, checks in order; a failed robber pays a fine of up to 8 coin to the victim."""
    me, victim = a.seat, a.other
    if victim == me:
        a.reason = "self_target"
        return
    if not 0 <= victim < SEATS:
        a.reason = "no_such_cog"
        return
    room = st.room[me]
    if st.room[victim] != room:
        a.reason = "not_in_room"
        return
    if not st.thievery:
        a.reason = "thievery_forbidden"
        return
    if st.retainer_of[me] == victim and st.retainer_turns[me] > 0:
        a.reason = "bound_by_contract"
        return
    dark = st.world.rooms[room].dark
    mine = guards(st.retainer_of, st.retainer_turns, st.room, me, room)
    theirs = guards(st.retainer_of, st.retainer_turns, st.room, victim, room)
    alias, target = st.aliases[me], st.aliases[victim]
    if not robbery_succeeds(mine, theirs, dark):
        fine = min(st.coin[me], FINE_COIN)
        st.coin[me] -= fine
        st.coin[victim] += fine
        a.reason, a.coin = "robbery_failed", fine
        how = " and failed" if dark else " and the watch stopped him"
        log_room(st, a.room, f"{alias} tried to rob {target}{how}, paying {fine} coin.")
        return
    good = loot(st.items[victim], st.world.values)
    if good >= 0 and st.free(me) > 0:
        st.items[victim][good] -= 1
        st.items[me][good] += 1
        st.robberies[me] += 1
        st.robbed[victim] += 1
        a.item, a.qty = good, 1
        log_room(st, a.room, f"{alias} robbed {target} in the dark and took "
                             f"{st.world.item_name(good, 1)}.")
        return
    taken = min(st.coin[victim], ROB_COIN)
    if taken == 0:
        a.reason = "nothing_to_take"
        log_room(st, a.room, f"{alias} jumped {target} and found nothing worth taking.")
        return
    st.coin[victim] -= taken
    st.coin[me] += taken
    st.robberies[me] += 1
    st.robbed[victim] += 1
    a.coin = taken
    log_room(st, a.room, f"{alias} robbed {target} in the dark and took {taken} coin.")
