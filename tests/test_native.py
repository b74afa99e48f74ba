"""The compiled rules and baselines (sim.native, agents.baselines.native, setup.py): they run only
as the build of the sources beside them, and say once, in one line, when they cannot.

A plain install compiles ``sim.native.COMPILED`` and ``agents.baselines.native.COMPILED`` with
mypyc, as two groups; an edited source, a partial or failed build, an unreadable record or
``GUILD_PURE=1`` must run every module of its group from its ``.py`` file instead, so that a
rule edited in an editable install takes effect at once; a compiled file that is no module of a
group must never shadow its source.  The build itself is tested without compiling: its cache is
seeded with the installed build, and a stand-in ``mypyc`` that cannot be imported proves that a
cache hit compiles nothing.  The golden episodes and every other test run on whichever engine is
installed; ``.ci/run`` also runs the conformance tests with ``GUILD_PURE=1``.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import os
import pickle
import runpy
import shlex
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
SUFFIX = native.SUFFIX
STALE = "; running the {} as pure Python (pip install -e . compiles again)"

# Prints whether the compiled modules run and how each one was loaded (stderr: what was said).
PROBE = """
import json, sys
import sim, sim.game, sim.rules.turn, sim.rules.scoring
import agents, agents.baselines.scripted, agents.policy
from sim import native

def loaders(names):
    return {m: type(sys.modules[m].__spec__.loader).__name__ for m in names if m in sys.modules}

print(json.dumps({"active": native.active, "file": sim.__file__,
                  "loaders": loaders(native.COMPILED),
                  "others": loaders(["sim.rules.scoring", "agents.policy"]),
                  "agents": {"active": agents.baselines.native.active, "file": agents.__file__,
                             "loaders": loaders(agents.baselines.native.COMPILED)}}))
"""


def probe(cwd: Path, **env: str) -> dict:
    """Import ``sim`` and ``agents`` from ``cwd`` in a fresh interpreter: what PROBE prints,
    and under ``"said"`` the lines it wrote to stderr."""
    environ = {k: v for k, v in os.environ.items()
               if k not in ("GUILD_PURE", "GUILD_BUILD_SAID")} | env
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) | {"said": done.stderr.splitlines()}


@functools.cache
def installed() -> dict:
    """What ``import sim`` runs in this checkout (PROBE, without GUILD_PURE)."""
    return probe(ROOT)


def needs_build() -> None:
    """A current compiled build (conftest's ``needs``: a skip on a developer's machine with a
    pure install or a source edited since the build, a failure in CI)."""
    why = (installed()["said"] or ["installed without them (GUILD_BUILD=pure or no C "
                                   "compiler); pip install -e . compiles them"])[0]
    needs(installed()["active"] and installed()["agents"]["active"],
          f"current compiled rules and baselines ({why})")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the installed ``sim`` and ``agents`` packages, compiled files and records
    included, with what ``setup.py`` needs beside them."""
    needs_build()
    for package in ("sim", "agents"):
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def build(tree: Path, mode: str = "auto", **env: str) -> subprocess.CompletedProcess:
    """``setup.py build_ext --inplace`` in ``tree`` with a build cache of its own, where a
    stand-in ``mypyc`` fails to import: no test compiles (a cache hit never imports it)."""
    fake = tree / "no-mypyc" / "mypyc"
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "__init__.py").write_text("raise ImportError('the tests never compile')\n")
    environ = os.environ | {"GUILD_BUILD": mode, "GUILD_BUILD_CACHE": str(tree / "cache"),
                            "PYTHONPATH": str(fake.parent)} | env
    return subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                          cwd=tree, env=environ, capture_output=True, text=True, timeout=300)


