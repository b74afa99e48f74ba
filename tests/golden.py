"""Loading the golden recordings of the original implementation (shared/golden)."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path

import pytest


def shared_dir() -> Path:
    """``$GUILD_SHARED`` if set, else ``../shared`` beside the checkout."""
    env = os.environ.get("GUILD_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared"


def golden_path(name: str) -> Path:
    p = shared_dir() / "golden" / name
    if not p.exists():
        pytest.skip(f"golden file {p} is absent (set GUILD_SHARED to the shared folder)")
    return p


@cache
def episodes() -> dict[int, dict]:
    """``{episode id: {"setup": line, "turns": [lines], "result": line}}``."""
    out: dict[int, dict] = {}
    with open(golden_path("episodes.jsonl"), encoding="utf-8") as f:
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


def episode_ids() -> list[int]:
    p = shared_dir() / "golden" / "episodes.jsonl"
    if not p.exists():
        return []
    return sorted(episodes())


def setup_seeds() -> list[dict]:
    with open(golden_path("setup_seeds_0_39.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]
