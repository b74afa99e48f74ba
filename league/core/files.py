"""Reading a file a user or a tamperer may have replaced: only a regular file, at most a cap
of bytes, decided before anything is read (``/dev/zero`` never ends, a FIFO blocks its reader,
a huge sparse file would be read whole into memory). Every reader of a league's folder uses it:
``guild verify``, a resume, the signature, ``guild report``, ``guild view`` and ``guild
export-sft``; so does the reader of a league's signing key.  A replay is read and parsed in one
place (:func:`load_replay`): a league's own is never read through a link (one link per line
would make one replay cost as many), and the work of parsing is bounded before it starts.  And
writing over one: a command replaces only a file it wrote itself (:func:`check_replaceable`)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from league.core.errors import LeagueError
from sim.commandline import printable
from sim.rules.world import MAX_TURNS, SEATS, STANDARD_TOWN, World

# A replay of MAX_TURNS turns is a few MB (every sentence, say and note at its longest, a
# 64-room town's snapshots: under 32 MB); a bigger file is not a replay, and is not read.
MAX_REPLAY_BYTES = 64 << 20

# What a read asks for at a time once a file holds more than ``stat`` said (it grew, or is a
# file such as /proc's that says 0): a buffered ``read(n)`` reserves n bytes before it reads.
READ_CHUNK = 1 << 20
HEAD_BYTES = 8192  # the start of a file a command checks is its own before writing over it

REPLAY_PROTOCOL = "cogmud.replay.v1"
# A replay's keys: RULES §15.5's, and what a league adds (league.core.episode: how each seat
# ran, what played its fallbacks, a language model's records). Any other is no replay's.
REPLAY_KEYS = frozenset({"protocol", "names", "policyNames", "config", "events", "results",
                         "trusted", "sandbox", "fallbackPlay", "llm"})
# JSON values a turn's six acts may hold beyond its snapshot: an act event holds about 25, its
# language-model record (league.core.episode) under 100
ACT_VALUES = 256
OUTER_VALUES = 1024  # the config without its town, the results, names and marks by seat
# a JSON string, quotes and escapes and all, or one left open to the end (possessive, and never
# failing once a quote opens: a failed match from every quote of a file of unclosed strings
# scanned to its end each time, hours for a few MB)
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)


def read_regular(path: Path, cap: int, what: str, follow: bool = True) -> bytes:
    """The bytes of ``path`` when it is a regular file of at most ``cap`` bytes; otherwise
    ``LeagueError`` (one line), decided before any read (see :func:`open_regular`; ``follow``
    False: a symbolic link is refused, not followed).

    It asks for the size ``fstat`` gives (and a byte more, to see the file grew), never for
    ``cap`` at once: a buffered read reserves what it is asked for, so asking for a cap of
    gigabytes would fail under a memory limit on a file of a few bytes. A file that grows is
    read on in chunks up to ``cap + 1`` bytes, so the cap holds exactly."""
    with open_regular(path, cap, what, follow) as f:
        try:
            raw = _read_capped(f, cap)
        except OSError as e:
            raise LeagueError(f"{path}: cannot read it ({e.strerror or e})") from None
    if len(raw) > cap:  # it grew since
        raise LeagueError(_too_large(path, cap, what))
    return raw


def _blocks(f: BinaryIO, cap: int, first: int = READ_CHUNK) -> Iterator[bytes]:
    """The bytes of ``f``, at most ``cap + 1`` of them, in blocks: ``first`` bytes asked for
    first, then :data:`READ_CHUNK` at a time (never the whole cap at once)."""
    want, total = first, 0
    while total <= cap:
        block = f.read(min(want, cap + 1 - total))
        if not block:
            return
        total += len(block)
        want = READ_CHUNK
        yield block


def _read_capped(f: BinaryIO, cap: int) -> bytes:
    """At most ``cap + 1`` bytes of ``f``, asked for in pieces no larger than the file."""
    chunks = list(_blocks(f, cap, min(cap, os.fstat(f.fileno()).st_size) + 1))
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def sha256_regular(path: Path, cap: int, what: str) -> str:
    """sha256 of ``path``, in hex, when it is a regular file of at most ``cap`` bytes;
    otherwise ``LeagueError`` (one line, :func:`open_regular`). Read in blocks: a file as large
    as a results file is never held whole."""
    digest = hashlib.sha256()
    total = 0
    with open_regular(path, cap, what) as f:
        try:
            for block in _blocks(f, cap):
                digest.update(block)
                total += len(block)
        except OSError as e:
            raise LeagueError(f"{path}: cannot read it ({e.strerror or e})") from None
    if total > cap:  # it grew since
        raise LeagueError(_too_large(path, cap, what))
    return digest.hexdigest()


def open_regular(path: Path, cap: int, what: str, follow: bool = True) -> BinaryIO:
    """``path`` opened for reading when it is a regular file of at most ``cap`` bytes;
    otherwise ``LeagueError`` (one line), decided before any read: ``/dev/zero`` never ends, a
    FIFO blocks its reader and a huge file would be read whole into memory. The file is
    checked by ``stat`` before it is opened (opening a FIFO blocks until a writer comes),
    opened without blocking and checked again (it may have been swapped). The caller reads at
    most ``cap`` bytes of it. ``follow`` False: a symbolic link is refused (``lstat``, then
    ``O_NOFOLLOW``: one swapped in since is refused too)."""
    check_regular(path, cap, what, follow)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags if follow else flags | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise LeagueError(f"{path}: no such file") from None
    except OSError as e:
        if not follow and os.path.islink(path):
            raise LeagueError(_a_link(path, what)) from None
        raise LeagueError(f"{path}: cannot read it ({e.strerror or e})") from None
    f = os.fdopen(fd, "rb")
    try:
        _check_mode(path, os.fstat(f.fileno()), cap, what)
    except BaseException:
        f.close()
        raise
    return f


def check_regular(path: Path, cap: int, what: str, follow: bool = True) -> None:
    """``LeagueError`` unless ``path`` is a regular file of at most ``cap`` bytes (``stat``:
    nothing is opened; ``follow`` False: ``lstat``, so a symbolic link is refused)."""
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except FileNotFoundError:
        raise LeagueError(f"{path}: no such file") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise LeagueError(f"{path}: cannot read it ({getattr(e, 'strerror', None) or e})"
                          ) from None
    if stat.S_ISLNK(st.st_mode):
        raise LeagueError(_a_link(path, what))
    _check_mode(path, st, cap, what)


def _a_link(path: Path, what: str) -> str:
    return (f"{path} is a symbolic link; a {what} of a league is read from a file of its own, "
            "never through a link")


def _check_mode(path: Path, st: os.stat_result, cap: int, what: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise LeagueError(f"{path} is a directory, not a {what.removesuffix(' file')} file")
    if not stat.S_ISREG(st.st_mode):
        raise LeagueError(f"{path} is not a regular file (a device, FIFO or socket); a {what} "
                          "is read from a regular file only")
    if st.st_size > cap:
        raise LeagueError(_too_large(path, cap, what))


def _too_large(path: Path, cap: int, what: str) -> str:
    if what == "replay":
        return (f"{path} is over {cap >> 20} MB, more than any game of at most {MAX_TURNS} "
                f"turns writes; not a replay")
    return f"{path} is over {cap:,} bytes, the most a {what} may hold"


def load_replay(path: Path, world: World | None = None, follow: bool = True) -> dict:
    """The replay at ``path`` (:func:`parse_replay`), read bounded (:data:`MAX_REPLAY_BYTES`, a
    regular file; ``follow`` False: a league's own replay, never through a link)."""
    return parse_replay(path, read_regular(path, MAX_REPLAY_BYTES, "replay", follow), world)


def parse_replay(path: Path, raw: bytes, world: World | None = None) -> dict:
    """The replay payload in ``raw`` (read from ``path``), played in ``world`` (None: the
    standard town); ``LeagueError`` (one line) when it is not one.

    Parsed JSON costs tens of bytes of memory per value, whatever its text costs: 64 MB of
    ``{},`` are 21 million objects, gigabytes. So the values are counted in the text first
    (:func:`json_values`) and one holding more than a game of :data:`MAX_TURNS` turns in the
    town can (:func:`most_values`) is refused unparsed; after parsing, a key that no replay
    has is refused too (``"junk"`` would be parsed for nothing)."""
    most = most_values(STANDARD_TOWN if world is None else world)
    if json_values(raw) > most and json_values(_STRING.sub(b'""', raw)) > most:
        raise LeagueError(f"{path} holds more JSON values than a game of at most {MAX_TURNS} "
                          f"turns in this town writes ({most:,}); not a replay")
    try:
        payload = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise LeagueError(f"{path}: cannot read it ({e})") from None
    except json.JSONDecodeError as e:
        raise LeagueError(f"{path} is not JSON (line {e.lineno} column {e.colno}: {e.msg})"
                          ) from None
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        raise LeagueError(f"{path} is not a replay ({short(e, 120)})") from None
    except RecursionError:
        raise LeagueError(f"{path} is nested too deeply to be a replay") from None
    if not isinstance(payload, dict) or payload.get("protocol") != REPLAY_PROTOCOL:
        raise LeagueError(f"{path} is not a {REPLAY_PROTOCOL} replay")
    foreign = sorted((k for k in payload if k not in REPLAY_KEYS), key=str)
    if foreign:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise LeagueError(f"{path} holds a key no replay has: {printable(repr(foreign[0][:60]))}"
                          f"{more}; not a replay")
    if not isinstance(payload.get("config"), dict) or not isinstance(payload.get("events"),
                                                                     list):
        raise LeagueError(f"{path}: the replay lacks its config or events")
    return payload


def json_values(raw: bytes) -> int:
    """The JSON values and containers in ``raw``, about: its commas, braces and brackets
    (outside strings once the strings are taken out), counted by C loops, not a parser."""
    return raw.count(b",") + raw.count(b"{") + raw.count(b"[")


def values_of(value: Any) -> int:
    """:func:`json_values` of ``value``'s JSON text, counted on the value."""
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, list):
        return 0
    return 1 + max(len(value) - 1, 0) + sum(map(values_of, value))


