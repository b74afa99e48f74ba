"""World files and the sentence parser: a town a world file accepts can be played in words.

A renamed good is bought, sold and handed over under its new name (and no longer under the old
one); a word that would name two entries, or that the grammar reads as something else, is
refused at load time in one line naming the file and the entry; two patch keys naming one entry
are refused instead of the last one silently winning.  The standard town reads exactly as
before (``tests/test_parser_golden.py`` and ``tests/test_golden_episodes.py`` hold it to the
original's recordings).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from towns import write_town

from agents import play_episode
from feasibility.cli import main
from sim import Game, GameConfig, Intent, load_config, parse_sentence
from sim.language.parser import parse
from sim.language.phrasing import canonical_sentence
from sim.language.vocab import tokenize, world_phrases
from sim.language.worldwords import check_words, entry_texts
from sim.rules.world import COG_NAMES, QTY_ALL, STANDARD_TOWN, World
from sim.rules.worldfile import WorldFileError, load_world, world_from_dict, world_to_dict
from sim.rules.worldfile_build import WORD_CHECKS

ALIASES = tuple(COG_NAMES[:6])  # Sprocket, Gizmo, Ratchet, Widget, Bolt, Piston
HIDE, SALT, LAMP, RELIC = 0, 3, 4, 5
NESH, VELL = 2, 4  # Keeper Nesh (the Copper Kettle, sells salt) and Guildmaster Vell
KETTLE = 1
PEPPER = '[goods.salt]\nname = "pepper"\n'


def said(world: World, sentence: str, room: int = 0) -> tuple:
    """Seat 0's parse of ``sentence`` in ``room``: (kind, item, qty, npc, reason)."""
    it = parse(world, ALIASES, 0, room, (), 0, sentence)
    return it.kind, it.item, it.qty, it.npc, it.reason


