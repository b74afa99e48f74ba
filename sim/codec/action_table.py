"""The flat structured action table: index <-> Intent, canonical sentences, the legal mask.

Every environment asks this module, and only this module, for ``index -> Intent`` and the mask,
so the structured and sentence faces cannot drift apart: each action's canonical sentence
parses back to the same intent (``tests/test_env.py``).

Other seats are **seat-relative** (``rel`` 1..5 is seat ``(me + rel) % 6``), so a policy learnt
in one seat transfers to another.  Quantities ({1, all}; buying and delivering add 2, what a
commission asks), coin amounts and offer markups over the base value come from small fixed sets
that make every act of the scripted baselines (RULES §21) one row.  Only free-text speech is
outside the table; :func:`action_table` lists the blocks.

The table is versioned (:data:`TABLE_VERSION`): a model records the version its indices mean,
and loading it under another table is refused.  Version 1 had deliver {1, all} and absolute
offer prices {4, 8, 12, 16} (:data:`EARLIER_TABLE_SIZES`: 261 actions in the standard town,
where version 2 has 267).

Twin: ``sim.batched.kernels_observe.mask_rows`` computes the mask again on arrays;
``test_batched_equals_scalar_turn_by_turn`` (``tests/test_batched.py``) holds the two equal, and
``tests/test_faces_rules.py`` holds both to the rules' own verdict on every action.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..language.phrasing import canonical_sentence
from ..rules.errors import IntentError
from ..rules.intents import Intent
from ..rules.robbery import guards, robbery_succeeds
from ..rules.state import GameState
from ..rules.world import QTY_ALL, SEATS, World, per_world

TABLE_VERSION = 2
# earlier versions' action counts in the standard town: a model that does not record its
# version is known by its count when no other version had it (agents.learn.sb3)
EARLIER_TABLE_SIZES = {1: 261}
TAKE_QTYS = (1, QTY_ALL)
BUY_QTYS = (1, 2)
DELIVER_QTYS = (1, 2, QTY_ALL)
PAY_COINS = (1, 5, 10)
OFFER_MARKUPS = (0, 2, 4, 8)  # offer price = the good's base value + markup
HIRE_FEES = (1, 5, 10)
RELS = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class ActionSpec:
    """One row of the table: the intent kind and its slots (``rel`` for another seat)."""

    block: str
    kind: str
    to_room: int = -1
    item: int = -1
    qty: int = 1
    rel: int = 0
    coin: int = 0
    to_keeper: bool = False  # buy/sell/quest/deliver name the keeper standing here


@per_world
def action_table(world: World) -> tuple[ActionSpec, ...]:
    """The table for a town, in a fixed order (OpenSpiel-style: legal actions ascend).

    Its blocks, with the counts of the standard town (9 rooms, 6 goods):

    | block | slots | count |
    |---|---|---|
    | wait | - | 1 |
    | quest | ask the keeper here | 1 |
    | move | destination room 0..8 | 9 |
    | take | good x {1, all} | 12 |
    | drop | good x {1, all} | 12 |
    | buy | good x {1, 2} from the keeper here | 12 |
    | sell | good x {1, all} to the keeper here | 12 |
    | deliver | good x {1, 2, all} handed to the keeper here | 18 |
    | gift | rel x good (1 unit) | 30 |
    | pay | rel x coin {1, 5, 10} | 15 |
    | offer | rel x good (1 unit) x price base value + {0, 2, 4, 8} | 120 |
    | hire | rel x fee {1, 5, 10} | 15 |
    | accept | rel | 5 |
    | rob | rel | 5 |
    """
    return _build_table(world)


def _build_table(world: World) -> tuple[ActionSpec, ...]:
    rows: list[ActionSpec] = [ActionSpec("wait", "wait"),
                              ActionSpec("quest", "quest", to_keeper=True)]
    goods = range(world.n_goods)
    rows += [ActionSpec("move", "move", to_room=r) for r in range(world.n_rooms)]
    rows += [ActionSpec("take", "take", item=g, qty=q) for g in goods for q in TAKE_QTYS]
    rows += [ActionSpec("drop", "drop", item=g, qty=q) for g in goods for q in TAKE_QTYS]
    rows += [ActionSpec("buy", "buy", item=g, qty=q, to_keeper=True)
             for g in goods for q in BUY_QTYS]
    rows += [ActionSpec("sell", "sell", item=g, qty=q, to_keeper=True)
             for g in goods for q in TAKE_QTYS]
    rows += [ActionSpec("deliver", "give", item=g, qty=q, to_keeper=True)
             for g in goods for q in DELIVER_QTYS]
    rows += [ActionSpec("gift", "give", item=g, rel=r) for r in RELS for g in goods]
    rows += [ActionSpec("pay", "give", rel=r, coin=c) for r in RELS for c in PAY_COINS]
    rows += [ActionSpec("offer", "trade", item=g, rel=r, coin=world.values[g] + m)
             for r in RELS for g in goods for m in OFFER_MARKUPS]
    rows += [ActionSpec("hire", "hire", rel=r, coin=c) for r in RELS for c in HIRE_FEES]
    rows += [ActionSpec("accept", "accept", rel=r) for r in RELS]
    rows += [ActionSpec("rob", "rob", rel=r) for r in RELS]
    return tuple(rows)


def n_actions(world: World) -> int:
    return len(action_table(world))



def check_index(index: int, world: World) -> int:
    """``index`` if it names a row of the table; otherwise the ``IntentError`` every face raises."""
    size = len(action_table(world))
    if not 0 <= index < size:
        raise IntentError(f"action index must be between 0 and {size - 1}; got {index!r}")
    return index


def to_intent(index: int, world: World, seat: int, room: int) -> Intent:
    """The intent of action ``index`` for ``seat`` standing in ``room``."""
    a = action_table(world)[check_index(index, world)]
    npc = world.keeper_in_room[room] if a.to_keeper else -1
    other = (seat + a.rel) % SEATS if a.rel else -1
    return Intent(a.kind, to_room=a.to_room, item=a.item, qty=a.qty, npc=npc, other=other,
                  coin=a.coin)


def semantic(it: Intent) -> tuple:
    """The slots that decide an intent's outcome; two intents with equal ``semantic`` are the
    same act (a parse also fills incidental slots, e.g. ``toRoom`` from "Smith Bram")."""
    k = it.kind
    if k == "move":
        return (k, it.to_room)
    if k in ("take", "drop"):
        return (k, it.item, it.qty)
    if k in ("buy", "sell"):
        return (k, it.item, it.qty, it.npc)
    if k == "give":
        if it.npc >= 0:
            return (k, "keeper", it.npc, it.item, it.qty)
        return (k, "cog", it.other, it.item, it.qty if it.item >= 0 else 0, it.coin)
    if k == "trade":
        return (k, it.other, it.item, it.qty, it.coin)
    if k == "hire":
        return (k, it.other, it.coin)
    if k in ("accept", "rob"):
        return (k, it.other)
    if k == "quest":
        return (k, it.npc)
    if k == "none":
        return (k, it.reason)
    return (k,)


def canonical(index: int, world: World, aliases: list[str], seat: int, room: int) -> str:
    """The plain sentence of an action; the parser reads it back as the same intent."""
    return canonical_sentence(to_intent(index, world, seat, room), world, aliases)


def legal_mask(st: GameState, seat: int) -> list[bool]:
    """Actions whose preconditions hold from the seat's own view (RULES §9, §11).

    Only what the seat may see is read.  A few outcomes cannot be foreseen from there, so the
    mask may call them legal: a gift into a full pack (``carry_limit``), an accepted trade whose
    offerer no longer holds the goods (``offer_expired``), a robbery met by hirelings guarding
    the victim (``robbery_failed``) or of a victim with nothing at all (``nothing_to_take``), and
    any contest lost to an earlier initiative in the same turn (last unit of stock, a floor
    good, shop coin, an offerer's goods or coin).  Built block by block in table order.
    """
    w = st.world
    goods = range(w.n_goods)
    here = st.room[seat]
    keeper = w.keeper_in_room[here]
    pack = st.items[seat]
    coin = st.coin[seat]
    free = w.carry_limit - sum(pack)
    floor = st.floor[here]
    others = [(seat + r) % SEATS for r in RELS]
    present = [st.room[o] == here for o in others]
    held = [n > 0 for n in pack]
    mask = [True, keeper >= 0]
    mask += w.adjacent[here]
    n_take, n_buy = len(TAKE_QTYS), len(BUY_QTYS)
    mask += [floor[g] > 0 and free > 0 for g in goods for _ in range(n_take)]
    mask += [h for h in held for _ in range(n_take)]
    if keeper >= 0:
        deals, stock = w.deals[keeper], st.stock[keeper]
        shop_coin = st.shop_coin[keeper]
        can_buy = [deals[g] and free > 0 and stock[g] > 0 and coin >= w.ask_table[g][stock[g]]
                   for g in goods]
        can_sell = [deals[g] and held[g] and shop_coin >= w.bid_table[g][stock[g]]
                    for g in goods]
    else:
        can_buy = can_sell = [False] * w.n_goods
    mask += [b for b in can_buy for _ in range(n_buy)]
    mask += [b for b in can_sell for _ in range(n_take)]
    if keeper == w.guild:
        need = [0] * w.n_goods
        for q, good in enumerate(st.quest_item[seat]):
            need[good] += st.quest_count[seat][q] - st.delivered[seat][q]
        mask += [held[g] and need[g] > 0 for g in goods for _ in DELIVER_QTYS]
    else:
        mask += [False] * (w.n_goods * len(DELIVER_QTYS))
    mask += [p and h for p in present for h in held]  # gift
    mask += [p and coin > 0 for p in present for _ in PAY_COINS]
    mask += [p and h for p in present for h in held for _ in OFFER_MARKUPS]
    mask += [p and coin > 0 for p in present for _ in HIRE_FEES]
    first: dict[int, object] = {}
    for o in st.offers:
        if o.to == seat and o.posted_turn == st.turn - 1 and o.sender not in first:
            first[o.sender] = o  # the oldest offer from a seat is the one an accept takes
    for k, other in enumerate(others):
        o = first.get(other)
        mask.append(o is not None and present[k] and (
            o.kind == "hire" or (coin >= o.coin and free >= o.qty)))
    # Robbery: the victim's guards are hidden from the robber, so assume none.
    mine = guards(st.retainer_of, st.retainer_turns, st.room, seat, here)
    strong = robbery_succeeds(mine, 0, w.rooms[here].dark)
    bound_to = st.retainer_of[seat] if st.retainer_turns[seat] > 0 else -1
    mask += [st.thievery and strong and present[k] and other != bound_to
             for k, other in enumerate(others)]
    return mask
