"""The greedy plan oracle of RULES §18, exactly as the original's enforcement test computes it.

For each commission good, ``cheapest_source``: among keepers in id order that trade the good and
hold at least 2 at their *opening* stock (turn 0, no restock), the one whose two units cost least
(``askAt(s) + askAt(s - 1)``; ties keep the lower id).  The plan walks start -> source A -> buy
-> source B -> buy -> guild -> hand -> hand, in the better of the two orders:
``Dist[start][A] + 1 + Dist[A][B] + 1 + Dist[B][guild] + 2``; its cost is ``costA + costB``.
It must fit in ``turns - 2`` turns and in the starting purse.

Standard town: hide -> Tanner's Row 9, nails -> The Smithy 11, rope -> The Smithy 17, salt ->
The Copper Kettle 19; worst plan 10 turns, worst cost 36 (rope + salt).
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.rules.world import World

from .plan import UNITS, Plan, Step, buy_cost, check_goods, check_start


@dataclass(frozen=True)
class Source:
    """Where the greedy oracle buys a commission good: keeper, its room, and the price."""

    good: int
    keeper: int
    room: int
    cost: int

    def to_json(self, world: World) -> dict:
        return {"good": world.goods[self.good].name, "keeper": world.keepers[self.keeper].name,
                "room": world.rooms[self.room].name, "cost": self.cost}


def cheapest_source(world: World, good: int, units: int = UNITS) -> Source | None:
    """RULES §18 ``cheapestSource``: the keeper selling ``units`` of ``good`` cheapest at its
    opening stock (strictly cheaper wins, so ties go to the lower id); ``None`` if none holds
    ``units``."""
    best: Source | None = None
    for k in world.keepers:
        if good not in k.trade:
            continue
        stock = k.opening[k.trade.index(good)]
        if stock < units:
            continue
        cost = buy_cost(world, good, stock, units)
        if best is None or cost < best.cost:
            best = Source(good, k.id, k.room, cost)
    return best


def greedy_plan(world: World, start: int, goods: tuple[int, int],
                units: int = UNITS) -> Plan | str:
    """The RULES §18 plan for a seat starting in ``start`` with commissions ``goods``.

    Returns the :class:`Plan` (``viaAB`` unless ``viaBA`` is strictly shorter), or a one-line
    reason why there is none (every good no keeper holds ``units`` of, or an unreachable room).
    ``ValueError`` for a ``start`` that is no room or ``goods`` that are not two goods.
    """
    check_start(world, start)
    a, b = goods = check_goods(world, goods)
    sa, sb = cheapest_source(world, a, units), cheapest_source(world, b, units)
    if sa is None or sb is None:
        lacking = " or ".join(world.item_name(g, units) for g, s in ((a, sa), (b, sb))
                              if s is None)
        return f"no keeper holds {lacking} at opening (greedy needs one source of {units})"
    guild = world.keepers[world.guild].room
    d = world.dist
    best: tuple[int, Source, Source] | None = None
    for first, second in ((sa, sb), (sb, sa)):
        legs = (d[start][first.room], d[first.room][second.room], d[second.room][guild])
        if min(legs) < 0:
            continue
        turns = legs[0] + 1 + legs[1] + 1 + legs[2] + len(goods)  # 1 per buy, 1 per hand-over
        if best is None or turns < best[0]:
            best = (turns, first, second)
    if best is None:
        return (f"a source or {world.rooms[guild].name} is unreachable from "
                f"{world.rooms[start].name}")
    turns, first, second = best
    stops = (Step("buy", first.room, first.keeper, first.good, units, first.cost),
             Step("buy", second.room, second.keeper, second.good, units, second.cost),
             *(Step("give", guild, world.guild, g, units) for g in goods))
    return Plan(turns, sa.cost + sb.cost, start, stops, world)
