"""Hostile tests of the sandbox a league runs untrusted seats in (``league.apart.sandbox``).

Each test plays a small real league (``league.cli.guild``) with a cheat of
``tests/sandbox_cheats.py`` (or an ``exec:`` program) that attacks the machine from inside its
seat: reads the league's process, gains privileges, reads a root-only file, writes outside its
scratch, signals the league, leaves a daemon, forks a bomb, fills its disks, closes its output,
sleeps, remembers a town across rotations, phones out.  Each asserts that the attack failed,
from the evidence the cheat played back (the notes of its decisions, kept in the replays, or
its fault note), and that the league finished with all its results.  The last test is an
honest policy that the sandbox's limits must not fault.

Processes of a sandbox are found by their uid (``league.apart.sandbox.UID_BASE`` and up: a league
that runs as root gives each sandbox a uid of its own); a cheat reports its uid, so a test
looks only at its own sandbox's processes even when other tests run beside it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import needs
from leagues import ROOT, TESTS, league_args, rows

from league.apart import sandbox
from league.cli.guild import main
from league.core.episode import APART_DECISION_TIMEOUT, Settings, league_policy
from league.seat.zygote import SHM_MB

needs(sys.platform.startswith("linux"), "Linux (the sandbox is Linux namespaces)")

C = "sandbox_cheats:"  # tests/sandbox_cheats.py, importable from the tests directory
CHEATS = TESTS / "sandbox_cheats.py"
TURNS = 6
ALLOWED_ENV = {"PATH", "HOME", "TMPDIR", "LANG", "MALLOC_ARENA_MAX", "PYTHONDONTWRITEBYTECODE",
               "PYTHONNOUSERSITE",
               "PYTHONPATH", *sandbox.PASSED_ENV}
MB = 1 << 20


# --- helpers ----------------------------------------------------------------------------------

def as_root() -> None:
    needs(os.getuid() == 0, "a league run as root (only then does each sandbox get a uid of "
                            "its own; CI runs as root)")


def copy_cheats(folder: Path, module: str, package: bool = False, **constants: object) -> Path:
    """``sandbox_cheats.py`` copied as ``folder/module.py`` (or the package ``folder/module``),
    with ``constants`` appended; ``folder`` must be on ``sys.path`` (``monkeypatch``)."""
    text = CHEATS.read_text(encoding="utf-8")
    text += "\n# set by the test\n" + "".join(f"{k} = {v!r}\n" for k, v in constants.items())
    if package:
        (folder / module).mkdir()
        path = folder / module / "__init__.py"
    else:
        path = folder / f"{module}.py"
    path.write_text(text, encoding="utf-8")
    return path


def league(out: Path, policies: str, *extra: str, episodes: int = 6, workers: int = 1
           ) -> list[dict]:
    """Play a league; assert it finished (exit 0, every episode in results.jsonl)."""
    code = main(league_args(out, episodes, "--turns", str(TURNS), "--seat-memory", "1024",
                            *extra, policies=policies, workers=workers))
    assert code == 0
    got = rows(out)
    assert [r["index"] for r in got] == list(range(episodes))
    assert all((out / "replays" / f"{r['id']}.json").is_file() for r in got)
    return got


def seats_of(results: list[dict], policy: str) -> list[tuple[dict, int]]:
    return [(r, s) for r in results for s, name in enumerate(r["lineup"]) if name == policy]


def evidence(out: Path, policy: str) -> list[tuple[dict, dict, dict]]:
    """``(row, act event, report)`` for every decision ``policy``'s seats made themselves: the
    JSON its cheat put in the decision's notes (``sandbox_cheats.report``)."""
    found = []
    for r in rows(out):
        payload = json.loads((out / "replays" / f"{r['id']}.json").read_text(encoding="utf-8"))
        mine = {s for s, name in enumerate(payload["policyNames"]) if name == policy}
        for ev in payload["events"]:
            if ev.get("kind") == "act" and ev["seat"] in mine and not ev["scripted"]:
                found.append((r, ev, json.loads(ev["text"])))
    return found


