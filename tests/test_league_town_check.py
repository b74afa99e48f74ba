"""A league plays the standard town only: a policy that cannot play it (a ``ppo:`` or ``sb3:``
model of another town's shapes, any policy whose ``check_world`` refuses it) is refused before
the first episode, in one line naming the policy and both shapes, with exit 2 and nothing
written. A policy that plays in the league's process (``ppo:``, ``trusted:``, ``--trust``) is
asked there; one that runs apart (``module:Name``, ``sb3:``) in its seat process, where it is
loaded, when the league probes it (``league.seat.host``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import needs_module
from leagues import one_error_line
from towns import write_town

import league.core.episode as episode
from league.cli.guild import main
from sim.batched.tables import tables_for
from sim.rules.world import STANDARD_TOWN
from sim.rules.worldfile import load_world, world_to_dict

REFUSER = '''
from sim.rules.world import STANDARD_TOWN

IMPORTED_IN = __import__("os").getpid()


class OtherTown:
    """Plays only a town of 510 observed numbers (the standard one has fewer)."""

    def check_world(self, world):
        if world is STANDARD_TOWN or world == STANDARD_TOWN:
            raise ValueError("town refuser was trained for 510 observed numbers and 303 "
                             "actions; this town has 460 and 267")

    def act(self, game, seat):
        return "wait"


class Hang:
    """Never answers whether it plays the town."""

    def check_world(self, world):
        __import__("time").sleep(3600)

    def act(self, game, seat):
        return "wait"


class Escape:
    """Refuses every town in words that would act on a terminal."""

    def check_world(self, world):
        raise ValueError("\x1b[2J\x1b[31mred\x07 and more")

    def act(self, game, seat):
        return "wait"


class StandardOnly:
    """Plays the standard town only: the league must ask it about that one."""

    def check_world(self, world):
        if not (world is STANDARD_TOWN or world == STANDARD_TOWN):
            raise ValueError("standard only: asked about another town")

    def act(self, game, seat):
        return "wait"
'''


def _silk_town(tmp_path: Path) -> Path:
    """The standard town with a seventh good and a keeper trading it: other shapes."""
    full = world_to_dict(STANDARD_TOWN)
    full["goods"].append({"name": "silk", "plural": "silk", "keywords": ["silk"], "value": 12})
    full["keepers"].append({"name": "Weaver Ana", "keywords": ["weaver", "ana"], "room": 4,
                            "trade": [6, 0], "opening": [5, 5]})
    return write_town(tmp_path, full, "silk.json")


def _shapes(world) -> tuple[int, int]:
    t = tables_for(world)
    return t.obs_width, t.n_actions


@pytest.fixture(scope="module")
def silk(tmp_path_factory) -> tuple[Path, tuple[int, int]]:
    """A ppo model of the silk town's shapes (untrained: only its sizes matter here)."""
    needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")
    from agents.learn.ppo import PolicyNet, save_model

    tmp = tmp_path_factory.mktemp("silk")
    world, _ = load_world(_silk_town(tmp))
    shapes = _shapes(world)
    assert shapes != _shapes(STANDARD_TOWN)
    save_model(PolicyNet(*shapes, hidden=(8,)), tmp / "model.pt", {})
    return tmp / "model.pt", shapes


