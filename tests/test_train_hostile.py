"""Hostile input for ``guild train``, ``ppo:`` model files and ``guild evaluate``: numbers out
of any sane range are refused with a bound before anything is allocated, another run's files
are never overwritten, two trainings never share an ``--out``, SIGTERM keeps a checkpoint,
damaged or adversarial checkpoints and models are refused in one line, and a resumed run keeps
its own evaluation seeds.

Everything trains a handful of updates on a few rows.
"""

from __future__ import annotations

import hashlib
import io
import json
import signal
import subprocess
import sys
import time
import zipfile
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import HeldLock, needs_module

from league.cli.guild import main as guild

torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")

from agents import make_policy  # noqa: E402
from agents.learn import stopping, training_loop  # noqa: E402
from agents.learn.ppo import MAX_MODEL_BYTES, ModelError, PolicyNet, save_model  # noqa: E402
from agents.learn.ppo_records import Board  # noqa: E402
from agents.learn.stopping import Terminated, interruptible, stops_held  # noqa: E402
from agents.learn.training import TrainingError, TrainOptions, train  # noqa: E402
from sim.policies import BATCHED_POLICIES  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENVS = 4
UPDATE = ENVS * 14
TINY = ["--envs", str(ENVS), "--eval-episodes", "2", "--quiet", "--no-plot"]


def _train(out: str | Path, *args: str) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = guild(["train", "--out", str(out), *TINY, *args])
    return code, buf.getvalue()


