"""A replay given a town that matches its record but in purses or stock is refused in one line.

A replay's ``world`` (RULES §16.1) records the rooms, goods, keepers and the guild, not the
seats' and keepers' opening purses nor the shops' opening stock.  Its opening snapshot (event 1,
before any act) holds them all, so a world file that differs from the replay's town only there
is refused before any act, naming the first difference by the world file's key, by
``sim.replay.replay`` and by ``guild view --world``; in the standard town such a difference is
still a mismatch of the record, named compactly.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from leagues import one_error_line

from agents import play_episode
from league.cli import terminal
from league.cli.guild import main
from sim import Game, GameConfig, ReplayMismatch, load_config, replay
from sim.replay import purse_problem, town_problem
from sim.rules.worldfile import load_world, world_from_dict

ROOT = Path(__file__).resolve().parents[1]
LEAN = ROOT / "examples" / "towns" / "lean_year.toml"
PASS_TOWN = "pass the town it was played in (world=sim.rules.worldfile.load_world(FILE)[0])"
PASS_FILE = "pass the world file it was played in"
UNRECORDED = ("(does the town given differ from the game's where a replay does not record it: "
              "carry_limit, quest_items or keywords? then pass the one it was played in)")
LIKELY = ("the town's purses or stock likely differ from those the game was played with (the "
          "opening snapshot differs only there: ")

# A copy of the lean year's file changed in one line: what the message names, the recorded
# value and the given town's.
VARIANTS = {
    "start_coin": (("start_coin = 32", "start_coin = 33"),
                   "start_coin (seat 0's purse) is 32 in the record, 33 in the world given"),
    "opening": (("opening = [6, 4]", "opening = [6, 5]"),
                "Smith Bram's opening stock of hide is 4 in the record, 5 in the world given"),
    "keeper_start_coin": (("start_coin = 32", "start_coin = 32\nkeeper_start_coin = 100"),
                          "keeper_start_coin (Tanner Oda's purse) is 120 in the record, 100 in "
                          "the world given"),
}


@pytest.fixture(scope="module")
def lean_replay(tmp_path_factory) -> tuple[Path, dict, Game]:
    """A game of the lean year's town, saved as ``guild play --world ... --replay`` saves it."""
    out = tmp_path_factory.mktemp("lean")
    game = play_episode(load_config(LEAN, seed=7, turns=6), ["factor", "magpie"] * 3)
    path = out / "lean.json"
    terminal.save_replay(game, game.config.names, path, str(LEAN))
    return path, json.loads(path.read_text(encoding="utf-8")), game


