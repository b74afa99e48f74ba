"""Sentences through ``play_turn``: caps and one-lining (RULES §6.1, §19), never raising."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sim import Game, GameConfig, parse_sentence
from sim.rules.text import UNICODE_WS


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=0, max_size=600), st.text(max_size=300), st.text(max_size=900))
def test_sentence_say_and_notes_are_one_lined_and_cut(sentence: str, say: str,
                                                      notes: str) -> None:
    game = Game(GameConfig(seed=1))
    acts = game.play_turn([sentence] + ["I wait."] * 5, says=[say] + [""] * 5,
                          notes=[notes] + [""] * 5)
    flat = sentence.replace("\n", " ").replace("\r", " ").replace("\t", " ").strip(UNICODE_WS)
    assert acts[0].get("sentence", "") == flat[:240]
    flat_say = say.replace("\n", " ").replace("\r", " ").replace("\t", " ").strip(UNICODE_WS)
    assert acts[0].get("say", "") == flat_say[:160]
    flat_notes = notes.replace("\n", " ").replace("\r", " ").replace("\t", " ").strip(
        UNICODE_WS)
    assert game.state.notes[0] == flat_notes[:600]
    assert parse_sentence(sentence, game, 0) == parse_sentence(sentence, game, 0)


def test_a_long_sentence_is_cut_before_it_is_parsed() -> None:
    game = Game(GameConfig(seed=0))
    # "Bolt" sits after rune 240: cut away, so the robbery names nobody.
    sentence = "I rob " + "x" * 240 + " Bolt"
    acts = game.play_turn([sentence] + ["I wait."] * 5)
    assert len(acts[0]["sentence"]) == 240
    assert (acts[0]["intent"], acts[0]["reason"]) == ("none", "no_such_cog")


def test_empty_notes_keep_the_old_ones_and_mute_games_drop_says() -> None:
    game = Game(GameConfig(seed=0, speech=False))
    game.play_turn(["I wait."] * 6, says=["hello"] * 6, notes=["plan A"] + [""] * 5)
    game.play_turn(["I wait."] * 6, notes=[""] * 6)
    assert game.state.notes[0] == "plan A"
    assert all("say" not in e for e in game.events if e["kind"] == "act")
