"""The per-episode state, and its snapshot form with a validating restore (RULES §5, §15.2).

Everything is plain lists indexed by id (seat, room, keeper, good) so that each field maps one
for one onto an ``[episode, ...]`` array for the batched engine.  Sentinel: -1 means none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import StateError, shown
from .offers import Offer
from .prices import STOCK_CAP
from .world import MAX_KEEPERS, MAX_TURNS, RETAINER_TURNS, SEATS, World

# Magnitude bounds of a restored state (Game.restore).  Coin only ever moves between purses and
# shops (RULES §9), so the 6 purses and at most MAX_KEEPERS shops hold at most 70 x 2**24 < 2**31
# coin for the rest of the game: no purse or wealth leaves the int32 range the numeric
# observation declares, the batched engine's int64 arrays never come close to overflow, and
# every score (points / 40) is exact in a float64.  A real game never comes near: 6 purses of
# the largest start coin plus 64 shops of it is 7,000,000.
MAX_STATE_COIN = 1 << 24
# Loose goods per room and good: goods enter play only by restock (one unit per keeper per
# turn, at most 64 x 1000) and opening stock, so no reachable floor holds 100,000.
MAX_STATE_UNITS = 1_000_000
# Theft counters: one theft per seat per turn, so robberies <= turns and robbed <= 5 x turns.
MAX_ROBBERIES = MAX_TURNS
MAX_ROBBED = (SEATS - 1) * MAX_TURNS
assert (SEATS + MAX_KEEPERS) * MAX_STATE_COIN < 2 ** 31
STATE_KEYS = ("turn", "rooms", "npcs", "cogs")
NPC_KEYS = ("stock", "coin")
COG_KEYS = ("room", "prevRoom", "coin", "items", "delivered", "retainerOf", "retainerTurns",
            "robberies", "robbed")


@dataclass
class GameState:
    """All that a turn changes.  The ``World`` it is played in is constant and shared."""

    world: World
    aliases: list[str]
    turns: int                       # config.turns: the horizon
    speech: bool = True
    thievery: bool = True
    # seats (index = seat)
    room: list[int] = field(default_factory=list)
    prev_room: list[int] = field(default_factory=list)   # room last walked out of, -1 before
    coin: list[int] = field(default_factory=list)
    items: list[list[int]] = field(default_factory=list)  # [seat][good]
    quest_item: list[list[int]] = field(default_factory=list)   # [seat][commission] -> good
    quest_count: list[list[int]] = field(default_factory=list)  # [seat][commission] -> units
    delivered: list[list[int]] = field(default_factory=list)    # [seat][commission]
    retainer_of: list[int] = field(default_factory=list)  # seat it is hired to, -1
    retainer_turns: list[int] = field(default_factory=list)
    robberies: list[int] = field(default_factory=list)   # successful thefts committed
    robbed: list[int] = field(default_factory=list)      # times successfully robbed
    notes: list[str] = field(default_factory=list)
    last_sentence: list[str] = field(default_factory=list)
    last_reason: list[str] = field(default_factory=list)  # "" until the seat has acted
    last_room: list[int] = field(default_factory=list)    # start room of its last act
    hint: list[bool] = field(default_factory=list)
    # rooms (index = room)
    floor: list[list[int]] = field(default_factory=list)  # [room][good]
    room_log: list[list[str]] = field(default_factory=list)   # this turn's public lines
    heard_log: list[list[str]] = field(default_factory=list)  # last turn's lines
    # keepers (index = keeper)
    stock: list[list[int]] = field(default_factory=list)  # [keeper][good]
    shop_coin: list[int] = field(default_factory=list)
    # global
    offers: list[Offer] = field(default_factory=list)      # oldest first
    turn: int = 0
    turns_played: int = 0
    done: bool = False
    reason: str = ""
    recorded_reason: str = ""

    def carried(self, seat: int) -> int:
        """Units in the seat's pack (a loop: compiled, it adds machine words, where ``sum`` is
        a generic call)."""
        units = 0
        for n in self.items[seat]:
            units += n
        return units

    def free(self, seat: int) -> int:
        return self.world.carry_limit - self.carried(seat)


def snapshot(st: GameState) -> dict:
    """The JSON form of a ``turn`` event's state (RULES §15.2); fresh lists, safe to keep."""
    # Seat by seat by index; the columns are read as lists of objects, so that compiled code
    # copies each value into its dict as it is instead of unboxing and boxing it again (as
    # zip or list[int] would); list.copy is the cheapest fresh copy (cheaper than list()).
    room: list[Any] = st.room
    prev: list[Any] = st.prev_room
    coin: list[Any] = st.coin
    employer: list[Any] = st.retainer_of
    bond: list[Any] = st.retainer_turns
    robberies: list[Any] = st.robberies
    robbed: list[Any] = st.robbed
    shop_coin: list[Any] = st.shop_coin
    items, delivered = st.items, st.delivered
    return {
        "turn": st.turn,
        "rooms": [f.copy() for f in st.floor],
        "npcs": [{"stock": stock.copy(), "coin": shop_coin[n]} for n, stock in enumerate(st.stock)],
        "cogs": [{"room": room[s], "prevRoom": prev[s], "coin": coin[s], "items": items[s].copy(),
                  "delivered": delivered[s].copy(), "retainerOf": employer[s],
                  "retainerTurns": bond[s], "robberies": robberies[s], "robbed": robbed[s]}
                 for s in range(len(room))],
    }


