"""What importing costs: ``import sim``, ``import agents`` and a league's workers load neither
Gymnasium nor numpy (most of what ``import sim`` would cost), a seat no TLS or HTTP client, and
Gymnasium still finds ``guild/Guild-v0`` in whichever order the two are imported
(``sim.hooks.after_import``)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sim.hooks import after_import

ROOT = Path(__file__).resolve().parent.parent


def run(code: str) -> list[str]:
    """Run ``code`` in a fresh interpreter; its printed lines."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.parametrize("modules", ["sim", "agents", "league.core.episode, league.procs.warm"])
def test_playing_imports_neither_gymnasium_nor_numpy(modules: str) -> None:
    assert run(f"""
        import sys
        import {modules}
        print("gymnasium" in sys.modules, "numpy" in sys.modules)
        """) == ["False", "False"]


@pytest.mark.parametrize("modules", ["agents", "league.seat.host"])
def test_a_seat_loads_no_tls_or_http_client(modules: str) -> None:
    # A seat process lives under an address-space cap (--seat-memory): ssl and the HTTP
    # clients are loaded by the seats that talk to a model, when they do, not by every seat
    # (their import tipped a seat with a thread per core over a 1 GB cap).
    assert run(f"""
        import sys
        import {modules}
        print(*(m in sys.modules for m in ("ssl", "urllib.request", "httpx")))
        """) == ["False", "False", "False"]


@pytest.mark.parametrize("order", ["import sim; import gymnasium",
                                   "import gymnasium; import sim",
                                   "import sim; import gymnasium.spaces; import gymnasium"])
def test_gymnasium_knows_the_id_in_either_order(order: str) -> None:
    assert run(f"""
        {order}
        print("guild/Guild-v0" in gymnasium.registry)
        env = gymnasium.make("guild/Guild-v0")
        obs, info = env.reset(seed=3)
        print(sorted(obs) == sorted(env.observation_space.spaces))
        """) == ["True", "True"]


def test_after_import_runs_once_after_the_module_ran(tmp_path, monkeypatch) -> None:
    (tmp_path / "hooked_mod.py").write_text("VALUE = 41\nVALUE += 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "hooked_mod", raising=False)
    seen = []
    after_import("hooked_mod", lambda: seen.append(sys.modules["hooked_mod"].VALUE))
    assert seen == []
    import hooked_mod  # noqa: F401

    importlib.reload(sys.modules["hooked_mod"])
    assert seen == [42]  # after the whole module, once
    after_import("hooked_mod", lambda: seen.append("now"))  # already loaded: at once
    assert seen == [42, "now"]
    assert not [f for f in sys.meta_path if getattr(f, "name", None) == "hooked_mod"]


def test_after_import_of_a_missing_module_stays_a_missing_module() -> None:
    seen = []
    after_import("no_such_module_anywhere", lambda: seen.append(1))
    with pytest.raises(ModuleNotFoundError):
        import no_such_module_anywhere  # noqa: F401
    assert seen == []
    assert not [f for f in sys.meta_path if getattr(f, "name", None) == "no_such_module_anywhere"]
