"""The import layering of pyproject's ``[tool.importlinter]`` holds, and it can fail; and no
module imports itself through a circle of others.

``lint-imports`` runs once over the real tree (every contract kept) and over copies of the
packages in which one deliberate wrong import was planted: each run must exit non-zero and
name the offending pair of modules, so a contract that checks nothing cannot pass unseen.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs, needs_module

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
    # packages, sim's, agents' and league's wings, no env frameworks in the game
    assert kept and int(kept.group(1)) >= 5, out


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
    # the baselines reaching up to the learners
    ("agents/baselines/rules.py", "import agents.learn.ppo",
     "agents.baselines.rules -> agents.learn.ppo"),
    # the policy interface reaching up to a wing
    ("agents/policy.py", "import agents.llm.seat", "agents.policy -> agents.llm.seat"),
    # a seat in its sandbox reaching the league's store
    ("league/seat/host.py", "import league.core.store", "league.seat.host -> league.core.store"),
    # the league's core reaching up to the command line
    ("league/core/ladder.py", "import league.cli.guild", "league.core.ladder -> league.cli.guild"),
], ids=["rules->agents", "language->gymnasium", "game->codec", "feasibility->agents",
        "baselines->learn", "policy->llm", "seat->core", "core->cli"])
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


def _circles(imports: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    modules = set(imports)
    edges = {m: sorted(set(imports[m]) & modules) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


EDGES = """
import json, sys
import grimp
# every import statement counts, those inside functions too; only imports under
# ``if TYPE_CHECKING:`` do not (they never run)
graph = grimp.build_graph(*sys.argv[1:], exclude_type_checking_imports=True, cache_dir=None)
print(json.dumps({m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}))
"""


def _imports(root: Path) -> dict[str, list[str]]:
    """Each module of the packages under ``root`` -> the modules it imports (grimp, in a
    process of its own, so that it reads ``root``'s packages and not those imported here)."""
    needs_module("grimp", "import-linter, the 'dev' extra")
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    run = subprocess.run([sys.executable, "-c", EDGES, *PACKAGES[:-1]], cwd=root, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_no_module_imports_itself_through_others() -> None:
    assert _circles(_imports(ROOT)) == []


def test_a_planted_circle_is_found(tmp_path: Path) -> None:
    _copy_tree(tmp_path)
    target = tmp_path / "agents" / "learn" / "ppo_config.py"
    # a lazy import inside a function closes a circle as surely as one at the top
    target.write_text(target.read_text(encoding="utf-8")
                      + "\n\ndef _planted():\n    import agents.learn.training  # noqa\n",
                      encoding="utf-8")
    circles = _circles(_imports(tmp_path))
    assert any({"agents.learn.ppo_config", "agents.learn.training"} <= set(c)
               for c in circles), circles
