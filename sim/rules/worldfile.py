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
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .prices import STOCK_CAP
from .setup import GROUND_ROOMS, RELIC
from .world import MIN_TURNS, SEATS, STANDARD_TOWN, Good, Keeper, Room, World

try:  # Python >= 3.11
    import tomllib as _toml
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    _toml = None

TOP_KEYS = ("name", "description", "turns", "start_coin", "keeper_start_coin", "carry_limit",
            "quest_items", "guild", "rooms", "goods", "keepers")
ROOM_KEYS = ("id", "name", "keywords", "x", "y", "dark", "exits", "desc")
GOOD_KEYS = ("id", "name", "plural", "keywords", "value")
KEEPER_KEYS = ("id", "name", "keywords", "room", "trade", "opening")
MAX_VALUE = 1000  # a sanity bound on base values and coin, far above anything playable
MAX_COIN = 100_000


class WorldFileError(ConfigError):
    """A world file cannot be read, or describes an impossible town.  The message is one line
    that names the file and the offending entry."""


def load_world(path: str | Path, base: World = STANDARD_TOWN) -> tuple[World, int | None]:
    """Read a world file; return the town and the file's turn count (``None`` if absent).

    ``.toml`` files are read as TOML (Python >= 3.11), anything else as JSON.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise WorldFileError(f"{p}: cannot read the world file ({e.strerror or e})") from None
    if p.suffix.lower() == ".toml":
        if _toml is None:  # pragma: no cover - Python 3.10
            raise WorldFileError(f"{p}: TOML world files need Python 3.11 or later; use JSON")
        try:
            data = _toml.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise WorldFileError(f"{p}: not UTF-8 text") from None
        except _toml.TOMLDecodeError as e:
            raise WorldFileError(f"{p}: malformed TOML: {e}") from None
    else:
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise WorldFileError(f"{p}: not UTF-8 text") from None
        except json.JSONDecodeError as e:
            raise WorldFileError(f"{p}: malformed JSON at line {e.lineno} column {e.colno}: "
                                 f"{e.msg}") from None
    return world_from_dict(data, source=str(p), base=base)


def world_from_dict(data: Any, source: str = "<world>",
                    base: World = STANDARD_TOWN) -> tuple[World, int | None]:
    """Apply a parsed world file (a dict) over ``base``; see the module docstring."""
    return _Builder(source, base).build(data)


def world_to_dict(world: World) -> dict:
    """The full (list) form of ``world``, which :func:`world_from_dict` reads back unchanged."""
    return {
        "start_coin": world.start_coin, "keeper_start_coin": world.keeper_start_coin,
        "carry_limit": world.carry_limit, "quest_items": list(world.quest_items),
        "guild": world.guild,
        "rooms": [{"name": r.name, "keywords": list(r.keywords), "x": r.x, "y": r.y,
                   "dark": r.dark, "exits": list(r.exits), "desc": r.desc} for r in world.rooms],
        "goods": [{"name": g.name, "plural": g.plural, "keywords": list(g.keywords),
                   "value": g.value} for g in world.goods],
        "keepers": [{"name": k.name, "keywords": list(k.keywords), "room": k.room,
                     "trade": list(k.trade), "opening": list(k.opening)} for k in world.keepers],
    }


# --- building ------------------------------------------------------------------------------

class _Names:
    """Resolve a reference (id, digit string, name or unique keyword, any case) to an id."""

    def __init__(self, kind: str, entries: Sequence[tuple[str, Sequence[str]]]) -> None:
        self.kind = kind
        self.count = len(entries)
        self.names: dict[str, int] = {}
        keywords: dict[str, set[int]] = {}
        for i, (name, extra) in enumerate(entries):
            self.names.setdefault(name.lower(), i)
            for w in extra:
                keywords.setdefault(str(w).lower(), set()).add(i)
        self.keywords = {w: ids.pop() for w, ids in keywords.items() if len(ids) == 1}

    def lookup(self, ref: Any) -> int | None:
        if isinstance(ref, bool):
            return None
        if isinstance(ref, int):
            return ref if 0 <= ref < self.count else None
        if isinstance(ref, str):
            s = ref.strip()
            if s.isdigit():
                return self.lookup(int(s))
            key = s.lower()
            return self.names.get(key, self.keywords.get(key))
        return None

    def known(self) -> list[str]:
        return [*self.names, *self.keywords]


class _Builder:
    def __init__(self, source: str, base: World) -> None:
        self.source = source
        self.base = base

    def fail(self, where: str, msg: str) -> WorldFileError:
        return WorldFileError(f"{self.source}: {where}: {msg}" if where
                              else f"{self.source}: {msg}")

    # -- scalar checks ---------------------------------------------------------------------
    def int_(self, v: Any, where: str, lo: int, hi: int) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(where, f"must be an integer; got {v!r}")
        if v < lo:
            what = "negative values are not allowed" if v < 0 else f"must be at least {lo}"
            raise self.fail(where, f"{what}; got {v}")
        if v > hi:
            raise self.fail(where, f"must be at most {hi}; got {v}")
        return v

    def str_(self, v: Any, where: str) -> str:
        if not isinstance(v, str) or not v.strip():
            raise self.fail(where, f"must be a non-empty string; got {v!r}")
        return v.strip()

    def bool_(self, v: Any, where: str) -> bool:
        if not isinstance(v, bool):
            raise self.fail(where, f"must be true or false; got {v!r}")
        return v

    def list_(self, v: Any, where: str) -> list:
        if isinstance(v, (str, bytes)) or not isinstance(v, Sequence):
            raise self.fail(where, f"must be a list; got {v!r}")
        return list(v)

    def strings(self, v: Any, where: str) -> tuple[str, ...]:
        return tuple(self.str_(x, f"{where}[{i}]").lower()
                     for i, x in enumerate(self.list_(v, where)))

    def ref(self, v: Any, names: _Names, where: str) -> int:
        i = names.lookup(v)
        if i is None:
            hint = _suggest(str(v), names.known())
            raise self.fail(where, f"unknown {names.kind} {v!r}{hint}")
        return i

    def keys(self, d: Mapping, allowed: Sequence[str], where: str) -> None:
        for k in d:
            if k not in allowed:
                hint = _suggest(str(k), allowed)
                raise self.fail(where, f"unknown key {k!r}{hint} (allowed: "
                                       f"{', '.join(allowed)})")

    # -- tables ----------------------------------------------------------------------------
    def table(self, data: Mapping, key: str, base_rows: list[dict], base_names: _Names,
              allowed: Sequence[str]) -> tuple[list[dict], list[str]]:
        """Raw rows after a list replacement or an object patch, with each row's location."""
        if key not in data:
            return base_rows, [f"{key}[{i}]" for i in range(len(base_rows))]
        spec = data[key]
        if isinstance(spec, Mapping):  # patch
            rows = [dict(r) for r in base_rows]
            where = [f"{key}[{i}]" for i in range(len(rows))]
            for ref, patch in spec.items():
                w = f"{key}[{json.dumps(ref)}]"
                i = base_names.lookup(ref)
                if i is None:
                    raise self.fail(w, f"unknown {base_names.kind} {ref!r} to change"
                                       f"{_suggest(str(ref), base_names.known())} (to add "
                                       f"entries give '{key}' as a full list)")
                if not isinstance(patch, Mapping):
                    raise self.fail(w, f"must be an object of fields to change; got {patch!r}")
                self.keys(patch, allowed, w)
                if "id" in patch and patch["id"] != i:
                    raise self.fail(f"{w}.id", f"ids cannot change; {ref!r} is {i}")
                rows[i].update(patch)
                where[i] = w
            return rows, where
        rows = self.list_(spec, key)
        if not rows:
            raise self.fail(key, "must not be empty")
        out = []
        for i, row in enumerate(rows):
            w = f"{key}[{i}]"
            if not isinstance(row, Mapping):
                raise self.fail(w, f"must be an object; got {row!r}")
            self.keys(row, allowed, w)
            if "id" in row and row["id"] != i:
                raise self.fail(f"{w}.id", f"must be {i} (entries are listed in id order); "
                                           f"got {row['id']!r}")
            out.append(dict(row))
        return out, [f"{key}[{i}]" for i in range(len(out))]

    def build(self, data: Any) -> tuple[World, int | None]:
        if not isinstance(data, Mapping):
            raise self.fail("", f"the world file must be an object (a table); got "
                                f"{type(data).__name__}")
        self.keys(data, TOP_KEYS, "top level")
        b = self.base
        for k in ("name", "description"):
            if k in data and not isinstance(data[k], str):
                raise self.fail(k, f"must be a string; got {data[k]!r}")

        goods = self.goods(data)
        good_names = _Names("good", [(g.name, (g.plural, *g.keywords)) for g in goods])
        rooms = self.rooms(data)
        room_names = _Names("room", [(r.name, r.keywords) for r in rooms])
        keepers = self.keepers(data, room_names, good_names)
        keeper_names = _Names("keeper", [(k.name, k.keywords) for k in keepers])

        if "quest_items" in data:
            items = self.list_(data["quest_items"], "quest_items")
            quest = tuple(self.ref(v, good_names, f"quest_items[{i}]")
                          for i, v in enumerate(items))
        else:
            quest = b.quest_items
            for g in quest:
                if g >= len(goods):
                    raise self.fail("quest_items", f"the standard commission good {g} is not "
                                                   f"in a {len(goods)}-good table; list them")
        if len(set(quest)) != len(quest):
            raise self.fail("quest_items", "lists a good twice")
        if len(quest) < 2:
            raise self.fail("quest_items", "needs at least 2 goods (each seat draws 2 "
                                           "different commission goods, RULES §4)")
        for g in quest:
            if not any(g in k.trade for k in keepers):
                raise self.fail("quest_items", f"commission good {goods[g].name!r} is sold by "
                                               "no keeper (no trade list has it)")
        guild = (self.ref(data["guild"], keeper_names, "guild") if "guild" in data
                 else b.guild)
        if guild >= len(keepers):
            raise self.fail("guild", f"the standard guild keeper {guild} is not in a "
                                     f"{len(keepers)}-keeper table; name one")

        turns = None
        if "turns" in data:
            turns = self.int_(data["turns"], "turns", MIN_TURNS, 10_000)
        start_coin = (self.int_(data["start_coin"], "start_coin", 0, MAX_COIN)
                      if "start_coin" in data else b.start_coin)
        keeper_coin = (self.int_(data["keeper_start_coin"], "keeper_start_coin", 0, MAX_COIN)
                       if "keeper_start_coin" in data else b.keeper_start_coin)
        carry = (self.int_(data["carry_limit"], "carry_limit", 1, 999)
                 if "carry_limit" in data else b.carry_limit)
        world = World(rooms=tuple(rooms), goods=tuple(goods), keepers=tuple(keepers),
                      quest_items=quest, guild=guild, start_coin=start_coin,
                      keeper_start_coin=keeper_coin, carry_limit=carry)
        return world, turns

    def goods(self, data: Mapping) -> list[Good]:
        base = [{"name": g.name, "plural": g.plural, "keywords": list(g.keywords),
                 "value": g.value} for g in self.base.goods]
        names = _Names("good", [(g.name, (g.plural, *g.keywords)) for g in self.base.goods])
        rows, where = self.table(data, "goods", base, names, GOOD_KEYS)
        out = []
        for i, (row, w) in enumerate(zip(rows, where, strict=True)):
            if "name" not in row:
                raise self.fail(w, "needs a 'name'")
            name = self.str_(row["name"], f"{w}.name")
            plural = self.str_(row.get("plural", name + "s"), f"{w}.plural")
            kw = (self.strings(row["keywords"], f"{w}.keywords") if "keywords" in row
                  else (name.lower(), plural.lower()))
            if "value" not in row:
                raise self.fail(w, "needs a base 'value'")
            value = self.int_(row["value"], f"{w}.value", 1, MAX_VALUE)
            out.append(Good(i, name, plural, kw, value))
        self.unique([g.name for g in out], where, "good")
        if len(out) <= RELIC:
            raise self.fail("goods", f"setup (RULES §4) drops random goods 0-{RELIC} and an "
                                     f"extra relic (good {RELIC}), so a town needs at least "
                                     f"{RELIC + 1} goods; got {len(out)}")
        return out

    def rooms(self, data: Mapping) -> list[Room]:
        base = [{"name": r.name, "keywords": list(r.keywords), "x": r.x, "y": r.y,
                 "dark": r.dark, "exits": list(r.exits), "desc": r.desc}
                for r in self.base.rooms]
        base_names = _Names("room", [(r.name, r.keywords) for r in self.base.rooms])
        rows, where = self.table(data, "rooms", base, base_names, ROOM_KEYS)
        need = max(max(GROUND_ROOMS) + 1, SEATS)
        if len(rows) < need:
            raise self.fail("rooms", f"setup (RULES §4) seats players in {SEATS} different "
                                     f"rooms and drops loose goods in rooms "
                                     f"{', '.join(map(str, GROUND_ROOMS))}, so a town needs at "
                                     f"least {need} rooms; got {len(rows)}")
        # Names first (exits may name any room), then every field.
        names = [self.str_(row["name"], f"{w}.name") if "name" in row else None
                 for row, w in zip(rows, where, strict=True)]
        for n, w in zip(names, where, strict=True):
            if n is None:
                raise self.fail(w, "needs a 'name'")
        kws = [self.strings(row.get("keywords", []), f"{w}.keywords")
               for row, w in zip(rows, where, strict=True)]
        self.unique(names, where, "room")
        room_names = _Names("room", list(zip(names, kws, strict=True)))
        out = []
        for i, (row, w) in enumerate(zip(rows, where, strict=True)):
            if "exits" not in row:
                raise self.fail(w, "needs 'exits'")
            exits = []
            for j, e in enumerate(self.list_(row["exits"], f"{w}.exits")):
                r = self.ref(e, room_names, f"{w}.exits[{j}]")
                if r == i:
                    raise self.fail(f"{w}.exits[{j}]", f"{names[i]} cannot lead to itself")
                if r in exits:
                    raise self.fail(f"{w}.exits[{j}]", f"{names[r]} is listed twice")
                exits.append(r)
            x = self.int_(row.get("x", 50), f"{w}.x", 0, 100)
            y = self.int_(row.get("y", 50), f"{w}.y", 0, 100)
            dark = self.bool_(row.get("dark", False), f"{w}.dark")
            desc = row.get("desc", "")
            if not isinstance(desc, str):
                raise self.fail(f"{w}.desc", f"must be a string; got {desc!r}")
            out.append(Room(i, names[i], kws[i], x, y, dark, tuple(sorted(exits)), desc))
        for r in out:
            for e in r.exits:
                if r.id not in out[e].exits:
                    raise self.fail(f"{where[r.id]}.exits",
                                    f"asymmetric exit: {r.name} leads to {out[e].name} but "
                                    f"{out[e].name} has no exit back to {r.name} (exits are "
                                    "two-way, RULES §2.1; add it to both rooms)")
        return out

    def keepers(self, data: Mapping, room_names: _Names, good_names: _Names) -> list[Keeper]:
        base = [{"name": k.name, "keywords": list(k.keywords), "room": k.room,
                 "trade": list(k.trade), "opening": list(k.opening)}
                for k in self.base.keepers]
        base_names = _Names("keeper", [(k.name, k.keywords) for k in self.base.keepers])
        rows, where = self.table(data, "keepers", base, base_names, KEEPER_KEYS)
        out = []
        for i, (row, w) in enumerate(zip(rows, where, strict=True)):
            for k in ("name", "room", "trade", "opening"):
                if k not in row:
                    raise self.fail(w, f"needs '{k}'")
            name = self.str_(row["name"], f"{w}.name")
            kw = self.strings(row.get("keywords", []), f"{w}.keywords")
            room = self.ref(row["room"], room_names, f"{w}.room")
            trade: list[int] = []
            for j, g in enumerate(self.list_(row["trade"], f"{w}.trade")):
                gi = self.ref(g, good_names, f"{w}.trade[{j}]")
                if gi in trade:
                    raise self.fail(f"{w}.trade[{j}]", f"good {g!r} is listed twice")
                trade.append(gi)
            opening = [self.int_(s, f"{w}.opening[{j}]", 0, STOCK_CAP)
                       for j, s in enumerate(self.list_(row["opening"], f"{w}.opening"))]
            if len(opening) != len(trade):
                raise self.fail(w, f"trade lists {_n(len(trade), 'good')} but opening gives "
                                   f"{_n(len(opening), 'stock level')} (parallel lists)")
            out.append(Keeper(i, name, kw, room, tuple(trade), tuple(opening)))
        self.unique([k.name for k in out], where, "keeper")
        seen: dict[int, int] = {}
        for k in out:
            if k.room in seen:
                other = out[seen[k.room]].name
                raise self.fail(f"{where[k.id]}.room", f"{k.name} and {other} both stand in "
                                                       "one room (at most one keeper per room, "
                                                       "RULES §2.3)")
            seen[k.room] = k.id
        return out

    def unique(self, names: Sequence[str | None], where: Sequence[str], kind: str) -> None:
        seen: dict[str, int] = {}
        for i, n in enumerate(names):
            key = (n or "").lower()
            if key in seen:
                raise self.fail(f"{where[i]}.name", f"{kind} name {n!r} is already used by "
                                                    f"{where[seen[key]]}")
            seen[key] = i


def _suggest(word: str, options: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for a near miss, else ``""``."""
    opts = list(options)
    close = difflib.get_close_matches(word.lower(), [o.lower() for o in opts], n=1)
    if not close:
        return ""
    match = next(o for o in opts if o.lower() == close[0])
    return f" (did you mean {match!r}?)"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
