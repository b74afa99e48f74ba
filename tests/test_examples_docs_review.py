"""What a review of the examples and their docs found, each held to the behaviour now fixed:
``agents.champion.export`` writes into the run unless told to replace the built-in champion;
``examples/sb3_maskable_ppo.py`` refuses bad flags in one line; ``examples/bots/trader.js``
buys only what its commissions still owe; ``trusted:`` outside a league names its fix; a
policy name is one policy (no silent replacement, no silent entry-point clash); the README's
environments snippet runs in an empty folder; docs/build.md says its command 1 is an older one;
``python -m agents.llm.local_stats --help`` is help."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from conftest import needs, needs_module

from sim import Game, GameConfig
from sim.policies import BATCHED_POLICIES, POLICIES, POLICY_GROUP, PolicyRegistry
from sim.seat_view import turn_view

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "sb3_maskable_ppo.py"
TRADER = ROOT / "examples" / "bots" / "trader.js"
TRUSTED_WORDS = "trusted: is a guild league prefix"


def _cli(main, args: list[str]) -> tuple[int | str, str, str]:
    """``main(args)`` in this process: (exit status, stdout, stderr); argparse's exit is a
    status, any other exception a string no test accepts."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code: int | str = main(args)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else str(e.code)
    except Exception as e:  # noqa: BLE001 - a traceback is the defect
        code = f"raised {type(e).__name__}: {e}"
    return code, out.getvalue(), err.getvalue()


def _one_line(code: int | str, err: str) -> str:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err[-2000:])
    return lines[0]


# --- 1. export: the run's folder by default ---------------------------------------------------

@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One update of a default ``guild train`` run: model.pt and summary.json."""
    needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")
    from league.cli.guild import main as guild

    out = tmp_path_factory.mktemp("tiny") / "run"
    code, printed, err = _cli(guild, ["train", "--out", str(out), "--envs", "16",
                                      "--eval-episodes", "2", "--steps", "1", "--minutes", "2",
                                      "--quiet", "--no-plot", "--seed", "3"])
    assert code == 0, (printed, err)
    return out


def test_export_writes_into_the_run_and_leaves_the_built_in_champion_alone(
        tiny_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default ``--out`` replaced the package's champion.npz (here a copy stands in for
    it, so that the test itself can never replace the shipped file)."""
    import agents.champion.export as export_mod
    from agents.champion import CHAMPION_FILE

    shipped = CHAMPION_FILE.read_bytes()
    stand_in = tmp_path / "package" / "champion.npz"
    stand_in.parent.mkdir()
    stand_in.write_bytes(shipped)
    monkeypatch.setattr(export_mod, "CHAMPION_FILE", stand_in)
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    code, printed, err = _cli(export_mod.main, [str(run)])
    assert code == 0, err
    assert (run / "champion.npz").is_file() and f"wrote {run / 'champion.npz'}" in printed
    assert stand_in.read_bytes() == shipped and CHAMPION_FILE.read_bytes() == shipped
    assert "built-in" not in printed
    # named explicitly, the package's own file is replaced, and the command says so
    code, printed, err = _cli(export_mod.main, [str(run), "--out", str(stand_in)])
    assert code == 0, err
    assert stand_in.read_bytes() == (run / "champion.npz").read_bytes() != shipped
    assert "the built-in champion now plays it" in printed
    assert CHAMPION_FILE.read_bytes() == shipped


def test_the_docs_name_the_explicit_out_that_replaces_the_shipped_file() -> None:
    text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    assert "export runs/champion --out agents/champion/champion.npz" in text
    assert "model.pt -> runs/champion/champion.npz" in text


# --- 2. the SB3 example's flags ---------------------------------------------------------------

def _example(args: list[str], cwd: Path) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, str(EXAMPLE), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("args,words", [
    (["--seed", "-1"], "--seed must be 0 to"),
    (["--seed", str(2 ** 32)], "--seed must be 0 to"),
    (["--envs", "1000000"], "--envs must be 1 to 16,384"),
    (["--envs", "16385"], "--envs must be 1 to 16,384"),
    (["--out", "afile"], "--out 'afile' exists and is not a folder"),
    (["--out", "done"], "--out 'done' holds another run (model.zip)"),
], ids=["negative-seed", "huge-seed", "million-envs", "envs-over-bound", "out-file", "out-run"])
def test_the_sb3_example_refuses_bad_flags_in_one_line(tmp_path: Path, args: list[str],
                                                       words: str) -> None:
    needs_module("sb3_contrib", "torch==2.13.0, then pip install -e '.[train]'")
    (tmp_path / "afile").write_text("kept\n")
    (tmp_path / "done").mkdir()
    (tmp_path / "done" / "model.zip").write_bytes(b"an earlier run's model")
    code, _, err = _example(["--steps", "64", "--envs", "4", "--eval-seeds", "2", *args],
                            tmp_path)
    assert words in _one_line(code, _unnoted(err))
    assert (tmp_path / "afile").read_text() == "kept\n"
    assert (tmp_path / "done" / "model.zip").read_bytes() == b"an earlier run's model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "done"]