def refusal(tmp_path: Path, data: dict | str, name: str = "town.json") -> str:
    """The one-line error ``load_world`` gives for ``data``; it names the file."""
    path = write_town(tmp_path, data, name)
    with pytest.raises(WorldFileError) as e:
        load_world(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: ") and "\n" not in msg, msg
    return msg


# --- (a) a renamed good is played under its new name -------------------------------------------

def test_a_renamed_good_takes_the_words_of_its_new_name(tmp_path: Path) -> None:
    world, _ = load_world(write_town(tmp_path, PEPPER, "town.toml"))
    pepper = world.goods[SALT]
    # salt's plural and keywords ("salt", "salts", "brine") would have named the pepper
    assert (pepper.name, pepper.plural, pepper.keywords) == ("pepper", "peppers",
                                                             ("pepper", "peppers"))
    for sentence, qty in (("I buy 2 pepper from Keeper Nesh.", 2),
                          ("I buy 1 pepper from Keeper Nesh.", 1),
                          ("I buy two peppers from Nesh.", 2),
                          ("I buy a pepper.", 1)):
        assert said(world, sentence, KETTLE) == ("buy", SALT, qty, NESH, "ok"), sentence
    for old in ("I buy 2 salt from Keeper Nesh.", "I buy 2 brine from Keeper Nesh."):
        assert said(world, old, KETTLE)[-1] == "no_target", old
    # a case-only rename is no rename: salt keeps its words
    same, _ = world_from_dict({"goods": {"salt": {"name": "Salt"}}})
    assert same.goods[SALT].keywords == STANDARD_TOWN.goods[SALT].keywords


def test_a_renamed_good_is_bought_and_delivered_in_a_game(tmp_path: Path) -> None:
    game = Game(load_config(write_town(tmp_path, PEPPER, "town.toml"), seed=3))
    assert [q["item"] for q in game.observe(0)["quests"]] == ["pepper", "rope"]
    snap = game.snapshot()
    snap["cogs"][0]["room"] = KETTLE
    game.restore(snap)
    assert parse_sentence("I buy 2 pepper.", game, 0) == Intent("buy", item=SALT, qty=2,
                                                                npc=NESH)
    acts = game.play_turn(["I buy 2 pepper."] + ["I wait."] * 5)
    assert [(e["intent"], e["reason"]) for e in acts if e["seat"] == 0] == [("buy", "ok")]
    assert game.snapshot()["cogs"][0]["items"][SALT] == 2
    game.play_turn(["I walk to the Guildhall."] + ["I wait."] * 5)
    acts = game.play_turn(["I hand Vell 2 peppers."] + ["I wait."] * 5)
    assert [(e["intent"], e["reason"]) for e in acts if e["seat"] == 0] == [("give", "ok")]
    assert game.commissions(0)[0]["delivered"] == 2


def test_the_baselines_deliver_a_renamed_good(tmp_path: Path) -> None:
    """factor writes "I buy 1 pepper from ..." (the good's name, RULES §2.2): it must parse."""
    config = load_config(write_town(tmp_path, PEPPER, "town.toml"), seed=3)
    game = play_episode(config, ["factor"] * 6)
    bought = [e for e in game.events if e.get("intent") == "buy" and e.get("item") == SALT]
    assert bought and all(e["reason"] == "ok" for e in bought)
    assert any(c["item"] == SALT and c["delivered"] == 2
               for s in range(6) for c in game.commissions(s))


def test_a_good_is_named_by_its_name_and_plural_whatever_its_keywords() -> None:
    world, _ = world_from_dict({"goods": {"salt": {"name": "pepper", "plural": "pepper",
                                                   "keywords": ["spice"]}}})
    assert world.goods[SALT].keywords == ("spice",)
    for word in ("pepper", "spice"):
        assert said(world, f"I buy 3 {word} from Keeper Nesh.") == ("buy", SALT, 3, NESH, "ok")
    # a town built in Python is read the same way: the parser adds name and plural itself
    hand_built, _ = world_from_dict({"goods": {"lamp": {"keywords": ["lantern"]}}})
    assert said(hand_built, "I buy 2 lamps from Keeper Nesh.") == ("buy", LAMP, 2, NESH, "ok")


def test_the_standard_goods_phrases_are_exactly_their_keywords() -> None:
    """SENTENCES §6 for the standard town: the goods list is the keywords, in order (the
    name and plural are always among them, so nothing is added)."""
    keywords_only = tuple((tokenize(k), g.id) for g in STANDARD_TOWN.goods for k in g.keywords)
    assert world_phrases(STANDARD_TOWN).goods == keywords_only
    assert world_from_dict(world_to_dict(STANDARD_TOWN)) == (STANDARD_TOWN, None)


# --- (b) a word that names two entries, or that the grammar reads otherwise -----------------

@pytest.mark.parametrize(("data", "message"), [
    # a keyword moved onto another good without leaving the first
    ({"goods": {"lamp": {"keywords": ["lamp", "lamps", "brine"]}}},
     "goods[\"lamp\"].keywords[2]: 'brine' also names the good 'salt' (goods[3].keywords[2])"),
    # a good renamed to another good's keyword: "I buy 2 brine" bought salt
    ({"goods": {"relic": {"name": "brine"}}},
     "goods[\"relic\"].name: 'brine' also names the good 'salt'"),
    ({"rooms": {"Warehouse Yard": {"keywords": ["yard", "docks"]}}},
     "rooms[\"Warehouse Yard\"].keywords[1]: 'docks' also names the room 'The Docks' "
     "(rooms[5].keywords[0])"),
    # names equal once tokenised (SENTENCES §5), though not as text
    ({"rooms": {"The Chapel": {"name": "The-Docks"}}},
     "rooms[\"The Chapel\"].name: 'The-Docks' also names the room 'The Docks'"),
    ({"keepers": {"fen": {"keywords": ["fen", "smith"]}}},
     "keepers[\"fen\"].keywords[1]: 'smith' also names the keeper 'Smith Bram'"),
    # "I buy 2 hides from Salt Pete" names two goods
    ({"keepers": {"Keeper Nesh": {"name": "Salt Pete"}}},
     "keepers[\"Keeper Nesh\"].name: 'Salt Pete' holds 'salt', a word for the good 'salt' "
     "(goods[3])"),
    ({"goods": {"relic": {"name": "smith hammer"}}},
     "goods[\"relic\"].name: 'smith hammer' holds 'smith', a word for the keeper 'Smith Bram'"),
    # words the grammar reads as something else
    ({"goods": {"relic": {"keywords": ["relic", "a"]}}},
     "goods[\"relic\"].keywords[1]: 'a' is a count to the parser"),
    ({"rooms": {"chapel": {"keywords": ["chapel", "12"]}}},
     "rooms[\"chapel\"].keywords[1]: '12' is a number to the parser"),
    ({"keepers": {"fen": {"keywords": ["fen", "me"]}}}, "'me' is a reflexive word"),
    ({"rooms": {"chapel": {"keywords": ["chapel", "the"]}}}, "'the' is a word of nearly every "
                                                             "sentence"),
    ({"goods": {"relic": {"name": "silver"}}}, "goods[\"relic\"].name: 'silver' is a coin word"),
    ({"keepers": {"fen": {"name": "Silver Fen"}}}, "'Silver Fen' holds 'silver', a coin word"),
    ({"goods": {"relic": {"name": "deal"}}}, "'deal' is an offer word"),
    ({"goods": {"relic": {"name": "pocket watch"}}}, "'pocket watch' holds 'pocket'"),
    ({"goods": {"relic": {"keywords": ["relic", "!?"]}}},
     "goods[\"relic\"].keywords[1]: '!?' has no word a sentence can say"),
])
def test_a_word_a_sentence_cannot_use_is_refused(tmp_path: Path, capsys, data: dict,
                                                 message: str) -> None:
    assert message in refusal(tmp_path, data)
    assert main(["--world", str(tmp_path / "town.json")]) == 2  # the gate: no verdict
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_reference_to_a_shared_keyword_says_so(tmp_path: Path) -> None:
    msg = refusal(tmp_path, {"goods": {"lamp": {"keywords": ["lamp", "brine"]}},
                             "keepers": {"Keeper Nesh": {"trade": ["brine"], "opening": [3]}}})
    assert ("keepers[\"Keeper Nesh\"].trade[0]: unknown good 'brine' ('brine' is a keyword of "
            "both 'salt' and 'lamp')") in msg


def test_words_shared_across_lists_and_aliases_stay_allowed() -> None:
    """As in the standard town (``smith``: The Smithy and Smith Bram), and a town whose names
    hold the seats' aliases (tests/test_speed_paths.py plays one)."""
    world, _ = world_from_dict({"rooms": {"Tanner's Row": {"keywords": ["tanner", "oda"]},
                                          "The Copper Kettle": {"name": "Bolt's Rope Walk",
                                                                "keywords": ["bolt"]}},
                                "keepers": {"Tanner Oda": {"name": "Tanner Gizmo"}}})
    assert world.rooms[KETTLE].name == "Bolt's Rope Walk"


def test_the_word_check_runs_without_importing_the_parser_first() -> None:
    """sim.rules may not import sim.language (import-linter); importing any sim module
    imports the package, which hands the check down before a file can be read."""
    assert check_words in WORD_CHECKS and WORD_CHECKS.count(check_words) == 1
    code = textwrap.dedent("""
        from sim.rules.worldfile import WorldFileError, world_from_dict
        try:
            world_from_dict({"goods": {"relic": {"name": "brine"}}})
        except WorldFileError as e:
            print(e)
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert "'brine' also names the good 'salt'" in done.stdout, done.stderr


# --- (c) two patch keys naming one entry ----------------------------------------------------

@pytest.mark.parametrize(("text", "name", "message"), [
    ('[goods.brine]\nvalue = 12\n[goods.salt]\nvalue = 10\n', "town.toml",
     'goods["salt"]: names the same good as goods["brine"] (\'salt\', id 3)'),
    ('{"goods": {"salt": {"value": 10}, "3": {"value": 12}}}', "town.json",
     'goods["3"]: names the same good as goods["salt"]'),
    ('{"rooms": {"docks": {"dark": false}, "The Docks": {"dark": true}}}', "town.json",
     'rooms["The Docks"]: names the same room as rooms["docks"]'),
    ('[keepers.smith]\nopening = [4, 6]\n[keepers."Smith Bram"]\nopening = [5, 5]\n',
     "town.toml", 'keepers["Smith Bram"]: names the same keeper as keepers["smith"]'),
])
def test_two_patch_keys_naming_one_entry_are_refused(tmp_path: Path, text: str, name: str,
                                                     message: str) -> None:
    assert message in refusal(tmp_path, text, name)


# --- any town a world file accepts ------------------------------------------------------------

# Words that often collide with the standard town's and with each other (a verb among them:
# the verb scan reads "buy" first), whole phrases, and words the grammar reads otherwise.
SAFE = ("pepper", "spice", "salt", "brine", "rope", "lamp", "oil", "iron", "candle", "cloth",
        "saffron", "smith", "docks", "tanner", "well", "mill", "watch", "pick", "wool", "tar",
        "amber", "figs", "honey", "wax", "ink", "quill", "gate", "tower", "barn", "cellar",
        "lamp oil", "old rope", "spice box", "fine salt", "the docks", "rope walk", "salt pete",
        "smith bram", "keeper nesh", "old mill", "bag of figs", "tower gate",
        "one eyed jack", "agent 47", "all saints", "a li")  # counts inside: a keeper's refused
REFUSED = ("a", "two", "12", "me", "the", "from", "silver", "deal", "pockets", "!!")
text = st.sampled_from(SAFE * 4 + REFUSED)  # a refused word about one draw in twenty
title = text.map(str.title)


@st.composite
def patches(draw) -> dict:
    """A patch of the standard town's names and keywords, from words that often collide."""
    out: dict = {}
    for key, ids, fields in (("goods", range(6), ("name", "plural", "keywords")),
                             ("rooms", range(9), ("name", "keywords")),
                             ("keepers", range(5), ("name", "keywords"))):
        table = {}
        chosen = sorted(draw(st.sets(st.sampled_from(ids), max_size=3)))
        names = iter(draw(st.lists(text if key == "goods" else title, unique=True,
                                   min_size=len(chosen), max_size=len(chosen))))
        for i in chosen:
            patch = {}
            name = next(names)
            for field in draw(st.sets(st.sampled_from(fields), min_size=1)):
                patch[field] = (draw(st.lists(text, min_size=1, max_size=3)) if field ==
                                "keywords" else name if field == "name" else draw(text))
            table[str(i)] = patch
        if table:
            out[key] = table
    return out


# The slots each kind of act uses (RULES §8; a parse keeps the others as matched, unused).
USED = {"move": ("to_room",), "take": ("item", "qty"), "drop": ("item", "qty"),
        "buy": ("item", "qty", "npc"), "sell": ("item", "qty", "npc"),
        "give": ("item", "qty", "npc", "other", "coin"), "quest": ("npc",),
        "trade": ("item", "qty", "other", "coin")}


def _round_trips(world: World, it: Intent) -> None:
    sentence = canonical_sentence(it, world, ALIASES)
    got = parse(world, ALIASES, 0, 0, (), 0, sentence)
    fields = ("kind", "reason", *USED[it.kind])
    assert [getattr(got, f) for f in fields] == [getattr(it, f) for f in fields], \
        (sentence, got)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patches())
def test_every_accepted_town_names_each_entry_by_each_of_its_words(data: dict) -> None:
    try:
        world, _ = world_from_dict(data)
    except WorldFileError as e:
        assert str(e).startswith("<world>: ") and "\n" not in str(e)
        return
    # no phrase names two entries of one list (SENTENCES §6)
    for phrases in world_phrases(world):
        owners: dict[tuple[str, ...], set[int]] = {}
        for toks, ident in phrases:
            owners.setdefault(toks, set()).add(ident)
        assert all(len(ids) == 1 for ids in owners.values()), owners
    # every name, plural and keyword of a good buys and sells that good from every keeper
    for g in world.goods:
        for _, word in entry_texts(g):
            for k in world.keepers:
                assert said(world, f"I buy 3 {word} from {k.name}.") == \
                    ("buy", g.id, 3, k.id, "ok"), (word, k.name)
                assert said(world, f"I sell 2 {word} to {k.name}.") == \
                    ("sell", g.id, 2, k.id, "ok"), (word, k.name)
    # the game's own sentence of every act reads back as that act (sim.language.phrasing)
    for r in world.rooms:
        _round_trips(world, Intent("move", to_room=r.id))
    for k in world.keepers:
        _round_trips(world, Intent("quest", npc=k.id))
    for g in world.goods:
        _round_trips(world, Intent("take", item=g.id, qty=2))
        _round_trips(world, Intent("drop", item=g.id, qty=QTY_ALL))
        _round_trips(world, Intent("trade", item=g.id, qty=1, other=1, coin=g.value + 2))
        for k in world.keepers:
            for kind in ("buy", "sell", "give"):
                for qty in (1, 3):  # a count inside a name must not be read as the count
                    _round_trips(world, Intent(kind, item=g.id, qty=qty, npc=k.id))
            _round_trips(world, Intent("buy", item=g.id, qty=QTY_ALL, npc=k.id))


def test_the_property_sees_accepted_and_refused_towns() -> None:
    """The strategy above is no vacuous pass: it reaches towns of both kinds."""
    accepted = refused = 0

    @settings(max_examples=200, deadline=None, database=None)
    @given(patches())
    def count(data: dict) -> None:
        nonlocal accepted, refused
        try:
            world_from_dict(data)
            accepted += 1
        except WorldFileError:
            refused += 1

    count()
    assert accepted >= 20 and refused >= 20, (accepted, refused)


def test_a_standard_game_reads_as_before() -> None:
    """The standard town passes its own word check, and a town built from its full list form
    is the same town (same phrase lists, same parses)."""
    assert check_words(STANDARD_TOWN, lambda t, i: f"{t}[{i}]") is None
    game = Game(GameConfig(seed=7))
    assert parse_sentence("I buy 2 brine from Keeper Nesh.", game, 0) == Intent(
        "buy", item=SALT, qty=2, npc=NESH)
    assert said(STANDARD_TOWN, "I buy hides and salt.", 2)[-1] == "ambiguous_target"
    assert said(STANDARD_TOWN, "Rope, two, from the smith.") == ("buy", 2, 1, 1, "ok")


# --- the text view's examples name the town's own words ------------------------------------------

EXAMPLE_KINDS = ("move", "take", "drop", "buy", "sell", "give", "trade", "accept", "hire", "rob",
                 "quest", "wait")


def test_the_standard_view_keeps_the_original_examples() -> None:
    from sim.language.textview import town_phrasebook
    from sim.language.vocab import PHRASEBOOK

    assert town_phrasebook(STANDARD_TOWN) == PHRASEBOOK
    assert town_phrasebook(world_from_dict({})[0]) == PHRASEBOOK  # a file that changes nothing


def _examples_are_acts(world: World) -> None:
    """Each of the town's examples parses to its act, naming the entries it means."""
    from sim.language.textview import example_acts, example_seats, town_phrasebook

    seats = example_seats(world)
    aliases = (*seats[:3], *(a for a in COG_NAMES if a not in seats[:3]))[:6]
    got = [parse(world, aliases, 5, 0, (), 0, s) for s in town_phrasebook(world)]
    assert [(i.kind, i.reason) for i in got] == [(k, "ok") for k in EXAMPLE_KINDS], \
        list(zip(town_phrasebook(world), got, strict=True))
    if world == STANDARD_TOWN:  # the original's lines (SENTENCES §19 asserts their slots)
        return
    x = example_acts(world)
    by_kind = dict(zip(EXAMPLE_KINDS, got, strict=True))
    assert by_kind["move"].to_room == 0
    assert (by_kind["buy"].item, by_kind["buy"].npc, by_kind["buy"].qty) == (x.bought, x.seller, 2)
    assert (by_kind["sell"].item, by_kind["sell"].npc, by_kind["sell"].qty) == (x.sold, x.buyer, 3)
    assert (by_kind["give"].item, by_kind["give"].npc, by_kind["give"].qty) == \
        (x.wanted, world.guild, 2)
    assert (by_kind["trade"].item, by_kind["trade"].other, by_kind["trade"].coin) == \
        (x.relic, 0, 12)
    assert by_kind["hire"].other == 1 and by_kind["rob"].other == 2
    assert by_kind["quest"].npc == world.guild


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patches())
def test_a_towns_examples_are_acts_of_that_town(data: dict) -> None:
    # A renamed town's view listed the original's examples: 7 of 12 named nothing there, and
    # "I ask Guildmaster Vell about my commissions." was read as something said aloud.
    try:
        world, _ = world_from_dict(data)
    except WorldFileError:
        return
    _examples_are_acts(world)


