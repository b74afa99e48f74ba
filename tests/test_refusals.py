"""The library's refusals: every hostile input is one ``ValueError`` naming the field.

Fixtures are hostile inputs: turn counts past the bound, world files of absurd size,
depth or digits, restored states with astronomic coin or a teleporting ``prevRoom``, and seats
that are -1, 6 or a bool.  Each must be refused (a ``GuildError``, so a ``ValueError``) with a
one-line message that names what is wrong; nothing may be changed by a refused call.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

import sim
from sim import (
    ConfigError,
    Game,
    GameConfig,
    GuildError,
    ReplayMismatch,
    StateError,
    TurnError,
    WorldFileError,
    load_config,
    load_world,
    parse_sentence,
    replay,
)
from sim.batched.tables import tables_for
from sim.rules.turn import restock_good
from sim.rules.world import (
    MAX_EXITS,
    MAX_GOODS,
    MAX_KEEPERS,
    MAX_ROOMS,
    MAX_TURNS,
    STANDARD_TOWN,
    World,
)
from sim.rules.worldfile import MAX_FILE_BYTES, world_from_dict, world_to_dict

HUGE = pytest.param(10 ** 5000, id="5000-digits")  # more digits than Python will print


def one_line(err: BaseException) -> str:
    """The message, which must be a single line."""
    msg = str(err)
    assert "\n" not in msg, msg
    return msg


# --- 1. the turn bound ----------------------------------------------------------------------

@pytest.mark.parametrize("turns", [MAX_TURNS + 1, 10 ** 26, HUGE])
def test_game_config_refuses_turns_past_the_bound(turns: int) -> None:
    with pytest.raises(ConfigError, match=r"GameConfig\.turns") as err:
        GameConfig(turns=turns)
    assert str(MAX_TURNS) in one_line(err.value)


def test_the_bound_itself_plays() -> None:
    game = Game(GameConfig(seed=3, turns=MAX_TURNS))
    assert game.results()["maxTurns"] == MAX_TURNS
    obs_high = dict(sim.codec.encode.layout(STANDARD_TOWN))["time"][1]
    assert obs_high >= MAX_TURNS  # the observation space holds every turn count


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def line_of_rooms(n: int) -> dict:
    """A town of ``n`` rooms in a line, the rest of the standard town unchanged."""
    rooms = [{"name": f"Room {i}", "exits": [j for j in (i - 1, i + 1) if 0 <= j < n]}
             for i in range(n)]
    return {"rooms": rooms}


@pytest.mark.parametrize(("name", "text", "field"), [
    ("turns.json", json.dumps({"turns": MAX_TURNS + 1}), "turns"),
    ("digits.json", '{"turns": ' + "9" * 5000 + "}", "digits"),
    ("digits.toml", "turns = " + "9" * 5000 + "\n", "digits"),
    ("value.json", '{"start_coin": ' + "9" * 25 + "}", "start_coin"),
    ("value.toml", "start_coin = " + "9" * 4000 + "\n", "start_coin"),
    ("deep.json", "[" * 5000 + "]" * 5000, "nested"),
    ("deep_obj.json", '{"a":' * 5000 + "1" + "}" * 5000, "nested"),
    ("deep.toml", "a = " + "[" * 5000 + "]" * 5000 + "\n", "nested"),
    ("deep_table.toml", "a = " + "{b = " * 5000 + "1" + "}" * 5000 + "\n", "nested"),
    ("dotted.toml", "a" + ".a" * 5000 + " = 1\n", "nested"),
    ("rooms.json", json.dumps(line_of_rooms(10_000)), "rooms"),
    ("big.json", '{"name": "' + "x" * (MAX_FILE_BYTES + 1) + '"}', "bytes"),
])
def test_hostile_world_files_are_one_line(tmp_path: Path, name: str, text: str,
                                          field: str) -> None:
    with pytest.raises(WorldFileError) as err:
        load_world(write(tmp_path, name, text))
    msg = one_line(err.value)
    assert name in msg and field in msg
    assert len(msg) < 400


@pytest.mark.parametrize("text", [
    "a" + ".a" * 300_000 + " = 1\n",
    "[a" + ".a" * 300_000 + "]\nb = 1\n",
    'x = {"q".a' + ".a" * 300_000 + " = 1}\n",
    '# """\n' + "a" + ".a" * 300_000 + ' = 1\nx = """ """\n',
    'x = "#"\n' + "a" + ".a" * 300_000 + " = 1\n",
], ids=["dotted-key", "table-header", "inline-table", "quotes-in-a-comment", "hash-in-a-string"])
def test_a_key_too_deep_is_refused_before_parsing(tmp_path: Path, monkeypatch, text) -> None:
    """tomllib's time grows with the square of a dotted key's depth (a 100 KB key took about a
    minute, a 1 MiB one would take most of an hour), so a key deeper than any world file may
    nest is refused from the text, before tomllib reads it."""
    import sim.rules.worldfile as wf

    def parse(_text: str) -> None:
        raise AssertionError("tomllib was asked to parse the file")

    monkeypatch.setattr(wf.tomllib, "loads", parse)
    with pytest.raises(WorldFileError, match="nested more than 8 levels deep"):
        load_world(write(tmp_path, "deep.toml", text))


