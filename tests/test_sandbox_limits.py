"""The sandbox's limits between seats (``league.apart.sandbox``, ``league.seat.zygote``).

What one policy's seats may not take from another's: a look at a rival's package beside its
own (a policy spec binds its own subpackage, not the package above it), the CPU (a sandbox
that runs many processes weighs in the scheduler as one busy process) and the memory (each
seat, with all it starts, in a memory control group of its ``--seat-memory``).  The policies
are ``tests/limit_cheats.py``'s; the helpers are ``tests/test_sandbox.py``'s.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import needs
from leagues import TESTS
from test_sandbox import (
    TURNS,
    as_root,
    evidence,
    kill_uids,
    league,
    left_after,
    reports,
    seats_of,
    unranked,
    with_uids,
)

from league.apart import sandbox
from league.apart.seat_process import SeatProcess
from league.core.episode import Settings, league_policy
from league.seat import zygote as seat_zygote

needs(sys.platform.startswith("linux"), "Linux (the sandbox is Linux namespaces)")

L = "limit_cheats:"  # tests/limit_cheats.py, importable from the tests directory
CHEATS = TESTS / "limit_cheats.py"


def copy_cheats(path: Path, **constants: object) -> None:
    """``limit_cheats.py`` copied to ``path`` (its folders made), with ``constants`` appended."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = CHEATS.read_text(encoding="utf-8")
    text += "\n# set by the test\n" + "".join(f"{k} = {v!r}\n" for k, v in constants.items())
    path.write_text(text, encoding="utf-8")


def cgroups_of(policy: str, tmp_path: Path) -> tuple[str, ...]:
    """The control groups a sandbox of ``policy`` gets on this machine (a launch of its own:
    nothing is started)."""
    seat = league_policy(policy, Settings(policies=(policy,), hidden=(str(tmp_path),)))
    try:
        return seat.launch.cgroups
    finally:
        seat.close()


def controller(folders: tuple[str, ...], name: str) -> str | None:
    return next((f for f in folders if Path(f).parent == Path(sandbox.CGROUP_ROOT) / name), None)


# --- a policy's files: its own subpackage, not the package around it -----------------------