@pytest.fixture()
def refuser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module of policies with ``check_world`` in an importable folder."""
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "town_refuser.py").write_text(REFUSER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    monkeypatch.delitem(sys.modules, "town_refuser", raising=False)
    return "town_refuser"


def _league(out: Path, policies: str, *extra: str, episodes: int = 1) -> list[str]:
    return ["league", "--policies", policies, "--episodes", str(episodes), "--workers", "1",
            "--out", str(out), *extra]


def _refused(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    return one_error_line(captured.err)


def _both_shapes(line: str, model: tuple[int, int]) -> None:
    width, actions = _shapes(STANDARD_TOWN)
    assert (f"was trained for {model[0]} observed numbers and {model[1]} actions; this town has "
            f"{width} and {actions}") in line, line


@pytest.mark.parametrize("prefix", ["", "trusted:"])
def test_a_ppo_model_of_other_shapes_is_refused_before_the_first_episode(
        silk, prefix, tmp_path, capsys) -> None:
    path, shapes = silk
    spec = f"{prefix}ppo:{path}"
    out = tmp_path / "league"
    line = _refused(capsys, _league(out, f"{spec},factor"))
    assert line.startswith(f"guild league: error: policy {spec!r} cannot play the league's "
                           "town (the standard one): ppo model"), line
    _both_shapes(line, shapes)
    assert not out.exists()  # no league.json, results, replays or secret


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_a_policy_apart_is_asked_in_its_seat_process(refuser, sandbox, tmp_path,
                                                     capsys) -> None:
    spec = f"{refuser}:OtherTown"
    out = tmp_path / "league"
    line = _refused(capsys, _league(out, f"{spec},factor", "--sandbox", sandbox))
    assert line == (f"guild league: error: policy {spec!r} cannot play the league's town (the "
                    "standard one): town refuser was trained for 510 observed numbers and 303 "
                    "actions; this town has 460 and 267")
    assert not out.exists()
    assert refuser not in sys.modules  # asked apart: never imported in the league's process


def test_trusted_the_same_policy_is_asked_here(refuser, tmp_path, capsys) -> None:
    out = tmp_path / "league"
    line = _refused(capsys, _league(out, f"{refuser}:OtherTown,factor", "--trust"))
    assert f"policy '{refuser}:OtherTown' cannot play the league's town" in line
    assert "this town has 460 and 267" in line
    assert not out.exists()


@pytest.mark.parametrize("how", ["apart", "trusted"])
def test_the_league_asks_about_the_standard_town(refuser, how, tmp_path, capsys) -> None:
    spec = f"{refuser}:StandardOnly" if how == "apart" else f"trusted:{refuser}:StandardOnly"
    out = tmp_path / "league"
    assert main(_league(out, f"{spec},factor", "--sandbox", "none")) == 0, capsys.readouterr()
    assert (out / "results.jsonl").read_text().count("\n") == 1


def test_an_sb3_model_of_other_shapes_is_refused_in_its_sandbox(tmp_path, capsys) -> None:
    sb3_contrib = needs_module("sb3_contrib", "torch==2.13.0, then pip install -e '.[train]'")
    from agents.learn.sb3 import GuildVecEnv, write_meta

    world, _ = load_world(_silk_town(tmp_path))
    path = tmp_path / "silk.zip"
    sb3_contrib.MaskablePPO("MlpPolicy", GuildVecEnv(2, world=world), n_steps=8, batch_size=16,
                            device="cpu", policy_kwargs=dict(net_arch=[8])).save(path)
    write_meta(path, {"flatten": True})
    spec = f"sb3:{path}"
    out = tmp_path / "league"
    line = _refused(capsys, _league(out, f"{spec},factor"))
    assert line.startswith(f"guild league: error: policy {spec!r} cannot play the league's "
                           f"town (the standard one): sb3 model {str(path)!r}"), line
    _both_shapes(line, _shapes(world))
    assert not out.exists()


def test_a_league_begun_with_such_a_model_re_ranks_but_plays_no_more(
        silk, tmp_path, capsys, monkeypatch) -> None:
    """A folder played before leagues asked (every decision of the model a fault): it is still
    ranked and verified, but asking it for more episodes is refused with nothing written."""
    path, shapes = silk
    spec = f"ppo:{path}"
    out = tmp_path / "league"
    with monkeypatch.context() as m:
        m.setattr(episode, "check_town", lambda policies, world: None)
        assert main(_league(out, f"{spec},factor")) == 0
    capsys.readouterr()
    files = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert main(_league(out, f"{spec},factor")) == 0  # nothing to play: ranked again
    line = _refused(capsys, _league(out, f"{spec},factor", episodes=2))
    assert f"policy {spec!r} cannot play the league's town" in line
    _both_shapes(line, shapes)
    assert (out / "results.jsonl").read_bytes() == files[out / "results.jsonl"]
    assert sorted((out / "replays").iterdir()) == sorted(p for p in files
                                                         if p.parent == out / "replays")
    assert main(["verify", str(out)]) == 0, capsys.readouterr()


@pytest.mark.parametrize("how", ["apart", "trusted"])
def test_a_refusal_is_shown_inert(refuser, how, tmp_path, capsys) -> None:
    """A policy's own words reach the league's line with their control characters escaped."""
    spec = f"{refuser}:Escape" if how == "apart" else f"trusted:{refuser}:Escape"
    line = _refused(capsys, _league(tmp_path / "league", f"{spec},factor", "--sandbox", "none"))
    assert "\x1b" not in line and "\x07" not in line
    assert line.endswith("\\u001b[2J\\u001b[31mred\\u0007 and more"), line


def test_a_policy_whose_town_check_hangs_is_refused_saying_what_it_was_asked(
        refuser, tmp_path, capsys, monkeypatch) -> None:
    """Apart, the build answer (start, construction, town check) has START_TIMEOUT seconds,
    twice; the refusal says what was waited for, not only that the program did not start."""
    from league.apart import isolated

    monkeypatch.setattr(isolated, "START_TIMEOUT", 1.0)
    spec = f"{refuser}:Hang"
    line = _refused(capsys, _league(tmp_path / "league", f"{spec},factor", "--sandbox", "none"))
    assert line.startswith(f"guild league: error: policy {spec!r} was not ready within 1 s, "
                           "twice (its program's start, its policy's construction and its "
                           "answer whether it plays the league's town): took over 1 s"), line
