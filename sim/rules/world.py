"""The town as an immutable value: rooms, exits, goods, keepers and constants (RULES §1-2).

The game is *given* a :class:`World` (default :data:`STANDARD_TOWN`) instead of reading module
globals, so that variant towns (other exits, stock, prices, coin, turn counts) can be played and
checked by the feasibility gate without touching the rules code.
"""

from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass, field

from .errors import ConfigError, shown
from .prices import STOCK_CAP, ask_at, bid_at

# Constants of RULES §1 that are not part of a variant town.
SEATS = 6
QUESTS = 2
POINTS_PER_UNIT = 4
COMPLETION_BONUS = 8
POINT_VALUE = 3
SCORE_SCALE = 40.0
RETAINER_TURNS = 3
ROB_COIN = 10
FINE_COIN = 8
MIN_TURNS = 6
# THE bound on an episode's turns, everywhere (GameConfig, world files, the CLIs): the original's
# longest game is 40 turns; 1000 leaves room for long variants while every per-turn structure
# (events, replays, the batched restock table) stays small and linear in it.
MAX_TURNS = 1000
DEFAULT_TURNS = 14
QTY_ALL = 999
MAX_SENTENCE_LEN = 240
MAX_SAY_LEN = 160
MAX_NOTES_LEN = 600
MAX_ROOM_LOG = 12
MAX_ROOM_LOG_LEN = 200
MAX_PROMPT_LEN = 4000
COMMISSION_COUNT = 2
# The size of a town (checked by World itself, so no caller can build a bigger one).  64 rooms
# x 32 goods keep the numeric observation, the action table and the batched engine's
# [episode, room, goods] int64 arrays small (a few KB a row), and the all-pairs distance table
# and the feasibility planner's per-room search proportional to a real town.  One keeper per
# room at most (RULES §2.3), so at most MAX_ROOMS keepers.
MAX_ROOMS = 64
MAX_GOODS = 32
MAX_KEEPERS = MAX_ROOMS
MAX_EXITS = 16        # per room: far above any map drawn so far (the standard town has 4)
MAX_VALUE = 1000      # a good's base value: far above anything playable
MAX_COIN = 100_000    # start_coin and keeper_start_coin
MAX_CARRY = 999       # carry_limit (QTY_ALL means "all", so a pack never reaches it)
COG_NAMES = ("Sprocket", "Gizmo", "Ratchet", "Widget", "Bolt", "Piston",
             "Flywheel", "Rivet", "Tinker", "Gasket")


@dataclass(frozen=True)
class Room:
    """One room: parser keywords, map position, darkness and exits in stored order."""

    id: int
    name: str
    keywords: tuple[str, ...]
    x: int
    y: int
    dark: bool
    exits: tuple[int, ...]
    desc: str = ""


@dataclass(frozen=True)
class Good:
    """One kind of goods with its fixed base value (the scoring valuation, never moves)."""

    id: int
    name: str
    plural: str
    keywords: tuple[str, ...]
    value: int


@dataclass(frozen=True)
class Keeper:
    """A shopkeeper: where it stands, what it trades (restock order) and its opening stock."""

    id: int
    name: str
    keywords: tuple[str, ...]
    room: int
    trade: tuple[int, ...]
    opening: tuple[int, ...]  # parallel to ``trade``


