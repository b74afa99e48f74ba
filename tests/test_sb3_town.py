"""``sb3:`` models say whether they play a town (``SB3Policy.check_world``, batched too): their
observation and action spaces against the town's (``sim.codec.encode.layout``, the action
table; a ``Dict`` observation key by key). ``guild train --world FILE --against sb3:MODEL`` of a
standard-town model is refused before any work, and ``guild evaluate sb3:MODEL --world FILE``
before any game, each in one line naming the model and both shapes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import needs, needs_module
from leagues import one_error_line
from towns import write_town

from league.apart import sandbox
from league.cli.guild import main
from sim.batched.tables import tables_for
from sim.codec.encode import layout
from sim.rules.world import STANDARD_TOWN
from sim.rules.worldfile import load_world, world_to_dict

sb3_contrib = needs_module("sb3_contrib", "torch==2.13.0, then pip install -e '.[train]'")

import gymnasium  # noqa: E402
from gymnasium import spaces  # noqa: E402

from agents.learn import sb3  # noqa: E402


def _shapes(world) -> tuple[int, int]:
    t = tables_for(world)
    return t.obs_width, t.n_actions


def _message(path: Path, model, town) -> str:
    return (f"sb3 model {str(path)!r} was trained for {model[0]} observed numbers and "
            f"{model[1]} actions; this town has {town[0]} and {town[1]}")


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> SimpleNamespace:
    """A world file of a seventh good, and untrained models (only their spaces matter): flat in
    the standard town, flat and ``Dict`` in the world file's."""
    tmp = tmp_path_factory.mktemp("sb3town")
    full = world_to_dict(STANDARD_TOWN)
    full["goods"].append({"name": "silk", "plural": "silk", "keywords": ["silk"], "value": 12})
    full["keepers"].append({"name": "Weaver Ana", "keywords": ["weaver", "ana"], "room": 4,
                            "trade": [6, 0], "opening": [5, 5]})
    file = write_town(tmp, full, "silk.json")
    world, _ = load_world(file)
    assert _shapes(world) != _shapes(STANDARD_TOWN)

    def flat(name: str, **kw) -> Path:
        path = tmp / name
        sb3_contrib.MaskablePPO("MlpPolicy", sb3.GuildVecEnv(2, **kw), n_steps=8, batch_size=16,
                                device="cpu", policy_kwargs=dict(net_arch=[8])).save(path)
        sb3.write_meta(path, {"flatten": True})
        return path

    dict_path = tmp / "silk_dict.zip"
    sb3_contrib.MaskablePPO("MultiInputPolicy", gymnasium.make("guild/Guild-v0", world=world),
                            n_steps=16, batch_size=16, device="cpu",
                            policy_kwargs=dict(net_arch=[8])).save(dict_path)
    sb3.write_meta(dict_path, {"flatten": False})
    return SimpleNamespace(file=file, world=world, standard=flat("standard.zip"),
                           silk=flat("silk.zip", world=world), silk_dict=dict_path)


@pytest.fixture(scope="module")
def described() -> Callable[[bytes], bytes]:
    """``league.apart.sb3_load.extract``, run in the sandbox once per model: the scalar and the
    batched policy are rebuilt in this process from the same description each."""
    needs(sandbox.problem() is None, "a bubblewrap sandbox (apt-get install bubblewrap)")
    from league.apart.sb3_load import extract

    made: dict[bytes, bytes] = {}

    def once(data: bytes) -> bytes:
        if data not in made:
            made[data] = extract(data)
        return made[data]

    return once


@pytest.mark.parametrize("load", ["here", "in a sandbox"])
@pytest.mark.parametrize("batched", [False, True])
def test_check_world_accepts_its_own_shapes_and_refuses_others(models, load, batched,
                                                               monkeypatch, request) -> None:
    extract = request.getfixturevalue("described") if load == "in a sandbox" else None
    monkeypatch.setattr(sb3, "_CACHE", {})
    make = sb3.BatchedSB3Policy if batched else sb3.SB3Policy
    std, silk = _shapes(STANDARD_TOWN), _shapes(models.world)
    for path, own, other, town in ((models.standard, STANDARD_TOWN, models.world, silk),
                                   (models.silk, models.world, STANDARD_TOWN, std),
                                   (models.silk_dict, models.world, STANDARD_TOWN, std)):
        policy = make(str(path), extract=extract)
        policy.check_world(own)
        with pytest.raises(ValueError) as e:
            policy.check_world(other)
        model = std if path == models.standard else silk
        assert str(e.value) == _message(path, model, town)


def test_a_dict_model_is_checked_key_by_key() -> None:
    """A ``Dict`` observation of the town's width but split otherwise: the first key that
    differs is named."""
    lay = layout(STANDARD_TOWN)
    parts = {k: spaces.Box(0.0, 1.0, shape, np.float32) for k, (shape, _) in lay.items()}
    parts["pack"] = spaces.Box(0.0, 1.0, (lay["pack"][0][0] - 1,), np.float32)
    parts["floor"] = spaces.Box(0.0, 1.0, (lay["floor"][0][0] + 1,), np.float32)
    model = SimpleNamespace(observation_space=spaces.Dict(parts),
                            action_space=spaces.Discrete(_shapes(STANDARD_TOWN)[1]))
    with pytest.raises(ValueError) as e:
        sb3.check_spaces("m.zip", model, STANDARD_TOWN)
    goods = STANDARD_TOWN.n_goods
    assert str(e.value) == (f"sb3 model 'm.zip' observes {goods - 1} numbers in its 'pack'; "
                            f"this town has {goods} there")
    del parts["pack"]
    parts["floor"] = spaces.Box(0.0, 1.0, (2 * goods,), np.float32)
    model.observation_space = spaces.Dict(parts)
    with pytest.raises(ValueError) as e:
        sb3.check_spaces("m.zip", model, STANDARD_TOWN)
    assert str(e.value) == f"sb3 model 'm.zip' observes no 'pack'; this town has {goods} there"


def test_training_refuses_a_standard_town_opponent_before_any_work(models, tmp_path,
                                                                   capsys) -> None:
    out = tmp_path / "run"
    code = main(["train", "--world", str(models.file), "--against",
                 f"factor,sb3:{models.standard}", "--steps", "1", "--envs", "16",
                 "--eval-episodes", "2", "--quiet", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 2, captured
    line = one_error_line(captured.err)
    assert line.startswith(f"train: error: --against 'sb3:{models.standard}' cannot play the "
                           f"town of {models.file}"), line
    assert line.endswith(_message(models.standard, _shapes(STANDARD_TOWN),
                                  _shapes(models.world))), line
    assert "before training" not in captured.out  # no evaluation ran
    assert not out.exists()


def test_evaluate_refuses_a_model_of_other_shapes_before_any_game(models, capsys) -> None:
    std, silk = _shapes(STANDARD_TOWN), _shapes(models.world)
    for argv, path, model, town in (
            (["--world", str(models.file)], models.standard, std, silk),
            ([], models.silk_dict, silk, std)):
        assert main(["evaluate", f"sb3:{path}", "--seeds", "0..1", *argv]) == 2
        line = one_error_line(capsys.readouterr().err)
        assert line.startswith("guild evaluate: error: "), line
        assert line.endswith(_message(path, model, town)), line


def test_a_model_plays_a_town_of_its_shapes(models, capsys) -> None:
    assert main(["evaluate", f"sb3:{models.silk}", "--world", str(models.file), "--seeds",
                 "0..1", "--turns", "6"]) == 0, capsys.readouterr()
    assert "paired difference" in capsys.readouterr().out
