"""The league directory: manifest, lock, results file, replays -- written so nothing is lost.

Layout of ``DIR``::

    league.json          the configuration (policies, seed, rules switches, time and memory
                         limits, lineup scheme, the sha256 of the policies' models and code)
                         and the episode count last asked for
    results.jsonl        one line per finished episode, in episode order
    replays/<id>.json    the replay payload of each episode (RULES §15.5)
    ladder.json          the ladder, rewritten after every run
    signature.json       the league's Ed25519 signature of the digests of all the above, written
                         last in every run (``league.core.signing``)
    .lock                held while a league runs, so two runs cannot interleave (a regular
                         file of the folder's own: a link or a FIFO there is refused)

Durability: a replay is written to a temp file and renamed into place (``league.core.atomic``); the
lines of a batch of finished episodes (one or more workers' chunks) are appended only after
their replays have been made durable together (:func:`sync_files`: one ``syncfs`` on Linux,
else an fsync per file and of the folder), and are then flushed and fsynced. A crash
(``kill -9``, power loss, Ctrl-C) can therefore leave at most a torn last line, which the next
run cuts off, plus stray ``*.tmp`` files, which it deletes; every complete line names an
episode whose replay is on disk. ``results.jsonl`` is the record of what is finished: a replay
without a line (e.g. the rest of a batch cut short by a crash) is simply played again
(identically, since episodes are deterministic).

A resume reads and checks before it changes anything (:meth:`LeagueDir.resume`, then
``league.core.verify.check_resume``), and only then tidies what a crash left
(:meth:`LeagueDir.tidy`), so a refused run leaves the folder as it found it.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import reprlib
import stat
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from league.core.atomic import TMP_SUFFIX, replacing, write_atomic
from league.core.errors import LeagueError
from league.core.files import open_regular, read_regular
from league.core.lineups import Draw, episode_spec
from league.core.replay_json import encode
from sim.rules.world import SEATS

_log = logging.getLogger(__name__)
_WARNED: set[str] = set()

FORMAT = "guild.league.v1"
RESULTS = "results.jsonl"
MANIFEST = "league.json"
LADDER = "ladder.json"
SECRETS = "secret.json"  # a secret draw's secrets (league.core.lineups.SecretDraw), mode 0600
REPLAYS = "replays"
SIGNATURE = "signature.json"  # league.core.signing
# manifest keys that must match to resume
IDENTITY = ("format", "policies", "seed", "turns", "thievery", "speech", "decisionTimeout",
            "episodeTimeout", "startTimeout", "lineups", "fallback", "trust", "sandbox", "draw",
            "seatMemory")
# ... that a league begun before they were recorded lacks: not recorded, so not compared (the
# run records them, and they hold from then on)
RECORDED_LATER = frozenset({"seatMemory"})
# {policy: {"sha256": of its files, "files": {path: sha256}}} of module: and exec: policies
# (league.tournament.code_digests); a policy it does not name was not recorded
CODE = "code"
# ... and of a signed league (league.core.signing): the public key, the ppo: models' digests. A
# league begun before leagues were signed lacks them all, and is signed from its next run on.
SIGNED_IDENTITY = ("signedBy", "models")
# every setting this version records in league.json (a key absent from a league's file is
# signed as null: league.core.signing.manifest_digests)
SETTINGS = (*IDENTITY, *SIGNED_IDENTITY, CODE)
# league.json's keys that a run changes between runs: the episode count asked for, a secret
# draw's commitments (a new one when a league is extended, the secrets once it ends). A
# signature signs every other key one by one (league.core.signing.manifest_digests), so a resume
# can tell an edited setting from a run stopped before it signed.
RUN_KEYS = frozenset({"episodes", "commitments"})
MAX_RESULTS_BYTES = 4 << 30  # about five million episodes
MAX_LINE_BYTES = 1 << 20  # a results line: a few kilobytes, fault notes (300 characters) and all
# the most episodes a league plays: ids keep their six digits, and the results stay in memory
MAX_EPISODES = 1_000_000
MAX_MANIFEST_BYTES = 4 << 20  # league.json: policies, the draw's commitments, models' digests
MAX_LADDER_BYTES = 64 << 20  # ladder.json: kilobytes in any real league
MAX_SECRETS_BYTES = 1 << 20  # secret.json: about 100 bytes per secret, one per extension
LOCK = ".lock"  # held while a league runs; opened, never written
# the temporary files of what a league writes before league.json (league.core.atomic)
_BEFORE_MANIFEST_TEMP = re.compile(r"\.(?:league|secret)\.json\.[^/]*\.tmp")
_SHOWN_NAMES = 3  # of a foreign folder's names in the refusal
_HEX = re.compile(r"(?:[0-9a-f]{2})+")
MAX_SCORE = 1e6  # far beyond any score the rules give; a bigger number is not a score
# the largest count a file may give (what an array("q") holds): far beyond any real count, and
# small enough that sums over a million lines still print and convert to a float
MAX_COUNT = (1 << 63) - 1
# distinct fault kinds a seat of a results line may count: a league writes four
# (league.core.episode.FAULT_KINDS); a reader keeps totals, never a line's own kinds
MAX_FAULT_KINDS = 8
# policies league.json may list: --policies is one command-line argument (at most 128 KiB on
# Linux), so the league's command names at most 65,536 of them; real leagues name a few dozen
MAX_POLICIES = 100_000
ROW_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # ids name files: nothing else is accepted
SHOWN_SETTING = 300  # characters of a setting in a refused resume: league.json may hold anything
SHOWN_NAME = 300  # characters of a policy name in a problem or note (a spec may be a long path)


def load_results(path: Path, max_lines: int = MAX_EPISODES) -> tuple[list[dict], bool]:
    """The complete lines of a results file, and whether a torn last line was found.

    A last line without its newline is what a crash during an append leaves (a run cuts it,
    :meth:`LeagueDir.tidy`). Any other unreadable line is an error, and so is a line over
    :data:`MAX_LINE_BYTES` or more than ``max_lines`` lines. Read a line at a time and stopped
    at the first bad one: the file may hold gigabytes of anything, and only the parsed lines
    are kept.
    """
    if not os.path.lexists(path):
        return [], False
    rows: list[dict] = []
    read = 0
    with open_regular(path, MAX_RESULTS_BYTES, "results file") as f:  # not a FIFO, /dev/zero
        n = 0
        while True:
            n += 1
            try:
                # lines end at "\n" only, as the signature counts them (a bare "\r" must not
                # cut a line in two)
                line = f.readline(MAX_LINE_BYTES + 1)
            except OSError as e:
                raise LeagueError(f"{path}: cannot read it ({e.strerror or e})") from None
            read += len(line)
            if len(line) > MAX_LINE_BYTES:
                raise LeagueError(f"{path} line {n} is over {MAX_LINE_BYTES:,} bytes; not a "
                                  "results line")
            if read > MAX_RESULTS_BYTES:  # it grew since it was opened
                raise LeagueError(f"{path} is over {MAX_RESULTS_BYTES:,} bytes, the most a "
                                  "results file may hold")
            if not line.endswith(b"\n"):
                return rows, bool(line)
            if n > max_lines:
                raise LeagueError(f"{path} has more than {max_lines:,} lines, more episodes "
                                  "than any league holds")
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):  # RecursionError: nested past any real row
                raise LeagueError(f"{path} line {n} is not valid JSON; the file was changed "
                                  "by hand or by another program") from None
            if not isinstance(row, dict):
                raise LeagueError(f"{path} line {n} is not a JSON object")
            rows.append(row)


def read_manifest(path: Path) -> dict | None:
    """``league.json`` at ``path``; None when there is none, ``LeagueError`` (one line) when it
    is no regular file (a FIFO would block its reader), too large, or no JSON object."""
    if not os.path.lexists(path):
        return None
    raw = read_regular(path, MAX_MANIFEST_BYTES, MANIFEST)
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested past any real manifest
        raise LeagueError(f"{path} is not valid JSON (or is nested too deeply)") from None
    if not isinstance(data, dict):
        raise LeagueError(f"{path} is not a JSON object")
    check_policy_count(path, data.get("policies"))
    return data


def check_policy_count(path: Path, policies: object) -> None:
    """``LeagueError`` (one line) when ``league.json`` at ``path`` lists more policies than
    :data:`MAX_POLICIES`: every reader does work (a ladder entry, a page row) per policy."""
    if isinstance(policies, list) and len(policies) > MAX_POLICIES:
        raise LeagueError(f"{path} lists {len(policies):,} policies; a league names at most "
                          f"{MAX_POLICIES:,}")


def check_out(out: str | os.PathLike) -> None:
    """Refuse (``LeagueError``, one line) an ``--out`` a league must not write into: an empty
    path (it would be the current folder), something that is no folder, or a folder that is
    neither empty nor a league's. A league's folder has ``league.json``, or holds only what a
    league writes before it (:func:`_before_manifest`: a league stopped that early resumes). A
    league would otherwise write over a folder's own ``secret.json`` or ``ladder.png``. Looks
    only, so a refused run leaves the folder as it was."""
    text = os.fspath(out)
    if not text:
        raise LeagueError("--out must be a folder's path; got ''")
    if "\0" in text:
        raise LeagueError("--out: a path cannot hold a NUL character")
    root = Path(text)
    try:
        st = os.stat(root)
    except FileNotFoundError:
        return  # made for the league
    except OSError as e:  # as LeagueDir.open says it
        raise LeagueError(f"cannot write to --out {shown(text)}: {e.strerror or e}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise LeagueError(f"cannot write to --out {shown(text)}: it is not a folder")
    if os.path.lexists(root / MANIFEST):
        return  # a league's: check_identity compares its configuration with this run's
    try:
        foreign = _foreign(root)
    except OSError as e:
        raise LeagueError(f"cannot read --out {shown(text)}: {e.strerror or e}") from None
    if not foreign:
        return
    if foreign[0] in (RESULTS, LADDER, SIGNATURE) or foreign[0].startswith(f"{REPLAYS}/"):
        raise LeagueError(f"{shown(str(root / foreign[0]), SHOWN_SETTING)} exists but "
                          f"{shown(str(root / MANIFEST), SHOWN_SETTING)} does not; this is not a "
                          "league directory of this program; use another --out")
    names = ", ".join(shown(n, 60, quoted=True) for n in foreign[:_SHOWN_NAMES])
    more = ", ..." if len(foreign) > _SHOWN_NAMES else ""
    raise LeagueError(f"--out {shown(text)} is not empty and not a league's folder (it holds "
                      f"{names}{more}); choose an empty or a new folder")


def _foreign(root: Path) -> list[str]:
    """What ``root`` (a folder without ``league.json``) holds that a league writes only after
    ``league.json`` (that one alone), or never (a few of them: a huge folder is not listed
    whole)."""
    others: list[str] = []
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.name in (RESULTS, LADDER, SIGNATURE):
                return [entry.name]
            if not _before_manifest(entry):
                others.append(entry.name)
                if len(others) > _SHOWN_NAMES:
                    break
    replays = root / REPLAYS
    if replays.is_dir() and not replays.is_symlink():  # its other files are never written over
        replay = next(replays.glob("*.json"), None)
        if replay is not None:
            return [f"{REPLAYS}/{replay.name}"]
    return sorted(others)


def _before_manifest(entry: os.DirEntry) -> bool:
    """Whether ``entry`` is one a league writes before ``league.json``, as it writes it."""
    name = entry.name
    if _BEFORE_MANIFEST_TEMP.fullmatch(name):
        return entry.is_file(follow_symlinks=False)
    if name == LOCK:  # opened, locked, never written
        return (entry.is_file(follow_symlinks=False)
                and entry.stat(follow_symlinks=False).st_size == 0)
    if name == REPLAYS:
        return entry.is_dir(follow_symlinks=False)
    if name == SECRETS:
        return entry.is_file(follow_symlinks=False) and _is_secrets(Path(entry.path))
    return False


def _is_secrets(path: Path) -> bool:
    """Whether ``path`` holds a secret draw's secrets as :meth:`LeagueDir.write_secrets` writes
    them (a folder's own ``secret.json`` would be written over)."""
    try:
        data = json.loads(read_regular(path, MAX_SECRETS_BYTES, SECRETS))
        draws = data["draws"]
        return bool(draws) and all(
            set(x) == {"fromGroup", "secret"} and is_count(x["fromGroup"])
            and isinstance(x["secret"], str) and _HEX.fullmatch(x["secret"]) is not None
            for x in draws)
    except (LeagueError, ValueError, RecursionError, KeyError, TypeError):
        return False


def _open_lock(path: Path) -> int:
    """The lock file ``path``, opened (made if missing) as a descriptor; ``LeagueError`` (one
    line) when it is anything but a regular file. A link is not followed (it would make a file
    outside ``--out``), and a FIFO or device is refused: it cannot be locked as a file is."""
    flags = (os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    not_ours = (f"{shown(str(path), SHOWN_SETTING)} is not a regular file but {{}}; a league "
                "locks a file of its own there: remove it, or use another --out")
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        if os.path.islink(path):
            raise LeagueError(not_ours.format("a symbolic link")) from None
        if os.path.isdir(path):
            raise LeagueError(not_ours.format("a folder")) from None
        raise LeagueError(f"cannot write to --out {shown(str(path.parent), SHOWN_SETTING)}: "
                          f"cannot open {LOCK} ({e.strerror or e})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LeagueError(not_ours.format("a FIFO, device or socket"))
    return fd


def _truncate(path: Path, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)
        f.flush()
        os.fsync(f.fileno())


def _complete(path: Path, block: int = 1 << 16) -> tuple[int, int]:
    """The size of ``path`` and the end of its last complete line, read from the end (a
    regular file only: one swapped for a FIFO since it was read would block the league)."""
    with open_regular(path, MAX_RESULTS_BYTES, "results file") as f:
        size = f.seek(0, os.SEEK_END)
        end = size
        while end > 0:
            start = max(0, end - block)
            f.seek(start)
            at = f.read(end - start).rfind(b"\n")
            if at >= 0:
                return size, start + at + 1
            end = start
    return size, 0


def row_problem(row: dict) -> str | None:
    """Why ``row`` is not a results line (None when it has a line's shape): what every reader
    of ``results.jsonl`` relies on before it adds up a score."""
    rid, lineup, scores = row.get("id"), row.get("lineup"), row.get("scores")
    if not (isinstance(rid, str) and ROW_ID.fullmatch(rid)):
        return "has no episode id (letters, digits, - and _ only)"
    if not (isinstance(lineup, list) and len(lineup) == SEATS
            and all(isinstance(p, str) for p in lineup)):
        return f"has no lineup of {SEATS} policy names"
    if not (isinstance(scores, list) and len(scores) == SEATS and all(map(is_number, scores))):
        return f"has no {SEATS} scores"
    seed = row.get("seed")
    if not (seed is None or isinstance(seed, int) and not isinstance(seed, bool)):
        return "has a seed that is not an integer"
    fallbacks, faults = row.get("fallbacks"), row.get("faults")
    if fallbacks is not None and not (isinstance(fallbacks, list) and len(fallbacks) == SEATS
                                      and all(map(is_count, fallbacks))):
        return "has fallbacks that are not counts by seat"
    if faults is not None and not (isinstance(faults, list) and len(faults) == SEATS
                                   and all(map(are_fault_counts, faults))):
        return (f"has faults that are not counts by seat (at most {MAX_FAULT_KINDS} kinds a "
                "seat)")
    return None


def are_fault_counts(d: object) -> bool:
    """Whether ``d`` is a seat's faults: a few kinds, each a count, all of them a count."""
    return (isinstance(d, dict) and len(d) <= MAX_FAULT_KINDS and all(map(is_count, d.values()))
            and sum(d.values()) <= MAX_COUNT)


# How a value that is not a string is shown: a short repr, however long or deep the value is
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 3, 60, 60, 40


def shown(value: object, limit: int = 80, quoted: bool = False) -> str:
    r"""``value``, read from a league's folder, as a problem line shows it: a folder may come
    from anyone, so nothing in it may act on a terminal or start a line of its own.

    A string is shown as it is (between quotes, as ``repr`` quotes it, when ``quoted``);
    anything else by a short ``repr``, never walked whole. Every control or other
    non-printing character (a newline, a carriage return, an ANSI escape's ESC, a
    right-to-left override, a lone surrogate) is shown as its JSON escape (``\n``,
    ``\u001b``), and the text is cut to ``limit`` characters, with "..." when cut. A plain
    name (letters, digits, ``:/._-``, spaces) is unchanged, and so is text already escaped (a
    backslash is left as it is).

    >>> shown("e000003\nverify: OK\x1b[2J")
    'e000003\\nverify: OK\\u001b[2J'
    >>> shown("x" * 100, 10), shown(["a\r", 2]), shown(None)
    ('xxxxxxxxxx...', "['a\\r', 2]", 'None')
    """
    if isinstance(value, str):
        text = repr(value[:limit + 1]) if quoted else value
    else:
        text = _REPR.repr(value)
    if len(text) <= limit and text.isprintable():
        return text
    out: list[str] = []
    size = 0
    for c in text[:limit + 1]:
        piece = c if c.isprintable() else json.dumps(c)[1:-1]  # escapes show, none acts
        if size + len(piece) > limit:
            return "".join(out) + "..."
        out.append(piece)
        size += len(piece)
    return "".join(out)


def is_number(x: object, none: bool = False) -> bool:
    """A finite number no larger than any score can be (``none``: None too)."""
    if x is None:
        return none
    # abs(x) <= MAX_SCORE first: it is False for NaN and the infinities, and math.isfinite
    # of an int of hundreds of digits raises OverflowError
    return isinstance(x, (int, float)) and not isinstance(x, bool) and abs(x) <= MAX_SCORE


def is_count(x: object, none: bool = False) -> bool:
    """A whole number from 0 to :data:`MAX_COUNT` (``none``: None too): a file's count of
    thousands of digits would not print (Python refuses to turn it into text) or sum into a
    float."""
    if x is None:
        return none
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_COUNT


def code_change(old: Any, new: Any) -> str | None:
    """What differs between the code ``league.json`` recorded (``old``; None: none recorded)
    and the code here (``new``), as the end of "holds a league ..."; None when nothing does."""
    if old is None or not isinstance(new, dict):
        return None
    for name, now in new.items():
        was = old.get(name) if isinstance(old, dict) else old
        if was is None or (isinstance(was, dict) and was.get("sha256") == now.get("sha256")):
            continue
        return (f"whose policy {shown(name, SHOWN_NAME)!r} has other code than it played "
                f"({_which(was, now)})")
    return None


def _which(was: Any, now: dict) -> str:
    """The first file (by path) whose sha256 differs between two records of a policy's code,
    or how they differ when they do not name their files."""
    before = was.get("files") if isinstance(was, dict) else None
    after = now.get("files")
    if isinstance(before, dict) and isinstance(after, dict):
        for path in sorted(set(before) | set(after), key=str):
            if path not in after:
                return f"{shown(path, SHOWN_NAME)} is gone"
            if path not in before:
                return f"{shown(path, SHOWN_NAME)} is new"
            if before[path] != after[path]:
                return f"{shown(path, SHOWN_NAME)} changed"
    return "the sha256 of its files differs from league.json's code"


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
        self._lock: int | None = None  # the lock file's descriptor

    def open(self) -> None:
        """Create the directory if needed and take the lock; refuse an unusable directory. A
        league has refused an ``--out`` that is not its own before (:func:`check_out`, called
        by ``league.core.signing.ensure_key``)."""
        try:
            self.replays.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise LeagueError(f"cannot write to --out {self.root}: "
                              f"{e.strerror or e}") from None
        self._lock = _open_lock(self.root / LOCK)
        try:
            import fcntl
        except ImportError:  # Windows: no advisory lock; one run at a time is up to the user
            return
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.close()
            raise LeagueError(f"another league is running in {self.root}; wait for it or use "
                              "another --out") from None

    def close(self) -> None:
        if self._lock is not None:
            os.close(self._lock)  # releases the flock
            self._lock = None

    def __enter__(self) -> LeagueDir:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read_manifest(self) -> dict | None:
        return read_manifest(self.manifest_path)

    def check_identity(self, manifest: dict) -> None:
        """Refuse a directory that holds another configuration's league (or is no league)."""
        old = self.read_manifest()
        if old is None:  # again under the lock: what a league writes, in a folder it did not
            check_out(self.root)  # begin, or anything else a league does not write
        if old is not None:
            for key in IDENTITY + SIGNED_IDENTITY:
                if key in SIGNED_IDENTITY and "signedBy" not in old:
                    continue
                if key in RECORDED_LATER and key not in old:
                    continue
                if old.get(key) != manifest.get(key):
                    raise LeagueError(
                        f"{self.root} holds a league with a different configuration "
                        f"({_option(key)} was {_show(old.get(key))}, now "
                        f"{_show(manifest.get(key))}); use the same options or another --out")
            changed = code_change(old.get(CODE), manifest.get(CODE))
            if changed is not None:
                raise LeagueError(f"{self.root} holds a league {changed}; restore the code it "
                                  "played, or use another --out")

    def resume(self, manifest: dict, draw: Draw) -> tuple[list[dict], bool]:
        """The finished episodes of this league, after checking that the directory holds it,
        and whether a torn last line follows them.

        Changes nothing: the caller checks the lines against the signature and the replays
        first (a refused run must leave the folder as it was), then calls :meth:`tidy`. It has
        refused a directory of another configuration's league (:meth:`check_identity`).
        """
        rows, torn = load_results(self.results)
        check_rows(rows, manifest, self.results, draw)
        return rows, torn

    def tidy(self) -> None:
        """Cut a torn last line of the results and remove stray temp files: what a crash
        leaves, and nothing a resume needs."""
        try:
            size, cut = _complete(self.results) if os.path.lexists(self.results) else (0, 0)
        except OSError as e:
            raise LeagueError(f"cannot read {self.results}: {e.strerror or e}") from None
        if cut < size:
            _truncate(self.results, cut)
        for folder in (self.root, self.replays):  # what an interrupted write_atomic left
            for tmp in folder.glob(f"*{TMP_SUFFIX}"):
                if not tmp.is_dir() or tmp.is_symlink():  # a folder is nobody's temp file
                    tmp.unlink(missing_ok=True)

    def read_secrets(self) -> list[dict]:
        """The secret draw's secrets (``[{"fromGroup", "secret"}]``; none if the file is not
        there or not readable as such); ``LeagueError`` (one line) when it is no regular file
        or too large: a FIFO would block the league, ``/dev/zero`` fill its memory."""
        path = self.root / SECRETS
        if not os.path.lexists(path):
            return []
        raw = read_regular(path, MAX_SECRETS_BYTES, SECRETS)
        try:
            draws = json.loads(raw)["draws"]
            return [{"fromGroup": int(x["fromGroup"]), "secret": str(x["secret"])}
                    for x in draws]
        except (ValueError, RecursionError, KeyError, TypeError):
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
            "startTimeout": "--start-timeout", "seatMemory": "--seat-memory",
            "lineups": "the lineup scheme", "format": "the file format",
            "fallback": "--fallback", "trust": "--trust", "sandbox": "--sandbox",
            "draw": "the draw (secret without --seed)",
            "signedBy": "the signing key (--signing-key)",
            "models": "a ppo: model file (sha256)"}.get(key, key)


def _show(value: Any) -> str:
    """A setting of ``league.json`` as a refused resume shows it (the folder's own may hold
    anything: :func:`shown`)."""
    if isinstance(value, dict) and "publicKey" in value:  # signedBy: its public key, in hex
        return shown(value["publicKey"])
    if isinstance(value, list):
        return shown(",".join(map(str, value)), SHOWN_SETTING)
    return shown(json.dumps(value), SHOWN_SETTING)
