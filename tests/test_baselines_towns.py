"""The built-in policies on any town a world file accepts (docs/feasibility.md, "World files").

A world file may cut the town in parts: a room without exits, an island of rooms, shops or the
Guildhall out of reach.  In every such town factor, magpie and random play whole games in any
seat without error, the batched baselines choose the scalar baselines' act in every state (the
comparison of ``tests/test_batched_faces.py``), a seat with nowhere to go waits (RULES §21:
factor's rule 5; magpie's too, in a room without exits), and ``champion``, trained in the
standard town, refuses another town with a ``ValueError`` at its first decision.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from differential import scalar_view
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batched_faces import FACTOR_PARAMS, MAGPIE_PARAMS, _effect

import sim.game
from agents import Factor, Magpie
from agents.baselines.batched import BatchedFactor, BatchedMagpie
from agents.baselines.rules import WAIT
from agents.champion import BatchedChampion, Champion
from agents.policy import make_policy
from sim import Game, GameConfig
from sim.batched.engine import BatchedGuild
from sim.batched.observe import legal_masks
from sim.codec.action_table import semantic, to_intent
from sim.envs.vector import make_batched_policy
from sim.rules.checks import check_structured
from sim.rules.world import MIN_TURNS, SEATS, STANDARD_TOWN, World
from sim.rules.worldfile import world_from_dict, world_to_dict

BASE = world_to_dict(STANDARD_TOWN)
WHEEL = sorted({(min(a, r.id), max(a, r.id)) for r in STANDARD_TOWN.rooms for a in r.exits})
# Rooms, goods and keepers a town may add to the standard ones: names the parser reads as
# nothing else, each with a keyword of its own.
EXTRA_ROOMS = [("The Old Mill", "mill"), ("The Granary", "granary"), ("The Bell Tower", "tower"),
               ("The Orchard", "orchard"), ("The Quarry", "quarry")]
EXTRA_GOODS = [("candle", "candles"), ("barrel", "barrels")]
EXTRA_KEEPERS = [("Miller Aud", "miller"), ("Chandler Pim", "chandler")]
LINEUP = ("factor", "magpie", "random")  # what a variant town's seats may play


@st.composite
def towns(draw) -> World:
    """A random town the world file accepts: any two-way exits over 8 to 14 rooms (none at all,
    islands, rooms without exits), dark rooms, goods and their values, 1 to 7 keepers anywhere
    with any trade lists and opening stock, the commission goods, the guild's keeper, the pack's
    size and both purses."""
    n_rooms = draw(st.integers(8, len(BASE["rooms"]) + len(EXTRA_ROOMS)))
    pairs = list(combinations(range(n_rooms), 2))
    edges = {e for e in WHEEL if e[1] < n_rooms} if draw(st.booleans()) else set()
    edges -= draw(st.sets(st.sampled_from(sorted(edges)))) if edges else set()
    edges |= draw(st.sets(st.sampled_from(pairs), max_size=n_rooms))
    cut = draw(st.sets(st.integers(0, n_rooms - 1), max_size=3))  # rooms left without exits
    edges = {(a, b) for a, b in edges if a not in cut and b not in cut}
    rooms = []
    for i in range(n_rooms):
        row = dict(BASE["rooms"][i]) if i < len(BASE["rooms"]) else {
            "name": EXTRA_ROOMS[i - len(BASE["rooms"])][0], "x": 50, "y": 50, "desc": "",
            "keywords": [EXTRA_ROOMS[i - len(BASE["rooms"])][1]]}
        row["exits"] = sorted({b for a, b in edges if a == i} | {a for a, b in edges if b == i})
        row["dark"] = draw(st.booleans())
        rooms.append(row)

    n_goods = draw(st.integers(6, len(BASE["goods"]) + len(EXTRA_GOODS)))
    goods = []
    for i in range(n_goods):
        row = dict(BASE["goods"][i]) if i < len(BASE["goods"]) else {
            "name": EXTRA_GOODS[i - len(BASE["goods"])][0],
            "plural": EXTRA_GOODS[i - len(BASE["goods"])][1]}
        row["value"] = draw(st.one_of(st.integers(1, 20), st.integers(1, 1000)))
        goods.append(row)

    n_keepers = draw(st.integers(1, len(BASE["keepers"]) + len(EXTRA_KEEPERS)))
    places = draw(st.lists(st.integers(0, n_rooms - 1), min_size=n_keepers,
                           max_size=n_keepers, unique=True))
    keepers = []
    for i, room in enumerate(places):
        name, kws = ((BASE["keepers"][i]["name"], BASE["keepers"][i]["keywords"])
                     if i < len(BASE["keepers"]) else
                     (EXTRA_KEEPERS[i - len(BASE["keepers"])][0],
                      [EXTRA_KEEPERS[i - len(BASE["keepers"])][1]]))
        trade = draw(st.lists(st.integers(0, n_goods - 1), unique=True, max_size=n_goods))
        keepers.append({"name": name, "keywords": kws, "room": room, "trade": trade,
                        "opening": [draw(st.integers(0, 12)) for _ in trade]})
    quest = draw(st.lists(st.integers(0, n_goods - 1), min_size=2, max_size=n_goods,
                          unique=True))
    for g in quest:  # each commission good is traded by some keeper
        if not any(g in k["trade"] for k in keepers):
            k = keepers[draw(st.integers(0, n_keepers - 1))]
            k["trade"].append(g)
            k["opening"].append(draw(st.integers(0, 12)))

    coin = st.one_of(st.integers(0, 60), st.integers(0, 100_000))
    world, _ = world_from_dict({
        "rooms": rooms, "goods": goods, "keepers": keepers, "quest_items": quest,
        "guild": draw(st.integers(0, n_keepers - 1)),
        "carry_limit": draw(st.one_of(st.integers(1, 12), st.sampled_from([40, 999]))),
        "start_coin": draw(coin), "keeper_start_coin": draw(coin)})
    return world


def crowd(game: Game, rng: np.random.Generator) -> None:
    """Restore ``game`` into a crowded state: seats in one or two rooms (a room without exits,
    a dark one, a shop...), with goods, coin, a last room and some retainers, so that robbing,
    hawking, trading and being stuck all happen within a short game."""
    w = game.world
    snap = game.snapshot()
    rooms = rng.integers(w.n_rooms, size=2)
    for s, cog in enumerate(snap["cogs"]):
        cog["room"] = int(rooms[0] if rng.random() < 0.7 else rooms[1])
        back = w.rooms[cog["room"]].exits  # a last room is one it walked in from, or none
        cog["prevRoom"] = int(rng.choice(back)) if back and rng.random() < 0.7 else -1
        cog["coin"] = int(rng.choice([0, 1, 3, 9, 40, 60]))
        pack = np.zeros(w.n_goods, int)
        for _ in range(int(rng.integers(0, min(w.carry_limit, 10) + 1))):
            pack[rng.integers(w.n_goods)] += 1
        cog["items"] = pack.tolist()
        cog["delivered"] = [int(rng.integers(0, 3)) for _ in range(2)]
        if rng.random() < 0.3:
            cog["retainerOf"] = int((s + rng.integers(1, SEATS)) % SEATS)
            cog["retainerTurns"] = int(rng.integers(1, 4))
    game.restore(snap)


def batched_effect(index: int, game: Game, seat: int) -> tuple:
    """The effect of a batched policy's action index for ``seat`` (``_effect`` of its intent)."""
    st_ = game.state
    it = to_intent(index, game.world, seat, st_.room[seat])
    return _effect(check_structured(it, game.world, seat, st_.room[seat], st_.offers,
                                    st_.turn), game, seat)


