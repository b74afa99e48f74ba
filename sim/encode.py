"""The numeric per-seat observation: a one-level dict of arrays (RULES §17).

It holds exactly the facts of ``observation.observe`` (own purse, pack, commissions and hint;
the room, its floor, the cogs present, the keeper's table; offers to the seat; its standing;
its last outcome), as ids and counts for neural policies.  Other seats are seat-relative
(``rel`` 1..5 = seat ``(me + rel) % 6``), like the action table.

| key | shape | meaning |
|---|---|---|
| time | 2 | turn (0-based), turns left |
| purse | 1 | own coin |
| pack | goods | own goods by id |
| commissions | 2 x (goods + 2) | one-hot good, count, delivered |
| hint | 2 x (1 + rooms) | after a successful quest: cheapest ask and its room (one-hot) |
| room | rooms | one-hot current room |
| exits | rooms | 1 for each room one road away |
| dark | 1 | 1 in an unlit room |
| floor | goods | goods lying here (clipped at 255) |
| cogs | 5 | 1 for each other seat here, by rel |
| keeper | keepers | one-hot keeper standing here |
| shop | goods x 4 | deals in it, stock, ask, bid (zeros without a keeper) |
| shop_coin | 1 | the keeper's coin |
| offers | 5 x (2 + goods + 2) | per rel: trade, hire, one-hot good, qty, coin |
| standing | 5 + 1 + 5 | employer (one-hot rel), turns left; own hirelings' turns by rel |
| last | reasons | one-hot reason of the seat's last act |
| heard | 1 | public lines heard here last turn |
| action_mask | actions | 1 where ``actions.legal_mask`` holds |
"""

from __future__ import annotations

import numpy as np

from .actions import legal_mask, n_actions
from .intents import REASONS
from .observation import cheapest_source
from .state import GameState
from .world import SEATS, World

REL = 5
_REASON_INDEX = {r: i for i, r in enumerate(REASONS)}
FLOOR_CLIP = 255


def layout(world: World) -> dict[str, tuple[tuple[int, ...], float]]:
    """Each key's shape and upper bound (all lower bounds are 0)."""
    g, r, k = world.n_goods, world.n_rooms, world.n_keepers
    big = float(2 ** 31 - 1)
    return {
        "time": ((2,), 40.0),
        "purse": ((1,), big),
        "pack": ((g,), float(world.carry_limit)),
        "commissions": ((2 * (g + 2),), 2.0),
        "hint": ((2 * (1 + r),), 1000.0),
        "room": ((r,), 1.0),
        "exits": ((r,), 1.0),
        "dark": ((1,), 1.0),
        "floor": ((g,), float(FLOOR_CLIP)),
        "cogs": ((REL,), 1.0),
        "keeper": ((k,), 1.0),
        "shop": ((4 * g,), 1000.0),
        "shop_coin": ((1,), big),
        "offers": ((REL * (4 + g),), 1000.0),
        "standing": ((2 * REL + 1,), 3.0),
        "last": ((len(REASONS),), 1.0),
        "heard": ((1,), 12.0),
        "action_mask": ((n_actions(world),), 1.0),
    }


def encode(st: GameState, seat: int) -> dict[str, np.ndarray]:
    """The seat's numeric view; only what RULES §17 lets it see."""
    w = st.world
    g, r = w.n_goods, w.n_rooms
    here = st.room[seat]
    out: dict[str, np.ndarray] = {}
    f32 = np.float32
    out["time"] = np.array([st.turn, max(0, st.turns - st.turns_played)], f32)
    out["purse"] = np.array([st.coin[seat]], f32)
    out["pack"] = np.array(st.items[seat], f32)
    com = np.zeros((2, g + 2), f32)
    hint = np.zeros((2, 1 + r), f32)
    for q, good in enumerate(st.quest_item[seat][:2]):
        com[q, good] = 1
        com[q, g] = st.quest_count[seat][q]
        com[q, g + 1] = st.delivered[seat][q]
        if st.hint[seat] and st.delivered[seat][q] < st.quest_count[seat][q]:
            n = cheapest_source(st, good)
            if n >= 0:
                hint[q, 0] = w.ask_table[good][st.stock[n][good]]
                hint[q, 1 + w.keepers[n].room] = 1
    out["commissions"] = com.ravel()
    out["hint"] = hint.ravel()
    room = np.zeros(r, f32)
    room[here] = 1
    out["room"] = room
    exits = np.zeros(r, f32)
    exits[list(w.rooms[here].exits)] = 1
    out["exits"] = exits
    out["dark"] = np.array([1.0 if w.rooms[here].dark else 0.0], f32)
    out["floor"] = np.minimum(np.array(st.floor[here], f32), FLOOR_CLIP)
    cogs = np.zeros(REL, f32)
    for rel in range(1, SEATS):
        if st.room[(seat + rel) % SEATS] == here:
            cogs[rel - 1] = 1
    out["cogs"] = cogs
    keeper = np.zeros(w.n_keepers, f32)
    shop = np.zeros((g, 4), f32)
    shop_coin = np.zeros(1, f32)
    k = w.keeper_in_room[here]
    if k >= 0:
        keeper[k] = 1
        stock = st.stock[k]
        for good in w.keepers[k].trade:
            s = stock[good]
            shop[good] = (1, s, w.ask_table[good][s], w.bid_table[good][s])
        shop_coin[0] = st.shop_coin[k]
    out["keeper"] = keeper
    out["shop"] = shop.ravel()
    out["shop_coin"] = shop_coin
    offers = np.zeros((REL, 4 + g), f32)
    for o in st.offers:
        if o.to == seat and o.posted_turn == st.turn - 1:
            row = offers[(o.sender - seat) % SEATS - 1]
            if row[0] or row[1]:
                continue  # the oldest offer from a seat is the one an accept takes
            if o.kind == "trade":
                row[0] = 1
                row[2 + o.item] = 1
                row[2 + g] = o.qty
            else:
                row[1] = 1
            row[3 + g] = o.coin
    out["offers"] = offers.ravel()
    standing = np.zeros(2 * REL + 1, f32)
    if st.retainer_turns[seat] > 0:
        standing[(st.retainer_of[seat] - seat) % SEATS - 1] = 1
        standing[REL] = st.retainer_turns[seat]
    for rel in range(1, SEATS):
        s = (seat + rel) % SEATS
        if st.retainer_of[s] == seat and st.retainer_turns[s] > 0:
            standing[REL + rel] = st.retainer_turns[s]
    out["standing"] = standing
    last = np.zeros(len(REASONS), f32)
    if st.last_reason[seat]:
        last[_REASON_INDEX[st.last_reason[seat]]] = 1
    out["last"] = last
    out["heard"] = np.array([len(st.heard_log[here])], f32)
    out["action_mask"] = np.array(legal_mask(st, seat), np.int8)
    return out


def flatten(obs: dict[str, np.ndarray], keys: tuple[str, ...]) -> np.ndarray:
    """One vector in ``keys`` order (the layout order), for trainers that want a Box."""
    return np.concatenate([obs[k].astype(np.float32, copy=False) for k in keys])