def _variant(tmp_path: Path, name: str) -> Path:
    (old, new), _ = VARIANTS[name]
    text = LEAN.read_text(encoding="utf-8")
    assert text.count(old) == 1
    path = tmp_path / f"{name}.toml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_sim_replay_names_the_purse_or_stock_that_differs(lean_replay, tmp_path: Path,
                                                          name: str) -> None:
    _, payload, game = lean_replay
    world = load_world(_variant(tmp_path, name))[0]
    assert town_problem(payload["config"], world) is None  # the record cannot tell them apart
    with pytest.raises(ReplayMismatch) as e:
        replay(payload["config"], payload["events"], world)
    assert str(e.value) == f"{LIKELY}{VARIANTS[name][1]}); {PASS_TOWN}"
    assert e.value.index == 1 and "\n" not in str(e.value)
    cfg = GameConfig.from_dict(payload["config"], world)
    assert purse_problem(cfg, payload["events"]) == (f"{LIKELY}{VARIANTS[name][1]})", False)
    # the town it was played in replays it, and has nothing to say
    lean = load_world(LEAN)[0]
    assert replay(payload["config"], payload["events"], lean).results() == game.results()
    assert purse_problem(GameConfig.from_dict(payload["config"], lean), payload["events"]) is None


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_guild_view_names_the_purse_or_stock_that_differs(lean_replay, tmp_path: Path,
                                                          capsys, name: str) -> None:
    path, _, _ = lean_replay
    page = tmp_path / "page.html"
    assert main(["view", "--world", str(_variant(tmp_path, name)), str(path), "-o",
                 str(page)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line == f"guild view: error: {path}: {LIKELY}{VARIANTS[name][1]}); {PASS_FILE}"
    assert not page.exists()
    assert main(["view", "--world", str(LEAN), str(path), "-o", str(page)]) == 0
    assert page.is_file()


def test_the_standard_town_still_names_a_mismatch_of_the_record(tmp_path: Path,
                                                                capsys) -> None:
    """In the standard town the purses and stock are the rules' own: an opening snapshot with
    another purse is a mismatch of the record (edited, or played in a world file that changed
    only them), said so, compactly, naming the field."""
    game = play_episode(GameConfig(seed=5, turns=6), ["factor", "magpie"] * 3)
    payload = game.replay_payload()
    events = copy.deepcopy(payload["events"])
    events[1]["cogs"][2]["coin"] += 1
    with pytest.raises(ReplayMismatch) as e:
        replay(payload["config"], events)
    assert str(e.value) == ("event 1 (turn, turn 0): field 'cogs[2].coin' is 41 in the record "
                            "but the rules give 40")
    assert e.value.index == 1
    assert purse_problem(GameConfig.from_dict(payload["config"]), events) is None
    # a later snapshot names the one field too, not the whole list of shops
    snaps = [i for i, ev in enumerate(payload["events"]) if ev["kind"] == "turn"]
    events = copy.deepcopy(payload["events"])
    events[snaps[3]]["npcs"][4]["stock"][2] += 7
    with pytest.raises(ReplayMismatch, match=rf"^event {snaps[3]} \(turn, turn 3\): field "
                                             r"'npcs\[4\]\.stock\[2\]' is \d+ in the record but "
                                             r"the rules give \d+$"):
        replay(payload["config"], events)
    # a world file that changes only the start coin has the standard town's record: without
    # it, a mismatch at the opening snapshot; the viewer adds its hint
    richer = tmp_path / "richer.toml"
    richer.write_text("start_coin = 44\n", encoding="utf-8")
    game = play_episode(load_config(richer, seed=5, turns=6), ["factor", "magpie"] * 3)
    saved = tmp_path / "richer.json"
    saved.write_text(json.dumps(game.replay_payload()), encoding="utf-8")
    payload = json.loads(saved.read_text(encoding="utf-8"))
    with pytest.raises(ReplayMismatch, match=r"^event 1 \(turn, turn 0\): field 'cogs\[0\]\.coin' "
                                             r"is 44 in the record but the rules give 40$"):
        replay(payload["config"], payload["events"])
    assert main(["view", str(saved), "-o", str(tmp_path / "r.html")]) == 2
    assert one_error_line(capsys.readouterr().err).endswith(
        "the replay does not re-derive (a variant town? pass --world FILE): event 1 (turn, "
        "turn 0): field 'cogs[0].coin' is 44 in the record but the rules give 40")
    assert replay(payload["config"], payload["events"],
                  load_world(richer)[0]).results() == game.results()


def test_more_than_purses_differing_at_the_opening_is_a_mismatch(lean_replay) -> None:
    """Only a difference in purses and stock alone is put down to the town: an opening
    snapshot whose ground (or a seat's room) differs too is a mismatch of the record."""
    _, payload, _ = lean_replay
    poorer = world_from_dict({"start_coin": 31}, base=load_world(LEAN)[0])[0]
    events = copy.deepcopy(payload["events"])
    events[1]["rooms"][4][2] += 1
    with pytest.raises(ReplayMismatch) as e:
        replay(payload["config"], events, poorer)
    assert re.fullmatch(r"event 1 \(turn, turn 0\): field 'cogs\[0\]\.coin' is 32 in the record "
                        r"but the rules give 31 " + re.escape(UNRECORDED),
                        str(e.value)), str(e.value)
    # and an act that differs later is named as before
    lean = load_world(LEAN)[0]
    events = copy.deepcopy(payload["events"])
    act = next(i for i, ev in enumerate(events) if ev["kind"] == "act")
    events[act]["reason"] = "no_such_reason"
    with pytest.raises(ReplayMismatch, match=rf"^event {act} \(act, turn 0\): field 'reason' is "
                                             r"'no_such_reason' in the record but the rules "
                                             r"give '\w+' \(does the town given differ"):
        replay(payload["config"], events, lean)


@pytest.mark.parametrize("change, at", [
    ({"carry_limit": 3}, r"event \d+ \(act, turn \d+\): field '\w+' is .+ in the record but the "
                         r"rules give .+"),
    ({"quest_items": ["hide", "nails", "rope"]},
     r"event 1 \(turn, turn 0\): field '\S+' is .+ in the record but the rules give .+"),
])
def test_a_town_that_differs_where_a_replay_does_not_record_it_is_suggested(
        lean_replay, tmp_path: Path, capsys, change: dict, at: str) -> None:
    """A replay's ``world`` does not record the carry limit, the commission goods or the
    keywords: a world file that differs from the game's only there passes the town check and
    differs at the first event they decide, where the message asks whether it is that."""
    path, payload, game = lean_replay
    world = world_from_dict(change, base=load_world(LEAN)[0])[0]
    assert town_problem(payload["config"], world) is None  # the record cannot tell them apart
    with pytest.raises(ReplayMismatch) as e:
        replay(payload["config"], payload["events"], world)
    assert re.fullmatch(f"{at} {re.escape(UNRECORDED)}", str(e.value)), str(e.value)
    extra = "".join(f"\n{k} = {json.dumps(v)}" for k, v in change.items())
    other = tmp_path / "other.toml"
    other.write_text(LEAN.read_text(encoding="utf-8").replace("start_coin = 32", "start_coin = 32"
                                                              + extra, 1), encoding="utf-8")
    assert main(["view", "--world", str(other), str(path), "-o", str(tmp_path / "p.html")]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"guild view: error: {path}: the replay does not re-derive: ")
    assert line.endswith(UNRECORDED)
    # in the standard town the rules' own settings hold: no such question
    std = play_episode(GameConfig(seed=5, turns=6), ["factor", "magpie"] * 3).replay_payload()
    act = next(i for i, ev in enumerate(std["events"]) if ev["kind"] == "act")
    std["events"][act]["reason"] = "no_such_reason"
    with pytest.raises(ReplayMismatch) as e:
        replay(std["config"], std["events"])
    assert "does the town" not in str(e.value)


def test_a_standard_game_given_a_town_of_other_purses_is_told_to_leave_the_world_out(
        tmp_path: Path, capsys) -> None:
    """A game of the standard town, replayed with a world file that changes only the starting
    coin: its opening snapshot is the standard town's, so the advice is to give no world."""
    game = play_episode(GameConfig(seed=3, turns=6), ["factor", "magpie"] * 3)
    path = tmp_path / "standard.json"
    terminal.save_replay(game, game.config.names, path, None)
    payload = json.loads(path.read_text(encoding="utf-8"))
    coin = tmp_path / "coin33.toml"
    coin.write_text("start_coin = 33\n", encoding="utf-8")
    world = load_world(coin)[0]
    why = (f"{LIKELY}start_coin (seat 0's purse) is 40 in the record, 33 in the world given), "
           "and it is the standard town's: the game was played there")
    with pytest.raises(ReplayMismatch) as e:
        replay(payload["config"], payload["events"], world)
    assert str(e.value) == f"{why}; replay it without world="
    assert main(["view", "--world", str(coin), str(path), "-o", str(tmp_path / "p.html")]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line == f"guild view: error: {path}: {why}; leave out --world"


def test_a_key_one_side_lacks_is_named_absent() -> None:
    game = play_episode(GameConfig(seed=5, turns=6), ["factor", "magpie"] * 3)
    payload = game.replay_payload()
    events = copy.deepcopy(payload["events"])
    events[-1]["reason"] = None  # the rules' end event has no such key
    with pytest.raises(ReplayMismatch, match=r"field 'reason' is None in the record but the "
                                             r"rules give \(absent\)$"):
        replay(payload["config"], events)


@pytest.mark.parametrize("field, text", [
    ("say", "x" * 161), ("say", "two\nlines"), ("text", "n" * 601), ("sentence", "I wait.\t"),
    ("sentence", "  I wait."), ("seat", True)])
def test_an_act_the_rules_could_not_have_stored_is_a_mismatch(field: str, text: object) -> None:
    """Texts are replayed as stored, so a say of 5,000 characters, a notes field past its cap
    or a sentence with a tab (none of which the game stores: one line, cut to its cap, RULES
    §19) re-derived; so did a seat of True for 1."""
    game = play_episode(GameConfig(seed=5, turns=6), ["factor", "magpie"] * 3)
    payload = game.replay_payload()
    events = copy.deepcopy(payload["events"])
    act = next(e for e in events if e["kind"] == "act" and e["seat"] == 1)
    act[field] = text
    with pytest.raises(ReplayMismatch):
        replay(payload["config"], events)
    # a sentence cut at exactly its cap may end in a space, as the original stores it
    cut = ("I walk to the market square and then " * 10)[:239] + " "
    assert cut.endswith(" ")
    from sim.rules.text import as_stored
    assert as_stored(cut, 240) and not as_stored(cut[:199] + " ", 240)


def test_a_world_that_is_no_town_or_contradicts_the_config_is_refused() -> None:
    """With a GameConfig, world= was never looked at: a string, or another town, passed."""
    from sim import ConfigError

    game = play_episode(GameConfig(seed=5, turns=6), ["factor", "magpie"] * 3)
    payload = game.replay_payload()
    for world in ("garbage", 5):
        with pytest.raises(ConfigError, match="GameConfig.world must be a World"):
            replay(game.config, payload["events"], world=world)
    with pytest.raises(ConfigError, match="another town than the GameConfig's"):
        replay(game.config, payload["events"], world=load_world(LEAN)[0])
    assert replay(game.config, payload["events"], world=game.config.world).events == game.events