def restore(st: GameState, state: dict) -> None:
    """Replace floors, shops and seats with ``state`` (snapshot form), after validating all of it.

    Open to any state a scenario or curriculum may stage, but never one that breaks a rule's
    invariant or a bound: keys are the snapshot's (a ``kind: "turn"`` event is accepted too;
    cog keys other than room, coin and items default as RULES §15.2 reads them); ``turn`` in
    0..turns-1; every count >= 0; a room's floor at most ``MAX_STATE_UNITS`` of each good; a
    shop's stock at most ``STOCK_CAP`` (12) of each good; a pack at most the carry limit in
    all; ``prevRoom`` -1 or an exit of ``room`` (seats only ever walk along exits);
    ``delivered`` at most the commission's count; a retainer bound to another seat for 1..3
    turns, or free; purses and shop coin at most ``MAX_STATE_COIN`` (2**24) each; robberies at
    most ``MAX_ROBBERIES`` (1000) and robbed at most ``MAX_ROBBED`` (5000).

    Raises ``StateError`` naming the first impossible field; ``st`` is untouched in that case.
    """
    w = st.world
    parsed = _validate(w, st, state)
    floor, stock, shop_coin, cogs, turn = parsed
    st.floor = floor
    st.stock = stock
    st.shop_coin = shop_coin
    for s, c in enumerate(cogs):
        st.room[s] = c["room"]
        st.prev_room[s] = c["prevRoom"]
        st.coin[s] = c["coin"]
        st.items[s] = list(c["items"])
        st.delivered[s] = list(c["delivered"])
        st.retainer_of[s] = c["retainerOf"]
        st.retainer_turns[s] = c["retainerTurns"]
        st.robberies[s] = c["robberies"]
        st.robbed[s] = c["robbed"]
    if turn is not None and turn != st.turn:
        # A state from another turn: offers and logs belong to the old turn and are dropped.
        st.turn = st.turns_played = turn
        st.offers = []
        st.room_log = [[] for _ in range(w.n_rooms)]
        st.heard_log = [[] for _ in range(w.n_rooms)]


