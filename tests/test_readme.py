"""The README's examples run as written: the three ways to write a policy, the commands that
try them, the environments' snippet, the baselines' figures (command 1's league) and every link
to a file of the repository."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def files() -> dict[str, str]:
    """The README's example files: each ```python block whose first line is ``# NAME.py``."""
    return {m[1]: m[2] for m in re.finditer(r"```python\n# (\w+\.py)\n(.*?)```", README, re.S)}


def block_after(marker: str, language: str) -> str:
    """The first fenced block of ``language`` after the line containing ``marker``."""
    start = README.index(marker)
    m = re.compile(rf"```{language}\n(.*?)```", re.S).search(README, start)
    assert m is not None, f"no {language} block after {marker!r}"
    return m[1]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """An empty folder holding only the README's example files."""
    for name, text in files().items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """A README command line in bash, with this interpreter's scripts (``guild``) first."""
    env = os.environ | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)  # the command sets its own, as a reader's shell would not have one
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_the_three_ways_to_write_a_policy_are_there() -> None:
    assert sorted(files()) == ["bot.py", "courier.py", "shopper.py"]


def test_the_try_them_commands_run_as_written(folder: Path) -> None:
    needs(shutil.which("bwrap") is not None, "bubblewrap (apt-get install bubblewrap)")
    commands = [line for line in block_after("Try them", "bash").splitlines() if line.strip()]
    assert len(commands) == 3
    outputs = []
    for command in commands:
        done = run(command, folder)
        assert done.returncode == 0, f"{command}\n{done.stderr}"
        outputs.append(done.stdout)
    for out in outputs[:2]:  # the evaluations' figures, each saying first what it measures
        assert out.startswith("evaluate: ") and "paired difference" in out
    ladder = json.loads((folder / "runs" / "mine" / "ladder.json").read_text(encoding="utf-8"))
    by_policy = {p["policy"]: p for p in ladder["policies"]}
    assert set(by_policy) == {"shopper:Shopper", "courier:courier", "exec:python3 bot.py",
                              "factor"}
    for name, entry in by_policy.items():  # every example plays its own decisions
        assert entry["faults"] == 0 and entry["fallbacks"] == 0, (name, entry)
        assert entry["rank"] is not None
    assert (folder / "runs" / "mine" / "report.html").is_file()


def test_the_environments_snippet_runs_as_written(folder: Path) -> None:
    snippet = block_after("## Learning environments", "python")
    done = run(f"python - <<'EOF'\n{snippet}\nprint('ok', sorted(obs), reward)\nEOF", folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok ") and "'action_mask'" in done.stdout


def test_the_baselines_table_holds_command_1s_figures(tmp_path: Path) -> None:
    from league.cli.guild import main

    first = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first is not None
    command = first[1].splitlines()[1]  # under "# 1. Install and run the main job"
    league = command.split("&& guild ", 1)[1].split()
    out = league.index("--out")
    league[out + 1] = str(tmp_path / "demo")
    with open(os.devnull, "w") as quiet:  # the progress line and the ladder
        stdout, sys.stdout = sys.stdout, quiet
        try:
            assert main(league) == 0
        finally:
            sys.stdout = stdout
    ladder = json.loads((tmp_path / "demo" / "ladder.json").read_text(encoding="utf-8"))
    table = dict(re.findall(r"^\| `(\w+)` \| .*? \| ([+-]\d\.\d{3}) \|$", README, re.M))
    assert table == {p["policy"]: f"{p['meanScore']:+.3f}" for p in ladder["policies"]}


def test_every_link_to_a_file_of_the_repository_resolves() -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if "://" not in link]
    assert len(local) >= 10
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, missing
    for path in re.findall(r"`((?:examples|docs)/[\w/.-]+)`", README):
        assert (ROOT / path).exists(), path


def test_the_training_config_example_is_read_as_written(tmp_path: Path) -> None:
    from agents.learn.train_args import read_config

    block = re.search(r"```toml\n(.*?)```", README, re.S)
    assert block is not None
    path = tmp_path / "train.toml"
    path.write_text(block[1], encoding="utf-8")
    values, _ = read_config(str(path))
    assert values["lr"] == 6e-4 and values["ent_coef"] == 0.01 and values["minutes"] == 10
    assert tuple(values["hidden"]) == (128, 128)


def test_every_link_of_the_docs_to_a_file_resolves() -> None:
    """The documents moved out of the README keep working links (relative to docs/)."""
    missing = []
    for doc in sorted((ROOT / "docs").glob("*.md")):
        for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            if "://" not in link and not (doc.parent / link).exists():
                missing.append(f"{doc.name}: {link}")
    assert not missing, missing


def test_the_python_pages_first_game_plays_the_acts_it_shows() -> None:
    # docs/python.md's first example: every illustrated act is one the town accepts, and
    # its comments give what it prints.
    page = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", page, re.S)
    assert block is not None
    done = subprocess.run([sys.executable, "-c", block[1]], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    shown = [line.split("# ", 1)[1] for line in block[1].splitlines()
             if line.startswith("print([a[") or line.startswith("print(game.snapshot()")]
    printed = done.stdout.splitlines()
    assert printed[-3] == "['ok', 'ok', 'ok', 'waited', 'waited', 'ok']" == shown[0]
    assert printed[-2] == "5" and shown[1].startswith("5:")
