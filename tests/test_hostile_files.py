"""The viewer, verify and the feasibility gate against hostile input: work grows
linearly with a replay, every bad file is one line and exit 2 (one failed episode in verify),
``--turns`` is bounded, ``--seeds -5..-1`` reads as ``--seeds=-5..-1``, and the optimal
planner's memory grows with the town, not with a power of its keepers."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from leagues import copy_league, one_error_line

from feasibility import OptimalSearch, run_gate
from feasibility.cli import main as feasibility
from league.cli import html_viewer as viewer
from league.cli.guild import main as guild
from league.core.verify import MAX_REPLAY_BYTES
from sim import Game, GameConfig
from sim.rules.world import MAX_TURNS, STANDARD_TOWN, Keeper, Room, World

SENTENCES = ["I walk to the market.", "I buy 1 rope from Smith Bram.", "I wait.",
             "I go north.", "I wait.", 'I say "anyone selling rope?"']
DEEP = 100_000  # far deeper than Python's recursion limit


def played(turns: int) -> dict:
    """The replay payload of a ``turns``-turn game of fixed sentences."""
    game = Game(GameConfig(seed=3, turns=turns))
    while not game.done:
        game.play_turn(SENTENCES)
    return game.replay_payload()


def _peak(payload: dict) -> int:
    tracemalloc.start()
    try:
        viewer.view_model(payload)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture
def deep_file(tmp_path: Path) -> Path:
    p = tmp_path / "deep.json"
    p.write_text("[" * DEEP + "]" * DEEP, encoding="utf-8")
    return p


# --- 1. guild view: linear in the replay, bounded by MAX_TURNS -------------------------------
def test_view_memory_grows_linearly_with_the_replay() -> None:
    """Four times the turns, about four times the memory (a whole game kept per turn would
    make it sixteen times)."""
    small, large = played(25), played(100)
    assert len(large["events"]) > 3.9 * len(small["events"])
    ratio = _peak(large) / _peak(small)
    assert ratio < 6, ratio


def test_view_refuses_a_replay_longer_than_any_game(tmp_path: Path, capsys) -> None:
    payload = played(6)
    longer = {**payload, "config": {**payload["config"], "turns": MAX_TURNS + 1}}
    padded = {**payload, "events": payload["events"] + [{"kind": "act"}] * (7 * MAX_TURNS)}
    for name, body in (("turns", longer), ("events", padded)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(body), encoding="utf-8")
        assert guild(["view", str(path), "-o", str(tmp_path / "x.html")]) == 2
        line = one_error_line(capsys.readouterr().err)
        assert line.startswith("guild view: error: ") and str(MAX_TURNS) in line, line
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:  # sparse: no disk used, and never read
        f.truncate(MAX_REPLAY_BYTES + 1)
    assert guild(["view", str(huge), "-o", str(tmp_path / "x.html")]) == 2
    assert "MB" in one_error_line(capsys.readouterr().err)


# --- 3. nesting and huge numbers: one line, exit 2; one failed episode in verify -------------
def test_view_deeply_nested_replay_is_one_line(deep_file: Path, tmp_path: Path,
                                               capsys) -> None:
    nested = {**played(6), "results": json.loads("[" * 900 + "]" * 900)}
    near = tmp_path / "near.json"
    near.write_text(json.dumps(nested), encoding="utf-8")
    huge = tmp_path / "huge.json"
    huge.write_text('{"protocol": ' + "9" * 5000 + "}", encoding="utf-8")
    for path in (deep_file, near, huge):
        assert guild(["view", str(path), "-o", str(tmp_path / "x.html")]) == 2, path
        assert one_error_line(capsys.readouterr().err).startswith("guild view: error: ")


def test_verify_a_deeply_nested_replay_is_one_failed_episode(league12, tmp_path: Path,
                                                             capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    replays = sorted((out / "replays").glob("*.json"))
    replays[3].write_text("[" * DEEP + "]" * DEEP, encoding="utf-8")
    with replays[5].open("r+b") as f:  # sparse: no disk used, and never read
        f.truncate(MAX_REPLAY_BYTES + 1)
    capsys.readouterr()
    assert guild(["verify", str(out)]) == 1
    said = capsys.readouterr().out.splitlines()
    assert any(replays[3].name in s and "nested too deeply" in s for s in said), said
    assert any(replays[5].name in s and "MB" in s for s in said), said
    assert said[-1].startswith(f"verify: 2 of {len(replays)} episodes do not verify"), said


@pytest.mark.parametrize("text", [
    "turns = " + "[" * 5000 + "]" * 5000 + "\n",
    "turns = " + "1" * 5000 + "\n",
    "[rooms." + ".".join(["a"] * 5000) + "]\n",
])
def test_hostile_world_files_are_one_line_exit_2(text: str, tmp_path: Path, capsys) -> None:
    town = tmp_path / "town.toml"
    town.write_text(text, encoding="utf-8")
    assert feasibility(["--world", str(town)]) == 2
    assert "bad world file" in one_error_line(capsys.readouterr().err)
    replay = tmp_path / "r.json"
    replay.write_text(json.dumps(played(6)), encoding="utf-8")
    assert guild(["view", str(replay), "--world", str(town)]) == 2
    assert one_error_line(capsys.readouterr().err).startswith("guild view: error: ")


# --- 2. the feasibility gate: --turns bounded, the planner proportional to the town ----------
@pytest.mark.parametrize("turns", ["1e26", str(10 ** 26), str(MAX_TURNS + 1), "9" * 5000])
def test_feasibility_turns_are_bounded(turns: str, capsys) -> None:
    assert feasibility(["--turns", turns]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"6..{MAX_TURNS}" in line and len(line) < 200, line


def crowded_town(keepers: int) -> World:
    """A line of ``keepers`` rooms, each with a keeper trading the four commission goods: the
    shape that made the optimal search's states a power of the number of keepers."""
    rooms = tuple(Room(i, f"Room {i}", (f"r{i}",), 0, 0, False,
                       tuple(j for j in (i - 1, i + 1) if 0 <= j < keepers), "")
                  for i in range(keepers))
    keeps = tuple(Keeper(k, f"Keeper {k}", (f"k{k}",), k, (0, 1, 2, 3),
                         tuple(12 if (k + g) % 3 else 2 for g in range(4)))
                  for k in range(keepers))
    return World(rooms=rooms, goods=STANDARD_TOWN.goods, keepers=keeps, guild=0,
                 start_coin=10_000)


