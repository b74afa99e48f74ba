"""``guild verify``: re-derive every replay and check it against the claimed results.

For each line of ``results.jsonl`` the replay ``replays/<id>.json`` must exist, carry the
line's seed and lineup, re-derive with ``sim.replay`` (RULES §15.4: every recorded snapshot and
the end reason must be what the rules produce from the recorded acts), and give exactly the
line's 11 result keys (and the payload's own ``results``). With ``league.json`` present, each
line must also be the episode the league's lineup draw puts at that position.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sim import GameConfig, ReplayMismatch, replay
from sim.rules.world import STANDARD_TOWN

from .episode import RESULT_KEYS
from .errors import LeagueError
from .lineups import episode_spec
from .store import MANIFEST, REPLAYS, RESULTS, load_results

PROTOCOL = "cogmud.replay.v1"


@dataclass
class Report:
    """How many episodes were checked, how many failed, and the first failure."""

    checked: int
    failed: int
    first: str | None
    torn: bool


def verify_dir(root: str | Path) -> Report:
    """Check every episode of the league in ``root``; ``LeagueError`` if it is not one."""
    root = Path(root)
    results = root / RESULTS
    if not root.is_dir():
        raise LeagueError(f"{root} is not a directory")
    if not results.is_file():
        raise LeagueError(f"{root} has no {RESULTS}; is it a league's --out directory?")
    rows, torn = load_results(results)
    manifest = _manifest(root / MANIFEST)
    failed, first = 0, None
    for n, row in enumerate(rows):
        problem = check_episode(root, n, row, manifest)
        if problem is not None:
            failed += 1
            if first is None:
                first = f"{row.get('id', f'line {n + 1}')}: {problem}"
    return Report(len(rows), failed, first, torn)


def check_episode(root: Path, n: int, row: dict, manifest: dict | None) -> str | None:
    """None when line ``n`` of the results verifies, else what is wrong (one sentence)."""
    missing = [k for k in ("id", "seed", "lineup", *RESULT_KEYS) if k not in row]
    if missing:
        return f"results line {n + 1} lacks {', '.join(missing)}"
    if manifest is not None:
        try:
            spec = episode_spec(manifest["policies"], manifest["seed"], n)
        except (KeyError, TypeError, ValueError):
            return f"{MANIFEST} does not describe a league"
        if (row["id"], row["seed"], row["lineup"]) != (spec.id, spec.seed, list(spec.lineup)):
            return (f"results line {n + 1} is not episode {spec.id} of this league (seed "
                    f"{spec.seed}, lineup {','.join(spec.lineup)})")
    path = root / REPLAYS / f"{row['id']}.json"
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"replay {path} is missing"
    except (OSError, ValueError) as e:
        return f"replay {path} cannot be read as JSON ({e})"
    if not isinstance(payload, dict) or payload.get("protocol") != PROTOCOL:
        return f"replay {path} is not a {PROTOCOL} payload"
    config, events = payload.get("config"), payload.get("events")
    if not isinstance(config, dict) or not isinstance(events, list):
        return "the replay lacks its config or events"
    if config.get("world") != STANDARD_TOWN.to_json():
        return "the replay is not played in the standard town, which every league episode is"
    if config.get("seed") != row["seed"] or payload.get("policyNames") != row["lineup"]:
        return (f"the replay's seed {config.get('seed')} and policies "
                f"{payload.get('policyNames')} are not the results line's")
    try:
        cfg = GameConfig.from_dict({**config, "players": row["lineup"]})
        game = replay(cfg, events)
    except ReplayMismatch as e:
        return f"the replay does not re-derive: {e}"
    except ValueError as e:
        return f"the replay's config is invalid: {e}"
    if not game.done:
        return "the replay stops before the episode ends"
    derived = game.results()
    for key in RESULT_KEYS:
        if row[key] != derived[key]:
            return (f"results.jsonl claims {key} {row[key]!r} but the replay gives "
                    f"{derived[key]!r}")
    if payload.get("results") != derived:
        return "the replay's own results differ from what its events give"
    return None


def _manifest(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        raise LeagueError(f"{path} is not valid JSON") from None
    return data if isinstance(data, dict) else None
