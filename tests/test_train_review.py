"""A hostile review of ``guild train``, its checkpoints, ``agents.champion.export`` and
``guild evaluate``'s batched policies: other people's code never runs unasked (an ``sb3:`` zip
is a pickle; a checkpoint names modules), a damaged or forged checkpoint is one line naming it
before any update, the export writes atomically and never over its run's files, every file
read is bounded, and links are never written through.

Every training here is a few updates of a few rows.
"""

from __future__ import annotations

import base64
import copy
import io
import json
import os
import pickle
import shutil
import subprocess
import sys
import uuid
import zipfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from conftest import needs_module
from guild_cli import run_guild

torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")

from agents.champion.export import main as export  # noqa: E402
from agents.learn.training import TrainingError, TrainOptions, train  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--envs", "8", "--eval-episodes", "2", "--quiet", "--no-plot"]


def _train(out: Path, *args: str) -> tuple[int | str, str, str]:
    return run_guild("train", "--out", str(out), *TINY, *args)


def _one_line(code: int | str, err: str) -> str:
    """The refusal's line: exactly one line on stderr, exit status 2."""
    lines = [line for line in err.strip().splitlines() if not line.startswith("guild-game")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err[-2000:])
    return lines[0]


def _evil_zip(path: Path, marker: Path) -> Path:
    """A zip shaped like an sb3 model whose pickle creates ``marker`` when unpickled."""
    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    payload = base64.b64encode(pickle.dumps(Evil())).decode()
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("data", json.dumps({"observation_space": {":type:": "x",
                                                              ":serialized:": payload}}))
    return path


@pytest.fixture(scope="module")
def league_run(tmp_path_factory) -> Path:
    """A finished league run with its five snapshots, shared read-only (copy to change)."""
    out = tmp_path_factory.mktemp("review") / "league"
    code, printed, err = _train(out, "--league", "--snapshot-every", "1", "--steps", "800")
    assert code == 0, err
    return out


def _copy(run: Path, where: Path) -> Path:
    shutil.copytree(run, where)
    return where


# --- 1. other people's code: sb3 zips and modules ---

@pytest.mark.parametrize("how", ["flag", "config"])
def test_sb3_opponents_are_never_unpickled_in_process_without_trust(tmp_path, how) -> None:
    marker = tmp_path / "unpickled"
    evil = _evil_zip(tmp_path / "evil.zip", marker)
    if how == "flag":
        args = ["--against", f"factor,sb3:{evil}"]
    else:
        config = tmp_path / "train.toml"
        config.write_text('against = ["factor", "sb3:evil.zip"]\n', encoding="utf-8")
        args = ["--config", str(config)]
    code, _, err = _train(tmp_path / "o", "--steps", "1", *args)
    line = _one_line(code, err)
    assert "evil.zip" in line
    assert not marker.exists()  # loaded in a sandbox (or refused): never unpickled here


def test_the_library_refuses_an_sb3_opponent_without_a_sandbox_or_trust(tmp_path) -> None:
    marker = tmp_path / "unpickled"
    evil = _evil_zip(tmp_path / "evil.zip", marker)
    options = TrainOptions(out=str(tmp_path / "o"), steps=1, envs=8, eval_episodes=2,
                           plot=False, device="cpu", against=("factor", f"sb3:{evil}"))
    with pytest.raises(TrainingError, match="trust"):
        train(options)
    assert not marker.exists() and not (tmp_path / "o").exists()


EVIL_MODULE = """
from pathlib import Path
Path({marker!r}).touch()

from sim.policies import BATCHED_POLICIES


class X:
    batched = True

    def __init__(self):
        self.f = BATCHED_POLICIES.make("magpie")

    def act(self, engine, rows, seats):
        return self.f.act(engine, rows, seats)
"""


def _forge_opponent(league_run: Path, tmp_path: Path, spec: str) -> Path:
    """The league run with its second fixed opponent (magpie) renamed ``spec`` in its
    checkpoint, as a forger would name code of theirs."""
    out = _copy(league_run, tmp_path / "run")
    state = torch.load(out / "checkpoint.pt", weights_only=True)
    state["run"]["against"][1] = spec
    state["learner"]["arena"]["pool"][1]["name"] = spec
    torch.save(state, out / "checkpoint.pt")
    return out


@pytest.mark.parametrize("kind", ["module", "sb3"])
def test_resume_refuses_code_only_its_checkpoint_names(league_run, tmp_path, monkeypatch,
                                                       kind) -> None:
    marker = tmp_path / "ran"
    if kind == "module":
        name = f"review_opp_{uuid.uuid4().hex[:10]}"
        (tmp_path / f"{name}.py").write_text(EVIL_MODULE.format(marker=str(marker)),
                                             encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))
        spec = f"{name}:X"
    else:
        spec = f"sb3:{_evil_zip(tmp_path / 'evil.zip', marker)}"
    out = _forge_opponent(league_run, tmp_path, spec)
    code, _, err = run_guild("train", "--resume", "--out", str(out), "--steps", "1200", "--quiet")
    line = _one_line(code, err)
    assert spec in line and "--trust" in line
    assert not marker.exists()
    if kind == "module":  # named again on the command line, it is the user's to run
        code, _, err = run_guild("train", "--resume", "--out", str(out), "--steps", "1200",
                            "--quiet", "--against", f"factor,{spec}")
        assert code == 0, err
        assert marker.exists()