def _one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def _digests(out: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.iterdir()
            if p.is_file()}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished tiny run (one update), shared read-only by the tests below."""
    out = tmp_path_factory.mktemp("hostile") / "run"
    code, printed = _train(out, "--steps", str(UPDATE), "--seed", "7")
    assert code == 0, printed
    return out


# --- numbers -------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["--envs", "1000000000"],          # would allocate terabytes for the engine's rows
    ["--threads", "100000000"],        # torch segfaulted
    ["--seed", "-1"],                  # a numpy traceback after the evaluation
    ["--seed", "1" + "0" * 30],        # a torch overflow traceback
    ["--eval-episodes", "1"],          # no interval from one seed: a traceback after setup
    ["--eval-episodes", "1000000000"],
    ["--minutes", "nan"], ["--minutes", "inf"], ["--steps", "1e30"],
    ["--checkpoint-minutes", "-inf"],
])
def test_numbers_out_of_range_are_refused_before_any_work(argv, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert guild(["train", "--out", str(out), *TINY, *argv]) == 2
    _one_line(capsys.readouterr().err)
    assert not out.exists()


def test_library_options_have_upper_bounds() -> None:
    for bad in ({"envs": 10 ** 9}, {"threads": 10 ** 8}, {"seed": -1}, {"seed": 2 ** 64},
                {"eval_episodes": 1}, {"eval_episodes": 10 ** 9}):
        with pytest.raises(TrainingError, match=next(iter(bad))):
            TrainOptions(**bad)


# --- the output directory ------------------------------------------------------------------------

def test_a_new_run_never_overwrites_the_run_already_in_out(run, capsys) -> None:
    kept = _digests(run)
    code, _ = _train(run, "--steps", str(UPDATE), "--seed", "8")
    assert code == 2
    assert "--resume" in _one_line(capsys.readouterr().err)
    assert _digests(run) == kept



def _no_writes(monkeypatch) -> None:
    """Fail the test if training gets as far as taking its lock in ``--out`` (the first thing
    it writes there): a refusal must come before."""
    from agents.learn import training

    def hold(out):
        pytest.fail(f"training took its lock in {out}")

    monkeypatch.setattr(training, "_hold", hold)


def _league_folder(tmp_path: Path, name: str) -> Path:
    """A folder holding the league file ``name`` (``league.json`` or ``results.jsonl``)."""
    folder = tmp_path / f"league-{name}"
    folder.mkdir()
    (folder / name).write_text("{}\n")
    return folder


def test_out_refuses_a_filesystem_root_a_league_and_a_folder_of_other_files(
        tmp_path, monkeypatch, capsys) -> None:
    from league.core.store import MANIFEST, RESULTS

    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("mine")
    (foreign / "data.csv").write_text("1,2")
    root_link = tmp_path / "root"
    root_link.symlink_to("/")
    cases = {"/": "root of a filesystem", str(root_link): "root of a filesystem",
             str(_league_folder(tmp_path, MANIFEST)): "league",
             str(_league_folder(tmp_path, RESULTS)): "league",
             str(foreign): "not a training run's"}
    _no_writes(monkeypatch)
    for out, words in cases.items():
        kept = _digests(Path(out)) if out.startswith(str(tmp_path)) else None
        for argv in ([], ["--resume"]):
            assert guild(["train", "--out", out, *TINY, "--steps", str(UPDATE), *argv]) == 2
            line = _one_line(capsys.readouterr().err)
            assert line.startswith("train: error: ") and words in line, (out, argv, line)
        assert kept is None or _digests(Path(out)) == kept
    assert "'thesis.tex'" in line and "'data.csv'" in line
    with pytest.raises(TrainingError, match="league"):  # the library refuses alike
        train(TrainOptions(out=str(tmp_path / f"league-{MANIFEST}"), steps=UPDATE, envs=ENVS,
                           eval_episodes=2))


def test_out_still_takes_a_new_an_empty_or_a_runs_own_folder(run, tmp_path) -> None:
    from agents.learn.training import check_out

    empty = tmp_path / "empty"
    empty.mkdir()
    leftovers = tmp_path / "killed"  # a run killed before its first files, with a plot folder
    leftovers.mkdir()
    for name in (".train.lock", ".model.pt.tmp123", "curve.png"):
        (leftovers / name).write_text("")
    (leftovers / "tb").mkdir()
    mixed = tmp_path / "mixed"  # a run's folder with a note beside it: still the run's
    mixed.mkdir()
    (mixed / "model.pt").write_bytes((run / "model.pt").read_bytes())
    (mixed / "notes.txt").write_text("seed 7")
    for out in (tmp_path / "new" / "run", empty, leftovers, mixed, run):
        check_out(out)
    code, printed = _train(leftovers, "--steps", str(UPDATE))
    assert code == 0 and (leftovers / "model.pt").is_file(), printed


def test_the_league_file_names_are_the_stores() -> None:
    from agents.learn.training import LEAGUE_FILES
    from league.core.store import MANIFEST, RESULTS

    assert set(LEAGUE_FILES) == {MANIFEST, RESULTS}

def test_two_trainings_never_write_into_the_same_out_at_once(tmp_path) -> None:
    options = TrainOptions(out=str(tmp_path / "run"), steps=2 * UPDATE, envs=ENVS,
                           eval_episodes=2, plot=False)
    refused: list[str] = []

    def second(done: float, figures: dict) -> None:  # runs while the first holds --out
        if not refused:
            with pytest.raises(TrainingError) as e:
                train(replace(options, seed=1, resume=True))
            refused.append(str(e.value))

    summary = train(options, progress=second)
    assert refused and "another" in refused[0]
    assert summary["steps"] == 2 * UPDATE and summary["seed"] == 0
    train(replace(options, steps=3 * UPDATE, resume=True))  # the lock went with the first run


# --- interruptions and checkpoints ---------------------------------------------------------------

def test_sigterm_keeps_a_checkpoint_that_resume_continues(tmp_path) -> None:
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "league", "train", "--out", str(out), *TINY,
           "--minutes", "5", "--checkpoint-minutes", "1000"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        for line in proc.stdout:  # the updates start right after the first evaluation
            if line.startswith("before training"):
                break
        time.sleep(1.0)
        assert not (out / "checkpoint.pt").exists()  # none yet: only the signal makes one
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "--resume" in _one_line(err)
    assert not (out / ".train.lock").exists()  # the stopped run took its lock file with it
    kept = int(torch.load(out / "checkpoint.pt", weights_only=True)["learner"]["steps"])
    assert kept > 0
    code, printed = _train(out, "--resume", "--steps", str(kept + UPDATE))
    assert code == 0, printed
    assert json.loads(printed.strip().splitlines()[-2])["resumed_from"] == kept


class _LockingBoard(Board):
    """TensorBoard's writer as a stop can break it (``conftest.HeldLock``): the signal arrives
    inside its section at the first scalars after an update; ``close`` needs the lock again,
    as the writer's close needs its queue drained."""

    held: HeldLock  # (set by each test)

    def add(self, step: int, figures: dict[str, float]) -> None:
        super().add(step, figures)
        if step > 0 and not hasattr(self, "sent"):
            self.sent = step
            self.held.signal_inside()

    def close(self) -> None:
        self.held.check_free()
        super().close()


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stop_inside_a_library_waits_for_the_next_update(tmp_path, monkeypatch, capsys,
                                                           signum, code) -> None:
    boards: list[_LockingBoard] = []

    class Locking(_LockingBoard):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.held = HeldLock(signum)
            boards.append(self)

    monkeypatch.setattr(training_loop, "Board", Locking)
    out = tmp_path / "run"
    assert _train(out, "--steps", str(3 * UPDATE), "--minutes", "5",
                  "--checkpoint-minutes", "1000")[0] == code
    assert "--resume" in _one_line(capsys.readouterr().err)
    kept = int(torch.load(out / "checkpoint.pt", weights_only=True)["learner"]["steps"])
    assert kept == boards[0].sent  # it came after the first update: that update is kept
    monkeypatch.undo()
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    resumed, printed = _train(out, "--resume", "--steps", str(kept + UPDATE))
    assert resumed == 0, printed
    assert json.loads(printed.strip().splitlines()[-2])["resumed_from"] == kept
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_stops_wait_outside_the_runs_computations() -> None:
    handlers = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with stops_held():
        signal.raise_signal(signal.SIGTERM)  # outside: it waits
        signal.raise_signal(signal.SIGTERM)  # a second one is ignored
        with pytest.raises(Terminated), interruptible():
            pass  # raised on entry
        with interruptible():
            pass  # and only once
        with pytest.raises(KeyboardInterrupt) as caught, interruptible():
            signal.raise_signal(signal.SIGINT)  # inside: at once
        assert not isinstance(caught.value, Terminated)
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)  # a second Ctrl-C: wherever it lands
        signal.signal(signal.SIGINT, stopping._stop)
        signal.raise_signal(signal.SIGINT)  # one that came after the last computation
    with interruptible():
        pass  # is dropped with the run
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == handlers


