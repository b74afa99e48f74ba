"""The compiled rules and baselines (sim.native, agents.baselines.native): they run only as the
build of the sources beside them.

A plain install compiles ``sim.native.COMPILED`` and ``agents.baselines.native.COMPILED`` with
mypyc, as two groups; an edited source, a partial build, an unreadable record or ``GUILD_PURE=1``
must run every module of its group from its ``.py`` file instead, so that a rule edited in an
editable install takes effect at once.  The golden
episodes and every other test run on whichever engine is installed; ``.ci/run`` also runs the
conformance tests with ``GUILD_PURE=1``.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import needs

import agents
import sim
from sim import native

ROOT = Path(__file__).resolve().parents[1]
BASELINES = native.Group.described(vars(agents.baselines.native), str(ROOT))
BASELINES_STALE = ("agents: the compiled baselines are not used: their sources, or those of sim "
                   "they were compiled against, were edited since the build; running them as "
                   "pure Python (pip install -e . compiles them again)")

# Prints whether the compiled modules run, how each one was loaded, and the warnings of import.
PROBE = """
import json, sys, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import sim, sim.game, sim.rules.turn
    import agents, agents.baselines.scripted
from sim import native

def loaders(names):
    return {m: type(sys.modules[m].__spec__.loader).__name__ for m in names if m in sys.modules}

print(json.dumps({"active": native.active, "file": sim.__file__,
                  "loaders": loaders(native.COMPILED),
                  "agents": {"active": agents.baselines.native.active, "file": agents.__file__,
                             "loaders": loaders(agents.baselines.native.COMPILED)},
                  "warnings": [str(w.message) for w in caught
                               if w.category is native.StaleBuildWarning]}))
"""


def probe(cwd: Path, **env: str) -> dict:
    """Import ``sim`` from ``cwd`` in a fresh interpreter; what PROBE prints."""
    environ = {k: v for k, v in os.environ.items() if k != "GUILD_PURE"} | env
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=cwd, env=environ, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return json.loads(out)


@functools.cache
def installed() -> dict:
    """What ``import sim`` runs in this checkout (PROBE, without GUILD_PURE)."""
    return probe(ROOT)


def needs_build() -> None:
    """A current compiled build (conftest's ``needs``: a skip on a developer's machine with a
    pure install or a source edited since the build, a failure in CI)."""
    why = (installed()["warnings"] or ["installed without them (GUILD_BUILD=pure or no C "
                                       "compiler); pip install -e . compiles them"])[0]
    needs(installed()["active"], f"current compiled rules ({why})")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the installed ``sim`` and ``agents`` packages, compiled files and records
    included."""
    needs_build()
    for package in ("sim", "agents"):
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_the_installed_build_runs() -> None:
    needs_build()
    seen = installed()
    assert seen["active"] and not seen["warnings"], seen["warnings"]
    assert set(seen["loaders"].values()) == {"ExtensionFileLoader"}, seen["loaders"]
    baselines = seen["agents"]  # the second group: the scripted baselines
    assert baselines["active"], baselines
    assert set(baselines["loaders"].values()) == {"ExtensionFileLoader"}, baselines
    assert set(baselines["loaders"]) == set(agents.baselines.native.COMPILED)


def test_guild_pure_runs_every_compiled_module_from_its_source() -> None:
    needs_build()
    seen = probe(ROOT, GUILD_PURE="1")
    assert not seen["active"] and not seen["warnings"]
    assert set(seen["loaders"].values()) == {"SourceFileLoader"}, seen["loaders"]
    assert not seen["agents"]["active"]
    assert set(seen["agents"]["loaders"].values()) == {"SourceFileLoader"}, seen["agents"]


