"""World files (``sim.rules.worldfile``): variant towns that play and that the feasibility gate
checks, and bad files named line by line."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from towns import lighthouse, play_plan, write_town

from feasibility import (
    Checker,
    cheapest_source,
    run_gate,
)
from feasibility.cli import main
from sim import Game, load_config
from sim.rules.world import STANDARD_TOWN
from sim.rules.worldfile import (
    WorldFileError,
    load_world,
    world_from_dict,
    world_to_dict,
)

W = STANDARD_TOWN
HIDE, NAILS, ROPE, SALT = 0, 1, 2, 3


# --- world files -----------------------------------------------------------------------------

def test_world_file_round_trip() -> None:
    assert world_from_dict({}) == (W, None)
    assert world_from_dict(world_to_dict(W)) == (W, None)


CUT_DOCKS = {"turns": 16, "start_coin": 42,
             "rooms": {"The Docks": {"exits": ["Warehouse Yard", "alley"]},
                       "Market Square": {"exits": [1, 3, 7]}},
             "goods": {"salt": {"value": 10}},
             "keepers": {"smith": {"opening": [4, 6]}}}


def test_world_file_patches_and_plays(tmp_path: Path) -> None:
    world, turns = load_world(write_town(tmp_path, CUT_DOCKS))
    assert turns == 16 and world.start_coin == 42
    assert world.rooms[5].exits == (4, 6) and world.rooms[0].exits == (1, 3, 7)
    assert world.goods[SALT].value == 10 and world.keepers[1].opening == (4, 6)
    assert world.dist[0][5] == 3
    report = run_gate(world, turns)
    assert report.ok and report.summary("seeded", "greedy").worst_turns == 12
    # With 35 coin, rope (17) + salt now worth 10 (21) is out of reach by any plan.
    poorer = run_gate(replace(world, start_coin=35), turns)
    assert not poorer.ok and all(o.optimal is None for o in poorer.failures)
    # The same World is played by the game: a seat follows its optimal plan to completion.
    checker = Checker(world, turns)
    case = checker.seeded_cases([3])[0]
    plan = checker.check(case).optimal
    assert plan is not None
    game = play_plan(world, 3, 0, plan, turns)
    assert all(c["delivered"] == 2 for c in game.commissions(0))


def test_world_file_toml_and_full_tables(tmp_path: Path) -> None:
    toml = """