def test_a_run_begun_with_ctrl_c_ignored_lets_it_pass() -> None:
    """A shell's background job starts with SIGINT ignored: a Ctrl-C meant for the shell does
    not stop the run; SIGTERM still does."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with stops_held():
            with interruptible():
                signal.raise_signal(signal.SIGINT)  # ignored
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            with pytest.raises(Terminated), interruptible():
                signal.raise_signal(signal.SIGTERM)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize("asked, stopped_by, warned", [
    (["--steps", str(10 ** 9), "--minutes", "0.0001"], "minutes", True),  # steps asked, cut short
    (["--minutes", "0.0001"], "minutes", False),   # the default steps: minutes are the budget
    (["--steps", str(UPDATE)], "steps", False),
])
def test_a_run_says_whether_its_steps_or_its_minutes_ended_it(tmp_path, capsys, asked,
                                                               stopped_by, warned) -> None:
    code, printed = _train(tmp_path / "run", *asked)
    assert code == 0, printed
    summary = json.loads(printed.strip().splitlines()[-2])
    assert summary["stopped_by"] == stopped_by
    err = capsys.readouterr().err
    if warned:
        line = _one_line(err)
        assert f"with {summary['steps']:,} of the 1,000,000,000 --steps asked" in line
        assert "--resume" in line
    else:
        assert err == ""


def test_resume_keeps_the_runs_evaluation_seeds(tmp_path) -> None:
    """Before and after must be the same games, whatever --eval-episodes the resume names."""
    out = tmp_path / "run"
    assert _train(out, "--steps", str(UPDATE))[0] == 0
    code, printed = _train(out, "--resume", "--steps", str(2 * UPDATE), "--eval-episodes", "3")
    assert code == 0, printed
    summary = json.loads(printed.strip().splitlines()[-2])
    assert summary["before"]["seeds"] == summary["after"]["seeds"] == [100000, 100001]
    assert summary["evaluation"]["seeds"] == [100000, 100001]


@pytest.mark.parametrize("damage", [
    {"before": {}},                                   # KeyError traceback when printing it
    {"before": {"diff": "x"}},
    {"seconds": float("nan")},                        # trained nothing, wrote NaN as success
    {"seconds": -1e300},                              # ignored --minutes
    {"curve": [["a", "b"]]},
])
def test_a_checkpoint_damaged_in_its_records_is_refused(run, tmp_path, capsys, damage) -> None:
    out = tmp_path / "run"
    out.mkdir()
    data = torch.load(run / "checkpoint.pt", weights_only=True)
    torch.save({**data, **damage}, out / "checkpoint.pt")
    code, _ = _train(out, "--resume", "--steps", str(2 * UPDATE))
    assert code == 2
    assert "--resume" in _one_line(capsys.readouterr().err)


# --- model files ---------------------------------------------------------------------------------

def _adversarial(good: dict) -> dict[str, dict]:
    w = good["weights"]
    return {
        "huge shapes": {**good, "obs_width": 10 ** 9},  # 512 GB asked of the allocator
        "deep": {**good, "network": {"hidden": [1] * 100_000, "shared": True}},
        "meta tensors": {**good, "weights": {k: torch.empty(v.shape, device="meta")
                                             for k, v in w.items()}},
        "sparse tensors": {**good, "weights": {k: v.to_sparse() if v.dim() == 2 else v
                                               for k, v in w.items()}},
        "tensor version": {**good, "table_version": torch.tensor([2, 2])},
        "tensor format version": {**good, "format_version": torch.tensor([1, 1])},
    }


@pytest.mark.parametrize("kind", list(_adversarial({"weights": {}})))
def test_adversarial_model_values_are_refused_quickly(run, tmp_path, kind) -> None:
    good = torch.load(run / "model.pt", weights_only=True)
    path = tmp_path / "model.pt"
    torch.save(_adversarial(good)[kind], path)
    for make in (make_policy, BATCHED_POLICIES.make):
        start = time.perf_counter()
        with pytest.raises(ModelError, match="model.pt"):
            make(f"ppo:{path}")
        assert time.perf_counter() - start < 2.0


def test_model_files_that_are_devices_or_huge_are_refused_unread(tmp_path) -> None:
    zero = tmp_path / "zero.pt"
    zero.symlink_to("/dev/zero")
    with pytest.raises(ModelError, match="not a regular file"):
        make_policy(f"ppo:{zero}")
    huge = tmp_path / "huge.pt"
    with open(huge, "wb") as f:  # sparse: no disk used
        f.truncate(MAX_MODEL_BYTES + 1)
    with pytest.raises(ModelError, match="larger than"):
        make_policy(f"ppo:{huge}")



def _with_record(src: Path, dst: Path, name: str, mib: int) -> None:
    """``src`` (a model file: a zip) rewritten with its record ``name`` replaced by ``mib`` MiB
    of zeros, deflated: written in chunks, about 0.3 MB on disk for 300 MiB."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            if info.filename != name:
                zout.writestr(info, zin.read(info))
                continue
            big = zipfile.ZipInfo(name)
            big.compress_type = zipfile.ZIP_DEFLATED
            with zout.open(big, "w", force_zip64=True) as f:
                chunk = bytes(1 << 20)
                for _ in range(mib):
                    f.write(chunk)


