"""A league's worker processes and the ``llm:local`` seats they run: how many workers a league
takes by default, and the CPUs each worker's model server takes. Needs no model: nothing here
starts a server."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agents.llm import local as llm_local
from league.cli.guild import main


@pytest.mark.parametrize(("policies", "one"), [
    (("llm:local", "factor"), True),
    (("factor", "trusted:llm:local#threads=1"), True),
    (("TRUSTED:LLM:local@/models/m.gguf", "magpie"), True),
    (("llm:local@http://127.0.0.1:8080/v1", "factor"), False),  # an endpoint named local
    (("llm:smol@http://127.0.0.1:8080/v1", "factor"), False),
    (("factor", "magpie", "random"), False),
])
def test_a_league_with_a_local_model_seat_plays_in_one_worker_by_default(policies, one,
                                                                          monkeypatch):
    # Each worker would start its own model server, and each server takes the CPUs itself.
    from league import tournament

    monkeypatch.setattr(tournament.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert tournament.default_workers(policies) == (1 if one else 4)
    assert tournament.default_workers() == 4


def test_a_process_that_shares_the_cpus_gives_its_server_its_share(monkeypatch):
    # A league's workers each start a model server: together they take the CPUs once.
    monkeypatch.setattr(llm_local.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(llm_local, "_SHARERS", 1)
    assert (llm_local.default_threads(1, "admissible"), llm_local.default_threads(1)) == (4, 2)
    llm_local.share_cpus(2)
    assert (llm_local.default_threads(1, "admissible"), llm_local.default_threads(1)) == (2, 1)
    assert llm_local.default_threads(2, "admissible") == 1
    llm_local.share_cpus(8)  # more sharers than CPUs: still one thread each
    assert (llm_local.usable_cpus(), llm_local.default_threads(1, "admissible")) == (1, 1)
    for bad in (0, -1, True, 1.5, "2"):
        with pytest.raises(ValueError, match="share_cpus"):
            llm_local.share_cpus(bad)


@pytest.mark.parametrize(("policies", "workers", "share"), [
    (("llm:local", "factor"), 2, 2),
    (("trusted:llm:local#threads=1", "magpie"), 3, 3),
    (("llm:local", "factor"), 1, 1),
    (("llm:smol@http://127.0.0.1:8080/v1", "factor"), 2, 1),
    (("factor", "magpie"), 2, 1),
])
def test_league_workers_share_the_cpus_when_they_run_a_local_model(policies, workers, share):
    # The workers' own initializer, in a process of its own (it sets signals and a lifeline).
    code = ("import os\n"
            "from league.core.episode import Settings\n"
            "from league.procs import workers\n"
            f"workers._init_worker(Settings(policies={policies!r}), os.getpid(), {workers})\n"
            "from agents.llm import local\n"
            "print(local._SHARERS)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.split() == [str(share)]


def test_ray_tasks_share_the_cpus_like_worker_processes_and_anew_for_each_league():
    # A Ray worker process runs the tasks of one league after another: the share is each
    # league's own. The policies' build check is left out: it would start the model.
    code = ("from league.core.episode import Settings\n"
            "from league.procs import backends\n"
            "from agents.llm import local\n"
            "backends._policy_trouble = lambda settings: None\n"
            "for policies, workers in [(('llm:local', 'factor'), 2),\n"
            "                          (('factor', 'magpie'), 2),\n"
            "                          (('magpie', 'trusted:llm:local'), 3),\n"
            "                          (('llm:local',), 1)]:\n"
            "    assert backends._ray_chunk([], Settings(policies=policies), workers) == []\n"
            "    print(local._SHARERS)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.split() == ["2", "1", "3", "1"]


@pytest.mark.parametrize(("policies", "workers"), [("llm:local,factor", 1), ("factor,magpie", 4)])
def test_guild_league_without_workers_takes_the_default_for_its_policies(policies, workers,
                                                                         monkeypatch, tmp_path):
    import league.cli.guild as guild_cli
    from league import tournament
    from league.core.errors import LeagueError

    seen = []

    def fake_run(options, **_):
        seen.append(options.workers)
        raise LeagueError("stopped before playing")

    monkeypatch.setattr(tournament.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(guild_cli, "run_league", fake_run)
    assert main(["league", "--policies", policies, "--episodes", "1",
                 "--out", str(tmp_path / "l")]) == 2
    assert seen == [workers]
