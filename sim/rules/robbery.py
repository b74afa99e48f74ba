"""Robbery and the strength of hirelings (RULES §11).

Strength is recomputed for every robbery from the state left by earlier resolutions, so a bond
accepted earlier in the same turn already counts.
"""

from __future__ import annotations

from .intents import Intent
from .outcome import Outcome
from .speech import log_room
from .state import GameState
from .world import FINE_COIN, ROB_COIN, SEATS


def hirelings_present(st: GameState, employer: int, room: int) -> int:
    """Seats bound to ``employer`` standing in ``room`` (they count even if acting this turn)."""
    return sum(1 for s in range(SEATS)
               if st.retainer_of[s] == employer and st.retainer_turns[s] > 0
               and st.room[s] == room)


def strengths(st: GameState, robber: int, victim: int, room: int) -> tuple[int, int]:
    """``(attack, defence)``: darkness helps the robber; a lit room gives the victim +2."""
    dark = st.world.rooms[room].dark
    attack = 1 + hirelings_present(st, robber, room) + (1 if dark else 0)
    defence = 1 + hirelings_present(st, victim, room) + (0 if dark else 2)
    return attack, defence


def loot(st: GameState, victim: int) -> int:
    """The victim's most valuable held good (ties: lowest id), or -1."""
    best, best_value = -1, -1
    for g, n in enumerate(st.items[victim]):
        if n > 0 and st.world.values[g] > best_value:
            best, best_value = g, st.world.values[g]
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
    attack, defence = strengths(st, me, victim, room)
    alias, target = st.aliases[me], st.aliases[victim]
    if attack <= defence:
        fine = min(st.coin[me], FINE_COIN)
        st.coin[me] -= fine
        st.coin[victim] += fine
        a.reason, a.coin = "robbery_failed", fine
        how = " and failed" if st.world.rooms[room].dark else " and the watch stopped him"
        log_room(st, a.room, f"{alias} tried to rob {target}{how}, paying {fine} coin.")
        return
    good = loot(st, victim)
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
