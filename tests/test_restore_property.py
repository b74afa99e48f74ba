"""``restore(snapshot())`` round-trips every reachable state; a mutated snapshot is either refused
with a ``ValueError`` (the game unchanged) or restored exactly."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim import Game, GameConfig
from sim.codec.action_table import legal_mask, to_intent
from sim.rules.errors import StateError
from sim.rules.state import COG_KEYS, NPC_KEYS, STATE_KEYS
from sim.rules.world import SEATS

FAST = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])
# RULES §15.2: reading fills a missing cog key with its blank default.
COG_DEFAULTS = {"prevRoom": -1, "delivered": [0, 0], "retainerOf": -1, "retainerTurns": 0,
                "robberies": 0, "robbed": 0}


def played(seed: int, turns: int, thievery: bool, n: int) -> Game:
    """A game after ``n`` turns of uniformly random legal structured actions."""
    game = Game(GameConfig(seed=seed, turns=turns, thievery=thievery))
    rng = np.random.default_rng(abs(seed))
    for _ in range(min(n, turns - 1)):
        st_ = game.state
        game.play_turn([to_intent(int(rng.choice(np.flatnonzero(legal_mask(st_, s)))),
                                  game.world, s, st_.room[s]) for s in range(SEATS)])
    return game


games = st.builds(played, st.integers(-2 ** 40, 2 ** 40), st.integers(6, 16), st.booleans(),
                  st.integers(0, 15))


@FAST
@given(games)
def test_restore_of_a_snapshot_round_trips(game: Game) -> None:
    snap = game.snapshot()
    fresh = Game(game.config)
    fresh.restore(copy.deepcopy(snap))
    assert fresh.snapshot() == snap
    assert fresh.results()["scores"] == game.results()["scores"]


def leaves(x, path=()):
    """Every (path, value) below ``x``, containers included."""
    yield path, x
    items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
    for k, v in items:
        yield from leaves(v, (*path, k))


values = st.one_of(
    st.integers(-3, 20), st.integers(-2 ** 70, 2 ** 70), st.sampled_from([2 ** 24, 2 ** 24 + 1,
                                                                          10 ** 6, 10 ** 30]),
    st.booleans(), st.none(), st.floats(allow_nan=False), st.text(max_size=3),
    st.lists(st.integers(0, 3), max_size=7), st.dictionaries(st.text(max_size=3),
                                                             st.integers(), max_size=2))


@FAST
@given(games, st.data())
def test_mutated_snapshots_are_refused_or_restored_exactly(game: Game,
                                                           data: st.DataObject) -> None:
    snap = game.snapshot()
    spots = [p for p, _ in leaves(snap) if p]
    path = data.draw(st.sampled_from(spots))
    parent = snap
    for k in path[:-1]:
        parent = parent[k]
    action = data.draw(st.sampled_from(["set", "set", "set", "delete", "add"]))
    if action == "delete" and isinstance(parent, dict):
        del parent[path[-1]]
    elif action == "add" and isinstance(parent, dict):
        parent[data.draw(st.text(min_size=1, max_size=4))] = data.draw(values)
    else:
        parent[path[-1]] = data.draw(values)
    fresh = Game(game.config)
    before = fresh.snapshot()
    try:
        fresh.restore(copy.deepcopy(snap))
    except ValueError:
        assert fresh.snapshot() == before
        return
    expect = {"turn": fresh.turn, **snap}
    for cog in expect["cogs"]:
        for k, v in COG_DEFAULTS.items():
            cog.setdefault(k, v)
    assert fresh.snapshot() == expect
    # and what was accepted keeps the rules' invariants and the engine's integer range
    w, got = fresh.world, fresh.snapshot()
    for cog in got["cogs"]:
        assert cog["prevRoom"] == -1 or cog["prevRoom"] in w.rooms[cog["room"]].exits
    purses = [c["coin"] for c in got["cogs"]] + [n["coin"] for n in got["npcs"]]
    assert sum(purses) < 2 ** 31  # coin only moves, so no purse can ever leave int32
    assert all(abs(x) < 2 ** 53 for x in fresh.results()["wealth"])


# --- any JSON-like value: refused with StateError or restored, never another exception ----------
json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(
        st.sampled_from([*STATE_KEYS, "kind", *NPC_KEYS, *COG_KEYS, "x"]), inner, max_size=6),
    max_leaves=30)


def _restores_or_refuses(game: Game, state: object) -> None:
    before = game.snapshot()
    try:
        game.restore(state)  # type: ignore[arg-type]
    except StateError:
        assert game.snapshot() == before


@FAST
@given(json_like)
def test_any_json_value_is_restored_or_refused_with_a_state_error(x: object) -> None:
    # Compiled (mypyc), the rules' restore raises TypeError for a non-dict argument itself.
    _restores_or_refuses(Game(GameConfig(seed=3)), x)


@FAST
@given(st.sampled_from(["rooms", "npcs", "cogs", "turn", "kind"]), json_like, st.booleans())
def test_json_values_in_a_snapshot_are_restored_or_refused_with_a_state_error(
        key: str, x: object, nested: bool) -> None:
    game = Game(GameConfig(seed=3))
    snap = game.snapshot()
    if nested:  # where a dict is expected: a shop's or a seat's record
        part = "npcs" if key in ("npcs", "rooms") else "cogs"
        snap[part][0] = x
    else:
        snap[key] = x
    _restores_or_refuses(game, snap)


def test_a_non_dict_state_is_refused_before_the_rules_see_it(monkeypatch) -> None:
    """``Game.restore`` checks the type itself: the compiled ``sim.rules.state.restore`` (mypyc,
    ``sim.native``) raises ``TypeError`` for an argument that is not a dict before its own
    checks run; this stands in for it in a pure-Python install."""
    import sim.game
    from sim.rules import state as rules_state

    def compiled_like(st_, state):
        if not isinstance(state, dict):
            raise TypeError(f"dict object expected; got {type(state).__name__}")
        return rules_state.restore(st_, state)

    monkeypatch.setattr(sim.game, "restore", compiled_like)
    game = Game(GameConfig(seed=3))
    for bad in ([1, 2, 3], None, "state", 7, (1,)):
        with pytest.raises(StateError, match="must be a dict in snapshot form"):
            game.restore(bad)  # type: ignore[arg-type]
    game.restore(game.snapshot())  # a dict still reaches the rules
