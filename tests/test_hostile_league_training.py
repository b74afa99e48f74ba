"""Hostile and careless input for league training (``guild train --league``, ``--against``,
``--anneal-steps``) and the built-in ``champion`` (its numpy network file, its seats in
environments, ``guild evaluate`` and ``guild verify``, its export).

The project's rule: bad input gets one clear line (ValueError in the library; one line on
stderr and exit status 2 on the command line), never a traceback, never a silently wrong state.
Each defect a hostile review found has its test here, asserting the behaviour now fixed; the
others pin behaviour that was already right. Every training here is a few updates of 16 rows.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import sys
import threading
import tracemalloc
import uuid
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import needs_module
from guild_cli import run_guild

from agents.champion import CHAMPION_FILE, champion_net
from agents.champion.net import NetError, load_net
from agents.learn.evaluation import RESERVED_SEEDS
from sim.codec.action_table import TABLE_VERSION

TORCH = ("torch", "torch==2.13.0, then pip install -e '.[train]'")
ONE_UPDATE = "1"  # --steps: one update of 16 rows (224 learning-seat steps)


# --- helpers -----------------------------------------------------------------------------------

def _train(out: Path, *args: str) -> tuple[int | str, str, str]:
    """A tiny ``guild train`` (later flags override these: argparse keeps the last)."""
    return run_guild("train", "--out", str(out), "--envs", "16", "--eval-episodes", "2",
                "--steps", ONE_UPDATE, "--minutes", "2", "--quiet", "--no-plot", *args)


def _one_line(code: int | str, err: str) -> str:
    """The refusal's line, checking it is exactly one line on stderr with status 2."""
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err[-2000:])
    return lines[0]


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> str:
    """A module of ``source`` importable under a fresh name; returns the name."""
    name = f"hostile_opp_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def _sizes() -> tuple[int, int]:
    net = champion_net()
    return net.obs_width, net.n_actions


def _load(path: object):
    width, actions = _sizes()
    return load_net(path, TABLE_VERSION, width, actions)