PAIRS = [("factor", Factor(**p), BatchedFactor(**p)) for p in FACTOR_PARAMS] + \
        [("magpie", Magpie(**p), BatchedMagpie(**p)) for p in MAGPIE_PARAMS]


# About a second for the first examples (a town's tables and numba's kernels), then a few
# hundredths each; CI's profile is derandomized, so these are the towns every CI run sees.
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=towns(), seed=st.integers(0, 2 ** 32 - 1), thievery=st.booleans(),
       crowded=st.booleans(),
       lineup=st.lists(st.sampled_from(LINEUP), min_size=SEATS, max_size=SEATS))
def test_every_baseline_plays_every_town_as_its_batched_twin(
        world: World, seed: int, thievery: bool, crowded: bool, lineup: list[str]) -> None:
    """A whole short game (from the town's setup, or a crowded state) of factor, magpie and
    random in the drawn seats; in every state, every parameter set of factor and magpie (those
    of ``tests/test_batched_faces.py``) for every seat, scalar and batched, has the same effect;
    batched random picks a legal act; champion refuses the town (unless it is the standard
    one)."""
    turns = MIN_TURNS
    rng = np.random.default_rng(seed)
    game = Game(GameConfig(seed=seed, turns=turns, thievery=thievery, world=world))
    if crowded:
        crowd(game, rng)
    seats = [make_policy(name) for name in lineup]
    for p in seats:
        p.reset(seed)
    e = BatchedGuild(1, turns=turns, thievery=thievery, world=world)
    r, s = np.zeros(SEATS, np.int64), np.arange(SEATS)
    batched_random = make_batched_policy("random")
    standard = world == STANDARD_TOWN
    with pytest.MonkeyPatch.context() as mp:
        # a baseline's sentence carries its intent (agents.baselines.rules.phrasebook): the
        # engine parses each again and refuses one whose intent differs
        mp.setattr(sim.game, "CHECK_PARSED", True)
        while not game.done:
            e.load_games([game])
            for name, scalar, batched in PAIRS:
                indices = batched.act(e, r, s)
                for seat in range(SEATS):
                    sentence = scalar.act(game, seat)
                    want = _effect(game.intent_for(str(sentence), seat)[0], game, seat)
                    got = batched_effect(int(indices[seat]), game, seat)
                    assert got == want, (name, vars(scalar), seat, sentence, got)
            picks = batched_random.act(e, r, s)
            assert legal_masks(e, r, s)[np.arange(SEATS), picks].all()
            if standard:  # world_from_dict can give the standard town back
                Champion().act(game, 0)
                BatchedChampion().act(e, r, s)
            else:
                with pytest.raises(ValueError, match="trained in the standard town"):
                    Champion().act(game, 0)
                with pytest.raises(ValueError, match="trained in the standard town"):
                    BatchedChampion().act(e, r, s)
            game.play_turn([p.act(game, seat) for seat, p in enumerate(seats)],
                           scripted=[name != "random" for name in lineup])
    assert game.state.turns_played == turns


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=towns(), seed=st.integers(0, 2 ** 32 - 1), thievery=st.booleans(),
       lineup=st.lists(st.sampled_from(LINEUP), min_size=SEATS, max_size=SEATS))