def test_a_spec_binds_its_module_its_package_or_its_subpackage_with_the_inits_above(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # where a seat started here would import from
    for name in ("solo.py", "pkg/__init__.py", "pkg/mod.py", "subs/__init__.py",
                 "subs/alice/__init__.py", "subs/alice/bot.py", "subs/bob/__init__.py",
                 "deep/__init__.py", "deep/a/__init__.py", "deep/a/b/__init__.py",
                 "deep/a/b/m.py", "deep/a/other/__init__.py", "ns/alice/__init__.py",
                 "ns/alice/bot.py", "ns/bob/__init__.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    t = tmp_path

    def bound(spec: str) -> tuple[set[Path], list[str], str]:
        files, path, runs = sandbox.policy_files(spec)
        return set(files), path, runs

    # as before: a module file alone, a top-level package (and its module) whole
    assert bound("solo:P") == ({t / "solo.py"}, [str(t)], "solo:P")
    assert bound("pkg:P") == ({t / "pkg"}, [str(t)], "pkg:P")
    assert bound("pkg.mod:P") == ({t / "pkg"}, [str(t)], "pkg.mod:P")
    # a subpackage's module, or the subpackage: that subpackage, and __init__.py above it
    alice = ({t / "subs" / "alice", t / "subs" / "__init__.py"}, [str(t)])
    assert bound("subs.alice.bot:P")[:2] == alice
    assert bound("subs.alice:P")[:2] == alice
    assert bound("deep.a.b.m:P")[:2] == ({t / "deep" / "a" / "b", t / "deep" / "__init__.py",
                                          t / "deep" / "a" / "__init__.py"}, [str(t)])
    # a namespace package above has no __init__.py: its folder is made, empty but for alice
    assert bound("ns.alice.bot:P")[:2] == ({t / "ns" / "alice"}, [str(t)])
    # a module no file holds (made by its package's __init__): the deepest package found
    assert bound("subs.alice.made:P")[:2] == alice
    # nothing to bind: a registry name, a module not found
    assert bound("factor") == (set(), [], "factor")
    assert bound("nowhere.at_all:P") == (set(), [], "nowhere.at_all:P")


@pytest.mark.parametrize("module", ["subs.alice.bot", "subs.alice"])
def test_a_policy_in_a_shared_package_sees_nothing_of_its_siblings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """Alice's and Bob's policies in one ``subs`` package: Alice's seat reads its own data and
    imports through ``subs/__init__.py``, and finds no trace of Bob's folder, source or
    credentials (nor of the league's folder beside them)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    subs = tmp_path / "subs"
    files = ("secret_bot.py", "credentials.txt", "__init__.py")
    for init in ("__init__.py", "alice/__init__.py", "bob/__init__.py"):
        (subs / init).parent.mkdir(parents=True, exist_ok=True)
        (subs / init).write_text("")
    where = subs / "alice" / ("bot.py" if module.endswith(".bot") else "__init__.py")
    copy_cheats(where, SIBLINGS=("bob",), FILES=files)
    (subs / "alice" / "data.txt").write_text("alice's table\n")
    copy_cheats(subs / "bob" / "secret_bot.py")
    (subs / "bob" / "credentials.txt").write_text("password=hunter2\n")
    alice, bob = f"{module}:ReadsSiblings", "subs.bob.secret_bot:Quiet"
    out = tmp_path / "league"
    results = league(out, f"{alice},{bob}")
    for r, s in seats_of(results, bob):  # Bob's own policy imports and plays in its sandbox
        assert r["faults"][s] == {}, r["faultNotes"][s]
    got = reports(out, alice)
    for e in got:
        assert e["own"] == "READ:14", e           # its own package's data
        assert e["init"] == "READ:0", e           # the __init__.py its import needs
        assert e["above"] == ["__init__.py", "alice"], e  # no bob, no league folder
        assert set(e["rivals"]) == {f"bob/{name}" for name in files}, e
        assert set(e["rivals"].values()) == {"ENOENT"}, e


# --- CPU: a sandbox weighs as one busy process ---------------------------------------------

def test_a_policy_that_forks_spinners_cannot_starve_an_honest_seats_decisions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An honest Worker (a little CPU each decision) beside a Spinner whose every seat process
    leaves 32 children spinning, each in a session of its own (hundreds by the last episode,
    as its pooled processes keep theirs).  Each sandbox is a cpu control group of one share,
    so the Worker decides in time; without it, it gets a few percent of a core and times out
    from the second episode on.  The margin: 0.05 s of CPU against a 3 s timeout.  (Two
    modules: the policies of one module share its sandbox, and so its share.)"""
    as_root()
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in ("lim_work", "lim_spin"):
        copy_cheats(tmp_path / f"{module}.py")
    worker, spinner = "lim_work:Worker", "lim_spin:Spinner"
    needs(controller(cgroups_of(spinner, tmp_path), "cpu") is not None,
          "a writable cpu control group (cgroup v1, as root)")
    out = tmp_path / "league"
    uids: set[int] = set()
    try:
        results = league(out, f"{worker},{spinner},factor", "--decision-timeout", "3")
        spun = [e for _, _, e in evidence(out, spinner)]
        uids = {e["uid"] for e in spun}
        assert uids and min(uids) >= sandbox.UID_BASE, uids
        assert all(e["spinning"] == 32 for e in spun), spun  # the attack ran, every time
        seats = seats_of(results, worker)
        assert len(seats) == 12
        for r, s in seats:
            assert r["faults"][s] == {} and r["fallbacks"][s] == 0, r["faultNotes"][s]
        assert len(reports(out, worker)) == len(seats) * TURNS
        assert not unranked(out, worker)
        left = left_after(lambda: with_uids(uids))  # the spinners end with the league
        assert left == {}, f"left behind by the sandbox's uid {uids}: {len(left)} processes"
    finally:
        kill_uids(uids)


def test_a_controller_the_machine_lacks_is_said_once_and_the_others_are_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    for name in ("memory", "pids"):  # a machine without a cpu hierarchy
        (tmp_path / name).mkdir()
        (tmp_path / name / "cgroup.procs").write_text("")
    monkeypatch.setattr(sandbox, "CGROUP_ROOT", str(tmp_path))
    sandbox._say_missing.cache_clear()
    try:
        first, second = sandbox._cgroups(["one"]), sandbox._cgroups(["two"])
        said = capsys.readouterr().err.splitlines()
    finally:
        sandbox._say_missing.cache_clear()
    assert [Path(f).parent for f in first] == [tmp_path / "memory", tmp_path / "pids"]
    assert first != second
    assert len(said) == 1 and "'cpu'" in said[0] and "CPU" in said[0], said


# --- memory: --seat-memory bounds a seat and all it starts ---------------------------------

def test_seat_memory_bounds_all_of_a_seats_processes_together(tmp_path: Path) -> None:
    """Four children of 100 MB each, under the 256 MB address-space limit and far under the
    sandbox's 8 GB: the seat's own memory group of --seat-memory 256 is what stops them (the
    kernel kills at least two, in every seat process), and the seat itself plays on."""
    as_root()
    policy = f"{L}SeatHog"
    needs(controller(cgroups_of(policy, tmp_path), "memory") is not None,
          "a writable memory control group (cgroup v1, as root)")
    out = tmp_path / "league"
    results = league(out, f"factor,{policy}", "--seat-memory", "256", "--decision-timeout",
                     "30", episodes=1)
    for r, s in seats_of(results, policy):
        assert r["faults"][s] == {}, r["faultNotes"][s]
    got = reports(out, policy)
    processes = {e["t"]: e for e in got}
    assert len(processes) == 3, processes  # one process per seat
    for e in processes.values():
        assert e["children"] == 4 and e["killed"] >= 2, e  # at most 2 x 100 MB held
        assert e["group"].startswith("/" + seat_zygote.SEAT_CGROUP_PREFIX), e
    assert len({e["group"] for e in processes.values()}) == 3  # a group of its own each


def test_each_seat_is_forked_into_a_memory_group_of_its_own_that_goes_with_it(
        tmp_path: Path) -> None:
    """A seat's memory group holds its limit; the zygote forks it there and returns to the
    sandbox's group; a seat's group is removed once it has ended (at the next seat's start),
    and the sandbox's groups when the zygote closes."""
    as_root()
    spec = f"{L}Quiet"
    files, path, runs = sandbox.policy_files(spec)
    launch = sandbox.launch(files, path, (str(tmp_path),))
    memory = controller(launch.cgroups, "memory")
    needs(memory is not None, "a writable memory control group (cgroup v1, as root)")
    assert memory is not None
    mine = f"/{Path(memory).name}"
    z = seat_zygote.zygote(None, launch)
    seats: list[SeatProcess] = []

    def memory_group(pid: int | None) -> str:
        assert pid is not None
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        return next(line.split(":", 2)[2] for line in lines if line.split(":", 2)[1] == "memory")

    def seat_group(mb: int) -> str:
        seat = SeatProcess.forked(runs, mb, 60, launch=launch)
        seats.append(seat)
        assert seat.ask({"type": "build"}, 60) == b'{"ok":true}'  # it runs, and answers
        return memory_group(seat_zygote._pidfd_pid(seat._pidfd))

    try:
        first, second = seat_group(256), seat_group(300)
        assert first != second
        for group, mb in ((first, 256), (second, 300)):
            assert Path(group).parent == Path(mine), group
            limit = Path(sandbox.CGROUP_ROOT, "memory", group.lstrip("/"), "memory.limit_in_bytes")
            assert int(limit.read_text()) == mb << 20
        assert memory_group(z._zygote_pid()) == mine  # back in the sandbox's own
        seats[0].kill()
        folder = Path(sandbox.CGROUP_ROOT, "memory", first.lstrip("/"))
        assert folder.is_dir()
        # its pid 1 ends just after the process the league holds: the group empties then
        assert left_after(lambda: (folder / "cgroup.procs").read_text().split()) == []
        seat_group(256)  # the next start removes the ended seat's group
        assert not folder.exists()
        assert Path(sandbox.CGROUP_ROOT, "memory", second.lstrip("/")).is_dir()  # still playing
    finally:
        for seat in seats:
            seat.kill()
        z.close()
    assert not Path(memory).exists()
    assert all(not Path(folder).exists() for folder in launch.cgroups)
