"""``guild train``'s knobs: every PPO hyperparameter is a flag (its default in ``--help``) and a
key of ``--config FILE.toml``, flags override the file, bad values and files are one line and
exit 2, ``summary.json`` records the hyperparameters and the file, a resume refuses other
hyperparameters, TensorBoard holds the paired evaluation's figures, and no lock file outlives a
run, however it ends.

Runs train one or two updates on a few rows.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import needs_module

from league.cli.guild import main as guild

torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")

from agents.champion import RECIPE_FILE  # noqa: E402
from agents.learn import training  # noqa: E402
from agents.learn.ppo_config import PPOConfig  # noqa: E402
from agents.learn.ppo_learn import Learner  # noqa: E402
from agents.learn.train_args import (  # noqa: E402
    MAX_CONFIG_BYTES,
    PPO_OPTIONS,
    build_parser,
    options_from_args,
)
from agents.learn.training import LOCK_NAME, TrainingError, TrainOptions, train  # noqa: E402

ENVS = 4
UPDATE = ENVS * 14
TINY = ["--envs", str(ENVS), "--eval-episodes", "2", "--quiet", "--no-plot"]
# Every hyperparameter away from its default, as flags and as the summary records them.
CHANGED = {"lr": 1e-3, "ent_coef": 0.05, "clip": 0.1, "gamma": 0.99, "gae_lambda": 0.9,
           "epochs": 2, "minibatch": 64, "episodes": 2, "vf_coef": 0.25, "max_grad_norm": 1.0,
           "hidden": [32, 16], "shared": False, "snapshot_every": 3, "anneal_steps": 5000,
           "fixed_share": 1.0}
CHANGED_FLAGS = ["--lr", "0.001", "--ent-coef", "0.05", "--clip", "0.1", "--gamma", "0.99",
                 "--gae-lambda", "0.9", "--epochs", "2", "--minibatch", "64", "--episodes", "2",
                 "--vf-coef", "0.25", "--max-grad-norm", "1", "--hidden", "32,16",
                 "--no-shared", "--snapshot-every", "3", "--anneal-steps", "5000",
                 "--fixed-share", "1", "--league"]  # (a share of 1: one learning seat a row)


def guild_train(argv: list[str]) -> tuple[int, str]:
    """``guild train ARGV``: its exit code and standard output."""
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = guild(["train", *argv])
    return code, buf.getvalue()


def _train(out: Path, *args: str) -> tuple[int, str]:
    return guild_train(["--out", str(out), *TINY, *args])


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def _one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def _options(*argv: str) -> TrainOptions:
    return options_from_args(build_parser().parse_args(list(argv)))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- flags -----------------------------------------------------------------------------------

def test_every_hyperparameter_is_a_flag_with_its_default_in_help() -> None:
    assert {o.name for o in PPO_OPTIONS} == set(PPOConfig.names()) == set(CHANGED)
    text = " ".join(build_parser().format_help().split())  # unwrapped
    for flag, default in (("--lr LR", "0.0003"), ("--ent-coef C", "0.02"), ("--clip EPS", "0.2"),
                          ("--gamma G", "1"), ("--gae-lambda L", "0.95"), ("--epochs N", "4"),
                          ("--minibatch N", "4096"), ("--episodes N", "1"),
                          ("--vf-coef C", "0.5"), ("--max-grad-norm N", "0.5"),
                          ("--hidden W,W", "128,128"), ("--shared, --no-shared", "true"),
                          ("--snapshot-every N", "25"), ("--anneal-steps N", "0"),
                          ("--fixed-share F", "0.5"),
                          ("--against P1,P2,...", "factor,magpie"), ("--league, --no-league",
                                                                     "false"),
                          ("--config FILE.toml", "")):
        assert flag in text, flag
        assert not default or f"(default {default})" in text.rsplit(flag, 1)[1][:200], flag


def test_flags_reach_the_learner_and_the_summary(tmp_path) -> None:
    out = tmp_path / "run"
    code, printed = _train(out, "--steps", "1", *CHANGED_FLAGS)
    assert code == 0, printed
    summary = _summary(out)
    assert summary["hyperparameters"] == CHANGED and summary["config"] is None
    assert summary["steps"] == 2 * UPDATE  # --episodes 2: two episodes of every row an update
    state = torch.load(out / "checkpoint.pt", weights_only=True)["learner"]
    assert state["config"] == CHANGED
    assert [g["lr"] for g in state["optimizer"]["param_groups"]] == [1e-3]
    assert torch.load(out / "model.pt", weights_only=True)["network"] == {
        "hidden": [32, 16], "shared": False}


@pytest.mark.parametrize("argv, flag, span", [
    (["--lr", "0"], "--lr", "(0, 1]"), (["--lr", "2"], "--lr", "(0, 1]"),
    (["--lr", "fast"], "--lr", "(0, 1]"), (["--ent-coef", "-0.1"], "--ent-coef", "[0, 1]"),
    (["--clip", "0"], "--clip", "(0, 1]"), (["--gamma", "1.5"], "--gamma", "[0, 1]"),
    (["--gae-lambda", "nan"], "--gae-lambda", "[0, 1]"),
    (["--epochs", "0"], "--epochs", "from 1 to 100"),
    (["--minibatch", "4"], "--minibatch", "from 8 to"),
    (["--episodes", "2.5"], "--episodes", "from 1 to"),
    (["--vf-coef", "inf"], "--vf-coef", "[0, 10]"),
    (["--max-grad-norm", "0"], "--max-grad-norm", "(0, 1000]"),
    (["--hidden", "0"], "--hidden", "layer widths"), (["--hidden", "a,b"], "--hidden", "1 to 16"),
    (["--snapshot-every", "0"], "--snapshot-every", "from 1 to"),
    (["--steps", "0"], "--steps", "at least 1"), (["--device", "tpu"], "--device", "cpu"),
])
def test_a_bad_flag_is_one_line_naming_it_and_the_range(argv, flag, span, tmp_path,
                                                        capsys) -> None:
    out = tmp_path / "out"
    assert guild(["train", "--out", str(out), *TINY, *argv]) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"argument {flag}" in line and span in line, line
    assert not out.exists()


def test_the_library_checks_hyperparameters_alike() -> None:
    for name, bad in (("lr", 0.0), ("gamma", 2.0), ("minibatch", 4), ("epochs", True),
                      ("clip", float("nan")), ("hidden", ())):
        with pytest.raises(ValueError, match=f"ppo {name} must be|hidden must list"):
            PPOConfig(**{name: bad})


@pytest.mark.parametrize("argv, named, needs", [
    (["--fixed-share", "0.75"], "fixed-share 0.75", "--league"),
    (["--fixed-share", "0.75", "--self-play"], "fixed-share 0.75", "--league"),
    (["--snapshot-every", "3"], "snapshot-every 3", "--league or --self-play"),
    (["--config", "snapshot-every = 140\n"], "snapshot-every 140", "--league or --self-play"),
])
def test_a_pool_option_without_its_pool_is_refused(argv, named, needs, tmp_path,
                                                   capsys) -> None:
    """--fixed-share divides the league's seats and --snapshot-every feeds self-play's and the
    league's pools: without them they would be recorded as the run's and change nothing."""
    if argv[0] == "--config":
        (tmp_path / "c.toml").write_text(argv[1], encoding="utf-8")
        argv = ["--config", str(tmp_path / "c.toml")]
    out = tmp_path / "out"
    assert guild(["train", "--out", str(out), "--steps", "1", *TINY, *argv]) == 2
    line = _one_line(capsys.readouterr().err)
    assert named in line and f"only with {needs}" in line, line
    assert not out.exists()


def test_a_pool_option_with_its_pool_is_taken() -> None:
    with pytest.raises(TrainingError, match="fixed-share 0.25 is used only with --league"):
        TrainOptions(ppo=PPOConfig(fixed_share=0.25))  # built in code: away from the default
    assert TrainOptions(league=True, ppo=PPOConfig(fixed_share=0.25)).ppo.fixed_share == 0.25
    assert _options("--self-play", "--snapshot-every", "3").ppo.snapshot_every == 3
    league = _options("--league", "--snapshot-every", "3", "--fixed-share", "0.25")
    assert (league.ppo.snapshot_every, league.ppo.fixed_share) == (3, 0.25)
    # a config file read without its league (here --no-league) is refused as a flag is
    with pytest.raises(TrainingError, match="snapshot-every 140 is used only with --league"):
        _options("--config", str(RECIPE_FILE), "--no-league")


# --- the config file -------------------------------------------------------------------------

def test_a_config_file_sets_options_and_flags_override_it(tmp_path) -> None:
    config = _write(tmp_path / "train.toml", "lr = 1e-3\nent-coef = 0.05\nhidden = [32, 16]\n"
                    "shared = false\nmax_grad_norm = 2\nenvs = 3\nseed = 9\nplot = false\n")
    o = _options("--config", str(config), "--lr", "0.002", "--seed", "4")
    assert o.ppo == PPOConfig(lr=0.002, ent_coef=0.05, hidden=(32, 16), shared=False,
                              max_grad_norm=2.0)
    assert (o.envs, o.seed, o.plot) == (3, 4, False)
    assert o.asked == {"lr", "ent_coef", "hidden", "shared", "max_grad_norm", "envs", "seed",
                       "plot"}
    assert _options().ppo == PPOConfig() and _options().asked == frozenset()
    assert _options("--n-envs", "5").envs == 5
    assert _options("--config", str(_write(tmp_path / "n.toml", "n_envs = 6\n"))).envs == 6


def test_a_config_file_trains_and_summary_json_records_it(tmp_path) -> None:
    config = _write(tmp_path / "train.toml",
                    "# a small run\nlr = 1e-3\nent_coef = 0.05\nhidden = \"32,16\"\n"
                    f"envs = {ENVS}\neval-episodes = 2\nplot = false\nsteps = 1\n")
    out = tmp_path / "run"
    code, printed = guild_train(["--out", str(out), "--config", str(config), "--quiet",
                                 "--ent-coef", "0.01"])
    assert code == 0, printed
    summary = _summary(out)
    assert summary["hyperparameters"] == {**PPOConfig().to_dict(), "lr": 1e-3,
                                          "ent_coef": 0.01, "hidden": [32, 16]}
    assert summary["config"] == {"path": str(config.resolve()),
                                 "sha256": hashlib.sha256(config.read_bytes()).hexdigest()}
    assert summary["envs"] == ENVS and summary["steps"] == UPDATE
    assert not (out / "curve.png").exists()



@pytest.mark.parametrize("text, words", [
    ("lr = 5\n", ["lr must be a number in (0, 1]", "got 5"]),
    ("lr = \"fast\"\n", ["lr must be a number in (0, 1]"]),
    ("epochs = 2.0\n", ["epochs must be a whole number"]),
    ("shared = 1\n", ["shared must be true or false"]),
    ("hidden = [0]\n", ["hidden must list 1 to 16 layer widths"]),
    ("device = \"tpu\"\n", ["device must be one of auto, cpu, cuda"]),
    ("learning_rate = 0.1\n", ["unknown key 'learning_rate'"]),
    ("ent_cof = 0.1\n", ["unknown key 'ent_cof'", "did you mean 'ent_coef'"]),
    ("[ppo]\nlr = 0.1\n", ["unknown key 'ppo'"]),
    ("resume = true\n", ["--resume is a flag of this command only"]),
    ("ent-coef = 0.1\nent_coef = 0.2\n", ["'ent-coef' and 'ent_coef' both set ent-coef"]),
    ("lr = \n", ["is not TOML"]),
    ("lr: 0.1\n", ["is not TOML"]),
    (b"\xff\xfe", ["is not TOML (not UTF-8 text)"]),
    ("#" * (MAX_CONFIG_BYTES + 1), ["larger than 64 KiB"]),
    ("lr = " + "[" * 30000 + "]" * 30000, ["nested too deeply"]),  # hostile: under 64 KiB
    ("seed = " + "1" * 5000, ["a number too long"]),  # past Python's int digit limit
])
def test_a_bad_config_file_is_one_line_naming_the_file_and_key(text, words, tmp_path,
                                                               capsys) -> None:
    config = tmp_path / "train.toml"
    if isinstance(text, bytes):
        config.write_bytes(text)
    else:
        _write(config, text)
    out = tmp_path / "out"
    assert guild(["train", "--out", str(out), "--config", str(config)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("train: error: ") and f"--config {str(config)!r}" in line, line
    assert all(w in line for w in words), line
    assert not out.exists()
    assert training.main(["--out", str(out), "--config", str(config)]) == 2  # the example too
    assert line == _one_line(capsys.readouterr().err)


def test_a_config_that_is_no_file_is_refused_without_waiting(tmp_path, capsys) -> None:
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # opened without a writer, a plain open() would wait forever
    for path, words in ((tmp_path / "missing.toml", "cannot read it"),
                        (tmp_path, "not a regular file"), (fifo, "not a regular file")):
        assert guild(["train", "--out", str(tmp_path / "out"), "--config", str(path)]) == 2
        assert words in _one_line(capsys.readouterr().err)


# --- resuming ------------------------------------------------------------------------------

def test_a_resume_refuses_other_hyperparameters_and_keeps_its_own(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    config = _write(tmp_path / "train.toml", "lr = 1e-3\n")
    assert _train(out, "--steps", "1", "--config", str(config))[0] == 0
    kept = (out / "checkpoint.pt").read_bytes()
    for argv, said in ((["--lr", "0.002"], "lr 0.001 (asked: 0.002)"),
                       (["--lr", "0.0003"], "lr 0.001 (asked: 0.0003)"),  # the default, named
                       (["--hidden", "64"], "hidden 128,128 (asked: 64)")):
        code, _ = _train(out, "--resume", "--steps", str(2 * UPDATE), *argv)
        assert code == 2
        line = _one_line(capsys.readouterr().err)
        assert "--resume" in line and said in line, line
        assert (out / "checkpoint.pt").read_bytes() == kept and not (out / LOCK_NAME).exists()
    _write(config, "lr = 1e-3\nseed = 0\n")  # the same hyperparameters, another file
    code, printed = _train(out, "--resume", "--steps", str(2 * UPDATE), "--config", str(config))
    assert code == 0, printed
    summary = _summary(out)
    assert summary["hyperparameters"]["lr"] == 1e-3 and summary["resumed_from"] == UPDATE
    assert summary["config"]["sha256"] == hashlib.sha256(config.read_bytes()).hexdigest()
    code, printed = _train(out, "--resume", "--steps", str(3 * UPDATE))  # nothing asked
    assert code == 0, printed
    summary = _summary(out)  # the run's file is still where its options came from
    assert summary["hyperparameters"]["lr"] == 1e-3 and summary["steps"] == 3 * UPDATE
    assert summary["config"]["sha256"] == hashlib.sha256(config.read_bytes()).hexdigest()
    code, printed = _train(out, "--resume")  # the documented form: it finishes the run asked
    assert code == 0, printed
    assert _summary(out)["steps"] == 3 * UPDATE  # not the default 100M steps, nor 10 minutes


def test_a_run_killed_before_its_first_checkpoint_leaves_a_folder_a_new_run_takes(
        tmp_path) -> None:
    # Its snapshots and TensorBoard log, but no checkpoint: the folder was refused as not a
    # training run's, by --resume and a new run alike; a new run now clears them and begins.
    out = tmp_path / "run"
    (out / "snapshots").mkdir(parents=True)
    (out / "snapshots" / "step-0000099999.pt").write_bytes(b"a dead run's")
    (out / "tb").mkdir()
    (out / "tb" / "events.out.tfevents.1.dead").write_bytes(b"a dead run's")
    code, printed = _train(out, "--steps", "1")
    assert code == 0, printed
    assert not (out / "snapshots" / "step-0000099999.pt").exists()
    assert not (out / "tb" / "events.out.tfevents.1.dead").exists()
    assert "step-0000099999.pt" not in json.dumps(_summary(out))


def test_envs_times_episodes_is_bounded_before_any_work(tmp_path, capsys) -> None:
    # Each alone in its range, together 26 GB of rollouts: refused at once, not after them.
    assert guild_train(["--out", str(tmp_path / "run"), "--envs", "1024", "--episodes", "1000",
                        "--steps", "1"]) == (2, "")
    line = _one_line(capsys.readouterr().err)
    assert "envs x episodes must be at most 16,384" in line and "1,024 x 1,000" in line
    assert not (tmp_path / "run").exists()


def test_a_file_error_mid_run_is_one_line_and_leaves_no_temp_file(tmp_path, monkeypatch,
                                                                    capsys) -> None:
    import errno

    from agents.learn import training_loop
    from agents.learn.ppo_records import write_text

    blocked = tmp_path / "blocked"
    (blocked / "inside").mkdir(parents=True)  # a folder where a file should be replaced
    with pytest.raises(OSError):
        write_text(blocked, "text")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocked"]  # no .blocked.tmpN

    def full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(training_loop, "write_text", full)
    code, _ = _train(tmp_path / "run", "--steps", "1")
    line = _one_line(capsys.readouterr().err)
    assert code == 1 and "train: the run stopped on a file error" in line
    assert "No space left on device; fix it" in line and "add --resume" in line


def test_a_run_without_a_checkpoint_is_not_sent_to_resume(tmp_path, capsys) -> None:
    # A model.pt without checkpoint.pt: "add --resume" led to "--resume: no checkpoint".
    out = tmp_path / "run"
    out.mkdir()
    (out / "model.pt").write_bytes(b"a model")
    assert _train(out, "--steps", "1")[0] == 2
    line = _one_line(capsys.readouterr().err)
    assert "no checkpoint to resume it from): choose a new --out" in line and "add --resume" \
        not in line
    assert (out / "model.pt").read_bytes() == b"a model"


def test_a_library_resume_compares_what_differs_from_the_defaults(tmp_path) -> None:
    options = TrainOptions(out=str(tmp_path), steps=UPDATE, envs=ENVS, eval_episodes=2,
                           plot=False, ppo=PPOConfig(ent_coef=0.05))
    train(options)
    with pytest.raises(TrainingError, match=r"ent-coef 0.05 \(asked: 0.01\)"):
        train(replace(options, resume=True, steps=2 * UPDATE, ppo=PPOConfig(ent_coef=0.01)))
    summary = train(replace(options, resume=True, steps=2 * UPDATE, ppo=PPOConfig()))
    assert summary["hyperparameters"]["ent_coef"] == 0.05


# --- TensorBoard ---------------------------------------------------------------------------

def _scalars(out: Path, tag: str) -> list[tuple[int, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(out / "tb"))
    events.Reload()
    return [(e.step, e.value) for e in events.Scalars(tag)]


def _f32(x: float) -> float:
    return float(np.float32(x))  # TensorBoard keeps scalars as float32


def test_tensorboard_holds_the_evaluation_at_the_steps_it_was_measured(tmp_path) -> None:
    needs_module("tensorboard", "'guild-game[train]'")
    out = tmp_path / "run"
    assert _train(out, "--steps", str(UPDATE))[0] == 0
    first = _summary(out)
    # TensorBoard reads a folder's event files in name order, "...<unix second>.<host>.<pid>.
    # <writer count>": two sessions of one process in one second can sort out of order (a
    # count of 10 before one of 9). Runs of people are minutes apart; these are not.
    time.sleep(1.05)
    assert _train(out, "--steps", str(2 * UPDATE), "--resume")[0] == 0
    summary = _summary(out)
    assert summary["tensorboard"] == str(out / "tb")
    assert summary["before"] == first["before"]
    for name in ("diff", "low", "high", "mean", "baseline_mean"):
        assert _scalars(out, f"eval/{name}") == [
            (0, _f32(first["before"][name])), (UPDATE, _f32(first["after"][name])),
            (2 * UPDATE, _f32(summary["after"][name]))], name
    rows = [r.split(",") for r in (out / "curve.csv").read_text().splitlines()[1:]]
    assert _scalars(out, "train/mean_score") == [
        (int(r[0]), pytest.approx(float(r[2]), abs=1e-5)) for r in rows]


# --- lock files ----------------------------------------------------------------------------

def test_no_lock_file_outlives_a_finished_or_refused_run(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert _train(out, "--steps", "1")[0] == 0
    assert not (out / LOCK_NAME).exists()
    assert _train(out, "--steps", "1")[0] == 2  # refused inside the lock: another run is here
    assert "--resume" in _one_line(capsys.readouterr().err)
    assert not (out / LOCK_NAME).exists()
    (out / LOCK_NAME).write_text("")  # left by a run killed with SIGKILL
    assert _train(out, "--steps", str(2 * UPDATE), "--resume")[0] == 0
    assert not (out / LOCK_NAME).exists()


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_no_lock_file_outlives_ctrl_c_or_a_crash(stop, tmp_path, monkeypatch) -> None:
    def update(self):
        raise stop("stopped")

    monkeypatch.setattr(Learner, "update", update)
    options = TrainOptions(out=str(tmp_path / "run"), steps=UPDATE, envs=ENVS, eval_episodes=2,
                           plot=False)
    with pytest.raises(stop):
        train(options)
    assert (tmp_path / "run" / "checkpoint.pt").is_file() == (stop is KeyboardInterrupt)
    assert not (tmp_path / "run" / LOCK_NAME).exists()


def test_the_lock_stays_while_its_run_lives_and_goes_with_it(tmp_path) -> None:
    out = tmp_path / "run"
    options = TrainOptions(out=str(out), steps=2 * UPDATE, envs=ENVS, eval_episodes=2,
                           plot=False)
    seen: list[bool] = []

    def second(done: float, figures: dict) -> None:  # runs while the first holds --out
        if not seen:
            with pytest.raises(TrainingError, match="in use by another"):
                train(replace(options, resume=True))
            seen.append((out / LOCK_NAME).exists())  # the refused run left the first's lock

    train(options, progress=second)
    assert seen == [True] and not (out / LOCK_NAME).exists()


def test_a_lock_deleted_by_a_run_ending_meanwhile_is_taken_anew(tmp_path, monkeypatch) -> None:
    """Opened, then deleted by the run that held it before this one could lock it: locking the
    deleted file would guard nothing, so the run locks a new one."""
    fcntl = needs_module("fcntl")
    path = tmp_path / LOCK_NAME
    path.write_text("")
    calls: list[int] = []

    class Ending:
        LOCK_EX, LOCK_NB = fcntl.LOCK_EX, fcntl.LOCK_NB

        @staticmethod
        def flock(f, how):
            if not calls:
                path.unlink()  # the other run ends between our open and our lock
            calls.append(how)
            return fcntl.flock(f, how)

    monkeypatch.setattr(training, "fcntl", Ending)
    with training._hold(tmp_path):
        assert len(calls) == 2 and path.exists()
    assert not path.exists()
