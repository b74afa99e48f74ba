"""``python -m bench.compare``: each side is measured with its own engine, in interleaved rounds,
and a bad checkout or setting is one line and exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest

import bench.compare as compare
from bench.compare import ROOT, Side
from bench.workloads import parse_pool


def test_a_run_imports_the_engine_of_the_checkout_it_measures(tmp_path) -> None:
    """The child process measures the tree's own ``sim``: a tree whose ``sim`` cannot import
    fails with that tree's error, and a tree without one is refused rather than measured with
    the installed engine."""
    value, builds = compare.measure(ROOT, "parse_sentences_per_s", 0.05, parse_pool())
    assert value > 0 and "sim.native" in builds
    fake = tmp_path / "fake"
    (fake / "sim").mkdir(parents=True)
    (fake / "sim" / "__init__.py").write_text("raise ImportError('the fake checkout')\n")
    with pytest.raises(ValueError, match="parse_sentences_per_s failed: .*the fake checkout"):
        compare.measure(str(fake), "parse_sentences_per_s", 0.05)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="imported sim from .*, not from .*empty"):
        compare.measure(str(empty), "baseline_episodes_per_s", 0.05)


def test_rounds_alternate_the_sides_and_a_failed_workload_is_not_run_again(monkeypatch) -> None:
    calls: list[tuple[str, str]] = []

    def fake_measure(tree, workload, seconds, pool=None):
        calls.append((tree, workload))
        if tree == "b" and workload == "gym_steps_per_s":
            raise ValueError("gym_steps_per_s failed: no gym here")
        return {"a": 100.0, "b": 150.0}[tree] + len(calls), {"sim.native": tree == "b"}

    monkeypatch.setattr(compare, "measure", fake_measure)
    sides = (Side("before", "a"), Side("after", "b"))
    compare.run(sides, ["baseline_episodes_per_s", "gym_steps_per_s"], 3, 0.1)
    assert calls == [("a", "baseline_episodes_per_s"), ("b", "baseline_episodes_per_s"),
                     ("a", "gym_steps_per_s"), ("b", "gym_steps_per_s"),
                     ("b", "baseline_episodes_per_s"), ("a", "baseline_episodes_per_s"),
                     ("a", "gym_steps_per_s"),
                     ("a", "baseline_episodes_per_s"), ("b", "baseline_episodes_per_s"),
                     ("a", "gym_steps_per_s")]
    assert sides[0].values == {"baseline_episodes_per_s": [101.0, 106.0, 108.0],
                               "gym_steps_per_s": [103.0, 107.0, 110.0]}
    assert sides[1].failures == {"gym_steps_per_s": "gym_steps_per_s failed: no gym here"}
    assert sides[1].builds == {"sim.native": True}
    text = compare.table(sides, ["baseline_episodes_per_s", "gym_steps_per_s"])
    rows = text.splitlines()
    assert rows[0] == "| figure | before | after | ratio |"
    # medians of (101, 106, 108) and (152, 155, 159); the ratio is of the medians
    assert rows[2] == "| `baseline_episodes_per_s` | 106 (101-108) | 155 (152-159) | 1.46x |"
    assert rows[3] == ("| `gym_steps_per_s` | 107 (103-110) | failed: gym_steps_per_s failed: "
                       "no gym here | - |")


def test_a_revision_is_checked_out_into_a_worktree_and_compiled_there(monkeypatch,
                                                                       tmp_path) -> None:
    real_run = subprocess.run
    builds: list[list[str]] = []

    def run(cmd, *args, **kwargs):
        if "build_ext" in cmd or "--target" in cmd:  # the build takes minutes: record it
            env = kwargs["env"]
            builds.append([os.path.basename(c) for c in cmd[1:]]
                          + [env["GUILD_BUILD"], env["PYTHONPATH"] == target])
            return subprocess.CompletedProcess(cmd, 0, "", "")
        return real_run(cmd, *args, **kwargs)

    target = str(tmp_path / "build-requires")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:  # HEAD's, as checked out
        requires = tomllib.load(f)["build-system"]["requires"]
    assert any(r.startswith("mypy") for r in requires)
    monkeypatch.setattr(compare.subprocess, "run", run)
    tree, label = compare.checkout("HEAD", str(tmp_path))
    try:
        head = real_run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                        text=True).stdout.strip()
        assert real_run(["git", "-C", tree, "rev-parse", "HEAD"], capture_output=True,
                        text=True).stdout.strip() == head
        assert label == f"HEAD ({head[:12]})"
        assert os.path.isfile(os.path.join(tree, "sim", "game.py"))
        # the revision's own build requirements (mypy carries mypyc) into a folder of their
        # own, then the compile with that folder on the path
        assert builds == [
            ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target",
             "build-requires", *requires, "auto", True],
            ["setup.py", "-q", "build_ext", "--inplace", "auto", True]]
    finally:
        real_run(["git", "-C", ROOT, "worktree", "remove", "--force", tree], capture_output=True)
    assert compare.checkout(ROOT, str(tmp_path)) == (ROOT, ROOT)  # a folder is taken as it is
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "in-the-way").write_text("")
    with pytest.raises(ValueError, match="could not check out 'HEAD' into a worktree: .*exists"):
        compare.checkout("HEAD", str(tmp_path))


@pytest.mark.parametrize("args, message", [
    (["no-such-revision-or-folder"], "'no-such-revision-or-folder' is neither a checkout"),
    ([".", "--rounds", "0"], "--rounds must be from 1 to 100; got 0"),
    ([".", "--seconds", "-1"], "--seconds must be more than 0 and at most 600; got -1"),
    ([".", "--only", "league"], "invalid choice: 'league'"),
])
def test_bad_arguments_are_one_line_and_exit_2(args, message) -> None:
    done = subprocess.run([sys.executable, "-m", "bench.compare", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""
