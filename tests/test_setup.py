"""Random numbers and setup, bit for bit with the original (RULES §3-4)."""

from __future__ import annotations

import pytest
from golden import setup_seed, setup_seed_params
from hypothesis import given
from hypothesis import strategies as st

from sim import ConfigError, Game, GameConfig
from sim.rules.rng import MASK64, NimRand, step
from sim.rules.world import STANDARD_TOWN


def test_rng_vectors_of_rules_3() -> None:
    r = NimRand(2019)
    assert [r.next() for _ in range(3)] == [13223559681708962501, 7229677234260823147,
                                            7533325646959092538]
    assert NimRand(0).next() == 12661604540818092409
    r = NimRand(17)
    assert (r.a0, r.a1) == (0x0CC29E6D8401FBE4, 0xFDACD8AF891C808D)
    assert [r.next() for _ in range(3)] == [751950629452020849, 7255399508302473140,
                                            10081481778418154112]
    assert NimRand(123).rand(100) == 96
    xs = list(range(9))
    NimRand(17).shuffle(xs)
    assert xs == [5, 3, 2, 0, 7, 8, 1, 4, 6]


@given(st.integers(0, MASK64), st.integers(0, MASK64))
def test_next_on_halves_is_the_64_bit_step(a0: int, a1: int) -> None:
    """NimRand keeps its state as 32-bit halves; every step equals the whole-word reference."""
    r = NimRand(1)
    r.h0, r.l0, r.h1, r.l1 = a0 >> 32, a0 & 0xFFFFFFFF, a1 >> 32, a1 & 0xFFFFFFFF
    for _ in range(3):
        result, a0, a1 = step(a0, a1)
        assert r.next() == result
        assert (r.a0, r.a1) == (a0, a1)


def test_rand_zero_consumes_nothing() -> None:
    a, b = NimRand(5), NimRand(5)
    assert a.rand(0) == 0
    assert a.next() == b.next()


@pytest.mark.parametrize("row", setup_seed_params())
def test_setup_matches_original(row: dict | None) -> None:
    row = setup_seed(row)
    game = Game(GameConfig(seed=row["seed"]))
    snap = game.snapshot()
    assert game.aliases == row["names"]
    assert [c["room"] for c in snap["cogs"]] == row["startRooms"]
    assert [[q["item"] for q in game.commissions(s)] for s in range(6)] == row["commissions"]
    assert snap["rooms"] == row["ground"]


def test_seed_zero_example_of_rules_4() -> None:
    game = Game(GameConfig(seed=0))
    assert game.aliases == ["Piston", "Widget", "Tinker", "Bolt", "Rivet", "Sprocket"]
    snap = game.snapshot()
    assert [c["room"] for c in snap["cogs"]] == [5, 3, 2, 0, 7, 8]
    assert snap["rooms"][4] == [0, 0, 1, 0, 0, 1]  # rope + the extra relic
    assert sum(map(sum, snap["rooms"])) == 6  # six loose units in all
    for s in range(6):
        assert snap["cogs"][s]["coin"] == 40 and snap["cogs"][s]["prevRoom"] == -1
        items = [q["item"] for q in game.commissions(s)]
        assert len(set(items)) == 2 and set(items) <= {0, 1, 2, 3}


def test_fresh_episode_log_and_turn() -> None:
    game = Game(GameConfig(seed=3))
    assert [e["kind"] for e in game.events] == ["start", "turn"]
    assert game.turn == 0 and not game.done
    assert game.events[1]["turn"] == 0


def test_world_distances_and_step_toward() -> None:
    w = STANDARD_TOWN
    assert w.dist[8][2] == 2 and w.dist[8][3] == 3 and w.dist[2][3] == 1
    assert w.dist[8][1] == 1 and w.dist[8][5] == 3
    assert max(map(max, w.dist)) == 4
    assert all(w.dist[0][r] <= 2 for r in range(9))
    assert w.step_toward(8, 3) == 1  # lowest-id neighbour on a shortest path
    assert w.step_toward(4, 4) == -1
    assert w.keeper_in_room == (-1, 2, 0, 1, -1, 3, -1, -1, 4)


@pytest.mark.parametrize("kwargs, field", [
    ({"turns": 5}, "turns"), ({"turns": "14"}, "turns"), ({"seed": 2 ** 62}, "seed"),
    ({"seed": 1.5}, "seed"), ({"players": ["a"] * 5}, "players"), ({"speech": 1}, "speech"),
    ({"players": "abcdef"}, "players"),
])
def test_bad_config_names_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        GameConfig(**kwargs)


def test_seed_limits_follow_int64() -> None:
    top = ((1 << 63) - 1 - 17) // 7919
    GameConfig(seed=top)
    GameConfig(seed=-top)
    with pytest.raises(ValueError, match="seed"):
        GameConfig(seed=top + 1)
