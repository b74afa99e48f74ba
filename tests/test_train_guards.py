"""``guild train`` guarding what is not its own: a user's files in ``OUT/tb`` or
``OUT/snapshots`` are never cleared, a full disk is one line, ``~`` in ``--out`` is the home
folder on both sides of the run, opponents' files are judged against the run's start and kept
absolute, printed paths stay inert, and a refused ``--resume`` leaves no folder behind.

Runs train one update on a few rows.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import needs, needs_module

from league.cli.guild import main as guild

torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")

from test_train_hostile import ENVS, UPDATE, _one_line, _train  # noqa: E402 - after torch

from agents.learn.ppo import PolicyNet, save_model  # noqa: E402
from agents.learn.train_args import build_parser, options_from_args  # noqa: E402
from agents.learn.training import TrainOptions, train  # noqa: E402
from sim.commandline import printable  # noqa: E402


def _tree(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
            for p in sorted(folder.rglob("*"))}


# --- a user's files in OUT/tb and OUT/snapshots ----------------------------------------------

def _user_tb_run(out: Path) -> None:
    (out / "tb" / "my_other_experiment").mkdir(parents=True)
    (out / "tb" / "my_other_experiment" / "events.out.tfevents.123.host.1.0").write_text("mine")


def _user_notes(out: Path) -> None:
    (out / "snapshots").mkdir(parents=True)
    (out / "snapshots" / "notes.txt").write_text("mine")


def _user_link(out: Path) -> None:
    elsewhere = out.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "step-0000000056.pt").write_text("mine")
    out.mkdir()
    (out / "snapshots").symlink_to(elsewhere)


def _user_folder_named_as_a_snapshot(out: Path) -> None:
    (out / "snapshots" / "step-0000000056.pt").mkdir(parents=True)
    (out / "snapshots" / "step-0000000056.pt" / "mine.txt").write_text("mine")


@pytest.mark.parametrize("place", [_user_tb_run, _user_notes, _user_link,
                                   _user_folder_named_as_a_snapshot])
def test_a_new_run_refuses_a_user_s_files_in_tb_or_snapshots_and_keeps_them(
        tmp_path, capsys, place) -> None:
    out = tmp_path / "runs"
    place(out)
    (out / "tb").mkdir(exist_ok=True)  # beside them, what a dead run would leave
    (out / "tb" / "events.out.tfevents.1.host.2.0").write_bytes(b"a dead run's")
    kept = _tree(out.parent)
    for argv in ([], ["--resume"]):
        code, printed = _train(out, "--steps", str(UPDATE), *argv)
        assert code == 2, printed
        line = _one_line(capsys.readouterr().err)
        assert line.startswith("train: error: ") and "not a training run's folder" in line
    assert _tree(out.parent) == kept  # nothing deleted, nothing written


def test_clearing_under_the_lock_removes_only_what_a_run_writes(tmp_path) -> None:
    """A file that appears between the check and the clearing is not removed either."""
    from agents.learn.training import TrainingError, _clear_leftovers

    out = tmp_path / "run"
    (out / "snapshots").mkdir(parents=True)
    (out / "snapshots" / "step-0000000056.pt").write_bytes(b"a dead run's")
    (out / "snapshots" / "notes.txt").write_text("mine")
    with pytest.raises(TrainingError, match="notes.txt"):
        _clear_leftovers(out)
    assert (out / "snapshots" / "notes.txt").read_text() == "mine"
    assert (out / "snapshots" / "step-0000000056.pt").exists()  # refused: nothing cleared
    (out / "snapshots" / "notes.txt").unlink()
    (out / "snapshots" / ".step-0000000056.pt.tmp123").write_bytes(b"half")
    (out / "tb").mkdir()
    (out / "tb" / "events.out.tfevents.1796545673.vm.1940.0").write_bytes(b"a dead run's")
    _clear_leftovers(out)
    assert not (out / "snapshots").exists() and not (out / "tb").exists()


# --- a full disk -----------------------------------------------------------------------------

def _mount_tmpfs(folder: Path, size: str) -> bool:
    folder.mkdir()
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True)
    return done.returncode == 0


def test_a_full_disk_mid_run_is_one_line_and_exit_1(tmp_path, capsys) -> None:
    tiny = tmp_path / "tiny"
    needs(_mount_tmpfs(tiny, "400k"), "root and mount(8) to mount a 400 KB tmpfs (run as root)")
    try:
        code, printed = _train(tiny / "run", "--steps", str(UPDATE))
        err = capsys.readouterr().err
        assert code == 1, printed + err
        line = _one_line(err)
        assert "No space left on device" in line and "checkpoint.pt" in line
        assert not [p.name for p in (tiny / "run").iterdir() if ".tmp" in p.name]
    finally:
        subprocess.run(["umount", str(tiny)], check=True)


# --- ~ in --out --------------------------------------------------------------------------------

def test_tilde_in_out_is_the_home_folder_for_the_run_and_its_evaluation(
        tmp_path, monkeypatch, capsys) -> None:
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    code, printed = _train("~/flagrun", "--steps", str(UPDATE))
    assert code == 0, printed + capsys.readouterr().err
    assert (home / "flagrun" / "model.pt").is_file() and not (cwd / "~").exists()
    summary = json.loads(printed.strip().splitlines()[-2])
    assert summary["after"]["spec"] == f"ppo:{home / 'flagrun' / 'model.pt'}"
    config = cwd / "train.toml"
    config.write_text('out = "~/configrun"\n')
    args = build_parser().parse_args(["--config", str(config)])
    assert options_from_args(args).out == str(home / "configrun")


# --- opponents' model files ----------------------------------------------------------------------

def _opponent(path: Path, seed: int) -> str:
    from sim.batched.tables import tables_for
    from sim.rules.world import STANDARD_TOWN

    tables = tables_for(STANDARD_TOWN)
    torch.manual_seed(seed)
    save_model(PolicyNet(tables.obs_width, tables.n_actions), path, {"seed": seed})
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_opponent_changed_mid_run_is_named_on_resume(tmp_path) -> None:
    opponent = tmp_path / "opp.pt"
    began = _opponent(opponent, 1)
    spec = f"ppo:{opponent}"
    options = TrainOptions(out=str(tmp_path / "run"), steps=2 * UPDATE, envs=ENVS,
                           eval_episodes=2, plot=False, against=(spec, "factor"),
                           checkpoint_minutes=1e-9)  # a checkpoint every update

    def swap(done: float, figures: dict) -> None:  # the file changes under the running run
        if figures["steps"] == UPDATE:
            _opponent(opponent, 2)

    train(options, progress=swap)
    checkpoint = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    assert checkpoint["run"]["opponents"] == {spec: began}
    warned: list[str] = []
    train(replace(options, steps=3 * UPDATE, resume=True), warn=warned.append)
    assert any(spec in w and "not the file the run began with" in w for w in warned), warned
    checkpoint = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    assert checkpoint["run"]["opponents"] == {spec: began}  # a later resume still compares


def test_a_relative_opponent_path_resumes_from_another_folder(tmp_path, monkeypatch,
                                                              capsys) -> None:
    (tmp_path / "a" / "models").mkdir(parents=True)
    (tmp_path / "b" / "models").mkdir(parents=True)
    _opponent(tmp_path / "a" / "models" / "opp.pt", 1)
    _opponent(tmp_path / "b" / "models" / "opp.pt", 2)  # the same relative name, another file
    out = tmp_path / "run"
    monkeypatch.chdir(tmp_path / "a")
    code, printed = _train(out, "--steps", str(UPDATE), "--against", "ppo:models/opp.pt,factor")
    assert code == 0, printed + capsys.readouterr().err
    spec = f"ppo:{tmp_path / 'a' / 'models' / 'opp.pt'}"
    assert json.loads(printed.strip().splitlines()[-2])["against"] == [spec, "factor"]
    monkeypatch.chdir(tmp_path / "b")
    code, printed = _train(out, "--resume", "--steps", str(2 * UPDATE))
    assert code == 0, printed + capsys.readouterr().err
    assert json.loads(printed.strip().splitlines()[-2])["against"] == [spec, "factor"]
    assert "opponent" not in capsys.readouterr().err  # the file the run began with


# --- what is printed, what is made --------------------------------------------------------------

def test_control_characters_in_out_are_printed_inert(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    name = "n\nl\x1b[31mRED"
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = guild(["train", "--out", name, "--envs", str(ENVS), "--eval-episodes", "2",
                      "--no-plot", "--steps", str(UPDATE)])
    printed = buf.getvalue() + capsys.readouterr().err
    assert code == 0, printed
    assert "\x1b" not in printed
    assert buf.getvalue().splitlines()[-1] == f"ppo:{printable(str(tmp_path / name))}/model.pt"
    assert (tmp_path / name / "model.pt").is_file()


def test_a_refused_resume_makes_no_folder(tmp_path, capsys) -> None:
    code, _ = _train(tmp_path / "typo" / "deep" / "x", "--resume")
    assert code == 2
    assert "no checkpoint" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "typo").exists()


def test_resuming_a_finished_run_says_so_and_writes_nothing(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    code, printed = _train(out, "--steps", str(UPDATE))
    assert code == 0, printed
    kept = _tree(out)
    code, printed = _train(out, "--resume")
    assert code == 0, printed + capsys.readouterr().err
    lines = printed.strip().splitlines()
    assert "is complete" in lines[0] and len(lines) == 3, printed  # no evaluation, no training
    assert lines[-1] == f"ppo:{(out / 'model.pt').resolve()}"
    assert json.loads(lines[-2])["resumed_from"] is None  # the run's own summary
    assert _tree(out) == kept
    code, printed = _train(out, "--resume", "--steps", str(2 * UPDATE))  # more asked: it goes on
    assert code == 0 and json.loads(printed.strip().splitlines()[-2])["steps"] == 2 * UPDATE
