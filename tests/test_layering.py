"""The import layering of pyproject's ``[tool.importlinter]`` holds, and it can fail.

``lint-imports`` runs once over the real tree (every contract kept) and over copies of the
packages in which one deliberate wrong import was planted: each run must exit non-zero and
name the offending pair of modules, so a contract that checks nothing cannot pass unseen.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sim", "agents", "feasibility", "league", "bench")
LINT_IMPORTS = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or \
    shutil.which("lint-imports")


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    needs(LINT_IMPORTS is not None, "lint-imports (pip install import-linter, the 'dev' extra)")
    env = {**os.environ, "PYTHONPATH": str(cwd), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_tree_keeps_every_contract() -> None:
    run = _lint(ROOT)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    kept = re.search(r"Contracts: (\d+) kept, 0 broken", out)
    assert kept and int(kept.group(1)) >= 3, out  # packages, sim's wings, no env frameworks


def _not_python(folder: str, names: list[str]) -> list[str]:
    return [n for n in names if n == "__pycache__"
            or not (n.endswith(".py") or (Path(folder) / n).is_dir())]


def _copy_tree(dest: Path) -> None:
    """The packages' Python files and the contracts, nothing else."""
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, dest / pkg, ignore=_not_python)
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")


@pytest.mark.parametrize(("module", "planted", "named"), [
    # a rule reaching up to the policies
    ("sim/rules/prices.py", "import agents", "sim.rules.prices -> agents"),
    # the game depending on an environment framework
    ("sim/language/vocab.py", "import gymnasium", "sim.language.vocab -> gymnasium"),
    # a wing importing a wing above it
    ("sim/game.py", "from sim.codec import encode", "sim.game -> sim.codec"),
    # feasibility reasons from the rules alone, never from agents
    ("feasibility/greedy.py", "import agents.baselines", "feasibility.greedy -> agents"),
], ids=["rules->agents", "language->gymnasium", "game->codec", "feasibility->agents"])
def test_a_planted_wrong_import_breaks_a_contract(tmp_path: Path, module: str, planted: str,
                                                  named: str) -> None:
    _copy_tree(tmp_path)
    target = tmp_path / module
    source = target.read_text(encoding="utf-8")
    # after the module docstring and ``from __future__``, where an import may stand
    head, sep, rest = source.partition("from __future__ import annotations\n")
    assert sep, f"{module} has no `from __future__ import annotations` line to plant after"
    target.write_text(head + sep + planted + "  # noqa\n" + rest, encoding="utf-8")
    run = _lint(tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert "BROKEN" in out, out
    assert named in out, out
