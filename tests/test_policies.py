"""``sim.policies``: policy names resolve through a registry that ``sim`` owns and others fill
(entry points of installed distributions, or ``register`` at run time), so ``sim`` never
imports ``agents`` and a user's package can name its own policies."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sim.policies import BATCHED_POLICY_GROUP, POLICIES, POLICY_GROUP, PolicyRegistry


def _acts(obj: object) -> bool:
    return callable(getattr(obj, "act", None))


class Waiter:
    """A policy that always waits."""

    def __init__(self, patience: int = 1) -> None:
        self.patience = patience

    def act(self, game, seat):
        return "I wait."


def _distribution(root: Path, group: str, entries: dict[str, str], module: str = "") -> None:
    """An installed distribution on ``root`` declaring ``entries`` in ``group``."""
    info = root / "townsfolk-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: townsfolk\nVersion: 1.0\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entries.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}\n")
    if module:
        (root / "townsfolk.py").write_text(module)


def test_a_users_package_declares_its_own_policy(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _distribution(tmp_path, POLICY_GROUP, {"idler": "townsfolk:Idler"}, textwrap.dedent('''
        class Idler:
            def __init__(self, patience=1):
                self.patience = patience
            def act(self, game, seat):
                return "I wait."
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = PolicyRegistry(POLICY_GROUP, _acts, "a policy")
    assert "idler" in registry.names() and "factor" in registry.names()
    policy = registry.make({"name": "Idler", "patience": 3})
    assert type(policy).__name__ == "Idler" and policy.patience == 3


def test_a_broken_entry_point_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _distribution(tmp_path, POLICY_GROUP, {"ghost": "no_such_module_anywhere:Ghost"})
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = PolicyRegistry(POLICY_GROUP, _acts, "a policy")
    with pytest.raises(ValueError, match="ghost.*no_such_module_anywhere:Ghost"):
        registry.make("ghost")
    assert registry.make("factor").act  # the others still resolve


def test_register_prefixes_and_module_paths() -> None:
    registry = PolicyRegistry("guild.test-empty-group", _acts, "a policy")
    registry.register("waiter", Waiter)
    assert registry.make("WAITER", patience=2).patience == 2
    assert registry.make(f"{__name__}:Waiter").patience == 1
    registry.register("deep", lambda spec, **kw: Waiter(len(spec)))
    assert registry.make("deep:four").patience == 4  # the rest of the spec goes to the factory
    with pytest.raises(ValueError, match="unknown policy 'nobody'; known: deep, waiter"):
        registry.make("nobody")
    with pytest.raises(ValueError, match="must be a non-empty word"):
        registry.register("a:b", Waiter)
    with pytest.raises(ValueError, match="not a policy"):
        registry.make("pathlib:PurePath")  # builds fine, but has no act()


def test_built_again_through_the_fast_paths() -> None:
    """A plain name already resolved to a class, and a ready object of a policy class, skip the
    spec parsing but give what the full path gives; ``register`` replaces a resolved name."""
    registry = PolicyRegistry("guild.test-empty-group", _acts, "a policy")
    registry.register("waiter", Waiter)
    first, again = registry.make("waiter"), registry.make("waiter")
    assert type(again) is Waiter and again is not first
    assert registry.make(again) is again and registry.make(again) is again
    with pytest.raises(ValueError, match="parameters"):
        registry.make(again, patience=2)

    class Sleeper(Waiter):
        pass

    registry.register("waiter", Sleeper, replace=True)
    assert type(registry.make("waiter")) is Sleeper


def viewer(view: dict) -> str:
    """A policy function of this module (``tests/function_policies.py`` has the others)."""
    return "I wait."


def test_a_registry_plays_functions_only_where_it_names_a_player_for_them() -> None:
    """``module:Name`` naming a policy function builds the registry's ``functions`` class; a
    registry without one refuses it, without calling it; a registered name is a factory by
    declaration, whatever its signature (``from_spec(spec)`` requires one argument too)."""
    players = PolicyRegistry("guild.test-empty-group", _acts, "a policy",
                             functions=Played)
    played = players.make(f"{__name__}:viewer")
    assert type(played) is Played and played.fn is viewer and played.spec == f"{__name__}:viewer"
    assert type(players.make(viewer)) is Played
    bare = PolicyRegistry("guild.test-empty-group", _acts, "a policy")
    with pytest.raises(ValueError, match="is a policy function .*, not a policy$"):
        bare.make(f"{__name__}:viewer")
    players.register("viewer", viewer)
    with pytest.raises(ValueError, match="bad parameters .*missing 1 required positional"):
        players.make("viewer")  # called as a factory, with nothing


class Played:
    def __init__(self, fn, spec: str) -> None:
        self.fn, self.spec = fn, spec

    def act(self, game, seat):
        return self.fn({})


def test_sim_resolves_baselines_without_importing_agents() -> None:
    """In a fresh interpreter, importing sim and building the default env loads no agents; a
    reset resolves factor and magpie through the entry points our distribution declares."""
    code = textwrap.dedent("""
        import sys, gymnasium
        import sim
        env = gymnasium.make("guild/Guild-v0")
        assert "agents" not in sys.modules, "imported on make"
        env.reset(seed=0)
        names = sorted({type(p).__name__ for p in env.unwrapped.opponents})
        print(names)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['Factor', 'Magpie']"


def test_batched_names_are_declared_too() -> None:
    from sim.policies import BATCHED_POLICIES

    assert BATCHED_POLICIES.group == BATCHED_POLICY_GROUP
    assert {"factor", "magpie", "random"} <= set(BATCHED_POLICIES.names())
    assert BATCHED_POLICIES.make("factor").batched is True
    with pytest.raises(ValueError, match="batched"):
        BATCHED_POLICIES.make(Waiter())


# --- what an unknown name probably meant ------------------------------------------------------

@pytest.mark.parametrize(("spec", "hint"), [
    ("factr", "did you mean 'factor'?"),
    ("Magpi", "did you mean 'magpie'?"),
    ("runs/ppo/model.pt", "a model of guild train is 'ppo:runs/ppo/model.pt'"),
    ("runs/sb3/model.zip", "a Stable-Baselines3 model is 'sb3:runs/sb3/model.zip'"),
    ("runs/some/file", "a model file is 'ppo:runs/some/file' (guild train) or "
                       "'sb3:runs/some/file' (a zip)"),
])
def test_an_unknown_name_says_what_was_meant(spec: str, hint: str) -> None:
    with pytest.raises(ValueError, match="unknown policy") as refused:
        POLICIES.make(spec)
    assert str(refused.value).endswith(hint)


def test_a_run_folder_is_a_ppo_model(tmp_path) -> None:
    with pytest.raises(ValueError) as refused:
        POLICIES.make(str(tmp_path))
    assert str(refused.value).endswith(f"a model of guild train is 'ppo:{tmp_path}'")


def test_nothing_near_is_suggested_for_a_far_name() -> None:
    with pytest.raises(ValueError) as refused:
        POLICIES.make("zebra")
    assert "did you mean" not in str(refused.value)


def test_a_module_not_on_the_path_names_pythonpath(tmp_path, monkeypatch) -> None:
    with pytest.raises(ValueError, match="PYTHONPATH"):
        POLICIES.make("my_seats_not_on_the_path:Seat")
    # a module that is found but fails on a dependency of its own is not a path problem
    (tmp_path / "needs_a_missing_dependency.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="no_such_dependency_xyz") as refused:
        POLICIES.make("needs_a_missing_dependency:Seat")
    assert "PYTHONPATH" not in str(refused.value)
