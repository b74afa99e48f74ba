"""The league's faster paths keep its bytes and its durability order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import needs

from league import LeagueOptions, run_league
from league.core import store
from league.core.episode import Settings, play
from league.core.lineups import schedule
from league.procs import workers


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


def _league_files(tmp_path: Path) -> list[Path]:
    """A 40-episode baseline league with one process and with two workers."""
    outs = []
    for n in (1, 2):
        out = tmp_path / f"w{n}"
        run_league(LeagueOptions(policies=("factor", "magpie", "random"), episodes=40,
                                 out=str(out), seed=4, workers=n))
        outs.append(out)
    return outs


def _same_files(outs: list[Path]) -> None:
    rows = [[{k: v for k, v in json.loads(x).items() if k != "wallTime"}
             for x in (o / store.RESULTS).read_text().splitlines()] for o in outs]
    assert rows[0] == rows[1] and [r["index"] for r in rows[1]] == list(range(40))
    for i in range(40):
        name = f"replays/e{i:06d}.json"
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()


def test_episodes_played_while_workers_start_give_the_same_bytes(tmp_path, monkeypatch) -> None:
    """With the fork server, the league's process plays the first episodes of a baseline
    league while the server starts; the files are those of one process playing everything."""
    needs(hasattr(os, "fork"), "a POSIX system (worker processes fork)")
    played_here = []
    real_play = workers.play

    def play_here(spec, settings):
        played_here.append(spec.index)
        return real_play(spec, settings)

    def slow_start(*args) -> None:  # as a cold fork server would (a warm one may be quicker)
        time.sleep(0.3)
        real_start(*args)

    real_start = workers._start_workers
    monkeypatch.setattr(workers, "play", play_here)
    monkeypatch.setattr(workers, "_start_workers", slow_start)
    monkeypatch.setattr(workers, "forks_here", lambda settings: False)  # the fork server
    _same_files(_league_files(tmp_path))
    assert played_here and played_here == list(range(len(played_here)))


FORKS = """
import sys
from league import LeagueOptions, run_league
from league.procs import workers
real, started = workers.ProcessPoolExecutor, []
def pool(*args, **kwargs):
    started.append(kwargs["mp_context"].get_start_method())
    return real(*args, **kwargs)
workers.ProcessPoolExecutor = pool
run_league(LeagueOptions(policies=("factor", "magpie", "random"), episodes=40, out=sys.argv[1],
                         seed=4, workers=2))
print(started)
"""


def test_a_baseline_league_forks_its_workers_here_with_the_same_bytes(tmp_path) -> None:
    """In a process of its own (this one has the test run's threads), a league of our
    baselines forks its workers from the league's process: the same files as one process."""
    needs(sys.platform.startswith("linux"), "Linux (a league forks its workers only there)")
    one = tmp_path / "w1"
    run_league(LeagueOptions(policies=("factor", "magpie", "random"), episodes=40,
                             out=str(one), seed=4, workers=1))
    two = tmp_path / "w2"
    done = subprocess.run([sys.executable, "-c", FORKS, str(two)], capture_output=True,
                          text=True, timeout=300, cwd=Path(__file__).parent.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['fork']"]
    _same_files([one, two])


def test_workers_are_forked_here_only_for_our_baselines_and_no_other_thread(
        monkeypatch) -> None:
    ours = Settings(policies=("factor", "magpie", "random"), turns=6)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not workers.forks_here(ours)  # a fork would copy only this thread
    finally:
        stop.set()
        other.join()
    monkeypatch.setattr(workers.threading, "active_count", lambda: 1)  # as in `guild league`
    assert workers.forks_here(ours) == sys.platform.startswith("linux")
    assert not workers.forks_here(Settings(policies=("factor", "tests.x:Policy"), turns=6))