def test_an_edited_source_runs_as_python_with_a_warning(tree: Path) -> None:
    assert probe(tree)["active"]  # the copy is a valid build until edited
    rule = tree / "sim" / "rules" / "prices.py"
    rule.write_text(rule.read_text() + "\n# edited\n")
    seen = probe(tree)
    assert seen["file"].startswith(str(tree))
    assert not seen["active"]
    assert set(seen["loaders"].values()) == {"SourceFileLoader"}
    assert "sim: the compiled rules are not used: their sources were edited" in \
        seen["warnings"][0]
    # the baselines were compiled against the rules' types: stale too, and said so
    assert not seen["agents"]["active"] and seen["agents"]["file"].startswith(str(tree))
    assert set(seen["agents"]["loaders"].values()) == {"SourceFileLoader"}
    assert seen["warnings"][1:] == [BASELINES_STALE]


def test_an_edit_anywhere_in_sim_makes_the_baselines_stale(tree: Path) -> None:
    """World is not compiled, but the baselines read its fields as typed."""
    world = tree / "sim" / "rules" / "world.py"
    world.write_text(world.read_text() + "\n# edited\n")
    seen = probe(tree)
    assert seen["active"] and not seen["agents"]["active"]
    assert seen["warnings"] == [BASELINES_STALE]


def test_the_baselines_stay_compiled_beside_rules_run_from_source(tree: Path) -> None:
    """A partial build of the rules (their sources unchanged) runs them from source; the
    baselines call them through Python imports and keep running compiled."""
    next((tree / "sim" / "rules").glob("robbery.*.so")).unlink()
    seen = probe(tree)
    assert not seen["active"] and seen["agents"]["active"]
    assert set(seen["agents"]["loaders"].values()) == {"ExtensionFileLoader"}
    assert len(seen["warnings"]) == 1 and "partial build" in seen["warnings"][0]


def test_an_edited_baseline_runs_as_python_alone(tree: Path) -> None:
    rule = tree / "agents" / "baseline_rules.py"
    rule.write_text(rule.read_text() + "\n# edited\n")
    seen = probe(tree)
    assert seen["agents"]["file"].startswith(str(tree))
    assert not seen["agents"]["active"]
    assert set(seen["agents"]["loaders"].values()) == {"SourceFileLoader"}
    assert seen["warnings"] == [BASELINES_STALE]
    assert seen["active"]  # the rules' group is another build, still current


def test_a_partial_build_runs_as_python_with_a_warning(tree: Path) -> None:
    next((tree / "sim" / "rules").glob("robbery.*.so")).unlink()
    seen = probe(tree)
    assert not seen["active"] and set(seen["loaders"].values()) == {"SourceFileLoader"}
    assert "sim.rules.robbery has no compiled file" in seen["warnings"][0]


@pytest.mark.parametrize("record, why", [
    ("{not json", "unreadable"),
    (json.dumps({"digest": "0", "modules": ["sim.game"]}), "names other modules"),
])
def test_a_bad_record_runs_as_python_with_a_warning(tree: Path, record: str, why: str) -> None:
    (tree / "sim" / native.STAMP).write_text(record)
    seen = probe(tree)
    assert not seen["active"] and why in seen["warnings"][0]


def test_no_record_is_a_pure_install_without_warning(tree: Path) -> None:
    (tree / "sim" / native.STAMP).unlink()
    seen = probe(tree)
    assert not seen["active"] and not seen["warnings"]
    assert set(seen["loaders"].values()) == {"SourceFileLoader"}


def test_source_modules_are_python_and_leave_the_process_modules_alone() -> None:
    before = {m: sys.modules.get(m) for m in native.COMPILED}
    prices, kernels = native.source_modules("sim.rules.prices", "sim.batched.kernels_step")
    assert inspect.isfunction(prices.buy_walk) and inspect.isfunction(kernels.buy_walk)
    assert kernels.buy_walk is prices.buy_walk  # the kernels call that very copy
    assert {m: sys.modules.get(m) for m in native.COMPILED} == before
    assert sim.rules.prices is before["sim.rules.prices"]
    if native.active:
        assert prices is not before["sim.rules.prices"]
        assert not inspect.isfunction(before["sim.rules.prices"].buy_walk)


