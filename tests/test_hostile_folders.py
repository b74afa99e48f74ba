"""What a league's folder, ``--out`` and ``--signing-key`` may hold that is not what it seems.

Every file a command reads from a league's folder or a path it is given is read as a regular
file of a bounded size (``league.core.files``): a FIFO in its place would block the command for
good, ``/dev/zero`` fill its memory. Those runs happen in a process of their own, under a
timeout and an address-space limit below the 4 GiB cap of a results file (a read that asked
for its cap at once fails there), so that a regression fails the test instead of hanging it or
the machine. ``guild export-sft`` checks results lines and replays as ``guild report`` and
``guild verify`` do, and a league writes only into an empty folder or a league's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import needs
from leagues import copy_league, league_args, one_error_line

from league import tournament
from league.cli.guild import main
from league.core import store
from league.core.errors import LeagueError
from league.core.files import read_regular, sha256_regular
from league.core.store import LeagueDir
from league.core.verify import verify_dir
from league.tournament import LeagueOptions, run_league

ROOT = Path(__file__).resolve().parents[1]
MEMORY = 2 << 30  # bytes of address space: half the cap of a results file
POLICIES = ("factor", "magpie")


def _limit() -> None:
    import resource  # POSIX

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _python(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """``python ARGS`` under the memory limit and a timeout: a hang or a runaway read fails."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, preexec_fn=_limit)