@dataclass(frozen=True)
class World:
    """Everything constant about a town.  Derived tables are computed once at construction."""

    rooms: tuple[Room, ...]
    goods: tuple[Good, ...]
    keepers: tuple[Keeper, ...]
    quest_items: tuple[int, ...] = (0, 1, 2, 3)
    guild: int = 4
    start_coin: int = 40
    keeper_start_coin: int = 120
    carry_limit: int = 8
    dist: tuple[tuple[int, ...], ...] = field(init=False, repr=False)
    adjacent: tuple[tuple[bool, ...], ...] = field(init=False, repr=False)
    keeper_in_room: tuple[int, ...] = field(init=False, repr=False)
    deals: tuple[tuple[bool, ...], ...] = field(init=False, repr=False)
    values: tuple[int, ...] = field(init=False, repr=False)
    ask_table: tuple[tuple[int, ...], ...] = field(init=False, repr=False)
    bid_table: tuple[tuple[int, ...], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _check_size(self)
        n = len(self.rooms)
        object.__setattr__(self, "dist", _distances(self.rooms))
        object.__setattr__(self, "adjacent", tuple(
            tuple(b in self.rooms[a].exits for b in range(n)) for a in range(n)))
        object.__setattr__(self, "keeper_in_room", tuple(
            min((k.id for k in self.keepers if k.room == r), default=-1) for r in range(n)))
        object.__setattr__(self, "deals", tuple(
            tuple(g in k.trade for g in range(len(self.goods))) for k in self.keepers))
        object.__setattr__(self, "values", tuple(g.value for g in self.goods))
        object.__setattr__(self, "ask_table", tuple(
            tuple(ask_at(g.value, s) for s in range(STOCK_CAP + 1)) for g in self.goods))
        object.__setattr__(self, "bid_table", tuple(
            tuple(bid_at(g.value, s) for s in range(STOCK_CAP + 1)) for g in self.goods))

    @property
    def n_rooms(self) -> int:
        return len(self.rooms)

    @property
    def n_goods(self) -> int:
        return len(self.goods)

    @property
    def n_keepers(self) -> int:
        return len(self.keepers)

    def step_toward(self, a: int, b: int) -> int:
        """First exit of ``a`` on a shortest path to ``b``; -1 when a == b or unreachable (§2.1)."""
        if a == b or self.dist[a][b] < 0:
            return -1
        want = self.dist[a][b] - 1
        for r in self.rooms[a].exits:
            if self.dist[r][b] == want:
                return r
        return -1

    def item_name(self, item: int, n: int) -> str:
        """``"1 hide"``, ``"2 hides"``, ``"0 hides"`` (RULES §2.2)."""
        g = self.goods[item]
        return f"{n} {g.name if n == 1 else g.plural}"

    def to_json(self) -> dict:
        """The world JSON of RULES §16.1 (with the later ``guild``/``pointsPerUnit`` keys)."""
        return {
            "rooms": [{"id": r.id, "name": r.name, "desc": r.desc, "x": r.x, "y": r.y,
                       "dark": r.dark, "exits": list(r.exits)} for r in self.rooms],
            "items": [{"id": g.id, "name": g.name, "plural": g.plural, "value": g.value}
                      for g in self.goods],
            "npcs": [{"id": k.id, "name": k.name, "room": k.room, "trade": list(k.trade)}
                     for k in self.keepers],
            "guild": self.guild,
            "pointsPerUnit": POINTS_PER_UNIT,
        }


def per_world(build=None, *, maxsize: int = 64):
    """Cache ``build(world, *key)`` by the world's identity (and the extra hashable ``key``).

    The one cache helper of the project for values derived from a town (its action table, its
    phrase tables, its batched tables...).  Hashing a whole ``World`` on every lookup would
    cost more than the lookup itself, so the entry is keyed by ``id(world)`` and keeps the
    world alive, so that its id cannot be reused by another world.  At most ``maxsize``
    entries are kept; the oldest goes first.  Usable as ``@per_world`` or
    ``@per_world(maxsize=...)``.
    """

    def decorate(fn):
        cache: dict[object, tuple[object, object]] = {}

        @functools.wraps(fn)
        def cached(world, *key):
            k = (id(world), *key) if key else id(world)
            hit = cache.get(k)
            if hit is not None and hit[0] is world:
                return hit[1]
            value = fn(world, *key)
            while len(cache) >= maxsize:
                cache.pop(next(iter(cache)), None)
            cache[k] = (world, value)
            return value

        cached.cache = cache  # for tests: the entries, keyed by identity
        return cached

    return decorate(build) if build is not None else decorate


def _check_size(w: World) -> None:
    """Refuse a town beyond the bounds above before any table is derived from it: the
    derived tables are quadratic in rooms, and coin and values bound every score."""
    for name, cap in (("rooms", MAX_ROOMS), ("goods", MAX_GOODS), ("keepers", MAX_KEEPERS)):
        v = getattr(w, name)
        if not isinstance(v, tuple):
            raise ConfigError(f"World.{name} must be a tuple; got {type(v).__name__}")
        if len(v) > cap:
            raise ConfigError(f"World.{name}: at most {cap}; got {len(v)}")
    for r in w.rooms:
        # typed as annotated: compiled code (agents.baselines.native) reads these fields as such
        if not isinstance(r.exits, tuple):
            raise ConfigError(f"World.rooms[{r.id}].exits must be a tuple; got "
                              f"{type(r.exits).__name__}")
        if not isinstance(r.dark, bool):
            raise ConfigError(f"World.rooms[{r.id}].dark must be a bool; got {shown(r.dark)}")
        if len(r.exits) > MAX_EXITS:
            raise ConfigError(f"World.rooms[{r.id}].exits: at most {MAX_EXITS}; "
                              f"got {len(r.exits)}")
        if any(isinstance(e, bool) or not isinstance(e, int) or not 0 <= e < len(w.rooms)
               for e in r.exits):
            raise ConfigError(f"World.rooms[{r.id}].exits must be room ids; got "
                              f"{shown(r.exits, 80)}")
    for g in w.goods:
        _bounded(g.value, f"World.goods[{g.id}].value", 1, MAX_VALUE)
    for k in w.keepers:
        _bounded(k.room, f"World.keepers[{k.id}].room", 0, len(w.rooms) - 1)
        for name in ("trade", "opening"):
            if not isinstance(getattr(k, name), tuple):
                raise ConfigError(f"World.keepers[{k.id}].{name} must be a tuple; got "
                                  f"{type(getattr(k, name)).__name__}")
    for name, lo, cap in (("start_coin", 0, MAX_COIN), ("keeper_start_coin", 0, MAX_COIN),
                          ("carry_limit", 1, MAX_CARRY)):
        _bounded(getattr(w, name), f"World.{name}", lo, cap)


def _bounded(v: object, name: str, lo: int, hi: int) -> None:
    """``v`` is an int in ``lo..hi``, or a ``ConfigError`` naming ``name``."""
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ConfigError(f"{name} must be an int from {lo} to {hi}; got {shown(v)}")


def _distances(rooms: tuple[Room, ...]) -> tuple[tuple[int, ...], ...]:
    """All-pairs BFS distances over the exits; -1 for unreachable."""
    n = len(rooms)
    out = []
    for a in range(n):
        d = [-1] * n
        d[a] = 0
        q = deque([a])
        while q:
            r = q.popleft()
            for e in rooms[r].exits:
                if d[e] < 0:
                    d[e] = d[r] + 1
                    q.append(e)
        out.append(tuple(d))
    return tuple(out)


STANDARD_TOWN = World(
    rooms=(
        Room(0, "Market Square", ("market", "square", "well", "plaza"), 50, 50, False,
             (1, 3, 5, 7), "A cobbled plaza around a dry well, loud with barrows."),
        Room(1, "The Copper Kettle", ("kettle", "tavern", "inn", "copper"), 22, 26, False,
             (0, 2, 8), "A low tavern: a hammered-copper bar and far too much lamp oil."),
        Room(2, "Tanner's Row", ("tanner", "tannery", "row", "tanners"), 50, 14, False,
             (1, 3), "Racks of drying hides; the smell reaches you first."),
        Room(3, "The Smithy", ("smithy", "smith", "forge", "anvil"), 78, 26, False,
             (0, 2, 4), "One forge, one anvil, and iron cooling in black water."),
        Room(4, "Warehouse Yard", ("warehouse", "yard", "store", "stores"), 88, 52, False,
             (3, 5), "Crates stacked under a leaking roof, half of them unclaimed."),
        Room(5, "The Docks", ("docks", "dock", "quay", "harbour", "harbor", "wharf"), 78, 78,
             True, (0, 4, 6), "Rotting quay boards, unlit once the last barge is unloaded."),
        Room(6, "Cutpurse Alley", ("alley", "cutpurse", "backstreet", "lane"), 50, 90, True,
             (5, 7), "A black lane between blind walls where the watch never comes."),
        Room(7, "The Chapel", ("chapel", "church", "shrine"), 22, 78, False,
             (0, 6, 8), "A cold, swept shrine to nobody in particular."),
        Room(8, "The Guildhall", ("guildhall", "guild", "hall", "board"), 12, 52, False,
             (1, 7), "A hall of ledgers where Guildmaster Vell settles every commission."),
    ),
    goods=(
        Good(0, "hide", "hides", ("hide", "hides", "skin", "skins", "leather"), 6),
        Good(1, "nails", "nails", ("nails", "nail", "iron"), 7),
        Good(2, "rope", "rope", ("rope", "ropes", "coil", "cord"), 8),
        Good(3, "salt", "salt", ("salt", "salts", "brine"), 9),
        Good(4, "lamp", "lamps", ("lamp", "lamps", "lantern", "oil"), 11),
        Good(5, "relic", "relics", ("relic", "relics", "idol", "icon"), 14),
    ),
    keepers=(
        Keeper(0, "Tanner Oda", ("tanner", "oda"), 2, (0, 3), (8, 5)),
        Keeper(1, "Smith Bram", ("smith", "bram", "blacksmith"), 3, (1, 2), (8, 6)),
        Keeper(2, "Keeper Nesh", ("keeper", "nesh", "innkeeper"), 1, (4, 3, 2), (4, 6, 4)),
        Keeper(3, "Dockmaster Fen", ("dockmaster", "fen"), 5, (5, 0, 1), (3, 5, 6)),
        Keeper(4, "Guildmaster Vell", ("guildmaster", "vell", "guildmistress"), 8, (2, 4),
               (4, 3)),
    ),
)
