"""``guild train --world FILE --turns N``: training and its evaluations play a world file's town
and turn count; the model has that town's shapes and ``guild evaluate --world`` plays it; the
checkpoint keeps the town, so a resume continues in it even if the file changed; opponents that
cannot play the town, bad files and rollouts too large for memory are refused in one line.

Runs train a few hundred steps only (scores are not asserted).
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import needs_module
from towns import lighthouse, write_town

from league.cli.guild import main as guild
from sim.batched.tables import tables_for
from sim.rules.world import STANDARD_TOWN
from sim.rules.worldfile import load_world

torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")

from agents.learn.training import TrainingError, TrainOptions, train  # noqa: E402

ENVS = 16
TINY = ["--envs", str(ENVS), "--eval-episodes", "2", "--quiet"]


def _lighthouse(tmp_path: Path, turns: int = 12, coin: int = 40) -> Path:
    """A tenth room off the Docks with a keeper selling salt and lamps: a town of other shapes
    (more rooms and keepers: a wider observation and a longer action table)."""
    full = lighthouse()
    full["turns"] = turns
    full["start_coin"] = coin
    return write_town(tmp_path, full, "lighthouse.json")


def _guild(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = guild(list(argv))
    return code, buf.getvalue()


def _one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def _weights(out: Path) -> dict:
    return torch.load(out / "model.pt", weights_only=True)["weights"]


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def town_run(tmp_path_factory) -> tuple[Path, Path, dict]:
    """Two updates in the lighthouse town (its file says 12 turns)."""
    tmp = tmp_path_factory.mktemp("town")
    world = _lighthouse(tmp)
    out = tmp / "run"
    code, printed = _guild("train", "--out", str(out), "--world", str(world), "--steps",
                           str(2 * ENVS * 12), "--seed", "3", *TINY)
    assert code == 0, printed
    return world, out, json.loads((out / "summary.json").read_text())


def test_training_plays_the_world_files_town_and_turns(town_run) -> None:
    world_path, out, summary = town_run
    world, _ = load_world(world_path)
    tables = tables_for(world)
    # Episodes last the file's 12 turns: one learning seat a row, so an update is 16 x 12 steps.
    assert summary["steps"] == 2 * ENVS * 12
    assert summary["turns"] == 12 and summary["evaluation"]["turns"] == 12
    assert summary["world"]["path"] == str(world_path.resolve())
    assert len(summary["world"]["sha256"]) == 64
    model = torch.load(out / "model.pt", weights_only=True)
    assert (model["obs_width"], model["n_actions"]) == (tables.obs_width, tables.n_actions)
    standard = tables_for(STANDARD_TOWN)
    assert (tables.obs_width, tables.n_actions) != (standard.obs_width, standard.n_actions)
    assert model["provenance"]["world"] == summary["world"]
    assert model["provenance"]["turns"] == 12


def test_the_model_plays_its_town_and_is_refused_in_another(town_run, capsys) -> None:
    world_path, out, _ = town_run
    code, printed = _guild("evaluate", f"ppo:{out}", "--world", str(world_path), "--seeds",
                           "0..1")
    assert code == 0, capsys.readouterr().err
    assert "seeds 0..1, 12 turns" in printed  # the file's turns, as trained
    assert f"town: the world file {world_path}, not the standard town" in printed
    code, _ = _guild("evaluate", f"ppo:{out}", "--seeds", "0..1")  # the standard town
    assert code == 2
    err = _one_line(capsys.readouterr().err)
    assert "was trained for" in err and "this town has" in err
    where = f"(it was trained in the town of {world_path.resolve()}, 12 turns)"
    assert err.rstrip().endswith(where), err


def test_the_same_town_read_twice_has_one_digest(town_run, tmp_path) -> None:
    """The digest is the town's, not the file's bytes: the same town written again with other
    formatting (indented, its keys in another order) trains under the same sha256."""
    world_path, _, summary = town_run
    data = json.loads(world_path.read_text())
    again = write_town(tmp_path, json.dumps(data, indent=2, sort_keys=True), "again.json")
    assert again.read_bytes() != world_path.read_bytes()
    out = tmp_path / "again"
    code, printed = _guild("train", "--out", str(out), "--world", str(again), "--steps", "1",
                           *TINY)
    assert code == 0, printed
    second = json.loads((out / "summary.json").read_text())
    assert second["world"]["sha256"] == summary["world"]["sha256"]
    assert second["world"]["path"] != summary["world"]["path"]


def test_turns_overrides_the_file_and_the_standard_town(tmp_path) -> None:
    out = tmp_path / "eight"
    code, printed = _guild("train", "--out", str(out), "--turns", "8", "--steps",
                           str(ENVS * 8), *TINY)
    assert code == 0, printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == ENVS * 8 and summary["turns"] == 8
    assert summary["world"] is None  # the standard town
    assert summary["evaluation"]["turns"] == 8
    assert "town: the standard town, 8 turns" in printed.splitlines()


def test_a_resume_continues_in_the_checkpoints_town_even_if_the_file_changed(
        town_run, tmp_path) -> None:
    """Half the steps, the world file rewritten (less coin, other turns), then --resume: the
    same weights as one uninterrupted run, which the file no longer describes."""
    world_path, out, _ = town_run
    world = _lighthouse(tmp_path)
    options = TrainOptions(out=str(tmp_path / "half"), steps=ENVS * 12, seed=3, envs=ENVS,
                           eval_episodes=2, plot=False, world=str(world))
    train(options)
    _lighthouse(tmp_path, turns=9, coin=20)  # the same path, another town
    said: list[str] = []
    summary = train(replace(options, steps=2 * ENVS * 12, resume=True), warn=said.append)
    assert summary["resumed_from"] == ENVS * 12 and summary["turns"] == 12
    assert _same(_weights(tmp_path / "half"), _weights(out))
    assert said == [f"train: --resume keeps the run's town (the town of {world.resolve()}, 12 "
                    f"turns), not the town of {world} as the file reads now"]


@pytest.mark.parametrize("case", ["deleted", "other turns", "same file, other turns"])
def test_a_resume_says_what_it_keeps(case, tmp_path) -> None:
    world = _lighthouse(tmp_path)
    options = TrainOptions(out=str(tmp_path / "run"), steps=ENVS * 12, seed=1, envs=ENVS,
                           eval_episodes=2, plot=False, world=str(world))
    train(options)
    again = replace(options, steps=2 * ENVS * 12, resume=True)
    if case == "deleted":  # the checkpoint holds the town: the file is not needed
        world.unlink()
        want = (f"train: --resume keeps the run's town (the town of {world.resolve()}, 12 "
                f"turns); {world} cannot be read now, and need not be: the checkpoint holds "
                "the town")
    elif case == "other turns":
        again = replace(again, turns=20)
        want = "train: --resume keeps the run's 12 turns (not 20)"
    else:
        _lighthouse(tmp_path, turns=9)  # the same town, the file's turns changed
        want = "train: --resume keeps the run's 12 turns (not the file's 9)"
    said: list[str] = []
    summary = train(again, warn=said.append)
    assert summary["steps"] == 2 * ENVS * 12 and summary["turns"] == 12
    assert said == [want]


def test_a_resume_checks_its_own_opponents_in_its_own_town(town_run, tmp_path, capsys) -> None:
    """A run in the lighthouse town against a model of that town, resumed with the same
    command but no --world: the opponent is checked in the run's town, not the standard one."""
    world_path, model, _ = town_run
    out = tmp_path / "run"
    code, printed = _guild("train", "--out", str(out), "--world", str(world_path), "--against",
                           f"factor,ppo:{model}", "--steps", str(ENVS * 12), *TINY)
    assert code == 0, printed + capsys.readouterr().err
    code, printed = _guild("train", "--out", str(out), "--against", f"factor,ppo:{model}",
                           "--steps", str(2 * ENVS * 12), "--resume", *TINY)
    assert code == 0, capsys.readouterr().err
    assert json.loads((out / "summary.json").read_text())["steps"] == 2 * ENVS * 12


