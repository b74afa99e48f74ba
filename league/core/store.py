"""The league directory: manifest, lock, results file, replays -- written so nothing is lost.

Layout of ``DIR``::

    league.json          the configuration (policies, seed, rules switches, time limits,
                         lineup scheme) and the episode count last asked for
    results.jsonl        one line per finished episode, in episode order
    replays/<id>.json    the replay payload of each episode (RULES §15.5)
    ladder.json          the ladder, rewritten after every run
    signature.json       the league's Ed25519 signature of the digests of all the above, written
                         last in every run (``league.core.signing``)
    .lock                held while a league runs, so two runs cannot interleave

Durability: a replay is written to a temp file and renamed into place (``league.core.atomic``); the
lines of a batch of finished episodes (one or more workers' chunks) are appended only after
their replays have been made durable together (:func:`sync_files`: one ``syncfs`` on Linux,
else an fsync per file and of the folder), and are then flushed and fsynced. A crash
(``kill -9``, power loss, Ctrl-C) can therefore leave at most a torn last line, which the next
run cuts off, plus stray ``*.tmp`` files, which it deletes; every complete line names an
episode whose replay is on disk. ``results.jsonl`` is the record of what is finished: a replay
without a line (e.g. the rest of a batch cut short by a crash) is simply played again
(identically, since episodes are deterministic).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from league.core.atomic import TMP_SUFFIX, replacing, write_atomic
from league.core.errors import LeagueError
from league.core.lineups import Draw, episode_spec
from league.core.replay_json import encode

_log = logging.getLogger(__name__)
_WARNED: set[str] = set()

FORMAT = "guild.league.v1"
RESULTS = "results.jsonl"
MANIFEST = "league.json"
LADDER = "ladder.json"
SECRETS = "secret.json"  # a secret draw's secrets (league.core.lineups.SecretDraw), mode 0600
REPLAYS = "replays"
# manifest keys that must match to resume
IDENTITY = ("format", "policies", "seed", "turns", "thievery", "speech", "decisionTimeout",
            "episodeTimeout", "lineups", "fallback", "trust", "sandbox", "draw")
# ... and of a signed league (league.core.signing): the public key, the ppo: models' digests. A
# league begun before leagues were signed lacks them all, and is signed from its next run on.
SIGNED_IDENTITY = ("signedBy", "models")


def load_results(path: Path, repair: bool = False) -> tuple[list[dict], bool]:
    """The complete lines of a results file, and whether a torn last line was found.

    A last line without its newline is what a crash during an append leaves; with ``repair``
    the file is cut back to its last complete line. Any other unreadable line is an error.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], False
    except OSError as e:
        raise LeagueError(f"cannot read {path}: {e.strerror or e}") from None
    cut = data.rfind(b"\n") + 1
    torn = cut < len(data)
    if torn and repair:
        with open(path, "r+b") as f:
            f.truncate(cut)
            f.flush()
            os.fsync(f.fileno())
    rows = []
    for n, line in enumerate(data[:cut].splitlines(), start=1):
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nested past any real row
            raise LeagueError(f"{path} line {n} is not valid JSON; the file was changed by "
                              "hand or by another program") from None
        if not isinstance(row, dict):
            raise LeagueError(f"{path} line {n} is not a JSON object")
        rows.append(row)
    return rows, torn


def check_rows(rows: Sequence[dict], manifest: dict, path: Path, draw: Draw) -> None:
    """Every row must be the episode of this league that its position says."""
    policies = manifest["policies"]
    for n, row in enumerate(rows):
        spec = episode_spec(policies, draw, n)
        got = (row.get("index"), row.get("id"), row.get("seed"), row.get("lineup"))
        if got != (spec.index, spec.id, spec.seed, list(spec.lineup)):
            raise LeagueError(f"{path} line {n + 1} is not episode {spec.id} of this league "
                              f"(seed {spec.seed}, lineup {','.join(spec.lineup)}); it comes "
                              "from a different configuration")