def test_the_examples_name_seats_that_are_no_word_of_the_town() -> None:
    # a room and a keeper may hold a seat's name (parsed in play); the examples name others
    from sim.language.textview import example_seats

    world, _ = world_from_dict({"rooms": {"0": {"name": "Gizmo Yard"}},
                                "keepers": {"Smith Bram": {"name": "Smith Bolt"}}})
    assert example_seats(world)[:3] == ("Ratchet", "Sprocket", "Widget")
    _examples_are_acts(world)


@pytest.mark.parametrize("name", ["bolt", "Gizmo Oil", "tinker tools"])
def test_a_good_named_after_a_seat_is_refused(tmp_path: Path, name: str) -> None:
    # "I offer Bolt 1 bolt for 12 coins." named nobody: no seat could be offered or given it
    msg = refusal(tmp_path, {"goods": {"relic": {"name": name, "plural": name}}})
    assert 'goods["relic"].name: ' in msg and "a seat's name (the seats are Sprocket" in msg


@pytest.mark.parametrize("keeper", [{"keywords": ["smith", "gizmo"]}, {"name": "Rivet"}])
def test_a_keeper_whose_one_word_is_a_seats_name_is_refused(tmp_path: Path,
                                                            keeper: dict) -> None:
    # "I hand Gizmo 1 hide." named the keeper (SENTENCES §12): no sentence could give Gizmo
    # anything, while the structured act could
    msg = refusal(tmp_path, {"keepers": {"Smith Bram": keeper}})
    field = "keywords[1]" if "keywords" in keeper else "name"
    assert f'keepers["Smith Bram"].{field}: ' in msg, msg
    assert "a seat's name (the seats are Sprocket" in msg and "I hand " in msg, msg