def test_a_checkpoint_of_the_standard_town_resumes_there(tmp_path) -> None:
    """A checkpoint written before runs recorded their town (no ``world``/``turns`` keys)
    trained in the standard town, 14 turns: its resume continues there."""
    options = TrainOptions(out=str(tmp_path), steps=ENVS * 14, seed=1, envs=ENVS,
                           eval_episodes=2, plot=False)
    train(options)
    path = tmp_path / "checkpoint.pt"
    checkpoint = torch.load(path, weights_only=True)
    for key in ("world", "world_file", "turns"):
        del checkpoint["run"][key]
    torch.save(checkpoint, path)
    summary = train(replace(options, steps=2 * ENVS * 14, resume=True))
    assert summary["steps"] == 2 * ENVS * 14 and summary["turns"] == 14
    assert summary["world"] is None


def test_a_config_file_names_the_world_and_turns(tmp_path, monkeypatch) -> None:
    """A config file's world path is relative to the file's folder, wherever the command runs."""
    folder = tmp_path / "configs"
    folder.mkdir()
    world = _lighthouse(folder)
    config = folder / "train.toml"
    config.write_text('world = "lighthouse.json"\nturns = 7\n')
    monkeypatch.chdir(tmp_path)
    code, printed = _guild("train", "--out", "run", "--config", "configs/train.toml", "--steps",
                           str(ENVS * 7), *TINY)
    assert code == 0, printed
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["turns"] == 7 and summary["world"]["path"] == str(world.resolve())


