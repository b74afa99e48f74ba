"""A viewer page shows what a policy wrote as inert text (``league.cli.html_viewer``).

The page writes through ``textContent``, so nothing runs; but bidi overrides and invisible
characters in a sentence, a spoken line or a policy's name still reordered or hid the text
around them (an outcome read backwards, the seat-to-policy attribution of the header
mirrored). They are shown as their escapes, as the report and ``guild verify`` show them.
"""

from __future__ import annotations

from league.cli import html_viewer as viewer
from sim import Game, GameConfig
from sim.rules.world import SEATS

HIDING = "\u202e\u200b\u2066\ufeff\x1b"


def test_sentences_says_and_policy_names_are_shown_inert() -> None:
    names = [f"exec:bot {HIDING}x"] + ["factor"] * (SEATS - 1)
    game = Game(GameConfig(seed=2, turns=6, players=names))
    for _ in range(6):
        game.play_turn([f"I wait {HIDING}here."] + ["I wait."] * (SEATS - 1),
                       says=[f"look {HIDING}away"] + [""] * (SEATS - 1))
    model = viewer.view_model(game.replay_payload())
    acts = [a for frame in model["frames"] for a in frame["acts"] if a["seat"] == 0]
    assert len(acts) == 6
    for a in acts:
        assert a["sentence"] == "I wait \\u202e\\u200b\\u2066\\ufeff\\x1bhere."
        assert a["say"] == "look \\u202e\\u200b\\u2066\\ufeff\\x1baway"
    assert model["policies"][0] == "exec:bot \\u202e\\u200b\\u2066\\ufeff\\x1bx"
    assert model["policies"][1:] == ["factor"] * (SEATS - 1)
    page = viewer.render_page(game.replay_payload())
    assert not any(c in page for c in HIDING)