def seed_cache(tree: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Store the installed build in ``tree``'s build cache, under the keys a build of the
    tree's sources looks for; the entries' folders."""
    monkeypatch.setenv("GUILD_BUILD_CACHE", str(tree / "cache"))
    setup = runpy.run_path(str(tree / "setup.py"), run_name="guild_setup")
    entries = []
    for group in setup["GROUPS"]:
        key = setup["cache_key"](group, group.record(str(tree)))
        setup["store"](group, key, str(ROOT))
        entries.append(tree / "cache" / key)
        assert (entries[-1] / "entry.json").exists()
    return entries


def compiled_files(tree: Path) -> list[Path]:
    return sorted(p for package in ("sim", "agents") for p in (tree / package).rglob("*.so"))


def test_the_installed_build_runs() -> None:
    needs_build()
    seen = installed()
    assert seen["active"] and not seen["said"], seen["said"]
    assert set(seen["loaders"].values()) == {"ExtensionFileLoader"}, seen["loaders"]
    baselines = seen["agents"]  # the second group: the scripted baselines
    assert baselines["active"], baselines
    assert set(baselines["loaders"].values()) == {"ExtensionFileLoader"}, baselines
    assert set(baselines["loaders"]) == set(agents.baselines.native.COMPILED)
    assert set(seen["others"].values()) == {"SourceFileLoader"}


def test_guild_pure_runs_every_compiled_module_from_its_source() -> None:
    needs_build()
    seen = probe(ROOT, GUILD_PURE="1")
    assert not seen["active"] and not seen["said"]
    assert set(seen["loaders"].values()) == {"SourceFileLoader"}, seen["loaders"]
    assert not seen["agents"]["active"]
    assert set(seen["agents"]["loaders"].values()) == {"SourceFileLoader"}, seen["agents"]


def test_an_edited_source_runs_as_python_said_in_one_line(tree: Path) -> None:
    assert probe(tree)["active"]  # the copy is a valid build until edited
    rule = tree / "sim" / "rules" / "prices.py"
    rule.write_text(rule.read_text() + "\n# edited\n")
    seen = probe(tree)
    assert seen["file"].startswith(str(tree))
    assert not seen["active"]
    assert set(seen["loaders"].values()) == {"SourceFileLoader"}
    # the baselines were compiled against the rules' types: stale too, but one line says it
    assert not seen["agents"]["active"] and seen["agents"]["file"].startswith(str(tree))
    assert set(seen["agents"]["loaders"].values()) == {"SourceFileLoader"}
    assert seen["said"] == ["guild-game: sim/rules/prices.py was edited since the build"
                            + STALE.format("engine")]


def test_the_stale_build_note_is_never_an_error_nor_on_stdout(tree: Path) -> None:
    """The note goes to stderr and is a note only: with stderr closed at start (Python then
    has no sys.stderr, and print would write to stdout) or a pipe whose reader left, the
    command runs as if it were not said."""
    rule = tree / "sim" / "rules" / "prices.py"
    rule.write_text(rule.read_text() + "\n# edited\n")
    environ = {k: v for k, v in os.environ.items() if k not in ("GUILD_PURE", "GUILD_BUILD_SAID")}
    code = "import sim; print('ran', sim.native.active)"
    closed = subprocess.run(f"{shlex.quote(sys.executable)} -c {shlex.quote(code)} 2>&-",
                            shell=True, cwd=tree, env=environ, capture_output=True, text=True,
                            timeout=120)
    assert (closed.returncode, closed.stdout) == (0, "ran False\n"), closed
    read, write = os.pipe()
    os.close(read)  # a reader that left: writing raises BrokenPipeError
    try:
        left = subprocess.run([sys.executable, "-c", code], cwd=tree, env=environ,
                              stdout=subprocess.PIPE, stderr=write, text=True, timeout=120)
    finally:
        os.close(write)
    assert (left.returncode, left.stdout) == (0, "ran False\n")


def test_an_edit_anywhere_in_sim_makes_the_baselines_stale(tree: Path) -> None:
    """The encoder is not compiled, nor read by the rules, but the baselines' record covers all
    of sim: they were compiled against its types."""
    encode = tree / "sim" / "codec" / "encode.py"
    encode.write_text(encode.read_text() + "\n# edited\n")
    seen = probe(tree)
    assert seen["active"] and not seen["agents"]["active"]
    assert seen["said"] == ["guild-game: sim/codec/encode.py was edited since the build"
                            + STALE.format("scripted baselines")]


def test_an_edit_of_a_module_the_rules_read_makes_the_engine_stale(tree: Path) -> None:
    """World is not compiled, but the compiled rules read its fields as typed."""
    world = tree / "sim" / "rules" / "world.py"
    world.write_text(world.read_text() + "\n# edited\n")
    seen = probe(tree)
    assert not seen["active"] and not seen["agents"]["active"]
    assert seen["said"] == ["guild-game: sim/rules/world.py was edited since the build"
                            + STALE.format("engine")]


def test_the_baselines_stay_compiled_beside_rules_run_from_source(tree: Path) -> None:
    """A partial build of the rules (their sources unchanged) runs them from source; the
    baselines call them through Python imports and keep running compiled."""
    (tree / "sim" / "rules" / f"robbery{SUFFIX}").unlink()
    seen = probe(tree)
    assert not seen["active"] and set(seen["loaders"].values()) == {"SourceFileLoader"}
    assert seen["agents"]["active"]
    assert set(seen["agents"]["loaders"].values()) == {"ExtensionFileLoader"}
    assert seen["said"] == ["guild-game: sim.rules.robbery has no compiled file (a partial "
                            "build)" + STALE.format("engine")]


def test_an_edited_baseline_runs_as_python_alone(tree: Path) -> None:
    rule = tree / "agents" / "baselines" / "rules.py"
    rule.write_text(rule.read_text() + "\n# edited\n")
    seen = probe(tree)
    assert seen["agents"]["file"].startswith(str(tree))
    assert not seen["agents"]["active"]
    assert set(seen["agents"]["loaders"].values()) == {"SourceFileLoader"}
    assert seen["said"] == ["guild-game: agents/baselines/rules.py was edited since the build"
                            + STALE.format("scripted baselines")]
    assert seen["active"]  # the rules' group is another build, still current


@pytest.mark.parametrize("record, why", [
    ("{not json", "its build record sim/native.json is unreadable"),
    (json.dumps({"files": {}, "modules": ["sim.game"]}),
     "sim/native.json is the record of other modules than sim.native.COMPILED"),
])
def test_a_bad_record_runs_as_python_said_in_one_line(tree: Path, record: str,
                                                      why: str) -> None:
    (tree / "sim" / native.RECORD).write_text(record)
    seen = probe(tree)
    assert not seen["active"] and len(seen["said"]) == 1
    assert seen["said"][0].startswith(f"guild-game: {why}")


def test_no_record_is_a_pure_install_without_a_word(tree: Path) -> None:
    (tree / "sim" / native.RECORD).unlink()
    (tree / "agents" / "baselines" / native.RECORD).unlink()
    seen = probe(tree)
    assert not seen["active"] and not seen["agents"]["active"] and not seen["said"]
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
def test_the_record_covers_every_compiled_source(tmp_path: Path, group: native.Group) -> None:
    for package in {name.split("/")[0].partition(".")[0] for name in (group.package,
                                                                      *group.depends)}:
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    record = group.record(str(tmp_path))
    sources = [Path(native.source_path(module, str(tmp_path))) for module in group.modules]
    sources += [p for package in group.depends for p in (tmp_path / package).rglob("*.py")]
    assert sorted(record["files"]) == sorted(
        p.relative_to(tmp_path).as_posix() for p in set(sources))
    for path in sources:
        text = path.read_bytes()
        path.write_bytes(text + b" ")
        assert group.record(str(tmp_path)) != record, path
        path.write_bytes(text)
    assert len(sources) > len(group.modules) or not group.depends


def test_a_bad_build_mode_is_one_line() -> None:
    done = subprocess.run([sys.executable, "setup.py", "--version"], cwd=ROOT, timeout=120,
                          env=os.environ | {"GUILD_BUILD": "fast"}, capture_output=True,
                          text=True)
    assert done.returncode != 0
    assert done.stderr.strip() == ("setup.py: GUILD_BUILD must be auto, native or pure; "
                                   "got 'fast'")


def test_a_second_build_copies_from_the_cache_and_compiles_nothing(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed_cache(tree, monkeypatch)
    for path in compiled_files(tree) + [tree / "sim" / native.RECORD]:
        path.unlink()
    done = build(tree)  # with a mypyc that cannot be imported
    assert done.returncode == 0, done.stderr
    assert "compiling" not in done.stderr and done.stderr.count("from the build cache") == 2
    assert len(compiled_files(tree)) == len(native.COMPILED) + len(BASELINES.modules) + 2
    seen = probe(tree)
    assert seen["active"] and seen["agents"]["active"] and not seen["said"]
    assert set(seen["loaders"].values()) == {"ExtensionFileLoader"}


def test_a_build_tells_the_terminal_what_it_does_when_pip_hides_its_output(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pip keeps a build's stderr to itself; a person at a terminal still reads each step."""
    from conftest import needs_module

    pexpect = needs_module("pexpect", "'guild-game[dev]'")
    seed_cache(tree, monkeypatch)
    for path in compiled_files(tree):
        path.unlink()
    log = tree / "hidden.log"  # what pip would capture
    fake = tree / "no-mypyc"
    (fake / "mypyc").mkdir(parents=True, exist_ok=True)
    (fake / "mypyc" / "__init__.py").write_text("raise ImportError('the tests never compile')\n")
    env = os.environ | {"GUILD_BUILD": "auto", "GUILD_BUILD_CACHE": str(tree / "cache"),
                        "PYTHONPATH": str(fake)}
    env.pop("GUILD_BUILD_TTY", None)
    child = pexpect.spawn("bash", ["-c", f"'{sys.executable}' setup.py -q build_ext --inplace "
                                   f"> '{log}' 2>&1"], cwd=str(tree), env=env, encoding="utf-8",
                          timeout=120)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, log.read_text()
    shown = [line for line in child.before.splitlines() if line.startswith("guild-game: ")]
    hidden = [line for line in log.read_text().splitlines() if line.startswith("guild-game: ")]
    assert len(shown) == 2 and shown == hidden
    assert all("copied from the build cache" in line for line in shown)
    # without a terminal (CI, a pipe) the lines go to stderr alone, without an error
    done = build(tree)
    assert done.returncode == 0 and done.stderr.count("from the build cache") == 2


def test_a_broken_cache_entry_is_ignored(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entries = seed_cache(tree, monkeypatch)
    library = entries[0] / f"{native.GROUP.replace('.', '/')}__mypyc{SUFFIX}"
    library.write_bytes(library.read_bytes()[:1000])  # cut short
    done = build(tree)
    assert done.returncode == 0, done.stderr
    assert "ignoring a broken build cache entry" in done.stderr
    assert not entries[0].exists() and entries[1].exists()  # gone, and the other one used
    # the rules had to compile, which the stand-in mypyc makes fail: said once, in one line
    seen = probe(tree)
    assert not seen["active"] and seen["agents"]["active"]
    assert seen["said"] == [
        "guild-game: compiling at install failed (ImportError: the tests never compile); "
        "running the engine as pure Python (pip install -e . brings mypyc ([build-system] "
        "requires))"]


def test_a_failed_build_says_so_once_at_import(tree: Path) -> None:
    done = build(tree)  # an empty cache: both groups compile, and mypyc is missing
    assert done.returncode == 0, done.stderr  # auto: the pure-Python package installs
    assert "compiling with mypyc failed" in done.stderr
    record = json.loads((tree / "sim" / native.RECORD).read_text())
    assert record["failed"] == "ImportError: the tests never compile"
    seen = probe(tree)
    assert not seen["active"] and not seen["agents"]["active"]
    assert set(seen["loaders"].values()) == {"SourceFileLoader"}
    assert len(seen["said"]) == 1 and seen["said"][0].startswith(
        "guild-game: compiling at install failed (ImportError: the tests never compile); "
        "running the engine as pure Python")
    assert build(tree, "native").returncode != 0  # CI's mode fails the install instead


def test_a_compiled_file_of_no_module_never_shadows_its_source(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module dropped from a group (scoring was compiled once) or an old build's file: the
    build removes it, and until then ``choose`` loads the module from its source, the group's
    build still running."""
    shim = tree / "sim" / "rules" / f"turn{SUFFIX}"
    strays = [f"{name}{SUFFIX}" for name in ("sim/rules/scoring", "agents/policy")]
    for stray in strays:
        shutil.copy(shim, tree / stray)
    # the baselines' record and library where they were before they moved to agents.baselines
    shutil.copy(tree / "agents" / "baselines" / native.RECORD, tree / "agents" / native.RECORD)
    strays.append(f"agents/native_baselines__mypyc{SUFFIX}")
    shutil.copy(tree / "agents" / "baselines" / f"native_baselines__mypyc{SUFFIX}",
                tree / strays[-1])
    seen = probe(tree)
    assert seen["active"] and seen["agents"]["active"] and not seen["said"]
    assert seen["others"] == {"sim.rules.scoring": "SourceFileLoader",
                              "agents.policy": "SourceFileLoader"}
    seed_cache(tree, monkeypatch)
    done = build(tree)  # any build tidies up
    assert done.returncode == 0, done.stderr
    names = {p.relative_to(tree).as_posix() for p in compiled_files(tree)}
    assert len(names) == len(native.COMPILED) + len(BASELINES.modules) + 2
    assert not names & set(strays) and not (tree / "agents" / native.RECORD).exists()
    seen = probe(tree)
    assert seen["active"] and seen["agents"]["active"] and not seen["said"]


def test_a_pure_install_retires_an_earlier_build(tree: Path) -> None:
    done = build(tree, "pure")
    assert done.returncode == 0, done.stderr
    assert not (tree / "sim" / native.RECORD).exists()
    assert not (tree / "agents" / "baselines" / native.RECORD).exists()
    assert not compiled_files(tree)
    seen = probe(tree)  # pure Python, without a word
    assert not seen["active"] and not seen["said"]
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
    is refused naming the seat, compiled or not."""
    game = sim.Game(sim.GameConfig(seed=5))
    for policy in (agents.Factor(), agents.Magpie()):
        assert [policy.act(game, np.int64(s)) for s in range(6)] == [
            policy.act(game, s) for s in range(6)]
        for bad in (1.0, np.int64(6), -1):
            with pytest.raises(sim.TurnError, match="seat must be an int from 0 to 5"):
                policy.act(game, bad)
    assert agents.SeatView(game, np.int32(4)).seat == 4