def test_the_sb3_example_reads_its_flags_before_loading_torch(tmp_path: Path) -> None:
    """A mistyped flag is refused at once: torch, seconds to import, loads only for the work
    (here a torch that marks its import stands first on the path)."""
    shadow, marker = tmp_path / "shadow" / "torch", tmp_path / "imported"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n"
                                        "raise ImportError('not this torch')\n")
    path = os.pathsep.join(filter(None, [str(shadow.parent), os.environ.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, str(EXAMPLE), "--seed", "-1"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": path})
    assert "--seed must be 0 to" in _one_line(done.returncode, done.stderr)
    assert not marker.exists()


def test_the_sb3_example_words_an_unusable_out_in_one_line(tmp_path: Path) -> None:
    """An --out under a file fails once training starts (OSError): one line, not a
    traceback."""
    needs_module("sb3_contrib", "torch==2.13.0, then pip install -e '.[train]'")
    (tmp_path / "afile").write_text("kept\n")
    code, _, err = _example(["--steps", "64", "--envs", "4", "--eval-seeds", "2", "--out",
                             "afile/run"], tmp_path)
    line = _one_line(code, _unnoted(err))
    assert line.startswith("sb3_maskable_ppo.py: ") and "Not a directory" in line


def _unnoted(err: str) -> str:
    """``err`` without the stale-build note an import prints in a checkout edited since its
    build (sim.native: a note, not the command's output)."""
    return re.sub(r"^guild-game: .* since the build.*\n", "", err, flags=re.M)


# --- 3. trader.js -----------------------------------------------------------------------------

def _trader(game: Game, seat: int) -> str:
    """What trader.js answers to the act request of ``seat`` in ``game``."""
    needs(shutil.which("node") is not None, "node (for examples/bots/trader.js)")
    reset = {"type": "reset", "seed": 7, "seat": seat, "turns": game.config.turns,
             "speech": True, "thievery": True}
    act = {"type": "act", **turn_view(game, seat)}
    done = subprocess.run(["node", str(TRADER)], input=f"{json.dumps(reset)}\n"
                          f"{json.dumps(act)}\n", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[1])["action"]


def _game(seed: int, seat: int, acts: list[str]) -> Game:
    game = Game(GameConfig(seed=seed))
    for act in acts:
        sentences = ["I wait and watch the road."] * 6
        sentences[seat] = act
        game.play_turn(sentences)
    return game


def test_trader_buys_a_good_its_commissions_owe_not_the_first_on_sale() -> None:
    # seed 1, seat 4: at Keeper Nesh, who sells rope first; its commissions are nails and salt
    game = _game(1, 4, [])
    assert [q["item"] for q in game.observe(4)["quests"]] == ["nails", "salt"]
    assert next(s for s in turn_view(game, 4)["admissible"] if s.startswith("I buy")) == \
        "I buy 1 rope from Keeper Nesh."
    assert _trader(game, 4) == "I buy 1 salt from Keeper Nesh."
    # holding the salt it owes, it buys no more of anything here (no nails on sale)
    game = _game(1, 4, ["I buy 2 salt from Keeper Nesh."])
    assert any(s.startswith("I buy") for s in turn_view(game, 4)["admissible"])
    assert not _trader(game, 4).startswith("I buy")


def test_trader_carries_what_it_owes_to_the_guildhall_and_hands_it_in() -> None:
    bought = ["I buy 2 rope from Keeper Nesh.", "I buy 2 salt from Keeper Nesh."]
    assert _trader(_game(3, 0, bought), 0) == "I walk to The Guildhall."
    there = _game(3, 0, [*bought, "I walk to The Guildhall."])
    assert _trader(there, 0) == "I hand Guildmaster Vell 1 salt."


def test_trader_header_command_and_section_are_right() -> None:
    head = TRADER.read_text(encoding="utf-8").split("const readline")[0]
    command = next(line for line in head.splitlines() if "guild league" in line)
    assert "--out runs/js" in command
    assert 'docs/leagues.md, "Seats\n// that run apart"' in head
    assert "## Seats that run apart" in (ROOT / "docs" / "leagues.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "is the same\nin JavaScript" not in readme and "40-line" not in (
        ROOT / "docs" / "leagues.md").read_text(encoding="utf-8")


# --- 4. trusted: outside a league -------------------------------------------------------------

@pytest.mark.parametrize("make", [POLICIES.make, BATCHED_POLICIES.make],
                         ids=["scalar", "batched"])
def test_a_trusted_prefix_outside_a_league_names_its_fix(make) -> None:
    with pytest.raises(ValueError, match=f"{TRUSTED_WORDS}.*without the prefix"):
        make("trusted:factor")


def test_a_module_named_trusted_is_still_a_policy(tmp_path: Path, monkeypatch) -> None:
    # the hint is for a spec that names no module: a module of that name comes first
    (tmp_path / "trusted.py").write_text("def courier(view):\n    return 'I wait.'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    game = Game(GameConfig(seed=0))
    assert POLICIES.make("trusted:courier").act(game, 0) == "I wait."


@pytest.mark.parametrize("args", [["evaluate", "trusted:factor", "--seeds", "0..1"],
                                  ["evaluate", "factor", "--against", "trusted:magpie",
                                   "--seeds", "0..1"]], ids=["policy", "against"])
def test_guild_evaluate_of_a_trusted_spec_is_one_line(args: list[str]) -> None:
    from league.cli.guild import main as guild

    code, _, err = _cli(guild, args)
    assert TRUSTED_WORDS in _one_line(code, err) and "PYTHONPATH" not in err


# --- 5. a name is one policy ------------------------------------------------------------------

class Impostor:
    def act(self, game, seat):
        return "I wait and watch the road."


def test_register_replaces_a_known_name_with_a_warning_unless_asked_to() -> None:
    registry = PolicyRegistry(POLICY_GROUP, lambda o: callable(getattr(o, "act", None)),
                              "a policy")
    assert type(registry.make("factor")).__name__ == "Factor"
    with pytest.warns(RuntimeWarning, match="'factor' was already known.*replace=True"):
        registry.register("Factor", Impostor)  # a built-in, declared by an entry point
    assert type(registry.make("factor")) is Impostor
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        registry.register("mine", Impostor)
        registry.register("mine", Impostor)  # the same again (a notebook cell run twice)
        registry.register("MINE", Waits, replace=True)
    assert type(registry.make("mine")) is Waits
    with pytest.warns(RuntimeWarning, match="'mine' was already known"):
        registry.register("mine", Impostor)
    assert type(registry.make("mine")) is Impostor


class Waits(Impostor):
    pass


def _distribution(root: Path, name: str, entries: dict[str, str]) -> None:
    """An installed distribution ``name`` on ``root`` declaring ``entries`` as policies."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entries.items())
    (info / "entry_points.txt").write_text(f"[{POLICY_GROUP}]\n{lines}\n")


def _fresh_registry() -> PolicyRegistry:
    return PolicyRegistry(POLICY_GROUP, lambda o: callable(getattr(o, "act", None)), "a policy")


@pytest.mark.parametrize("where", ["before", "after"])
def test_an_entry_point_naming_a_built_in_is_refused_with_one_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """Before ours on sys.path or after it, another distribution's ``factor`` is ignored,
    saying so once; the built-in plays."""
    _distribution(tmp_path, "townsfolk", {"factor": f"{__name__}:Impostor"})
    path = [str(tmp_path), *sys.path] if where == "before" else [*sys.path, str(tmp_path)]
    monkeypatch.setattr(sys, "path", path)
    registry = _fresh_registry()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy = registry.make("factor")
        registry.make("factor")
        registry.names()
    assert type(policy).__name__ == "Factor"
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 1 and "townsfolk" in said[0] and "stays the built-in" in said[0], said
    assert "\n" not in said[0]


def test_a_name_two_distributions_declare_keeps_the_first_naming_both(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _distribution(tmp_path / "a", "townsfolk", {"idler": f"{__name__}:Impostor"})
    _distribution(tmp_path / "b", "villagers", {"idler": "villagers:Idler"})
    monkeypatch.setattr(sys, "path", [str(tmp_path / "a"), str(tmp_path / "b"), *sys.path])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy = _fresh_registry().make("idler")
    assert type(policy) is Impostor
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 1 and "villagers" in said[0] and "townsfolk" in said[0], said


# --- 6. the README's environments snippet, in an empty folder ----------------------------------

def test_the_environments_snippet_runs_in_an_empty_folder(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Learning environments")
    m = re.compile(r"```python\n(.*?)```", re.S).search(readme, start)
    assert m is not None
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", m[1] + "\nprint('ok', reward)\n"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "ok " in done.stdout, done.stderr[-2000:]


# --- 7. docs/build.md's command 1 ----------------------------------------------------------------

def test_build_md_says_its_command_1_is_an_older_one_or_quotes_the_readmes() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    build = (ROOT / "docs" / "build.md").read_text(encoding="utf-8")
    now = re.search(r"guild league --policies (\S+)", readme)
    quoted = re.search(r"README command 1.*?guild league --policies (\S+)", build, re.S)
    assert now is not None and quoted is not None
    if quoted[1] != now[1]:
        said = build[quoted.start():quoted.start(1)]
        assert "as it was then" in said and f"--policies {now[1]}" in said, said


# --- 8. local_stats ---------------------------------------------------------------------------

def test_local_stats_help_is_help_and_a_usage_mistake_one_line() -> None:
    from agents.llm.local_stats import main

    code, printed, err = _cli(main, ["--help"])
    assert code == 0 and printed.startswith("usage: python -m agents.llm.local_stats"), err
    assert "RUN_DIR" in printed and not err
    code, _, err = _cli(main, [])
    assert "RUN_DIR" in _one_line(code, err)
    code, _, err = _cli(main, ["--bogus", "x"])
    assert "--bogus" in _one_line(code, err)

