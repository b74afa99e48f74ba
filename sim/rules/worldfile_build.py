"""Build a :class:`~sim.rules.world.World` from a parsed world file (:mod:`sim.rules.worldfile`).

One function per concern: the room, good and keeper tables (a list replaces a table, an object
patches it), then the settings that refer across tables (commission goods, the guild keeper) and
the plain numbers, then the words of the finished town (``WORD_CHECKS``).  The checks run in a
fixed order (goods, rooms, keepers, commissions, guild, numbers, words) so a file with several
mistakes always reports the same first one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import shown
from .prices import STOCK_CAP
from .setup import GROUND_ROOMS, RELIC
from .world import (
    MAX_CARRY,
    MAX_COIN,
    MAX_EXITS,
    MAX_GOODS,
    MAX_KEEPERS,
    MAX_ROOMS,
    MAX_TURNS,
    MAX_VALUE,
    MIN_TURNS,
    SEATS,
    Good,
    Keeper,
    Room,
    World,
)
from .worldfile_checks import MAX_DESC_CHARS, Fields, Names, counted, suggest

TOP_KEYS = ("name", "description", "turns", "start_coin", "keeper_start_coin", "carry_limit",
            "quest_items", "guild", "rooms", "goods", "keepers")
ROOM_KEYS = ("id", "name", "keywords", "x", "y", "dark", "exits", "desc")
GOOD_KEYS = ("id", "name", "plural", "keywords", "value")
KEEPER_KEYS = ("id", "name", "keywords", "room", "trade", "opening")
# The size bounds live in sim.rules.world (World itself enforces them); checked here first so
# that a file gets a message naming its entry.
TABLE_CAPS = {"rooms": MAX_ROOMS, "goods": MAX_GOODS, "keepers": MAX_KEEPERS}
# A patch that renames a good and leaves these fields out gets them as a new good would (the
# plural by plural_of, the keywords both forms): salt's "salts" and "brine" would otherwise name
# the renamed good, and its new name would be printed ("2 pepper") but name nothing.
RENAMED_GOOD_DEFAULTS = ("plural", "keywords")

WordCheck = Callable[[World, Callable[[str, int], str]], tuple[str, str] | None]
# The checks of a town's words: whether every name and keyword can be said in a sentence and
# names one entry (sim.language.worldwords, which appends its check here when sim.language is
# imported; ``import sim`` imports it before any world file can be read).  The rules may not
# import the parser (import-linter's sim-wings layers), so the language wing hands its check
# down.  A check takes the town and ``locate(table, id)`` (where the file gives that entry) and
# returns ``(where, message)`` for the first word it refuses, or ``None``.
WORD_CHECKS: list[WordCheck] = []


# --- rows: the file form of one entry (also what world_to_dict writes) ---------------------

def room_row(r: Room) -> dict:
    """Room ``r`` as a world-file entry."""
    return {"name": r.name, "keywords": list(r.keywords), "x": r.x, "y": r.y,
            "dark": r.dark, "exits": list(r.exits), "desc": r.desc}


def good_row(g: Good) -> dict:
    """Good ``g`` as a world-file entry."""
    return {"name": g.name, "plural": g.plural, "keywords": list(g.keywords), "value": g.value}


def keeper_row(k: Keeper) -> dict:
    """Keeper ``k`` as a world-file entry."""
    return {"name": k.name, "keywords": list(k.keywords), "room": k.room,
            "trade": list(k.trade), "opening": list(k.opening)}


def good_names(goods: Sequence[Good]) -> Names:
    """References to goods: a good is also known by its plural."""
    return Names("good", [(g.name, (g.plural, *g.keywords)) for g in goods])


def room_names(rooms: Sequence[Room]) -> Names:
    """References to rooms."""
    return Names("room", [(r.name, r.keywords) for r in rooms])


def keeper_names(keepers: Sequence[Keeper]) -> Names:
    """References to keepers."""
    return Names("keeper", [(k.name, k.keywords) for k in keepers])


# --- the whole file ------------------------------------------------------------------------

def build_world(data: Any, source: str, base: World) -> tuple[World, int | None]:
    """Apply a parsed world file over ``base``; return the town and the turn count (or None)."""
    f = Fields(source)
    _check_top(f, data)
    goods, goods_at = build_goods(f, data, base.goods)
    rooms, rooms_at = build_rooms(f, data, base.rooms)
    goods_named = _as_patched(data, "goods", good_names(goods), good_names(base.goods))
    keepers, keepers_at = build_keepers(
        f, data, base.keepers, _as_patched(data, "rooms", room_names(rooms),
                                           room_names(base.rooms)), goods_named)
    quest = _quest_items(f, data, base.quest_items, goods, keepers, goods_named)
    guild = _guild(f, data, base.guild,
                   _as_patched(data, "keepers", keeper_names(keepers), keeper_names(base.keepers)),
                   len(keepers))
    turns = f.integer(data["turns"], "turns", MIN_TURNS, MAX_TURNS) if "turns" in data else None
    world = World(rooms=tuple(rooms), goods=tuple(goods), keepers=tuple(keepers),
                  quest_items=quest, guild=guild,
                  start_coin=_setting(f, data, "start_coin", base.start_coin, 0, MAX_COIN),
                  keeper_start_coin=_setting(f, data, "keeper_start_coin",
                                             base.keeper_start_coin, 0, MAX_COIN),
                  carry_limit=_setting(f, data, "carry_limit", base.carry_limit, 1, MAX_CARRY))
    where = {"rooms": rooms_at, "goods": goods_at, "keepers": keepers_at}
    for check in WORD_CHECKS:
        problem = check(world, lambda table, i: where[table][i])
        if problem is not None:
            raise f.fail(*problem)
    return world, turns


def _check_top(f: Fields, data: Any) -> None:
    """The file is an object of known keys; its free-text name and description are strings."""
    if not isinstance(data, Mapping):
        raise f.fail("", f"the world file must be an object (a table); got "
                         f"{type(data).__name__}")
    f.keys(data, TOP_KEYS, "top level")
    for k in ("name", "description"):
        if k in data and not isinstance(data[k], str):
            raise f.fail(k, f"must be a string; got {shown(data[k], 80)}")


def _setting(f: Fields, data: Mapping, key: str, default: int, lo: int, hi: int) -> int:
    """The integer setting ``key`` in ``lo..hi``, or ``default`` when the file leaves it out."""
    return f.integer(data[key], key, lo, hi) if key in data else default


def _quest_items(f: Fields, data: Mapping, default: tuple[int, ...], goods: Sequence[Good],
                 keepers: Sequence[Keeper], names: Names) -> tuple[int, ...]:
    """The commission goods (``names``: the goods' references): at least 2 different ones,
    each sold by some keeper (RULES §4)."""
    if "quest_items" in data:
        items = f.sequence(data["quest_items"], "quest_items")
        quest = tuple(f.ref(v, names, f"quest_items[{i}]") for i, v in enumerate(items))
    else:
        quest = default
        for g in quest:
            if g >= len(goods):
                raise f.fail("quest_items", f"the standard commission good {g} is not "
                                            f"in a {len(goods)}-good table; list them")
    if len(set(quest)) != len(quest):
        raise f.fail("quest_items", "lists a good twice")
    if len(quest) < 2:
        raise f.fail("quest_items", "needs at least 2 goods (each seat draws 2 "
                                    "different commission goods, RULES §4)")
    for g in quest:
        if not any(g in k.trade for k in keepers):
            raise f.fail("quest_items", f"commission good {goods[g].name!r} is sold by "
                                        "no keeper (no trade list has it)")
    return quest


def _guild(f: Fields, data: Mapping, default: int, keepers: Names, count: int) -> int:
    """The keeper who settles commissions: named in the file, or the standard one if it exists."""
    guild = f.ref(data["guild"], keepers, "guild") if "guild" in data else default
    if guild >= count:
        raise f.fail("guild", f"the standard guild keeper {guild} is not in a "
                              f"{count}-keeper table; name one")
    return guild


def _as_patched(data: Mapping, key: str, names: Names, before: Names) -> Names:
    """``names`` of the table ``key``, told the base table's names when the file patches it
    (a reference to a name the patch replaced then says so); a list replacing the table has
    entries of its own, no renames."""
    return names.patched(before) if isinstance(data.get(key), Mapping) else names


# --- tables: a list replaces, an object patches ---------------------------------------------

def table(f: Fields, data: Mapping, key: str, base_rows: list[dict], base_names: Names,
          allowed: Sequence[str], renamed: Sequence[str] = ()) -> tuple[list[dict], list[str]]:
    """Raw rows after a list replacement or an object patch, with each row's location;
    ``renamed``: the fields a patch that renames an entry resets to their defaults unless it
    gives them."""
    if key not in data:
        return base_rows, [f"{key}[{i}]" for i in range(len(base_rows))]
    if isinstance(data[key], Mapping):
        return _patched(f, data[key], key, base_rows, base_names, allowed, renamed)
    return _listed(f, data[key], key, allowed)


def _patched(f: Fields, spec: Mapping, key: str, base_rows: list[dict], base_names: Names,
             allowed: Sequence[str], renamed: Sequence[str]) -> tuple[list[dict], list[str]]:
    """``base_rows`` with the fields of each entry that ``spec`` names (by id, name, keyword)
    changed; a patched row is located by the reference the file used.  Two keys naming one
    entry (``salt`` and its keyword ``brine``) are refused: one would silently win."""
    rows = [dict(r) for r in base_rows]
    where = [f"{key}[{i}]" for i in range(len(rows))]
    for ref, patch in spec.items():
        w = f"{key}[{json.dumps(ref)}]"
        i = base_names.lookup(ref)
        if i is None:
            hint = suggest(ref, base_names.known()) if isinstance(ref, str) else ""
            raise f.fail(w, f"unknown {base_names.kind} {shown(ref, 80)} to change"
                            f"{hint}{base_names.shared_note(ref)} (to add "
                            f"entries give '{key}' as a full list)")
        if where[i] != f"{key}[{i}]":
            raise f.fail(w, f"names the same {base_names.kind} as {where[i]} "
                            f"({base_rows[i].get('name')!r}, id {i}); give its changes "
                            "under one key")
        if not isinstance(patch, Mapping):
            raise f.fail(w, f"must be an object of fields to change; got "
                            f"{shown(patch, 80)}")
        f.keys(patch, allowed, w)
        if "id" in patch and patch["id"] != i:
            raise f.fail(f"{w}.id", f"ids cannot change; {shown(ref, 80)} is {i}")
        if _renames(rows[i], patch):
            for field in renamed:
                rows[i].pop(field, None)
        rows[i].update(patch)
        where[i] = w
    return rows, where


def _renames(row: Mapping, patch: Mapping) -> bool:
    """Whether ``patch`` gives ``row`` another name (not only another case or spacing)."""
    new, old = patch.get("name"), row.get("name")
    return (isinstance(new, str) and isinstance(old, str)
            and " ".join(new.lower().split()) != " ".join(old.lower().split()))


def _listed(f: Fields, spec: Any, key: str,
            allowed: Sequence[str]) -> tuple[list[dict], list[str]]:
    """The rows of a full replacement list; entry i has id i."""
    if isinstance(spec, (str, bytes)) or not isinstance(spec, Sequence):
        raise f.fail(key, f"must be a list (a full table) or an object (changes to the "
                          f"standard entries); got {shown(spec, 80)}")
    rows = f.sequence(spec, key)
    if not rows:
        raise f.fail(key, "must not be empty")
    if len(rows) > TABLE_CAPS[key]:
        raise f.fail(key, f"at most {TABLE_CAPS[key]} entries; got {len(rows)}")
    out = []
    for i, row in enumerate(rows):
        w = f"{key}[{i}]"
        if not isinstance(row, Mapping):
            raise f.fail(w, f"must be an object; got {shown(row, 80)}")
        f.keys(row, allowed, w)
        if "id" in row and row["id"] != i:
            raise f.fail(f"{w}.id", f"must be {i} (entries are listed in id order); "
                                    f"got {shown(row['id'], 80)}")
        out.append(dict(row))
    return out, [f"{key}[{i}]" for i in range(len(out))]


# --- goods ---------------------------------------------------------------------------------

def build_goods(f: Fields, data: Mapping, base: Sequence[Good]) -> tuple[list[Good], list[str]]:
    """The goods table and where the file gives each good; setup needs at least ``RELIC + 1``
    goods (RULES §4)."""
    rows, where = table(f, data, "goods", [good_row(g) for g in base], good_names(base),
                        GOOD_KEYS, RENAMED_GOOD_DEFAULTS)
    out = [_good(f, i, row, w) for i, (row, w) in enumerate(zip(rows, where, strict=True))]
    f.unique([g.name for g in out], where, "good")
    if len(out) <= RELIC:
        raise f.fail("goods", f"setup (RULES §4) drops random goods 0-{RELIC} and an "
                              f"extra relic (good {RELIC}), so a town needs at least "
                              f"{RELIC + 1} goods; got {len(out)}")
    return out, where


def plural_of(name: str) -> str:
    """A good's default plural, by the English rule of its last word: ``glass`` -> ``glasses``,
    ``box`` -> ``boxes``, ``berry`` -> ``berries``, a name already plural as it is (``spikes``,
    like the standard ``nails``), else ``+ s`` (``lamp`` -> ``lamps``).  A name the rule does
    not fit (``coil of rope``, ``knife``) gives its plural itself."""
    lower = name.lower()
    if lower.endswith(("ss", "x", "z", "ch", "sh")):
        return name + "es"
    if lower.endswith("s"):
        return name
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return name[:-1] + "ies"
    return name + "s"


def _good(f: Fields, i: int, row: Mapping, w: str) -> Good:
    """Good ``i``; the plural and keywords default from the name (also when a patch renames
    the good without giving them, :data:`RENAMED_GOOD_DEFAULTS`)."""
    if "name" not in row:
        raise f.fail(w, "needs a 'name'")
    name = f.string(row["name"], f"{w}.name")
    plural = f.string(row["plural"], f"{w}.plural") if "plural" in row else plural_of(name)
    kw = (f.strings(row["keywords"], f"{w}.keywords") if "keywords" in row
          else tuple(dict.fromkeys((name.lower(), plural.lower()))))
    if "value" not in row:
        raise f.fail(w, "needs a base 'value'")
    value = f.integer(row["value"], f"{w}.value", 1, MAX_VALUE)
    return Good(i, name, plural, kw, value)


# --- rooms ---------------------------------------------------------------------------------

def build_rooms(f: Fields, data: Mapping, base: Sequence[Room]) -> tuple[list[Room], list[str]]:
    """The rooms table (enough rooms for setup, unique names, two-way exits, RULES §2.1) and
    where the file gives each room."""
    rows, where = table(f, data, "rooms", [room_row(r) for r in base], room_names(base),
                        ROOM_KEYS)
    need = max(max(GROUND_ROOMS) + 1, SEATS)
    if len(rows) < need:
        raise f.fail("rooms", f"setup (RULES §4) seats players in {SEATS} different "
                              f"rooms and drops loose goods in rooms "
                              f"{', '.join(map(str, GROUND_ROOMS))}, so a town needs at "
                              f"least {need} rooms; got {len(rows)}")
    names, kws = _room_labels(f, rows, where)
    refs = Names("room", list(zip(names, kws, strict=True)))
    out = [_room(f, i, row, w, names, kws, refs)
           for i, (row, w) in enumerate(zip(rows, where, strict=True))]
    _check_two_way(f, out, where)
    return out, where


def _room_labels(f: Fields, rows: Sequence[Mapping],
                 where: Sequence[str]) -> tuple[list[str], list[tuple[str, ...]]]:
    """Every room's name and keywords, checked before any exit (an exit may name any room)."""
    labels = [f.string(row["name"], f"{w}.name") if "name" in row else None
              for row, w in zip(rows, where, strict=True)]
    names: list[str] = []
    for n, w in zip(labels, where, strict=True):
        if n is None:
            raise f.fail(w, "needs a 'name'")
        names.append(n)
    kws = [f.strings(row.get("keywords", []), f"{w}.keywords")
           for row, w in zip(rows, where, strict=True)]
    f.unique(names, where, "room")
    return names, kws


def _room(f: Fields, i: int, row: Mapping, w: str, names: Sequence[str],
          kws: Sequence[tuple[str, ...]], refs: Names) -> Room:
    """Room ``i``; exits are stored ascending (RULES §2.1)."""
    if "exits" not in row:
        raise f.fail(w, "needs 'exits'")
    exits = _exits(f, i, row["exits"], w, names, refs)
    x = f.integer(row.get("x", 50), f"{w}.x", 0, 100)
    y = f.integer(row.get("y", 50), f"{w}.y", 0, 100)
    dark = f.boolean(row.get("dark", False), f"{w}.dark")
    desc = f.string(row.get("desc", ""), f"{w}.desc", MAX_DESC_CHARS, blank=True)
    return Room(i, names[i], kws[i], x, y, dark, tuple(sorted(exits)), desc)


def _exits(f: Fields, i: int, spec: Any, w: str, names: Sequence[str], refs: Names) -> list[int]:
    """Room ``i``'s exits: known rooms, never itself, none twice."""
    exits: list[int] = []
    listed = f.sequence(spec, f"{w}.exits")
    if len(listed) > MAX_EXITS:
        raise f.fail(f"{w}.exits", f"at most {MAX_EXITS} exits; got {len(listed)}")
    for j, e in enumerate(listed):
        r = f.ref(e, refs, f"{w}.exits[{j}]")
        if r == i:
            raise f.fail(f"{w}.exits[{j}]", f"{names[i]} cannot lead to itself")
        if r in exits:
            raise f.fail(f"{w}.exits[{j}]", f"{names[r]} is listed twice")
        exits.append(r)
    return exits


def _check_two_way(f: Fields, rooms: Sequence[Room], where: Sequence[str]) -> None:
    """Every exit has its way back (exits are two-way, RULES §2.1)."""
    for r in rooms:
        for e in r.exits:
            if r.id not in rooms[e].exits:
                raise f.fail(f"{where[r.id]}.exits",
                             f"asymmetric exit: {r.name} leads to {rooms[e].name} but "
                             f"{rooms[e].name} has no exit back to {r.name} (exits are "
                             "two-way, RULES §2.1; add it to both rooms)")


# --- keepers -------------------------------------------------------------------------------

def build_keepers(f: Fields, data: Mapping, base: Sequence[Keeper], rooms: Names,
                  goods: Names) -> tuple[list[Keeper], list[str]]:
    """The keepers table (unique names, at most one keeper per room, RULES §2.3) and where the
    file gives each keeper."""
    rows, where = table(f, data, "keepers", [keeper_row(k) for k in base], keeper_names(base),
                        KEEPER_KEYS)
    out = [_keeper(f, i, row, w, rooms, goods)
           for i, (row, w) in enumerate(zip(rows, where, strict=True))]
    f.unique([k.name for k in out], where, "keeper")
    _check_one_per_room(f, out, where)
    return out, where


def _keeper(f: Fields, i: int, row: Mapping, w: str, rooms: Names, goods: Names) -> Keeper:
    """Keeper ``i``: a room, a trade list and an opening stock level for each traded good."""
    for k in ("name", "room", "trade", "opening"):
        if k not in row:
            raise f.fail(w, f"needs '{k}'")
    name = f.string(row["name"], f"{w}.name")
    kw = f.strings(row.get("keywords", []), f"{w}.keywords")
    room = f.ref(row["room"], rooms, f"{w}.room")
    trade = _trade(f, row["trade"], w, goods)
    opening = [f.integer(s, f"{w}.opening[{j}]", 0, STOCK_CAP)
               for j, s in enumerate(f.sequence(row["opening"], f"{w}.opening"))]
    if len(opening) != len(trade):
        raise f.fail(w, f"trade lists {counted(len(trade), 'good')} but opening gives "
                        f"{counted(len(opening), 'stock level')} (parallel lists)")
    return Keeper(i, name, kw, room, tuple(trade), tuple(opening))


def _trade(f: Fields, spec: Any, w: str, goods: Names) -> list[int]:
    """A keeper's trade list: known goods, none twice."""
    trade: list[int] = []
    for j, g in enumerate(f.sequence(spec, f"{w}.trade")):
        gi = f.ref(g, goods, f"{w}.trade[{j}]")
        if gi in trade:
            raise f.fail(f"{w}.trade[{j}]", f"good {shown(g, 80)} is listed twice")
        trade.append(gi)
    return trade


def _check_one_per_room(f: Fields, keepers: Sequence[Keeper], where: Sequence[str]) -> None:
    """No two keepers stand in one room (RULES §2.3)."""
    seen: dict[int, int] = {}
    for k in keepers:
        if k.room in seen:
            other = keepers[seen[k.room]].name
            raise f.fail(f"{where[k.id]}.room", f"{k.name} and {other} both stand in "
                                                "one room (at most one keeper per room, "
                                                "RULES §2.3)")
        seen[k.room] = k.id
