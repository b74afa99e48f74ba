"""What one seat may see (RULES §17), as a dict; the text view is built from the same dict.

Hidden from a seat: other seats' coin, packs, commissions, notes and scores; anything in other
rooms; other shops' stock and prices (except the hint after a successful ``quest``); the seed.

Twin: the numeric observation (``sim.codec.encode``, and the batched ``kernels_observe``) reads
the state, not this dict, for speed; ``tests/test_faces_rules.py`` holds every field of it equal
to this view and unmoved by anything this view hides.
"""

from __future__ import annotations

from collections.abc import Callable

from .commissions import commission_points, outstanding
from .state import GameState
from .world import SEATS


def cheapest_source(deals, stock, asks, good: int, n_keepers: int) -> int:
    """The keeper dealing in ``good`` with stock > 0 and the lowest current ask (ties: the
    lowest id), or -1: what a successful ``quest`` hints (§9.3, §17).

    ``deals`` and ``stock`` are indexed ``[keeper][good]``, ``asks`` is the good's row of asks
    by stock; the batched kernels call this same function on their arrays.
    """
    best, best_ask = -1, 0
    for k in range(n_keepers):
        if deals[k][good] and stock[k][good] > 0:
            ask = asks[stock[k][good]]
            if best < 0 or ask < best_ask:
                best, best_ask = k, ask
    return best


def cheapest_keeper(st: GameState, good: int) -> int:
    """:func:`cheapest_source` in the scalar state."""
    w = st.world
    return cheapest_source(w.deals, st.stock, w.ask_table[good], good, w.n_keepers)


def observe(st: GameState, seat: int,
            explain: Callable[[str, str], str] | None = None) -> dict:
    """The seat's view: own purse, pack, commissions; its room; offers to it; the map.

    ``explain(reason, room name)`` writes ``lastOutcome``, the prose of the last act's reason
    (RULES §14); the rules know no prose, so the ``Game`` facade passes the language's.
    """
    w = st.world
    here = st.room[seat]
    items = [{"item": w.goods[g].name, "count": n, "value": w.goods[g].value}
             for g, n in enumerate(st.items[seat]) if n > 0]
    quests = []
    for q, good in enumerate(st.quest_item[seat]):
        count, d = st.quest_count[seat][q], st.delivered[seat][q]
        entry = {"item": w.goods[good].name, "count": count, "delivered": d,
                 "points": commission_points(d, count),
                 "outstanding": commission_points(count, count) - commission_points(d, count),
                 "settledBy": w.keepers[w.guild].name, "at": w.rooms[w.keepers[w.guild].room].name}
        if st.hint[seat] and outstanding(st, seat, q) > 0:
            n = cheapest_keeper(st, good)
            if n >= 0:
                entry["cheapest"] = {"npc": w.keepers[n].name,
                                     "at": w.rooms[w.keepers[n].room].name,
                                     "ask": w.ask_table[good][st.stock[n][good]]}
        quests.append(entry)
    r = w.rooms[here]
    room = {"id": here, "name": r.name, "desc": r.desc, "dark": r.dark,
            "exits": [{"id": e, "name": w.rooms[e].name} for e in r.exits],
            "ground": [{"item": w.goods[g].name, "count": n}
                       for g, n in enumerate(st.floor[here]) if n > 0],
            "cogs": [st.aliases[s] for s in range(SEATS) if s != seat and st.room[s] == here]}
    npc = w.keeper_in_room[here]
    if npc >= 0:
        stock = st.stock[npc]
        room["npc"] = {"name": w.keepers[npc].name, "coin": st.shop_coin[npc],
                       "goods": [{"item": w.goods[g].name, "stock": stock[g],
                                  "ask": w.ask_table[g][stock[g]],
                                  "bid": w.bid_table[g][stock[g]]}
                                 for g in w.keepers[npc].trade]}
    offers = []
    for o in st.offers:
        if o.to == seat and o.posted_turn == st.turn - 1:
            entry = {"kind": o.kind, "from": st.aliases[o.sender], "coin": o.coin}
            if o.kind == "trade":
                entry["item"] = w.goods[o.item].name
                entry["qty"] = o.qty
            offers.append(entry)
    hired = st.retainer_turns[seat] > 0
    standing = {
        "hiredTo": st.aliases[st.retainer_of[seat]] if hired else "",
        "hiredToTurns": st.retainer_turns[seat] if hired else 0,
        "retainers": [{"name": st.aliases[s], "turns": st.retainer_turns[s]}
                      for s in range(SEATS)
                      if st.retainer_of[s] == seat and st.retainer_turns[s] > 0],
    }
    last_room = st.last_room[seat]
    return {
        "type": "state", "slot": seat, "name": st.aliases[seat], "coin": st.coin[seat],
        "items": items, "carried": st.carried(seat), "carryLimit": w.carry_limit,
        "quests": quests, "room": room, "heard": list(st.heard_log[here]), "offers": offers,
        "standing": standing,
        "map": [{"name": rm.name, "exits": [w.rooms[e].name for e in rm.exits],
                 "npc": w.keepers[w.keeper_in_room[rm.id]].name
                 if w.keeper_in_room[rm.id] >= 0 else "", "dark": rm.dark}
                for rm in w.rooms],
        "lastSentence": st.last_sentence[seat],
        "lastOutcome": explain(st.last_reason[seat], w.rooms[last_room].name)
        if st.last_reason[seat] and explain is not None else "",
        "lastReason": st.last_reason[seat],
        "notes": st.notes[seat], "turn": st.turn, "turns": st.turns,
        "turnsPlayed": st.turns_played, "started": True, "done": st.done, "reason": st.reason,
    }
