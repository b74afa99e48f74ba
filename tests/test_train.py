"""Training: ``guild train`` runs our PPO on the batched engine and writes the model,
checkpoint, curve, TensorBoard log and summary; a league ranks the model; runs are deterministic
per seed and resume exactly from a checkpoint, even after SIGKILL; self-play lineups learn only
in the learner's seats; bad input is one line and exit 2 (``test_ppo_policy.py``: the model
files and the policies that play them).

Runs train a few hundred steps only (scores are not asserted: learning to a useful score
takes minutes, and the README reports what a full run reaches).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import needs_module

from league.cli.guild import main as guild
from sim.codec.action_table import TABLE_VERSION

torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")

from agents.learn.training import TrainingError, TrainOptions, train  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENVS = 16
UPDATE = ENVS * 14            # learning-seat steps per update (one lineup seat per row)
TINY = ["--envs", str(ENVS), "--eval-episodes", "2", "--quiet"]


def _train(out: Path, *args: str) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = guild(["train", "--out", str(out), *TINY, *args])
    return code, buf.getvalue()


def _weights(out: Path) -> dict:
    return torch.load(out / "model.pt", weights_only=True)["weights"]


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, str]:
    """Two updates through ``guild train``, shared by the tests below."""
    out = tmp_path_factory.mktemp("train")
    code, printed = _train(out, "--steps", str(2 * UPDATE), "--seed", "3")
    assert code == 0, printed
    return out, printed


def test_training_writes_the_model_its_records_and_the_summary_last(trained) -> None:
    out, printed = trained
    summary = json.loads((out / "summary.json").read_text())
    *_, line, last = printed.strip().splitlines()
    assert json.loads(line) == summary and last == summary["policy"]  # the spec, last
    model = out / "model.pt"
    assert summary["policy"] == f"ppo:{model.resolve()}"  # docs/api.md §3: the spec that plays it
    assert summary["steps"] == 2 * UPDATE and summary["seed"] == 3 and summary["envs"] == ENVS
    assert summary["device"] == "cpu" and summary["resumed_from"] is None
    for when in ("before", "after"):
        e = summary[when]
        assert e["low"] <= e["diff"] <= e["high"] and e["engine"] == "batched"
        assert e["seeds"] == [100000, 100001] and e["against"] == ["factor", "magpie"]
    assert "before training:" in printed and "after training:" in printed
    data = torch.load(model, weights_only=True)  # plain tensors and dicts only
    assert data["table_version"] == TABLE_VERSION and data["n_actions"] == 267
    assert data["obs_width"] == 460 and data["network"] == {"hidden": [128, 128],
                                                           "shared": True}
    assert data["provenance"]["seed"] == 3 and data["provenance"]["steps"] == 2 * UPDATE
    rows = (out / "curve.csv").read_text().splitlines()
    assert rows[0].startswith("steps,seconds,mean_score") and len(rows) == 3
    assert [int(r.split(",")[0]) for r in rows[1:]] == [UPDATE, 2 * UPDATE]
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "checkpoint.pt").is_file()
    needs_module("tensorboard", "'guild-game[train]'")
    assert summary["tensorboard"] == str(out / "tb")
    assert any(p.name.startswith("events.out.tfevents") for p in (out / "tb").iterdir())


def test_a_seed_reproduces_its_weights_and_another_does_not(trained, tmp_path) -> None:
    out, _ = trained
    for seed in (3, 4):
        code, printed = _train(tmp_path / str(seed), "--steps", str(2 * UPDATE), "--seed",
                               str(seed), "--no-plot")
        assert code == 0, printed
    assert _same(_weights(tmp_path / "3"), _weights(out))
    assert not _same(_weights(tmp_path / "4"), _weights(out))


def test_resume_continues_exactly_where_the_run_stopped(trained, tmp_path, capsys) -> None:
    """Half the steps, then --resume to the full count: the same weights as one run (and the
    library entry point prints nothing)."""
    out, _ = trained
    half = TrainOptions(out=str(tmp_path), steps=UPDATE, seed=3, envs=ENVS, eval_episodes=2,
                        plot=False)
    train(half)
    first = train(replace(half, steps=2 * UPDATE, resume=True))
    assert capsys.readouterr() == ("", "")
    assert first["resumed_from"] == UPDATE and first["steps"] == 2 * UPDATE
    assert _same(_weights(tmp_path), _weights(out))
    assert len((tmp_path / "curve.csv").read_text().splitlines()) == 3


def test_resume_with_another_thread_count_says_the_weights_will_differ(tmp_path) -> None:
    half = TrainOptions(out=str(tmp_path), steps=UPDATE, seed=3, envs=ENVS, eval_episodes=2,
                        plot=False, threads=1)
    train(half)
    said: list[str] = []
    train(replace(half, steps=2 * UPDATE, resume=True, threads=2), warn=said.append)
    assert any("1 torch threads" in m and "--threads 1" in m for m in said), said


def test_a_run_killed_by_sigkill_resumes_from_its_last_checkpoint(tmp_path) -> None:
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "league", "train", "--out", str(out), *TINY,
           "--minutes", "5", "--checkpoint-minutes", "0.0001"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    checkpoint = out / "checkpoint.pt"
    try:
        deadline = time.monotonic() + 60
        while not (checkpoint.is_file() and _steps(checkpoint) >= 3 * UPDATE):
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no checkpoint within a minute"
            time.sleep(0.2)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    kept = _steps(checkpoint)  # the kill may have come between two checkpoints: never inside
    code, printed = _train(out, "--resume", "--steps", str(kept + UPDATE))
    assert code == 0, printed
    summary = json.loads(printed.strip().splitlines()[-2])
    assert summary["resumed_from"] == kept and summary["steps"] == kept + UPDATE
    assert not (out / ".train.lock").exists()  # the killed run's, taken over and deleted


def _steps(checkpoint: Path) -> int:
    return int(torch.load(checkpoint, weights_only=True)["learner"]["steps"])


def test_a_league_ranks_the_model(trained, tmp_path, capsys) -> None:
    out, _ = trained
    spec = f"ppo:{out / 'model.pt'}"
    league = tmp_path / "league"
    code = guild(["league", "--policies", f"{spec},factor,magpie", "--episodes", "6",
                  "--workers", "2", "--seed", "1", "--out", str(league)])
    assert code == 0, capsys.readouterr().err
    rows = [json.loads(x) for x in (league / "results.jsonl").read_text().splitlines()]
    played = set()
    for r in rows:
        seats = [s for s, name in enumerate(r["lineup"]) if name == spec]
        for seat in seats:  # it decided every turn itself: no fault, no factor fallback
            assert r["fallbacks"][seat] == 0 and r["faults"][seat] == {}
        played.update(seats)
    assert len(rows) == 6 and played == set(range(6))
    ladder = json.loads((league / "ladder.json").read_text())
    assert spec in {e["policy"] for e in ladder["policies"]}


# --- bad input -----------------------------------------------------------------------------------

def _one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize("argv", [["--steps", "0"], ["--steps", "many"], ["--minutes", "-1"],
                                  ["--envs", "0"], ["--n-envs", "0"], ["--device", "tpu"],
                                  ["--checkpoint-minutes", "0"], ["--bogus"]])
def test_bad_command_lines_print_one_line_and_exit_2(argv, capsys) -> None:
    assert guild(["train", *argv]) == 2
    _one_line(capsys.readouterr().err)
    assert _example().main(argv) == 2  # the example script is the same command
    _one_line(capsys.readouterr().err)


def _example():
    """examples/train_ppo.py as a module (a thin front for ``agents.learn.training``)."""
    import importlib.util

    path = ROOT / "examples" / "train_ppo.py"
    spec = importlib.util.spec_from_file_location("train_ppo", path)
    assert spec is not None and spec.loader is not None, f"{path} is missing"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cuda_trains_on_a_gpu_and_is_refused_clearly_without_one(tmp_path, capsys) -> None:
    code, _ = _train(tmp_path, "--device", "cuda", "--steps", str(UPDATE))
    if torch.cuda.is_available():
        assert code == 0 and json.loads((tmp_path / "summary.json").read_text())["device"] \
            == "cuda"
    else:
        assert code == 2
        assert "no CUDA GPU" in _one_line(capsys.readouterr().err)
        assert not (tmp_path / "model.pt").exists()


@pytest.mark.parametrize("content", [None, b"\x00junk", "foreign", "another table",
                                     "damaged"])
def test_resume_without_a_usable_checkpoint_is_refused(tmp_path, capsys, content) -> None:
    own = {"format": "guild-ppo-checkpoint", "table_version": TABLE_VERSION}
    if content is not None:
        data = {"foreign": {"format": "something else"},
                "another table": {**own, "table_version": TABLE_VERSION - 1},
                "damaged": {**own, **dict.fromkeys(("run", "learner", "before"), {}),
                            "curve": [], "seconds": 0.0}}.get(content, content)
        if isinstance(data, bytes):
            (tmp_path / "checkpoint.pt").write_bytes(data)
        else:
            torch.save(data, tmp_path / "checkpoint.pt")
    code, _ = _train(tmp_path, "--resume", "--steps", str(UPDATE))
    assert code == 2
    assert "--resume" in _one_line(capsys.readouterr().err)


def test_library_options_are_checked(tmp_path) -> None:
    for bad in ({"envs": 0}, {"device": "tpu"}, {"minutes": float("inf")}, {"steps": True}):
        with pytest.raises(TrainingError):
            TrainOptions(**bad)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(TrainingError, match="not a directory"):
        train(TrainOptions(out=str(f), steps=UPDATE, envs=ENVS))


def test_self_play_lineups_learn_only_in_the_learners_seats(tmp_path) -> None:
    """Every row holds a learner; snapshots and baselines fill the rest; the rollout keeps
    exactly the learners' seat-steps; ``--self-play`` trains through the command."""
    from agents.learn.ppo_arena import LEARNER, Arena
    from agents.learn.ppo_config import PPOConfig
    from agents.learn.ppo_learn import Learner

    learner = Learner(PPOConfig(snapshot_every=1), ENVS, True, 5)
    learner.update()  # snapshot_every=1: the learner's first snapshot joins the pool
    arena = learner.arena
    assert len(arena.snapshots) == 1
    m = arena.start()
    lineup = arena.lineup
    assert (lineup == LEARNER).any(1).all() and m == (lineup == LEARNER).sum()
    assert set(np.unique(lineup)) <= {0, 1, 2, 3}
    before = learner.steps
    learner.update()
    assert learner.steps - before == 14 * (learner.arena.lineup == LEARNER).sum()
    lineups = Arena(ENVS, False, 5, torch.Generator())
    lineups.start()
    assert ((lineups.lineup == LEARNER).sum(1) == 1).all()
    assert set(np.unique(lineups.lineup)) == {0, 1, 2}
    code, printed = _train(tmp_path, "--self-play", "--steps", "1", "--no-plot")
    assert code == 0, printed
    assert json.loads(printed.strip().splitlines()[-2])["self_play"] is True
