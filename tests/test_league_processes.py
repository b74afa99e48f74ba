"""A league's processes die with it: after ``kill -9`` or SIGTERM of ``guild
league`` no worker, fork server, resource tracker or seat process is left; SIGTERM keeps what
is done, says so in one line and exits 143, and a rerun completes the same bytes; every numeric
option is checked before anything is written.

Every process a test league starts is found by a marker in its environment, which they all
inherit (fork server, resource tracker, workers, seat processes in sessions of their own).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import HeldLock, needs
from leagues import ROOT, TESTS, F, league_args, lines, one_error_line, same_replays, timeless

from league.cli.guild import main
from league.core.errors import LeagueError
from league.tournament import LeagueOptions, check_options
from sim.rules.world import MAX_TURNS

needs(sys.platform.startswith("linux"), "Linux (these tests read /proc for the league's processes)")

MARK = "GUILD_TEST_LEAGUE_MARK"


def marked(mark: str) -> dict[int, str]:
    """``{pid: command line}`` of the live processes whose environment carries ``mark``."""
    found = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            env = (proc / "environ").read_bytes()
            if f"{MARK}={mark}".encode() not in env.split(b"\0"):
                continue
            if (proc / "stat").read_text().rpartition(")")[2].split()[0] == "Z":
                continue  # a zombie is dead; only its parent's wait is missing
            found[int(proc.name)] = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):  # ended while we looked, or not ours to read
            continue
    return found


def start(out: Path, episodes: int, policies: str, mark: str, *extra: str
          ) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)]),
           "GUILD_TEST_SLOW": "0.01", MARK: mark}
    # Seats without a sandbox: these tests find every process of the league by an environment
    # mark, which a sandboxed seat does not inherit (tests/test_sandbox.py covers those).
    cmd = [sys.executable, "-m", "league", *league_args(out, episodes, "--turns", "6",
                                                        "--sandbox", "none", *extra,
                                                        policies=policies, seed=3)]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_until(what: str, test, proc: subprocess.Popen, seconds: float = 30) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if test():
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    pytest.fail(f"not {what} within {seconds} s")


def gone(mark: str, seconds: float = 5) -> dict[int, str]:
    """The processes still carrying ``mark`` after ``seconds`` (empty once all have ended)."""
    end = time.monotonic() + seconds
    while (left := marked(mark)) and time.monotonic() < end:
        time.sleep(0.1)
    return left


def cleanup(mark: str) -> None:
    for pid in marked(mark):  # what a failing test left: only processes it started
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def test_kill_9_of_the_league_takes_workers_fork_server_and_seats_along(tmp_path) -> None:
    """Sleeper seats sleep 30 s per decision in seat processes of their own session: only the
    worker that started them can end them when the league is killed mid-decision."""
    mark = uuid.uuid4().hex
    proc = start(tmp_path / "k9", 12, f"factor,{F}Sleeper", mark)
    try:
        # seats are forked from a zygote per worker and share its command line
        wait_until("seat processes running", lambda: sum(
            "league.seat.zygote" in c for c in marked(mark).values()) >= 3, proc)
        before = marked(mark)
        assert any("forkserver" in c for c in before.values())
        os.kill(proc.pid, signal.SIGKILL)  # the league alone, as the OOM killer would
        proc.communicate(timeout=10)
        assert gone(mark) == {}, f"left behind: {before}"
    finally:
        cleanup(mark)


def test_kill_9_of_a_baseline_league_takes_its_forked_workers_along(tmp_path) -> None:
    """A league of our baselines forks its workers from its own process (no fork server):
    they too end with it."""
    mark = uuid.uuid4().hex
    proc = start(tmp_path / "k9b", 100_000, "factor,magpie", mark)
    try:
        out = tmp_path / "k9b" / "results.jsonl"
        wait_until("episodes recorded by the workers", lambda: out.exists() and len(
            out.read_text().splitlines()) >= 200, proc)
        before = marked(mark)
        assert not any("forkserver" in c for c in before.values())
        assert len(before) >= 3  # the league and its two workers
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)
        assert gone(mark) == {}, f"left behind: {before}"
    finally:
        cleanup(mark)


def test_sigterm_keeps_what_is_done_exits_143_and_a_rerun_matches(tmp_path) -> None:
    mark, policies, total = uuid.uuid4().hex, f"factor,{F}Slow", 18
    out = tmp_path / "term"
    proc = start(out, total, policies, mark)
    try:
        wait_until("4 episodes finished", lambda: (out / "results.jsonl").exists() and len(
            lines(out)) >= 4, proc)
        os.kill(proc.pid, signal.SIGTERM)  # `kill PID`: the league alone
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 143, err
        assert "Traceback" not in err
        said = [x for x in err.splitlines() if "terminated" in x]
        assert said == ["guild league: terminated (SIGTERM); finished episodes are kept, run "
                        "the same command again to resume"], err
        assert err.splitlines()[-1] == said[0]
        kept = lines(out)
        assert 4 <= len(kept) < total
        assert gone(mark) == {}
    finally:
        cleanup(mark)
    # the same command finishes it: the same bytes as a league never interrupted
    rerun = start(out, total, policies, mark)
    _, err = rerun.communicate(timeout=60)
    assert rerun.returncode == 0, err
    whole = tmp_path / "whole"
    assert start(whole, total, policies, mark).communicate(timeout=60) is not None
    assert lines(out)[:len(kept)] == kept
    assert timeless([json.loads(x) for x in lines(out)]) == timeless(
        [json.loads(x) for x in lines(whole)])
    assert same_replays(out, whole)
    assert (out / "ladder.json").read_bytes() == (whole / "ladder.json").read_bytes()
    assert main(["verify", str(out)]) == 0


class _LockingProgress:
    """tqdm as a stop can break it (``conftest.HeldLock``): the signal arrives inside its
    update at the second finished episode; ``close`` needs the lock again."""

    held: HeldLock  # (set by the test)

    def __init__(self, total: int) -> None:
        self.done = 0

    def update(self) -> None:
        self.done += 1
        if self.done == 2:
            self.held.signal_inside()

    def close(self) -> None:
        self.held.check_free()


@pytest.mark.parametrize("signum, code, how", [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                               (signal.SIGINT, 130, "interrupted")])
def test_a_stop_inside_the_progress_bar_waits_for_its_end(tmp_path, monkeypatch, capsys,
                                                          signum, code, how) -> None:
    import league.cli.guild as cli

    monkeypatch.setattr(_LockingProgress, "held", HeldLock(signum), raising=False)
    monkeypatch.setattr(cli, "Progress", _LockingProgress)
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    out = tmp_path / "league"
    assert main(league_args(out, 12, workers=1)) == code
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (f"guild league: {how}; finished episodes are kept, run "
                                    "the same command again to resume"), err
    assert 2 <= len(lines(out)) < 12
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    monkeypatch.undo()
    assert main(league_args(out, 12, workers=1)) == 0  # the same command finishes it
    assert len(lines(out)) == 12 and main(["verify", str(out)]) == 0


def test_a_league_begun_with_ctrl_c_ignored_lets_it_pass(tmp_path, monkeypatch) -> None:
    """A shell's background job starts with SIGINT ignored: a Ctrl-C meant for the shell does
    not stop the league."""
    import league.cli.guild as cli

    class Interrupting:
        def __init__(self, total: int) -> None:
            self.done = 0

        def update(self) -> None:
            self.done += 1
            if self.done == 2:
                signal.raise_signal(signal.SIGINT)

        def close(self) -> None:
            pass

    monkeypatch.setattr(cli, "Progress", Interrupting)
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        out = tmp_path / "league"
        assert main(league_args(out, 6, workers=1)) == 0
        assert len(lines(out)) == 6
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize(("option", "value", "says"), [
    ("--episodes", str(10**29), "--episodes must be 1..1000000; got a 30-digit number"),
    ("--episodes", "0", "--episodes must be 1..1000000; got 0"),
    ("--turns", str(MAX_TURNS + 1), f"--turns must be 6..{MAX_TURNS}; got {MAX_TURNS + 1}"),
    ("--seed", str(-(10**30)), "--seed must be"),
    ("--workers", str(10**20), "--workers must be 1..1024"),
    ("--decision-timeout", "1e300", "at most 1e+06"),
    ("--episode-timeout", "1e400", "at most 1e+06"),
])
def test_numeric_options_are_checked_before_anything_is_written(tmp_path, capsys, option,
                                                                value, says) -> None:
    out = tmp_path / "league"
    args = league_args(out, 6)
    if option == "--episodes":
        args[args.index("--episodes") + 1] = value
    else:
        args += [option, value]
    assert main(args) == 2
    assert says in one_error_line(capsys.readouterr().err)
    assert not out.exists()


def test_turns_are_bounded_by_the_rules_constant() -> None:
    check_options(LeagueOptions(policies=("factor",), episodes=1, out="-", turns=MAX_TURNS))
    with pytest.raises(LeagueError, match=f"--turns must be 6..{MAX_TURNS}"):
        check_options(LeagueOptions(policies=("factor",), episodes=1, out="-",
                                    turns=MAX_TURNS + 1))


class _RunningCluster:
    """What ``import ray`` gives while ``ray start --head`` runs here: ``ray.init(num_cpus=...)``
    refuses, as Ray 2.x does (checked against a real cluster when this was written)."""

    def is_initialized(self) -> bool:
        return False

    def init(self, **kw: object) -> None:
        raise ValueError("When connecting to an existing cluster, num_cpus and num_gpus must "
                         "not be provided.")

    def shutdown(self) -> None:
        raise AssertionError("nothing was started")


def test_a_running_ray_cluster_without_address_is_refused_before_writing(
        tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", _RunningCluster())
    out = tmp_path / "league"
    assert main(league_args(out, 6, "--backend", "ray")) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "a Ray cluster already runs here" in line and "--address auto" in line
    assert not out.exists()