def reports(out: Path, policy: str) -> list[dict]:
    """Every decision's report; asserts that every decision of the policy's seats made one
    (its cheat ran to the end and answered in time, every turn)."""
    got = evidence(out, policy)
    seats = seats_of(rows(out), policy)
    assert len(got) == len(seats) * TURNS, [r["faultNotes"][s] for r, s in seats]
    return [e for _, _, e in got]


def played(tmp_path: Path, cheat: str) -> list[dict]:
    """The reports of a league of factor and the cheat ``sandbox_cheats.CHEAT``."""
    out = tmp_path / "league"
    league(out, f"factor,{C}{cheat}")
    return reports(out, f"{C}{cheat}")


def unranked(out: Path, policy: str) -> bool:
    ladder = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    entry = next(p for p in ladder["policies"] if p["policy"] == policy)
    return entry["ranked"] is False and entry["rank"] is None


def processes() -> dict[int, dict]:
    """Every live process: ``{pid: {ppid, uid, state, start, cmd}}`` (``start``: field 22 of
    ``/proc/PID/stat``, which tells a process from a later one with the same pid)."""
    found = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            stat = (proc / "stat").read_text()
            status = (proc / "status").read_text()
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):  # ended while we looked
            continue
        fields = stat.rpartition(")")[2].split()  # fields 3.. of stat
        uid = int(re.search(r"^Uid:\s+(\d+)", status, re.M).group(1))
        found[int(proc.name)] = {"ppid": int(fields[1]), "uid": uid, "state": fields[0],
                                 "start": int(fields[19]), "cmd": cmd[:120]}
    return found


def with_uids(uids: set[int]) -> dict[int, dict]:
    """The live processes (zombies too: a zombie no one reaps is left behind as well) whose
    real uid is one of ``uids``."""
    return {pid: p for pid, p in processes().items() if p["uid"] in uids}


def descendants(root: int) -> dict[int, dict]:
    procs = processes()
    out: dict[int, dict] = {}
    for pid, p in procs.items():
        seen, up = set(), p["ppid"]
        while up and up not in seen:
            if up == root:
                out[pid] = p
                break
            seen.add(up)
            up = procs.get(up, {}).get("ppid", 0)
    return out


def left_after(test, seconds: float = 10.0) -> dict[int, dict]:
    """What ``test()`` still finds after up to ``seconds`` (empty as soon as it finds none)."""
    end = time.monotonic() + seconds
    while (left := test()) and time.monotonic() < end:
        time.sleep(0.1)
    return left


def kill_uids(uids: set[int]) -> None:
    """Clean up after a failing test: only processes of its own sandbox's uids."""
    if not uids or min(uids) < sandbox.UID_BASE:
        return
    for pid in with_uids(uids):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# --- 1. the league's process ------------------------------------------------------------------

def test_a_seat_sees_no_other_process_and_nothing_of_the_leagues_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GUILD_TEST_SECRET", "s3cret")
    monkeypatch.syspath_prepend(str(tmp_path))
    league_pid = os.getpid()  # --workers 1: the league plays in this process
    copy_cheats(tmp_path, "sbx_reads", LEAGUE_PID=league_pid)
    out = tmp_path / "league"
    policy = "sbx_reads:ReadsLeague"
    results = league(out, f"factor,{policy}")
    for r, s in seats_of(results, policy):
        assert r["faults"][s] == {} and r["fallbacks"][s] == 0, r["faultNotes"][s]
    for e in reports(out, policy):
        assert e["me"] == 1 and e["pids"] == [1], e  # pid 1 of its own pid namespace, alone
        assert not e["leaked"], e
        assert "READ" not in e["tried"].values(), e  # no other process's environ, cmdline, mem
        for name in ("environ", "cmdline", "mem"):  # the league's pid names nothing there
            assert e["tried"][f"{league_pid}/{name}"] == "ENOENT", e
            assert e["tried"][f"0/{name}"] == "ENOENT", e  # its parent is outside its namespace
        # only what the sandbox passes (PWD is what /bin/sh exports: "/", where it started)
        assert set(e["env"]) <= ALLOWED_ENV | {"PWD"}, e["env"]
        assert "GUILD_TEST_SECRET" not in e["env"] and e["pwd"] in (None, "/"), e


