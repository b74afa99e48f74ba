"""``guild export-sft DIR``: training rows from a league's replays, the
recorded model prompts and replies, the split by seed, the manifest, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import needs_module
from fake_llm import FakeLLM, good_reply

from agents.llm.seat import Reply, system_prompt
from league.cli.export_sft import split_of
from league.cli.guild import main
from sim import Game, GameConfig, replay

needs_module("httpx", "'guild-game[llm]'")


def read(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def baseline_league(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("base") / "lg"
    assert main(["league", "--policies", "factor,magpie,random", "--episodes", "24", "--turns",
                 "6", "--workers", "1", "--seed", "2", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def llm_league(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("llm") / "lg"
    with FakeLLM(lifetime=60) as server:
        spec = f"llm:good@{server.url}#prompt=Hoard%20the%20salt."
        assert main(["league", "--policies", f"{spec},factor", "--episodes", "1", "--turns",
                     "6", "--workers", "1", "--seed", "5", "--out", str(out)]) == 0
    return out


def test_every_act_becomes_a_row_whose_prompt_is_the_seats_view_then(baseline_league, capsys):
    assert main(["export-sft", str(baseline_league), "--val-fraction", "0.5"]) == 0
    assert "train rows" in capsys.readouterr().out
    sft = baseline_league / "sft"
    rows = read(sft / "train.jsonl") + read(sft / "validation.jsonl")
    assert len(rows) == 24 * 6 * 6
    results = {r["id"]: r for r in read(baseline_league / "results.jsonl")}
    # Check one episode's rows against an independent replay of each turn's prefix.
    ep = "e000007"
    payload = json.loads((baseline_league / "replays" / f"{ep}.json").read_text())
    cfg = GameConfig.from_dict({**payload["config"], "players": results[ep]["lineup"]})
    events = payload["events"]
    mine = sorted((r for r in rows if r["meta"]["episode"] == ep),
                  key=lambda r: (r["meta"]["turn"], r["meta"]["seat"]))
    assert len(mine) == 36
    for turn in range(6):
        cut = 2 + turn * 7  # start, snapshot, then six acts and a snapshot per turn
        game = replay(cfg, events[:cut]) if turn else Game(cfg)
        assert game.turn == turn
        for seat in range(6):
            r = mine[turn * 6 + seat]
            act = events[cut + [e["seat"] for e in events[cut:cut + 6]].index(seat)]
            assert r["prompt"] == [
                {"role": "system", "content": system_prompt(game, seat)},
                {"role": "user", "content": game.observation_text(seat)}]
            reply = json.loads(r["completion"][0]["content"])
            assert r["completion"][0]["role"] == "assistant"
            assert reply == {"action": act["sentence"], "say": act.get("say", ""), "notes": ""}
            assert r["meta"]["source"] == "replay"
            assert r["meta"]["policy"] == results[ep]["lineup"][seat]
            assert (r["meta"]["intent"], r["meta"]["reason"]) == (act["intent"], act["reason"])


def test_the_split_is_by_seed_deterministic_and_described(baseline_league, tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        assert main(["export-sft", str(baseline_league), "--out", str(out),
                     "--val-fraction", "0.5"]) == 0
    for name in ("train.jsonl", "validation.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    manifest = json.loads((a / "manifest.json").read_text())
    seeds = {}
    for side in ("train", "validation"):
        rows = read(a / f"{side}.jsonl")
        assert manifest["counts"][side]["rows"] == len(rows)
        for r in rows:
            assert split_of(r["meta"]["seed"], 0.5) == side
            assert seeds.setdefault(r["meta"]["seed"], side) == side
        assert manifest["counts"][side]["seeds"] == len({r["meta"]["seed"] for r in rows})
    assert len(seeds) == 4 and set(seeds.values()) == {"train", "validation"}
    assert manifest["source"] == str(baseline_league.resolve())
    assert manifest["split"]["by"] == "seed" and "sha256" in manifest["split"]["rule"]
    assert manifest["episodes"] == 24 and manifest["skipped"] == 0
    assert manifest["league"]["policies"] == ["factor", "magpie", "random"]
    for fraction, side in (("0", "train"), ("1", "validation")):
        out = tmp_path / f"f{fraction}"
        assert main(["export-sft", str(baseline_league), "--out", str(out),
                     "--val-fraction", fraction]) == 0
        assert json.loads((out / "manifest.json").read_text())["counts"][side]["episodes"] == 24


def test_recorded_model_decisions_are_exported_as_sent_and_answered(llm_league, tmp_path):
    assert main(["export-sft", str(llm_league), "--out", str(tmp_path / "all"),
                 "--val-fraction", "0"]) == 0
    rows = read(tmp_path / "all" / "train.jsonl")
    assert len(rows) == 36
    payload = json.loads((llm_league / "replays" / "e000000.json").read_text())
    recs = {(r["turn"], r["seat"]): r for r in payload["llm"]}
    llm_rows = [r for r in rows if r["meta"]["source"] == "llm"]
    assert len(llm_rows) == 18 and all(r["meta"]["policy"].startswith("llm:") for r in llm_rows)
    for r in llm_rows:
        rec = recs[(r["meta"]["turn"], r["meta"]["seat"])]
        user = r["prompt"][1]["content"]
        assert r["prompt"][0]["content"] == rec["system"] and user == rec["user"]
        assert "Hoard the salt." in user
        want = good_reply(user)
        assert r["completion"][0]["content"] == Reply(want["action"], want["say"],
                                                      want["notes"]).to_json()
    others = [r for r in rows if r["meta"]["source"] == "replay"]
    assert len(others) == 18 and all(r["meta"]["policy"] == "factor" and r["meta"]["scripted"]
                                     for r in others)
    assert all("Hoard the salt." not in r["prompt"][1]["content"] for r in others)
    assert main(["export-sft", str(llm_league), "--out", str(tmp_path / "llm"),
                 "--val-fraction", "0", "--only-llm"]) == 0
    assert read(tmp_path / "llm" / "train.jsonl") == llm_rows
    manifest = json.loads((tmp_path / "llm" / "manifest.json").read_text())
    assert manifest["bySource"] == {"llm": 18} and manifest["onlyLlm"] is True


def test_acts_a_fallback_played_are_flagged(tmp_path):
    # A model whose every request fails: factor plays its seat's every decision, and those
    # rows say so; factor's own seats played their own (scripted) acts.
    out = tmp_path / "lg"
    with FakeLLM(lifetime=60) as server:
        assert main(["league", "--policies", f"llm:e500@{server.url},factor", "--episodes",
                     "1", "--turns", "6", "--workers", "1", "--seed", "5", "--out",
                     str(out)]) == 0
    assert main(["export-sft", str(out), "--out", str(tmp_path / "sft"),
                 "--val-fraction", "0"]) == 0
    rows = read(tmp_path / "sft" / "train.jsonl")
    fell = [r["meta"]["policy"].startswith("llm:") for r in rows]
    assert sum(fell) == 18  # 3 seats x 6 turns
    assert [r["meta"]["fallback"] for r in rows] == fell
    assert all(r["meta"]["scripted"] and r["meta"]["source"] == "replay" for r in rows)


@pytest.mark.parametrize("damage", ["not json", "gone"])
def test_a_league_json_missing_or_damaged_is_one_line(baseline_league, tmp_path, capsys,
                                                      damage):
    import shutil

    copy = tmp_path / "lg"
    shutil.copytree(baseline_league, copy, ignore=shutil.ignore_patterns("sft", ".lock"))
    if damage == "gone":
        (copy / "league.json").unlink()
    else:
        (copy / "league.json").write_text("{", encoding="utf-8")
    assert main(["export-sft", str(copy), "--out", str(tmp_path / "o")]) == 2
    captured = capsys.readouterr()
    line = captured.err.strip()
    assert "Traceback" not in captured.err and len(line.splitlines()) == 1
    assert ("has no league.json" if damage == "gone" else "is not valid JSON") in line
    assert not (tmp_path / "o").exists()


def test_a_broken_episode_is_skipped_and_counted(baseline_league, tmp_path: Path, capsys):
    import shutil

    copy = tmp_path / "lg"
    shutil.copytree(baseline_league, copy, ignore=shutil.ignore_patterns("sft", ".lock"))
    (copy / "replays" / "e000003.json").unlink()
    assert main(["export-sft", str(copy), "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "e000003" in err[0] and "missing" in err[0]
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert manifest["skipped"] == 1
    assert sum(manifest["counts"][s]["episodes"] for s in ("train", "validation")) == 23


@pytest.mark.parametrize("name", ["train.jsonl", "validation.jsonl", "manifest.json"])
@pytest.mark.parametrize("kind", ["file", "link"])
def test_a_file_it_did_not_write_is_kept(baseline_league, tmp_path: Path, capsys, name, kind):
    """As ``guild view -o`` and ``guild evaluate --json``: an export replaces only its own files
    (a second export into the same folder works), and refuses, in one line and before writing
    anything, a file of that name that is someone else's or a link (whose target is kept)."""
    out = tmp_path / "o"
    for _ in range(2):
        assert main(["export-sft", str(baseline_league), "--out", str(out)]) == 0
    (out / "validation.jsonl").write_text("")  # an empty file loses nothing: replaced
    assert main(["export-sft", str(baseline_league), "--out", str(out)]) == 0
    capsys.readouterr()
    mine = tmp_path / "mine"
    mine.mkdir()
    theirs = tmp_path / "theirs.txt"
    theirs.write_text("my own data\n")
    if kind == "file":
        (mine / name).write_text("my own data\n")
    else:
        (mine / name).symlink_to(theirs)
    assert main(["export-sft", str(baseline_league), "--out", str(mine)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and "it is kept" in lines[0], captured.err
    assert "Traceback" not in captured.err
    assert sorted(p.name for p in mine.iterdir()) == [name]
    assert (mine / name).read_text() == "my own data\n"
    assert theirs.read_text() == "my own data\n"


@pytest.mark.parametrize("case", ["missing", "file", "empty-dir", "fraction"])
def test_bad_input_is_one_line_and_exit_2(case, tmp_path: Path, capsys):
    target = tmp_path / "x"
    extra: list[str] = []
    if case == "file":
        target.write_text("hi")
    elif case == "empty-dir":
        target.mkdir()
    elif case == "fraction":
        target.mkdir()
        extra = ["--val-fraction", "1.5"]
    assert main(["export-sft", str(target), *extra]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err and "export-sft" in lines[0]
