"""What an install puts on ``sys.path``: the game's packages and the league, each subpackage
with them, and nothing with a generic name (``bench`` stays a tool of the repository); and a
seat in a sandbox imports ``league.seat`` without the rest of the league."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import needs_module
from setuptools import find_packages

ROOT = Path(__file__).resolve().parent.parent
INSTALLED = {"sim", "agents", "feasibility", "league"}


def _installed() -> list[str]:
    """The packages ``pyproject.toml`` tells setuptools to install, found as it finds them."""
    tomllib = needs_module("tomllib", "Python 3.11 or later")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    find = config["tool"]["setuptools"]["packages"]["find"]
    return find_packages(str(ROOT), include=find["include"])


def test_only_the_games_packages_and_the_league_are_installed() -> None:
    packages = _installed()
    assert {p.split(".")[0] for p in packages} == INSTALLED
    assert "bench" not in packages


def test_every_subpackage_is_installed_with_its_package() -> None:
    on_disk = {".".join(init.parent.relative_to(ROOT).parts)
               for top in INSTALLED for init in (ROOT / top).rglob("__init__.py")
               if "__pycache__" not in init.parts}
    assert on_disk and on_disk == set(_installed())


def test_a_seat_imports_league_seat_without_the_league() -> None:
    """What the sandbox lets a seat see of the league is ``league/__init__.py`` and
    ``league/seat/``: importing the seat host must not need anything else of it."""
    code = ("import json, sys, league.seat.host, league.seat.zygote, league.seat.protocol; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('league'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert loaded and all(m == "league" or m.startswith("league.seat") for m in loaded), loaded
