"""The code of a league's ``module:``, ``exec:`` and ``sb3:`` policies, as ``league.json``
records it.

A league resumed with other code for a policy would rank two versions of it as one, so
``league.json`` records the sha256 of each such policy's files under ``code`` (as it records
``ppo:`` models' under ``models``), and a resume whose code differs is refused
(``league.core.store.code_change``).  The files are those its sandbox shows it
(``league.apart.sandbox``), without the other policies' own files and the league's folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import shlex
import shutil
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

from league.apart import sandbox
from league.core import replay_seats
from league.core.signing import file_sha256
from league.core.store import CODE

MAX_CODE_FILES = 1000      # files of one policy hashed, and their bytes: a huge package (a whole
MAX_CODE_BYTES = 64 << 20  # installed library) must not hold the league up; the first ones by
MAX_CODE_ENTRIES = 20_000  # path are hashed ("capped"), as are the directory entries looked at;
                           # a file past the bytes left is recorded by its size, and the walk goes
                           # on (a model's weights must not hide the code beside them)
MAX_NAMED_FILES = 100      # files named one by one in league.json (a resume names the changed one)
# folders that are no policy's code: Python's caches, a repository's history, and leagues' own
# folders (one holding league.json: the results of leagues played from the policy's folder)
SKIPPED_DIRS = frozenset({"__pycache__", ".git"})
LEAGUE_MARK = "league.json"


def code_roots(name: str, policies: Sequence[str], out: str) -> tuple[list[Path], list[Path]]:
    """The files and folders that are ``name``'s code (none for a policy that is not ``module:``,
    ``exec:`` or ``sb3:``, whose zip it is), and those inside them to leave out: other
    policies' own files, which its sandbox hides, and the league's folder
    (``league.apart.sandbox`` lists them all).  An
    ``exec:`` program found on ``PATH`` (``node``, ``python3``) is the machine's, not the
    policy's: its script and the paths its command names are."""
    spec = replay_seats.spec_of(name)
    low = spec.lower()
    skip = [Path(out).resolve()]  # real paths, as the code roots are
    if low.startswith("exec:"):
        try:
            argv = shlex.split(spec[len("exec:"):])
        except ValueError:
            return [], skip
        files, _ = sandbox.exec_files(argv)
        if files and argv and _machines(argv[0], files[0]):
            files = files[1:]
        return files, skip
    if low.startswith("sb3:"):  # a zip of pickles: its bytes are the policy's code
        return sandbox.policy_files(spec)[0], skip
    if ":" not in spec or low.startswith(("ppo:", "llm:")):
        return [], skip
    files = sandbox.policy_files(spec)[0]
    rivals = sandbox.rivals_files(spec, [replay_seats.spec_of(p) for p in policies])
    return files, skip + [Path(f) for f in rivals]


def _machines(arg: str, path: Path) -> bool:
    """Whether an ``exec:`` program (``arg``, found at ``path``) is the machine's, however it
    is named: the one ``PATH`` finds by its name (``python3``, ``/usr/bin/node``), or this
    Python.  A program of the policy's own (``./bot``) is not on ``PATH``."""
    on_path = shutil.which(Path(arg).name)
    for other in (on_path, sys.executable):
        with contextlib.suppress(OSError, TypeError):
            if other and os.path.samefile(other, path):
                return True
    return False


def code_digest(roots: Sequence[Path], skip: Sequence[Path]) -> dict | None:
    """``{"sha256": ..., "files": {path: sha256}}`` of the files under ``roots`` (paths relative
    to each root's folder, so a league may move with its policies), or None when there are
    none.  A symbolic link inside a folder is recorded by its target, never followed (the
    league must not publish a digest of a file its sandbox never shows); a file that cannot be
    read is recorded as such, and so are folders that are no code (:data:`SKIPPED_DIRS`, a
    league's folder) left out.  At most :data:`MAX_CODE_FILES` files are recorded and
    :data:`MAX_CODE_BYTES` bytes hashed, the first ones by path; a file past the bytes left is
    recorded by its size (either way ``"capped": true``); ``files`` is left out over
    :data:`MAX_NAMED_FILES`."""
    pairs: list[tuple[str, str]] = []
    listed, size, capped, full = 0, 0, False, False

    def left_out(path: Path) -> bool:
        return any(s == path or s in path.parents for s in skip)

    # (path, its name in the record, whether it is a root: a root's link is followed)
    stack = [(root, root.name, True) for root in reversed(roots) if not left_out(root)]
    while stack and not full:
        path, rel, top = stack.pop()
        try:
            st = path.stat() if top else path.lstat()
            if stat.S_ISLNK(st.st_mode):
                pairs.append((rel, "link:" + _sha256(os.fsencode(os.readlink(path)))))
                continue
            if stat.S_ISDIR(st.st_mode):
                if not top and (path / LEAGUE_MARK).is_file():
                    continue  # a league's folder: its results, not code
                with os.scandir(path) as found:  # read no more of a folder than is looked at
                    names = sorted(e.name for e in itertools.islice(
                        found, MAX_CODE_ENTRIES - listed + 1))
                if listed + len(names) > MAX_CODE_ENTRIES:
                    capped, names = True, names[:MAX_CODE_ENTRIES - listed]
                listed += len(names)
                stack += [(path / n, f"{rel}/{n}", False) for n in reversed(names)
                          if n not in SKIPPED_DIRS and not left_out(path / n)]
            elif not stat.S_ISREG(st.st_mode):
                pairs.append((rel, "not a file"))
            elif len(pairs) >= MAX_CODE_FILES:
                capped = full = True
            elif size + st.st_size > MAX_CODE_BYTES:
                capped = True
                pairs.append((rel, f"size:{st.st_size}"))
            else:
                size += st.st_size
                pairs.append((rel, file_sha256(path, MAX_CODE_BYTES)))
        except (OSError, ValueError):  # ValueError: LeagueError, a file swapped or grown
            pairs.append((rel, "unreadable"))
    if not pairs:
        return None
    tree = _sha256("".join(f"{rel}\0{digest}\n" for rel, digest in pairs).encode(
        "utf-8", "surrogateescape"))
    return {"sha256": tree, **({"files": dict(pairs)} if len(pairs) <= MAX_NAMED_FILES else {}),
            **({"capped": True} if capped else {})}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def code_digests(policies: Sequence[str], out: str) -> dict:
    """``league.json``'s ``{"code": {policy: digest}}`` of every ``module:`` and ``exec:``
    policy (:func:`code_digest`; nothing without such policies): a resume with other code is
    refused (``league.core.store.LeagueDir.check_identity``), so no ladder mixes two versions
    of a policy."""
    code = {}
    for name in dict.fromkeys(policies):
        digest = code_digest(*code_roots(name, policies, out))
        if digest is not None:
            code[name] = digest
    return {CODE: code} if code else {}
