"""Helpers of the feasibility and world-file tests: writing a town, playing a plan."""

from __future__ import annotations

import json
from pathlib import Path

from feasibility import Plan
from sim import Game, GameConfig, Intent
from sim.rules.world import World


def write_town(tmp_path: Path, data: dict | str, name: str = "town.json") -> Path:
    """Write a world file (a dict as JSON, or the text as given) into ``tmp_path``."""
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return p


def lighthouse() -> dict:
    """The standard town as a full world file with a tenth room off the Docks, the
    Lighthouse (dark), and a keeper there selling salt and lamps: a town of other shapes."""
    from sim.rules.world import STANDARD_TOWN
    from sim.rules.worldfile import world_to_dict

    full = world_to_dict(STANDARD_TOWN)
    full["rooms"][5]["exits"].append("Lighthouse")
    full["rooms"].append({"name": "Lighthouse", "keywords": ["lighthouse"], "exits": ["docks"],
                          "x": 95, "y": 95, "dark": True})
    full["keepers"].append({"name": "Keeper Ilo", "keywords": ["ilo"], "room": "Lighthouse",
                            "trade": ["salt", "lamp"], "opening": [9, 2]})
    return full


def play_plan(world: World, seed: int, seat: int, plan: Plan, turns: int = 14) -> Game:
    """Play ``plan`` for one seat in the real engine while the other five wait."""
    game = Game(GameConfig(seed=seed, turns=turns, world=world))
    for step in plan.steps:
        if step.kind == "move":
            it = Intent("move", to_room=step.room)
        elif step.kind == "buy":
            it = Intent("buy", item=step.good, qty=step.qty, npc=step.keeper)
        else:
            it = Intent("give", item=step.good, qty=step.qty, npc=world.guild)
        acts = [Intent("wait")] * 6
        acts[seat] = it
        mine = [e for e in game.play_turn(acts) if e["seat"] == seat]
        assert mine[0]["reason"] == "ok", (step, mine)
    return game
