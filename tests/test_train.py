"""Training (issue 10): a short MaskablePPO run saves a model that ``make_policy("sb3:...")``
plays legally and a league ranks; models are cached per file version; bad input exits 2.

The smoke run trains a few thousand steps only (its score is not asserted: learning to the
issue's targets takes minutes and is measured and reported in the README instead).
"""

from __future__ import annotations

import importlib.util
import json
import os
import zipfile
from pathlib import Path

import pytest
from conftest import needs_module

from agents import make_policy, play_episode
from agents import sb3 as sb3_agents
from league.cli import main as guild
from sim import GameConfig, Intent
from sim.codec.action_table import legal_mask, to_intent

needs_module("sb3_contrib", "torch==2.13.0, then pip install -e '.[train]'")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "train_maskable_ppo.py"
STEPS = 2048


def _load_example():
    """The example script as a module (it is a thin front for ``agents.training``)."""
    spec = importlib.util.spec_from_file_location("train_maskable_ppo", EXAMPLE)
    assert spec is not None and spec.loader is not None, f"{EXAMPLE} is missing"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, str]:
    """One tiny training run through ``guild train``, shared by the tests below."""
    out = tmp_path_factory.mktemp("train")
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        code = guild(["train", "--steps", str(STEPS), "--n-envs", "2", "--seed", "3",
                      "--eval-episodes", "3", "--out", str(out), "--quiet"])
    assert code == 0, buf.getvalue()
    return out, buf.getvalue()


def test_training_saves_a_model_a_summary_and_reports_before_and_after(trained) -> None:
    out, printed = trained
    model = out / "model.zip"
    assert model.is_file()
    with zipfile.ZipFile(model) as z:
        meta = json.loads(z.read("guild.json"))
    assert meta["flatten"] is True and meta["env"] == "guild/Guild-v0"
    assert meta["steps"] >= STEPS
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == meta["steps"] and summary["seeds"] == [100000, 100002]
    assert summary["policy"] == f"sb3:{model.resolve()}"  # API.md §3: the spec that plays it
    assert make_policy(summary["policy"]).path == str(model.resolve())
    assert summary["baselines"]["factor"] > summary["baselines"]["random"]
    assert "before training: mean score" in printed and "after training:  mean score" in printed
    assert f"{summary['after']:+.3f}" in printed
    rows = (out / "curve.csv").read_text().splitlines()
    assert rows[0] == "steps,episode_score" and len(rows) > 1 + STEPS // 14 // 2
    needs_module("matplotlib", "'guild-game[plot]'")
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _weights(out: Path) -> bytes:
    with zipfile.ZipFile(out / "model.zip") as z:
        return z.read("policy.pth")


def test_a_fixed_seed_and_step_count_reproduce_the_model(trained, tmp_path) -> None:
    out, _ = trained
    example = _load_example()
    for seed in (3, 4):
        assert example.main(["--steps", str(STEPS), "--n-envs", "2", "--seed", str(seed),
                             "--eval-episodes", "3", "--out", str(tmp_path / str(seed)),
                             "--quiet", "--no-plot"]) == 0
    assert _weights(tmp_path / "3") == _weights(out)
    assert _weights(tmp_path / "4") != _weights(out)


def test_sb3_policy_plays_only_legal_actions(trained) -> None:
    out, _ = trained
    policy = make_policy(f"sb3:{out / 'model.zip'}")
    chosen = []

    class Checked:
        """Asks the sb3 policy, then checks its intent is one the legal mask allows."""

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
        game = play_episode(GameConfig(seed=seed), [Checked(), "factor", "magpie", "factor",
                                                    "magpie", "factor"])
        assert game.done
    assert len(chosen) == 28


def test_saved_model_plays_as_it_did_in_memory(trained) -> None:
    """The zip, read back through make_policy, decides exactly as the model that was saved."""
    from sb3_contrib import MaskablePPO

    out, _ = trained
    model = MaskablePPO.load(out / "model.zip", device="cpu")
    a = sb3_agents.SB3Policy.from_model(model)
    b = make_policy(f"sb3:{out / 'model.zip'}")
    lineup = ["factor", "magpie", "factor", "magpie", "factor"]
    ga = play_episode(GameConfig(seed=9), [a, *lineup])
    gb = play_episode(GameConfig(seed=9), [b, *lineup])
    assert ga.results() == gb.results()


def test_models_are_loaded_once_per_file_version(trained, tmp_path) -> None:
    out, _ = trained
    copy = tmp_path / "m.zip"
    copy.write_bytes((out / "model.zip").read_bytes())
    first = make_policy(f"sb3:{copy}")._model()
    again = make_policy(f"sb3:{copy}")._model()
    assert again is first and again.model is first.model
    st = copy.stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # "retrained" in place
    fresh = make_policy(f"sb3:{copy}")._model()
    assert fresh is not first
    assert sum(1 for k in sb3_agents._CACHE if k[0] == str(copy.resolve())) == 1


@pytest.mark.parametrize("workers", [1, 2])  # 2: worker processes build it from the spec
def test_a_league_ranks_the_trained_model(trained, tmp_path, capsys, workers: int) -> None:
    out, _ = trained
    spec = f"sb3:{out / 'model.zip'}"
    league = tmp_path / "league"
    code = guild(["league", "--policies", f"{spec},factor,magpie", "--episodes", "6",
                  "--workers", str(workers), "--seed", "1", "--out", str(league)])
    assert code == 0, capsys.readouterr().err
    rows = [json.loads(x) for x in (league / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 6
    played = set()
    for r in rows:
        seats = [s for s, name in enumerate(r["lineup"]) if name == spec]
        assert seats, r["lineup"]
        for seat in seats:  # it decided every turn itself: no fault, no factor fallback
            assert r["fallbacks"][seat] == 0 and r["faults"][seat] == {}
        assert r["reason"] == "complete"
        played.update(seats)
    assert played == set(range(6))  # the six rotations put it in every seat
    ladder = json.loads((league / "ladder.json").read_text())
    assert spec in {e["policy"] for e in ladder["policies"]}


def test_bad_specs_are_value_errors(tmp_path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        make_policy(f"sb3:{tmp_path / 'nope.zip'}")
    with pytest.raises(ValueError, match="model path"):
        make_policy("sb3:")
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="cannot be loaded"):
        make_policy(f"sb3:{junk}").act(None, 0)  # loading is lazy: the first act fails


@pytest.mark.parametrize("argv", [["--steps", "0"], ["--steps", "many"], ["--minutes", "-1"],
                                  ["--n-envs", "0"], ["--bogus"]])
def test_bad_command_lines_print_one_line_and_exit_2(argv, capsys) -> None:
    assert guild(["train", *argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert _load_example().main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err


def test_out_that_is_a_file_is_refused_before_training(tmp_path, capsys) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    assert guild(["train", "--out", str(f), "--steps", "64"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not a directory" in err
