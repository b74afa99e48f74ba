"""The sandbox's limits between seats (``league.apart.sandbox``, ``league.seat.zygote``).

What one policy's seats may not take from another's: a look at a rival's package beside its
own (a policy spec binds its own subpackage, not the package above it), the CPU (a seat that
runs many processes weighs in the scheduler as one busy process, and so does each seat of a
policy that holds several) and the memory (each seat, with all it starts, in a memory control
group of its ``--seat-memory``).  The policies
are ``tests/limit_cheats.py``'s; the helpers are ``tests/test_sandbox.py``'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import needs
from leagues import ROOT, TESTS, league_args, lines
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


def groups_of(pid: int | None) -> dict[str, str]:
    """The control group of process ``pid`` in each cgroup v1 hierarchy, by controller."""
    assert pid is not None
    found = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, group = line.split(":", 2)
        for name in controllers.split(","):
            found[name] = group
    return found


# --- a policy's files: its whole package, its rivals' files hidden ----------------------------

def test_a_spec_binds_its_top_package_and_hides_its_rivals_own_files(
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

    # a module file alone; a package, or any module in it, the top package whole (its
    # imports may reach anywhere in it: from ..common import X)
    assert bound("solo:P") == ({t / "solo.py"}, [str(t)], "solo:P")
    assert bound("pkg:P") == ({t / "pkg"}, [str(t)], "pkg:P")
    assert bound("pkg.mod:P") == ({t / "pkg"}, [str(t)], "pkg.mod:P")
    assert bound("subs.alice.bot:P")[:2] == ({t / "subs"}, [str(t)])
    assert bound("deep.a.b.m:P")[:2] == ({t / "deep"}, [str(t)])
    # nothing to bind: a registry name, a module not found
    assert bound("factor") == (set(), [], "factor")
    assert bound("nowhere.at_all:P") == (set(), [], "nowhere.at_all:P")
    # a policy's own files: its module file, or the package its module is in
    own = sandbox.own_files
    assert own("solo:P") == [t / "solo.py"] and own("pkg.mod:P") == [t / "pkg" / "mod.py"]
    assert own("subs.alice.bot:P") == own("subs.alice:P") == [t / "subs" / "alice"]
    assert own("deep.a.b.m:P") == [t / "deep" / "a" / "b"]
    assert own("ns.alice.bot:P") == [t / "ns" / "alice"]
    assert own("factor") == own("sb3:m.zip") == own("nowhere.at_all:P") == []
    # what a sandbox hides: its rivals' own files, never its own or what holds them
    rivals = sandbox.rivals_files
    assert rivals("subs.alice.bot:P", ["subs.alice.bot:P", "subs.bob:Q", "factor"]) == (
        str(t / "subs" / "bob"),)
    assert rivals("deep.a.b.m:P", ["deep.a.b.m:P", "deep.a.other:Q"]) == (
        str(t / "deep" / "a" / "other"),)
    assert rivals("subs.alice.bot:P", ["subs.alice.bot:P", "subs.alice:Q"]) == ()  # one entrant
    assert rivals("pkg.mod:P", ["pkg.mod:P", "pkg:Q"]) == ()  # Q's own package holds P's


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
        assert e["above"] == ["__init__.py", "alice", "bob"], e  # bob's folder, emptied
        assert set(e["rivals"]) == {f"bob/{name}" for name in files}, e
        assert set(e["rivals"].values()) == {"ENOENT"}, e


def test_a_policy_imports_from_the_package_above_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``proj.pols.bot`` imports ``from ..common import WAIT``: its whole project is shown."""
    monkeypatch.syspath_prepend(str(tmp_path))
    proj = tmp_path / "proj"
    (proj / "pols").mkdir(parents=True)
    (proj / "__init__.py").write_text("")
    (proj / "pols" / "__init__.py").write_text("")
    (proj / "common.py").write_text('WAIT = "I wait and watch the road."\n')
    (proj / "pols" / "bot.py").write_text(
        "from ..common import WAIT\n\n\nclass Bot:\n"
        "    def act(self, game, seat):\n        return WAIT\n")
    policy = "proj.pols.bot:Bot"
    results = league(tmp_path / "league", f"factor,{policy}")
    for r, s in seats_of(results, policy):
        assert r["faults"][s] == {} and r["fallbacks"][s] == 0, r["faultNotes"][s]


# --- CPU: a seat weighs as one busy process -------------------------------------------------