def test_a_model_file_that_unpacks_to_too_much_is_refused_from_its_directory(
        tmp_path, monkeypatch, capsys) -> None:
    """A small file can hold a deflated tensor of hundreds of MB, which torch.load unpacks whole:
    its zip directory refuses it first."""
    from agents.learn import ppo

    good = tmp_path / "model.pt"
    save_model(PolicyNet(460, 267), good, {})  # guild train's network (2 x 128, shared)
    with zipfile.ZipFile(good) as z:
        tensor = next(i.filename for i in z.infolist() if "/data/" in i.filename)
    bomb = tmp_path / "bomb.pt"
    _with_record(good, bomb, tensor, 300)
    assert bomb.stat().st_size < 2 << 20
    for make in (make_policy, BATCHED_POLICIES.make):
        start = time.perf_counter()
        with pytest.raises(ModelError, match="would unpack record") as e:
            make(f"ppo:{bomb}")
        assert time.perf_counter() - start < 0.5  # nothing was decompressed
        message = _one_line(str(e.value))
        assert str(bomb) in message and "64 MB" in message and "256 MB" in message
    assert guild(["evaluate", f"ppo:{bomb}", "--seeds", "0..1"]) == 2
    assert "would unpack" in _one_line(capsys.readouterr().err)
    make_policy(f"ppo:{good}").net()  # a genuine model still loads
    # the sum and the number of records, each bounded too (lowered here below a real model)
    total = sum(i.file_size for i in zipfile.ZipFile(good).infolist())
    for bound, value, words in (("MAX_UNPACKED_BYTES", total - 1, "would unpack to"),
                                ("MAX_RECORDS", 3, "records")):
        with monkeypatch.context() as m:
            m.setattr(ppo, bound, value)
            with pytest.raises(ModelError, match=words):
                ppo.read_model(good)


