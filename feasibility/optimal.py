"""The optimal plan: fewest turns, then least coin (beyond the greedy oracle of RULES §18).

The greedy oracle buys each commission's two units at one keeper, the cheapest.  The optimal
plan searches every way to do it: any keeper that trades the good, purchases split across
keepers (one unit here, one there), either visiting order, hand-overs whenever the seat is at
the guild keeper, and the carry limit.  Prices walk the ask one unit at a time from each keeper's
**opening stock** (RULES §7), exactly like the greedy oracle.

Restock is deliberately *not* modelled.  It is deterministic (RULES §6.2: from turn 1 every shop
adds one unit of ``trade[turn mod len]``, up to 12), but it only ever raises stock, so it only
lowers asks and never empties a shelf: any plan priced on opening stock is at least as cheap and
as short when restock happens.  Ignoring it keeps the check conservative (a pass stays a pass in
the real game, other seats aside) and comparable with the greedy figures.  Goods handed to a
keeper (RULES §9.4 puts them in its stock) and loose goods on the floors are left out too.

The converse does not hold: no plan here, or none that fits, is no plan *on the opening stock*,
and the game may still have one.  In the lean year (``examples/towns/lean_year.toml``) the
search finds no plan within 32 coin for a seat at the Smithy with nails and rope (the cheapest
costs 34), while in the engine the Guildmaster restocks rope on turns 2 and 4, his two units
cost 17 on turn 4, and the seat finishes in 7 turns for 32 coin.  So the gate's words for a
missing plan name the opening stock.

The search is a dynamic programme over decision states ``(room, units got per commission,
units bought per shelf of the commissions still short, units delivered per commission, coin
spent)``.  Each action strictly adds a bought or delivered unit, so the states form a DAG; the
value of a state is the lexicographic least ``(turns to go, final coin)``, with any purchase
beyond the purse pruned.  Once a commission has its units, which shelves sold them no longer
matters (the coin spent is kept), so the states grow with the shelves of the town, not with a
power of its keepers.  A transition walks the shortest route to the keeper or the guild
(``Dist``) and spends one turn acting there, so the result equals a turn-by-turn search over
``(room, units bought, coin)``.  One memo serves every starting room.

The states grow with the shelves that sell each commission good: a few hundred in the standard
town, about a hundred thousand a pair in a legal town of 64 keepers that each sell every good
(tens of seconds a pair, hours for its every pair).  A :class:`SearchEffort` shared by the
searches bounds the work in all: each state searched spends one step and one more for each
shelf it looks at, and a search that would overspend raises :class:`OutOfEffort`.  Counting
steps, not seconds, keeps the result the same on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.rules.world import World

from .plan import UNITS, Plan, Step, buy_cost, check_goods, check_start


class OutOfEffort(Exception):  # noqa: N818 - a budget spent, not an error in the input
    """The search's :class:`SearchEffort` is spent; the plan is not known."""


class SearchEffort:
    """A budget of search steps shared by the searches of one gate (see the module docstring).

    ``limit`` is the steps allowed (``None``: no bound); ``used`` counts those spent, up to the
    limit: once a search is refused, ``used == limit`` and ``spent`` is true."""

    def __init__(self, limit: int | None = None) -> None:
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            raise ValueError(f"search steps must be an int >= 0 or None; got {limit!r:.40}")
        self.limit = limit
        self.used = 0
        self.spent = False

    def spend(self, steps: int) -> None:
        """Spend ``steps`` or, past the limit, raise :class:`OutOfEffort` (for good)."""
        if self.limit is not None and self.used + steps > self.limit:
            self.used, self.spent = self.limit, True
            raise OutOfEffort
        self.used += steps


_Key = tuple[int, tuple[int, ...], tuple[tuple[int, int], ...], tuple[int, ...], int]
_Value = tuple[int, int, tuple]  # (turns to go, final coin, action)


