"""The benchmark drivers measure what their figures say (bench/__main__.py).

``scalar_structured_episodes_per_s`` replays recorded structured intents: that is only the
engine's own workload if a replay plays the recorded episode again. The faces' figures draw
masked-random actions: every draw must be legal and every legal action drawable.
"""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.__main__ import TURNS, masked_random, random_legal_intents, record_structured
from sim import Game, GameConfig


def test_replayed_structured_intents_play_the_recorded_episodes() -> None:
    recorded = record_structured(3)
    rng = random.Random(7)  # record_structured's default seed: the same draws again
    for i, turns in enumerate(recorded):
        live = Game(GameConfig(seed=i, turns=TURNS))
        replay = Game(GameConfig(seed=i, turns=TURNS))
        assert len(turns) == TURNS
        for intents in turns:
            drawn = random_legal_intents(live, rng)
            assert drawn == intents
            live.play_turn(drawn)
            replay.play_turn(intents)
        assert replay.done and replay.events == live.events
        assert replay.results() == live.results()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=300).filter(any), st.integers(0, 2**32))
def test_masked_random_draws_only_legal_actions(bits: list[bool], seed: int) -> None:
    mask = np.array(bits, dtype=np.int8)
    rng = random.Random(seed)
    drawn = {masked_random(mask, rng) for _ in range(4 * len(bits))}
    assert all(type(a) is int and mask[a] == 1 for a in drawn)


def test_masked_random_reaches_every_legal_action() -> None:
    mask = np.zeros(500, dtype=np.int8)
    mask[[0, 17, 250, 499]] = 1
    rng = random.Random(0)
    assert {masked_random(mask, rng) for _ in range(200)} == {0, 17, 250, 499}