# --- 2. privileges ----------------------------------------------------------------------------

def test_a_seat_has_no_capability_and_an_unprivileged_uid(tmp_path: Path) -> None:
    got = played(tmp_path, "Privileges")
    for e in got:
        assert set(e["caps"].values()) == {"0000000000000000"}, e  # CapEff, CapPrm, CapBnd...
        assert e["nnp"] == "1", e
        assert e["uid"] != 0 and e["euid"] != 0 and e["gid"] != 0 and 0 not in e["groups"], e
        if os.getuid() == 0:  # a league run as root runs its sandbox under a uid of its own
            assert sandbox.UID_BASE <= e["uid"] < sandbox.UID_BASE + sandbox.UID_SPAN, e
            assert e["uid"] == e["euid"] == e["gid"], e
        assert "OK" not in e["tried"].values(), e
    assert len({e["uid"] for e in got}) == 1  # one sandbox for the policy in this process


# --- 3. a file only root may read -------------------------------------------------------------

def test_a_root_only_file_in_the_policys_own_package_stays_unreadable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    as_root()
    monkeypatch.syspath_prepend(str(tmp_path))
    init = copy_cheats(tmp_path, "sbx_secret", package=True)
    secret = init.parent / "secret.txt"
    secret.write_text("the league's key\n")
    secret.chmod(0o600)
    out = tmp_path / "league"
    policy = "sbx_secret:ReadsSecret"
    league(out, f"factor,{policy}")
    for e in reports(out, policy):
        assert e["seen"] is True, e  # the file is there, in its bound package folder...
        assert e["read"] == "EACCES", e  # ...and stays unreadable
        assert e["chmod"] in ("EROFS", "EPERM"), e
    assert secret.stat().st_mode & 0o777 == 0o600


# --- 4. writing outside -----------------------------------------------------------------------

def _no_write_outside(e: dict, folder: Path | None = None) -> None:
    wrote = dict(e["wrote"])
    assert wrote.pop("scratch") == "OK", e  # the control: its own scratch takes a write
    if folder is not None and Path("/tmp") in folder.parents:
        # the policy's folder lies under /tmp, which is the seat's own: a write there lands
        # in the seat's tmpfs (the caller checks that nothing reached the real folder)
        wrote.pop("pkg")
    assert "OK" not in wrote.values(), e


def test_a_seat_writes_nowhere_but_its_scratch_and_never_sees_the_leagues_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "league"
    copy_cheats(tmp_path, "sbx_writes", OUT=str(out))
    policy = "sbx_writes:WritesOutside"
    league(out, f"factor,{policy}")
    for e in reports(out, policy):
        _no_write_outside(e, tmp_path)
        assert e["out"] == e["peek"] == "ENOENT", e  # the league's folder is not in there
        assert e["replays"] == 0, e
    assert not (tmp_path / "x").exists() and not (out / "x").exists()
    assert not (ROOT / "x").exists() and not (ROOT / "agents" / "x").exists()
    assert all(json.loads(x) for x in (out / "results.jsonl").read_text().splitlines())


@pytest.mark.parametrize("workers", [1, 2])
def test_the_leagues_folder_is_hidden_even_inside_the_policys_own_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    """A new league: --out does not exist yet when the league checks its policies (in a
    sandbox of its own, before it makes the folder), and must be hidden all the same."""
    monkeypatch.syspath_prepend(str(tmp_path))
    package = tmp_path / f"sbx_pkgout{workers}"
    out = package / "league"  # under the package folder, which the sandbox shows
    copy_cheats(tmp_path, package.name, package=True, OUT=str(out))
    policy = f"{package.name}:WritesOutside"
    results = league(out, f"factor,{policy}", workers=workers)
    for e in reversed(reports(out, policy)):  # the last episodes' first: the most to see
        # an empty folder covers the league's: no results, no replays (whose towns are the
        # next rotations' towns) to read
        assert e["out"] == [] and e["peek"] == "ENOENT" and e["replays"] == 0, e
        _no_write_outside(e)
    assert not (package / "x").exists() and not (out / "x").exists()
    assert not (out / "replays" / "x").exists()
    assert [json.loads(x)["id"] for x in (out / "results.jsonl").read_text().splitlines()] == [
        r["id"] for r in results]
    assert (out / "ladder.json").is_file()


