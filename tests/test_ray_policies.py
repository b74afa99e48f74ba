"""The Ray backend keeps the league's rules on a cluster: a policy module only the
driver can import is shipped to the workers and plays its own games; one that still cannot load
on a worker is refused before any episode; an address with no cluster fails fast in one line.

One local Ray instance serves the module; each league runs as a separate driver process
(``guild league --address``), whose policy directory is on its own ``PYTHONPATH`` only, so the
instance's workers (started from this process's environment) cannot import it by themselves.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import needs_module
from leagues import ROOT, league_args, one_error_line, rows

POLICIES = '''
import os

if os.environ.get("GUILD_TEST_DRIVER") != "1":  # what a module missing on the workers does
    raise ImportError("this module loads only where GUILD_TEST_DRIVER=1")


class Waiter:
    def act(self, game, seat):
        return "I wait."
'''


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """The address of a local Ray instance shared by this module's tests."""
    ray = needs_module("ray", "'guild-game[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture
def driver_only(tmp_path: Path) -> Path:
    """A directory holding ``waiting``, a policy module only the driver has."""
    d = tmp_path / "driver_only"
    d.mkdir()
    (d / "waiting.py").write_text(POLICIES.replace('os.environ.get("GUILD_TEST_DRIVER")', '"1"'))
    (d / "driver_bound.py").write_text(POLICIES)
    return d


def guild(args: list[str], pythonpath: Path, cwd: Path, **extra: str
          ) -> subprocess.CompletedProcess:
    """``guild ARGS`` as a driver process with ``pythonpath`` (and the project) to import from."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pythonpath), str(ROOT)]),
           "GUILD_TEST_DRIVER": "1", "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    env.update(extra)
    return subprocess.run([sys.executable, "-m", "league", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=240)


def test_a_driver_only_module_plays_its_own_games(cluster, driver_only, tmp_path) -> None:
    out = tmp_path / "league"
    run = guild(league_args(out, 6, "--backend", "ray", "--address", cluster,
                            policies="factor,waiting:Waiter"), driver_only, tmp_path)
    assert run.returncode == 0, run.stderr
    scores: dict[str, list[int]] = {"factor": [], "waiting:Waiter": []}
    for r in rows(out):
        assert r["fallbacks"] == [0] * 6 and not any(r["faults"])
        for name, score in zip(r["lineup"], r["scores"]):
            scores[name].append(score)
    assert set(scores["waiting:Waiter"]) == {0} and min(scores["factor"]) > 0


def test_a_policy_that_cannot_load_on_a_worker_is_refused(cluster, driver_only,
                                                          tmp_path) -> None:
    out = tmp_path / "league"
    # --sandbox none: the module loads where GUILD_TEST_DRIVER is set, which a sandbox's
    # environment never holds (it would fail the driver's own check first)
    run = guild(league_args(out, 6, "--backend", "ray", "--address", cluster, "--sandbox",
                            "none", policies="factor,driver_bound:Waiter"), driver_only,
                tmp_path)
    assert run.returncode == 2
    line = one_error_line(run.stderr)
    assert "'driver_bound:Waiter'" in line and "Ray worker" in line and "pid" in line
    replays = out / "replays"
    assert rows(out) == [] and not (replays.exists() and any(replays.iterdir()))


def test_an_address_with_no_cluster_fails_fast(driver_only, tmp_path) -> None:
    needs_module("ray", "'guild-game[ray]'")
    started = time.perf_counter()
    run = guild(league_args(tmp_path / "league", 6, "--backend", "ray", "--address",
                            "127.0.0.1:1"), driver_only, tmp_path)
    assert time.perf_counter() - started < 30
    assert run.returncode == 2
    assert "no Ray cluster at 127.0.0.1:1" in one_error_line(run.stderr)


def test_a_running_cluster_without_address_says_what_to_do(cluster, driver_only,
                                                            tmp_path) -> None:
    run = guild(league_args(tmp_path / "league", 6, "--backend", "ray"), driver_only, tmp_path,
                RAY_ADDRESS=cluster)
    assert run.returncode == 2
    assert "--address auto" in one_error_line(run.stderr)