def _guild(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return _python("-m", "league", *args, cwd=cwd)


def _error(done: subprocess.CompletedProcess) -> str:
    """The one line of a refusal (exit 2)."""
    assert done.returncode == 2, done.stderr[-800:]
    line = one_error_line(done.stderr)
    assert line.startswith("guild "), line
    return line


def _zero(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/zero")


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


MAKERS = pytest.mark.parametrize("make", [_zero, _fifo], ids=["dev-zero", "fifo"])


def _files(out: Path) -> dict[str, bytes | None]:
    """Every entry under ``out``: a regular file's bytes, None for anything else (no FIFO is
    opened, no link followed)."""
    return {str(p.relative_to(out)): p.read_bytes() if p.is_file() and not p.is_symlink()
            else None for p in sorted(out.rglob("*"))}


def _edit_rows(out: Path, edit: Callable[[list[dict]], None]) -> None:
    path = out / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    edit(rows)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _options(out: Path, episodes: int = 6) -> LeagueOptions:
    """A secret draw (no --seed): the league writes secret.json before league.json."""
    return LeagueOptions(policies=POLICIES, episodes=episodes, out=str(out), workers=1, turns=6)


# --- reading a file: what it holds, never what its cap allows -------------------------------------

def test_a_small_file_is_read_under_a_memory_limit_below_its_cap(tmp_path) -> None:
    small = tmp_path / "small.json"
    small.write_bytes(b'{"a": 1}\n' * 1000)
    code = ("import sys; from pathlib import Path; "
            "from league.core.files import read_regular, sha256_regular; "
            "p = Path(sys.argv[1]); cap = 4 << 30; "
            "print(len(read_regular(p, cap, 'results file')), sha256_regular(p, cap, 'x'))")
    done = _python("-c", code, str(small))
    assert done.returncode == 0, done.stderr[-800:]
    import hashlib

    assert done.stdout.split() == ["9000", hashlib.sha256(small.read_bytes()).hexdigest()]


def test_a_file_holding_more_than_stat_says_is_read_to_its_end_and_no_further() -> None:
    status = Path("/proc/self/status")  # a regular file that stat says is empty
    needs(status.is_file() and status.stat().st_size == 0,
          "Linux's /proc, whose files stat says are empty")
    text = read_regular(status, 1 << 20, "status")
    assert text.startswith(b"Name:") and len(text) > 100
    with pytest.raises(LeagueError, match="is over 50 bytes, the most a status may hold"):
        read_regular(status, 50, "status")
    with pytest.raises(LeagueError, match="is over 50 bytes"):
        sha256_regular(status, 50, "status")


@pytest.mark.parametrize("cap", [0, 1, 9, 10])
def test_the_cap_holds_exactly(tmp_path, cap) -> None:
    path = tmp_path / "ten"
    path.write_bytes(b"0123456789")
    if cap >= 10:
        assert read_regular(path, cap, "file") == b"0123456789"
    else:
        with pytest.raises(LeagueError, match=f"over {cap} bytes"):
            read_regular(path, cap, "file")


def test_verify_export_and_a_resume_run_under_a_memory_limit(league12, tmp_path) -> None:
    out = copy_league(league12[0], tmp_path)
    done = _guild("verify", str(out))
    assert done.returncode == 0 and "all 12 episodes verify" in done.stdout, done.stderr[-800:]
    done = _guild("export-sft", str(out), "--out", str(tmp_path / "sft"))
    assert done.returncode == 0, done.stderr[-800:]
    assert json.loads((tmp_path / "sft" / "manifest.json").read_text())["skipped"] == 0
    done = _guild(*league_args(out, 12, workers=1))
    assert done.returncode == 0 and "12 episodes" in done.stdout, done.stderr[-800:]


# --- files in a league's folder that are no regular files ----------------------------------------

@MAKERS
def test_verify_names_a_signed_ladder_that_is_a_device_or_a_fifo(league12, tmp_path,
                                                                 make) -> None:
    out = copy_league(league12[0], tmp_path)
    make(out / "ladder.json")
    done = _guild("verify", str(out))
    assert done.returncode == 1, done.stderr[-800:]
    assert "Traceback" not in done.stderr
    assert ("verify: ladder.json is not a regular file (a device, FIFO or socket); a "
            "ladder.json is read from a regular file only; signature.json signed it"
            ) in done.stdout.splitlines()


@MAKERS
def test_a_signing_key_that_is_a_device_or_a_fifo_is_refused(tmp_path, make) -> None:
    key = tmp_path / "key.pem"
    make(key)
    out = tmp_path / "league"
    line = _error(_guild(*league_args(out, 6, "--signing-key", str(key), workers=1)))
    assert f"--signing-key: {key} is not a regular file" in line
    assert not out.exists()


@MAKERS
def test_a_new_key_with_a_league_json_that_is_no_file_makes_no_key(tmp_path, make) -> None:
    out = tmp_path / "league"
    out.mkdir()
    make(out / "league.json")
    key = tmp_path / "new-key.pem"
    line = _error(_guild(*league_args(out, 6, "--signing-key", str(key), workers=1)))
    assert f"{out / 'league.json'} is not a regular file" in line
    assert not key.exists() and sorted(os.listdir(out)) == ["league.json"]


@MAKERS
def test_a_secret_json_that_is_no_file_stops_a_resume_in_one_line(tmp_path, make) -> None:
    out = tmp_path / "secret"

    def stop(done: int, total: int) -> None:
        if done == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_league(_options(out, 12), on_progress=stop)
    make(out / "secret.json")
    before = _files(out)
    line = _error(_guild("league", "--policies", ",".join(POLICIES), "--episodes", "12",
                         "--turns", "6", "--workers", "1", "--out", str(out)))
    assert f"{out / 'secret.json'} is not a regular file" in line
    assert _files(out) == before


@MAKERS
def test_export_skips_a_replay_that_is_a_device_or_a_fifo(league12, tmp_path, make) -> None:
    out = copy_league(league12[0], tmp_path)
    make(out / "replays" / "e000002.json")
    sft = tmp_path / "sft"
    done = _guild("export-sft", str(out), "--out", str(sft))
    assert done.returncode == 0, done.stderr[-800:]
    assert one_error_line(done.stderr).startswith(
        f"export-sft: skipped 1 of 12 episodes; first: e000002: "
        f"{out / 'replays' / 'e000002.json'} is not a regular file")
    manifest = json.loads((sft / "manifest.json").read_text())
    assert manifest["skipped"] == 1
    assert sum(c["episodes"] for c in manifest["counts"].values()) == 11


# --- export-sft checks lines and replays as report and verify do ---------------------------------

@pytest.mark.parametrize(("edit", "problem"), [
    (lambda r: r[1].update(seed=[1, 2]), "line 2 has a seed that is not an integer"),
    (lambda r: r[4].update(id="../../r/replays/e000005"),
     "line 5 has no episode id (letters, digits, - and _ only)"),
    (lambda r: r[0].update(scores="high"), "line 1 has no 6 scores"),
], ids=["list-seed", "path-id", "no-scores"])
def test_export_refuses_a_line_that_is_not_one_before_writing(league12, tmp_path, capsys, edit,
                                                              problem) -> None:
    out = copy_league(league12[0], tmp_path)
    _edit_rows(out, edit)
    sft = tmp_path / "sft"
    assert main(["export-sft", str(out), "--out", str(sft)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line == f"guild export-sft: error: {out / 'results.jsonl'} {problem}"
    assert not sft.exists()


def test_export_skips_a_replay_nested_past_what_python_walks(league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    (out / "replays" / "e000003.json").write_text("[" * 100_000, encoding="utf-8")
    assert main(["export-sft", str(out), "--out", str(tmp_path / "sft")]) == 0
    err = capsys.readouterr().err
    assert one_error_line(err) == (f"export-sft: skipped 1 of 12 episodes; first: e000003: "
                                   f"{out / 'replays' / 'e000003.json'} is nested too deeply "
                                   "to be a replay")


def test_export_refuses_an_empty_out_and_writes_nothing(league12, tmp_path, capsys,
                                                        monkeypatch) -> None:
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["export-sft", str(league12[0]), "--out", ""]) == 2
    assert one_error_line(capsys.readouterr().err) == (
        "guild export-sft: error: --out must be a folder's path; got ''")
    assert os.listdir(here) == []


# --- a league writes only into an empty folder or a league's own ----------------------------------

def _mine(out: Path) -> None:
    out.mkdir()
    (out / "secret.json").write_text('{"mine": 1}\n', encoding="utf-8")
    (out / "ladder.png").write_bytes(b"x\n")


def _docs(out: Path) -> None:
    out.mkdir()
    (out / "index.md").write_text("# my docs\n", encoding="utf-8")


def _only_a_secret(out: Path) -> None:  # a secret.json that is not a league's
    out.mkdir()
    (out / "secret.json").write_text('{"draws": "mine"}\n', encoding="utf-8")


def _a_fifo_secret(out: Path) -> None:
    out.mkdir()
    os.mkfifo(out / "secret.json")


def _a_linked_replays(out: Path) -> None:  # replays/ elsewhere: not what a league makes
    (out.parent / "elsewhere").mkdir()
    out.mkdir()
    (out / "replays").symlink_to(out.parent / "elsewhere")


@pytest.mark.parametrize(("make", "held"), [
    (_mine, "'ladder.png', 'secret.json'"), (_docs, "'index.md'"),
    (_only_a_secret, "'secret.json'"), (_a_fifo_secret, "'secret.json'"),
    (_a_linked_replays, "'replays'")],
    ids=["secret-and-plot", "docs", "foreign-secret", "fifo-secret", "linked-replays"])
@pytest.mark.parametrize("seed", [None, "3"], ids=["secret-draw", "seeded"])
def test_a_folder_that_is_not_empty_and_no_leagues_is_refused_untouched(
        tmp_path, capsys, make, held, seed) -> None:
    out = tmp_path / "mine"
    make(out)
    before = _files(out)
    argv = ["league", "--policies", ",".join(POLICIES), "--episodes", "6", "--workers", "1",
            "--plot", "--out", str(out), *(["--seed", seed] if seed else [])]
    assert main(argv) == 2
    assert one_error_line(capsys.readouterr().err) == (
        f"guild league: error: --out {out} is not empty and not a league's folder (it holds "
        f"{held}); choose an empty or a new folder")
    assert _files(out) == before  # nothing written over, nothing added (.lock, replays/)


def test_an_empty_out_is_refused_and_the_current_folder_left_alone(tmp_path, capsys,
                                                                   monkeypatch) -> None:
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["league", "--policies", ",".join(POLICIES), "--episodes", "6", "--seed", "1",
                 "--workers", "1", "--out", ""]) == 2
    assert one_error_line(capsys.readouterr().err) == (
        "guild league: error: --out must be a folder's path; got ''")
    assert os.listdir(here) == []


def test_an_out_that_is_a_file_is_refused(tmp_path, capsys) -> None:
    out = tmp_path / "file"
    out.write_text("mine\n", encoding="utf-8")
    assert main(league_args(out, 6, workers=1)) == 2
    assert one_error_line(capsys.readouterr().err) == (
        f"guild league: error: cannot write to --out {out}: it is not a folder")
    assert out.read_text(encoding="utf-8") == "mine\n"


class _Stop(BaseException):
    """A crash at a chosen point of a league's first run (nothing catches it)."""


def _raise(*args: object, **kwargs: object) -> None:
    raise _Stop


@pytest.mark.parametrize("point", ["opened", "secret-written", "league-json-written",
                                   "league-json-half-written"])
def test_a_league_stopped_before_its_first_line_resumes(tmp_path, monkeypatch, point) -> None:
    # What a league writes first (.lock, replays/, secret.json, league.json and their temp
    # files) is its own: a folder holding only that is a league's, stopped early.
    out = tmp_path / "early"
    with monkeypatch.context() as m:
        if point == "opened":
            m.setattr(LeagueDir, "check_identity", _raise)
        elif point == "secret-written":
            m.setattr(LeagueDir, "write_manifest", _raise)
        else:
            m.setattr(tournament, "_play_into", _raise)
        with pytest.raises(_Stop):
            run_league(_options(out))
    if point == "league-json-half-written":  # as a kill -9 inside write_atomic leaves it
        (out / "league.json").rename(out / ".league.json.k9x2_a.tmp")
        (out / ".secret.json.3fq_1z.tmp").write_text('{"dra', encoding="utf-8")
    expected = {"opened": [".lock", "replays"],
                "secret-written": [".lock", "replays", "secret.json"],
                "league-json-written": [".lock", "league.json", "replays", "secret.json"],
                "league-json-half-written": [".league.json.k9x2_a.tmp", ".lock",
                                             ".secret.json.3fq_1z.tmp", "replays",
                                             "secret.json"]}[point]
    assert sorted(os.listdir(out)) == expected
    run = run_league(_options(out))
    assert len(run.rows) == 6
    assert not any(n.endswith(".tmp") for n in os.listdir(out))
    report = verify_dir(out)
    assert report.problems == [], report.problems


def test_a_leagues_folder_may_hold_other_files_and_resumes(league12, tmp_path) -> None:
    out = copy_league(league12[0], tmp_path)
    (out / "notes.md").write_text("the user's notes\n", encoding="utf-8")
    assert main(league_args(out, 18, workers=1)) == 0
    assert len((out / "results.jsonl").read_text().splitlines()) == 18
    assert (out / "notes.md").read_text(encoding="utf-8") == "the user's notes\n"


def test_check_out_lists_a_few_names_of_a_large_folder(tmp_path) -> None:
    for n in range(50):
        (tmp_path / f"f{n:02d}").write_text("")
    with pytest.raises(LeagueError, match=r"\(it holds '[^']+', '[^']+', '[^']+', \.\.\.\)"):
        store.check_out(tmp_path)