class LeagueDir:
    """An output directory opened for one run: locked, checked against the configuration."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.results = self.root / RESULTS
        self.manifest_path = self.root / MANIFEST
        self.replays = self.root / REPLAYS
        self._lock: Any = None

    def open(self) -> None:
        """Create the directory if needed and take the lock; refuse an unusable directory."""
        try:
            self.replays.mkdir(parents=True, exist_ok=True)
            self._lock = open(self.root / ".lock", "a+")  # noqa: SIM115 - held for the run
        except OSError as e:
            raise LeagueError(f"cannot write to --out {self.root}: "
                              f"{e.strerror or e}") from None
        try:
            import fcntl
        except ImportError:  # Windows: no advisory lock; one run at a time is up to the user
            return
        try:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise LeagueError(f"another league is running in {self.root}; wait for it or use "
                              "another --out") from None

    def close(self) -> None:
        if self._lock is not None:
            self._lock.close()  # releases the flock
            self._lock = None

    def __enter__(self) -> LeagueDir:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read_manifest(self) -> dict | None:
        try:
            text = self.manifest_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as e:
            raise LeagueError(f"cannot read {self.manifest_path}: {e.strerror or e}") from None
        try:
            data = json.loads(text)
        except ValueError:
            raise LeagueError(f"{self.manifest_path} is not valid JSON") from None
        if not isinstance(data, dict):
            raise LeagueError(f"{self.manifest_path} is not a JSON object")
        return data

    def check_identity(self, manifest: dict) -> None:
        """Refuse a directory that holds another configuration's league (or is no league)."""
        old = self.read_manifest()
        if old is None and self.results.exists():
            raise LeagueError(f"{self.results} exists but {self.manifest_path} does not; this "
                              "is not a league directory of this program; use another --out")
        if old is not None:
            for key in IDENTITY + SIGNED_IDENTITY:
                if key in SIGNED_IDENTITY and "signedBy" not in old:
                    continue
                if old.get(key) != manifest.get(key):
                    raise LeagueError(
                        f"{self.root} holds a league with a different configuration "
                        f"({_option(key)} was {_show(old.get(key))}, now "
                        f"{_show(manifest.get(key))}); use the same options or another --out")

    def resume(self, manifest: dict, draw: Draw) -> tuple[list[dict], bool]:
        """The finished episodes of this league, after checking that the directory holds it.

        Cuts a torn last line (reported by the flag) and removes stray temp files; the caller
        has refused a directory of another configuration's league (:meth:`check_identity`).
        """
        rows, torn = load_results(self.results, repair=True)
        check_rows(rows, manifest, self.results, draw)
        for folder in (self.root, self.replays):  # what an interrupted write_atomic left
            for tmp in folder.glob(f"*{TMP_SUFFIX}"):
                tmp.unlink(missing_ok=True)
        return rows, torn

    def read_secrets(self) -> list[dict]:
        """The secret draw's secrets (``[{"fromGroup", "secret"}]``; none if the file is not
        there or not readable as such)."""
        try:
            data = json.loads((self.root / SECRETS).read_text(encoding="utf-8"))
            draws = data["draws"]
            return [{"fromGroup": int(x["fromGroup"]), "secret": str(x["secret"])}
                    for x in draws]
        except (OSError, ValueError, KeyError, TypeError):
            return []

    def write_secrets(self, draws: list[dict]) -> None:
        """Write the secrets readable by this user alone, durably, before ``league.json``
        commits to them."""
        with replacing(self.root / SECRETS) as tmp:
            os.chmod(tmp, 0o600)  # before a byte of the secret is in it
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(json.dumps({"draws": draws}) + "\n")
                f.flush()
                os.fsync(f.fileno())

    def write_manifest(self, manifest: dict) -> None:
        write_atomic(self.manifest_path, json.dumps(manifest, indent=2) + "\n")

    def appender(self) -> ResultsAppender:
        return ResultsAppender(self.results, self.replays)


class ResultsAppender:
    """Appends finished episodes' lines durably (flush + fsync per batch)."""

    def __init__(self, path: Path, replays: Path) -> None:
        self._f = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._replays = replays

    def append(self, rows: Sequence[dict]) -> None:
        """Append ``rows`` (replays already written, perhaps without fsync), so they survive a
        crash from now on: their replays are made durable first, then the lines."""
        if not rows:
            return
        sync_files(self._replays, [f"{r['id']}.json" for r in rows])
        # json.dumps(r, separators=(",", ":")), the same bytes (replay_json), much faster
        self._f.write("".join(encode(r).decode("ascii") + "\n" for r in rows))
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()


def sync_files(folder: Path, names: Sequence[str]) -> None:
    """Make the files ``names`` in ``folder`` and their names durable (written without fsync).

    On Linux one ``syncfs`` of the folder's file system does it for a whole batch: a fsync
    per file costs a journal commit each, ``syncfs`` about one for them all. It also flushes
    whatever else is dirty on that file system, which only costs time. Elsewhere, or if it
    fails, each file is fsynced, then the folder.
    """
    if not names:
        return
    syncfs = _syncfs()
    if syncfs is not None:
        fd = os.open(folder, os.O_RDONLY)
        try:
            if syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    for name in names:
        fd = os.open(folder / name, os.O_RDWR | getattr(os, "O_BINARY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    _fsync_dir(folder)


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    """libc's ``syncfs(fd)`` (Linux; Python has no binding), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None


def _fsync_dir(path: Path) -> None:
    """Make the renames into ``path`` durable; where the system cannot, say so in the log."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # Windows cannot open directories; renames there are durable anyway
        _log.debug("cannot open %s to fsync it", path, exc_info=True)
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a directory; the lines still follow
        if str(path) not in _WARNED:  # once per directory, not once per episode
            _WARNED.add(str(path))
            _log.warning("cannot fsync the directory %s; a power loss may lose the names of "
                         "the last replays written", path, exc_info=True)
    finally:
        os.close(fd)


def _option(key: str) -> str:
    return {"policies": "--policies", "seed": "--seed", "turns": "--turns",
            "thievery": "thievery (--honest-town)", "speech": "speech (--no-speech)",
            "decisionTimeout": "--decision-timeout", "episodeTimeout": "--episode-timeout",
            "lineups": "the lineup scheme", "format": "the file format",
            "fallback": "--fallback", "trust": "--trust", "sandbox": "--sandbox",
            "draw": "the draw (secret without --seed)",
            "signedBy": "the signing key (--signing-key)",
            "models": "a ppo: model file (sha256)"}.get(key, key)


def _show(value: Any) -> str:
    if isinstance(value, dict) and "publicKey" in value:  # signedBy: its public key, in hex
        return str(value["publicKey"])
    if isinstance(value, list):
        return ",".join(map(str, value))
    return json.dumps(value)
