"""Loading the golden recordings of the original implementation (shared/golden).

Parametrizing over recordings must not fail at collection when the shared folder is absent:
the ``*_params`` helpers then yield one placeholder case, ``golden-absent-<file>``, whose test
calls :func:`require` first and so is skipped on a developer's machine and fails in CI (see
``conftest.needs``), naming the missing file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import needs

from sim import Game, GameConfig

EPISODES = "episodes.jsonl"
SETUP_SEEDS = "setup_seeds_0_39.jsonl"


def shared_dir() -> Path:
    """``$GUILD_SHARED`` if set, else ``../shared`` beside the checkout."""
    env = os.environ.get("GUILD_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared"


def golden_file(name: str) -> Path:
    """Where the recording ``name`` should be (it may be absent)."""
    return shared_dir() / "golden" / name


def present(name: str) -> bool:
    return golden_file(name).is_file()


def require(name: str) -> Path:
    """The recording's path; skip (developer machine) or fail (CI) when it is absent."""
    p = golden_file(name)
    needs(p.is_file(), f"the golden file {p} (set GUILD_SHARED to the shared folder)")
    return p


def _placeholder(name: str) -> Any:
    """The one case collected in place of an absent recording's cases."""
    return pytest.param(None, id=f"golden-absent-{name}")


@cache
def episodes() -> dict[int, dict]:
    """``{episode id: {"setup": line, "turns": [lines], "result": line}}``."""
    out: dict[int, dict] = {}
    with open(require(EPISODES), encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            ep = out.setdefault(d["episode"], {"turns": []})
            kind = d.get("type")
            if kind == "setup":
                ep["setup"] = d
            elif kind == "turn":
                ep["turns"].append(d)
            else:
                ep["result"] = d
    return out


def episode(episode_id: int | None) -> dict:
    """One golden episode (``None``: the ``golden-absent`` case, which skips or fails)."""
    require(EPISODES)
    assert episode_id is not None, "golden-absent case, yet the recording is present"
    return episodes()[episode_id]


def episode_params(where: Callable[[dict], bool] | None = None, what: str = "") -> list[Any]:
    """Episode ids to parametrize over: those whose setup line satisfies ``where`` (all if
    None), or the ``golden-absent`` placeholder.  ``where`` matching no episode of a present
    recording is an error at collection (``what`` says what was looked for), not a quiet pass.
    """
    if not present(EPISODES):
        return [_placeholder(EPISODES)]
    ids = sorted(k for k, ep in episodes().items() if where is None or where(ep["setup"]))
    if not ids:
        raise LookupError(f"no golden episode in {golden_file(EPISODES)} {what}")
    return ids


def setup_seeds() -> list[dict]:
    with open(require(SETUP_SEEDS), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def setup_seed_params() -> list[Any]:
    """Rows of the setup recording to parametrize over, or the ``golden-absent`` placeholder."""
    if not present(SETUP_SEEDS):
        return [_placeholder(SETUP_SEEDS)]
    return [pytest.param(row, id=f"seed{row['seed']}") for row in setup_seeds()]


def setup_seed(row: dict | None) -> dict:
    """A parametrized row (``None``: the ``golden-absent`` case, which skips or fails)."""
    require(SETUP_SEEDS)
    assert row is not None, "golden-absent case, yet the recording is present"
    return row


def start_game(setup: dict) -> Game:
    """The recorded episode's game before its first turn (seed, settings, overrides)."""
    game = Game(GameConfig(seed=setup["seed"], turns=setup["turns"],
                           speech=setup["config"]["speech"],
                           thievery=setup["config"]["thievery"]))
    if setup["overrides"]:
        game.restore(setup["initial"])
    return game


def play_recorded(game: Game, line: dict) -> list[dict]:
    """Play one recorded turn's inputs (sentences, says, notes, scripted) as the original did."""
    seats = line["seats"]
    return game.play_turn([s["input"]["sentence"] for s in seats],
                          says=[s["input"]["say"] for s in seats],
                          notes=[s["input"]["notes"] for s in seats],
                          scripted=[s["scripted"] for s in seats])