@pytest.mark.parametrize("group", [native.RULES, BASELINES], ids=["rules", "baselines"])
def test_the_digest_covers_every_compiled_source(tmp_path: Path, group: native.Group) -> None:
    for package in {group.package, *group.depends}:
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    digest = group.source_digest(str(tmp_path))
    assert digest == group.source_digest()
    sources = [Path(native.source_path(module, str(tmp_path))) for module in group.modules]
    sources += [p for package in group.depends for p in (tmp_path / package).rglob("*.py")]
    for path in sources:
        text = path.read_bytes()
        path.write_bytes(text + b" ")
        assert group.source_digest(str(tmp_path)) != digest, path
        path.write_bytes(text)
    assert len(sources) > len(group.modules) or not group.depends


def test_a_bad_build_mode_is_one_line() -> None:
    done = subprocess.run([sys.executable, "setup.py", "--version"], cwd=ROOT, timeout=120,
                          env=os.environ | {"GUILD_BUILD": "fast"}, capture_output=True,
                          text=True)
    assert done.returncode != 0
    assert done.stderr.strip() == ("setup.py: GUILD_BUILD must be auto, native or pure; "
                                   "got 'fast'")


def test_a_pure_install_retires_an_earlier_build(tree: Path) -> None:
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree,
                   env=os.environ | {"GUILD_BUILD": "pure"}, check=True, capture_output=True,
                   timeout=300)
    assert not (tree / "sim" / native.STAMP).exists()
    assert not (tree / "agents" / native.STAMP).exists()
    seen = probe(tree)  # the compiled files are still there, and ignored
    assert not seen["active"] and not seen["warnings"]
    assert set(seen["loaders"].values()) == {"SourceFileLoader"}
    assert not seen["agents"]["active"]
    assert set(seen["agents"]["loaders"].values()) == {"SourceFileLoader"}


class Mine(agents.SeatView):
    """A user's view: an attribute and a method of its own (module level, so it pickles)."""

    def __init__(self, game: sim.Game, seat: int) -> None:
        super().__init__(game, seat)
        self.memory = ["saw a thief"]

    def purse_and_one(self) -> int:
        return self.coin + 1


def test_a_user_view_subclasses_the_compiled_seat_view() -> None:
    """Policies may extend ``SeatView`` (compiled with allow_interpreted_subclasses): their
    methods and attributes work, and survive copies and pickles (``SeatView.__reduce__``; the
    compiled class's default copy dropped a subclass's attributes)."""
    game = sim.Game(sim.GameConfig(seed=3))
    game.play_turn([agents.Factor().act(game, s) for s in range(6)])
    view = Mine(game, 2)
    assert view.purse_and_one() == game.state.coin[2] + 1
    plain = agents.SeatView(game, 2)
    assert (view.room, view.quests, view.cogs) == (game.state.room[2], plain.quests, plain.cogs)
    for copied in (copy.copy(view), copy.deepcopy(view), pickle.loads(pickle.dumps(view))):
        assert type(copied) is Mine and copied.memory == ["saw a thief"]
        assert (copied.seat, copied.coin, copied.quests, copied.floor) == (
            2, view.coin, view.quests, view.floor)


def test_the_baselines_take_numpy_seats_and_name_a_bad_one() -> None:
    """A numpy integer is a seat, as it was before the baselines were compiled; anything else
    is refused with Python's own error for a non-index."""
    game = sim.Game(sim.GameConfig(seed=5))
    for policy in (agents.Factor(), agents.Magpie()):
        assert [policy.act(game, np.int64(s)) for s in range(6)] == [
            policy.act(game, s) for s in range(6)]
        with pytest.raises(TypeError, match="'float' object cannot be interpreted as an "
                                            "integer"):
            policy.act(game, 1.0)
    assert agents.SeatView(game, np.int32(4)).seat == 4