def _arrays() -> dict[str, np.ndarray]:
    with np.load(CHAMPION_FILE, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One update of a default run: a model.pt and summary.json to copy from."""
    needs_module(*TORCH)
    out = tmp_path_factory.mktemp("tiny") / "run"
    code, printed, err = _train(out, "--seed", "3")
    assert code == 0, (printed, err)
    return out


# --- --against: refusals that are already one line -----------------------------------------

@pytest.mark.parametrize("value", [
    "", ",", " ", "factor,,magpie", "factor,", ",".join(["factor"] * 17), "x" * 5000,
    "fac\0tor",
])
def test_against_flag_refuses_empty_items_too_many_too_long_and_nul(tmp_path, value) -> None:
    code, _, err = _train(tmp_path / "o", "--against", value)
    line = _one_line(code, err)
    assert "--against" in line and "1 to 16 policy specs" in line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("toml", [
    "against = 3", 'against = [["factor"]]', 'against = {a = "factor"}', "against = []",
    "against = [1, 2]", 'against = ""', "against = true",
    'against = ["factor", ""]',
])
def test_config_against_of_the_wrong_type_is_one_line_naming_the_file(tmp_path, toml) -> None:
    config = tmp_path / "c.toml"
    config.write_text(toml + "\n", encoding="utf-8")
    code, _, err = _train(tmp_path / "o", "--config", str(config))
    line = _one_line(code, err)
    assert str(config) in line and "against" in line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args", [
    ["--league", "--self-play"],
    ["--self-play", "--config", "LEAGUE"],
    ["--config", "BOTH"],
])
def test_league_and_self_play_exclude_each_other_from_flags_and_file(tmp_path, args) -> None:
    (tmp_path / "league.toml").write_text("league = true\n", encoding="utf-8")
    (tmp_path / "both.toml").write_text("league = true\nself-play = true\n", encoding="utf-8")
    args = [{"LEAGUE": str(tmp_path / "league.toml"),
             "BOTH": str(tmp_path / "both.toml")}.get(a, a) for a in args]
    code, _, err = _train(tmp_path / "o", *args)
    assert "exclude each other" in _one_line(code, err)


@pytest.mark.parametrize("args", [
    ["--anneal-steps", "-1"], ["--anneal-steps", "1.5"], ["--anneal-steps", "1e6"],
    ["--anneal-steps", "nan"], ["--anneal-steps", ""], ["--config", "anneal-steps = 1.5"],
    ["--config", "anneal-steps = true"], ["--config", "anneal-steps = -3"],
    ["--config", "anneal-steps = 1e400"], ["--config", 'anneal-steps = "100"'],
    ["--fixed-share", "-0.1"], ["--fixed-share", "1.01"], ["--fixed-share", "nan"],
    ["--fixed-share", ""], ["--fixed-share", "half"], ["--config", "fixed-share = 2"],
    ["--config", "fixed-share = true"], ["--config", 'fixed-share = "0.5"'],
    ["--config", "fixed-share = inf"],
])
def test_bad_anneal_steps_and_fixed_shares_are_one_line(tmp_path, args) -> None:
    knob = args[1].split()[0] if args[0] == "--config" else args[0][2:]
    if args[0] == "--config":
        (tmp_path / "c.toml").write_text(args[1] + "\n", encoding="utf-8")
        args = ["--config", str(tmp_path / "c.toml")]
    code, _, err = _train(tmp_path / "o", *args)
    assert knob in _one_line(code, err)


def test_against_a_ppo_directory_fifo_garbage_or_nothing_is_one_line(tmp_path) -> None:
    needs_module(*TORCH)
    (tmp_path / "empty").mkdir()
    os.mkfifo(tmp_path / "fifo.pt")
    (tmp_path / "garbage.pt").write_bytes(b"\x00garbage" * 100)
    for spec, words in ((f"ppo:{tmp_path / 'empty'}", "does not exist"),
                        (f"ppo:{tmp_path / 'fifo.pt'}", "not a regular file"),
                        (f"ppo:{tmp_path / 'garbage.pt'}", "not a readable"),
                        ("ppo:", "needs a model path"),
                        ("nobody", "unknown policy"),
                        ("agents:Factor", "not a batched policy"),
                        ("json:loads", "policy function")):
        code, _, err = _train(tmp_path / "o", "--against", spec)
        line = _one_line(code, err)
        assert words in line and "--against" in line, line
        assert not (tmp_path / "o" / "model.pt").exists()


def test_against_takes_spaces_and_any_case_of_built_in_names(tmp_path) -> None:
    needs_module(*TORCH)
    code, printed, err = _train(tmp_path / "o", "--against", " CHAMPION , Factor ")
    assert code == 0, (printed, err)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["against"] == ["CHAMPION", "Factor"]


# --- --against: defects ------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["exec:python3 bot.py", "llm:qwen@http://127.0.0.1:9"])
def test_against_exec_or_llm_says_it_has_no_batched_form(tmp_path, spec) -> None:
    needs_module(*TORCH)
    code, _, err = _train(tmp_path / "o", "--against", spec)
    line = _one_line(code, err)
    assert "cannot import module" not in line and "PYTHONPATH" not in line, line


BOOM_IMPORT = 'raise RuntimeError("boom at import")\n'
BOOM_INIT = """
class Boom:
    batched = True

    def __init__(self):
        raise RuntimeError("boom in init")

    def act(self, engine, rows, seats):
        return rows
"""


@pytest.mark.parametrize("kind", ["import", "init", "exit"])
def test_against_a_module_whose_code_fails_is_one_line(tmp_path, monkeypatch, kind) -> None:
    needs_module(*TORCH)
    if kind == "exit":
        spec = "sys:exit"
    else:
        name = _module(tmp_path, monkeypatch, BOOM_IMPORT if kind == "import" else BOOM_INIT)
        spec = f"{name}:Boom"
    code, _, err = _train(tmp_path / "o", "--against", spec)
    line = _one_line(code, err)
    assert "--against" in line
    assert not (tmp_path / "o" / "model.pt").exists()


ODD_OPPONENTS = """
import numpy as np


class Raises:
    batched = True

    def act(self, engine, rows, seats):
        raise RuntimeError("the opponent failed")


class Huge:
    batched = True

    def act(self, engine, rows, seats):
        return np.full(len(rows), 10 ** 6)


class Short:
    batched = True

    def act(self, engine, rows, seats):
        return np.zeros(1, np.int64)
"""


@pytest.mark.parametrize("cls", ["Raises", "Huge"])
def test_an_opponent_failing_during_training_is_one_line(tmp_path, monkeypatch, cls) -> None:
    needs_module(*TORCH)
    spec = f"{_module(tmp_path, monkeypatch, ODD_OPPONENTS)}:{cls}"
    code, _, err = _train(tmp_path / "o", "--against", spec)
    line = _one_line(code, err)
    assert spec in line or "opponent" in line, line


def test_the_arena_refuses_an_opponent_answer_of_the_wrong_length(tmp_path, monkeypatch) -> None:
    torch = needs_module(*TORCH)
    from agents.learn.ppo_arena import Arena

    spec = f"{_module(tmp_path, monkeypatch, ODD_OPPONENTS)}:Short"
    arena = Arena(16, False, 0, torch.Generator(), against=(spec,))
    m = arena.start()
    obs = np.zeros((m, arena.width), np.float32)
    arena.observe(obs)
    n = arena.engine.tables.n_actions
    legal = np.argmax(obs[:, -n:] > 0, axis=1)
    with pytest.raises(ValueError):
        arena.play_turn(legal)


def test_train_options_take_against_as_a_list() -> None:
    from agents.learn.train_options import TrainOptions

    assert TrainOptions(against=["factor", "magpie"]).against == ("factor", "magpie")


def test_a_config_files_against_list_is_stripped_like_the_flag(tmp_path) -> None:
    from agents.learn.train_args import read_config

    config = tmp_path / "c.toml"
    config.write_text('against = [" factor ", "magpie\\t"]\n', encoding="utf-8")
    values, _ = read_config(str(config))
    config.write_text('against = " factor , magpie\\t"\n', encoding="utf-8")
    flat, _ = read_config(str(config))
    assert flat["against"] == ("factor", "magpie")
    assert values["against"] == flat["against"]


def test_a_duplicated_against_spec_is_refused_or_logged_per_member() -> None:
    needs_module(*TORCH)
    from agents.learn.ppo_config import PPOConfig
    from agents.learn.ppo_learn import Learner
    from agents.learn.training_loop import _pool_scalars

    try:
        learner = Learner(PPOConfig(), 16, False, 0, against=("factor", "factor", "magpie"),
                          league=True)
    except ValueError:
        return  # refused: also correct
    weights = {k: v for k, v in _pool_scalars(learner).items() if k.startswith("pool/weight/")}
    assert len(weights) == len(learner.arena.pool.members)
    assert sum(weights.values()) == pytest.approx(1.0, abs=1e-3)


def test_a_huge_anneal_steps_keeps_the_lr_and_zero_keeps_it_constant() -> None:
    needs_module(*TORCH)
    from agents.learn.ppo_config import PPOConfig
    from agents.learn.ppo_learn import Learner

    for anneal in (10 ** 30, 0):
        learner = Learner(PPOConfig(lr=1e-3, anneal_steps=anneal), 16, False, 0)
        learner.update()
        learner.update()
        assert learner.lr() == pytest.approx(1e-3)


# --- --resume of a league run -------------------------------------------------------------------

def test_resume_of_a_league_run_keeps_its_own_league_and_against(tmp_path) -> None:
    needs_module(*TORCH)
    out = tmp_path / "lg"
    code, printed, err = _train(out, "--league", "--against", "factor,random",
                                "--snapshot-every", "1")
    assert code == 0, (printed, err)
    code, printed, err = _train(out, "--resume", "--no-league", "--against", "magpie",
                                "--steps", "500")
    assert code == 0, (printed, err)
    assert "keeps the run's league True" in err and "keeps the run's against" in err, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["league"] is True and summary["against"] == ["factor", "random"]
    assert [m["name"] for m in summary["pool"]][:2] == ["factor", "random"]
    assert summary["resumed_from"] is not None and summary["steps"] >= 500
    code, _, err = _train(out, "--resume", "--self-play", "--steps", "500")
    assert code == 0 and "keeps the run's self_play False" in err, err


def test_resume_says_when_a_ppo_opponent_file_changed(tmp_path, tiny_run) -> None:
    opponent = tmp_path / "opp.pt"
    shutil.copyfile(tiny_run / "model.pt", opponent)
    out = tmp_path / "r"
    code, printed, err = _train(out, "--against", f"ppo:{opponent}")
    assert code == 0, (printed, err)
    shutil.copyfile(out / "model.pt", opponent)  # another network at the same path
    code, printed, err = _train(out, "--resume", "--against", f"ppo:{opponent}", "--steps",
                                "500")
    assert "opp.pt" in err, (code, err)


# --- the champion's network file -----------------------------------------------------------------

def _damaged(kind: str, tmp_path: Path) -> Path:
    b = bytearray(CHAMPION_FILE.read_bytes())
    central = b.find(b"PK\x01\x02")
    if kind == "deflate":  # the first member's deflate stream starts with a reserved block type
        info = zipfile.ZipFile(io.BytesIO(bytes(b))).infolist()[0]
        n, m = struct.unpack_from("<HH", b, info.header_offset + 26)
        b[info.header_offset + 30 + n + m] = 0x07
    elif kind == "encrypted":  # the central directory flags the first member encrypted
        b[central + 8] |= 1
    elif kind == "method":  # a compression method no one knows
        struct.pack_into("<H", b, central + 10, 99)
    path = tmp_path / f"{kind}.npz"
    path.write_bytes(bytes(b))
    return path


@pytest.mark.parametrize("cut", [0, 10, 1000, 200_000, -10])
def test_a_truncated_champion_copy_is_refused_naming_it(tmp_path, cut) -> None:
    data = CHAMPION_FILE.read_bytes()
    path = tmp_path / "cut.npz"
    path.write_bytes(data[:cut] if cut >= 0 else data[:len(data) + cut])
    with pytest.raises(NetError, match="not a readable .npz") as e:
        _load(path)
    assert str(path) in str(e.value)


@pytest.mark.parametrize("change, words", [
    (lambda a: a.update({"layer0.bias": np.array([1, "x"], dtype=object)}), "not a readable"),
    (lambda a: a.update({"layer1.weight": a["layer1.weight"].astype(np.float64)}), "float32"),
    (lambda a: a.update({"actor.bias": np.full_like(a["actor.bias"], np.inf)}), "infinite"),
    (lambda a: a.update({"layer1.bias": np.full_like(a["layer1.bias"], np.nan)}), "NaN"),
    (lambda a: a.update(meta=np.array('{"format": "guild-numpy-policy"}')), "format version"),
    (lambda a: a.update(meta=np.array("[]")), "not a guild-numpy-policy"),
    (lambda a: a.update({"layer17.weight": a["layer1.weight"]}), "unexpected records"),
])
def test_a_malformed_champion_copy_is_refused_naming_it(tmp_path, change, words) -> None:
    arrays = _arrays()
    change(arrays)
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(NetError, match=words) as e:
        _load(path)
    assert str(path) in str(e.value)


def test_a_champion_path_that_is_a_directory_or_missing_is_refused(tmp_path) -> None:
    for path, words in ((tmp_path, "not a regular file"),
                        (tmp_path / "missing.npz", "not a readable .npz")):
        with pytest.raises(NetError, match=words):
            _load(path)


@pytest.mark.parametrize("kind", ["deflate", "encrypted", "method"])
def test_a_damaged_zip_inside_the_champion_file_is_a_net_error(tmp_path, kind) -> None:
    with pytest.raises(NetError):
        _load(_damaged(kind, tmp_path))


def test_a_deeply_nested_meta_is_a_net_error(tmp_path) -> None:
    arrays = _arrays()
    arrays["meta"] = np.array("[" * 100_000 + "]" * 100_000)
    np.savez(tmp_path / "deep.npz", **arrays)
    with pytest.raises(NetError):
        _load(tmp_path / "deep.npz")


def test_a_meta_that_is_not_json_is_called_so(tmp_path) -> None:
    arrays = _arrays()
    arrays["meta"] = np.array("format = guild-numpy-policy")
    np.savez(tmp_path / "m.npz", **arrays)
    with pytest.raises(NetError) as e:
        _load(tmp_path / "m.npz")
    assert "no 'meta' record" not in str(e.value) and "JSON" in str(e.value)


def test_a_record_declaring_a_huge_shape_is_a_net_error(tmp_path) -> None:
    header = np.lib.format.header_data_from_array_1_0(np.zeros(4, np.float32))
    header["shape"] = (10 ** 15,)
    raw = io.BytesIO()
    np.lib.format.write_array_header_1_0(raw, header)
    path = tmp_path / "huge.npz"
    with zipfile.ZipFile(path, "w") as z:
        for name, array in _arrays().items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, array)
            z.writestr(f"{name}.npy", buf.getvalue())
        z.writestr("pad.npy", raw.getvalue() + b"\0" * 16)
    with pytest.raises(NetError):
        _load(path)


def test_a_small_file_inflating_a_huge_record_is_refused_before_inflating(tmp_path) -> None:
    arrays = _arrays()
    arrays["pad"] = np.zeros(64 << 20, np.float32)  # 256 MB of zeros
    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, **arrays)
    assert path.stat().st_size < 2 << 20
    tracemalloc.start()
    try:
        with pytest.raises(NetError):
            _load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"{peak >> 20} MB allocated to refuse a {path.stat().st_size:,} B file"


def test_a_fifo_is_refused_without_blocking(tmp_path) -> None:
    fifo = tmp_path / "champion.npz"
    os.mkfifo(fifo)
    raised: list[BaseException] = []

    def load() -> None:
        try:
            _load(fifo)
        except BaseException as e:  # noqa: BLE001 - judged below
            raised.append(e)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(3)
    blocked = thread.is_alive()
    if blocked:  # unblock the reader: a writer that opens and closes gives it end of file
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        thread.join(10)
    assert not blocked, "load_net blocked on a FIFO"
    assert raised and isinstance(raised[0], NetError)


def test_load_net_takes_a_str_path() -> None:
    assert _load(str(CHAMPION_FILE)).n_actions == _sizes()[1]


# --- the champion at play -------------------------------------------------------------------------

def test_the_champion_plays_any_case_and_other_turns_in_the_environment() -> None:
    import gymnasium

    for turns, opponents in ((14, ["Champion", "CHAMPION", " champion ", "champion", "factor"]),
                             (6, ["champion"] * 5), (40, ["champion"] * 5)):
        env = gymnasium.make("sim:guild/Guild-v0", opponents=opponents, turns=turns)
        obs, info = env.reset(seed=5)
        played, done = 0, False
        while not done:
            obs, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
            played += 1
        assert played == turns and len(info["results"]["scores"]) == 6


def test_the_champion_in_another_town_is_a_value_error_naming_it() -> None:
    import gymnasium

    from sim.rules.worldfile import world_from_dict

    other, _ = world_from_dict({"start_coin": 50})
    with pytest.raises(ValueError, match="standard town"):
        env = gymnasium.make("sim:guild/Guild-v0", opponents=["champion"] * 5, world=other)
        obs, info = env.reset(seed=1)
        env.step(int(np.flatnonzero(info["action_mask"])[0]))


def test_evaluate_notes_seeds_at_or_above_2_32_and_only_those() -> None:
    top = RESERVED_SEEDS.stop
    assert top == 2 ** 32
    code, out, err = run_guild("evaluate", "champion", "--seeds", f"{top - 1}..{top}")
    assert code == 0 and "champion" in out
    assert "where guild train draws its towns" in err
    code, out, err = run_guild("evaluate", "champion", "--seeds", f"{top - 2}..{top - 1}")
    assert code == 0 and "guild train" not in err


# --- guild verify and the champion --------------------------------------------------------------

@pytest.fixture(scope="module")
def champion_league(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("league") / "lg"
    code, printed, err = run_guild("league", "--policies", "champion,factor", "--episodes", "6",
                              "--seed", "1", "--workers", "1", "--out", str(out))
    assert code == 0, (printed, err)
    code, printed, err = run_guild("verify", str(out))
    assert code == 0 and "re-played the seats of champion" in printed, (printed, err)
    return out


def _other_champion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    import agents.champion as champion

    monkeypatch.setattr(champion, "CHAMPION_FILE", path)
    monkeypatch.setattr(champion, "_NET", None)
    replay_seats = sys.modules.get("league.core.replay_seats")
    if replay_seats is not None and hasattr(replay_seats, "CHAMPION_FILE"):
        monkeypatch.setattr(replay_seats, "CHAMPION_FILE", path)


def test_verify_does_not_fail_a_league_when_the_champion_here_is_another(
        champion_league, tmp_path, monkeypatch) -> None:
    arrays = _arrays()
    rng = np.random.default_rng(0)
    arrays["actor.weight"] = arrays["actor.weight"] + rng.normal(
        0, 1, arrays["actor.weight"].shape).astype(np.float32)
    meta = json.loads(str(arrays["meta"]))
    meta["run"]["digest"] = "0" * 64
    arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
    path = tmp_path / "champion.npz"
    np.savez_compressed(path, **arrays)
    _other_champion(tmp_path, monkeypatch, path)
    code, printed, err = run_guild("verify", str(champion_league))
    text = printed + err
    assert "but champion plays" not in text, text[-1500:]
    assert code == 0 and "not re-played" in text, text[-1500:]  # factor always is


def test_verify_notes_a_champion_that_cannot_be_loaded_here(
        champion_league, tmp_path, monkeypatch) -> None:
    path = tmp_path / "champion.npz"
    path.write_bytes(CHAMPION_FILE.read_bytes()[:1000])
    _other_champion(tmp_path, monkeypatch, path)
    code, printed, err = run_guild("verify", str(champion_league))
    assert code == 0 and "not re-played" in printed + err, (code, printed, err)


# --- export ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["list", "no steps"])
def test_export_of_a_malformed_summary_is_one_line_and_writes_nothing(
        tiny_run, tmp_path, capsys, damage) -> None:
    from agents.champion.export import main as export

    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    summary = json.loads((run / "summary.json").read_text())
    if damage == "list":
        summary = [summary]
    else:
        del summary["steps"]
    (run / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "champion.npz"
    try:
        code: int | str = export([str(run), "--out", str(out)])
    except Exception as e:  # noqa: BLE001 - a traceback is the defect
        code = f"raised {type(e).__name__}"
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, (code, err)
    assert not out.exists()


def test_export_of_a_tiny_run_loads_back_as_a_champion(tiny_run, tmp_path) -> None:
    from agents.champion.export import export

    meta = export(tiny_run, tmp_path / "c.npz")
    net = _load(tmp_path / "c.npz")
    assert net.meta["run"]["digest"] == meta["run"]["digest"]
    assert meta["run"]["steps"] == json.loads((tiny_run / "summary.json").read_text())["steps"]
