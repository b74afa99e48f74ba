"""``sb3:`` zips on the command line load in a sandbox (``league.apart.sb3_load``): a zip is a
pickle, and a pickle that runs a command on load runs it where it sees nothing of the machine.

``guild evaluate`` and ``guild play --opponents`` load the model with sb3-contrib in a bubblewrap
sandbox (``league.apart.sandbox.run``, ``agents.learn.sb3_extract``) and play the network rebuilt
from its weights alone: the same index in the same state as the model loaded in-process
(``--trust``), so the same figures.  A description that is not what the loader writes is refused
without unpickling anything.  ``--resume`` bounds a checkpoint's zip directory before
``torch.load``.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import sys
import zipfile
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from conftest import needs_module
from test_sb3 import _trained

from agents import make_policy
from league.apart import sandbox
from league.cli.guild import main
from sim import Game, GameConfig
from sim.batched.engine import BatchedGuild
from sim.codec.action_table import EARLIER_TABLE_SIZES
from sim.envs.vector import make_batched_policy

sb3_contrib = needs_module("sb3_contrib", "torch==2.13.0, then pip install -e '.[train]'")
torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")

from agents.learn import sb3  # noqa: E402
from agents.learn.sb3_extract import DescriptionError, describe, rebuild  # noqa: E402
from league.apart.sb3_load import extract  # noqa: E402


def _one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


@pytest.fixture(scope="module")
def flat_model(tmp_path_factory) -> Path:
    """A small MaskablePPO trained on the flat observation (Log1pFeatures, net_arch [32])."""
    return _trained(tmp_path_factory.mktemp("flat"))


@pytest.fixture(scope="module")
def dict_model(tmp_path_factory) -> Path:
    """An untrained MultiInputPolicy on the Dict observation: separate trunks and extractors,
    ReLU."""
    import gymnasium

    from agents.learn.sb3 import write_meta

    env = gymnasium.make("guild/Guild-v0")
    model = sb3_contrib.MaskablePPO(
        "MultiInputPolicy", env, n_steps=16, batch_size=16, seed=5, device="cpu",
        policy_kwargs=dict(net_arch=dict(pi=[24, 16], vf=[8]), activation_fn=torch.nn.ReLU,
                           share_features_extractor=False))
    path = tmp_path_factory.mktemp("dict") / "dict.zip"
    model.save(path)
    write_meta(path, {"flatten": False})
    return path


class _Runs:
    """Unpickling this runs ``code`` (``exec``), as any pickle may."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self) -> tuple:
        return (exec, (self.code,))


def _evil(src: Path, dst: Path, code: str) -> Path:
    """``src`` with one more entry in its ``data`` whose pickle runs ``code`` on load."""
    payload = base64.b64encode(pickle.dumps(_Runs(code), protocol=4)).decode()
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "data":
                d = json.loads(data)
                d["guild_note"] = {":type:": "<class 'NoneType'>", ":serialized:": payload}
                data = json.dumps(d).encode()
            zout.writestr(info, data)
    return dst


def _writes(marker: Path, quiet: bool) -> str:
    write = f"open({str(marker)!r}, 'w').write('the pickle ran here')"
    return f"try:\n    {write}\nexcept OSError:\n    pass\n" if quiet else write