def test_the_league_counts_the_learner_in_every_seat_against_the_memory_bound(
        tmp_path) -> None:
    """A league row may seat the learner six times, as self-play does: the same envs that one
    learning seat a row fits in the bound are refused for the league, in one line."""
    base = TrainOptions(out=str(tmp_path / "no"), envs=16_384, turns=60, steps=1)
    from agents.learn.train_options import check_rollout

    check_rollout(base, 460, 60)  # one learning seat a row: 1.8 GB, under the bound
    for many in (replace(base, league=True), replace(base, self_play=True)):
        with pytest.raises(TrainingError, match=r"GiB of observations .* x 6 learning seats"):
            check_rollout(many, 460, 60)


@pytest.mark.parametrize("case", ["champion", "standard model", "bad file", "missing file",
                                  "too few turns", "too large a rollout"])
def test_what_cannot_train_is_refused_in_one_line(case, town_run, tmp_path, capsys) -> None:
    world_path, _, _ = town_run
    standard = tmp_path / "standard"
    if case == "standard model":  # a model of the standard town's shapes, as an opponent
        code, _ = _guild("train", "--out", str(standard), "--steps", "1", *TINY)
        assert code == 0
        capsys.readouterr()
    bad = write_town(tmp_path, '{"rooms": 3}', "bad.json")
    argv, words = {
        "champion": (["--world", str(world_path), "--against", "champion"],
                     ["champion", "standard town", "lighthouse.json"]),
        "standard model": (["--world", str(world_path), "--against", f"ppo:{standard}"],
                           ["was trained for", "this town has"]),
        "bad file": (["--world", str(bad)], ["bad world file", "bad.json"]),
        "missing file": (["--world", str(tmp_path / "none.toml")],
                         ["bad world file", "none.toml"]),
        "too few turns": (["--turns", "5"], ["--turns", "from 6"]),
        "too large a rollout": (["--turns", "1000", "--envs", "16384"],
                                ["GiB of observations", "--envs"]),
    }[case]
    out = tmp_path / "refused"
    code, printed = _guild("train", "--out", str(out), "--quiet", "--eval-episodes", "2",
                           *argv)
    assert code == 2 and printed == ""
    err = _one_line(capsys.readouterr().err)
    assert all(w in err for w in words), err
    assert not (out / "checkpoint.pt").exists()


def test_a_world_path_is_shown_inert(tmp_path, capsys) -> None:
    """A path holding escape codes is refused in one line that shows them escaped, by every
    command that reads a world file."""
    bad = tmp_path / "\x1b[2Jevil\x07.json"
    for argv in (["train", "--out", str(tmp_path / "run"), "--world", str(bad), *TINY],
                 ["evaluate", "factor", "--world", str(bad)],
                 ["play", "--world", str(bad)]):
        code, printed = _guild(*argv)
        assert code == 2 and printed == ""
        err = _one_line(capsys.readouterr().err)
        assert "\x1b" not in err and "\x07" not in err, err
        assert "bad world file: " in err and "\\x1b[2Jevil\\x07.json" in err, err


def test_a_linked_config_file_reads_its_world_beside_its_target(tmp_path, monkeypatch) -> None:
    """A config file given through a link reads its world relative to the file it links to,
    the one summary.json records."""
    folder = tmp_path / "configs"
    folder.mkdir()
    world = _lighthouse(folder)
    (folder / "train.toml").write_text('world = "lighthouse.json"\n')
    (tmp_path / "link.toml").symlink_to(folder / "train.toml")
    monkeypatch.chdir(tmp_path)
    code, printed = _guild("train", "--out", "run", "--config", "link.toml", "--steps", "1",
                           *TINY)
    assert code == 0, printed
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["world"]["path"] == str(world.resolve())
    assert summary["config"]["path"] == str((folder / "train.toml").resolve())
