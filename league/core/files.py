"""Reading a file a user or a tamperer may have replaced: only a regular file, at most a cap
of bytes, decided before anything is read (``/dev/zero`` never ends, a FIFO blocks its reader,
a huge sparse file would be read whole into memory). Every reader of a league's folder uses it:
``guild verify``, a resume, ``guild report`` and ``guild view``."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from league.core.errors import LeagueError
from sim.rules.world import MAX_TURNS, World

# A replay of MAX_TURNS turns is a few MB (every sentence, say and note at its longest, a
# 64-room town's snapshots: under 32 MB); a bigger file is not a replay, and is not read.
MAX_REPLAY_BYTES = 64 << 20


def read_regular(path: Path, cap: int, what: str) -> bytes:
    """The bytes of ``path`` when it is a regular file of at most ``cap`` bytes; otherwise
    ``LeagueError`` (one line), decided before any read (see :func:`open_regular`); read
    ``cap + 1`` bytes at most."""
    with open_regular(path, cap, what) as f:
        try:
            raw = f.read(cap + 1)
        except OSError as e:
            raise LeagueError(f"{path}: cannot read it ({e.strerror or e})") from None
    if len(raw) > cap:  # it grew since
        raise LeagueError(_too_large(path, cap, what))
    return raw


def open_regular(path: Path, cap: int, what: str) -> BinaryIO:
    """``path`` opened for reading when it is a regular file of at most ``cap`` bytes;
    otherwise ``LeagueError`` (one line), decided before any read: ``/dev/zero`` never ends, a
    FIFO blocks its reader and a huge file would be read whole into memory. The file is
    checked by ``stat`` before it is opened (opening a FIFO blocks until a writer comes),
    opened without blocking and checked again (it may have been swapped). The caller reads at
    most ``cap`` bytes of it."""
    check_regular(path, cap, what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise LeagueError(f"{path}: no such file") from None
    except OSError as e:
        raise LeagueError(f"{path}: cannot read it ({e.strerror or e})") from None
    f = os.fdopen(fd, "rb")
    try:
        _check_mode(path, os.fstat(f.fileno()), cap, what)
    except BaseException:
        f.close()
        raise
    return f


def check_regular(path: Path, cap: int, what: str) -> None:
    """``LeagueError`` unless ``path`` is a regular file of at most ``cap`` bytes (``stat``:
    nothing is opened)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise LeagueError(f"{path}: no such file") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise LeagueError(f"{path}: cannot read it ({getattr(e, 'strerror', None) or e})"
                          ) from None
    _check_mode(path, st, cap, what)


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


def world_option(path: str | None, turns: int | None = None) -> tuple[World, int]:
    """A command's ``--world FILE`` and ``--turns`` (``sim.rules.worldfile.world_and_turns``);
    a file that is no world file is a ``LeagueError`` in one line ("bad world file: ...").
    ``load_world`` reads it bounded and refuses a FIFO or a device unread."""
    from sim.rules.worldfile import WorldFileError, world_and_turns

    try:
        return world_and_turns(path, turns)
    except WorldFileError as e:
        raise LeagueError(str(e)) from None
