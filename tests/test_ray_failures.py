"""The Ray backend stops a league the way the local one does, whatever Ray reports: a policy's
Ctrl-C is an interruption (exit 130), SIGTERM a termination (143, one line, though ``ray.init``
installs handlers of its own), a dead node or any other Ray failure one line with the resume
hint (exit 1); never a traceback, and no Ray process is left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import needs, needs_module
from leagues import ROOT, league_args

from league.core.errors import LeagueError
from league.procs import backends
from league.procs.backends import WorkerDiedError

RESUME = "finished episodes are kept, run the same command again to resume"

POLICIES = '''
import time


class Interrupter:
    def act(self, game, seat):
        raise KeyboardInterrupt


class Slow:
    def act(self, game, seat):
        time.sleep(0.01)
        return "I wait."
'''


@pytest.fixture
def exceptions() -> Any:
    return needs_module("ray.exceptions", "'guild-game[ray]'")


def _ray_raising(exceptions: Any, error: BaseException) -> Any:
    """A stand-in for the ``ray`` module whose ``get`` raises ``error``."""
    def get(ref: Any) -> Any:
        raise error
    return types.SimpleNamespace(get=get, exceptions=exceptions)


def _task_error(exceptions: Any, cause: BaseException) -> BaseException:
    """What ``ray.get`` raises for a task that raised ``cause``."""
    return exceptions.RayTaskError("_ray_chunk", "Traceback (most recent call last):\n  ...",
                                   cause).as_instanceof_cause()


def test_a_task_a_policy_interrupted_stops_the_league_as_ctrl_c(exceptions: Any) -> None:
    # Ray reports a KeyboardInterrupt raised in a task as the task's cancellation
    error = _task_error(exceptions, exceptions.TaskCancelledError())
    with pytest.raises(KeyboardInterrupt):
        backends._get(_ray_raising(exceptions, error), "ref")


@pytest.mark.parametrize("make, named", [
    (lambda x: x.NodeDiedError("Task failed because the node it was running on is dead.\n"
                               "more"), "NodeDiedError: Task failed because the node"),
    (lambda x: x.ObjectLostError("ab" * 14, None, ""), "ObjectLostError"),
    (lambda x: x.RaySystemError(RuntimeError("gcs gone")), "RaySystemError"),
    (lambda x: _task_error(x, ValueError("boom\nsecond line")), "ValueError: boom"),
])
def test_any_other_ray_failure_is_one_line_that_keeps_the_episodes(exceptions: Any, make: Any,
                                                                   named: str) -> None:
    with pytest.raises(WorkerDiedError) as got:
        backends._get(_ray_raising(exceptions, make(exceptions)), "ref")
    text = str(got.value)
    assert named in text and "\n" not in text and "\x1b" not in text and len(text) < 300


def test_a_refusal_raised_in_a_task_stays_a_refusal(exceptions: Any) -> None:
    error = _task_error(exceptions, LeagueError("policy 'x' refused"))
    with pytest.raises(LeagueError, match="^policy 'x' refused$"):
        backends._get(_ray_raising(exceptions, error), "ref")


class _TermError(Exception):
    """Raised by the league's stand-in SIGTERM handler."""


@pytest.fixture
def handlers() -> Iterator[tuple[Any, Any]]:
    """A SIGTERM and a SIGINT handler of the league's, put back as they were afterwards."""
    def on_term(signum: int, frame: Any) -> None:
        raise _TermError("SIGTERM")

    def on_int(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_term), signal.signal(signal.SIGINT, on_int)
    try:
        yield on_term, on_int
    finally:
        signal.signal(signal.SIGTERM, old[0])
        signal.signal(signal.SIGINT, old[1])


def _fake_ray(then: BaseException | None) -> types.SimpleNamespace:
    """``ray`` whose ``init`` installs handlers of its own, as Ray's does, then raises ``then``
    (None: starts); ``shutdowns`` counts ``shutdown`` calls."""
    fake = types.SimpleNamespace(shutdowns=0)

    def init(**kw: Any) -> None:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if then is not None:
            raise then

    def shutdown() -> None:
        fake.shutdowns += 1

    fake.init, fake.shutdown = init, shutdown
    return fake


def test_ray_init_leaves_the_leagues_signal_handlers(handlers: tuple[Any, Any]) -> None:
    ray = _fake_ray(None)
    backends._init(ray, 1, None, [])
    assert signal.getsignal(signal.SIGTERM) is handlers[0]
    assert signal.getsignal(signal.SIGINT) is handlers[1]
    assert ray.shutdowns == 0


