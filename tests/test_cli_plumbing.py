"""How the command lines meet the shell: a reader that leaves (``guild verify DIR | head``) is
exit status 141 without a traceback, and nothing is lost for it; the ``guild`` script imports a
``module:Name`` policy from the current folder, as ``python -m league`` and a league's seats do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs

from sim.commandline import EXIT_BROKEN_PIPE

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _guild_script() -> str:
    """The installed ``guild`` script (not ``python -m``, which puts the current folder first
    on the path by itself)."""
    script = shutil.which("guild", path=str(BIN))
    needs(script is not None, f"the guild script beside {sys.executable} (pip install -e .)")
    return str(script)


def _reader_gone(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ``cmd`` with standard output a pipe whose reader has already closed it."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(cmd, stdout=write, stderr=subprocess.PIPE, text=True, cwd=cwd,
                              timeout=300)
    finally:
        os.close(write)


@pytest.fixture(scope="module")
def league_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pipe") / "lg"
    done = subprocess.run([sys.executable, "-m", "league", "league", "--policies",
                           "factor,magpie,random", "--episodes", "6", "--seed", "3", "--out",
                           str(out)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize("cmd", [
    ["-m", "league", "verify", "{league}"],
    ["-m", "league", "evaluate", "factor", "--seeds", "0..3"],
    ["-m", "feasibility", "--seeds", "0..3"],
    ["-m", "feasibility", "--seeds", "0..3", "--json"],
], ids=["verify", "evaluate", "feasibility", "feasibility-json"])
def test_a_reader_that_leaves_is_exit_141_without_a_traceback(cmd, league_dir, tmp_path):
    args = [sys.executable, *(a.format(league=league_dir) for a in cmd)]
    done = _reader_gone(args, tmp_path)
    assert done.returncode == EXIT_BROKEN_PIPE == 141, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr


def test_a_league_whose_reader_left_keeps_its_report_and_signature(tmp_path):
    # The report is written before the ladder is printed: printing is the last thing.
    out = tmp_path / "lg"
    done = _reader_gone([sys.executable, "-m", "league", "league", "--policies",
                         "factor,magpie", "--episodes", "6", "--seed", "4", "--out", str(out),
                         "--report"], ROOT)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr
    assert (out / "report.html").stat().st_size > 0
    assert (out / "signature.json").is_file()
    verified = subprocess.run([sys.executable, "-m", "league", "verify", str(out)],
                              capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_league_whose_stderr_reader_left_plays_to_the_end(tmp_path):
    # Progress and notes are for a reader; when it leaves, the league goes on and signs.
    out = tmp_path / "lg"
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "league", "league", "--policies",
                               "factor,magpie,random", "--episodes", "60", "--seed", "5",
                               "--out", str(out)], stdout=subprocess.DEVNULL, stderr=write,
                              cwd=ROOT, timeout=300)
    finally:
        os.close(write)
    assert done.returncode == 0
    assert len((out / "results.jsonl").read_text().splitlines()) == 60
    verified = subprocess.run([sys.executable, "-m", "league", "verify", str(out)],
                              capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert verified.returncode == 0, verified.stdout


def test_a_league_with_stderr_closed_keeps_its_progress_out_of_stdout(tmp_path):
    # Python gives a closed stderr as None, and print(file=None) would write to stdout.
    out = tmp_path / "lg"
    done = subprocess.run(["bash", "-c", f"{sys.executable} -m league league --policies "
                           f"factor,magpie --episodes 12 --seed 5 --out {out} 2>&-"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0
    assert "episodes/s, eta" not in done.stdout and done.stdout.startswith("league: 12 new")
    assert len((out / "results.jsonl").read_text().splitlines()) == 12


COURIER = '''
def courier(view):
    """Hands in what it can, else waits: a policy function of the seat's view."""
    return "I wait."
'''


@pytest.mark.parametrize("command", [
    ["evaluate", "courier:courier", "--against", "factor,magpie", "--seeds", "0..1"],
    ["play", "--seed", "5", "--turns", "6", "--opponents", "courier:courier"],
], ids=["evaluate", "play"])
def test_the_guild_script_imports_a_policy_from_the_current_folder(command, tmp_path):
    (tmp_path / "courier.py").write_text(COURIER)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([_guild_script(), *command], input="quit\n", capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "cannot import module" not in done.stderr


# Files that write a mark where they are when anything imports them: a bot's folder may hold
# them, and only the module a spec names may be imported from it, and only in that spec's own
# process (a league runs it apart, in its sandbox).
DECOYS = ("bcrypt", "feasibility", "json", "numpy", "agents")
MARK = "import pathlib; pathlib.Path(__file__).with_suffix('.imported').touch()\n"


@pytest.mark.parametrize("command", [
    ["evaluate", "courier:courier", "--seeds", "0..1"],
    ["league", "--policies", "courier:courier,factor", "--episodes", "6", "--seed", "1",
     "--public-draw", "--out", "lg"],
], ids=["evaluate", "league"])
def test_only_the_named_module_is_imported_from_the_current_folder(command, tmp_path):
    # A cryptography extra (bcrypt), our own packages (found after the path by an editable
    # install) or a library: none of them may come from the folder.
    (tmp_path / "courier.py").write_text(COURIER)
    for name in DECOYS:
        (tmp_path / f"{name}.py").write_text(MARK)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([_guild_script(), *command], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.glob("*.imported")) == []


def test_a_deleted_current_folder_is_no_trouble(tmp_path, league_dir):
    gone = tmp_path / "gone"
    gone.mkdir()
    done = subprocess.run(["bash", "-c", f"cd {gone} && rmdir {gone} && "
                           f"{_guild_script()} verify {league_dir}"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
