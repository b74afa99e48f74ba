"""The numeric per-seat observation: a one-level dict of arrays (RULES §17).

It holds exactly the facts of ``observation.observe`` (own purse, pack, commissions and hint;
the room, its floor, the cogs present, the keeper's table; offers to the seat; its standing;
its last outcome), as ids and counts for neural policies.  Other seats are seat-relative
(``rel`` 1..5 = seat ``(me + rel) % 6``), like the action table.  :func:`layout` lists the keys.

It reads the state rather than that dict, for speed.  Its twins: ``observe`` itself
(``tests/test_faces_rules.py`` rebuilds every key from it and checks that what it hides never
moves the vector) and the batched ``sim.batched.kernels_observe.encode_rows`` (equal row for
row in ``test_batched_equals_scalar_turn_by_turn``, ``tests/test_batched.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..rules.intents import REASONS
from ..rules.observation import cheapest_keeper
from ..rules.state import GameState
from ..rules.world import MAX_TURNS, SEATS, World, per_world
from .action_table import legal_mask, n_actions

REL = 5
_REASON_INDEX = {r: i for i, r in enumerate(REASONS)}
FLOOR_CLIP = 255
PRICE_HIGH = 1000  # the shop's prices' upper bound, unless a town's own prices run higher
OFFER_COIN_HIGH = float(2 ** 63)  # an offer's coin: any amount to int64's (Intent, the parser)


@per_world
def price_high(world: World) -> int:
    """The upper bound of the prices a shop shows (an ask, a bid, a hint's cheapest ask):
    :data:`PRICE_HIGH`, or a town's dearest ask when higher (a world file's base values reach
    1000).  An offer's coin is another matter: a seat's sentence may name any amount up to
    int64's largest, so its bound is :data:`OFFER_COIN_HIGH`, and it is shown as it is (a
    model trained or recorded on it reads what it always read)."""
    return max(PRICE_HIGH, max(max(t) for t in world.ask_table))


def layout(world: World) -> dict[str, tuple[tuple[int, ...], float]]:
    """Each key's shape and upper bound (all lower bounds are 0), in vector order:

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
    | action_mask | actions | 1 where ``action_table.legal_mask`` holds |
    """
    g, r, k = world.n_goods, world.n_rooms, world.n_keepers
    big = float(2 ** 31 - 1)
    price = float(price_high(world))
    return {
        "time": ((2,), float(MAX_TURNS)),
        "purse": ((1,), big),
        "pack": ((g,), float(world.carry_limit)),
        "commissions": ((2 * (g + 2),), 2.0),
        "hint": ((2 * (1 + r),), price),
        "room": ((r,), 1.0),
        "exits": ((r,), 1.0),
        "dark": ((1,), 1.0),
        "floor": ((g,), float(FLOOR_CLIP)),
        "cogs": ((REL,), 1.0),
        "keeper": ((k,), 1.0),
        "shop": ((4 * g,), price),
        "shop_coin": ((1,), big),
        "offers": ((REL * (4 + g),), OFFER_COIN_HIGH),
        "standing": ((2 * REL + 1,), 3.0),
        "last": ((len(REASONS),), 1.0),
        "heard": ((1,), 12.0),
        "action_mask": ((n_actions(world),), 1.0),
    }


def encode(st: GameState, seat: int, mask: list[bool] | None = None) -> dict[str, np.ndarray]:
    """The seat's numeric view; only what RULES §17 lets it see.

    Built as one flat list and split into views of one array (a handful of numpy calls per
    observation instead of one per field).  ``mask`` may be passed when already computed.
    """
    return split(encode_flat(st, seat, mask), st.world)


def encode_flat(st: GameState, seat: int, mask: list[bool] | None = None) -> np.ndarray:
    """The same observation as one float32 vector in layout order (mask last)."""
    w = st.world
    g, r = w.n_goods, w.n_rooms
    here = st.room[seat]
    v: list = [st.turn, max(0, st.turns - st.turns_played), st.coin[seat]]
    v += st.items[seat]
    hint = [0] * (2 * (1 + r))
    for q, good in enumerate(st.quest_item[seat][:2]):
        row = [0] * (g + 2)
        row[good] = 1
        row[g] = st.quest_count[seat][q]
        row[g + 1] = st.delivered[seat][q]
        v += row
        if st.hint[seat] and st.delivered[seat][q] < st.quest_count[seat][q]:
            n = cheapest_keeper(st, good)
            if n >= 0:
                hint[q * (1 + r)] = w.ask_table[good][st.stock[n][good]]
                hint[q * (1 + r) + 1 + w.keepers[n].room] = 1
    v += hint
    room = [0] * r
    room[here] = 1
    v += room
    v += w.adjacent[here]
    v.append(1 if w.rooms[here].dark else 0)
    v += [min(n, FLOOR_CLIP) for n in st.floor[here]]
    v += [st.room[(seat + rel) % SEATS] == here for rel in range(1, SEATS)]
    k = w.keeper_in_room[here]
    keeper = [0] * w.n_keepers
    shop = [0] * (4 * g)
    shop_coin = 0
    if k >= 0:
        keeper[k] = 1
        stock = st.stock[k]
        for good in w.keepers[k].trade:
            s = stock[good]
            shop[4 * good:4 * good + 4] = (1, s, w.ask_table[good][s], w.bid_table[good][s])
        shop_coin = st.shop_coin[k]
    v += keeper
    v += shop
    v.append(shop_coin)
    width = 4 + g
    offers = [0] * (REL * width)
    for o in st.offers:
        if o.to == seat and o.posted_turn == st.turn - 1:
            base = ((o.sender - seat) % SEATS - 1) * width
            if offers[base] or offers[base + 1]:
                continue  # the oldest offer from a seat is the one an accept takes
            if o.kind == "trade":
                offers[base] = 1
                offers[base + 2 + o.item] = 1
                offers[base + 2 + g] = o.qty
            else:
                offers[base + 1] = 1
            offers[base + 3 + g] = o.coin
    v += offers
    standing = [0] * (2 * REL + 1)
    if st.retainer_turns[seat] > 0:
        standing[(st.retainer_of[seat] - seat) % SEATS - 1] = 1
        standing[REL] = st.retainer_turns[seat]
    for rel in range(1, SEATS):
        s = (seat + rel) % SEATS
        if st.retainer_of[s] == seat and st.retainer_turns[s] > 0:
            standing[REL + rel] = st.retainer_turns[s]
    v += standing
    last = [0] * len(REASONS)
    if st.last_reason[seat]:
        last[_REASON_INDEX[st.last_reason[seat]]] = 1
    v += last
    v.append(len(st.heard_log[here]))
    v += legal_mask(st, seat) if mask is None else mask
    return np.array(v, np.float32)


def encode_view(view: dict, world: World, aliases: Sequence[str],
                legal: Iterable[int]) -> np.ndarray:
    """The float32 vector :func:`encode_flat` gives, built from what a seat is sent instead
    of the state: its ``observe`` dict (RULES §17), the seats' aliases and the indices of its
    legal actions (the mask).  A policy that runs apart, in a sandbox, holds only these.

    The twin of :func:`encode_flat`, written from the other side: ``tests/test_faces_rules.py``
    holds the two equal in every reachable state, which also shows that the vector carries
    nothing ``observe`` hides."""
    good = {g.name: i for i, g in enumerate(world.goods)}
    room_id = {r.name: i for i, r in enumerate(world.rooms)}
    keeper_id = {k.name: i for i, k in enumerate(world.keepers)}
    me = view["slot"]
    rel = {aliases[(me + r) % SEATS]: r for r in range(1, SEATS)}
    g, r = world.n_goods, world.n_rooms
    v: list = [view["turn"], max(0, view["turns"] - view["turnsPlayed"]), view["coin"]]
    pack = [0] * g
    for e in view["items"]:
        pack[good[e["item"]]] = e["count"]
    v += pack
    hint = [0] * (2 * (1 + r))
    for q, c in enumerate(view["quests"][:2]):
        row = [0] * (g + 2)
        row[good[c["item"]]], row[g], row[g + 1] = 1, c["count"], c["delivered"]
        v += row
        if "cheapest" in c:
            hint[q * (1 + r)] = c["cheapest"]["ask"]
            hint[q * (1 + r) + 1 + room_id[c["cheapest"]["at"]]] = 1
    v += hint
    room = view["room"]
    v += [int(i == room["id"]) for i in range(r)]
    exits = {x["id"] for x in room["exits"]}
    v += [int(i in exits) for i in range(r)]
    v.append(int(room["dark"]))
    floor = [0] * g
    for e in room["ground"]:
        floor[good[e["item"]]] = min(e["count"], FLOOR_CLIP)
    v += floor
    v += [int(aliases[(me + k) % SEATS] in room["cogs"]) for k in range(1, SEATS)]
    keeper, shop, shop_coin = [0] * world.n_keepers, [0] * (4 * g), 0
    if "npc" in room:
        keeper[keeper_id[room["npc"]["name"]]] = 1
        for e in room["npc"]["goods"]:
            i = good[e["item"]]
            shop[4 * i:4 * i + 4] = [1, e["stock"], e["ask"], e["bid"]]
        shop_coin = room["npc"]["coin"]
    v += keeper
    v += shop
    v.append(shop_coin)
    width = 4 + g
    offers = [0] * (REL * width)
    for o in view["offers"]:
        base = (rel[o["from"]] - 1) * width
        if offers[base] or offers[base + 1]:
            continue  # one live offer per sender: the oldest, as encode_flat keeps
        offers[base + (0 if o["kind"] == "trade" else 1)] = 1
        if o["kind"] == "trade":
            offers[base + 2 + good[o["item"]]] = 1
            offers[base + 2 + g] = o["qty"]
        offers[base + 3 + g] = o["coin"]
    v += offers
    standing_view = view["standing"]
    standing = [0] * (2 * REL + 1)
    if standing_view["hiredTo"]:
        standing[rel[standing_view["hiredTo"]] - 1] = 1
        standing[REL] = standing_view["hiredToTurns"]
    for h in standing_view["retainers"]:
        standing[REL + rel[h["name"]]] = h["turns"]
    v += standing
    v += [int(view["lastReason"] == x) for x in REASONS]
    v.append(len(view["heard"]))
    mask = [0] * n_actions(world)
    for i in legal:
        mask[i] = 1
    v += mask
    return np.array(v, np.float32)


def split(flat: np.ndarray, world: World) -> dict[str, np.ndarray]:
    """A flat observation as :func:`encode`'s dict of views (``action_mask`` as int8)."""
    out = {k: flat[a:b] for k, (a, b) in slices(world).items()}
    out["action_mask"] = out["action_mask"].astype(np.int8)
    return out


@per_world
def slices(world: World) -> dict[str, tuple[int, int]]:
    """Each key's ``(start, stop)`` in the flat vector."""
    out, at = {}, 0
    for k, (shape, _) in layout(world).items():
        out[k] = (at, at + shape[0])
        at += shape[0]
    return out