def test_the_batched_engine_plays_every_town_with_legal_baseline_acts(
        world: World, seed: int, thievery: bool, lineup: list[str]) -> None:
    """The batched engine's games with the batched policies as ``GuildVectorEnv`` and ``guild
    evaluate`` build them (``make_batched_policy``): every act chosen is legal for its seat (a
    move to a room with no exit from here is not), and where no seat plays random, the games
    are turn by turn the scalar engine's games of the scalar baselines."""
    n, turns = 3, MIN_TURNS
    e = BatchedGuild(n, turns=turns, thievery=thievery, world=world)
    seeds = np.arange(n, dtype=np.int64) + seed
    e.reset(seeds)
    policies = {name: make_batched_policy(name) for name in LINEUP}
    policies["random"].reset(seed)
    twins = "random" not in lineup
    games = [Game(GameConfig(seed=int(x), turns=turns, thievery=thievery, world=world))
             for x in seeds] if twins else []
    scalar = [make_policy(name) for name in lineup]
    rows = np.arange(n)
    for _ in range(turns):
        for i, g in enumerate(games):
            assert e.export(i) == scalar_view(g), (i, g.state.turn)
        acts = np.zeros((n, SEATS), np.int64)
        for seat, name in enumerate(lineup):
            seat_of = np.full(n, seat)
            acts[:, seat] = policies[name].act(e, rows, seat_of)
            assert legal_masks(e, rows, seat_of)[rows, acts[:, seat]].all(), (name, seat)
        e.step(acts, autoreset=False)
        for g in games:
            g.play_turn([p.act(g, seat) for seat, p in enumerate(scalar)], scripted=[True] * SEATS)
    for i, g in enumerate(games):
        assert g.done and e.export(i) == scalar_view(g)