@functools.lru_cache(maxsize=8)
def most_values(world: World) -> int:
    """The most :func:`json_values` a replay of :data:`MAX_TURNS` turns in ``world`` holds: a
    snapshot of the town and six acts a turn (:data:`ACT_VALUES`), the town once, and what
    surrounds them. The standard town's is about three times a real 1000-turn replay's."""
    from sim.game import Game, GameConfig  # here: reading a league's files needs no game

    per_turn = values_of(Game(GameConfig(world=world)).events[1]) + 1 + SEATS * ACT_VALUES
    return (MAX_TURNS + 2) * per_turn + values_of(world.to_json()) + OUTER_VALUES


def short(e: BaseException, limit: int = 300) -> str:
    """An exception's message on one line, cut: a hostile file must not flood the terminal."""
    text = " ".join(str(e).split())
    return text if len(text) <= limit else text[:limit] + "..."


def world_option(path: str | None, turns: int | None = None) -> tuple[World, int]:
    """A command's ``--world FILE`` and ``--turns`` (``sim.rules.worldfile.world_and_turns``);
    a file that is no world file is a ``LeagueError`` in one line ("bad world file: ...").
    ``load_world`` reads it bounded and refuses a FIFO or a device unread."""
    from sim.rules.worldfile import WorldFileError, world_and_turns

    if path == "":  # Path("") is ".": it would be called a folder, not said to be empty
        raise LeagueError("--world is empty; give a world file's name")
    try:
        return world_and_turns(path, turns)
    except WorldFileError as e:
        raise LeagueError(str(e)) from None


