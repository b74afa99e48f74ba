"""The league's faster paths (issue 18) keep its bytes and its durability order."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from league import LeagueOptions, run_league, store
from league.episode import Settings, play
from league.lineups import schedule


def test_replays_are_the_bytes_of_json_dumps() -> None:
    for spec in schedule(("factor", "magpie", "random"), 5, 0, 3):
        _, text = play(spec, Settings(policies=("factor", "magpie", "random")))
        assert text == json.dumps(json.loads(text), separators=(",", ":"))


def test_lines_are_appended_only_after_their_replays_are_synced(tmp_path, monkeypatch) -> None:
    synced: list[tuple[list[str], int]] = []
    results = tmp_path / "out" / store.RESULTS

    def sync(folder: Path, names: list[str]) -> None:
        lines = results.read_bytes().count(b"\n") if results.exists() else 0
        assert all((folder / n).is_file() for n in names)
        synced.append((list(names), lines))

    monkeypatch.setattr(store, "sync_files", sync)
    run_league(LeagueOptions(policies=("factor", "magpie"), episodes=12, out=str(tmp_path / "out"),
                             seed=2, workers=1))
    assert [names for names, _ in synced] == [[f"e{i:06d}.json"] for i in range(12)]
    assert [lines for _, lines in synced] == list(range(12))  # each before its own line


def test_sync_files_falls_back_to_an_fsync_per_file_and_the_folder(tmp_path,
                                                                    monkeypatch) -> None:
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text("{}")
    calls: list[int] = []
    monkeypatch.setattr(store, "_syncfs", lambda: None)
    monkeypatch.setattr(store.os, "fsync", lambda fd: calls.append(fd))
    store.sync_files(tmp_path, ["a.json", "b.json"])
    assert len(calls) == 3


@pytest.mark.skipif(not hasattr(os, "fork"), reason="worker processes need a POSIX system")
def test_episodes_played_while_workers_start_give_the_same_bytes(tmp_path) -> None:
    """The league's process plays the first episodes of a baseline league while the fork
    server starts; the files are those of one process playing everything."""
    outs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        run_league(LeagueOptions(policies=("factor", "magpie", "random"), episodes=40,
                                 out=str(out), seed=4, workers=workers))
        outs.append(out)
    rows = [[{k: v for k, v in json.loads(x).items() if k != "wallTime"}
             for x in (o / store.RESULTS).read_text().splitlines()] for o in outs]
    assert rows[0] == rows[1] and [r["index"] for r in rows[1]] == list(range(40))
    for i in range(40):
        name = f"replays/e{i:06d}.json"
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()