def _play(argv: list[str], monkeypatch, capsys, lines: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    code = main(["play", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _random_observations(loaded, n: int, rng: np.random.Generator):
    space = loaded.model.observation_space
    if loaded.flat:
        return (rng.random((n, space.shape[0])) * 8).astype(np.float32)
    return {k: (rng.random((n, s.shape[0])) * 8).astype(s.dtype) for k, s in space.spaces.items()}


# --- the same choices ----------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["flat_model", "dict_model"])
def test_the_rebuilt_network_chooses_what_the_model_chooses(which: str, request) -> None:
    path = request.getfixturevalue(which)
    trusted = sb3.load_model(path)
    described = sb3.load_model(path, extract)
    assert type(described.model).__name__ == type(trusted.model.policy).__name__
    assert described.flat == trusted.flat and described.meta == trusted.meta
    rng = np.random.default_rng(7)
    n_actions = trusted.model.action_space.n
    obs = _random_observations(trusted, 400, rng)
    masks = rng.random((400, n_actions)) < 0.2
    masks[:, 0] = True
    for deterministic in (True, False):
        torch.manual_seed(3)
        want, _ = trusted.model.predict(obs, action_masks=masks, deterministic=deterministic)
        torch.manual_seed(3)
        got, _ = described.model.predict(obs, action_masks=masks, deterministic=deterministic)
        assert (got == want).all()
        assert masks[np.arange(400), got].all()
    # every weight is the model's
    want_w = trusted.model.policy.state_dict()
    got_w = described.model.state_dict()
    assert set(got_w) == set(want_w)
    assert all(torch.equal(got_w[k], want_w[k]) for k in want_w)
    # and in games, scalar and batched
    sandboxed = {"name": f"sb3:{path}", "extract": extract}
    scalar = (make_policy(f"sb3:{path}"), make_policy(sandboxed))
    batched = (make_batched_policy(f"sb3:{path}"), make_batched_policy(sandboxed))
    compared = 0
    for seed in (0, 1):
        game = Game(GameConfig(seed=seed, turns=8))
        while not game.done:
            engine = BatchedGuild(1, turns=8)
            engine.load_games([game])
            rows, seats = np.zeros(6, np.int64), np.arange(6)
            picks = [b.act(engine, rows, seats) for b in batched]
            assert (picks[0] == picks[1]).all()
            joint = [scalar[0].act(game, s) for s in range(6)]
            assert [scalar[1].act(game, s) for s in range(6)] == joint
            compared += 6
            game.play_turn(joint)
    assert compared == 2 * 8 * 6


def test_guild_evaluate_gives_the_same_figures_sandboxed_and_trusted(flat_model, tmp_path,
                                                                      capsys) -> None:
    figures = []
    for trust in ([], ["--trust"]):
        out = tmp_path / f"figures{len(trust)}.json"
        code = main(["evaluate", f"sb3:{flat_model}", "--against", f"factor,sb3:{flat_model}",
                     "--seeds", "0..3", "--json", str(out), *trust])
        assert code == 0, capsys.readouterr().err
        assert "batched engine" in capsys.readouterr().out
        figures.append({k: v for k, v in json.loads(out.read_text()).items() if k != "seconds"})
    assert figures[0] == figures[1]
    assert figures[0]["games"] == 24 and figures[0]["against"] == ["factor", f"sb3:{flat_model}"]


def test_guild_play_against_a_sandboxed_model_plays_as_the_trusted_one(
        flat_model, monkeypatch, capsys) -> None:
    argv = ["--opponents", f"sb3:{flat_model},magpie", "--seed", "3", "--turns", "6"]
    shown = []
    for trust in ([], ["--trust"]):
        code, out, err = _play([*argv, *trust], monkeypatch, capsys, "I wait\n" * 6)
        assert code == 0, err
        assert "RESULTS after 6 of 6 turns" in out
        shown.append(out)
    assert shown[0] == shown[1]


def test_an_environment_takes_a_sandboxed_opponent(flat_model) -> None:
    """``gymnasium.make(opponents=["sb3:..."])`` loads in-process (the user's own call); the
    mapping its docstring names loads in a sandbox, on both faces."""
    import gymnasium

    from sim.envs.vector import GuildVectorEnv

    spec = {"name": f"sb3:{flat_model}", "extract": extract}
    lineup = [spec, "factor", "magpie", "factor", spec]
    env = gymnasium.make("guild/Guild-v0", opponents=lineup, turns=6)
    env.reset(seed=1)
    done = False
    while not done:
        _, _, done, _, _ = env.step(0)
    vec = GuildVectorEnv(2, opponents=lineup, turns=6)
    vec.reset(seed=1)
    vec.step(np.zeros(2, np.int64))
    policy = env.unwrapped.opponents[0]
    assert policy.extract is extract and not isinstance(policy._model().model,
                                                         sb3_contrib.MaskablePPO)


# --- a pickle that runs a command on load ---------------------------------------------------------

def test_a_pickle_that_runs_code_on_load_runs_it_only_in_the_sandbox(
        flat_model, tmp_path, monkeypatch, capsys) -> None:
    marker = tmp_path / "marker"
    evil = _evil(flat_model, tmp_path / "evil.zip", _writes(marker, quiet=True))
    # the model behind the pickle is a proper one: it is evaluated, its code ran where it
    # could not reach this folder
    assert main(["evaluate", f"sb3:{evil}", "--seeds", "0..1"]) == 0, capsys.readouterr().err
    assert "mean score" in capsys.readouterr().out
    assert not marker.exists()
    code, out, err = _play(["--opponents", f"sb3:{evil}", "--seed", "1"], monkeypatch, capsys,
                           "quit\n")
    assert code == 0, err
    assert "RESULTS" in out and not marker.exists()
    # the same file loaded in this process runs the command: the test's pickle is live
    assert main(["evaluate", f"sb3:{evil}", "--seeds", "0..1", "--trust"]) == 0
    assert marker.read_text() == "the pickle ran here"


@pytest.mark.parametrize("prefix", ["SB3:", " sb3 :"])
def test_every_spelling_of_sb3_the_registry_loads_is_loaded_in_the_sandbox(
        prefix: str, flat_model, tmp_path, capsys) -> None:
    """The registry reads ``sb3`` before the first colon in any case and with any spaces
    (``sim.policies``); the command line's sandbox must catch every such spelling, or the zip
    is unpickled in its process."""
    marker = tmp_path / "marker"
    evil = _evil(flat_model, tmp_path / "evil.zip", _writes(marker, quiet=True))
    assert main(["evaluate", f"{prefix}{evil}", "--seeds", "0..1"]) == 0, capsys.readouterr().err
    assert "mean score" in capsys.readouterr().out
    assert not marker.exists()


def test_a_pickle_that_fails_in_the_sandbox_is_refused_in_one_line(
        flat_model, tmp_path, monkeypatch, capsys) -> None:
    marker = tmp_path / "marker"
    evil = _evil(flat_model, tmp_path / "evil.zip", _writes(marker, quiet=False))
    assert main(["evaluate", f"sb3:{evil}", "--seeds", "0..1"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("guild evaluate: error: sb3 model") and str(evil) in line
    assert "No such file or directory" in line  # it ran, in a sandbox without this folder
    assert not marker.exists()
    code, out, err = _play(["--opponents", f"factor,sb3:{evil}"], monkeypatch, capsys, "")
    assert code == 2 and "RESULTS" not in out
    line = _one_line(err)
    assert line.startswith("guild play: error: --opponents: sb3 model") and str(evil) in line
    assert not marker.exists()


class _OldTable(gymnasium.Env):
    """The observation of this game's flat encoding and version 1's 261 actions."""

    def __init__(self) -> None:
        self.observation_space = sb3.GuildVecEnv(1).observation_space
        self.action_space = gymnasium.spaces.Discrete(EARLIER_TABLE_SIZES[1])

    def reset(self, *, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, True, False, {}


@pytest.mark.parametrize("kind", ["not a zip", "not a model", "an earlier table"])
def test_files_that_are_not_models_are_refused_in_one_line(kind, tmp_path, capsys) -> None:
    path = tmp_path / "model.zip"
    if kind == "not a zip":
        path.write_bytes(b"\x00garbage" * 100)
        words = "not a zip file"
    elif kind == "not a model":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("data", "{}")
        words = "MaskablePPO"
    else:
        model = sb3_contrib.MaskablePPO("MlpPolicy", _OldTable(), n_steps=8, batch_size=16,
                                        device="cpu", policy_kwargs=dict(net_arch=[8]))
        model.save(path)  # no guild.json: known by its count
        words = "does not record its action table version and has 261 actions (as version 1's"
    assert main(["evaluate", f"sb3:{path}", "--seeds", "0..1"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("guild evaluate: error: sb3 model") and str(path) in line
    assert words in line


def test_a_model_saved_by_sb3_alone_plays(tmp_path, capsys) -> None:
    # MaskablePPO trained on this game's env and saved with model.save (no guild.json): its
    # 267 actions are this table's and no earlier one's, so it is this table's model.
    path = tmp_path / "plain.zip"
    sb3_contrib.MaskablePPO("MlpPolicy", sb3.GuildVecEnv(2), n_steps=8, batch_size=16,
                            device="cpu", policy_kwargs=dict(net_arch=[8])).save(path)
    assert sb3.read_meta(path) == {}
    assert main(["evaluate", f"sb3:{path}", "--seeds", "0..1", "--turns", "6"]) == 0
    assert "paired difference" in capsys.readouterr().out


def test_without_a_sandbox_the_refusal_names_trust(flat_model, monkeypatch, capsys) -> None:
    def cannot() -> None:
        raise sandbox.SandboxError("no sandbox here")

    monkeypatch.setattr(sandbox, "require", cannot)
    monkeypatch.setattr(sb3, "_CACHE", {})
    assert main(["evaluate", f"sb3:{flat_model}", "--seeds", "0..1"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert str(flat_model) in line and "--trust" in line and "bubblewrap" in line
    # --trust loads it here, as before
    assert main(["evaluate", f"sb3:{flat_model}", "--seeds", "0..1", "--trust"]) == 0


# --- the sandbox's bounds -------------------------------------------------------------------------

def test_a_sandboxed_command_sees_no_folder_of_the_machine(tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("league secret")
    shown = tmp_path / "shown" / "model.zip"
    shown.parent.mkdir()
    shown.write_text("the model")
    code = ("import os, sys\n"
            f"print(os.path.exists({str(secret)!r}), os.listdir({str(shown.parent)!r}))\n"
            f"print(open({str(shown)!r}).read(), sys.stdin.read())\n"
            "try:\n"
            f"    open({str(shown)!r}, 'a')\n"
            "except OSError as e:\n"
            "    print('read-only', e.errno)\n"
            "open('scratch.txt', 'w').write('x')\n"
            "print(os.getcwd(), sorted(os.environ))\n")
    out = sandbox.run([sys.executable, "-c", code], [shown], stdin=b"from stdin").decode()
    lines = out.splitlines()
    assert lines[0] == "False ['model.zip']"
    assert lines[1] == "the model from stdin"
    assert lines[2].startswith("read-only")
    assert lines[3].startswith("/scratch ") and "HOME" in lines[3]


@pytest.mark.parametrize("code, words", [
    ("import time; time.sleep(60)", "ran longer than 2 s"),
    ("import sys; sys.stdout.write('x' * 5000)", "wrote more than 1,000 bytes"),
    ("x = bytearray(3 << 30)", "MemoryError"),
    ("import sys; sys.exit('no \\x1b[31mred')", "no ?[31mred"),
])
def test_a_sandboxed_command_is_bounded(code: str, words: str) -> None:
    with pytest.raises(sandbox.RunError) as e:
        sandbox.run([sys.executable, "-c", code], timeout=2, max_output=1000, memory_mb=2048)
    assert words in str(e.value) and "\n" not in str(e.value)


# --- a hostile description ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def description(flat_model) -> bytes:
    """A genuine description, made here from the trusted load (no sandbox needed)."""
    loaded = sb3.load_model(flat_model)
    return describe(loaded.model, loaded.meta)


def _parts(blob: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return json.loads(arrays.pop("__description__").tobytes()), arrays


def _blob(desc: dict, arrays: dict, save=np.savez) -> bytes:
    out = io.BytesIO()
    text = np.frombuffer(json.dumps(desc).encode(), np.uint8)
    save(out, __description__=text, **arrays)
    return out.getvalue()


def _changed(blob: bytes, kind: str, marker: Path) -> bytes:
    desc, arrays = _parts(blob)
    first = next(k for k in arrays if k.endswith("weight"))
    if kind == "pickled array":
        arrays["trap"] = np.array([_Runs(f"open({str(marker)!r}, 'w')")], dtype=object)
        out = io.BytesIO()
        np.savez(out, __description__=np.frombuffer(json.dumps(desc).encode(), np.uint8),
                 **arrays)
        return out.getvalue()
    if kind == "compressed":
        return _blob(desc, arrays, np.savez_compressed)
    if kind == "lying header":  # np.load would allocate the 4 TB a header declares
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(blob)) as zin, zipfile.ZipFile(out, "w") as zout:
            for info in zin.infolist():
                data = zin.read(info)
                if info.filename == f"{first}.npy":
                    header = io.BytesIO()
                    np.lib.format.write_array_header_1_0(
                        header, {"descr": "<f4", "fortran_order": False, "shape": (1 << 40,)})
                    data = header.getvalue() + bytes(64)
                zout.writestr(info, data)
        return out.getvalue()
    if kind == "deep json":
        out = io.BytesIO()
        np.savez(out, __description__=np.frombuffer(b"[" * 200_000, np.uint8), **arrays)
        return out.getvalue()
    if kind == "huge layer":
        desc["net_arch"] = {"pi": [4096] * 16, "vf": [4096] * 16}
    elif kind == "foreign activation":
        desc["activation"] = "os.system"
    elif kind == "foreign extractor":
        desc["features"] = "NatureCNN"
    elif kind == "wrong shape":
        arrays[first] = arrays[first][:, :-1]
    elif kind == "nan":
        arrays[first] = arrays[first].copy()
        arrays[first][0, 0] = np.nan
    elif kind == "extra array":
        arrays["extra"] = np.zeros(3, np.float32)
    elif kind == "missing array":
        del arrays[first]
    elif kind == "integers":
        arrays[first] = arrays[first].astype(np.int32)
    elif kind == "other version":
        desc["version"] = 99
    elif kind == "one bound":
        del arrays["__high__"]
    elif kind == "bounds of nan":
        arrays["__low__"] = np.full_like(arrays["__low__"], np.nan)
    elif kind == "bounds crossed":
        arrays["__low__"] = arrays["__high__"] + 1
    elif kind == "bounds of another width":
        arrays["__low__"], arrays["__high__"] = arrays["__low__"][:-1], arrays["__high__"][:-1]
    elif kind == "bounds of a dict":
        desc["observation"] = {"kind": "dict", "spaces": [["obs", desc["observation"]["shape"],
                                                           desc["observation"]["dtype"]]]}
    return _blob(desc, arrays)


@pytest.mark.parametrize("kind", ["pickled array", "compressed", "lying header", "deep json",
                                  "huge layer",
                                  "foreign activation", "foreign extractor", "wrong shape",
                                  "nan", "extra array", "missing array", "integers",
                                  "other version", "one bound", "bounds of nan",
                                  "bounds crossed", "bounds of another width",
                                  "bounds of a dict", "garbage"])
def test_a_hostile_description_is_refused_without_unpickling(kind, description, flat_model,
                                                             tmp_path) -> None:
    marker = tmp_path / "marker"
    blob = b"PK\x03\x04 garbage" if kind == "garbage" else _changed(description, kind, marker)
    with pytest.raises(DescriptionError):
        rebuild(blob)
    # through the loader (a describer that hands back the hostile description): one line
    # naming the file
    with pytest.raises(ValueError) as e:
        sb3._load_described(flat_model, flat_model, flat_model.stat().st_size, lambda _: blob)
    assert str(flat_model) in str(e.value) and "\n" not in str(e.value)
    assert not marker.exists()
    rebuild(description)  # the genuine one rebuilds


# --- --resume bounds the checkpoint ---------------------------------------------------------------

def test_resume_refuses_a_checkpoint_that_unpacks_to_too_much_before_torch_load(
        tmp_path, monkeypatch) -> None:
    from agents.learn.ppo import MAX_MODEL_BYTES
    from agents.learn.ppo_records import CheckpointError, load_checkpoint, save_checkpoint

    good = tmp_path / "good"
    good.mkdir()
    save_checkpoint(good, {"run": {}, "learner": {"steps": 1}, "curve": [], "seconds": 1.0,
                           "before": None})
    assert load_checkpoint(good)["learner"] == {"steps": 1}  # a genuine one loads

    bomb = tmp_path / "bomb"
    bomb.mkdir()
    with zipfile.ZipFile(bomb / "checkpoint.pt", "w") as z:
        info = zipfile.ZipInfo("archive/data/0")
        info.compress_type = zipfile.ZIP_DEFLATED
        with z.open(info, "w", force_zip64=True) as f:
            for _ in range(70):  # 70 MiB of zeros, about 70 kB deflated
                f.write(bytes(1 << 20))
    assert (bomb / "checkpoint.pt").stat().st_size < 1 << 20
    huge = tmp_path / "huge"
    huge.mkdir()
    with open(huge / "checkpoint.pt", "wb") as f:
        f.truncate(MAX_MODEL_BYTES + 1)  # sparse

    def never(*args, **kwargs):
        raise AssertionError("torch.load was called")

    monkeypatch.setattr(torch, "load", never)
    for out, words in ((bomb, "would unpack record"), (huge, "larger than 1024 MB")):
        with pytest.raises(CheckpointError) as e:
            load_checkpoint(out)
        message = _one_line(str(e.value))
        assert message.startswith("--resume: checkpoint") and words in message
        assert str(out / "checkpoint.pt") in message