@pytest.mark.parametrize("then, raised", [(KeyboardInterrupt(), KeyboardInterrupt),
                                          (RuntimeError("no room"), LeagueError)])
def test_ray_stopped_while_starting_is_shut_down(handlers: tuple[Any, Any], then: BaseException,
                                                 raised: type) -> None:
    ray = _fake_ray(then)
    with pytest.raises(raised):
        backends._init(ray, 1, None, [])
    assert ray.shutdowns >= 1
    assert signal.getsignal(signal.SIGTERM) is handlers[0]


def test_a_sigterm_rays_handler_caught_while_starting_reaches_the_league(
        handlers: tuple[Any, Any]) -> None:
    ray = _fake_ray(SystemExit(signal.SIGTERM))  # what Ray's own SIGTERM handler raises
    with pytest.raises(_TermError):
        backends._init(ray, 1, None, [])
    assert ray.shutdowns >= 1
    assert signal.getsignal(signal.SIGTERM) is handlers[0]


# --- whole leagues on a local Ray instance of their own -----------------------------------

@pytest.fixture
def start(tmp_path: Path) -> Iterator[Any]:
    """``start(names, episodes)``: ``guild league --backend ray`` (its own Ray instance) in a
    session of its own, with a policy module ``stops``; whatever is left of it is killed."""
    needs_module("ray", "'guild-game[ray]'")
    needs(sys.platform.startswith("linux"), "Linux (the league's processes are read with ps)")
    policies = tmp_path / "pol"
    policies.mkdir()
    (policies / "stops.py").write_text(POLICIES)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(policies), str(ROOT)]),
           "RAY_USAGE_STATS_ENABLED": "0", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("RAY_ADDRESS", None)
    started: list[subprocess.Popen] = []

    def run(names: str, episodes: int) -> subprocess.Popen:
        args = league_args(tmp_path / "league", episodes, "--backend", "ray", policies=names)
        p = subprocess.Popen([sys.executable, "-m", "league", *args], env=env, cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        started.append(p)
        return p

    try:
        yield run
    finally:
        for p in started:
            if _group(p.pid):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _group(pgid: int) -> list[str]:
    table = subprocess.run(["ps", "-ww", "-eo", "pid,pgid,args"], capture_output=True,
                           text=True)
    return [line.strip() for line in table.stdout.splitlines()[1:]
            if line.split()[1] == str(pgid)]


def _wait_for_episodes(p: subprocess.Popen, out: Path) -> None:
    results = out / "results.jsonl"
    deadline = time.monotonic() + 200
    while not (results.exists() and results.read_text().strip()):
        assert p.poll() is None, p.communicate()[1]
        assert time.monotonic() < deadline, "no episode finished"
        time.sleep(0.2)


def _ended(p: subprocess.Popen) -> tuple[int, str]:
    """The exit code and last stderr line, once no process of the league's group is left."""
    try:
        _, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the league did not stop within 120 s")
    deadline = time.monotonic() + 30
    while _group(p.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _group(p.pid)
    assert not left, f"left behind: {left}"
    assert "Traceback" not in err, err
    return p.returncode, err.strip().splitlines()[-1]


def test_a_policys_ctrl_c_interrupts_a_ray_league(start: Any) -> None:
    p = start("factor,trusted:stops:Interrupter", 6)
    code, last = _ended(p)
    assert (code, last) == (130, f"guild league: interrupted; {RESUME}")


# 40 episodes of a slow policy: chunks of two (league.procs.workers.chunk_size), so the first
# result is written soon after Ray starts, and the other 38 episodes keep the league busy for
# many seconds more, ample time to stop it while its tasks run.
RUNNING = 40


def test_sigterm_stops_a_ray_league_in_one_line(start: Any, tmp_path: Path) -> None:
    p = start("factor,trusted:stops:Slow", RUNNING)
    _wait_for_episodes(p, tmp_path / "league")
    os.kill(p.pid, signal.SIGTERM)  # the league only, as a scheduler may
    code, last = _ended(p)
    assert (code, last) == (143, f"guild league: terminated (SIGTERM); {RESUME}")


def test_a_dead_ray_node_ends_the_league_in_one_line(start: Any, tmp_path: Path) -> None:
    p = start("factor,trusted:stops:Slow", RUNNING)
    _wait_for_episodes(p, tmp_path / "league")
    raylets = [line for line in _group(p.pid) if line.split()[2].endswith("raylet/raylet")]
    assert raylets, _group(p.pid)
    for line in raylets:
        os.kill(int(line.split()[0]), signal.SIGKILL)
    code, last = _ended(p)
    assert code == 1 and last.startswith("guild league: error: ") and last.endswith(RESUME), \
        (code, last)