def test_a_league_run_resumes_with_its_pool_options_named_and_no_league_flag(league_run,
                                                                             tmp_path) -> None:
    """A resume takes the run's league from its checkpoint: naming the run's own
    --snapshot-every and --fixed-share without --league is not the refusal a new run gets."""
    out = _copy(league_run, tmp_path / "run")
    code, _, err = run_guild("train", "--resume", "--out", str(out), "--steps", "1200", "--quiet",
                             "--no-plot", "--snapshot-every", "1", "--fixed-share", "0.5")
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["league"] and summary["steps"] >= 1200
    assert summary["hyperparameters"]["snapshot_every"] == 1


# --- 2. damaged or forged checkpoints ---

def _pool(state: dict) -> list:
    return state["learner"]["arena"]["pool"]


FORGERIES = {
    "pool win nan": lambda s: _pool(s)[0].__setitem__("win", float("nan")),
    "pool win inf": lambda s: _pool(s)[2].__setitem__("win", float("inf")),
    "pool win 1e308": lambda s: _pool(s)[2].__setitem__("win", 1e308),
    "pool extra member": lambda s: _pool(s).insert(2, {"name": "snapshot@1", "fixed": False,
                                                       "win": 0.0}),
    "pool no fixed member": lambda s: [m.__setitem__("fixed", False) for m in _pool(s)],
    "pool empty": lambda s: s["learner"]["arena"].__setitem__("pool", []),
    "pool without self": lambda s: _pool(s).pop(),
    "bad numpy stream": lambda s: s["learner"]["arena"].__setitem__("lineups", {
        "bit_generator": "PCG64", "state": {"state": -1, "inc": 1}, "has_uint32": 0,
        "uinteger": 0}),
    "optimizer tensors of other shapes": lambda s: s["learner"]["optimizer"]["state"]
    .__setitem__(0, {"step": torch.tensor(1.0), "exp_avg": torch.zeros(3),
                     "exp_avg_sq": torch.zeros(3)}),
    "config file not a pair": lambda s: s["run"].__setitem__("config_file", ["a"]),
    "negative steps": lambda s: s["learner"].__setitem__("steps", -5),
    "negative updates": lambda s: s["learner"].__setitem__("updates", -1),
    "25 snapshots": lambda s: s["learner"]["snapshots"].extend(
        copy.deepcopy(s["learner"]["snapshots"]) * 4),
}


@pytest.mark.parametrize("name", list(FORGERIES))
def test_a_forged_checkpoint_is_one_line_naming_it_before_any_update(league_run, tmp_path,
                                                                      name) -> None:
    out = _copy(league_run, tmp_path / "run")
    state = torch.load(out / "checkpoint.pt", weights_only=True)
    FORGERIES[name](state)
    torch.save(state, out / "checkpoint.pt")
    before = (out / "summary.json").read_bytes()
    code, _, err = run_guild("train", "--resume", "--out", str(out), "--steps", "1200", "--quiet")
    line = _one_line(code, err)
    assert "checkpoint.pt" in line and "--resume" in line
    assert (out / "summary.json").read_bytes() == before  # nothing trained or written


# --- 3, 4. the export: atomic, never over the run's files, bounded reads ---