def test_the_folder_of_a_league_resumed_inside_the_policys_package_is_hidden(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same with --out there before the league starts (a resumed league)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    package = tmp_path / "sbx_pkgres"
    out = package / "league"
    copy_cheats(tmp_path, package.name, package=True, OUT=str(out))
    out.mkdir()
    policy = f"{package.name}:WritesOutside"
    league(out, f"factor,{policy}")
    for e in reversed(reports(out, policy)):
        assert e["out"] == [] and e["peek"] == "ENOENT" and e["replays"] == 0, e
        _no_write_outside(e)


# --- 5. signals -------------------------------------------------------------------------------

def test_a_seat_that_signals_every_pid_it_can_name_stops_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    copy_cheats(tmp_path, "sbx_kills", LEAGUE_PID=os.getpid())
    out = tmp_path / "league"
    sweeps, group = "sbx_kills:KillsEveryone", "sbx_kills:KillsOwnGroup"
    # two workers: the league, its fork server and its workers all must survive; four
    # episodes, each with fresh seat processes (none plays the same town twice) that attack
    # anew, give each worker its share of attacks and episodes after them
    results = league(out, f"factor,{sweeps},{group}", episodes=4, workers=2)
    for r, s in seats_of(results, "factor"):  # the honest seats did not notice
        assert r["faults"][s] == {} and r["fallbacks"][s] == 0, r
    for r, s in seats_of(results, sweeps):
        assert r["faults"][s] == {} and r["fallbacks"][s] == 0, r["faultNotes"][s]
    for e in reports(out, sweeps):
        assert e["me"] == 1, e
        # what "succeeded" reached only itself: its own pid 1 (immune to its own SIGSTOP and
        # SIGKILL) and every process it may signal (-1: none but itself, in its namespace)
        assert set(e["sent"]) <= {-1, 1}, e
        assert set(e["errors"]) == {"ESRCH"}, e  # the league's pid names nothing there
    # the process group reaches the seat's keeper (outside its pid namespace, its own
    # sandbox's): at worst the seat ends itself, a crash of its own
    for r, s in seats_of(results, group):
        assert set(r["faults"][s]) <= {"crashed"}, r["faultNotes"][s]
    assert main(["verify", str(out)]) == 0


# --- 6. a daemon ------------------------------------------------------------------------------

def test_a_daemon_a_seat_leaves_ends_with_the_league(
        tmp_path: Path) -> None:
    as_root()
    out = tmp_path / "league"
    policy = f"{C}LeavesDaemon"
    uids: set[int] = set()
    try:
        league(out, f"factor,{policy}")
        got = reports(out, policy)
        uids = {e["uid"] for e in got}
        assert all(u >= sandbox.UID_BASE for u in uids), uids
        for e in got:  # the daemon ran, in the seat's namespace, beside its pid 1
            assert e["alive"] and e["daemon"] in e["pids"] and len(e["pids"]) >= 2, e
        left = left_after(lambda: with_uids(uids))
        assert left == {}, f"left behind by the sandbox's uid {uids}: {left}"
    finally:
        kill_uids(uids)


# --- 7. a fork bomb ---------------------------------------------------------------------------

BOMB = re.compile(r"BOMB uid=(\d+) procs=(\d+) forked=(\d+) failed=(\d+) err=(\S+)")


def test_a_sandboxs_processes_share_one_memory_limit(tmp_path: Path, monkeypatch) -> None:
    """Twelve children of 100 MB each stay under the per-process limit; the sandbox's memory
    control group (512 MB here) is what stops them: the kernel kills some in every decision."""
    as_root()
    monkeypatch.setattr(sandbox, "SANDBOX_MEMORY_MB", 512)
    out = tmp_path / "league"
    policy = f"{C}MemoryHog"
    launch = league_policy(policy, Settings(policies=(policy,), hidden=(str(tmp_path),))).launch
    needs(bool(launch.cgroups), "a writable memory control group (cgroup v1, as root)")
    out.mkdir()
    results = league(out, f"factor,{policy}", "--decision-timeout", "30", episodes=1)
    got = reports(out, policy)
    assert got and all(e["children"] == 12 and e["killed"] >= 1 for e in got), got
    assert all(r["faults"][s] == {} for r, s in seats_of(results, policy))


def test_a_fork_bomb_is_held_to_the_sandboxs_process_limit(tmp_path: Path) -> None:
    as_root()
    out = tmp_path / "league"
    policy = f"{C}ForkBomb"
    uids: set[int] = set()
    try:
        # the bomb forks for 4 s then counts for 1 s: within a 15 s decision
        results = league(out, f"factor,{policy}", "--decision-timeout", "15", episodes=2)
        seats = seats_of(results, policy)
        bombs: dict[str, list[tuple[int, ...]]] = {}
        for r, s in seats:
            assert r["faults"][s] and r["fallbacks"][s] == TURNS, r
            assert set(r["faults"][s]) <= {"raised", "crashed", "timeout"}, r
            found = BOMB.search(r["faultNotes"][s])
            if found:
                bombs.setdefault(r["id"], []).append(tuple(int(x) if x.isdigit() else 0
                                                           for x in found.groups()))
        assert bombs, [r["faultNotes"][s] for r, s in seats]
        uids = {b[0] for bs in bombs.values() for b in bs}
        assert len(uids) == 1 and min(uids) >= sandbox.UID_BASE, uids
        # the seats of one episode bombed at once, under one uid: all they held together
        # (besides the zygote and the seats' keepers) stays within the sandbox's limit, while
        # unbounded each bomb would reach 1 + 24 + 24 * 24 = 601 processes
        first = bombs[min(bombs)]
        held = sum(b[1] for b in first)
        assert 3 * 24 <= held <= sandbox.NPROC, (held, first)
        assert unranked(out, policy)
        left = left_after(lambda: with_uids(uids))
        assert left == {}, f"left behind by the sandbox's uid {uids}: {len(left)} processes"
    finally:
        kill_uids(uids)


# --- 8. filling its scratch -------------------------------------------------------------------

def test_scratch_tmp_and_shm_fill_up_within_their_bounds(tmp_path: Path) -> None:
    got = played(tmp_path, "FillsScratch")
    for e in got:
        assert e["cwd"] == e["home"] == e["tmpdir"] == "/scratch", e
        for mount, bound in (("scratch", sandbox.SCRATCH_MB), ("tmp", sandbox.SCRATCH_MB),
                             ("shm", SHM_MB)):
            written, why = e[mount]
            assert why == "ENOSPC", e  # the disk filled up (the cap is 256 MB)
            assert MB <= written <= (bound + 1) * MB < 100 * MB, e
    assert min(e["scratch"][0] for e in got) >= (sandbox.SCRATCH_MB - 2) * MB


# --- 9. a program that closes its output ------------------------------------------------------

CLOSES = """\
import json, os, sys, time
for line in sys.stdin:
    if json.loads(line).get("type") in ("build", "reset"):
        sys.stdout.write('{"ok": true}\\n')
        sys.stdout.flush()
        continue
    os.close(1)  # an act: close the output, then sleep far past the decision timeout
    time.sleep(60)
"""


def test_a_program_that_closes_its_output_is_ended_at_once(tmp_path: Path) -> None:
    program = tmp_path / "closes.py"
    program.write_text(CLOSES)
    policy = f"exec:{sys.executable} {program}"
    out = tmp_path / "league"
    started = time.monotonic()
    # one episode: each of its decisions crashes on its own (the next one restarts the
    # program), so more episodes would only repeat the same decision
    results = league(out, f"factor,{policy}", "--decision-timeout", "120", episodes=1)
    took = time.monotonic() - started
    seats = seats_of(results, policy)
    for r, s in seats:
        assert r["faults"][s] == {"crashed": TURNS} and r["fallbacks"][s] == TURNS, r
        assert "closed its output" in r["faultNotes"][s], r["faultNotes"][s]
    # 18 decisions that each would have waited 120 s: the whole league, started sandboxes and
    # all, is faster than one (a wide margin: CI shares its two cores with other work)
    assert took < 120, f"{took:.1f} s for {len(seats) * TURNS} decisions"
    assert unranked(out, policy)


# --- 10. sleeping, with no timeout given ------------------------------------------------------

def test_a_sleeping_seat_gets_the_default_decision_timeout(tmp_path: Path) -> None:
    policy = f"{C}SleepsFirstTurn"
    seat = league_policy(policy, Settings(policies=(policy,)))
    try:
        assert seat.timeout == APART_DECISION_TIMEOUT == 10
    finally:
        seat.close()
    out = tmp_path / "league"
    started = time.monotonic()
    results = league(out, f"factor,{policy}", episodes=1)  # no --decision-timeout
    took = time.monotonic() - started
    seats = seats_of(results, policy)
    assert len(seats) == 3
    for r, s in seats:
        assert r["faults"][s] == {"timeout": 1} and r["fallbacks"][s] == 1, r
        assert "took over 10 s" in r["faultNotes"][s], r["faultNotes"][s]
        assert r["turns"] == TURNS and r["reason"] != "deadline", r
    # the three sleepers think at once: one wait of 10 s, not three, and not an hour
    assert APART_DECISION_TIMEOUT - 1 <= took < 3 * APART_DECISION_TIMEOUT, took
    assert unranked(out, policy)  # 1 decision in 6 is not its own


# --- 11. memory across the rotations of one town ----------------------------------------------

def test_no_seat_process_plays_the_same_town_twice(tmp_path: Path) -> None:
    out = tmp_path / "league"
    policy = f"{C}Remembers"
    league(out, f"factor,{policy}", episodes=12)  # two groups of six rotations of a town
    got = evidence(out, policy)
    assert len(got) == len(seats_of(rows(out), policy)) * TURNS
    token_of: dict[tuple[str, int], str] = {}
    for r, ev, e in got:  # one process plays a seat's whole episode
        assert token_of.setdefault((r["id"], ev["seat"]), e["t"]) == e["t"], (r["id"], ev, e)
    episodes_of: dict[tuple[int, str], set[str]] = {}
    for r, _, e in got:
        episodes_of.setdefault((r["group"], e["t"]), set()).add(r["id"])
        assert len(e["s"]) == len(set(e["s"])), e  # never reset with the same seed twice
    # the three seats of an episode are three processes, and no process comes back to the
    # town of its group (the six rotations share one seed)
    for (group, token), ids in episodes_of.items():
        assert len(ids) == 1, f"process {token} played {sorted(ids)} of group {group}"
    by_episode: dict[str, set[str]] = {}
    for (episode, _), token in token_of.items():
        by_episode.setdefault(episode, set()).add(token)
    assert all(len(tokens) == 3 for tokens in by_episode.values()), by_episode
    # the attack could work: a process does remember its earlier episodes (pooled)
    assert max(e["n"] for _, _, e in got) >= 2


# --- 12. network ------------------------------------------------------------------------------

def bind_below_ephemeral(sock: socket.socket) -> None:
    """Bind ``sock`` to a free 127.0.0.1 port below Linux's ephemeral range (32768 up)."""
    for port in range(21000, 22000):
        try:
            sock.bind(("127.0.0.1", port))
            return
        except OSError:
            continue
    raise AssertionError("no free port from 21000 to 21999 on 127.0.0.1")


def test_a_seat_has_no_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp, \
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
        # a port below the ephemeral range: there the seat's probe of it, where nobody listens
        # in its namespace, can never draw it as its own source and connect to itself
        bind_below_ephemeral(tcp)
        tcp.listen(16)
        abstract = f"guild-sandbox-test-{uuid.uuid4().hex}"
        unix.bind("\0" + abstract)
        unix.listen(16)
        copy_cheats(tmp_path, "sbx_phones", PORT=tcp.getsockname()[1], ABSTRACT=abstract)
        out = tmp_path / "league"
        policy = "sbx_phones:Phones"
        league(out, f"factor,{policy}")
        for sock in (tcp, unix):  # no connection reached the listeners outside
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.accept()
    got = reports(out, policy)
    for e in got:
        assert e["links"] == ["lo"], e  # a network namespace of its own: loopback alone
        for name, (outcome, ms) in e["tried"].items():
            assert outcome != "OK", (name, e)
            assert ms < 2000, (name, e)  # refused at once, never a wait for a timeout
        # its own loopback, up, where nobody listens (the test's listener is the machine's)
        assert e["tried"]["lo"][0] == e["tried"]["lo1"][0] == "ECONNREFUSED", e
        assert e["tried"]["unix"][0] == "ECONNREFUSED", e  # the seat's own abstract names
        for name in ("dns", "web", "udp"):  # nothing but its loopback: no route out
            assert e["tried"][name][0] == "ENETUNREACH", e


def test_a_seat_serves_and_reaches_itself_on_its_own_loopback(tmp_path: Path) -> None:
    """A policy that runs a server of its own (a local model, ZMQ over tcp) on 127.0.0.1 and
    asks it, every decision: its network namespace has its own loopback, up."""
    for e in played(tmp_path, "ServesItself"):
        assert e["answer"] == "served:ping", e


def test_seats_of_one_policy_cannot_reach_each_other(tmp_path: Path) -> None:
    """Three seats of one policy a table, their processes pooled across episodes of the same
    town: none reaches another's abstract unix socket or loopback port, while each of them
    listens on both, its own (the attack ran)."""
    out = tmp_path / "league"
    policy = f"{C}Colludes"
    league(out, f"factor,{policy}", episodes=6)
    got = reports(out, policy)
    assert all(e["listening"] == 2 for e in got), got[:3]
    assert [e["reached"] for e in got if e["reached"]] == []


# --- 13. kill -9 of the league ----------------------------------------------------------------

def test_kill_9_of_the_league_takes_every_sandboxed_process_along(tmp_path: Path) -> None:
    """The variant of ``test_league_processes``' kill -9 test for sandboxed seats, found by
    their uid and ancestry instead of an environment mark they do not inherit."""
    as_root()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)])}
    cmd = [sys.executable, "-m", "league",
           *league_args(tmp_path / "k9", 12, "--turns", str(TURNS), "--decision-timeout", "60",
                        policies=f"factor,{C}Sleeps", seed=3)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    before: dict[int, dict] = {}
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            before = descendants(proc.pid)
            # both workers' zygotes, and at least three sleeping seats with their keepers
            if sum(p["uid"] >= sandbox.UID_BASE and "league.seat.zygote" in p["cmd"]
                   for p in before.values()) >= 9:
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        else:
            pytest.fail(f"no sandboxed seats within 60 s: {before}")
        sandboxed = {pid for pid, p in before.items() if p["uid"] >= sandbox.UID_BASE}
        os.kill(proc.pid, signal.SIGKILL)  # the league alone, as the OOM killer would
        proc.communicate(timeout=10)

        def still() -> dict[int, dict]:
            now = processes()
            return {pid: now[pid] for pid, p in before.items()
                    if pid in now and now[pid]["start"] == p["start"]}

        left = left_after(still)
        assert {pid: p for pid, p in left.items() if pid in sandboxed} == {}, left
        assert left == {}, f"left behind: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
        now = processes()
        for pid, p in before.items():  # what a failing test left: only what it started
            if pid in now and now[pid]["start"] == p["start"]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


# --- an honest policy with a thread per core ---------------------------------------------------

def test_an_honest_policy_with_a_thread_per_core_is_not_faulted_by_the_process_limit(
        tmp_path: Path) -> None:
    """RLIMIT_NPROC counts threads, and a sandbox's idle seat processes are kept for later
    groups: a policy whose library starts a thread per core (20 here) must still play every
    decision of three groups (it does with --sandbox none)."""
    out = tmp_path / "league"
    policy = f"{C}ThreadPerCore"
    results = league(out, f"factor,{policy}", episodes=18)
    faulted = [(r["id"], r["faultNotes"][s]) for r, s in seats_of(results, policy)
               if r["faults"][s]]
    assert faulted == [], f"{len(faulted)} seats faulted; first: {faulted[0]}"
    assert not unranked(out, policy)