def test_dots_in_strings_comments_and_shallow_keys_are_no_depth(tmp_path: Path) -> None:
    """Only a key's own dots count: a description, a quoted key or a comment full of them, and
    keys and headers nested as deep as a world file may, load."""
    dots = ".".join("abcdefghijklmnop")
    text = (f'# {dots}\n[rooms.chapel]\ndesc = "{dots}"\nname = \'{dots}\'\n'
            f'[goods.salt]\nvalue = 9 # {dots}\n')
    world, _ = load_world(write(tmp_path, "town.toml", text))
    assert [(r.name, r.desc) for r in world.rooms if r.desc == dots] == [(dots, dots)]
    with pytest.raises(WorldFileError, match=r"unknown key"):  # one key, not 16 tables
        load_world(write(tmp_path, "quoted.toml", f'"{dots}" = 1\n'))


def test_world_tables_are_bounded() -> None:
    full = world_to_dict(STANDARD_TOWN)
    too_many_goods = copy.deepcopy(full)
    too_many_goods["goods"] += [{"name": f"g{i}", "value": 1}
                                for i in range(MAX_GOODS + 1 - len(full["goods"]))]
    with pytest.raises(WorldFileError, match=f"goods: at most {MAX_GOODS}"):
        world_from_dict(too_many_goods)
    with pytest.raises(WorldFileError, match=f"rooms: at most {MAX_ROOMS}"):
        world_from_dict(line_of_rooms(MAX_ROOMS + 1))
    with pytest.raises(WorldFileError, match=f"keepers: at most {MAX_KEEPERS}"):
        world_from_dict({"keepers": [{"name": f"k{i}", "room": 0, "trade": [],
                                      "opening": []} for i in range(MAX_KEEPERS + 1)]})
    hub = line_of_rooms(MAX_ROOMS)
    hub["rooms"][0]["exits"] = list(range(1, MAX_EXITS + 2))
    for r in range(2, MAX_EXITS + 2):
        hub["rooms"][r]["exits"].append(0)
    with pytest.raises(WorldFileError, match=rf"rooms\[0\]\.exits: at most {MAX_EXITS}"):
        world_from_dict(hub)
    # and World itself: no caller builds a bigger town around the file checks
    rooms = tuple(STANDARD_TOWN.rooms[0].__class__(i, f"r{i}", (), 0, 0, False, ())
                  for i in range(MAX_ROOMS + 1))
    with pytest.raises(ConfigError, match="World.rooms"):
        World(rooms=rooms, goods=STANDARD_TOWN.goods, keepers=STANDARD_TOWN.keepers)
    with pytest.raises(ConfigError, match="World.start_coin"):
        World(rooms=STANDARD_TOWN.rooms, goods=STANDARD_TOWN.goods,
              keepers=STANDARD_TOWN.keepers, start_coin=10 ** 30)


@pytest.mark.parametrize("change, field", [
    (lambda w: {"rooms": tuple(dataclasses.replace(r, exits=list(r.exits)) for r in w.rooms)},
     r"World.rooms\[0\].exits must be a tuple; got list"),
    (lambda w: {"rooms": tuple(dataclasses.replace(r, dark=int(r.dark)) for r in w.rooms)},
     r"World.rooms\[0\].dark must be a bool; got 0"),
    (lambda w: {"keepers": tuple(dataclasses.replace(k, trade=list(k.trade))
                                 for k in w.keepers)},
     r"World.keepers\[0\].trade must be a tuple; got list"),
    (lambda w: {"keepers": tuple(dataclasses.replace(k, room=len(w.rooms))
                                 for k in w.keepers)},
     r"World.keepers\[0\].room must be an int from 0 to 8; got 9"),
])
def test_a_hand_built_town_has_the_annotated_types(change, field: str) -> None:
    """A town built in Python with a list for a tuple (or 0 for False) is refused at once,
    naming the field, instead of failing later in code compiled against the annotations
    (the baselines, agents.baselines.native) with a bare TypeError."""
    w = STANDARD_TOWN
    fields = {"rooms": w.rooms, "goods": w.goods, "keepers": w.keepers} | change(w)
    with pytest.raises(ConfigError, match=field):
        World(**fields)