def test_every_action_sentence_parses_back_in_a_town_whose_names_hold_seats_names() -> None:
    """The seats' names that a town may hold (in rooms' names and words, in keepers' longer
    names) change no act: each action's canonical sentence, the text faces' act, parses to
    the intent its index plays, for every seat in every room."""
    from sim.codec.action_table import action_table, canonical, semantic, to_intent
    from sim.rules.checks import check_structured

    world, _ = world_from_dict({
        "rooms": {"The Docks": {"name": "Gizmo Wharf", "keywords": ["wharf", "gizmo"]},
                  "The Chapel": {"name": "Chapel of Saint Bolt"}},
        "keepers": {"Smith Bram": {"name": "Smith Rivet"},
                    "Guildmaster Vell": {"name": "Widget Vell", "keywords": ["vell"]}}})
    seated: set[str] = set()
    for seed in range(4):
        game = Game(GameConfig(seed=seed, world=world))
        aliases = game.state.aliases
        seated.update(aliases)
        for seat in range(6):
            for room in range(world.n_rooms):
                for i in range(len(action_table(world))):
                    it = check_structured(to_intent(i, world, seat, room), world, seat, room,
                                          [], 0)
                    sentence = canonical(i, world, aliases, seat, room)
                    parsed = parse(world, aliases, seat, room, [], 0, sentence)
                    if it.kind != "accept":  # (no offer is open: both find none)
                        assert semantic(parsed) == semantic(it), (seed, seat, room, sentence)
    assert {"Gizmo", "Bolt", "Rivet", "Widget"} <= seated


