"""Seed -> starting town, drawn exactly as the original draws it (RULES §4).

Two independent Nim streams: one for the aliases (``seed * 6779 + 31``) and the main one
(``seed * 7919 + 17``) for starting rooms, commissions and loose goods, in that order.

Twin: ``sim.batched.setup.draw_towns`` makes the same draws on arrays for many seeds at once;
``tests/test_batched.py``'s ``test_setup_is_seed_compatible`` and
``test_reset_equals_fresh_games`` hold the two equal.
"""

from __future__ import annotations

from .rng import NimRand
from .state import GameState
from .world import COG_NAMES, COMMISSION_COUNT, SEATS, World

# Rooms that get one random loose good at setup, in draw order, and the extra relic's room.
GROUND_ROOMS = (0, 4, 5, 6, 7)
EXTRA_RELIC_ROOM = 4
RELIC = 5

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def seed_in_range(seed: int) -> bool:
    """The original computes ``seed * 7919 + 17`` in int64 and would raise on overflow."""
    return INT64_MIN <= seed * 7919 + 17 <= INT64_MAX


def draw_aliases(seed: int) -> list[str]:
    """The six anonymous names, from their own stream."""
    pool = list(COG_NAMES)
    NimRand(seed * 6779 + 31).shuffle(pool)
    return [pool[i] if i < len(pool) else f"Cog {i + 1}" for i in range(SEATS)]


def draw_town(seed: int, world: World) -> tuple[list[int], list[list[int]], list[list[int]]]:
    """Starting rooms, commission goods (2 per seat) and floor goods, from the main stream."""
    r = NimRand(seed * 7919 + 17)
    rooms = list(range(world.n_rooms))
    r.shuffle(rooms)
    starts = rooms[:SEATS]
    commissions = []
    for _ in range(SEATS):
        pool = list(world.quest_items)
        r.shuffle(pool)
        commissions.append(pool[:2])
    floor = [[0] * world.n_goods for _ in range(world.n_rooms)]
    for room in GROUND_ROOMS:
        floor[room][r.rand(5)] += 1
    floor[EXTRA_RELIC_ROOM][RELIC] += 1
    return starts, commissions, floor


def initial_state(seed: int, world: World, turns: int, speech: bool = True,
                  thievery: bool = True) -> GameState:
    """The state right after setup, before turn 0 opens."""
    starts, commissions, floor = draw_town(seed, world)
    n_goods = world.n_goods
    stock = []
    for k in world.keepers:
        row = [0] * n_goods
        for g, s in zip(k.trade, k.opening):
            row[g] = s
        stock.append(row)
    return GameState(
        world=world, aliases=draw_aliases(seed), turns=turns, speech=speech, thievery=thievery,
        room=list(starts), prev_room=[-1] * SEATS, coin=[world.start_coin] * SEATS,
        items=[[0] * n_goods for _ in range(SEATS)],
        quest_item=[list(c) for c in commissions],
        quest_count=[[COMMISSION_COUNT, COMMISSION_COUNT] for _ in range(SEATS)],
        delivered=[[0, 0] for _ in range(SEATS)],
        retainer_of=[-1] * SEATS, retainer_turns=[0] * SEATS,
        robberies=[0] * SEATS, robbed=[0] * SEATS,
        notes=[""] * SEATS, last_sentence=[""] * SEATS, last_reason=[""] * SEATS,
        last_room=[-1] * SEATS, hint=[False] * SEATS,
        floor=floor, room_log=[[] for _ in range(world.n_rooms)],
        heard_log=[[] for _ in range(world.n_rooms)],
        stock=stock, shop_coin=[world.keeper_start_coin] * len(world.keepers),
    )
