"""Training (issue 15): ``guild train`` runs our PPO on the batched engine; the model it saves
plays through ``make_policy("ppo:...")`` in the scalar engine, a league and the batched engine
(the scalar and batched policies choosing alike); runs are deterministic per seed and resume
exactly from a checkpoint, even after SIGKILL; bad input is one line and exit 2.

Runs train a few hundred steps only (scores are not asserted: learning to the issue's targets
takes minutes and is measured and reported in the README).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import needs_module

from agents import make_policy, play_episode
from league.cli import main as guild
from sim import Game, GameConfig, Intent
from sim.codec.action_table import TABLE_VERSION, legal_mask, to_intent

torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")

from agents import ppo  # noqa: E402  (needs torch)
from agents.training import TrainingError, TrainOptions, train  # noqa: E402

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
    assert json.loads(printed.strip().splitlines()[-1]) == summary  # the last line
    model = out / "model.pt"
    assert summary["policy"] == f"ppo:{model.resolve()}"  # API.md §3: the spec that plays it
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


def test_a_run_killed_by_sigkill_resumes_from_its_last_checkpoint(tmp_path) -> None:
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "league.cli", "train", "--out", str(out), *TINY,
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
    summary = json.loads(printed.strip().splitlines()[-1])
    assert summary["resumed_from"] == kept and summary["steps"] == kept + UPDATE


def _steps(checkpoint: Path) -> int:
    return int(torch.load(checkpoint, weights_only=True)["learner"]["steps"])


def test_the_model_plays_legal_intents_through_make_policy(trained) -> None:
    out, _ = trained
    policy = make_policy(f"ppo:{out}")  # a run directory means its model.pt
    assert make_policy(f"ppo:{out / 'model.pt'}").path == policy.path
    chosen = []

    class Checked:
        """Asks the ppo policy, then checks its intent is one the legal mask allows."""

        def act(self, game, seat):
            intent = policy.act(game, seat)
            assert isinstance(intent, Intent)
            st = game.state
            legal = {to_intent(i, st.world, seat, st.room[seat])
                     for i, ok in enumerate(legal_mask(st, seat)) if ok}
            assert intent in legal
            chosen.append(intent.kind)
            return intent

    for seed in (5, 6):
        game = play_episode(GameConfig(seed=seed), ["factor", Checked(), "magpie", "factor",
                                                    "magpie", "factor"])
        assert game.done
    assert len(chosen) == 28


def test_scalar_and_batched_policies_choose_alike_in_the_same_states(trained) -> None:
    from sim.batched.engine import BatchedGuild
    from sim.policies import BATCHED_POLICIES

    out, _ = trained
    scalar = make_policy(f"ppo:{out}")
    batched = BATCHED_POLICIES.make(f"ppo:{out}")
    engine = BatchedGuild(1)
    compared = 0
    players = [scalar, *map(make_policy, ("factor", "magpie")), scalar,
               *map(make_policy, ("magpie", "factor"))]
    for seed in (11, 12):
        game = Game(GameConfig(seed=seed))
        while not game.done:
            engine.load_games([game])
            picks = batched.act(engine, np.zeros(6, np.int64), np.arange(6))
            st = game.state
            for seat in range(6):
                mine = scalar.act(game, seat)
                assert mine == to_intent(int(picks[seat]), st.world, seat, st.room[seat])
                compared += 1
            game.play_turn([p.act(game, k) for k, p in enumerate(players)])
    assert compared == 2 * 14 * 6


def test_the_batched_policy_serves_the_vector_env_and_the_paired_evaluation(trained) -> None:
    from agents.evaluation import paired_evaluation
    from sim.envs.vector import GuildVectorEnv

    out, _ = trained
    spec = f"ppo:{out / 'model.pt'}"
    env = GuildVectorEnv(4, opponents=[spec, "factor", "magpie", spec, "factor"], flatten=True)
    env.reset(seed=0)
    for _ in range(14):
        env.step(env.action_masks().argmax(1))
    result = paired_evaluation(spec, seeds=range(7, 9))
    assert result.engine == "batched" and result.games == 12


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
    """examples/train_maskable_ppo.py as a module (a thin front for ``agents.training``)."""
    import importlib.util

    path = ROOT / "examples" / "train_maskable_ppo.py"
    spec = importlib.util.spec_from_file_location("train_maskable_ppo", path)
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


def _variants(model: Path, tmp: Path) -> dict[str, tuple[Path, str]]:
    """Unplayable model files and the words their refusal must contain."""
    good = torch.load(model, weights_only=True)
    files: dict[str, tuple[object, str]] = {
        "random bytes": (os.urandom(300), "not a readable torch model file"),
        "a zip": (None, "not a readable torch model file"),
        "wrong keys": ({"format": "guild-ppo", "weights": {}}, "missing fields"),
        "wrong shapes": ({**good, "weights": {**good["weights"], "critic.bias":
                                              torch.zeros(3)}}, "do not match its network"),
        "other table": ({**good, "table_version": TABLE_VERSION + 1}, "action table version"),
        "foreign pt": ({"state_dict": {}}, "not a guild PPO model"),
    }
    out = {}
    for name, (data, words) in files.items():
        path = tmp / (name.replace(" ", "_") + ".pt")
        if isinstance(data, bytes):
            path.write_bytes(data)
        elif data is None:
            with zipfile.ZipFile(path, "w") as z:
                z.writestr("hello.txt", "not a model")
        else:
            torch.save(data, path)
        out[name] = (path, words)
    return out


def test_unplayable_model_files_are_refused_in_one_line_naming_the_file(trained, tmp_path,
                                                                        capsys) -> None:
    from sim.policies import BATCHED_POLICIES

    out, _ = trained
    for name, (path, words) in _variants(out / "model.pt", tmp_path).items():
        for make in (make_policy, BATCHED_POLICIES.make):
            with pytest.raises(ppo.ModelError, match=words) as e:
                make(f"ppo:{path}")
            assert str(path) in str(e.value) and "\n" not in str(e.value), name
        code = guild(["league", "--policies", f"ppo:{path},factor", "--episodes", "2",
                      "--out", str(tmp_path / "league")])
        assert code == 2, name
        assert path.name in _one_line(capsys.readouterr().err)
    with pytest.raises(ValueError, match="does not exist"):
        make_policy(f"ppo:{tmp_path / 'nope.pt'}")
    with pytest.raises(ValueError, match="does not exist"):
        make_policy(f"ppo:{tmp_path}")  # a directory without model.pt
    with pytest.raises(ValueError, match="model path"):
        make_policy("ppo:")


def test_models_are_loaded_once_per_file_version(trained, tmp_path) -> None:
    out, _ = trained
    copy = tmp_path / "m.pt"
    copy.write_bytes((out / "model.pt").read_bytes())
    first = make_policy(f"ppo:{copy}").net()
    assert make_policy(f"ppo:{copy}").net() is first
    st = copy.stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # "retrained" in place
    assert make_policy(f"ppo:{copy}").net() is not first
    assert sum(1 for k in ppo._CACHE if k[0] == str(copy.resolve())) == 1


def test_sb3_models_record_the_table_version_and_others_are_refused(tmp_path) -> None:
    needs_module("sb3_contrib", "torch==2.13.0, then pip install -e '.[train]'")
    import gymnasium
    from sb3_contrib import MaskablePPO

    from agents import sb3

    env = gymnasium.make("guild/Guild-v0", seat=0, flatten=True)
    model = MaskablePPO("MlpPolicy", env, n_steps=16, batch_size=16, seed=0, device="cpu")
    for name, meta in (("current", None), ("unversioned", {}), ("v1", {"table_version": 1})):
        path = tmp_path / f"{name}.zip"
        model.save(path)
        if meta is None:
            sb3.write_meta(path, {"flatten": True})
        else:
            with zipfile.ZipFile(path, "a") as z:
                z.writestr(sb3.META_NAME, json.dumps(meta))
    assert sb3.read_meta(tmp_path / "current.zip")["table_version"] == TABLE_VERSION
    game = play_episode(GameConfig(seed=2), [f"sb3:{tmp_path / 'current.zip'}", "factor",
                                             "magpie", "factor", "magpie", "factor"])
    assert game.done
    for name, words in (("unversioned", "does not record"), ("v1", "version 1")):
        with pytest.raises(ValueError, match=words):
            make_policy(f"sb3:{tmp_path / name}.zip").act(game, 0)


def test_self_play_lineups_learn_only_in_the_learners_seats(tmp_path) -> None:
    """Every row holds a learner; snapshots and baselines fill the rest; the rollout keeps
    exactly the learners' seat-steps; ``--self-play`` trains through the command."""
    from agents.ppo_arena import LEARNER, Arena
    from agents.ppo_config import PPOConfig
    from agents.ppo_learn import Learner

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
    assert json.loads(printed.strip().splitlines()[-1])["self_play"] is True