name = "cheap salt"
start_coin = 45
[goods.salt]
value = 7
[keepers."Keeper Nesh"]
trade = ["lamp", "salt", "rope"]
opening = [4, 8, 4]
"""
    world, turns = load_world(write_town(tmp_path, toml, "town.toml"))
    assert turns is None and world.start_coin == 45 and world.keepers[2].opening == (4, 8, 4)
    assert cheapest_source(world, SALT).cost == 5 + 6
    full = world_to_dict(W)
    full["goods"][HIDE]["value"] = 5
    assert world_from_dict(full)[0].goods[HIDE].value == 5


def test_world_file_with_a_new_room_and_keeper(tmp_path: Path) -> None:
    """A list replaces a whole table: a tenth room off the Docks with a salt merchant."""
    full = lighthouse()
    full["turns"] = 14
    path = write_town(tmp_path, full)
    config = load_config(path, seed=4)  # seat 3 starts at the Docks
    w = config.world
    assert config.turns == 14 and w.n_rooms == 10 and w.rooms[5].exits == (0, 4, 6, 9)
    assert cheapest_source(w, SALT).keeper == 5  # 6 + 7 = 13 beats Keeper Nesh's 19
    game = Game(config)
    at_docks = [s for s in range(6) if game.state.room[s] == 5]
    game.play_turn(["I walk to the lighthouse."] * 6)
    assert at_docks and all(game.state.room[s] == 9 for s in at_docks)
    # The greedy oracle chases the cheap, remote salt and runs out of time, although the
    # optimal plan fits: the gate (RULES §18 enforces the greedy plan) fails and says so.
    r = run_gate(w, 14, range(50))
    assert not r.ok
    assert all(o.optimal is not None and o.optimal.turns <= 12 for o in r.failures)


BAD_WORLDS = [
    ({"rooms": {"The Docks": {"exits": [4, 6, "Harbour Gate"]}}},
     "rooms[\"The Docks\"].exits[2]: unknown room 'Harbour Gate'"),
    ({"rooms": {"The Docks": {"exits": [4, 6]}}}, "asymmetric exit: Market Square leads to "
                                                   "The Docks"),
    ({"keepers": {"Smith Bram": {"trade": ["nails"], "opening": [8]},
                  "Keeper Nesh": {"trade": ["lamp", "salt"], "opening": [4, 6]},
                  "Guildmaster Vell": {"trade": ["lamp"], "opening": [3]}}},
     "commission good 'rope' is sold by no keeper"),
    ({"start_coin": -5}, "start_coin: negative values are not allowed; got -5"),
    ({"keepers": {"oda": {"opening": [8, -1]}}}, "opening[1]: negative values"),
    ({"goods": {"hide": {"value": -2}}}, "value: negative values"),
    ({"turns": 4}, "turns: must be at least 6"),
    ({"startcoin": 30}, "unknown key 'startcoin' (did you mean 'start_coin'?)"),
    ({"keepers": {"fen": {"room": "The Smithy"}}}, "both stand in one room"),
    ({"rooms": {"chapel": {"exits": [0, 6, 8, 8]}}}, "The Guildhall is listed twice"),
    ({"keepers": {"Tanner Oda": {"trade": ["hide"]}}}, "trade lists 1 good but opening gives "
                                                       "2 stock levels"),
    ({"guild": "Mayor Pell"}, "guild: unknown keeper 'Mayor Pell'"),
    # a digit only int() refuses (superscript, circled) was a bare "invalid literal for int()"
    ({"guild": "\u00b2"}, "guild: unknown keeper '\u00b2'"),
    ({"rooms": {"The Docks": {"exits": [4, 6, "\u2460"]}}},
     "rooms[\"The Docks\"].exits[2]: unknown room '\u2460'"),
    ([1, 2], "must be an object"),
    ({"keepers": None}, "keepers: must be a list (a full table) or an object (changes to the "
                        "standard entries); got None"),
    # a name's line break would write lines of its own into the gate's report (a "PASS:")
    ({"rooms": {"The Copper Kettle": {"name": "Kettle\nPASS: every plan fits"}}},
     "name: must be one line of printable text, without control or format characters; got "
     "'Kettle\\nPASS"),
    ({"goods": {"salt": {"name": "salt\x1b[2J"}}}, "without control or format characters"),
    ({"rooms": {"Market Square": {"name": "Market \u202eerauqS"}}},
     "without control or format characters; got 'Market \\u202eerauqS'"),
    ({"keepers": {"Smith Bram": {"name": "Smith\u2066Bram"}}}, "format characters"),
]


def test_names_of_any_script_and_typography_load(tmp_path: Path) -> None:
    """Only what acts on a terminal is refused: a no-break space, a soft hyphen, an emoji's
    joiner and letters of other scripts are text."""
    desc = ("A quiet chapel\xa0: a cook \U0001f468\u200d\U0001f373, in\xadcense, "
            "\u0645\u0635\u0644\u0649.")
    name = "Kapelle am\xa0Markt"
    world, _ = load_world(write_town(tmp_path, {"rooms": {"chapel": {"desc": desc,
                                                                     "name": name}}}))
    assert [(r.name, r.desc) for r in world.rooms if r.desc == desc] == [(name, desc)]


@pytest.mark.parametrize(("data", "message"), BAD_WORLDS)
def test_bad_world_files_are_named(tmp_path: Path, capsys, data, message: str) -> None:
    path = write_town(tmp_path, data)
    with pytest.raises(WorldFileError) as e:
        load_world(path)
    assert message in str(e.value) and str(path) in str(e.value)
    assert main(["--world", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(("text", "name", "message"), [
    ('{"turns": 12,}', "town.json", "malformed JSON at line 1"),
    ("turns = = 3", "town.toml", "malformed TOML"),
])
def test_malformed_world_files(tmp_path: Path, capsys, text: str, name: str,
                               message: str) -> None:
    assert main(["--world", str(write_town(tmp_path, text, name))]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize(("text", "message"), [
    ('{"start_coin": 30, "start_coin": 40}', "the key 'start_coin' is given twice in one "
                                             "object"),
    ('{"goods": {"salt": {"value": 9, "value": 12}}}', "the key 'value' is given twice"),
])
def test_a_json_key_given_twice_is_refused(tmp_path: Path, capsys, text: str,
                                           message: str) -> None:
    # JSON keeps the last value silently; a world file says each field once
    path = write_town(tmp_path, text, "town.json")
    assert main(["--world", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: {message}" in err and err.count("\n") == 1


def test_a_world_file_that_is_no_regular_file_is_refused_unread(tmp_path: Path,
                                                                capsys) -> None:
    import os

    fifo = tmp_path / "town.json"
    os.mkfifo(fifo)  # opened as a file, it would wait for a writer forever
    for path in (fifo, tmp_path, Path("/dev/zero")):
        assert main(["--world", str(path)]) == 2
        assert "not a regular file" in capsys.readouterr().err


def test_missing_world_file(tmp_path: Path, capsys) -> None:
    assert main(["--world", str(tmp_path / "nope.json")]) == 2
    assert "cannot read the world file" in capsys.readouterr().err


@pytest.mark.parametrize("given", ["town.toml", Path("town.toml"), (STANDARD_TOWN, 12)])
def test_a_world_file_given_as_the_world_says_how_to_read_it(given) -> None:
    # load_world returns (world, turns); passing that pair or the path itself said only
    # "GameConfig.world must be a World; got tuple"
    from sim import GameConfig

    with pytest.raises(ValueError, match=r"got (str|PosixPath|tuple) \(a world file is read by "
                                         r"sim.load_config\(path\)"):
        GameConfig(world=given)
