"""Variant towns from a world file (JSON, or TOML on Python >= 3.11), checked before anyone plays.

A world file changes the standard town (RULES §1-2) and the settings that the feasibility gate
(RULES §18) guards.  :func:`load_world` returns the ``World`` that ``GameConfig(world=...)``
plays and ``python -m feasibility --world FILE`` checks, plus the file's turn count (or
``None``); ``sim.load_config`` makes the ``GameConfig`` in one call.  Every key is optional; an
unknown key is an error, so a typo never passes silently::

    {
      "name": "Flooded docks",            # free text, ignored ("description" too)
      "turns": 12,                        # horizon, 6..1000 (RULES §6.7)
      "start_coin": 35, "keeper_start_coin": 120, "carry_limit": 8,
      "quest_items": ["hide", "nails", "rope", "salt"],   # goods a commission may name
      "guild": "Guildmaster Vell",        # the keeper who settles commissions
      "rooms":   {"The Docks": {"exits": ["Warehouse Yard", "Cutpurse Alley"]},
                  "Market Square": {"exits": [1, 3, 7]}},
      "goods":   {"salt": {"value": 10}},
      "keepers": {"Smith Bram": {"trade": ["nails", "rope"], "opening": [4, 6]}}
    }

``rooms``, ``goods`` and ``keepers`` are each an object that *patches* the standard entries
(keys name an entry by id ``"5"``, name or keyword, each entry under one key only: ``salt`` and
``brine`` both name salt; values give only the fields to change) or a list that *replaces* the
table (entry i gets id i; an ``id`` field, if given, must be i).  Fields: rooms ``name exits
keywords x y dark desc``; goods ``name plural keywords value``; keepers ``name room trade
opening keywords``.  A good's plural defaults to its name + "s" (or the English "es" and
"ies": ``plural_of``) and its keywords to both forms, also when a patch renames it (``{"salt":
{"name": "pepper"}}`` is pepper/peppers, and salt's old words no longer name it); a sentence
names a good by its name and plural whatever its keywords
(SENTENCES §6).  Inside entries, references are ids, names (any case) or unique keywords of the
*resulting* tables; exits are stored ascending (RULES §2.1).

Limits (``sim.rules.world``; ``World`` itself enforces the sizes, which keep the batched arrays,
the action table and the planner proportional to a real town): a file of at most 1 MiB, 8
containers deep, integers of at most 30 digits; 64 rooms, 32 goods, 64 keepers, 16 exits a room;
turns 6..1000, base values 1..1000, coin 0..100,000, carry limit 1..999, opening stock 0..12,
x/y 0..100; names and keywords of 40 characters, 16 keywords an entry, descriptions of 300
(``sim.rules.worldfile_checks``).  Each failed check raises :class:`WorldFileError` naming the
file and the entry: besides types and ranges, unknown references; self, duplicate or one-way
exits; duplicate names; two keepers in one room; a trade list and its opening stock of different
lengths; fewer than 2 commission goods, or one that no keeper trades; fewer than 8 rooms or 6
goods (setup, RULES §4, puts loose goods in rooms 0, 4-7 and uses good 5 as the extra relic);
and words a sentence could not use (:mod:`sim.language.worldwords`): a name or keyword without a
word, one naming two rooms, two goods or two keepers, a lone count or little word (``a``,
``12``, ``the``), a coin or offer word in a good's or keeper's words, a keeper's words naming a
good.  Whether a seat can still finish its commissions is the feasibility gate's question, not
checked here.

This module reads the file and detects its format; :mod:`sim.rules.worldfile_build` builds the
tables and :mod:`sim.rules.worldfile_checks` checks the fields and words the errors.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import printable
from .world import DEFAULT_TURNS, MAX_TURNS, STANDARD_TOWN, World
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

__all__ = ["GOOD_KEYS", "KEEPER_KEYS", "MAX_COIN", "MAX_DEPTH", "MAX_FILE_BYTES",
           "MAX_INT_DIGITS", "MAX_TURNS", "MAX_VALUE", "ROOM_KEYS", "TOP_KEYS", "WorldFileError",
           "load_world", "world_and_turns", "world_from_dict", "world_to_dict"]

MAX_FILE_BYTES = 1 << 20  # 1 MiB: a 64-room town with long descriptions is under 100 KB
MAX_DEPTH = 8             # containers inside containers; a town needs 4
MAX_INT_DIGITS = 30       # far past every bound below; longer literals are refused unread
SHOWN_PATH = 120          # a path's characters in an error line: a longer one keeps its end
SHOWN_REASON = 300        # a reason's characters in an error line


def load_world(path: str | Path, base: World = STANDARD_TOWN) -> tuple[World, int | None]:
    """Read a world file; return the town and the file's turn count (``None`` if absent).

    ``.toml`` files are read as TOML (Python >= 3.11), anything else as JSON.
    """
    if not isinstance(path, (str, Path)):
        raise WorldFileError(f"load_world: path must be a str or a Path; got "
                             f"{type(path).__name__}")
    p = Path(path)
    try:  # a regular file, checked before opening (a FIFO would block) and once open
        if not stat.S_ISREG(os.stat(p).st_mode):
            raise WorldFileError(f"{p}: not a regular file (a directory, device or FIFO); a "
                                 "world file is read from a regular file only")
        with os.fdopen(os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise WorldFileError(f"{p}: not a regular file; a world file is read from a "
                                     "regular file only")
            raw = fh.read(MAX_FILE_BYTES + 1)  # one byte past the bound: never a huge file
    except OSError as e:
        raise WorldFileError(f"{p}: cannot read the world file ({e.strerror or e})") from None
    except WorldFileError:
        raise
    except ValueError:  # a NUL in the path
        raise WorldFileError(f"{p!s:.80}: not a path a file can have") from None
    if len(raw) > MAX_FILE_BYTES:
        raise WorldFileError(f"{p}: a world file is at most {MAX_FILE_BYTES} bytes; this one "
                             "is larger")
    data = _parse_toml(p, raw) if p.suffix.lower() == ".toml" else _parse_json(p, raw)
    return world_from_dict(data, source=str(p), base=base)


def world_and_turns(path: str | Path | None, turns: int | None = None) -> tuple[World, int]:
    """A command's ``--world FILE`` and ``--turns``: the town (the standard one without a file)
    and the turn count (``turns`` when given, else the file's, else :data:`DEFAULT_TURNS`).
    Every command that plays a world file reads it and its turns here, so they agree on both,
    and refuse a bad one alike: :class:`WorldFileError` whose text is one line ready to print,
    ``bad world file: PATH: REASON`` (:func:`_one_line`)."""
    if path is None:
        return STANDARD_TOWN, DEFAULT_TURNS if turns is None else turns
    try:
        world, file_turns = load_world(path)
    except ValueError as e:  # WorldFileError, or a town World itself refuses
        source = str(Path(path)) if isinstance(path, (str, Path)) else ""
        raise WorldFileError(f"bad world file: {_one_line(str(e), source)}") from None
    except RecursionError:
        raise WorldFileError(f"bad world file: {_shown_path(str(path))} is nested too "
                             "deeply") from None
    return world, turns if turns is not None else (file_turns or DEFAULT_TURNS)


def _shown_path(path: str) -> str:
    """``path`` as it prints (its escape codes inert), cut to :data:`SHOWN_PATH` characters by
    keeping its end, which names the file."""
    text = printable(path)
    return text if len(text) <= SHOWN_PATH else "..." + text[-(SHOWN_PATH - 3):]


def _one_line(message: str, source: str) -> str:
    """An error ``message`` as one printable line: the path it begins with (``source``) cut by
    :func:`_shown_path`, so that a deep path never crowds out the reason after it, which is
    kept whole up to :data:`SHOWN_REASON` characters."""
    path = source if source and message.startswith(source) else ""
    reason = printable(" ".join(message[len(path):].split()))
    if len(reason) > SHOWN_REASON:
        reason = reason[:SHOWN_REASON] + "..."
    return (_shown_path(path) if path else "") + reason


def _parse_toml(p: Path, raw: bytes) -> Any:
    """The parsed TOML of file ``p``; a decoding error names the file, not a traceback."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise WorldFileError(f"{p}: not UTF-8 text") from None
    if _deep_key(text):
        raise _too_deep(str(p))
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise WorldFileError(f"{p}: malformed TOML: {e}") from None
    except RecursionError:
        raise _too_deep(str(p)) from None
    except ValueError:  # Python's int digit limit, raised by tomllib's int()
        raise _too_long(str(p)) from None


# What follows each kind of TOML string's opening up to its end (possessive: each character is
# read once), and a run of MAX_DEPTH key segments each followed by a dot (tried only where a
# segment begins: each word once).
_STRING_REST = {'"""': re.compile(r'(?:[^"\\]|\\[\s\S]|"(?!""))*+"{3,5}+'),
                "'''": re.compile(r"(?:[^']|'(?!''))*+'{3,5}+"),
                '"': re.compile(r'(?:[^"\\\n]|\\.)*+"'),
                "'": re.compile(r"[^'\n]*+'")}
_OPENING = re.compile(r"\"\"\"|'''|[\"'#]")
_DEEP_KEY = re.compile(rf"(?<![A-Za-z0-9_-])(?:[A-Za-z0-9_-]++[ \t]*+\.[ \t]*+){{{MAX_DEPTH}}}")


def _deep_key(text: str) -> bool:
    """Whether a dotted key (``a.b.c = 1``, a ``[table.header]``, a key in an inline table)
    has :data:`MAX_DEPTH` dots or more, so that its tables nest deeper than a world file may.

    Asked of the text before ``tomllib`` reads it, whose time grows with the square of a key's
    depth.  Strings and quoted keys become one bare word and comments nothing, read in one pass
    by TOML's own rules (a ``#`` in a string is no comment, a quote in a comment opens no
    string), so only a key's own dots count; an unterminated string runs to its line's end (or
    the file's), where ``tomllib`` stops anyway."""
    bare: list[str] = []
    pos = 0
    while (m := _OPENING.search(text, pos)) is not None:
        bare.append(text[pos:m.start()])
        opening = m.group()
        rest = None if opening == "#" else _STRING_REST[opening].match(text, m.end())
        if rest is not None:
            pos = rest.end()
            bare.append("q")
        elif len(opening) == 3:
            pos = len(text)
        else:  # a comment, or a string its line does not close
            line_end = text.find("\n", m.end())
            pos = len(text) if line_end < 0 else line_end
    bare.append(text[pos:])
    return _DEEP_KEY.search("".join(bare)) is not None


def _parse_json(p: Path, raw: bytes) -> Any:
    """The parsed JSON of file ``p``; a syntax error names the line and column."""
    try:
        return json.loads(raw.decode("utf-8"), parse_int=_json_int,
                          object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError:
        raise WorldFileError(f"{p}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise WorldFileError(f"{p}: malformed JSON at line {e.lineno} column {e.colno}: "
                             f"{e.msg}") from None
    except WorldFileError as e:  # a key given twice
        raise WorldFileError(f"{p}: {e}") from None
    except RecursionError:
        raise _too_deep(str(p)) from None
    except _LongInt:
        raise _too_long(str(p)) from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (JSON keeps the last silently; TOML refuses
    it): two values for one field are a typo that must not pass."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise WorldFileError(f"the key {key!r:.60} is given twice in one object; give it "
                                 "once")
        out[key] = value
    return out


class _LongInt(Exception):  # noqa: N818 - internal signal, never escapes this module
    """An integer literal longer than :data:`MAX_INT_DIGITS`."""


def _json_int(text: str) -> int:
    """``int(text)``, refusing a literal no world-file field could hold before converting it."""
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _LongInt
    return int(text)


def _too_deep(source: str) -> WorldFileError:
    return WorldFileError(f"{source}: nested more than {MAX_DEPTH} levels deep (a world file "
                          "needs 4: file, table, entry, list)")


def _too_long(source: str) -> WorldFileError:
    return WorldFileError(f"{source}: an integer has more than {MAX_INT_DIGITS} digits (no "
                          "world-file number is that large)")


def _check_depth(data: Any, source: str) -> None:
    """Refuse data nested deeper than :data:`MAX_DEPTH` (iteratively: no recursion to blow)."""
    stack = [(data, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, Mapping):
            children = list(v.values())
        elif isinstance(v, (list, tuple)):
            children = list(v)
        else:
            continue
        if depth > MAX_DEPTH:
            raise _too_deep(source)
        stack.extend((c, depth + 1) for c in children)


def world_from_dict(data: Any, source: str = "<world>",
                    base: World = STANDARD_TOWN) -> tuple[World, int | None]:
    """Apply a parsed world file (a dict) over ``base``; see the module docstring."""
    if not isinstance(base, World):
        raise WorldFileError(f"{source}: base must be a World; got {type(base).__name__}")
    _check_depth(data, source)
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