@dataclass(frozen=True)
class _Slot:
    """One keeper's shelf of one commission good."""

    index: int  # which commission (0 or 1)
    good: int
    keeper: int
    room: int
    stock: int
    cost: tuple[int, ...]  # cost[q] = coin for the first q units off this shelf


class OptimalSearch:
    """The optimal-plan search for one world, one pair of commission goods and one purse."""

    def __init__(self, world: World, goods: tuple[int, int], budget: int | None = None,
                 units: int = UNITS, effort: SearchEffort | None = None) -> None:
        self.world = world
        self.goods = check_goods(world, goods)
        self.units = units
        self.budget = world.start_coin if budget is None else budget
        self.guild_room = world.keepers[world.guild].room
        slots = []
        for i, g in enumerate(self.goods):
            for k in world.keepers:
                if g in k.trade:
                    s = k.opening[k.trade.index(g)]
                    if s > 0:
                        cost = tuple(buy_cost(world, g, s, q) for q in range(min(s, units) + 1))
                        slots.append(_Slot(i, g, k.id, k.room, s, cost))
        self.slots = tuple(slots)
        self._by_index = tuple(tuple(si for si, s in enumerate(self.slots) if s.index == i)
                               for i in range(len(self.goods)))
        self.memo: dict[_Key, _Value | None] = {}
        self.effort = effort if effort is not None else SearchEffort()

    def _open_slots(self, got: tuple[int, ...]) -> list[int]:
        """The slots of the commissions still short of units (the others cannot sell)."""
        return [si for i, g in enumerate(got) if g < self.units for si in self._by_index[i]]

    def _buy(self, si: int, q: int, got: tuple[int, ...], bought: tuple[tuple[int, int], ...],
             spent: int) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...], int, int]:
        """The state after buying ``q`` units off slot ``si``: got, bought, spent, coin paid.

        ``bought`` lists ``(slot, units)`` only for the shelves of commissions still short of
        units: once a commission has all its units, which shelves they came from no longer
        matters (only the coin, kept in ``spent``), so those states are one.  The state stays
        a few integers, and the number of states grows with the shelves, not with the product
        of every way of buying each good (a power of the number of keepers).
        """
        s = self.slots[si]
        had = dict(bought)
        before = had.get(si, 0)
        paid = s.cost[before + q] - s.cost[before]
        i = s.index
        ng = got[:i] + (got[i] + q,) + got[i + 1:]
        had[si] = before + q
        if ng[i] >= self.units:
            had = {t: b for t, b in had.items() if self.slots[t].index != i}
        return ng, tuple(sorted(had.items())), spent + paid, paid

    def value(self, room: int, got: tuple[int, ...], bought: tuple[tuple[int, int], ...],
              delivered: tuple[int, ...], spent: int) -> _Value | None:
        """Least ``(turns to go, final coin)`` from this state, with the first action."""
        key = (room, got, bought, delivered, spent)
        if key in self.memo:
            return self.memo[key]
        units, dist = self.units, self.world.dist[room]
        if all(d >= units for d in delivered):
            best: _Value | None = (0, spent, ())
            self.memo[key] = best
            return best
        open_slots = self._open_slots(got)
        self.effort.spend(1 + len(open_slots))
        held = [got[i] - delivered[i] for i in range(len(self.goods))]
        free = self.world.carry_limit - sum(held)
        best = None
        had = dict(bought)
        for si in open_slots:
            s = self.slots[si]
            d = dist[s.room]
            qmax = min(units - got[s.index], s.stock - had.get(si, 0), free)
            if d < 0 or qmax <= 0:
                continue
            for q in range(1, qmax + 1):
                ng, nb, ns, _ = self._buy(si, q, got, bought, spent)
                if ns > self.budget:
                    break
                sub = self.value(s.room, ng, nb, delivered, ns)
                if sub is not None:
                    cand = (d + 1 + sub[0], sub[1], ("buy", si, q))
                    if best is None or cand[:2] < best[:2]:
                        best = cand
        d = dist[self.guild_room]
        if d >= 0:
            for i, h in enumerate(held):
                if h > 0:  # hand over everything held of this good: never worse than part
                    nd = delivered[:i] + (delivered[i] + h,) + delivered[i + 1:]
                    sub = self.value(self.guild_room, got, bought, nd, spent)
                    if sub is not None:
                        cand = (d + 1 + sub[0], sub[1], ("give", i, h))
                        if best is None or cand[:2] < best[:2]:
                            best = cand
        self.memo[key] = best
        return best

    def within_reach(self, start: int) -> bool:
        """Whether the guild keeper and enough units of each commission good lie in rooms
        reachable from ``start``: a plan with coin enough exists exactly then (a pack of one
        unit still delivers them one by one).  When :meth:`plan` finds none, this says
        whether the purse or the town (:meth:`shortfalls`) is to blame, on the opening stock."""
        return not self.shortfalls(start)

    def shortfalls(self, start: int) -> tuple[str, ...]:
        """Why no plan on the opening stock from ``start`` exists at any purse, each cause once:
        the guild keeper beyond the roads, a good the keepers' opening stock holds too few of in
        the whole town, or one whose units lie beyond the roads; empty when coin enough makes a
        plan (restock may still supply it in the game: the module docstring)."""
        w, dist = self.world, self.world.dist[check_start(self.world, start)]
        why = []
        if dist[self.guild_room] < 0:
            why.append(f"the guild keeper, {w.keepers[w.guild].name}, lies beyond its roads")
        for i, g in enumerate(self.goods):
            shelves = [s for s in self.slots if s.index == i]
            held = sum(s.stock for s in shelves)
            near = sum(s.stock for s in shelves if dist[s.room] >= 0)
            if held < self.units:
                why.append(f"the keepers' opening stock holds {w.item_name(g, held)} in all, "
                           f"{self.units} needed")
            elif near < self.units:
                why.append(f"{w.item_name(g, held - near)} of the keepers' {held} lie beyond its "
                           f"roads, {self.units} needed within them")
        return tuple(why)

    def plan(self, start: int) -> Plan | None:
        """The optimal plan from ``start``, or ``None`` when no plan on the opening stock fits
        the purse (the game's restock may still make one).

        :class:`OutOfEffort` when the search's effort runs out first (the states searched so
        far stay in the memo: they are exact); ``ValueError`` for a ``start`` that is no
        room."""
        check_start(self.world, start)
        got = (0,) * len(self.goods)
        bought: tuple[tuple[int, int], ...] = ()
        delivered = (0,) * len(self.goods)
        spent = 0
        top = self.value(start, got, bought, delivered, spent)
        if top is None:
            return None
        stops: list[Step] = []
        room = start
        while True:
            v = self.value(room, got, bought, delivered, spent)
            assert v is not None
            action = v[2]
            if not action:
                break
            if action[0] == "buy":
                _, si, q = action
                s = self.slots[si]
                got, bought, spent, paid = self._buy(si, q, got, bought, spent)
                stops.append(Step("buy", s.room, s.keeper, s.good, q, paid))
                room = s.room
            else:
                _, i, h = action
                stops.append(Step("give", self.guild_room, self.world.guild, self.goods[i], h))
                delivered = delivered[:i] + (delivered[i] + h,) + delivered[i + 1:]
                room = self.guild_room
        assert spent == top[1]
        return Plan(top[0], top[1], start, tuple(stops), self.world)


def optimal_plan(world: World, start: int, goods: tuple[int, int],
                 budget: int | None = None) -> Plan | None:
    """Fewest turns, then least coin, for one seat (see the module docstring); ``None`` when
    no plan on the opening stock completes both commissions within ``budget`` (default: the
    starting coin)."""
    return OptimalSearch(world, goods, budget).plan(start)