@pytest.mark.parametrize("name", ['The "Rusty" Anchor', "Fish | Chips", "The \u201cOld\u201d Mill"])
def test_a_name_with_a_speech_mark_is_refused(tmp_path: Path, name: str) -> None:
    # a sentence naming it would start speaking at the mark: "I walk to The " and no room
    msg = refusal(tmp_path, {"rooms": {"0": {"name": name}}})
    assert 'rooms["0"].name: ' in msg and "a sentence that names it would start speaking" in msg


def test_a_room_without_exits_is_told_in_words(tmp_path: Path) -> None:
    from sim.language.textview import render_observation

    path = write_town(tmp_path, {"rooms": {"Cutpurse Alley": {"exits": []},
                                           "The Docks": {"exits": [0, 4]},
                                           "The Chapel": {"exits": [0, 8]}}})
    world, _ = load_world(path)
    alley = next(r.id for r in world.rooms if r.name == "Cutpurse Alley")
    game = Game(GameConfig(world=world, seed=0))
    game.state.room[0] = alley
    text = render_observation(game.observe(0), world)
    assert "There is no way out." in text and "Exits lead to ." not in text
    assert "- Cutpurse Alley (no roads)" in text and "(roads to )" not in text


@pytest.mark.parametrize(("name", "plural"), [("glass", "glasses"), ("box", "boxes"),
                                              ("peach", "peaches"), ("dish", "dishes"),
                                              ("berry", "berries"), ("key", "keys"),
                                              ("candle", "candles"), ("spikes", "spikes"),
                                              ("Brass Compass", "Brass Compasses")])