def _validate(w: World, st: GameState, state: dict):
    if not isinstance(state, dict):
        raise StateError(f"state must be a dict in snapshot form; got {type(state).__name__}")
    for key in ("rooms", "npcs", "cogs"):
        if key not in state:
            raise StateError(f"state is missing the key {key!r}")
    if state.get("kind", "turn") != "turn":
        raise StateError(f"state.kind must be 'turn' (a turn event) when given; got "
                         f"{shown(state['kind'])}")
    _known(state, (*STATE_KEYS, "kind"), "state")
    turn = state.get("turn")
    if "turn" in state:  # optional; given, it must be a turn of the game (None is no turn)
        _int(turn, "state.turn", 0, st.turns - 1)
    rooms = _list(state["rooms"], "state.rooms", w.n_rooms)
    floor = [[_int(v, f"state.rooms[{r}][{g}]", 0, MAX_STATE_UNITS)
              for g, v in enumerate(_list(row, f"state.rooms[{r}]", w.n_goods))]
             for r, row in enumerate(rooms)]
    npcs = _list(state["npcs"], "state.npcs", w.n_keepers)
    stock, shop_coin = [], []
    for n, npc in enumerate(npcs):
        if not isinstance(npc, dict) or "stock" not in npc or "coin" not in npc:
            raise StateError(f"state.npcs[{n}] must be a dict with 'stock' and 'coin'")
        _known(npc, NPC_KEYS, f"state.npcs[{n}]")
        stock.append([_int(v, f"state.npcs[{n}].stock[{g}]", 0, STOCK_CAP)
                      for g, v in enumerate(_list(npc["stock"], f"state.npcs[{n}].stock",
                                                  w.n_goods))])
        shop_coin.append(_int(npc["coin"], f"state.npcs[{n}].coin", 0, MAX_STATE_COIN))
    cogs = _list(state["cogs"], "state.cogs", SEATS)
    out = []
    for s, cog in enumerate(cogs):
        p = f"state.cogs[{s}]"
        if not isinstance(cog, dict):
            raise StateError(f"{p} must be a dict")
        for key in ("room", "coin", "items"):
            if key not in cog:
                raise StateError(f"{p} is missing the key {key!r}")
        _known(cog, COG_KEYS, p)
        c: dict = {
            "room": _int(cog["room"], f"{p}.room", 0, w.n_rooms - 1),
            "prevRoom": _int(cog.get("prevRoom", -1), f"{p}.prevRoom", -1, w.n_rooms - 1),
            "coin": _int(cog["coin"], f"{p}.coin", 0, MAX_STATE_COIN),
            "items": [_int(v, f"{p}.items[{g}]", 0, MAX_STATE_UNITS)
                      for g, v in enumerate(_list(cog["items"], f"{p}.items", w.n_goods))],
            "delivered": [_int(v, f"{p}.delivered[{q}]", 0, st.quest_count[s][q])
                          for q, v in enumerate(_list(cog.get("delivered", [0, 0]),
                                                      f"{p}.delivered", 2))],
            "retainerOf": _int(cog.get("retainerOf", -1), f"{p}.retainerOf", -1, SEATS - 1),
            "retainerTurns": _int(cog.get("retainerTurns", 0), f"{p}.retainerTurns", 0,
                                  RETAINER_TURNS),
            "robberies": _int(cog.get("robberies", 0), f"{p}.robberies", 0, MAX_ROBBERIES),
            "robbed": _int(cog.get("robbed", 0), f"{p}.robbed", 0, MAX_ROBBED),
        }
        if c["prevRoom"] >= 0 and c["prevRoom"] not in w.rooms[c["room"]].exits:
            raise StateError(f"{p}.prevRoom {c['prevRoom']} is not an exit of room "
                             f"{c['room']} (a seat only walks along exits; -1 for none)")
        if sum(c["items"]) > w.carry_limit:
            raise StateError(f"{p}.items holds {sum(c['items'])} goods, over the carry limit "
                             f"of {w.carry_limit}")
        if c["retainerOf"] == s:
            raise StateError(f"{p}.retainerOf cannot be the seat itself ({s})")
        if (c["retainerOf"] >= 0) != (c["retainerTurns"] > 0):
            raise StateError(f"{p}: retainerOf {c['retainerOf']} and retainerTurns "
                             f"{c['retainerTurns']} disagree (both set or both empty)")
        out.append(c)
    return floor, stock, shop_coin, out, turn


def _known(d: dict, allowed: tuple[str, ...], path: str) -> None:
    """Refuse a key the snapshot form does not have: a typo must not pass as a default."""
    for k in d:
        if k not in allowed:
            raise StateError(f"{path} has an unknown key {shown(k)} (allowed: "
                             f"{', '.join(allowed)})")


def _list(v, path: str, n: int) -> list:
    if not isinstance(v, list) or len(v) != n:
        got = f"a list of {len(v)}" if isinstance(v, list) else type(v).__name__
        raise StateError(f"{path} must be a list of {n}; got {got}")
    return v


def _int(v, path: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise StateError(f"{path} must be an int; got {shown(v)}")
    if not lo <= v <= hi:
        raise StateError(f"{path} must be between {lo} and {hi}; got {shown(v)}")
    return v
