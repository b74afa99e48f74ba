"""Replacing a file so that a crash leaves either the old file or the whole new one, never half.

Leagues and exports run for hours and may be stopped at any moment (Ctrl-C, ``kill -9``, power
loss); every file they write goes through :func:`replacing` (or :func:`write_atomic`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

TMP_SUFFIX = ".tmp"  # what a crash may leave behind; ``LeagueDir.tidy`` deletes such files

# ``mkstemp`` creates files that only their owner may read; a written file should get the usual
# permissions instead. The umask can only be read by setting it, so it is read once, at import.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


@contextlib.contextmanager
def replacing(path: str | os.PathLike) -> Iterator[Path]:
    """A new, uniquely named temporary path beside ``path``, renamed over ``path`` at the end.

    Write the new content to the yielded path (and fsync it if it must survive power loss).
    When the block ends normally the file replaces ``path`` with ``os.replace`` (atomic on
    POSIX and Windows; same directory, so same file system); when it raises, the temporary
    file is removed and the error propagates. Unique names mean two writers of one path never
    write into each other's temporary file.
    """
    target = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=TMP_SUFFIX, dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        with contextlib.suppress(OSError):  # the permissions are a nicety, the content is not
            os.chmod(tmp, 0o666 & ~_UMASK)
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_atomic(path: str | os.PathLike, text: str | bytes, sync: bool = True, *,
                 sole: bool = False) -> None:
    """Write ``text`` (UTF-8, or bytes as they are) to ``path``: afterwards it is the old file
    or the whole new one.

    With ``sync`` the text is fsynced before the rename, so it is on disk before the name
    points to it, even after a power loss. Without it a crash of the process (``kill -9``)
    still leaves the old file or the whole new one, but a power loss may not: the caller
    makes such files durable itself, many at once (``league.core.store.sync_files``), before
    anything that names them is.

    ``sole``: the caller is the only writer of ``path`` (a league's replays: one episode, one
    process, under the league's lock), so the temporary file can have a fixed name,
    ``.NAME.tmp``, created with the usual permissions at once: much cheaper than
    :func:`replacing`, whose cost is mostly ``mkstemp`` and ``chmod``.
    """
    if not sole:
        binary = isinstance(text, (bytes, bytearray))
        with replacing(path) as tmp, (open(tmp, "wb") if binary
                                      else open(tmp, "w", encoding="utf-8")) as f:
            f.write(text)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        return
    if isinstance(text, str):
        data = text.encode("utf-8")
    elif isinstance(text, (bytes, bytearray)):
        data = bytes(text)
    else:
        raise TypeError(f"write_atomic: text must be str or bytes, not {type(text).__name__}")
    target = os.fspath(path)
    head, name = os.path.split(target)
    tmp = os.path.join(head, f".{name}{TMP_SUFFIX}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def create_private(path: Path, data: bytes) -> None:
    """Make ``path`` hold ``data``, readable by its owner only (mode 0600; a folder it creates
    is 0700), unless it exists: a key that two processes create at once is the one linked
    first, for both, and never a file half written.  ``OSError`` when it cannot."""
    folder = path.parent
    if not folder.is_dir():
        folder.mkdir(parents=True, mode=0o700)
        os.chmod(folder, 0o700)  # mkdir's mode is masked by the umask
    tmp = folder / f".{path.name}.{os.getpid()}{TMP_SUFFIX}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        with contextlib.suppress(FileExistsError):  # another process linked its own first
            os.link(tmp, path)  # never replaces a file made meanwhile
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