def test_read_model_refuses_a_device_before_reading(tmp_path) -> None:
    from agents.learn import ppo

    with pytest.raises(ModelError, match="not a regular file"):
        ppo.read_model("/dev/zero")
    with pytest.raises(ModelError, match="not a readable torch model file"):
        (tmp_path / "x.pt").write_bytes(b"\x00" * 100)  # not a zip: refused, one line
        ppo.read_model(tmp_path / "x.pt")

def test_evaluate_refuses_a_model_of_another_town_in_one_line(tmp_path, capsys) -> None:
    path = tmp_path / "model.pt"
    save_model(PolicyNet(500, 267), path, {})  # loads, but observes 500 numbers, not 460
    code = guild(["evaluate", f"ppo:{path}", "--seeds", "0..1"])
    assert code == 2
    assert "500" in _one_line(capsys.readouterr().err)


def test_ctrl_c_inside_an_update_keeps_the_last_whole_update(tmp_path, monkeypatch) -> None:
    """A checkpoint taken mid-update held half-updated weights under the previous step count:
    the resumed run silently differed from an uninterrupted one."""
    options = TrainOptions(out=str(tmp_path / "whole"), steps=2 * UPDATE, envs=ENVS,
                           eval_episodes=2, plot=False)
    train(options)
    clip = torch.nn.utils.clip_grad_norm_
    calls = []

    def interrupt(*args, **kwargs):  # 4 minibatch steps per update: stop inside the second
        calls.append(1)
        if len(calls) == 6:
            raise KeyboardInterrupt
        return clip(*args, **kwargs)

    cut = replace(options, out=str(tmp_path / "cut"))
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", interrupt)
    with pytest.raises(KeyboardInterrupt):
        train(cut)
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", clip)
    summary = train(replace(cut, resume=True))
    assert summary["resumed_from"] == UPDATE
    whole = torch.load(tmp_path / "whole" / "model.pt", weights_only=True)["weights"]
    resumed = torch.load(tmp_path / "cut" / "model.pt", weights_only=True)["weights"]
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)
