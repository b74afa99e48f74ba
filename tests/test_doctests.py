"""The examples in the packages' docstrings run and hold.

Every module of the project's packages whose source holds a ``>>>`` prompt is a case; each
prompt line of its source must be an example that ``doctest`` actually ran, so an example in a
place ``doctest`` does not look (a comment, a string, an object imported from elsewhere) fails
here rather than passing unseen.  The modules that ``pip install`` compiles (``sim.native``)
are read from their sources.
"""

from __future__ import annotations

import doctest
import importlib
import sys
from pathlib import Path
from unittest import mock

import pytest
from conftest import needs

from sim import native

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sim", "agents", "feasibility", "league", "bench")


def _prompts(path: Path) -> int:
    """Lines of ``path`` that start (after indentation) with a doctest prompt."""
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines()
               if line.lstrip().startswith(">>>"))


def _modules_with_examples() -> list[tuple[str, Path]]:
    out = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if _prompts(path):
                parts = path.relative_to(ROOT).with_suffix("").parts
                name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
                out.append((name, path))
    return out


MODULES = _modules_with_examples()


def test_there_are_examples_to_run() -> None:
    # sim.rules.prices, sim.rules.rng and sim.game held examples when this test was written
    assert len(MODULES) >= 3, MODULES


def _import(name: str):
    try:
        if name in native.COMPILED:  # doctest reads Python functions (the compiled ones are
            return native.source_modules(name)[0]  # built from this very source)
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] in PACKAGES:
            raise
        needs(False, f"the Python package {e.name!r}, which {name} imports")
        raise


@pytest.mark.parametrize(("name", "path"), MODULES, ids=[name for name, _ in MODULES])
def test_module_examples(name: str, path: Path) -> None:
    module = _import(name)
    assert Path(module.__file__).resolve() == path.resolve(), (
        f"{name} imported from {module.__file__}, not from this checkout")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []  # doctest's own description of each failing example
    ran = 0
    # doctest takes an object for the module's own if sys.modules[its __module__] is the module
    with mock.patch.dict(sys.modules, {name: module}):
        for test in doctest.DocTestFinder().find(module, name):
            ran += len(test.examples)
            runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
    assert runner.tries == ran
    assert ran == _prompts(path), (
        f"{path.relative_to(ROOT)} has {_prompts(path)} '>>>' lines but doctest found {ran} "
        "examples: one stands where doctest does not look")