def test_optimal_search_states_grow_with_the_town_not_a_power_of_it() -> None:
    """Twice the keepers: about four times the states, not a power of the keepers."""
    counts = []
    for n in (8, 16):
        search = OptimalSearch(crowded_town(n), (0, 1))
        plan = search.plan(n - 1)
        assert plan is not None and len(plan.stops) <= 6 and len(plan.steps) == plan.turns
        counts.append(len(search.memo))
    assert counts[1] / counts[0] < 6, counts


def test_a_gate_keeps_a_few_stops_per_plan_not_every_step() -> None:
    report = run_gate(crowded_town(9), seeds=range(2))
    plans = [p for o in report.seeded + report.exhaustive for p in (o.greedy, o.optimal) if p]
    assert plans and all(len(p.stops) <= 6 for p in plans)
    assert max(p.turns for p in plans) > 6  # the walks are there, expanded on demand


# --- 4. negative seed ranges, with or without "=" ---------------------------------------------
def test_negative_seed_ranges_read_both_ways(capsys) -> None:
    assert feasibility(["--seeds=-3..-1", "--json"]) == 0
    joined = json.loads(capsys.readouterr().out)
    assert feasibility(["--seeds", "-3..-1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == joined and joined["seeds"] == [-3, -1]
    assert guild(["evaluate", "random", "--seeds", "-2..-1", "--turns", "6"]) == 0
    assert "seeds -2..-1" in capsys.readouterr().out


def test_a_deeply_nested_results_line_stops_a_resume_in_one_line(tmp_path: Path,
                                                                   capsys) -> None:
    from leagues import league_args

    out = tmp_path / "nested"
    assert guild(league_args(out, 2, "--turns", "6", workers=1)) == 0
    with open(out / "results.jsonl", "a", encoding="utf-8") as f:
        f.write("[" * DEEP + "]" * DEEP + "\n")
    capsys.readouterr()
    assert guild(league_args(out, 4, "--turns", "6", workers=1)) == 2
    assert "results.jsonl line 3 is not valid JSON" in one_error_line(capsys.readouterr().err)