def test_largest_town_is_small_for_the_batched_engine() -> None:
    """32 goods and keepers whose trade lists have coprime lengths: the restock cycle is the
    lcm (about 10**14 turns), yet the batched table stays within MAX_TURNS + 1 and exact."""
    n_goods = MAX_GOODS
    goods = [{"name": f"good{i}", "value": 1 + i} for i in range(n_goods)]
    lengths = (32, 31, 29, 27, 25, 23, 19, 17, 13, 11, 7)
    rooms = line_of_rooms(len(lengths) + 8)["rooms"]
    keepers = [{"name": f"k{i}", "room": i, "trade": list(range(n)), "opening": [1] * n}
               for i, n in enumerate(lengths)]
    world, _ = world_from_dict({"goods": goods, "rooms": rooms, "keepers": keepers,
                                "quest_items": [0, 1], "guild": 0})
    tb = tables_for(world)
    assert tb.restock.shape[1] <= MAX_TURNS + 1
    for k, kp in enumerate(world.keepers):
        for t in (1, 2, 30, 31, 500, MAX_TURNS - 1):
            assert tb.restock[k, t % tb.restock.shape[1]] == restock_good(kp.trade, t)


# --- 2. restore -----------------------------------------------------------------------------

def _set(snap: dict, path: tuple, value) -> dict:
    target = snap
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return snap


@pytest.mark.parametrize(("path", "value", "field"), [
    (("cogs", 0, "coin"), 10 ** 30, r"cogs\[0\]\.coin"),
    pytest.param(("cogs", 0, "coin"), 10 ** 5000, r"cogs\[0\]\.coin", id="coin-5000-digits"),
    (("npcs", 1, "coin"), 10 ** 30, r"npcs\[1\]\.coin"),
    (("rooms", 4, 5), 10 ** 9, r"rooms\[4\]\[5\]"),
    (("cogs", 2, "items", 5), 10 ** 9, r"cogs\[2\]\.items"),
    (("cogs", 3, "robberies"), 10 ** 30, r"cogs\[3\]\.robberies"),
    (("cogs", 3, "robbed"), 2 ** 63, r"cogs\[3\]\.robbed"),
    (("cogs", 1, "rom"), 3, r"cogs\[1\] has an unknown key 'rom'"),
    (("npcs", 0, "stock", 2), 13, r"npcs\[0\]\.stock\[2\]"),
    (("turn",), MAX_TURNS, r"state\.turn"),
])
def test_restore_refuses_magnitudes_and_typos(path: tuple, value, field: str) -> None:
    game = Game(GameConfig(seed=4))
    before = game.snapshot()
    with pytest.raises(StateError, match=field) as err:
        game.restore(_set(game.snapshot(), path, value))
    assert len(one_line(err.value)) < 300
    assert game.snapshot() == before


@pytest.mark.parametrize("seed", range(5))
def test_restore_refuses_a_prev_room_that_is_not_an_exit(seed: int) -> None:
    game = Game(GameConfig(seed=seed))
    w = game.world
    for s in range(6):
        room = game.state.room[s]
        far = next(r for r in range(w.n_rooms) if r != room and r not in w.rooms[room].exits)
        with pytest.raises(StateError, match=rf"cogs\[{s}\]\.prevRoom"):
            game.restore(_set(game.snapshot(), ("cogs", s, "prevRoom"), far))
        with pytest.raises(StateError, match=rf"cogs\[{s}\]\.prevRoom"):
            game.restore(_set(game.snapshot(), ("cogs", s, "prevRoom"), room))
        near = w.rooms[room].exits[0]
        game.restore(_set(game.snapshot(), ("cogs", s, "prevRoom"), near))
        assert game.snapshot()["cogs"][s]["prevRoom"] == near