def test_a_renamed_good_takes_an_english_plural(name: str, plural: str) -> None:
    # "glass" became "glasss": "I buy 2 glasses" named nothing and "glasss" was accepted
    world, _ = world_from_dict({"goods": {"lamp": {"name": name}}})
    lamp = next(g for g in world.goods if g.name == name)
    assert lamp.plural == plural
    assert lamp.keywords == tuple(dict.fromkeys((name.lower(), plural.lower())))
    smith = next(k for k in world.keepers if k.name == "Smith Bram")
    assert said(world, f"I buy 2 {plural} from Smith Bram.") == ("buy", lamp.id, 2, smith.id,
                                                                    "ok")


@pytest.mark.parametrize("name", ["One-Eyed Jack", "Agent 47", "Mother Seven", "A Li",
                                  "All Saints Abbot"])
def test_a_keeper_whose_name_holds_a_count_is_refused(tmp_path: Path, name: str) -> None:
    # "I hand One-Eyed Jack 2 hides." handed one: the parser takes the first count it reads,
    # and the hand-over names the keeper first; factor delivered every commission unit by unit.
    msg = refusal(tmp_path, {"keepers": {"Guildmaster Vell": {"name": name,
                                                              "keywords": ["vell"]}}})
    assert f"keepers[\"Guildmaster Vell\"].name: {name!r} holds " in msg
    assert f"a count to the parser (docs/sentences.md §10): 'I hand {name} 2 hides' would " \
           "hand " in msg