# --- a seat with nowhere to go ---------------------------------------------------------------

# Tanner's Row (2) without exits; The Copper Kettle (1) and The Smithy (3) keep their others.
CUT, _ = world_from_dict({"rooms": {"Tanner's Row": {"exits": []},
                                    "The Copper Kettle": {"exits": [0, 8]},
                                    "The Smithy": {"exits": [0, 4]}}})


def _alone(world: World, seed: int, room: int, items: list[int]) -> tuple[Game, dict]:
    """Game ``seed`` in ``world`` with seat 0 alone in ``room`` (nothing on its floor), carrying
    ``items``, the other seats in the Guildhall; the snapshot to adjust and restore."""
    game = Game(GameConfig(seed=seed, world=world))
    snap = game.snapshot()
    for seat, cog in enumerate(snap["cogs"]):
        cog.update(room=room if seat == 0 else 8, prevRoom=-1,
                   items=items if seat == 0 else [0] * world.n_goods)
    snap["rooms"][room] = [0] * world.n_goods
    return game, snap


@pytest.mark.parametrize("items", [[0] * 6, [0, 0, 0, 0, 1, 0]])
def test_a_magpie_in_a_room_without_exits_waits(items: list[int]) -> None:
    game, snap = _alone(CUT, 0, 2, items)
    snap["npcs"][0]["stock"] = [0] * CUT.n_goods  # nothing to buy from Tanner Oda, nor to sell
    game.restore(snap)
    assert Magpie().act(game, 0) == WAIT
    e = BatchedGuild(1, world=CUT)
    e.load_games([game])
    index = int(BatchedMagpie().act(e, np.zeros(1, np.int64), np.zeros(1, np.int64))[0])
    assert semantic(to_intent(index, CUT, 0, 2))[0] == "wait"


def test_a_factor_walks_to_a_shop_it_can_reach_not_to_one_it_cannot() -> None:
    # Seat 0 needs salt (3), which Tanner Oda, cut off in Tanner's Row, and Keeper Nesh, in the
    # Copper Kettle, both stock: the shop out of reach (distance -1) is no target, so it walks
    # from the Chapel toward the Kettle (was: it took Tanner's Row for the nearest, and waited).
    seed = next(x for x in range(1000) if Game(GameConfig(seed=x, world=CUT)).state
                .quest_item[0][0] == 3)
    game, snap = _alone(CUT, seed, 7, [0] * 6)
    snap["npcs"][0]["stock"][3] = snap["npcs"][2]["stock"][3] = 5
    game.restore(snap)
    assert CUT.dist[7][2] < 0 and CUT.keepers[2].room == 1
    assert Factor().act(game, 0) == f"I walk to {CUT.rooms[CUT.step_toward(7, 1)].name}."
    e = BatchedGuild(1, world=CUT)
    e.load_games([game])
    index = int(BatchedFactor().act(e, np.zeros(1, np.int64), np.zeros(1, np.int64))[0])
    assert semantic(to_intent(index, CUT, 0, 7)) == semantic(
        game.intent_for(Factor().act(game, 0), 0)[0])