def test_restore_keeps_scenarios_open() -> None:
    """Anything the rules allow still restores: rich purses within the bound, full packs."""
    game = Game(GameConfig(seed=1))
    snap = game.snapshot()
    snap["cogs"][0]["coin"] = 2 ** 24
    snap["npcs"][0]["coin"] = 2 ** 24
    snap["cogs"][1]["items"] = [0, 0, 0, 0, 0, game.world.carry_limit]
    snap["rooms"][2] = [100_000] * game.world.n_goods
    game.restore(snap)
    assert game.snapshot() == snap
    assert game.results()["scores"][0] == (2 ** 24 - game.world.start_coin) / 40


# --- 3. public entry points -----------------------------------------------------------------

@pytest.mark.parametrize("seat", [-1, 6, True, False, "0", None, 2.0, 10 ** 30,
                                  pytest.param(10 ** 5000, id="5000-digits")])
def test_bad_seats_are_refused_everywhere(seat) -> None:
    game = Game(GameConfig(seed=2))
    calls = [lambda: parse_sentence("I go to the market.", game, seat),
             lambda: game.intent_for("I wait.", seat), lambda: game.observe(seat),
             lambda: game.observation_text(seat), lambda: game.commissions(seat)]
    for call in calls:
        with pytest.raises(TurnError, match="seat") as err:
            call()
        one_line(err.value)


@pytest.mark.parametrize("spec", ["factor", "magpie", "random", "champion"])
@pytest.mark.parametrize("seat", [-1, 6, True, "1", 1.0])
def test_the_built_in_policies_refuse_a_bad_seat(spec: str, seat) -> None:
    """-1 decided for seat 5 and True for seat 1 (a list looked up), 6 was an IndexError."""
    from agents import make_policy

    with pytest.raises(TurnError, match="seat must be an int"):
        make_policy(spec).act(Game(GameConfig(seed=2)), seat)


def test_the_built_in_policies_take_a_numpy_seat() -> None:
    import numpy as np

    from agents import make_policy

    game = Game(GameConfig(seed=2))
    for spec in ("factor", "magpie", "random", "champion"):
        assert make_policy(spec).act(game, np.int64(3)) == make_policy(spec).act(game, 3)


@pytest.mark.parametrize("scripted", [["no"] * 6, [0] * 6, [None] * 6, [[0]] * 6])
def test_scripted_flags_must_be_bools(scripted: list) -> None:
    """"no" and [0] were recorded as scripted, 0 and None as not: the replay keeps the flag."""
    game = Game(GameConfig(seed=2))
    with pytest.raises(TurnError, match=r"scripted\[0\] must be a bool"):
        game.play_turn(["I wait."] * 6, scripted=scripted)
    assert game.turn == 0
    acts = game.play_turn(["I wait."] * 6, scripted=[True, False] * 3)
    assert [a["scripted"] for a in sorted(acts, key=lambda a: a["seat"])] == [True, False] * 3


def test_a_string_of_six_is_not_six_actions() -> None:
    with pytest.raises(TurnError, match="6 items .* got a str"):
        Game(GameConfig(seed=2)).play_turn("abcdef")


def test_the_acts_play_turn_returns_are_the_callers_own() -> None:
    """They were the record's own dicts: a caller that tagged or trimmed them rewrote
    game.events, and the game's own payload no longer replayed."""
    game = Game(GameConfig(seed=2))
    while not game.done:
        for act in game.play_turn([sim.Intent("say", text="hi")] + ["I buy a hide."] * 5):
            act["policy"] = "mine"
            del act["sentence"]
            act.get("structured", {}).clear()
    assert all("policy" not in e and (e["kind"] != "act" or "sentence" in e)
               for e in game.events)
    payload = game.replay_payload(["p"] * 6)
    assert sim.replay(payload["config"], payload["events"]).events == game.events


def test_parse_sentence_needs_a_game() -> None:
    with pytest.raises(TurnError, match="game"):
        parse_sentence("I wait.", "not a game", 0)


def test_observation_text_prompt() -> None:
    game = Game(GameConfig(seed=2))
    assert game.observation_text(0, prompt=None) == game.observation_text(0)
    with pytest.raises(TurnError, match="prompt"):
        game.observation_text(0, prompt=5)


@pytest.mark.parametrize(("config", "field"), [
    ({"players": [{}] * 6}, r"players\[0\]"),
    ({"players": 5}, "players"),
    ({"players": [{"name": 5}] * 6}, "players"),
    ({"turns": "14"}, "turns"),
    pytest.param({"seed": 10 ** 5000}, "seed", id="seed-5000-digits"),
    ("x", "config"),
])
def test_config_from_dict_refuses(config, field: str) -> None:
    with pytest.raises(ConfigError, match=field) as err:
        GameConfig.from_dict(config)
    assert len(one_line(err.value)) < 300