def check_replaceable(target: Path, ours: Callable[[bytes], bool], what: str, option: str,
                      limit: int = HEAD_BYTES) -> None:
    """``LeagueError`` (one line) unless writing ``target`` loses nothing: it does not exist,
    or it is a regular file whose first ``limit`` bytes ``ours`` tells as ``what`` (a file
    the command wrote, e.g. "a page guild view wrote"); ``option`` names another file.

    A write renames a new file over the name, so a link, a device (``/dev/full``) or a FIFO
    would itself be replaced: they are refused, as is a file that is someone else's.
    """
    shown = printable(str(target))
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    except (OSError, ValueError) as e:  # not a folder on the way, a NUL in the path
        raise LeagueError(f"cannot write {shown} ({getattr(e, 'strerror', None) or e})"
                          ) from None
    if stat.S_ISDIR(st.st_mode):
        raise LeagueError(f"{shown} is a directory; {option} names the file to write")
    if not stat.S_ISREG(st.st_mode):
        raise LeagueError(f"{shown} exists and is not a regular file (a link, device or "
                          f"FIFO); it is kept: only {what} is replaced")
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            head = f.read(limit)
    except OSError as e:
        raise LeagueError(f"cannot read {shown} ({e.strerror or e}); it is kept") from None
    if not ours(head):
        raise LeagueError(f"{shown} exists and is not {what}; it is kept (choose another "
                          f"{option}, or remove it)")


def check_outside(path: Path, folders: Iterable[Path], option: str) -> None:
    """``LeagueError`` (one line) when ``path`` is one of ``folders`` or lies inside one, links
    resolved: a league's ``replays/`` and ``view/`` hold only what the league wrote there
    (``guild verify`` and ``guild report`` read every file in them, and a viewer page replaces
    its namesake), so a command's output (``option``) goes elsewhere."""
    here = resolved(path)
    for folder in folders:
        there = resolved(folder)
        if here == there or there in here.parents:
            raise LeagueError(f"{option} {printable(str(path))}: {printable(str(folder))} holds "
                              "the league's own files; write elsewhere")


def resolved(path: Path) -> Path:
    """``path`` without its links (as given when they loop: then it names nothing)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):
        return path