def test_a_policy_that_forks_spinners_cannot_starve_an_honest_seats_decisions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An honest Worker (a little CPU each decision) beside a Spinner whose every seat process
    leaves 32 children spinning, each in a session of its own (more with each episode, as its
    pooled processes keep theirs).  Each seat is a cpu control group of one share, its
    spinners with it, so the Worker decides in time; without them, it gets a few percent of a
    core and times out from the second episode on.  The margin: 0.05 s of CPU against a 3 s
    timeout.  Three episodes: the attack is at its full weight from the second on, and the
    third plays beside the spinners of both before it."""
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
        results = league(out, f"{worker},{spinner},factor", "--decision-timeout", "3",
                         episodes=3)
        spun = [e for _, _, e in evidence(out, spinner)]
        uids = {e["uid"] for e in spun}
        assert uids and min(uids) >= sandbox.UID_BASE, uids
        assert all(e["spinning"] == 32 for e in spun), spun  # the attack ran, every time
        seats = seats_of(results, worker)
        assert len(seats) == 6  # two a table
        for r, s in seats:
            assert r["faults"][s] == {} and r["fallbacks"][s] == 0, r["faultNotes"][s]
        assert len(reports(out, worker)) == len(seats) * TURNS
        assert not unranked(out, worker)
        left = left_after(lambda: with_uids(uids))  # the spinners end with the league
        assert left == {}, f"left behind by the sandbox's uid {uids}: {len(left)} processes"
    finally:
        kill_uids(uids)


# Spins on one CPU for the seconds it is sent, in ``argv[1]`` processes (itself and children
# in sessions of their own), once it has said it is ready; answers the CPU time they all got.
SPIN = """\
import json, os, resource, sys, time
processes, cpu = int(sys.argv[1]), int(sys.argv[2])
os.sched_setaffinity(0, {cpu})
print('{"ready":true}', flush=True)
end = time.monotonic() + json.loads(sys.stdin.readline())["seconds"]
kids = []
for _ in range(processes - 1):
    pid = os.fork()
    if pid == 0:
        os.setsid()
        while time.monotonic() < end:
            pass
        os._exit(0)
    kids.append(pid)
start = time.process_time()
while time.monotonic() < end:
    pass
spent = time.process_time() - start
for pid in kids:
    os.waitpid(pid, 0)
