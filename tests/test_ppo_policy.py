"""Our PPO models as policies (``agents.learn.ppo``): ``ppo:PATH`` plays legal intents in the scalar
engine, its batched twin chooses alike and serves the vector env and the paired evaluation,
model files are cached per version, and unplayable files (foreign, corrupt, of another table)
are refused in one line naming the file; sb3 models record and check the table version too.

The model is an untrained network saved as ``guild train`` saves one (``test_train.py`` trains).
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import needs_module

from agents import make_policy, play_episode
from league.cli.guild import main as guild
from sim import Game, GameConfig, Intent
from sim.codec.action_table import TABLE_VERSION, legal_mask, to_intent

torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")

from agents.learn import ppo  # noqa: E402  (needs torch)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    """A run directory holding ``model.pt``: an untrained network (seeded), as training saves."""
    out = tmp_path_factory.mktemp("ppo")
    torch.manual_seed(1)
    net = ppo.PolicyNet(460, 267, hidden=(32, 32), shared=False)
    with torch.no_grad():  # larger actor weights than the trainer's init: varied choices
        net.actor.weight.mul_(100)
    ppo.save_model(net, out / "model.pt", {"seed": 1, "steps": 0})
    return out


def _one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_the_model_plays_legal_intents_through_make_policy(model) -> None:
    out = model
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
    assert len(chosen) == 28 and len(set(chosen)) >= 3, chosen  # it does not just wait


def test_scalar_and_batched_policies_choose_alike_in_the_same_states(model) -> None:
    from sim.batched.engine import BatchedGuild
    from sim.policies import BATCHED_POLICIES

    out = model
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
                assert scalar.index(game, seat) == picks[seat]
                assert scalar.act(game, seat) == to_intent(int(picks[seat]), st.world, seat,
                                                           st.room[seat])
                compared += 1
            game.play_turn([p.act(game, k) for k, p in enumerate(players)])
    assert compared == 2 * 14 * 6


def test_the_batched_policy_serves_the_vector_env_and_the_paired_evaluation(model) -> None:
    from agents.learn.evaluation import paired_evaluation
    from sim.envs.vector import GuildVectorEnv

    out = model
    spec = f"ppo:{out / 'model.pt'}"
    env = GuildVectorEnv(4, opponents=[spec, "factor", "magpie", spec, "factor"], flatten=True)
    env.reset(seed=0)
    for _ in range(14):
        env.step(env.action_masks().argmax(1))
    result = paired_evaluation(spec, seeds=range(7, 9))
    assert result.engine == "batched" and result.games == 12



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


def test_unplayable_model_files_are_refused_in_one_line_naming_the_file(model, tmp_path,
                                                                        capsys) -> None:
    from sim.policies import BATCHED_POLICIES

    out = model
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


def test_models_are_loaded_once_per_file_version(model, tmp_path) -> None:
    out = model
    copy = tmp_path / "m.pt"
    copy.write_bytes((out / "model.pt").read_bytes())
    first = make_policy(f"ppo:{copy}").net()
    assert make_policy(f"ppo:{copy}").net() is first
    st = copy.stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # "retrained" in place
    assert make_policy(f"ppo:{copy}").net() is not first
    assert sum(1 for k in ppo._CACHE if k[0] == str(copy.resolve())) == 1



def test_sb3_models_record_the_table_version_and_another_is_refused(tmp_path) -> None:
    needs_module("sb3_contrib", "torch==2.13.0, then pip install -e '.[train]'")
    import gymnasium
    from sb3_contrib import MaskablePPO

    from agents.learn import sb3

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
    # without a version, its 267 actions tell: this table's (tests/test_sb3_sandbox.py has one
    # of version 1's count, refused)
    assert make_policy(f"sb3:{tmp_path / 'unversioned.zip'}").act(game, 0) is not None
    with pytest.raises(ValueError, match="version 1"):
        make_policy(f"sb3:{tmp_path / 'v1.zip'}").act(game, 0)