@pytest.mark.parametrize("config", ["x", {"seed": 1}, 7, [GameConfig()]])
def test_game_needs_a_game_config(config) -> None:
    with pytest.raises(ConfigError, match="config"):
        Game(config)


def test_other_entry_points(tmp_path: Path) -> None:
    with pytest.raises(ReplayMismatch, match="events"):
        replay({"seed": 0}, 5)
    with pytest.raises(WorldFileError, match="path"):
        load_world(None)
    world = write(tmp_path, "w.json", json.dumps({"turns": 9}))
    with pytest.raises(ConfigError, match="colour"):
        load_config(world, colour="red")
    assert load_config(world, seed=3).turns == 9
    with pytest.raises(WorldFileError, match="base"):
        world_from_dict({}, base="standard")
    for err in (ConfigError, StateError, TurnError, WorldFileError, ReplayMismatch):
        assert issubclass(err, GuildError) and issubclass(err, ValueError)


def test_an_unhashable_kind_or_reason_is_an_intent_error_and_a_replay_mismatch() -> None:
    """A list as a kind or reason raised TypeError (unhashable) from the fast path's set
    lookup, in Intent and in sim.replay of a record holding one."""
    from sim import Intent, IntentError, ReplayMismatch, replay

    with pytest.raises(IntentError, match="Intent.kind must be one of"):
        Intent(kind=["move"])
    with pytest.raises(IntentError, match="Intent.reason must be one of"):
        Intent("wait", reason=["ok"])
    game = Game(GameConfig(seed=2, turns=6))
    game.play_turn([Intent("wait")] * 6)
    payload = game.replay_payload()
    act = next(e for e in payload["events"] if e["kind"] == "act")
    act["structured"]["kind"] = ["move"]
    with pytest.raises(ReplayMismatch, match="bad structured intent"):
        replay(payload["config"], payload["events"])


def test_both_spellings_of_a_slot_must_agree() -> None:
    """``toRoom=`` and ``spoken=`` are RULES' spellings of ``to_room`` and ``text``; given both
    with different values, the RULES spelling won silently (a move to room 3, not 4)."""
    from sim import Intent, IntentError

    assert Intent("move", to_room=4, toRoom=4).to_room == 4
    assert Intent("move", toRoom=3).to_room == 3
    assert Intent("say", text="hi", spoken="hi").text == "hi"
    with pytest.raises(IntentError, match="to_room=4 and toRoom=3"):
        Intent("move", toRoom=3, to_room=4)
    with pytest.raises(IntentError, match="text='a' and spoken='b'"):
        Intent("say", text="a", spoken="b")
    import numpy as np

    with pytest.raises(IntentError, match="to_room=array"):  # numpy's "truth value ... ambiguous"
        Intent("move", to_room=np.array([1, 2]), toRoom=3)
    with pytest.raises(IntentError, match="give one of the two spellings"):
        Intent("say", text=np.array(["a", "b"]), spoken="a")


@pytest.mark.parametrize("field, value", [("scripted", "no"), ("scripted", 0), ("say", None),
                                          ("notes", b"x")])
def test_a_decision_is_checked_where_it_is_made(field: str, value) -> None:
    """A policy's Decision(scripted="no") reached play_turn, which refused the whole turn (a
    league's retry then refused it again, for every seat); now the seat that made it fails."""
    from agents import Decision

    with pytest.raises(ValueError, match=f"Decision.{field} must be a"):
        Decision("I wait.", **{field: value})
    assert Decision("I wait.", say="hi", notes="n", scripted=True).scripted is True
    import numpy as np  # numpy's bools and strings are a bool and a str

    assert Decision("I wait.", say=np.str_("hi"), scripted=np.True_).scripted is True
    assert Decision("I wait.", scripted=np.False_).scripted is False  # (0 + np.False_ is int64:
    with pytest.raises(TurnError, match=r"scripted\[0\] must be a bool"):  # no JSON)
        Game(GameConfig(seed=2)).play_turn(["I wait."] * 6, scripted=[np.array(True)] * 6)
    acts = Game(GameConfig(seed=2)).play_turn(["I wait."] * 6, scripted=[np.True_] * 6)
    assert all(a["scripted"] is True for a in acts)
