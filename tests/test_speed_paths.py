"""The engine's and the baselines' fast paths give exactly what the slow ones give.

* The baselines hand the engine a ``ParsedSentence`` (the sentence with its intent) instead of
  a bare sentence: in every state of every golden episode, for every seat, that intent is what
  ``parse`` gives for the sentence; and whole episodes log byte-identical events either way,
  in the standard town and in towns whose names collide with aliases, goods and keepers.
* The engine's cross-episode parse memo (``sim.game.PARSE_MEMO``) changes no event.
* Nim's jump, as XORs of precomputed images, equals the step-by-step reference.
* ``one_line``'s shortcut for printable text equals the full flattening.
"""

from __future__ import annotations

import json
import random
import sys

import pytest
from golden import episode, episode_params, play_recorded, start_game

import sim.game
from agents import Factor, Magpie, play_episode
from agents.baselines.rules import phrasebook
from sim import Game, GameConfig, replay
from sim.language.parser import parse
from sim.rules.errors import IntentError
from sim.rules.intents import Intent, ParsedSentence
from sim.rules.rng import jump, skip
from sim.rules.text import _FLATTEN, UNICODE_WS, one_line
from sim.rules.world import COG_NAMES, SEATS, STANDARD_TOWN, World
from sim.rules.worldfile import world_from_dict, world_to_dict

BASELINES = (Factor(), Magpie())
LINEUPS = (["factor", "magpie"] * 3, ["magpie", "magpie", "factor", "factor", "magpie",
                                      "factor"])


class Plain:
    """A baseline that hands over its bare sentence, to be parsed by the engine."""

    scripted = True

    def __init__(self, inner: Factor | Magpie) -> None:
        self.inner = inner

    def act(self, game: Game, seat: int) -> str:
        return str(self.inner.act(game, seat))


def _check_pairs(game: Game) -> int:
    """Every seat, both baselines: a ParsedSentence's intent is the sentence's parse here."""
    st = game.state
    checked = 0
    for seat in range(SEATS):
        for policy in BASELINES:
            said = policy.act(game, seat)
            if type(said) is ParsedSentence:
                got = parse(game.world, st.aliases, seat, st.room[seat], st.offers, st.turn,
                            said)
                assert got == said.intent, (st.turn, seat, said)
                checked += 1
    return checked


@pytest.mark.parametrize("episode_id", episode_params())
def test_parsed_sentences_match_the_parser_in_every_golden_state(episode_id: int | None
                                                                 ) -> None:
    ep = episode(episode_id)
    setup = ep["setup"]
    game = start_game(setup)
    checked = 0
    for line in ep["turns"]:
        checked += _check_pairs(game)
        play_recorded(game, line)
    assert checked > 0


def _colliding_town() -> World:
    """A town whose names share words with aliases, goods and keepers, to trip the phrasebook."""
    d = world_to_dict(STANDARD_TOWN)
    d["rooms"][1]["name"] = "Bolt's Rope Walk"
    d["rooms"][1]["keywords"] = ["bolt", "rope walk"]
    d["rooms"][3]["name"] = "The Oda Lamp Works"
    d["rooms"][3]["keywords"] = ["lamp works"]
    d["keepers"][0]["name"] = "Tanner Gizmo"
    d["keepers"][0]["keywords"] = ["tanner"]  # (one word that is a seat's name is refused)
    return world_from_dict(d)[0]


def _events(config: GameConfig, policies: list) -> str:
    return json.dumps(play_episode(config, policies).replay_payload(["p"] * SEATS))


@pytest.mark.parametrize("town", ["standard", "colliding"])
def test_parsed_sentences_log_what_bare_sentences_log(town: str) -> None:
    world = STANDARD_TOWN if town == "standard" else _colliding_town()
    for seed in range(12):
        for lineup in LINEUPS:
            config = GameConfig(seed=seed, turns=14 + seed % 5, thievery=seed % 3 != 0,
                                world=world)
            fast = [Factor() if p == "factor" else Magpie() for p in lineup]
            slow = [Plain(p) for p in fast]
            log = _events(config, fast)
            assert log == _events(config, slow), (town, seed, lineup)
            game = play_episode(config, fast)
            assert replay(config, game.events, world).events == game.events