def test_the_word_checks_are_linear_in_the_phrases(tmp_path: Path) -> None:
    # 10,000 keywords on a keeper and on a good took 111 s (every pair compared); the file
    # is now refused at once for its keyword count, and the bounded worst case is quick.
    import time

    from sim.rules.worldfile_checks import MAX_KEYWORDS, MAX_NAME_CHARS

    many = {"goods": {"relic": {"keywords": [f"g{i}" for i in range(10_000)]}},
            "keepers": {"Keeper Nesh": {"keywords": [f"k{i}" for i in range(10_000)]}}}
    assert f"at most {MAX_KEYWORDS} keywords; got 10000" in refusal(tmp_path, many)
    long_name = {"keepers": {"Keeper Nesh": {"name": "Nesh " + "x" * MAX_NAME_CHARS}}}
    assert f"at most {MAX_NAME_CHARS} characters" in refusal(tmp_path, long_name, "long.json")
    words = [f"w{i} v{i} u{i} t{i} s{i} r{i}" for i in range(MAX_KEYWORDS)]
    goods = [{"name": f"ware{g}", "plural": f"wares{g}", "value": 5,
              "keywords": [f"{w} g{g}" for w in words]} for g in range(32)]
    keepers = [{"name": f"Keeper {'BCDFGHJKL'[k]}", "room": k, "trade": [0, 1], "opening": [4, 4],
                "keywords": [f"{w} k{k}" for w in words]} for k in range(9)]
    start = time.process_time()
    world, _ = world_from_dict({"goods": goods, "keepers": keepers, "quest_items": [0, 1],
                                "guild": 0})
    assert len(world.keepers) == 9 and time.process_time() - start < 5.0  # linear: far under


