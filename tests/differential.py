"""Playing the scalar and the batched engine side by side (the differential tests' tools)."""

from __future__ import annotations

import numpy as np

from sim import Game, GameConfig
from sim.batched.engine import BatchedGuild
from sim.batched.observe import all_seats, encode, legal_masks
from sim.batched.tables import Tables
from sim.codec.action_table import action_table, legal_mask, to_intent
from sim.codec.encode import encode_flat
from sim.rules.scoring import score
from sim.rules.world import SEATS, STANDARD_TOWN, World

W = STANDARD_TOWN
TABLE = action_table(W)
N_ACTIONS = len(TABLE)
T = Tables(W)
BLOCK = {b: [i for i, a in enumerate(TABLE) if a.block == b] for b in
         ("offer", "hire", "accept", "rob", "gift", "pay", "move", "buy", "sell", "deliver")}


def scalar_view(game: Game) -> dict:
    """The scalar state in the terms of ``BatchedGuild.export``."""
    st_ = game.state
    return {"snapshot": game.snapshot(), "offers": [o.to_json() for o in st_.offers],
            "hint": list(st_.hint), "last_reason": list(st_.last_reason),
            "room_log": [len(x) for x in st_.room_log],
            "heard": [len(x) for x in st_.heard_log], "turns_played": st_.turns_played,
            "done": st_.done, "quest_item": [list(q) for q in st_.quest_item]}


def herded_game(rng: np.random.Generator, turns: int, thievery: bool, turn: int,
                world: World = W) -> Game:
    """A seeded game restored into a crowded state at ``turn``: seats in one or two rooms."""
    seed = int(rng.integers(0, 2 ** 31 - 1))
    game = Game(GameConfig(seed=seed, turns=turns, thievery=thievery, world=world))
    snap = game.snapshot()
    rooms = rng.choice([5, 6, 5, 6, rng.integers(9)], size=2)
    for s, cog in enumerate(snap["cogs"]):
        cog["room"] = int(rooms[0] if rng.random() < 0.75 else rooms[1])
        cog["coin"] = int(rng.choice([0, 1, 3, 9, 40, 60]))
        pack = np.zeros(6, int)
        for _ in range(int(rng.integers(0, world.carry_limit + 1))):
            pack[rng.integers(6)] += 1
        cog["items"] = pack.tolist()
        cog["delivered"] = [int(rng.integers(0, 3)) for _ in range(2)]
        if rng.random() < 0.3:
            cog["retainerOf"] = int((s + rng.integers(1, 6)) % 6)
            cog["retainerTurns"] = int(rng.integers(1, 4))
    for npc in snap["npcs"]:
        npc["stock"] = [int(x) for x in rng.integers(0, 13, size=6)]
        npc["coin"] = int(rng.choice([0, 2, 5, 30, 120]))
    snap["rooms"] = [[int(x) for x in rng.integers(0, 3, size=6)] for _ in range(9)]
    snap["turn"] = turn
    game.restore(snap)
    return game


def biased_actions(rng: np.random.Generator, game: Game,
                   masks: list[list[bool]] | None = None) -> list[int]:
    """One index per seat, favouring the intents that need company and live offers;
    ``masks``: the seats' ``legal_mask`` of this state, if the caller has them already."""
    st_ = game.state
    out = []
    for seat in range(SEATS):
        u = rng.random()
        live = [(o.sender - seat) % SEATS for o in st_.offers
                if o.to == seat and o.posted_turn == st_.turn - 1]
        if u < 0.25:
            legal = np.flatnonzero(masks[seat] if masks is not None
                                   else legal_mask(st_, seat))
            out.append(int(rng.choice(legal)))
        elif u < 0.35:
            out.append(int(rng.integers(N_ACTIONS)))
        elif u < 0.50 and live:
            out.append(BLOCK["accept"][int(rng.choice(live)) - 1])
        elif u < 0.85:
            block = rng.choice(["offer", "hire", "rob", "gift", "pay", "accept", "buy", "sell",
                                "deliver"])
            out.append(int(rng.choice(BLOCK[str(block)])))
        else:
            target = int(rng.choice([5, 6, 8]))
            step = st_.world.step_toward(st_.room[seat], target)
            out.append(BLOCK["move"][step] if step >= 0 else 0)
    return out


def play_both(games: list[Game], rng: np.random.Generator, check_obs: bool = True) -> int:
    """Step the scalar games and a batched twin with the same actions; compare every turn."""
    turns = games[0].state.turns
    e = BatchedGuild(len(games), turns=turns, thievery=games[0].state.thievery,
                     world=games[0].world)
    e.load_games(games)
    r, s = all_seats(len(games))
    compared = 0
    while True:
        views = [scalar_view(g) for g in games]
        masks = [[legal_mask(g.state, seat) for seat in range(SEATS)] for g in games]
        flats = [[encode_flat(g.state, seat, masks[i][seat]) for seat in range(SEATS)]
                 for i, g in enumerate(games)]
        for i in range(len(games)):
            assert e.export(i) == views[i], f"episode {i} turn {e.turn[i]}"
        if check_obs:
            obs = encode(e, r, s).reshape(len(games), SEATS, -1)
            got = legal_masks(e, r, s).reshape(len(games), SEATS, -1)
            # the whole batch at once; only if it differs, seat by seat (the assertions that
            # decide, and name the first episode and seat that differ)
            if got.tolist() != masks or not np.array_equal(obs, np.array(flats), equal_nan=True):
                for i in range(len(games)):
                    for seat in range(SEATS):
                        assert got[i, seat].tolist() == masks[i][seat]
                        np.testing.assert_array_equal(obs[i, seat], flats[i][seat])
        if games[0].done:
            return compared
        acts = np.array([biased_actions(rng, g, masks[i]) for i, g in enumerate(games)],
                        np.int64)
        before = [[score(g.state, seat) for seat in range(SEATS)] for g in games]
        rewards, done = e.step(acts, autoreset=False)
        for i, g in enumerate(games):
            g.play_turn([to_intent(int(acts[i, seat]), g.world, seat, g.state.room[seat])
                         for seat in range(SEATS)])
            after = [score(g.state, seat) for seat in range(SEATS)]
            assert rewards[i].tolist() == [a - b for a, b in zip(after, before[i])]
            assert bool(done[i]) == g.done
        compared += len(games)
