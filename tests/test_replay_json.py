"""Replay JSON from orjson is byte for byte what the standard library writes.

``league.core.replay_json.encode`` uses orjson only when its bytes cannot differ; these check that
claim on arbitrary JSON-like values (the corners orjson treats differently: non-ASCII, control
characters, U+007F, NaN and infinities, tiny and huge floats, ints beyond 64 bits) and on every
golden recording and replay payload there is.
"""

from __future__ import annotations

import json

import pytest
from conftest import needs
from golden import (
    EPISODES,
    SETUP_SEEDS,
    episode,
    episode_params,
    golden_file,
    play_recorded,
    present,
    start_game,
)
from hypothesis import given
from hypothesis import strategies as st

from agents import play_episode
from league.core import replay_json
from league.core.episode import _JSON
from league.core.replay_json import STDLIB, encode
from sim import GameConfig


def _same(value: object) -> None:
    want = _JSON.encode(value).encode("ascii")
    assert STDLIB.encode(value).encode("ascii") == want
    assert encode(value) == want


def test_orjson_is_installed_for_ci() -> None:
    """CI installs the ``fast`` extra, so the tests below compare orjson, not json twice."""
    needs(replay_json.orjson is not None, "the Python package 'orjson' (pip install "
                                          "'guild-game[fast]')")


_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)  # any code point
_floats = st.one_of(st.floats(), st.floats(-1e-3, 1e-3), st.floats(1e14, 1e18),
                    st.sampled_from([1e-5, 1e-4, 1e16, 1e22, 5e-324, -0.0, 0.5, 100.0]))
_scalars = st.one_of(st.none(), st.booleans(), _text,
                     st.integers(), st.integers(-(2**70), 2**70), _floats)
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(_text, inner, max_size=5)), max_leaves=30)


# What a replay holds (no None, finite floats), so that most examples take orjson's path.
_plain = st.recursive(
    st.one_of(st.booleans(), _text, st.integers(), st.floats(allow_nan=False,
                                                             allow_infinity=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=5),
                            st.dictionaries(_text, inner, max_size=5)), max_leaves=30)


@given(_values)
def test_any_json_value_encodes_as_the_standard_library_does(value: object) -> None:
    _same(value)


@given(_plain)
def test_plain_values_encode_as_the_standard_library_does(value: object) -> None:
    _same(value)


@given(st.dictionaries(_text, _values, max_size=4))
def test_without_orjson_it_is_the_standard_library(value: dict) -> None:
    saved = replay_json.orjson
    replay_json.orjson = None
    try:
        assert encode(value) == STDLIB.encode(value).encode("ascii")
    finally:
        replay_json.orjson = saved


@pytest.mark.parametrize("value", [
    "caf\u00e9", "\x7f", "\x00\x1f\b\f\n\r\t\"\\/", "\ud800", "\u2028", "snow \u2603 man",
    float("nan"), float("inf"), -float("inf"), 1e-5, 2.5e-7, 1e16, 1.5e300, 5e-324,
    2**63, 2**64 - 1, 2**64, -(2**63) - 1, 10**40, None, True, (1, 2), {"k": [1.5, None]},
    "1e-5 and 0.00001 in a string", "null",
])
def test_corner_values(value: object) -> None:
    _same({"v": value, "list": [value, value]})


@pytest.mark.parametrize("name", [EPISODES, SETUP_SEEDS])
def test_every_golden_line(name: str) -> None:
    needs(present(name), f"the golden file {golden_file(name)}")
    with open(golden_file(name), encoding="utf-8") as f:
        for line in f:
            _same(json.loads(line))


@pytest.mark.parametrize("episode_id", episode_params())
def test_golden_episode_replay_payloads(episode_id: int | None) -> None:
    ep = episode(episode_id)
    setup = ep["setup"]
    game = start_game(setup)
    for line in ep["turns"]:
        play_recorded(game, line)
    _same(game.replay_payload(setup["policies"]))


@pytest.mark.parametrize("seed", range(12))
def test_baseline_replay_payloads(seed: int) -> None:
    lineup = ("factor", "magpie", "random", "factor", "random", "magpie")
    config = GameConfig(seed=seed, turns=8 + seed, thievery=seed % 2 == 0,
                        speech=seed % 3 != 0, players=lineup)
    _same(play_episode(config, list(lineup)).replay_payload(list(lineup)))
