"""Variant towns from a world file (JSON, or TOML on Python >= 3.11), checked before anyone plays.

A world file changes the standard town of RULES §1-2 and the settings that the feasibility gate
of RULES §18 guards: rooms, exits, keepers, trade lists, opening stock, base values, the
starting coin and the turn count.  :func:`load_world` returns a :class:`~sim.rules.world.World` that
``GameConfig(world=...)`` plays and ``python -m feasibility --world FILE`` checks, plus the
file's turn count (or ``None``); ``sim.load_config`` makes the ``GameConfig`` in one call.

The format (every key optional; unknown keys are errors, so a typo never passes silently)::

    {
      "name": "Flooded docks",            # free text, ignored ("description" too)
      "turns": 12,                        # horizon, >= 6 (RULES §6.7)
      "start_coin": 35,                   # each seat's purse at setup (RULES §4)
      "keeper_start_coin": 120, "carry_limit": 8,
      "quest_items": ["hide", "nails", "rope", "salt"],   # goods a commission may name
      "guild": "Guildmaster Vell",        # the keeper who settles commissions
      "rooms":   {"The Docks": {"exits": ["Warehouse Yard", "Cutpurse Alley"]},
                  "Market Square": {"exits": [1, 3, 7]}},
      "goods":   {"salt": {"value": 10}},
      "keepers": {"Smith Bram": {"trade": ["nails", "rope"], "opening": [4, 6]}}
    }

``rooms``, ``goods`` and ``keepers`` are each either

* an **object** (a TOML table) that *patches* the standard entries: keys name an entry by id
  (``"5"``), name or keyword, values give only the fields to change; or
* a **list** that *replaces* the whole table; entry i gets id i (an ``id`` field, if given,
  must be i).  Room fields: ``name exits keywords x y dark desc``; goods: ``name plural keywords
  value``; keepers: ``name room trade opening keywords``.

Inside entries, rooms, goods and keepers are referred to by id, name (any case) or a keyword
unique among them, always in the *resulting* tables.  Exits are stored ascending (RULES §2.1).

Checks (each failure raises :class:`WorldFileError` naming the file and the entry): unreadable
or malformed file; unknown keys; wrong types; negative or out-of-range numbers (base value >= 1,
opening stock 0..12, x/y 0..100, turns >= 6, coin >= 0, carry limit >= 1); unknown rooms, goods
or keepers in a reference; self, duplicate or one-way (asymmetric) exits; duplicate names; two
keepers in one room (RULES §2.3); a trade list and its opening stock of different lengths; fewer
than 2 commission goods, or a commission good that no keeper trades; and the shape that setup
(RULES §4) needs: at least 8 rooms (loose goods land in rooms 0, 4, 5, 6, 7) and 6 goods (good 5
is the extra relic).  Whether a competent seat can still finish its commissions is *not* checked
here; that is the feasibility gate's job (RULES §18).

This module reads the file and detects its format; the table building is in
:mod:`sim.rules.worldfile_build` and the field checks and error wording in
:mod:`sim.rules.worldfile_checks`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .world import STANDARD_TOWN, World
from .worldfile_build import (
    GOOD_KEYS,
    KEEPER_KEYS,
    MAX_COIN,
    MAX_VALUE,
    ROOM_KEYS,
    TOP_KEYS,
    build_world,
    good_row,
    keeper_row,
    room_row,
)
from .worldfile_checks import WorldFileError

try:  # Python >= 3.11
    import tomllib as _toml
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    _toml = None

__all__ = ["GOOD_KEYS", "KEEPER_KEYS", "MAX_COIN", "MAX_VALUE", "ROOM_KEYS", "TOP_KEYS",
           "WorldFileError", "load_world", "world_from_dict", "world_to_dict"]


def load_world(path: str | Path, base: World = STANDARD_TOWN) -> tuple[World, int | None]:
    """Read a world file; return the town and the file's turn count (``None`` if absent).

    ``.toml`` files are read as TOML (Python >= 3.11), anything else as JSON.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise WorldFileError(f"{p}: cannot read the world file ({e.strerror or e})") from None
    data = _parse_toml(p, raw) if p.suffix.lower() == ".toml" else _parse_json(p, raw)
    return world_from_dict(data, source=str(p), base=base)


def _parse_toml(p: Path, raw: bytes) -> Any:
    """The parsed TOML of file ``p``; a decoding error names the file, not a traceback."""
    if _toml is None:  # pragma: no cover - Python 3.10
        raise WorldFileError(f"{p}: TOML world files need Python 3.11 or later; use JSON")
    try:
        return _toml.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise WorldFileError(f"{p}: not UTF-8 text") from None
    except _toml.TOMLDecodeError as e:
        raise WorldFileError(f"{p}: malformed TOML: {e}") from None


def _parse_json(p: Path, raw: bytes) -> Any:
    """The parsed JSON of file ``p``; a syntax error names the line and column."""
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise WorldFileError(f"{p}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise WorldFileError(f"{p}: malformed JSON at line {e.lineno} column {e.colno}: "
                             f"{e.msg}") from None


def world_from_dict(data: Any, source: str = "<world>",
                    base: World = STANDARD_TOWN) -> tuple[World, int | None]:
    """Apply a parsed world file (a dict) over ``base``; see the module docstring."""
    return build_world(data, source, base)


def world_to_dict(world: World) -> dict:
    """The full (list) form of ``world``, which :func:`world_from_dict` reads back unchanged."""
    return {
        "start_coin": world.start_coin, "keeper_start_coin": world.keeper_start_coin,
        "carry_limit": world.carry_limit, "quest_items": list(world.quest_items),
        "guild": world.guild,
        "rooms": [room_row(r) for r in world.rooms],
        "goods": [good_row(g) for g in world.goods],
        "keepers": [keeper_row(k) for k in world.keepers],
    }