@pytest.mark.parametrize(("data", "where", "old", "new"), [
    ({"goods": {"salt": {"name": "pepper"}},
      "keepers": {"Keeper Nesh": {"trade": ["lamp", "salt", "rope"], "opening": [1, 2, 3]}}},
     'keepers["Keeper Nesh"].trade[1]: unknown good \'salt\'', "salt", "pepper"),
    ({"goods": {"salt": {"name": "pepper"}}, "quest_items": ["hide", "brine"]},
     "quest_items[1]: unknown good 'brine'", "salt", "pepper"),
    ({"rooms": {"The Docks": {"name": "The Wharf"}},
      "keepers": {"Keeper Nesh": {"room": "The Docks"}}},
     'keepers["Keeper Nesh"].room: unknown room \'The Docks\'', "The Docks", "The Wharf"),
    ({"keepers": {"Guildmaster Vell": {"name": "Provost Ilsa"}}, "guild": "Guildmaster Vell"},
     "guild: unknown keeper 'Guildmaster Vell'", "Guildmaster Vell", "Provost Ilsa"),
])
def test_an_old_name_after_a_rename_says_the_file_renamed_it(tmp_path: Path, data: dict,
                                                             where: str, old: str,
                                                             new: str) -> None:
    msg = refusal(tmp_path, data)
    assert where in msg and msg.endswith(f"(this file renames {old!r} to {new!r}; name it so)")


def test_a_replaced_table_has_no_renames(tmp_path: Path) -> None:
    goods = [{"name": f"ware{c}", "value": 3} for c in "bcdfgh"]
    msg = refusal(tmp_path, {"goods": goods, "quest_items": ["salt", "wareb"]})
    assert msg.endswith("quest_items[0]: unknown good 'salt'")