kids_usage = resource.getrusage(resource.RUSAGE_CHILDREN)
spent += kids_usage.ru_utime + kids_usage.ru_stime
print(json.dumps({"cpu": spent}), flush=True)
"""
SPIN_S = 4.0  # each spins this long, on one core shared by all of them


def test_each_seat_of_a_policy_weighs_as_one_busy_process_however_many_it_runs(
        tmp_path: Path) -> None:
    """Three seats of one sandbox, one of them spinning in four processes of sessions of their
    own, and a control outside every sandbox (one busy process at the top of the cpu
    hierarchy, where the seats' groups lie) spin together on one CPU: each seat gets about
    what the control gets.  Measured against the control in the same conditions, so other
    load on the machine changes nothing but the amounts.  With one cpu group for the whole
    sandbox, each single-process seat would get a sixth of the control's CPU (the three seats
    of a policy sharing one weight: an honest policy's seats time out on a busy machine); with
    no group at all, the four-process seat would get four times the control's."""
    as_root()
    files, path, _ = sandbox.policy_files(f"{L}Quiet")
    launch = sandbox.launch(files, path, (str(tmp_path),))
    cpu_group = controller(launch.cgroups, "cpu")
    needs(cpu_group is not None, "a writable cpu control group (cgroup v1, as root)")
    assert cpu_group is not None
    core = min(os.sched_getaffinity(0))
    z = seat_zygote.zygote(None, launch)
    seats: list[SeatProcess] = []
    control = None
    try:
        for processes in (1, 1, 4):
            argv = [launch.python, "-c", SPIN, str(processes), str(core)]
            seats.append(SeatProcess.forked("spin", 256, 60, launch=launch, argv=argv))
        control = subprocess.Popen(
            [sys.executable, "-c", SPIN, "1", str(core)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, start_new_session=True, text=True)
        Path(cpu_group).parent.joinpath("cgroup.procs").write_text(str(control.pid))
        assert control.stdout is not None and control.stdin is not None
        for seat in seats:
            assert json.loads(seat.receive(time.monotonic() + 60, 60)) == {"ready": True}
        assert json.loads(control.stdout.readline()) == {"ready": True}
        go = {"seconds": SPIN_S}
        for seat in seats:
            seat.send(go, None, None)
        control.stdin.write(json.dumps(go) + "\n")
        control.stdin.flush()
        got = [json.loads(seat.receive(time.monotonic() + 60, 60))["cpu"] for seat in seats]
        reference = json.loads(control.stdout.readline())["cpu"]
    finally:
        for seat in seats:
            seat.kill()
        if control is not None:
            control.kill()
            control.wait()
        z.close()
    ratios = [round(spent / reference, 2) for spent in got]
    assert reference > 0.05, (reference, got)
    assert all(0.6 <= r <= 1.6 for r in ratios), (ratios, reference)


def test_the_controllers_the_machine_lacks_are_said_in_one_line_and_the_others_are_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "memory").mkdir()  # a machine with a memory hierarchy alone
    (tmp_path / "memory" / "cgroup.procs").write_text("")
    monkeypatch.setattr(sandbox, "CGROUP_ROOT", str(tmp_path))
    sandbox._say_missing.cache_clear()
    try:
        first, second = sandbox._cgroups(["one"]), sandbox._cgroups(["two"])
        said = capsys.readouterr().err.splitlines()
    finally:
        sandbox._say_missing.cache_clear()
    assert [Path(f).parent for f in first] == [tmp_path / "memory"]
    assert first != second
    assert len(said) == 1, said  # two sandboxes, two controllers: one line
    assert "'pids', 'cpu'" in said[0] and "'memory'" not in said[0], said
    assert "process limit" in said[0] and "CPU" in said[0], said


def test_a_sandboxs_group_is_swept_only_once_it_is_old_and_empty(tmp_path: Path) -> None:
    """Each process sweeps the empty groups of sandboxes gone (a league killed with kill -9) as
    it makes its first sandbox; a league's workers do so together.  A group another process has
    just made, and not yet joined, is empty too: it is left to its maker (it was removed, and
    that sandbox ran without its memory limits).  An old empty one goes, its seats' first."""
    as_root()
    base = Path(sandbox.CGROUP_ROOT) / "memory"
    needs((base / "cgroup.procs").is_file() and os.access(base, os.W_OK),
          "a writable memory control group (cgroup v1, as root)")
    group = base / f"{sandbox.CGROUP_PREFIX}{tmp_path.name}-{os.getpid()}"
    group.mkdir()
    (group / f"{seat_zygote.SEAT_CGROUP_PREFIX}0").mkdir()
    try:
        sandbox._sweep.__wrapped__(str(base))
        assert (group / f"{seat_zygote.SEAT_CGROUP_PREFIX}0").is_dir()
        old = time.time() - sandbox.SWEEP_AGE_S - 1
        os.utime(group, (old, old))
        sandbox._sweep.__wrapped__(str(base))
        assert not group.exists()
    finally:
        for folder in (group / f"{seat_zygote.SEAT_CGROUP_PREFIX}0", group):
            with contextlib.suppress(FileNotFoundError):
                folder.rmdir()


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


def test_each_seat_is_forked_into_memory_and_cpu_groups_of_its_own_that_go_with_it(
        tmp_path: Path) -> None:
    """A seat's memory group, below the sandbox's, holds its limit; its cpu group, beside the
    sandbox's at the top of the hierarchy, one busy process's share; the zygote forks it there
    and returns to the sandbox's groups; a seat's groups are removed once it has ended (at the
    next seat's start), and the sandbox's groups and its seats' when the zygote closes."""
    as_root()
    spec = f"{L}Quiet"
    files, path, runs = sandbox.policy_files(spec)
    launch = sandbox.launch(files, path, (str(tmp_path),))
    memory, cpu = controller(launch.cgroups, "memory"), controller(launch.cgroups, "cpu")
    needs(memory is not None and cpu is not None,
          "writable memory and cpu control groups (cgroup v1, as root)")
    assert memory is not None and cpu is not None
    name = Path(memory).name
    assert Path(cpu).name == name
    z = seat_zygote.zygote(None, launch)
    seats: list[SeatProcess] = []

    def seat_groups(mb: int) -> dict[str, str]:
        seat = SeatProcess.forked(runs, mb, 60, launch=launch)
        seats.append(seat)
        assert seat.ask({"type": "build"}, 60) == b'{"ok":true}'  # it runs, and answers
        return groups_of(seat_zygote._pidfd_pid(seat._pidfd))

    def folder(hierarchy: str, group: str) -> Path:
        return Path(sandbox.CGROUP_ROOT, hierarchy, group.lstrip("/"))

    try:
        first, second = seat_groups(256), seat_groups(300)
        assert first != second
        for groups, mb in ((first, 256), (second, 300)):
            assert Path(groups["memory"]).parent == Path("/", name), groups
            limit = folder("memory", groups["memory"]) / "memory.limit_in_bytes"
            assert int(limit.read_text()) == mb << 20
            # its own weight, not a part of the sandbox's: at the top, named after the sandbox
            assert Path(groups["cpu"]).parent == Path("/"), groups
            assert groups["cpu"].startswith(f"/{name}{seat_zygote.SEAT_CPU_SEPARATOR}"), groups
            shares = folder("cpu", groups["cpu"]) / "cpu.shares"
            assert int(shares.read_text()) == sandbox.SEAT_CPU_SHARES == 1024
        zygote_groups = groups_of(z._zygote_pid())  # back in the sandbox's own
        assert (zygote_groups["memory"], zygote_groups["cpu"]) == (f"/{name}", f"/{name}")
        seats[0].kill()
        ended = [folder(h, first[h]) for h in ("memory", "cpu")]
        assert all(f.is_dir() for f in ended)
        # its pid 1 ends just after the process the league holds: the groups empty then
        assert left_after(lambda: [p for f in ended
                                   for p in (f / "cgroup.procs").read_text().split()]) == []
        seat_groups(256)  # the next start removes the ended seat's groups
        assert not any(f.exists() for f in ended)
        assert all(folder(h, second[h]).is_dir() for h in ("memory", "cpu"))  # still playing
    finally:
        for seat in seats:
            seat.kill()
        z.close()
    assert all(not Path(f).exists() for f in launch.cgroups)
    assert not list(Path(cpu).parent.glob(f"{name}*"))  # nor any seat's cpu group


def test_a_league_with_workers_leaves_no_control_group_behind(tmp_path: Path) -> None:
    """Each worker closes its zygotes when it ends, and so removes its sandboxes' groups (memory,
    pids, cpu) and its seats' (a worker leaves through os._exit: only what is registered in it
    runs then).  The sandboxes are named by the seats themselves: their cpu groups lie beside
    their sandboxes', named after them."""
    as_root()
    policy = f"{L}SeesGroups"
    needs(controller(cgroups_of(policy, tmp_path), "cpu") is not None,
          "a writable cpu control group (cgroup v1, as root)")
    out = tmp_path / "league"
    league(out, f"factor,{policy}", episodes=12, workers=2)
    got = reports(out, policy)
    names = set()
    for e in got:
        name, separator, _ = Path(e["cpu"]).name.partition(seat_zygote.SEAT_CPU_SEPARATOR)
        assert separator and name.startswith(sandbox.CGROUP_PREFIX), e
        assert e["memory"].startswith("/" + seat_zygote.SEAT_CGROUP_PREFIX), e
        names.add(name)
    assert 1 <= len(names) <= 2, names  # a sandbox per worker that played
    left = sorted(str(folder) for hierarchy in sandbox.CGROUP_CONTROLLERS for name in names
                  for folder in (Path(sandbox.CGROUP_ROOT) / hierarchy).glob(f"{name}*"))
    assert left == []


def test_a_league_stopped_by_sigterm_leaves_no_control_group_behind(tmp_path: Path) -> None:
    """SIGTERM stops a league, which stops its workers with SIGTERM: each kills its children and
    leaves through os._exit, past its finalizers, so it removes its sandboxes' groups and its
    seats' first (``league.procs.lifeline.at_death``); the league then exits 143."""
    as_root()
    policy = f"{L}SeesGroups"
    needs(controller(cgroups_of(policy, tmp_path), "cpu") is not None,
          "a writable cpu control group (cgroup v1, as root)")
    out = tmp_path / "league"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)])}
    cmd = [sys.executable, "-m", "league",
           *league_args(out, 500, "--turns", str(TURNS), "--seat-memory", "1024",
                        policies=f"factor,{policy}", workers=2)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        end = time.monotonic() + 120
        while not ((out / "results.jsonl").is_file() and len(lines(out)) >= 4):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < end, "no four episodes within 120 s"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert len(lines(out)) < 500, "the league ended before it was stopped"
    names = {Path(e["cpu"]).name.partition(seat_zygote.SEAT_CPU_SEPARATOR)[0]
             for _, _, e in evidence(out, policy)}
    assert names and all(n.startswith(sandbox.CGROUP_PREFIX) for n in names), names

    def left() -> list[str]:
        return sorted(str(folder) for hierarchy in sandbox.CGROUP_CONTROLLERS for name in names
                      for folder in (Path(sandbox.CGROUP_ROOT) / hierarchy).glob(f"{name}*"))

    assert left_after(left) == []
