"""What a plan is, for both oracles of the feasibility gate (RULES §18).

A plan is the action list of one seat that starts in a room with empty hands and the starting
purse, buys the units its two commissions ask for and hands them to the guild keeper.  Every
step is one turn: walking one exit (``move``), one purchase of any number of units of one good
from one keeper (``buy``, RULES §9.1), or one hand-over of one good to the guild keeper
(``give``, RULES §9.4).  Nothing else is modelled: no selling, no loose goods, no other seats.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sim.rules.errors import shown
from sim.rules.prices import buy_walk
from sim.rules.world import COMMISSION_COUNT, World

UNLIMITED = 1 << 62  # a purse for pricing a walk, never the limit

UNITS = COMMISSION_COUNT
"""Units each commission asks for (RULES §1: commission count 2)."""

TURN_MARGIN = 2
"""RULES §18: a plan must fit in ``turns - 2`` turns (a margin for a seat that is not perfect)."""


def allowance(turns: int) -> int:
    """Turns a plan may take in a ``turns``-turn episode (RULES §18: ``turns - 2``)."""
    return turns - TURN_MARGIN


@dataclass(frozen=True)
class Step:
    """One turn of a plan.  ``room`` is where the seat stands after the step."""

    kind: str  # "move" | "buy" | "give"
    room: int
    keeper: int = -1
    good: int = -1
    qty: int = 0
    coin: int = 0  # coin paid (buy only)

    def describe(self, world: World) -> str:
        """``"The Smithy"``, ``"buy 2 nails from Smith Bram (11)"``, ``"give 2 hides"``."""
        if self.kind == "move":
            return world.rooms[self.room].name
        if self.kind == "buy":
            return (f"buy {world.item_name(self.good, self.qty)} from "
                    f"{world.keepers[self.keeper].name} ({self.coin})")
        return f"give {world.item_name(self.good, self.qty)}"

    def to_json(self, world: World) -> dict:
        d: dict = {"kind": self.kind, "room": world.rooms[self.room].name}
        if self.kind != "move":
            d.update(good=world.goods[self.good].name, qty=self.qty)
        if self.kind == "buy":
            d.update(keeper=world.keepers[self.keeper].name, coin=self.coin)
        return d


@dataclass(frozen=True)
class Plan:
    """A complete plan: ``turns`` steps costing ``coin`` in all.

    Only the stops (buys and hand-overs) are kept; the walks between them are the rules'
    shortest walks, expanded on demand by :attr:`steps`.  A gate holds a plan for every case
    of a town (thousands), so each keeps a few stops, not a step per room walked through.
    """

    turns: int
    coin: int
    start: int
    stops: tuple[Step, ...]
    world: World = field(repr=False, compare=False)

    @property
    def steps(self) -> tuple[Step, ...]:
        """Every turn of the plan, in order: each stop preceded by the walk to its room."""
        steps: list[Step] = []
        here = self.start
        for stop in self.stops:
            steps += walk(self.world, here, stop.room)
            steps.append(stop)
            here = stop.room
        return tuple(steps)

    @property
    def carry(self) -> int:
        """The most units the plan holds at once (bought and not yet handed over): it must fit
        the town's carry limit.  The greedy plan buys both commissions before it hands either
        over, so it carries all four units; the optimal plan never carries more than the
        limit."""
        held = most = 0
        for stop in self.stops:
            held += stop.qty if stop.kind == "buy" else -stop.qty
            most = max(most, held)
        return most

    def route(self, world: World) -> str:
        """The plan in one line, e.g. ``The Docks: buy 2 hides ... > Market Square > ...``."""
        return " > ".join(s.describe(world) for s in self.steps)

    def to_json(self, world: World) -> dict:
        return {"turns": self.turns, "coin": self.coin, "carry": self.carry,
                "steps": [s.to_json(world) for s in self.steps]}


def walk(world: World, start: int, goal: int) -> list[Step]:
    """The ``move`` steps of the shortest walk, taking ``step_toward`` at each room (§2.1)."""
    steps = []
    here = start
    while here != goal:
        here = world.step_toward(here, goal)
        if here < 0:
            raise ValueError(f"room {goal} is unreachable from room {start}")
        steps.append(Step("move", here))
    return steps


def buy_cost(world: World, good: int, stock: int, qty: int) -> int:
    """Coin for ``qty`` units (at most ``stock``) from a keeper holding ``stock``: the rules'
    price walk (``sim.rules.prices.buy_walk``, RULES §7, §9.1) with a purse that never runs
    short."""
    return buy_walk(world.ask_table[good], stock, qty, UNLIMITED)[1]


def _is_id(v: object, n: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < n


def check_start(world: World, start: object) -> int:
    """``start``, a room id of ``world``; else ``ValueError`` naming it (an id past the table
    would index nothing, and a negative one another room)."""
    if not _is_id(start, world.n_rooms):
        raise ValueError(f"start must be a room id 0..{world.n_rooms - 1}; got {shown(start)}")
    return start  # type: ignore[return-value]


def check_goods(world: World, goods: object) -> tuple[int, int]:
    """``goods`` as a pair of two different good ids of ``world`` (a seat's two commissions);
    else ``ValueError`` naming it: an unknown good has no shelf, so no plan, which would read
    as a town that fails."""
    try:
        a, b = goods  # type: ignore[misc]
    except (TypeError, ValueError):
        raise ValueError(f"goods must be two good ids; got {shown(goods)}") from None
    if not (_is_id(a, len(world.goods)) and _is_id(b, len(world.goods))):
        raise ValueError(f"goods must be good ids 0..{len(world.goods) - 1}; got "
                         f"{shown(goods)}")
    if a == b:
        raise ValueError(f"goods must be two different goods (a seat's two commissions); got "
                         f"{shown(goods)}")
    return a, b