def _export(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        code = export(list(argv))
    return code, err.getvalue()


@pytest.mark.parametrize("name", ["model.pt", "summary.json", "checkpoint.pt"])
def test_export_refuses_an_out_that_is_one_of_the_runs_files(league_run, tmp_path,
                                                            name) -> None:
    run = _copy(league_run, tmp_path / "run")
    kept = (run / name).read_bytes()
    code, err = _export(str(run), "--out", str(run / "." / name))
    assert code == 2 and name in err and "run's own" in err, err
    assert (run / name).read_bytes() == kept
    link = tmp_path / "link.npz"
    link.symlink_to(run / name)
    code, err = _export(str(run), "--out", str(link))
    assert code == 2 and (run / name).read_bytes() == kept, err


def test_export_failing_to_write_keeps_the_file_there_and_names_it(league_run, tmp_path,
                                                                  monkeypatch) -> None:
    out = tmp_path / "champion.npz"
    code, err = _export(str(league_run), "--out", str(out))
    assert code == 0, err
    good = out.read_bytes()

    def full_disk(f, **arrays):
        f.write(b"PK half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", full_disk)
    code, err = _export(str(league_run), "--out", str(out))
    assert code == 2 and str(out) in err and "No space left" in err, err
    assert out.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["champion.npz"]  # no temporary left


def test_export_refuses_a_summary_nested_too_deeply(league_run, tmp_path) -> None:
    run = _copy(league_run, tmp_path / "run")
    (run / "summary.json").write_text("[" * 100_000, encoding="utf-8")
    code, err = _export(str(run), "--out", str(tmp_path / "c.npz"))
    assert code == 2 and "summary.json" in err and "nested too deeply" in err, err


def test_export_refuses_a_model_whose_provenance_is_not_a_record(league_run, tmp_path) -> None:
    run = _copy(league_run, tmp_path / "run")
    data = torch.load(run / "model.pt", weights_only=True)
    data["provenance"] = ["a", "list"]
    torch.save(data, run / "model.pt")
    code, err = _export(str(run), "--out", str(tmp_path / "c.npz"))
    assert code == 2 and "same run" in err, err


def _fifo_summary(league_run: Path, tmp_path: Path) -> Path:
    run = _copy(league_run, tmp_path / "run")
    (run / "summary.json").unlink()
    os.mkfifo(run / "summary.json")
    return run


def test_export_never_waits_on_a_fifo_summary(league_run, tmp_path) -> None:
    run = _fifo_summary(league_run, tmp_path)
    done = subprocess.run([sys.executable, "-m", "agents.champion.export", str(run), "--out",
                           str(tmp_path / "c.npz")], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr


def test_resuming_a_finished_run_never_waits_on_a_fifo_summary(league_run, tmp_path) -> None:
    """A run whose summary is not a summary is not finished: the resume writes it anew."""
    run = _fifo_summary(league_run, tmp_path)
    done = subprocess.run([sys.executable, "-m", "league", "train", "--resume", "--out",
                           str(run), "--quiet"], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads((run / "summary.json").read_text())["steps"] > 0


# --- 5. guild evaluate holds batched answers to training's check ---

MALFORMED = """
import numpy as np
from sim.policies import BATCHED_POLICIES


class Scalar:
    batched = True

    def act(self, engine, rows, seats):
        return 0


class FloatIdx:
    batched = True

    def __init__(self):
        self.f = BATCHED_POLICIES.make("factor")

    def act(self, engine, rows, seats):
        return np.asarray(self.f.act(engine, rows, seats), float) + 0.9
"""


@pytest.mark.parametrize("cls", ["Scalar", "FloatIdx"])
def test_evaluate_refuses_a_malformed_batched_answer_naming_the_policy(tmp_path, monkeypatch,
                                                                       cls) -> None:
    name = f"review_pol_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(MALFORMED, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = run_guild("evaluate", f"{name}:{cls}", "--seeds", "1..4")
    line = _one_line(code, err)
    assert f"{name}:{cls}" in line and "one action index" in line


# --- 6. links are never followed on resume ---

def test_resume_never_follows_a_linked_lock_file(league_run, tmp_path) -> None:
    run = _copy(league_run, tmp_path / "run")
    victim = tmp_path / "victim"
    (run / ".train.lock").symlink_to(victim)
    code, _, err = run_guild("train", "--resume", "--out", str(run), "--steps", "1200", "--quiet")
    assert ".train.lock" in _one_line(code, err)
    assert not victim.exists()


@pytest.mark.parametrize("folder", ["tb", "snapshots"])
def test_resume_never_writes_through_a_linked_run_folder(league_run, tmp_path, folder) -> None:
    run = _copy(league_run, tmp_path / "run")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(run / folder, ignore_errors=True)
    (run / folder).symlink_to(elsewhere, target_is_directory=True)
    code, _, err = run_guild("train", "--resume", "--out", str(run), "--steps", "1200", "--quiet")
    assert repr(folder) in _one_line(code, err)
    assert list(elsewhere.iterdir()) == []


# --- 7. what the command says ---

def test_help_and_the_against_error_name_every_kind_of_opponent(tmp_path) -> None:
    code, printed, _ = run_guild("train", "--help")
    flat = " ".join(printed.split())
    assert "sb3:MODEL" in flat and "module:Name" in flat and "--trust" in flat
    code, _, err = _train(tmp_path / "o", "--against", ",")
    line = _one_line(code, err)
    assert "sb3:MODEL" in line and "module:Name" in line


def test_a_config_files_bad_world_names_the_file_and_the_key(tmp_path) -> None:
    config = tmp_path / "train.toml"
    config.write_text('world = "nope.toml"\n', encoding="utf-8")
    code, _, err = _train(tmp_path / "o", "--config", str(config), "--steps", "1")
    line = _one_line(code, err)
    assert str(config) in line and "'world'" in line and "nope.toml" in line
    assert not (tmp_path / "o").exists()