@pytest.mark.parametrize("town", ["standard", "colliding"])
def test_every_parsed_sentence_of_seeded_leagues_checks(town: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``CHECK_PARSED`` on, the engine parses every ParsedSentence again: none differs."""
    monkeypatch.setattr(sim.game, "CHECK_PARSED", True)
    world = STANDARD_TOWN if town == "standard" else _colliding_town()
    for seed in range(40):
        lineup = LINEUPS[seed % 2]
        config = GameConfig(seed=1000 + seed, turns=20, thievery=seed % 4 != 0, world=world)
        play_episode(config, [Factor() if p == "factor" else Magpie() for p in lineup])


@pytest.mark.parametrize("intent", [Intent("rob", other=1), Intent("move", to_room=99),
                                    Intent("move", to_room=1)])
def test_a_parsed_sentence_whose_intent_is_not_its_texts_is_refused(intent: Intent) -> None:
    """A policy object may hand any ParsedSentence: one whose intent its text does not parse
    to was played unchecked (an index out of the town raised IndexError half-way through the
    turn, its notes already written) and recorded as another act.  Refused, nothing changed."""
    game = Game(GameConfig(seed=1))
    before = (game.snapshot(), [game.observe(s) for s in range(SEATS)], list(game.events))
    lie = ParsedSentence("I wait.", intent)
    with pytest.raises(ValueError, match="parses to"):
        game.play_turn([lie] + ["I wait."] * 5, notes=["secret"] * SEATS)
    assert (game.snapshot(), [game.observe(s) for s in range(SEATS)], game.events) == before
    assert not ParsedSentence("I wait.", intent, vouched=1).vouched  # True alone vouches


def test_check_parsed_refuses_a_wrong_vouched_intent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sim.game, "CHECK_PARSED", True)
    game = Game(GameConfig(seed=1))
    lie = ParsedSentence("I wait.", Intent("rob", other=1), vouched=True)
    with pytest.raises(ValueError, match="parses to"):
        game.play_turn([lie] + ["I wait."] * 5)
    assert game.turn == 0


def test_phrasebook_entries_parse_alike_in_every_room_seat_and_alias_order() -> None:
    rng = random.Random(3)
    colliding = phrasebook(_colliding_town())
    assert "I walk to Bolt's Rope Walk." not in colliding  # an alias's word: parsed in play
    assert "I buy 1 hide from Tanner Gizmo." not in colliding
    assert "I walk to The Oda Lamp Works." in colliding
    for world in (STANDARD_TOWN, _colliding_town()):
        book = phrasebook(world)
        assert book
        for sentence, said in book.items():
            assert str(said) == sentence
            named = next((n for n in COG_NAMES if n in sentence), None)
            for _ in range(3):
                aliases = rng.sample(COG_NAMES, SEATS)
                if named is not None and named not in aliases:
                    aliases[rng.randrange(SEATS)] = named
                other = aliases.index(named) if named else -1
                seat = rng.choice([s for s in range(SEATS) if s != other])
                want = said.intent if named is None else Intent(
                    **{**said.intent.__dict__, "other": other})
                for room in range(world.n_rooms):
                    assert parse(world, aliases, seat, room, [], 0, sentence) == want, sentence


def test_parse_memo_changes_no_event(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(5)
    pool = ["I walk to the docks.", "I buy two hides from Tanner Oda.", "I accept the offer.",
            "I rob Gizmo.", "I offer Bolt one lamp for twelve coins.", "I sell all my nails.",
            'I say "rope?"', "I pick up the rope.", "I hire Bolt for 5 coins."]
    plays = [[[rng.choice(pool) for _ in range(SEATS)] for _ in range(14)] for _ in range(6)]

    def logs() -> list[list[dict]]:
        out = []
        for seed, turns in enumerate(plays):
            game = Game(GameConfig(seed=seed))
            for acts in turns:
                game.play_turn(acts)
            out.append(game.events)
        return out

    monkeypatch.setattr(sim.game, "PARSE_MEMO", True)
    with_memo = logs()
    monkeypatch.setattr(sim.game, "PARSE_MEMO", False)
    assert logs() == with_memo


def test_the_parse_memo_keys_an_alias_written_in_any_case_the_parser_reads() -> None:
    """The parser lowercases per character (SENTENCES §5: U+0130 is a plain i), so "GİZMO"
    names Gizmo; the memo must see the alias too, or it keys the parse without the aliases and
    hands one game's seat to another game where Gizmo sits elsewhere."""
    sentence = "I rob G\u0130ZMO."
    games = [Game(GameConfig(seed=s)) for s in range(400)]
    by_room: dict[int, dict[int, Game]] = {}
    for g in games:  # seat 0's room -> Gizmo's seat -> a game
        if "Gizmo" in g.aliases and g.aliases.index("Gizmo") != 0:
            by_room.setdefault(g.state.room[0], {}).setdefault(g.aliases.index("Gizmo"), g)
    pair = next(list(d.values())[:2] for d in by_room.values() if len(d) >= 2)
    for g in pair:  # the first fills the memo, the second must not read it
        it, _ = g.intent_for(sentence, 0)
        st = g.state
        assert it == parse(g.world, st.aliases, 0, st.room[0], st.offers, st.turn, sentence)
        assert g.aliases[it.other] == "Gizmo"


def test_parsed_sentence_must_be_in_stored_form() -> None:
    it = Intent("wait")
    assert ParsedSentence("I wait.", it).intent is it
    for bad in (" I wait.", "I wait.\n", "I\twait.", "x" * 241):
        with pytest.raises(IntentError):
            ParsedSentence(bad, it)
    with pytest.raises(IntentError):
        ParsedSentence("I wait.", "wait")  # type: ignore[arg-type]


def test_jump_images_equal_the_stepwise_jump() -> None:
    rng = random.Random(1)
    states = [(rng.getrandbits(64), rng.getrandbits(64)) for _ in range(300)]
    states += [(0, 0), ((1 << 64) - 1, (1 << 64) - 1), (1 << 63, 1)]
    for a0, a1 in states:
        assert skip((a0, a1)) == jump(a0, a1)


def test_one_line_shortcut_equals_the_full_flattening() -> None:
    """The shortcut equals flattening then stripping, for every seventh code point; a lone
    surrogate (no UTF-8 text holds one) becomes U+FFFD first (sim/rules/text.py)."""
    for code in range(0, sys.maxunicode + 1, 7):
        ch = chr(code)
        shown = "\ufffd" if 0xD800 <= code <= 0xDFFF else ch
        for text, want in ((ch, shown), (f" a{ch}b ", f" a{shown}b "), (f"{ch}\n", f"{shown}\n")):
            got = one_line(text)
            # compared as escapes: a report holding a lone surrogate cannot cross to xdist
            assert ascii(got) == ascii(want.translate(_FLATTEN).strip(UNICODE_WS))


def test_ascii_normalise_equals_the_per_rune_map() -> None:
    from sim.language.vocab import _CHAR_MAP, lower_runes, normalise

    for code in range(128):
        for text in (chr(code), f"Ab{chr(code)}Z9'S"):
            assert normalise(text) == lower_runes(text).translate(_CHAR_MAP)
